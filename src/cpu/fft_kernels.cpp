// CPU kernels for torch.fft's three primitives (c2c, r2c, c2r) on ember's Stockham transform
// (src/cpu/fft_plan.h).
//
// An n-dimensional transform is a 1-D transform along each dim in turn. The data is first
// copied into a contiguous complex buffer; a dim of size n with `inner` elements after it is
// then outer * inner lines of stride `inner`. Lines move in groups of one SIMD vector's lanes
// (16 float, 8 double): a group is gathered into split re/im arrays, one lane per line (for a
// strided dim, neighbouring lines are neighbouring memory, so the gather streams), transformed
// together and scattered back. Groups are split across the thread pool; each task has its own
// scratch, the plan's tables are shared. With few lines, or very long ones, each line runs
// alone (V = R) instead of leaving most lanes idle.
//
// A real line of even length n is transformed as a complex line of n/2 points (z = x_even +
// i x_odd) and untangled, both ways.
#include <cmath>
#include <complex>
#include <vector>

#include "core/dtype_dispatch.h"
#include "core/parallel.h"
#include "cpu/fft_lanes.h"
#include "cpu/fft_plan.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cpu {
namespace {

using fft::GroupIo;
using fft::Plan;

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
// Runs body(plan, width) with a lane-vector plan when there are enough lines of a moderate
// length to fill the lanes, else one line at a time: long ones as a six-step transform whose
// columns and rows fill the lanes, short ones through a one-line plan.
constexpr int64_t kLongLine = 4096;
template <class R, class F> void with_plan(int64_t n, bool inverse, int64_t lines, F&& body) {
  constexpr int64_t lanes = fft::kLanes<R>;
  // A group's scratch is 4 n vectors (64 bytes each); past 2^16 points it leaves the caches.
  if (lines >= lanes / 4 && n <= (int64_t(1) << 16)) {
    using P = Plan<R, fft::Vec<R>>;
    body(*fft::cached<P>(n, inverse, [&] { return std::make_shared<const P>(n, inverse); }), lanes);
  } else if (n >= kLongLine && fft::LongPlan<R>::split(n).first > 0) {
    using P = fft::LongPlan<R>;
    body(*fft::cached<P>(n, inverse, [&] { return std::make_shared<const P>(n, inverse); }), int64_t(1));
  } else {
    using P = Plan<R, R>;
    body(*fft::cached<P>(n, inverse, [&] { return std::make_shared<const P>(n, inverse); }), int64_t(1));
  }
}

// Line groups per task: enough work (about 32k points) to pay for scratch and a task.
int64_t group_grain(int64_t n, int64_t width) { return std::max<int64_t>(1, 32768 / std::max<int64_t>(n * width, 1)); }

// Runs task(first_line, count, re, im, work) over groups of `width` lines on the pool, with
// re/im holding `points` vectors and work the plan's scratch.
template <class V, class F> void for_groups(int64_t lines, int64_t width, int64_t points, int64_t work, const F& task) {
  const int64_t groups = (lines + width - 1) / width;
  parallel_for(0, groups, group_grain(points, width), [&](int64_t begin, int64_t end) {
    // Up to 1 MiB is kept per thread: a fresh buffer that size is a fresh mmap, and faulting
    // its pages in cost more than transforming 64 lines of 2048 points. Larger ones are
    // per call (the transform dominates there, and a thread should not keep 16 MiB forever).
    const size_t need = size_t(2 * points + work);
    thread_local std::vector<V> kept;
    std::vector<V> once;
    std::vector<V>& buffer = need * sizeof(V) <= (size_t(1) << 20) ? kept : once;
    if (buffer.size() < need) buffer.assign(need, V{});
    V* re = buffer.data();
    for (int64_t g = begin; g < end; ++g) {
      const int64_t first = g * width;
      task(first, std::min(width, lines - first), re, re + points, re + 2 * points);
    }
  });
}

// cos and sin of 2 pi k / n for k <= n / 2, in double then rounded: the untangling twiddles of
// the half-length real transforms (cached like plans).
template <class R> struct HalfTwiddles {
  std::vector<R> cos, sin;
  explicit HalfTwiddles(int64_t n) : cos(size_t(n / 2 + 1)), sin(size_t(n / 2 + 1)) {
    for (int64_t k = 0; k <= n / 2; ++k) {
      const double a = 2.0 * M_PI * double(k) / double(n);
      cos[k] = R(std::cos(a));
      sin[k] = R(std::sin(a));
    }
  }
};
template <class R> std::shared_ptr<const HalfTwiddles<R>> half_twiddles(int64_t n) {
  return fft::cached<HalfTwiddles<R>>(n, false, [&] { return std::make_shared<const HalfTwiddles<R>>(n); });
}

// In-place 1-D transforms of every line along dim d of the contiguous complex buffer `data`
// (shape `sizes`), each multiplied by `scale`.
template <class R>
void transform_dim(std::complex<R>* data, const Shape& sizes, int64_t d, bool inverse, R scale) {
  const int64_t n = sizes[d], inner = inner_size(sizes, d), lines = outer_size(sizes, d) * inner;
  if (n == 0 || lines == 0) return;
  with_plan<R>(n, inverse, lines, [&](const auto& plan, int64_t width) {
    using V = typename std::decay_t<decltype(plan)>::Value;
    for_groups<V>(lines, width, n, plan.work_size(), [&](int64_t first, int64_t count, V* re, V* im, V* work) {
      const GroupIo<R, V> io(first, count, n, inner);
      io.load_all(data, n, inner, re, im);
      plan.transform(re, im, work);
      io.store_all(data, n, inner, re, im, scale);
    });
  });
}

// The half spectrum (k <= n/2, scaled) of each real line of length n along the last dim: lines
// of `src` have n elements `inner` apart, lines of `dst` n/2 + 1.
template <class R>
void r2c_last_dim(const R* src, std::complex<R>* dst, int64_t n, int64_t inner, int64_t lines, R scale) {
  const int64_t half = n / 2 + 1;
  if (n % 2 == 1) {  // odd: a full complex transform of (x, 0)
    with_plan<R>(n, false, lines, [&](const auto& plan, int64_t width) {
    using V = typename std::decay_t<decltype(plan)>::Value;
      for_groups<V>(lines, width, n, plan.work_size(), [&](int64_t first, int64_t count, V* re, V* im, V* work) {
        const GroupIo<R, V> in(first, count, n, inner), out(first, count, half, inner);
        in.load_all(src, n, inner, re);
        std::fill(im, im + n, V{});
        plan.transform(re, im, work);
        out.store_all(dst, half, inner, re, im, scale);
      });
    });
    return;
  }
  // Even: Z = DFT_h(x_even + i x_odd) holds both halves' spectra E and O (each Hermitian):
  // E_k = (Z_k + conj Z_(h-k)) / 2, O_k = (Z_k - conj Z_(h-k)) / 2i, X_k = E_k + w^k O_k.
  const int64_t h = n / 2;
  const auto twiddles = half_twiddles<R>(n);
  const R* cs = twiddles->cos.data();
  const R* sn = twiddles->sin.data();
  with_plan<R>(h, false, lines, [&](const auto& plan, int64_t width) {
    using V = typename std::decay_t<decltype(plan)>::Value;
    for_groups<V>(lines, width, h + 1, plan.work_size(), [&](int64_t first, int64_t count, V* re, V* im, V* work) {
      if (inner == 1) {  // (x_2k, x_2k+1) are a complex number's two halves
        const GroupIo<R, V> in(first, count, h, 1);
        in.load_all(reinterpret_cast<const std::complex<R>*>(src), h, 1, re, im);
      } else {
        const GroupIo<R, V> in(first, count, n, inner);
        in.load_all(src, h, 2 * inner, re);
        in.load_all(src + inner, h, 2 * inner, im);
      }
      plan.transform(re, im, work);
      // X_k and X_(h-k) read Z_k and Z_(h-k) (indices mod h): both computed before either is
      // written; X_h lands in the extra slot.
      auto untangle = [&](V ar, V ai, V br, V bi, int64_t k, V& xr, V& xi) {
        const V er = ar + br, ei = ai - bi, orr = ai + bi, oi = br - ar;  // 2E and 2O
        // w^k = cos - i sin (the forward sign)
        xr = er + orr * cs[k] + oi * sn[k];
        xi = ei + oi * cs[k] - orr * sn[k];
      };
      for (int64_t k = 0; 2 * k <= h; ++k) {
        const int64_t j = h - k;
        const V akr = re[k], aki = im[k], ajr = re[j % h], aji = im[j % h];
        V xkr, xki, xjr, xji;
        untangle(akr, aki, ajr, aji, k, xkr, xki);
        untangle(ajr, aji, akr, aki, j, xjr, xji);
        re[k] = xkr;
        im[k] = xki;
        re[j] = xjr;
        im[j] = xji;
      }
      const GroupIo<R, V> out(first, count, half, inner);
      out.store_all(dst, h + 1, inner, re, im, R(0.5) * scale);
    });
  });
}

// Each line of the last dim rebuilt from its half spectrum (X_(n-k) = conj X_k) and inverse
// transformed; the result is real. The imaginary parts of X_0 (and X_(n/2), n even) drop out,
// as in torch. `src` lines have n/2 + 1 elements `inner` apart, `dst` lines n.
template <class R>
void c2r_last_dim(const std::complex<R>* src, R* dst, int64_t n, int64_t inner, int64_t lines, R scale) {
  const int64_t half = n / 2 + 1;
  if (n % 2 == 1) {
    with_plan<R>(n, true, lines, [&](const auto& plan, int64_t width) {
    using V = typename std::decay_t<decltype(plan)>::Value;
      for_groups<V>(lines, width, n, plan.work_size(), [&](int64_t first, int64_t count, V* re, V* im, V* work) {
        const GroupIo<R, V> in(first, count, half, inner), out(first, count, n, inner);
        in.load_all(src, half, inner, re, im);
        im[0] = V{};
        for (int64_t k = half; k < n; ++k) {
          re[k] = re[n - k];
          im[k] = -im[n - k];
        }
        plan.transform(re, im, work);
        out.store_all(dst, n, inner, re, scale);
      });
    });
    return;
  }
  // Even: with A = X_k, B = conj X_(h-k), Z_k = (A + B) + i (A - B) w^-k is 2 (E_k + i O_k), whose
  // unnormalised inverse of h points is n (x_even + i x_odd).
  const int64_t h = n / 2;
  const auto twiddles = half_twiddles<R>(n);
  const R* cs = twiddles->cos.data();
  const R* sn = twiddles->sin.data();
  with_plan<R>(h, true, lines, [&](const auto& plan, int64_t width) {
    using V = typename std::decay_t<decltype(plan)>::Value;
    for_groups<V>(lines, width, h + 1, plan.work_size(), [&](int64_t first, int64_t count, V* re, V* im, V* work) {
      const GroupIo<R, V> in(first, count, half, inner);
      in.load_all(src, h + 1, inner, re, im);
      im[0] = V{};  // X_0's and X_h's imaginary parts drop out
      im[h] = V{};
      // Pairs (k, h - k) read each other: both are computed before either is written.
      for (int64_t k = 0; 2 * k <= h; ++k) {
        const int64_t j = h - k;
        const V akr = re[k], aki = im[k], ajr = re[j], aji = im[j];
        auto untangle = [&](V ar, V ai, V br, V bi, int64_t at, V& zr, V& zi) {
          bi = -bi;  // conj X_(h-at)
          const V dr = ar - br, di = ai - bi;
          // (A - B) w^-k, w^-k = cos + i sin
          const V orr = dr * cs[at] - di * sn[at], oi = dr * sn[at] + di * cs[at];
          zr = ar + br - oi;
          zi = ai + bi + orr;
        };
        V zkr, zki, zjr, zji;
        untangle(akr, aki, ajr, aji, k, zkr, zki);
        untangle(ajr, aji, akr, aki, j, zjr, zji);
        re[k] = zkr;
        im[k] = zki;
        if (j < h) {
          re[j] = zjr;
          im[j] = zji;
        }
      }
      plan.transform(re, im, work);
      if (inner == 1) {  // x_2k and x_2k+1 are stored as one complex number
        const GroupIo<R, V> out(first, count, h, 1);
        out.store_all(reinterpret_cast<std::complex<R>*>(dst), h, 1, re, im, scale);
      } else {
        const GroupIo<R, V> out(first, count, n, inner);
        out.store_all(dst, h, 2 * inner, re, scale);
        out.store_all(dst + inner, h, 2 * inner, im, scale);
      }
    });
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

// The last of dims as a real-to-half-spectrum transform (r2c_last_dim), then the rest as
// complex transforms of the half spectrum.
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
    const int64_t inner = inner_size(out_sizes, last), lines = outer_size(out_sizes, last) * inner;
    const R s = dims.size() == 1 ? R(scale) : R(1);
    const R* src = x.data_ptr<R>();
    std::complex<R>* dst = out.data_ptr<std::complex<R>>();
    if (n > 0 && lines > 0) r2c_last_dim<R>(src, dst, n, inner, lines, s);
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
    c2r_last_dim<R>(buf, dst, n, inner, lines, R(scale));
  });
  return out;
}

EMBER_REGISTER_KERNEL(fft_c2c, CPU, fft_c2c_cpu);
EMBER_REGISTER_KERNEL(fft_r2c, CPU, fft_r2c_cpu);
EMBER_REGISTER_KERNEL(fft_c2r, CPU, fft_c2r_cpu);

}  // namespace
}  // namespace ember::cpu
