// CPU kernels for torch.fft's three primitives (c2c, r2c, c2r) on KISS FFT's mixed-radix
// transform (radix 2, 3, 4, 5 butterflies, a generic one for other prime factors).
//
// An n-dimensional transform is a 1-D transform along each dim in turn. The data is first
// copied into a contiguous complex buffer; a dim of size n with `inner` elements after it is
// then outer * inner lines of stride `inner`. Lines are split across the thread pool, each
// worker with its own plan (a KISS FFT plan has scratch space and is not shareable); a line is
// gathered into a dense buffer, transformed and scattered back.
#include <kissfft/kissfft.hh>

#include <cmath>
#include <complex>
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
    kissfft<R> plan(size_t(n), inverse);
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
  ops::copy_()(out, self);
  return out;
}

Tensor fft_c2c_cpu(const Tensor& self, IntArrayRef dims, int64_t normalization, bool forward) {
  check_normalization("fft_c2c", normalization);
  EMBER_CHECK(is_complex(self.dtype()), "fft_c2c: expected a complex input tensor, got ", dtype_name(self.dtype()));
  Tensor out = complex_buffer(self, self.dtype());
  const double scale = norm_scale(normalization, signal_numel(out.sizes(), dims));
  visit_dtype<kComplexTypes>(out.dtype(), "fft_c2c", [&]<class C>() {
    using R = typename C::value_type;
    for (size_t i = 0; i < dims.size(); ++i)
      transform_dim<R>(out.data_ptr<C>(), out.sizes(), dims[i], !forward, i + 1 == dims.size() ? R(scale) : R(1));
  });
  return out;
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
    Tensor z = complex_buffer(self, real_to_complex(t));
    return fft_c2c_cpu(z, dims, normalization, /*forward=*/true);
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
        const bool even = n % 2 == 0 && n >= 2;
        kissfft<R> plan(size_t(even ? n / 2 : n), false);
        std::vector<R> line(n);
        std::vector<C> wide(even ? 0 : n), spec(even ? n / 2 : n);
        for (int64_t l = begin; l < end; ++l) {
          const int64_t o = l / inner, i = l % inner;
          const R* p = src + o * n * inner + i;
          C* q = dst + o * half * inner + i;
          for (int64_t k = 0; k < n; ++k) line[k] = p[k * inner];
          if (even) {
            // spec[0] packs the DC (real) and Nyquist (imag) terms.
            plan.transform_real(line.data(), spec.data());
            q[0] = C(spec[0].real() * s, 0);
            q[(n / 2) * inner] = C(spec[0].imag() * s, 0);
            for (int64_t k = 1; k < n / 2; ++k) q[k * inner] = spec[k] * s;
          } else {
            for (int64_t k = 0; k < n; ++k) wide[k] = C(line[k], 0);
            plan.transform(wide.data(), spec.data());
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
      kissfft<R> plan(size_t(n), true);
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
