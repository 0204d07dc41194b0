// CPU kernels for pooling on batched (N, C, H, W) and (N, C, D, H, W) input: max pooling with
// indices and its backward, average pooling and its backward, adaptive average pooling and its
// backward, adaptive max pooling. Arguments arrive checked by src/nn/functional/pool.cpp and
// pool_nd.cpp (stride filled in, output size >= 1). Each plane (volume) is independent: planes
// are split across threads. Indices are flat positions in the plane (volume), as PyTorch's.
// Window rules (padding, ceil_mode, count_include_pad, adaptive start/end) follow PyTorch's CPU
// kernels. Average and adaptive pooling have one kernel over (D, H, W) that the 2-d ops run
// with unit depth; max pooling keeps a 2-d kernel of its own for its vector fast paths, and the
// 3-d kernel shares its take rule.
// GCC 12 warns inside its own masked-load intrinsics (their undefined pass-through operand).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "core/dtype_dispatch.h"
#include "cpu/row_sum.h"
#include "ember/ops.h"
#include "ops/op_handles.h"
#include "ops/pool_geometry.h"

namespace ember::cpu {
namespace {

// Runs fn(plane) for each of `planes` planes, `per_plane` elements of work each.
template <class F> void for_planes(int64_t planes, int64_t per_plane, const F& fn) {
  parallel_for(0, planes, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, per_plane)),
               [&](int64_t p0, int64_t p1) {
                 for (int64_t p = p0; p < p1; ++p) fn(p);
               });
}

bool reduced(const Tensor& t) { return is_reduced_float(t.dtype()); }

// The max-pool take rule, as PyTorch's: a tap wins when larger than the best so far or NaN
// (so NaN propagates). Selects, not branches: on random data a branch mispredicts half the time.
template <class T> inline void max_take(T v, int64_t j, T& bv, int64_t& best) {
  const bool t = (v > bv) | (v != v);
  bv = t ? v : bv;
  best = t ? j : best;
}

// float rows of a max pool have an AVX-512 path (max_pool_row_vec) where the CPU has it.
#if defined(__AVX512F__)
template <class T> constexpr bool kVectorRows = std::is_same_v<T, float>;
#else
template <class T> constexpr bool kVectorRows = false;
#endif

// One plane of a 2x2, stride-2 max pool whose windows all lie inside the plane, for types
// without the vector rows. The first tap starts the window (a -inf there keeps its index, as
// PyTorch's -inf start does). Pointers restrict and geometry by value: nothing the stores could
// alias is reloaded.
template <class T>
void max_pool_2x2_plane(const T* __restrict xp, T* __restrict yp, int64_t* __restrict ip, const int64_t W,
                        const int64_t OH, const int64_t OW) {
  for (int64_t oh = 0; oh < OH; ++oh) {
    const T* r0 = xp + 2 * oh * W;
    const T* r1 = r0 + W;
    const int64_t j0 = 2 * oh * W;
    for (int64_t ow = 0; ow < OW; ++ow) {
      T bv = r0[2 * ow];
      int64_t best = j0 + 2 * ow;
      max_take(r0[2 * ow + 1], j0 + 2 * ow + 1, bv, best);
      max_take(r1[2 * ow], j0 + W + 2 * ow, bv, best);
      max_take(r1[2 * ow + 1], j0 + W + 2 * ow + 1, bv, best);
      yp[oh * OW + ow] = bv;
      ip[oh * OW + ow] = best;
    }
  }
}

// Outputs [ow0, ow1) of a float max-pool row whose windows all lie inside the plane (rows h0..,
// columns ow * SW - PW ..), stride SW of 1 or 2: 16 outputs per step, taps in PyTorch's order
// (rows outer), max_take's rule on 16 lanes. Returns the first output it did not
// do (ow0 where AVX-512 or the stride rules it out).
int64_t max_pool_row_vec(const float* xp, int64_t W, int64_t h0, int64_t KH, int64_t KW, int64_t SW, int64_t DH,
                         int64_t DW, int64_t PW, int64_t ow0, int64_t ow1, float* y, int64_t* ix) {
#if defined(__AVX512F__)
  if ((SW != 1 && SW != 2) || (KH - 1) * DH * W + (KW - 1) * DW >= (int64_t(1) << 30)) return ow0;
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  const __m512i lane2 = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
  const __m512i lane1 = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
  const __m512i lanes = SW == 2 ? lane2 : lane1;
  auto mask = [](int64_t k) { return __mmask16((1u << std::clamp<int64_t>(k, 0, 16)) - 1); };
  for (int64_t ow = ow0; ow < ow1; ow += 16) {
    const int64_t n = std::min<int64_t>(16, ow1 - ow);
    const __mmask16 mo = mask(n);
    // As PyTorch: start at -inf with the first tap's offset (0).
    __m512 bv = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    __m512i bt = _mm512_setzero_si512();
    auto take = [&](__m512 v, int64_t off) {
      const __mmask16 t = _mm512_cmp_ps_mask(v, bv, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
      bv = _mm512_mask_blend_ps(t, bv, v);
      bt = _mm512_mask_blend_epi32(t, bt, _mm512_set1_epi32(int(off)));
    };
    for (int64_t a = 0; a < KH; ++a)
      for (int64_t b = 0; b < KW;) {
        const float* p = xp + (h0 + a * DH) * W + ow * SW - PW + b * DW;
        if (SW == 1) {
          take(_mm512_maskz_loadu_ps(mo, p), a * DH * W + b * DW);
          ++b;
          continue;
        }
        // Stride 2: 2n values de-interleaved; the even lanes are tap b, and with dilation 1 the
        // odd lanes are tap b + 1 (MaxPool2d(2) loads each input once).
        const bool both = DW == 1 && b + 1 < KW;
        const int64_t len = 2 * n - (both ? 0 : 1);
        const __m512 lo = _mm512_maskz_loadu_ps(mask(len), p), hi = _mm512_maskz_loadu_ps(mask(len - 16), p + 16);
        take(_mm512_permutex2var_ps(lo, even, hi), a * DH * W + b * DW);
        if (both) take(_mm512_permutex2var_ps(lo, odd, hi), a * DH * W + b + 1);
        b += both ? 2 : 1;
      }
    _mm512_mask_storeu_ps(y + ow, mo, bv);
    const __m512i base = _mm512_add_epi64(_mm512_set1_epi64(h0 * W + ow * SW - PW), lanes);
    const __m512i step8 = _mm512_set1_epi64(8 * SW);
    _mm512_mask_storeu_epi64(ix + ow, __mmask8(mo),
                             _mm512_add_epi64(base, _mm512_cvtepi32_epi64(_mm512_castsi512_si256(bt))));
    _mm512_mask_storeu_epi64(ix + ow + 8, __mmask8(mo >> 8),
                             _mm512_add_epi64(_mm512_add_epi64(base, step8),
                                              _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(bt, 1))));
  }
  return ow1;
#else
  return ow0;
#endif
}

std::tuple<Tensor, Tensor> max_pool2d_cpu(const Tensor& input, IntArrayRef k, IntArrayRef s, IntArrayRef p,
                                          IntArrayRef d, bool ceil_mode) {
  if (reduced(input)) {
    auto [o, i] = max_pool2d_cpu(input.to(kFloat32), k, s, p, d, ceil_mode);
    return {o.to(input.dtype()), i};
  }
  const int64_t N = input.sizes()[0], C = input.sizes()[1], H = input.sizes()[2], W = input.sizes()[3];
  const int64_t OH = pool_out_size(H, k[0], p[0], s[0], d[0], ceil_mode);
  const int64_t OW = pool_out_size(W, k[1], p[1], s[1], d[1], ceil_mode);
  Tensor out = empty({N, C, OH, OW}, input.options());
  Tensor idx = empty({N, C, OH, OW}, {.dtype = kInt64, .device = input.device()});
  if (out.numel() == 0) return {out, idx};
  Tensor x = input.contiguous();
  visit_dtype<kFloatTypes>(input.dtype(), "max_pool2d", [&]<class T>() {
    const T* X = static_cast<const T*>(x.data_ptr());
    T* Y = static_cast<T*>(out.data_ptr());
    int64_t* I = static_cast<int64_t*>(idx.data_ptr());
    // Geometry in locals: the stores to the int64 index plane may alias IntArrayRef's and the
    // vectors' int64 data, so reading them inside the loop would reload them on every tap.
    const int64_t KH = k[0], KW = k[1], SH = s[0], SW = s[1], PH = p[0], PW = p[1], DH = d[0], DW = d[1];
    // Every window inside the plane (no padding, no ceil_mode overhang): no clipping needed.
    const bool interior =
        PH == 0 && PW == 0 && (OH - 1) * SH + (KH - 1) * DH < H && (OW - 1) * SW + (KW - 1) * DW < W;
    if (!kVectorRows<T> && interior && KH == 2 && KW == 2 && SH == 2 && SW == 2 && DH == 1 && DW == 1) {
      // The CNN case (MaxPool2d(2)) without vector rows: four taps, in PyTorch's order.
      for_planes(N * C, OH * OW * 4, [&](int64_t pl) {
        max_pool_2x2_plane(X + pl * H * W, Y + pl * OH * OW, I + pl * OH * OW, W, OH, OW);
      });
      return;
    }
    // The clipped tap range of every output row and column, the same for all planes.
    std::vector<int64_t> kh0(OH), kh1(OH), kw0(OW), kw1(OW);
    auto clip = [](int64_t start, int64_t K, int64_t dil, int64_t n, int64_t& lo, int64_t& hi) {
      lo = 0;
      hi = K;
      while (lo < hi && start + lo * dil < 0) ++lo;
      while (hi > lo && start + (hi - 1) * dil >= n) --hi;
    };
    for (int64_t oh = 0; oh < OH; ++oh) clip(oh * SH - PH, KH, DH, H, kh0[oh], kh1[oh]);
    for (int64_t ow = 0; ow < OW; ++ow) clip(ow * SW - PW, KW, DW, W, kw0[ow], kw1[ow]);
    const int64_t *KH0 = kh0.data(), *KH1 = kh1.data(), *KW0 = kw0.data(), *KW1 = kw1.data();
    for_planes(N * C, OH * OW * KH * KW, [&](int64_t pl) {
      const T* xp = X + pl * H * W;
      T* yp = Y + pl * OH * OW;
      int64_t* ip = I + pl * OH * OW;
      for (int64_t oh = 0; oh < OH; ++oh) {
        const int64_t h0 = oh * SH - PH, a0 = KH0[oh], a1 = KH1[oh];
        // Windows of an inside row away from the left/right edges: the vector body.
        int64_t vec_lo = OW, vec_hi = OW;
        if constexpr (kVectorRows<T>) {
          const int64_t last = W - 1 - (KW - 1) * DW + PW;  // ow * SW <= last: right edge inside
          if (a0 == 0 && a1 == KH && h0 >= 0 && last >= 0) {
            const int64_t lo = (PW + SW - 1) / SW, hi = std::min<int64_t>(OW, last / SW + 1);
            if (lo < hi && max_pool_row_vec(xp, W, h0, KH, KW, SW, DH, DW, PW, lo, hi, yp + oh * OW,
                                            ip + oh * OW) == hi) {
              vec_lo = lo;
              vec_hi = hi;
            }
          }
        }
        for (int64_t ow = 0; ow < OW; ++ow) {
          if (ow == vec_lo) ow = vec_hi;
          if (ow >= OW) break;
          const int64_t w0 = ow * SW - PW, b0 = KW0[ow], b1 = KW1[ow];
          // as PyTorch: start at -inf with the first tap's index
          int64_t best = (h0 + a0 * DH) * W + (w0 + b0 * DW);
          T bv = -std::numeric_limits<T>::infinity();
          for (int64_t a = a0; a < a1; ++a) {
            const int64_t rowj = (h0 + a * DH) * W + w0;
            for (int64_t b = b0; b < b1; ++b) max_take(xp[rowj + b * DW], rowj + b * DW, bv, best);
          }
          yp[oh * OW + ow] = bv;
          ip[oh * OW + ow] = best;
        }
      }
    });
  });
  return {out, idx};
}

// Scatters grad_output into the input's planes (volumes) at the indices; any spatial rank.
Tensor max_pool_backward_cpu(const Tensor& grad_out, const Tensor& input, const Tensor& indices) {
  if (reduced(grad_out)) return max_pool_backward_cpu(grad_out.to(kFloat32), input, indices).to(grad_out.dtype());
  const int64_t planes = input.sizes()[0] * input.sizes()[1];
  Tensor dx = zeros(input.sizes(), grad_out.options());
  if (dx.numel() == 0 || grad_out.numel() == 0) return dx;
  const int64_t in_plane = dx.numel() / planes, out_plane = grad_out.numel() / planes;
  Tensor gy = grad_out.contiguous(), ind = indices.contiguous();
  visit_dtype<kFloatTypes>(grad_out.dtype(), "max_pool_backward", [&]<class T>() {
    const T* GY = static_cast<const T*>(gy.data_ptr());
    const int64_t* I = static_cast<const int64_t*>(ind.data_ptr());
    T* DX = static_cast<T*>(dx.data_ptr());
    for_planes(planes, out_plane, [&](int64_t pl) {
      T* dp = DX + pl * in_plane;
      const T* gp = GY + pl * out_plane;
      const int64_t* ip = I + pl * out_plane;
      for (int64_t j = 0; j < out_plane; ++j) dp[ip[j]] += gp[j];
    });
  });
  return dx;
}

// 3-d max pool: the taps of each window in (d, h, w) order with max_take, starting at -inf
// with the first in-range tap's index, as PyTorch's kernel.
std::tuple<Tensor, Tensor> max_pool3d_cpu(const Tensor& input, IntArrayRef k, IntArrayRef s, IntArrayRef p,
                                          IntArrayRef d, bool ceil_mode) {
  if (reduced(input)) {
    auto [o, i] = max_pool3d_cpu(input.to(kFloat32), k, s, p, d, ceil_mode);
    return {o.to(input.dtype()), i};
  }
  const int64_t N = input.sizes()[0], C = input.sizes()[1];
  const int64_t in[3] = {input.sizes()[2], input.sizes()[3], input.sizes()[4]};
  int64_t out[3];
  for (int i = 0; i < 3; ++i) out[i] = pool_out_size(in[i], k[i], p[i], s[i], d[i], ceil_mode);
  Tensor y = empty({N, C, out[0], out[1], out[2]}, input.options());
  Tensor idx = empty({N, C, out[0], out[1], out[2]}, {.dtype = kInt64, .device = input.device()});
  if (y.numel() == 0) return {y, idx};
  // the clipped tap range [lo, hi) of every output position along each dim
  std::vector<int64_t> lo[3], hi[3];
  for (int i = 0; i < 3; ++i) {
    lo[i].resize(size_t(out[i]));
    hi[i].resize(size_t(out[i]));
    for (int64_t o = 0; o < out[i]; ++o) {
      const int64_t start = o * s[i] - p[i];
      int64_t a = 0, b = k[i];
      while (a < b && start + a * d[i] < 0) ++a;
      while (b > a && start + (b - 1) * d[i] >= in[i]) --b;
      lo[i][size_t(o)] = a;
      hi[i][size_t(o)] = b;
    }
  }
  Tensor x = input.contiguous();
  visit_dtype<kFloatTypes>(input.dtype(), "max_pool3d", [&]<class T>() {
    const T* X = static_cast<const T*>(x.data_ptr());
    T* Y = static_cast<T*>(y.data_ptr());
    int64_t* I = static_cast<int64_t*>(idx.data_ptr());
    const int64_t D = in[0], H = in[1], W = in[2], OD = out[0], OH = out[1], OW = out[2];
    const int64_t SD = s[0], SH = s[1], SW = s[2], PD = p[0], PH = p[1], PW = p[2], DD = d[0], DH = d[1], DW = d[2];
    for_planes(N * C, OD * OH * OW * k[0] * k[1] * k[2], [&](int64_t pl) {
      const T* xp = X + pl * D * H * W;
      T* yp = Y + pl * OD * OH * OW;
      int64_t* ip = I + pl * OD * OH * OW;
      for (int64_t od = 0; od < OD; ++od)
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            const int64_t d0 = od * SD - PD, h0 = oh * SH - PH, w0 = ow * SW - PW;
            const int64_t a0 = lo[0][od], a1 = hi[0][od], b0 = lo[1][oh], b1 = hi[1][oh], c0 = lo[2][ow],
                          c1 = hi[2][ow];
            int64_t best = ((d0 + a0 * DD) * H + (h0 + b0 * DH)) * W + (w0 + c0 * DW);
            T bv = -std::numeric_limits<T>::infinity();
            for (int64_t a = a0; a < a1; ++a)
              for (int64_t b = b0; b < b1; ++b) {
                const int64_t rowj = ((d0 + a * DD) * H + (h0 + b * DH)) * W + w0;
                for (int64_t c = c0; c < c1; ++c) max_take(xp[rowj + c * DW], rowj + c * DW, bv, best);
              }
            const int64_t o = (od * OH + oh) * OW + ow;
            yp[o] = bv;
            ip[o] = best;
          }
    });
  });
  return {y, idx};
}

// One dim of an avg pool window: clipped bounds, and the window's extent before clipping to the
// input (but after clipping to the padded input), which count_include_pad divides by.
struct AvgSpan {
  int64_t lo, hi, padded;
};
inline AvgSpan avg_span(int64_t o, int64_t in, int64_t k, int64_t s, int64_t p) {
  const int64_t start = o * s - p, end = std::min(start + k, in + p);
  return {std::max<int64_t>(start, 0), std::min(end, in), end - start};
}

// Average pooling of (planes, D, H, W) volumes; 2-d pooling passes unit depth. divisor 0: the
// window's size (count_include_pad: with its padding).
struct AvgGeom {
  int64_t D, H, W, OD, OH, OW, kd, kh, kw, sd, sh, sw, pd, ph, pw;
  bool count_include_pad;
  int64_t divisor;
  template <class F> void window(int64_t od, int64_t oh, int64_t ow, const F& f) const {
    const AvgSpan a = avg_span(od, D, kd, sd, pd), b = avg_span(oh, H, kh, sh, ph), c = avg_span(ow, W, kw, sw, pw);
    int64_t div = divisor;
    if (!div)
      div = count_include_pad ? a.padded * b.padded * c.padded
                              : (a.hi - a.lo) * (b.hi - b.lo) * (c.hi - c.lo);
    f(a, b, c, div);
  }
};

AvgGeom avg_geom(const Tensor& x5, IntArrayRef k, IntArrayRef s, IntArrayRef p, IntArrayRef out, bool cip,
                 int64_t divisor) {
  return {x5.sizes()[2], x5.sizes()[3], x5.sizes()[4], out[0], out[1], out[2], k[0], k[1], k[2], s[0], s[1], s[2],
          p[0], p[1], p[2], cip, divisor};
}

// x5: (N, C, D, H, W); out: (N, C, OD, OH, OW) to fill.
void avg_pool_volume(const Tensor& x5, Tensor& out, const AvgGeom& g) {
  const int64_t planes = x5.sizes()[0] * x5.sizes()[1];
  Tensor x = x5.contiguous();
  visit_dtype<kFloatTypes>(x.dtype(), "avg_pool", [&]<class T>() {
    const T* X = static_cast<const T*>(x.data_ptr());
    T* Y = static_cast<T*>(out.data_ptr());
    const int64_t in_vol = g.D * g.H * g.W, out_vol = g.OD * g.OH * g.OW;
    for_planes(planes, out_vol * g.kd * g.kh * g.kw, [&](int64_t pl) {
      const T* xp = X + pl * in_vol;
      T* yp = Y + pl * out_vol;
      for (int64_t od = 0; od < g.OD; ++od)
        for (int64_t oh = 0; oh < g.OH; ++oh)
          for (int64_t ow = 0; ow < g.OW; ++ow)
            g.window(od, oh, ow, [&](const AvgSpan& a, const AvgSpan& b, const AvgSpan& c, int64_t div) {
              T acc = 0;
              for (int64_t id = a.lo; id < a.hi; ++id)
                for (int64_t ih = b.lo; ih < b.hi; ++ih)
                  for (int64_t iw = c.lo; iw < c.hi; ++iw) acc += xp[(id * g.H + ih) * g.W + iw];
              // an empty window (all padding) averages to 0
              yp[(od * g.OH + oh) * g.OW + ow] = (a.lo < a.hi && b.lo < b.hi && c.lo < c.hi) ? acc / T(div) : T(0);
            });
    });
  });
}

// dx5 (zeroed) += the adjoint of avg_pool_volume applied to gy5.
void avg_pool_volume_backward(const Tensor& gy5, Tensor& dx5, const AvgGeom& g) {
  const int64_t planes = dx5.sizes()[0] * dx5.sizes()[1];
  Tensor gy = gy5.contiguous();
  visit_dtype<kFloatTypes>(gy.dtype(), "avg_pool_backward", [&]<class T>() {
    const T* GY = static_cast<const T*>(gy.data_ptr());
    T* DX = static_cast<T*>(dx5.data_ptr());
    const int64_t in_vol = g.D * g.H * g.W, out_vol = g.OD * g.OH * g.OW;
    for_planes(planes, out_vol * g.kd * g.kh * g.kw, [&](int64_t pl) {
      T* dp = DX + pl * in_vol;
      const T* gp = GY + pl * out_vol;
      for (int64_t od = 0; od < g.OD; ++od)
        for (int64_t oh = 0; oh < g.OH; ++oh)
          for (int64_t ow = 0; ow < g.OW; ++ow)
            g.window(od, oh, ow, [&](const AvgSpan& a, const AvgSpan& b, const AvgSpan& c, int64_t div) {
              const T v = gp[(od * g.OH + oh) * g.OW + ow] / T(div);
              for (int64_t id = a.lo; id < a.hi; ++id)
                for (int64_t ih = b.lo; ih < b.hi; ++ih)
                  for (int64_t iw = c.lo; iw < c.hi; ++iw) dp[(id * g.H + ih) * g.W + iw] += v;
            });
    });
  });
}

Tensor avg_pool3d_cpu(const Tensor& input, IntArrayRef k, IntArrayRef s, IntArrayRef p, bool ceil_mode,
                      bool count_include_pad, int64_t divisor) {
  if (reduced(input))
    return avg_pool3d_cpu(input.to(kFloat32), k, s, p, ceil_mode, count_include_pad, divisor).to(input.dtype());
  Shape out_size{input.sizes()[0], input.sizes()[1]};
  for (int i = 0; i < 3; ++i) out_size.push_back(pool_out_size(input.sizes()[2 + i], k[i], p[i], s[i], 1, ceil_mode));
  Tensor out = empty(out_size, input.options());
  if (out.numel() == 0) return out;
  avg_pool_volume(input, out, avg_geom(input, k, s, p, IntArrayRef(out_size.data() + 2, 3), count_include_pad, divisor));
  return out;
}

Tensor avg_pool3d_backward_cpu(const Tensor& grad_out, const Tensor& input, IntArrayRef k, IntArrayRef s,
                               IntArrayRef p, bool ceil_mode, bool count_include_pad, int64_t divisor) {
  (void)ceil_mode;  // the output size is grad_out's
  if (reduced(grad_out))
    return avg_pool3d_backward_cpu(grad_out.to(kFloat32), input, k, s, p, ceil_mode, count_include_pad, divisor)
        .to(grad_out.dtype());
  Tensor dx = zeros(input.sizes(), grad_out.options());
  if (dx.numel() == 0 || grad_out.numel() == 0) return dx;
  avg_pool_volume_backward(grad_out, dx,
                           avg_geom(input, k, s, p, IntArrayRef(grad_out.sizes().data() + 2, 3), count_include_pad, divisor));
  return dx;
}

// The 2-d ops: the 3-d kernels on unit depth.
Tensor avg_pool2d_cpu(const Tensor& input, IntArrayRef k, IntArrayRef s, IntArrayRef p, bool ceil_mode,
                      bool count_include_pad) {
  return avg_pool3d_cpu(input.unsqueeze(2), {1, k[0], k[1]}, {1, s[0], s[1]}, {0, p[0], p[1]}, ceil_mode,
                        count_include_pad, 0)
      .squeeze(2);
}

Tensor avg_pool2d_backward_cpu(const Tensor& grad_out, const Tensor& input, IntArrayRef k, IntArrayRef s,
                               IntArrayRef p, bool ceil_mode, bool count_include_pad) {
  return avg_pool3d_backward_cpu(grad_out.unsqueeze(2), input.unsqueeze(2), {1, k[0], k[1]}, {1, s[0], s[1]},
                                 {0, p[0], p[1]}, ceil_mode, count_include_pad, 0)
      .squeeze(2);
}

inline int64_t start_index(int64_t o, int64_t O, int64_t I) { return (o * I) / O; }
inline int64_t end_index(int64_t o, int64_t O, int64_t I) { return ((o + 1) * I + O - 1) / O; }

// Adaptive average pooling of (N, C, D, H, W); the 2-d op passes unit depth. A window spanning
// whole rows is summed as one contiguous run per depth slice, wide windows row by row with
// vector lanes (row_sum), narrow ones in order.
Tensor adaptive_avg_pool3d_cpu(const Tensor& input, IntArrayRef osize) {
  if (reduced(input)) return adaptive_avg_pool3d_cpu(input.to(kFloat32), osize).to(input.dtype());
  const int64_t N = input.sizes()[0], C = input.sizes()[1], D = input.sizes()[2], H = input.sizes()[3],
                W = input.sizes()[4];
  const int64_t OD = osize[0], OH = osize[1], OW = osize[2];
  Tensor out = empty({N, C, OD, OH, OW}, input.options());
  if (out.numel() == 0) return out;
  Tensor x = input.contiguous();
  visit_dtype<kFloatTypes>(input.dtype(), "adaptive_avg_pool", [&]<class T>() {
    const T* X = static_cast<const T*>(x.data_ptr());
    T* Y = static_cast<T*>(out.data_ptr());
    for_planes(N * C, D * H * W + OD * OH * OW, [&](int64_t pl) {
      const T* xp = X + pl * D * H * W;
      T* yp = Y + pl * OD * OH * OW;
      for (int64_t od = 0; od < OD; ++od) {
        const int64_t d0 = start_index(od, OD, D), d1 = end_index(od, OD, D);
        for (int64_t oh = 0; oh < OH; ++oh) {
          const int64_t h0 = start_index(oh, OH, H), h1 = end_index(oh, OH, H);
          for (int64_t ow = 0; ow < OW; ++ow) {
            const int64_t w0 = start_index(ow, OW, W), w1 = end_index(ow, OW, W);
            double acc = 0;
            for (int64_t id = d0; id < d1; ++id) {
              const T* xd = xp + id * H * W;
              if (w0 == 0 && w1 == W) {
                acc += row_sum(xd + h0 * W, (h1 - h0) * W, [](T v) { return v; });
              } else if (w1 - w0 >= 16) {
                for (int64_t ih = h0; ih < h1; ++ih) acc += row_sum(xd + ih * W + w0, w1 - w0, [](T v) { return v; });
              } else {
                T a = 0;
                for (int64_t ih = h0; ih < h1; ++ih)
                  for (int64_t iw = w0; iw < w1; ++iw) a += xd[ih * W + iw];
                acc += double(a);
              }
            }
            yp[(od * OH + oh) * OW + ow] = T(acc / double((d1 - d0) * (h1 - h0) * (w1 - w0)));
          }
        }
      }
    });
  });
  return out;
}

Tensor adaptive_avg_pool3d_backward_cpu(const Tensor& grad_out, const Tensor& input) {
  if (reduced(grad_out)) return adaptive_avg_pool3d_backward_cpu(grad_out.to(kFloat32), input).to(grad_out.dtype());
  const int64_t N = input.sizes()[0], C = input.sizes()[1], D = input.sizes()[2], H = input.sizes()[3],
                W = input.sizes()[4];
  const int64_t OD = grad_out.sizes()[2], OH = grad_out.sizes()[3], OW = grad_out.sizes()[4];
  Tensor dx = zeros(input.sizes(), grad_out.options());
  if (dx.numel() == 0 || grad_out.numel() == 0) return dx;
  Tensor gy = grad_out.contiguous();
  visit_dtype<kFloatTypes>(grad_out.dtype(), "adaptive_avg_pool_backward", [&]<class T>() {
    const T* GY = static_cast<const T*>(gy.data_ptr());
    T* DX = static_cast<T*>(dx.data_ptr());
    for_planes(N * C, D * H * W + OD * OH * OW, [&](int64_t pl) {
      T* dp = DX + pl * D * H * W;
      const T* gp = GY + pl * OD * OH * OW;
      for (int64_t od = 0; od < OD; ++od) {
        const int64_t d0 = start_index(od, OD, D), d1 = end_index(od, OD, D);
        for (int64_t oh = 0; oh < OH; ++oh) {
          const int64_t h0 = start_index(oh, OH, H), h1 = end_index(oh, OH, H);
          for (int64_t ow = 0; ow < OW; ++ow) {
            const int64_t w0 = start_index(ow, OW, W), w1 = end_index(ow, OW, W);
            const T g = gp[(od * OH + oh) * OW + ow] / T((d1 - d0) * (h1 - h0) * (w1 - w0));
            for (int64_t id = d0; id < d1; ++id)
              for (int64_t ih = h0; ih < h1; ++ih)
                for (int64_t iw = w0; iw < w1; ++iw) dp[(id * H + ih) * W + iw] += g;
          }
        }
      }
    });
  });
  return dx;
}

Tensor adaptive_avg_pool2d_cpu(const Tensor& input, IntArrayRef osize) {
  return adaptive_avg_pool3d_cpu(input.unsqueeze(2), {1, osize[0], osize[1]}).squeeze(2);
}

Tensor adaptive_avg_pool2d_backward_cpu(const Tensor& grad_out, const Tensor& input) {
  return adaptive_avg_pool3d_backward_cpu(grad_out.unsqueeze(2), input.unsqueeze(2)).squeeze(2);
}

// Adaptive max pooling of (N, C, D, H, W): windows as adaptive average pooling's, the take rule
// of max pooling, starting at -inf with the window's first index (PyTorch's kernel).
std::tuple<Tensor, Tensor> adaptive_max_pool3d_cpu(const Tensor& input, IntArrayRef osize) {
  if (reduced(input)) {
    auto [o, i] = adaptive_max_pool3d_cpu(input.to(kFloat32), osize);
    return {o.to(input.dtype()), i};
  }
  const int64_t N = input.sizes()[0], C = input.sizes()[1], D = input.sizes()[2], H = input.sizes()[3],
                W = input.sizes()[4];
  const int64_t OD = osize[0], OH = osize[1], OW = osize[2];
  Tensor out = empty({N, C, OD, OH, OW}, input.options());
  Tensor idx = empty({N, C, OD, OH, OW}, {.dtype = kInt64, .device = input.device()});
  if (out.numel() == 0) return {out, idx};
  Tensor x = input.contiguous();
  visit_dtype<kFloatTypes>(input.dtype(), "adaptive_max_pool", [&]<class T>() {
    const T* X = static_cast<const T*>(x.data_ptr());
    T* Y = static_cast<T*>(out.data_ptr());
    int64_t* I = static_cast<int64_t*>(idx.data_ptr());
    for_planes(N * C, D * H * W + OD * OH * OW, [&](int64_t pl) {
      const T* xp = X + pl * D * H * W;
      T* yp = Y + pl * OD * OH * OW;
      int64_t* ip = I + pl * OD * OH * OW;
      for (int64_t od = 0; od < OD; ++od) {
        const int64_t d0 = start_index(od, OD, D), d1 = end_index(od, OD, D);
        for (int64_t oh = 0; oh < OH; ++oh) {
          const int64_t h0 = start_index(oh, OH, H), h1 = end_index(oh, OH, H);
          for (int64_t ow = 0; ow < OW; ++ow) {
            const int64_t w0 = start_index(ow, OW, W), w1 = end_index(ow, OW, W);
            int64_t best = (d0 * H + h0) * W + w0;
            T bv = -std::numeric_limits<T>::infinity();
            for (int64_t id = d0; id < d1; ++id)
              for (int64_t ih = h0; ih < h1; ++ih)
                for (int64_t iw = w0; iw < w1; ++iw) {
                  const int64_t j = (id * H + ih) * W + iw;
                  max_take(xp[j], j, bv, best);
                }
            const int64_t o = (od * OH + oh) * OW + ow;
            yp[o] = bv;
            ip[o] = best;
          }
        }
      }
    });
  });
  return {out, idx};
}

EMBER_REGISTER_KERNEL(max_pool2d_with_indices, CPU, max_pool2d_cpu);
EMBER_REGISTER_KERNEL(max_pool2d_backward, CPU, max_pool_backward_cpu);
EMBER_REGISTER_KERNEL(avg_pool2d, CPU, avg_pool2d_cpu);
EMBER_REGISTER_KERNEL(avg_pool2d_backward, CPU, avg_pool2d_backward_cpu);
EMBER_REGISTER_KERNEL(adaptive_avg_pool2d, CPU, adaptive_avg_pool2d_cpu);
EMBER_REGISTER_KERNEL(adaptive_avg_pool2d_backward, CPU, adaptive_avg_pool2d_backward_cpu);
EMBER_REGISTER_KERNEL(max_pool3d_with_indices, CPU, max_pool3d_cpu);
EMBER_REGISTER_KERNEL(max_pool3d_backward, CPU, max_pool_backward_cpu);
EMBER_REGISTER_KERNEL(avg_pool3d, CPU, avg_pool3d_cpu);
EMBER_REGISTER_KERNEL(avg_pool3d_backward, CPU, avg_pool3d_backward_cpu);
EMBER_REGISTER_KERNEL(adaptive_avg_pool3d, CPU, adaptive_avg_pool3d_cpu);
EMBER_REGISTER_KERNEL(adaptive_avg_pool3d_backward, CPU, adaptive_avg_pool3d_backward_cpu);
EMBER_REGISTER_KERNEL(adaptive_max_pool3d, CPU, adaptive_max_pool3d_cpu);

}  // namespace
}  // namespace ember::cpu
