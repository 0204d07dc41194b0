// CUDA launchers of im2col (F.unfold) and col2im (F.fold) on batched images, the CPU's window
// sweeps (src/cpu/im2col.h with unit depth): columns (N, C*KH*KW, OH*OW), rows in (c, kh, kw)
// order, each entry the image value its tap sees at that output position, 0 in the padding.
// Both are gathers, one thread per element written: im2col per column entry; col2im per image
// pixel, summing the column entries that came from it over the taps in (kh, kw) order, which is
// the order the CPU's scatter adds them in (so no atomics, deterministic, and bitwise the CPU's
// for float). float16/bfloat16 load and store themselves and sum in float.
#include <algorithm>
#include <cstdint>

#include "cuda/reduce_device.cuh"
#include "cuda/spatial_launchers.h"

namespace ember::cuda {
namespace {

inline constexpr int kThreads = 256;
unsigned blocks_for(int64_t n) { return unsigned(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, int64_t(1) << 16)); }

template <class I> struct FoldGeo {
  I C, H, W, OH, OW, kh, kw, dh, dw, ph, pw, sh, sw;
};
template <class I> FoldGeo<I> geo_of(const FoldLaunch& L) {
  return {I(L.C), I(L.H), I(L.W), I(L.OH), I(L.OW), I(L.KH), I(L.KW), I(L.dh), I(L.dw), I(L.ph), I(L.pw), I(L.sh), I(L.sw)};
}

template <class T, class I>
__global__ void im2col_kernel(const T* __restrict__ x, T* __restrict__ col, FoldGeo<I> g, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    I r = I(i);
    const I ow = r % g.OW;
    r /= g.OW;
    const I oh = r % g.OH;
    r /= g.OH;
    const I kw = r % g.kw;
    r /= g.kw;
    const I kh = r % g.kh;
    r /= g.kh;  // r = n * C + c: the image plane
    const I ih = oh * g.sh - g.ph + kh * g.dh, iw = ow * g.sw - g.pw + kw * g.dw;
    col[i] = (ih >= 0 && ih < g.H && iw >= 0 && iw < g.W) ? x[(r * g.H + ih) * g.W + iw] : convert<T>(0.0f);
  }
}

template <class T, class I>
__global__ void col2im_kernel(const T* __restrict__ col, T* __restrict__ x, FoldGeo<I> g, int64_t n) {
  using C = compute_t<T>;
  const I L = g.OH * g.OW;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    I r = I(i);
    const I iw = r % g.W;
    r /= g.W;
    const I ih = r % g.H;
    r /= g.H;  // r = n * C + c
    const T* cp = col + r * (g.kh * g.kw) * L;  // the plane's rows
    C acc = C(0);
    for (I kh = 0; kh < g.kh; ++kh) {
      const I th = ih + g.ph - kh * g.dh;  // = oh * sh
      if (th < 0 || th % g.sh != 0) continue;
      const I oh = th / g.sh;
      if (oh >= g.OH) continue;
      for (I kw = 0; kw < g.kw; ++kw) {
        const I tw = iw + g.pw - kw * g.dw;
        if (tw < 0 || tw % g.sw != 0) continue;
        const I ow = tw / g.sw;
        if (ow >= g.OW) continue;
        acc += convert<C>(cp[(kh * g.kw + kw) * L + oh * g.OW + ow]);
      }
    }
    x[i] = convert<T>(acc);
  }
}

bool fits_int32(const FoldLaunch& L) {
  constexpr int64_t kLimit = int64_t(INT32_MAX) / 2;
  const int64_t img = L.N * L.C * L.H * L.W, cols = L.N * L.C * L.KH * L.KW * L.OH * L.OW;
  const int64_t reach = std::max(L.OH * L.sh + L.KH * L.dh, L.OW * L.sw + L.KW * L.dw) + L.H + L.W + L.ph + L.pw;
  return img <= kLimit && cols <= kLimit && reach <= kLimit;
}

}  // namespace

void launch_im2col(const FoldLaunch& L) {
  const int64_t n = L.N * L.C * L.KH * L.KW * L.OH * L.OW;
  if (n == 0) return;
  visit_storage<kStoreFloat>(L.code, L.op, [&]<class T>() {
    const T* x = static_cast<const T*>(L.in);
    T* col = static_cast<T*>(L.out);
    if (fits_int32(L)) im2col_kernel<T, int32_t><<<blocks_for(n), kThreads, 0, L.stream>>>(x, col, geo_of<int32_t>(L), n);
    else im2col_kernel<T, int64_t><<<blocks_for(n), kThreads, 0, L.stream>>>(x, col, geo_of<int64_t>(L), n);
    EMBER_CUDA_CHECK_LAUNCH();
  });
}

void launch_col2im(const FoldLaunch& L) {
  const int64_t n = L.N * L.C * L.H * L.W;
  if (n == 0) return;
  visit_storage<kStoreFloat>(L.code, L.op, [&]<class T>() {
    const T* col = static_cast<const T*>(L.in);
    T* x = static_cast<T*>(L.out);
    if (fits_int32(L)) col2im_kernel<T, int32_t><<<blocks_for(n), kThreads, 0, L.stream>>>(col, x, geo_of<int32_t>(L), n);
    else col2im_kernel<T, int64_t><<<blocks_for(n), kThreads, 0, L.stream>>>(col, x, geo_of<int64_t>(L), n);
    EMBER_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace ember::cuda
