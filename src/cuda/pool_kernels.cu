// CUDA launchers of the pooling ops on N*C contiguous volumes of D x H x W (2-d ops run them
// with unit depth): max pooling with indices and its backward, average pooling and its
// backward, adaptive average pooling and its backward, adaptive max pooling. The semantics are
// the CPU kernels' (src/cpu/pool_kernels.cpp), which follow PyTorch's:
//   - max: taps in (d, h, w) order starting at -inf with the first in-range tap's index; a tap
//     wins when larger or NaN (so NaN propagates, and the first NaN keeps its index);
//   - avg: the window clipped to the input, divided by the divisor override, else the window's
//     extent within the padded input (count_include_pad) or within the input; an empty window
//     gives 0;
//   - adaptive: window [floor(o * I / O), ceil((o + 1) * I / O)) per dim.
// One thread per output element for the forwards. The backwards of average and adaptive average
// pooling gather instead of scattering: one thread per input element sums, in the CPU's output
// order, the outputs whose windows cover it, so there are no atomics and the result is
// deterministic (and, for float, bitwise the CPU's). Max pooling's backward has only indices, so
// it scatters with atomicAdd into a float32/float64 buffer the host converts.
// float16/bfloat16 are loaded and stored as themselves and computed in float (the CPU converts
// them to float32 first: the same values). Index arithmetic is 32-bit when every flat index of
// the input and output fits, else 64-bit.
#include <cuda/std/limits>

#include <algorithm>
#include <cstdint>

#include "cuda/pool_launchers.h"
#include "cuda/reduce_device.cuh"

namespace ember::cuda {
namespace {

inline constexpr int kThreads = 256;
// Enough blocks to fill any GPU several times over; the grid-stride loops do the rest.
inline constexpr int64_t kMaxPoolBlocks = int64_t(1) << 16;

unsigned blocks_for(int64_t n, int64_t per_block = kThreads) {
  const int64_t b = (n + per_block - 1) / per_block;
  return unsigned(std::clamp<int64_t>(b, 1, kMaxPoolBlocks));
}

// The geometry in the kernel's index type.
template <class I> struct Geo {
  I D, H, W, OD, OH, OW;
  I kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw;
};
template <class I> Geo<I> geo_of(const PoolGeometry& g) {
  return {I(g.in[0]), I(g.in[1]), I(g.in[2]), I(g.out[0]), I(g.out[1]), I(g.out[2]),
          I(g.k[0]),  I(g.k[1]),  I(g.k[2]),  I(g.s[0]),   I(g.s[1]),   I(g.s[2]),
          I(g.p[0]),  I(g.p[1]),  I(g.p[2]),  I(g.d[0]),   I(g.d[1]),   I(g.d[2])};
}
// 32-bit indices when every flat index into the input and output (and any window position,
// which stays within the padded input) fits.
bool fits_int32(const PoolGeometry& g) {
  constexpr int64_t kLimit = int64_t(INT32_MAX) / 2;
  const int64_t in = g.planes * g.in[0] * g.in[1] * g.in[2], out = g.planes * g.out[0] * g.out[1] * g.out[2];
  double padded = double(g.planes);  // double: a huge stride must not wrap around
  for (int i = 0; i < 3; ++i) padded *= double(g.in[i] + 2 * g.p[i]) + double(g.s[i]) + double(g.d[i]) * double(g.k[i]);
  return in <= kLimit && out <= kLimit && padded <= double(kLimit);
}

// i -> (plane, a, b, c) of a row-major (planes, A, B, C) shape.
template <class I> struct Pos {
  I pl, a, b, c;
};
template <class I> __device__ __forceinline__ Pos<I> split(I i, I A, I B, I C) {
  Pos<I> q;
  q.c = i % C;
  i /= C;
  q.b = i % B;
  i /= B;
  q.a = i % A;
  q.pl = i / A;
  return q;
}

#define EMBER_POOL_LOOP(i, n) \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); i += int64_t(blockDim.x) * gridDim.x)

template <class C> __device__ __forceinline__ C neg_inf() { return -::cuda::std::numeric_limits<C>::infinity(); }

// The max-pool take rule (the CPU's max_take): larger or NaN wins.
template <class C, class I> __device__ __forceinline__ void max_take(C v, I j, C& bv, I& best) {
  const bool t = (v > bv) || (v != v);
  bv = t ? v : bv;
  best = t ? j : best;
}

// The taps [lo, hi) of a window starting at `start` with K taps `dil` apart that lie in [0, n):
// the CPU's clipping loops in closed form.
template <class I> __device__ __forceinline__ void clip(I start, I K, I dil, I n, I& lo, I& hi) {
  lo = start < 0 ? min(K, (-start + dil - 1) / dil) : I(0);
  const I last = n - 1 - start;  // the last offset inside the input
  const I h = last >= 0 ? last / dil + 1 : I(0);
  hi = max(lo, min(K, h));
}

// ---------------------------------------------------------------- max pooling
template <class T, class I>
__global__ void max_pool_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t* __restrict__ ind, Geo<I> g,
                                int64_t n) {
  using C = compute_t<T>;
  EMBER_POOL_LOOP(i, n) {
    const Pos<I> q = split<I>(I(i), g.OD, g.OH, g.OW);
    const I d0 = q.a * g.sd - g.pd, h0 = q.b * g.sh - g.ph, w0 = q.c * g.sw - g.pw;
    I a0, a1, b0, b1, c0, c1;
    clip(d0, g.kd, g.dd, g.D, a0, a1);
    clip(h0, g.kh, g.dh, g.H, b0, b1);
    clip(w0, g.kw, g.dw, g.W, c0, c1);
    const T* xp = x + q.pl * (g.D * g.H * g.W);
    I best = ((d0 + a0 * g.dd) * g.H + (h0 + b0 * g.dh)) * g.W + (w0 + c0 * g.dw);
    C bv = neg_inf<C>();
    for (I a = a0; a < a1; ++a)
      for (I b = b0; b < b1; ++b) {
        const I row = ((d0 + a * g.dd) * g.H + (h0 + b * g.dh)) * g.W + w0;
        for (I c = c0; c < c1; ++c) {
          const I j = row + c * g.dw;
          max_take(convert<C>(xp[j]), j, bv, best);
        }
      }
    y[i] = convert<T>(bv);
    ind[i] = int64_t(best);
  }
}

// PyTorch's adaptive window bounds (products in 64 bits: o * in can exceed 32 bits).
__device__ __forceinline__ int64_t start_index(int64_t o, int64_t O, int64_t in) { return (o * in) / O; }
__device__ __forceinline__ int64_t end_index(int64_t o, int64_t O, int64_t in) { return ((o + 1) * in + O - 1) / O; }

// The adaptive window of output i: [d0, d1) x [h0, h1) x [w0, w1) in the volume of plane pl.
template <class I> struct AdaptiveWindow {
  I pl, d0, d1, h0, h1, w0, w1;
};
template <class I> __device__ __forceinline__ AdaptiveWindow<I> adaptive_window(int64_t i, const Geo<I>& g) {
  const Pos<I> q = split<I>(I(i), g.OD, g.OH, g.OW);
  return {q.pl,
          I(start_index(q.a, g.OD, g.D)), I(end_index(q.a, g.OD, g.D)),
          I(start_index(q.b, g.OH, g.H)), I(end_index(q.b, g.OH, g.H)),
          I(start_index(q.c, g.OW, g.W)), I(end_index(q.c, g.OW, g.W))};
}

template <class T, class I>
__global__ void adaptive_max_pool_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t* __restrict__ ind,
                                         Geo<I> g, int64_t n) {
  using C = compute_t<T>;
  EMBER_POOL_LOOP(i, n) {
    const AdaptiveWindow<I> w = adaptive_window(i, g);
    const T* xp = x + w.pl * (g.D * g.H * g.W);
    I best = (w.d0 * g.H + w.h0) * g.W + w.w0;
    C bv = neg_inf<C>();
    for (I id = w.d0; id < w.d1; ++id)
      for (I ih = w.h0; ih < w.h1; ++ih) {
        const I row = (id * g.H + ih) * g.W;
        for (I iw = w.w0; iw < w.w1; ++iw) max_take(convert<C>(xp[row + iw]), row + iw, bv, best);
      }
    y[i] = convert<T>(bv);
    ind[i] = int64_t(best);
  }
}

// grad_in[plane][ind[o]] += grad_out[o]; indices outside the volume are skipped (the CPU would
// write out of bounds).
template <class T, class A, class I>
__global__ void max_pool_backward_kernel(const T* __restrict__ gy, const int64_t* __restrict__ ind, A* __restrict__ dx,
                                         I in_plane, I out_plane, int64_t n) {
  EMBER_POOL_LOOP(i, n) {
    const I o = I(i);
    const int64_t j = ind[o];
    if (j < 0 || j >= int64_t(in_plane)) continue;
    atomicAdd(dx + (o / out_plane) * in_plane + I(j), convert<A>(gy[o]));
  }
}

// ---------------------------------------------------------------- average pooling
// One dim of an avg-pool window (the CPU's avg_span): clipped bounds, and the extent within the
// padded input that count_include_pad divides by.
template <class I> struct Span {
  I lo, hi, padded;
};
template <class I> __device__ __forceinline__ Span<I> avg_span(I o, I in, I k, I s, I p) {
  const I start = o * s - p, end = min(start + k, in + p);
  return {max(start, I(0)), min(end, in), end - start};
}
template <class I>
__device__ __forceinline__ int64_t avg_divisor(const Span<I>& a, const Span<I>& b, const Span<I>& c, bool cip,
                                               int64_t divisor) {
  if (divisor) return divisor;
  return cip ? int64_t(a.padded) * b.padded * c.padded : int64_t(a.hi - a.lo) * (b.hi - b.lo) * (c.hi - c.lo);
}

template <class T, class I>
__global__ void avg_pool_kernel(const T* __restrict__ x, T* __restrict__ y, Geo<I> g, bool cip, int64_t divisor,
                                int64_t n) {
  using C = compute_t<T>;
  EMBER_POOL_LOOP(i, n) {
    const Pos<I> q = split<I>(I(i), g.OD, g.OH, g.OW);
    const Span<I> a = avg_span(q.a, g.D, g.kd, g.sd, g.pd), b = avg_span(q.b, g.H, g.kh, g.sh, g.ph),
                  c = avg_span(q.c, g.W, g.kw, g.sw, g.pw);
    const T* xp = x + q.pl * (g.D * g.H * g.W);
    C acc = C(0);
    for (I id = a.lo; id < a.hi; ++id)
      for (I ih = b.lo; ih < b.hi; ++ih) {
        const I row = (id * g.H + ih) * g.W;
        for (I iw = c.lo; iw < c.hi; ++iw) acc += convert<C>(xp[row + iw]);
      }
    const bool nonempty = a.lo < a.hi && b.lo < b.hi && c.lo < c.hi;  // all padding averages to 0
    y[i] = nonempty ? convert<T>(acc / C(avg_divisor(a, b, c, cip, divisor))) : convert<T>(C(0));
  }
}

// The outputs [lo, hi] whose windows (start o * s - p, k long) cover input position i.
template <class I> __device__ __forceinline__ void covering(I i, I O, I k, I s, I p, I& lo, I& hi) {
  const I first = i + p - k + 1;  // the smallest start that still covers i
  lo = first <= 0 ? I(0) : (first + s - 1) / s;
  hi = min(O - 1, (i + p) / s);
}

// Gather form of the CPU's scatter: every input element sums grad / divisor over its covering
// windows in the CPU's (od, oh, ow) order.
template <class T, class I>
__global__ void avg_pool_backward_kernel(const T* __restrict__ gy, T* __restrict__ dx, Geo<I> g, bool cip,
                                         int64_t divisor, int64_t n) {
  using C = compute_t<T>;
  EMBER_POOL_LOOP(i, n) {
    const Pos<I> q = split<I>(I(i), g.D, g.H, g.W);
    I od0, od1, oh0, oh1, ow0, ow1;
    covering(q.a, g.OD, g.kd, g.sd, g.pd, od0, od1);
    covering(q.b, g.OH, g.kh, g.sh, g.ph, oh0, oh1);
    covering(q.c, g.OW, g.kw, g.sw, g.pw, ow0, ow1);
    const T* gp = gy + q.pl * (g.OD * g.OH * g.OW);
    C acc = C(0);
    for (I od = od0; od <= od1; ++od) {
      const Span<I> a = avg_span(od, g.D, g.kd, g.sd, g.pd);
      for (I oh = oh0; oh <= oh1; ++oh) {
        const Span<I> b = avg_span(oh, g.H, g.kh, g.sh, g.ph);
        for (I ow = ow0; ow <= ow1; ++ow) {
          const Span<I> c = avg_span(ow, g.W, g.kw, g.sw, g.pw);
          acc += convert<C>(gp[(od * g.OH + oh) * g.OW + ow]) / C(avg_divisor(a, b, c, cip, divisor));
        }
      }
    }
    dx[i] = convert<T>(acc);
  }
}

// ---------------------------------------------------------------- adaptive average pooling
// Sums in double, as the CPU (whose float16/bfloat16 results go through float32).
template <class T> __device__ __forceinline__ T from_double(double v) { return convert<T>(compute_t<T>(v)); }

template <class T, class I>
__global__ void adaptive_avg_pool_kernel(const T* __restrict__ x, T* __restrict__ y, Geo<I> g, int64_t n) {
  EMBER_POOL_LOOP(i, n) {
    const AdaptiveWindow<I> w = adaptive_window(i, g);
    const T* xp = x + w.pl * (g.D * g.H * g.W);
    double acc = 0;
    for (I id = w.d0; id < w.d1; ++id)
      for (I ih = w.h0; ih < w.h1; ++ih) {
        const I row = (id * g.H + ih) * g.W;
        for (I iw = w.w0; iw < w.w1; ++iw) acc += double(convert<compute_t<T>>(xp[row + iw]));
      }
    y[i] = from_double<T>(acc / double(int64_t(w.d1 - w.d0) * (w.h1 - w.h0) * (w.w1 - w.w0)));
  }
}

// Large windows (global average pooling of big planes): a warp per output, the lanes walking the
// window's elements in row-major order (neighbouring lanes read neighbouring columns).
inline constexpr int kWarpsPerBlock = kThreads / 32;
template <class T, class I>
__global__ void adaptive_avg_pool_warp_kernel(const T* __restrict__ x, T* __restrict__ y, Geo<I> g, int64_t n) {
  const int lane = int(threadIdx.x) & 31;
  const int64_t warps = int64_t(gridDim.x) * kWarpsPerBlock;
  for (int64_t i = int64_t(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5); i < n; i += warps) {
    const AdaptiveWindow<I> w = adaptive_window(i, g);
    const T* xp = x + w.pl * (g.D * g.H * g.W);
    const I hl = w.h1 - w.h0, wl = w.w1 - w.w0;
    const I count = (w.d1 - w.d0) * hl * wl;  // <= the volume: fits I
    double acc = 0;
    for (I e = I(lane); e < count; e += 32) {
      const I r = e / wl, iw = w.w0 + e % wl;
      const I ih = w.h0 + r % hl, id = w.d0 + r / hl;
      acc += double(convert<compute_t<T>>(xp[(id * g.H + ih) * g.W + iw]));
    }
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0) y[i] = from_double<T>(acc / double(count));
  }
}

// Gather form of the CPU's scatter: input position i is in the windows of outputs
// [floor(i * O / I), ceil((i + 1) * O / I)) (the adaptive bounds with in and out swapped), summed
// in the CPU's (od, oh, ow) order, each grad divided by its window's size in the compute type.
template <class T, class I>
__global__ void adaptive_avg_pool_backward_kernel(const T* __restrict__ gy, T* __restrict__ dx, Geo<I> g, int64_t n) {
  using C = compute_t<T>;
  EMBER_POOL_LOOP(i, n) {
    const Pos<I> q = split<I>(I(i), g.D, g.H, g.W);
    const I od0 = I(start_index(q.a, g.D, g.OD)), od1 = I(end_index(q.a, g.D, g.OD));
    const I oh0 = I(start_index(q.b, g.H, g.OH)), oh1 = I(end_index(q.b, g.H, g.OH));
    const I ow0 = I(start_index(q.c, g.W, g.OW)), ow1 = I(end_index(q.c, g.W, g.OW));
    const T* gp = gy + q.pl * (g.OD * g.OH * g.OW);
    C acc = C(0);
    for (I od = od0; od < od1; ++od) {
      const int64_t dn = end_index(od, g.OD, g.D) - start_index(od, g.OD, g.D);
      for (I oh = oh0; oh < oh1; ++oh) {
        const int64_t hn = end_index(oh, g.OH, g.H) - start_index(oh, g.OH, g.H);
        for (I ow = ow0; ow < ow1; ++ow) {
          const int64_t wn = end_index(ow, g.OW, g.W) - start_index(ow, g.OW, g.W);
          acc += convert<C>(gp[(od * g.OH + oh) * g.OW + ow]) / C(dn * hn * wn);
        }
      }
    }
    dx[i] = convert<T>(acc);
  }
}

int64_t in_numel(const PoolGeometry& g) { return g.planes * g.in[0] * g.in[1] * g.in[2]; }
int64_t out_numel(const PoolGeometry& g) { return g.planes * g.out[0] * g.out[1] * g.out[2]; }

// Unless n is 0: launch(x, y, geo) with L's data as the storage type of L.code and the geometry
// in 32- or 64-bit indices (fits_int32), then the launch check. `launch` is a generic lambda
// that starts one kernel; T and I are deduced from its arguments.
template <class Launch, class F> void run_pool(const Launch& L, int64_t n, const F& launch) {
  if (n == 0) return;
  const bool small = fits_int32(L.g);
  visit_storage<kStoreFloat>(L.code, L.op, [&]<class T>() {
    const T* x = static_cast<const T*>(L.in);
    T* y = static_cast<T*>(L.out);
    if (small) launch(x, y, geo_of<int32_t>(L.g));
    else launch(x, y, geo_of<int64_t>(L.g));
    EMBER_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace

void launch_max_pool(const MaxPoolLaunch& L) {
  const int64_t n = out_numel(L.g);
  run_pool(L, n, [&]<class T, class I>(const T* x, T* y, Geo<I> g) {
    max_pool_kernel<T, I><<<blocks_for(n), kThreads, 0, L.stream>>>(x, y, L.indices, g, n);
  });
}

void launch_adaptive_max_pool(const MaxPoolLaunch& L) {
  const int64_t n = out_numel(L.g);
  run_pool(L, n, [&]<class T, class I>(const T* x, T* y, Geo<I> g) {
    adaptive_max_pool_kernel<T, I><<<blocks_for(n), kThreads, 0, L.stream>>>(x, y, L.indices, g, n);
  });
}

void launch_max_pool_backward(const MaxPoolBackwardLaunch& L) {
  const int64_t n = L.planes * L.out_plane;
  if (n == 0 || L.in_plane == 0) return;
  const bool small = L.planes * L.in_plane <= INT32_MAX / 2 && n <= INT32_MAX / 2;
  visit_storage<kStoreFloat>(L.code, L.op, [&]<class T>() {
    using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
    auto go = [&]<class I>() {
      max_pool_backward_kernel<T, A, I><<<blocks_for(n), kThreads, 0, L.stream>>>(
          static_cast<const T*>(L.grad_out), L.indices, static_cast<A*>(L.grad_in), I(L.in_plane), I(L.out_plane), n);
      EMBER_CUDA_CHECK_LAUNCH();
    };
    if (small) go.template operator()<int32_t>();
    else go.template operator()<int64_t>();
  });
}

void launch_avg_pool(const AvgPoolLaunch& L) {
  const int64_t n = out_numel(L.g);
  run_pool(L, n, [&]<class T, class I>(const T* x, T* y, Geo<I> g) {
    avg_pool_kernel<T, I><<<blocks_for(n), kThreads, 0, L.stream>>>(x, y, g, L.count_include_pad, L.divisor, n);
  });
}

void launch_avg_pool_backward(const AvgPoolLaunch& L) {
  const int64_t n = in_numel(L.g);
  run_pool(L, n, [&]<class T, class I>(const T* gy, T* dx, Geo<I> g) {
    avg_pool_backward_kernel<T, I><<<blocks_for(n), kThreads, 0, L.stream>>>(gy, dx, g, L.count_include_pad,
                                                                              L.divisor, n);
  });
}

void launch_adaptive_avg_pool(const AvgPoolLaunch& L) {
  const int64_t n = out_numel(L.g);
  if (n == 0) return;
  // The largest window (ceil(in / out) + 1 per dim bounds it): a warp per output when it is big.
  int64_t window = 1;
  for (int i = 0; i < 3; ++i) window *= (L.g.in[i] + L.g.out[i] - 1) / L.g.out[i] + 1;
  run_pool(L, n, [&]<class T, class I>(const T* x, T* y, Geo<I> g) {
    if (window >= 256)
      adaptive_avg_pool_warp_kernel<T, I><<<blocks_for(n, kWarpsPerBlock), kThreads, 0, L.stream>>>(x, y, g, n);
    else
      adaptive_avg_pool_kernel<T, I><<<blocks_for(n), kThreads, 0, L.stream>>>(x, y, g, n);
  });
}

void launch_adaptive_avg_pool_backward(const AvgPoolLaunch& L) {
  const int64_t n = in_numel(L.g);
  run_pool(L, n, [&]<class T, class I>(const T* gy, T* dx, Geo<I> g) {
    adaptive_avg_pool_backward_kernel<T, I><<<blocks_for(n), kThreads, 0, L.stream>>>(gy, dx, g, n);
  });
}

}  // namespace ember::cuda
