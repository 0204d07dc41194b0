// CUDA launchers of interpolation (every mode: nearest, nearest-exact, linear, cubic and the
// antialiased ones) and its backward, on `planes` contiguous volumes of up to three spatial dims.
// All modes are separable: the host (upsample_ops.cpp) computes each dim's taps with the CPU's
// formulas and uploads them, so the kernels only walk a tap grid and no coordinate rule is
// repeated in device code (none can drift from the CPU's).
// Forward: one thread per output element, the weighted sum nested (d, h, w) as the CPU's loop,
// in float (float32, float16, bfloat16) or double. Backward: one thread per grad_out element
// scattering with the same weights through atomicAdd (several outputs read each input, and their
// taps are data, not a closed form to invert) into a float32 / float64 buffer.
#include <algorithm>
#include <cstdint>

#include "cuda/reduce_device.cuh"
#include "cuda/spatial_launchers.h"

namespace ember::cuda {
namespace {

inline constexpr int kThreads = 256;
unsigned blocks_for(int64_t n) { return unsigned(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, int64_t(1) << 16)); }

template <class W> struct Grid {
  int64_t in[3], out[3];
  int k[3];
  const int64_t* idx[3];
  const W* w[3];
};
template <class W> Grid<W> grid_of(const UpsampleLaunch& L) {
  Grid<W> g;
  for (int i = 0; i < 3; ++i) {
    g.in[i] = L.in[i];
    g.out[i] = L.out[i];
    g.k[i] = int(L.k[i]);
    g.idx[i] = L.idx[i];
    g.w[i] = static_cast<const W*>(L.w[i]);
  }
  return g;
}

// Output element i of the (planes, out[0], out[1], out[2]) grid: its plane and position.
struct OutPos {
  int64_t plane, od, oh, ow;
};
template <class W> __device__ __forceinline__ OutPos out_pos(int64_t i, const Grid<W>& g) {
  OutPos p;
  p.ow = i % g.out[2];
  i /= g.out[2];
  p.oh = i % g.out[1];
  i /= g.out[1];
  p.od = i % g.out[0];
  p.plane = i / g.out[0];
  return p;
}

template <class T>
__global__ void upsample_kernel(const T* __restrict__ x, T* __restrict__ y, Grid<compute_t<T>> g, int64_t n) {
  using C = compute_t<T>;
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    const auto [plane, od, oh, ow] = out_pos(i, g);
    const T* xp = x + plane * in_plane;
    C acc = C(0);
    for (int a = 0; a < g.k[0]; ++a) {
      const C wd = g.w[0][od * g.k[0] + a];
      const T* xd = xp + g.idx[0][od * g.k[0] + a] * g.in[1] * g.in[2];
      C acc_h = C(0);
      for (int b = 0; b < g.k[1]; ++b) {
        const C wh = g.w[1][oh * g.k[1] + b];
        const T* xh = xd + g.idx[1][oh * g.k[1] + b] * g.in[2];
        C acc_w = C(0);
        for (int c = 0; c < g.k[2]; ++c) acc_w += g.w[2][ow * g.k[2] + c] * convert<C>(xh[g.idx[2][ow * g.k[2] + c]]);
        acc_h += wh * acc_w;
      }
      acc += wd * acc_h;
    }
    y[i] = convert<T>(acc);
  }
}

template <class T>
__global__ void upsample_backward_kernel(const T* __restrict__ gy, compute_t<T>* __restrict__ dx, Grid<compute_t<T>> g,
                                         int64_t n) {
  using C = compute_t<T>;
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    const auto [plane, od, oh, ow] = out_pos(i, g);
    C* dp = dx + plane * in_plane;
    const C v = convert<C>(gy[i]);
    for (int a = 0; a < g.k[0]; ++a) {
      const C vd = v * g.w[0][od * g.k[0] + a];
      C* dd = dp + g.idx[0][od * g.k[0] + a] * g.in[1] * g.in[2];
      for (int b = 0; b < g.k[1]; ++b) {
        const C vh = vd * g.w[1][oh * g.k[1] + b];
        C* dh = dd + g.idx[1][oh * g.k[1] + b] * g.in[2];
        for (int c = 0; c < g.k[2]; ++c) {
          const C wv = vh * g.w[2][ow * g.k[2] + c];
          if (wv != C(0)) atomicAdd(dh + g.idx[2][ow * g.k[2] + c], wv);  // skip the padding taps (weight 0)
        }
      }
    }
  }
}

int64_t out_numel(const UpsampleLaunch& L) { return L.planes * L.out[0] * L.out[1] * L.out[2]; }

}  // namespace

void launch_upsample(const UpsampleLaunch& L) {
  const int64_t n = out_numel(L);
  if (n == 0) return;
  visit_storage<kStoreFloat>(L.code, L.op, [&]<class T>() {
    upsample_kernel<T><<<blocks_for(n), kThreads, 0, L.stream>>>(static_cast<const T*>(L.x), static_cast<T*>(L.y),
                                                                 grid_of<compute_t<T>>(L), n);
    EMBER_CUDA_CHECK_LAUNCH();
  });
}

void launch_upsample_backward(const UpsampleLaunch& L) {
  const int64_t n = out_numel(L);
  if (n == 0) return;
  visit_storage<kStoreFloat>(L.code, L.op, [&]<class T>() {
    upsample_backward_kernel<T><<<blocks_for(n), kThreads, 0, L.stream>>>(
        static_cast<const T*>(L.x), static_cast<compute_t<T>*>(L.y), grid_of<compute_t<T>>(L), n);
    EMBER_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace ember::cuda
