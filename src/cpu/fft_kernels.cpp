// CPU kernels for torch.fft's three primitives (c2c, r2c, c2r) on KISS FFT's mixed-radix
// transform (radix 2, 3, 4, 5 butterflies, a generic one for other prime factors), with
// Bluestein's algorithm for lengths that have a large prime factor.
//
// An n-dimensional transform is a 1-D transform along each dim in turn. The data is first
// copied into a contiguous complex buffer; a dim of size n with `inner` elements after it is
// then outer * inner lines of stride `inner`. Lines are split across the thread pool, each
// worker with its own plan (a KISS FFT plan has scratch space and is not shareable); a line is
// gathered into a dense buffer, transformed and scattered back.
#include <kissfft/kissfft.hh>

#include <cmath>
#include <complex>
#include <optional>
#include <vector>

#include "core/dtype_dispatch.h"
#include "core/parallel.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cpu {
namespace {

// Elements after dim d (the stride of d in a contiguous tensor) and before it.
int64_t inner_size(const Shape& s, int64_t d) {
  int64_t r = 1;
  for (size_t i = size_t(d) + 1; i < s.size(); ++i) r *= s[i];
  return r;
}
int64_t outer_size(const Shape& s, int64_t d) {
  int64_t r = 1;
  for (int64_t i = 0; i < d; ++i) r *= s[i];
  return r;
}
// The largest prime factor of n (n >= 1).
int64_t largest_prime_factor(int64_t n) {
  int64_t best = 1;
  for (int64_t p = 2; p * p <= n; ++p)
    while (n % p == 0) { best = p; n /= p; }
  return n > 1 ? n : best;
}
// KISS FFT's generic butterfly costs O(n p) for a prime factor p; beyond this, Bluestein.
constexpr int64_t kMaxDirectPrime = 64;
bool is_smooth(int64_t n) { return largest_prime_factor(std::max<int64_t>(n, 1)) <= kMaxDirectPrime; }

// A 1-D complex transform of one length: KISS FFT's mixed radix when n factors into small
// primes, else Bluestein's algorithm (the DFT as a convolution with a chirp, done by
// power-of-two FFTs of length >= 2n - 1), O(n log n) for any n.
template <class R> class LineFft {
 public:
  using C = std::complex<R>;
  LineFft(int64_t n, bool inverse) : n_(n), direct_(is_smooth(n)) {
    if (direct_) {
      plan_.emplace(size_t(n), inverse);
      return;
    }
    m_ = 1;
    while (m_ < 2 * n - 1) m_ *= 2;
    fwd_.emplace(size_t(m_), false);
    inv_.emplace(size_t(m_), true);
    chirp_.resize(n);
    const double sign = inverse ? 1.0 : -1.0;
    for (int64_t k = 0; k < n; ++k) {
      // k^2 mod 2n keeps the angle small (exact in double for any length that fits in memory)
      double phase = sign * M_PI * double((k * k) % (2 * n)) / double(n);
      chirp_[k] = C(R(std::cos(phase)), R(std::sin(phase)));
    }
    std::vector<C> b(m_, C(0));
    for (int64_t k = 0; k < n; ++k) b[k] = std::conj(chirp_[k]);
    for (int64_t k = 1; k < n; ++k) b[m_ - k] = std::conj(chirp_[k]);
    kernel_.resize(m_);
    fwd_->transform(b.data(), kernel_.data());
    work_.resize(m_);
    spec_.resize(m_);
  }
  void transform(const C* in, C* out) {
    if (direct_) {
      plan_->transform(in, out);
      return;
    }
    for (int64_t k = 0; k < n_; ++k) work_[k] = in[k] * chirp_[k];
    std::fill(work_.begin() + n_, work_.end(), C(0));
    fwd_->transform(work_.data(), spec_.data());
    for (int64_t k = 0; k < m_; ++k) spec_[k] *= kernel_[k];
    inv_->transform(spec_.data(), work_.data());
    const R inv_m = R(1) / R(m_);
    for (int64_t k = 0; k < n_; ++k) out[k] = work_[k] * chirp_[k] * inv_m;
  }

 private:
  int64_t n_, m_ = 0;
  bool direct_;
  std::optional<kissfft<R>> plan_, fwd_, inv_;
  std::vector<C> chirp_, kernel_, work_, spec_;
};

// Lines per task: enough work (about 16k points) to pay for a plan and a task.
int64_t line_grain(int64_t n) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1)); }

// In-place 1-D transforms of every line along dim d of the contiguous complex buffer `data`
// (shape `sizes`), each multiplied by `scale`.
template <class R>
void transform_dim(std::complex<R>* data, const Shape& sizes, int64_t d, bool inverse, R scale) {
  using C = std::complex<R>;
  const int64_t n = sizes[d], inner = inner_size(sizes, d), lines = outer_size(sizes, d) * inner;
  if (n == 0 || lines == 0) return;
  parallel_for(0, lines, line_grain(n), [&](int64_t begin, int64_t end) {
    LineFft<R> plan(n, inverse);
    std::vector<C> in(n), out(n);
    for (int64_t line = begin; line < end; ++line) {
      C* p = data + (line / inner) * n * inner + line % inner;
      for (int64_t k = 0; k < n; ++k) in[k] = p[k * inner];
      plan.transform(in.data(), out.data());
      for (int64_t k = 0; k < n; ++k) p[k * inner] = out[k] * scale;
    }
  });
}

// 1/n, 1/sqrt(n) or 1 for normalization 2, 1, 0 (n the signal size).
double norm_scale(int64_t normalization, int64_t signal_numel) {
  if (normalization == 0 || signal_numel == 0) return 1.0;
  return normalization == 1 ? 1.0 / std::sqrt(double(signal_numel)) : 1.0 / double(signal_numel);
}
int64_t signal_numel(const Shape& sizes, IntArrayRef dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= sizes[d];
  return n;
}
void check_normalization(const char* op, int64_t normalization) {
  EMBER_CHECK(normalization >= 0 && normalization <= 2, op, ": normalization must be 0, 1 or 2, got ", normalization);
}

// A contiguous complex copy of self (never aliasing it: the transforms write in place).
Tensor complex_buffer(const Tensor& self, DType dtype) {
  Tensor out = empty(self.sizes(), {.dtype = dtype, .device = self.device()});
  ops::copy_()(out, self, false);
  return out;
}

// Transforms the contiguous complex buffer `out` in place over dims.
Tensor c2c_in_place(Tensor out, IntArrayRef dims, int64_t normalization, bool forward) {
  const double scale = norm_scale(normalization, signal_numel(out.sizes(), dims));
  visit_dtype<kComplexTypes>(out.dtype(), "fft_c2c", [&]<class C>() {
    using R = typename C::value_type;
    for (size_t i = 0; i < dims.size(); ++i)
      transform_dim<R>(out.data_ptr<C>(), out.sizes(), dims[i], !forward, i + 1 == dims.size() ? R(scale) : R(1));
  });
  return out;
}

Tensor fft_c2c_cpu(const Tensor& self, IntArrayRef dims, int64_t normalization, bool forward) {
  check_normalization("fft_c2c", normalization);
  EMBER_CHECK(is_complex(self.dtype()), "fft_c2c: expected a complex input tensor, got ", dtype_name(self.dtype()));
  return c2c_in_place(complex_buffer(self, self.dtype()), dims, normalization, forward);
}

// The last of dims as a real-to-half-spectrum transform (even n: KISS FFT's real transform, a
// complex one of n/2 points; odd n: a full complex transform of the widened line), then the
// rest as complex transforms of the half spectrum.
Tensor fft_r2c_cpu(const Tensor& self, IntArrayRef dims, int64_t normalization, bool onesided) {
  check_normalization("fft_r2c", normalization);
  DType t = self.dtype();
  EMBER_CHECK(t == DType::Float32 || t == DType::Float64, "fft_r2c: expected a float or double input tensor, got ",
              dtype_name(t));
  EMBER_CHECK(!dims.empty(), "fft_r2c: must transform at least one dimension");
  if (!onesided) {  // the full spectrum: a complex transform of (x, 0)
    return c2c_in_place(complex_buffer(self, real_to_complex(t)), dims, normalization, /*forward=*/true);
  }
  const double scale = norm_scale(normalization, signal_numel(self.sizes(), dims));
  Tensor x = self.contiguous();
  const int64_t last = dims.back(), n = x.sizes()[last];
  Shape out_sizes = x.sizes();
  out_sizes[last] = n / 2 + 1;
  Tensor out = empty(out_sizes, {.dtype = real_to_complex(t), .device = self.device()});
  visit_dtype<kFloatTypes>(t, "fft_r2c", [&]<class R>() {
    using C = std::complex<R>;
    const int64_t half = n / 2 + 1, inner = inner_size(out_sizes, last), lines = outer_size(out_sizes, last) * inner;
    const R s = dims.size() == 1 ? R(scale) : R(1);
    const R* src = x.data_ptr<R>();
    C* dst = out.data_ptr<C>();
    if (n > 0 && lines > 0) {
      parallel_for(0, lines, line_grain(n), [&](int64_t begin, int64_t end) {
        const bool even = n % 2 == 0 && n >= 2 && is_smooth(n / 2);
        std::optional<kissfft<R>> half_plan;
        std::optional<LineFft<R>> plan;
        if (even) half_plan.emplace(size_t(n / 2), false);
        else plan.emplace(n, false);
        std::vector<R> line(n);
        std::vector<C> wide(even ? 0 : n), spec(even ? n / 2 : n);
        for (int64_t l = begin; l < end; ++l) {
          const int64_t o = l / inner, i = l % inner;
          const R* p = src + o * n * inner + i;
          C* q = dst + o * half * inner + i;
          for (int64_t k = 0; k < n; ++k) line[k] = p[k * inner];
          if (even) {
            // spec[0] packs the DC (real) and Nyquist (imag) terms.
            half_plan->transform_real(line.data(), spec.data());
            q[0] = C(spec[0].real() * s, 0);
            q[(n / 2) * inner] = C(spec[0].imag() * s, 0);
            for (int64_t k = 1; k < n / 2; ++k) q[k * inner] = spec[k] * s;
          } else {
            for (int64_t k = 0; k < n; ++k) wide[k] = C(line[k], 0);
            plan->transform(wide.data(), spec.data());
            for (int64_t k = 0; k < half; ++k) q[k * inner] = spec[k] * s;
          }
        }
      });
    }
    for (size_t j = 0; j + 1 < dims.size(); ++j)
      transform_dim<R>(dst, out_sizes, dims[j], false, j + 2 == dims.size() ? R(scale) : R(1));
  });
  return out;
}

// Complex inverse transforms over all dims but the last, then each line of the last rebuilt
// to its full Hermitian spectrum (X[n-k] = conj X[k]) and inverse-transformed; the result is
// the real part. The imaginary parts of X[0] (and X[n/2], n even) drop out, as in torch.
Tensor fft_c2r_cpu(const Tensor& self, IntArrayRef dims, int64_t normalization, int64_t last_dim_size) {
  check_normalization("fft_c2r", normalization);
  EMBER_CHECK(is_complex(self.dtype()), "fft_c2r: expected a complex input tensor, got ", dtype_name(self.dtype()));
  EMBER_CHECK(!dims.empty(), "fft_c2r: must transform at least one dimension");
  const int64_t last = dims.back(), n = last_dim_size, half = n / 2 + 1;
  EMBER_CHECK(n >= 1, "Invalid number of data points (", n, ") specified");
  EMBER_CHECK(self.sizes()[last] == half, "fft_c2r: expected ", half, " entries along dim ", last, " for ", n,
              " output points, got ", self.sizes()[last]);
  Tensor z = complex_buffer(self, self.dtype());
  Shape out_sizes = z.sizes();
  out_sizes[last] = n;
  const double scale = norm_scale(normalization, signal_numel(out_sizes, dims));
  DType rt = complex_to_real(self.dtype());
  Tensor out = empty(out_sizes, {.dtype = rt, .device = self.device()});
  visit_dtype<kComplexTypes>(z.dtype(), "fft_c2r", [&]<class C>() {
    using R = typename C::value_type;
    C* buf = z.data_ptr<C>();
    for (size_t j = 0; j + 1 < dims.size(); ++j) transform_dim<R>(buf, z.sizes(), dims[j], true, R(1));
    const int64_t inner = inner_size(out_sizes, last), lines = outer_size(out_sizes, last) * inner;
    R* dst = out.data_ptr<R>();
    if (lines == 0) return;
    parallel_for(0, lines, line_grain(n), [&](int64_t begin, int64_t end) {
      LineFft<R> plan(n, true);
      std::vector<C> full(n), res(n);
      for (int64_t l = begin; l < end; ++l) {
        const int64_t o = l / inner, i = l % inner;
        const C* p = buf + o * half * inner + i;
        R* q = dst + o * n * inner + i;
        for (int64_t k = 0; k < half; ++k) full[k] = p[k * inner];
        for (int64_t k = half; k < n; ++k) full[k] = std::conj(full[n - k]);
        plan.transform(full.data(), res.data());
        for (int64_t k = 0; k < n; ++k) q[k * inner] = res[k].real() * R(scale);
      }
    });
  });
  return out;
}

EMBER_REGISTER_KERNEL(fft_c2c, CPU, fft_c2c_cpu);
EMBER_REGISTER_KERNEL(fft_r2c, CPU, fft_r2c_cpu);
EMBER_REGISTER_KERNEL(fft_c2r, CPU, fft_c2r_cpu);

}  // namespace
}  // namespace ember::cpu
