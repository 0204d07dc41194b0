#pragma once
// im2col / col2im over up to three spatial dims (depth, height, width), shared by the
// convolution kernels (conv_kernels.cpp) and fold / unfold (fold_kernels.cpp). A 2-d window
// sweep is the 3-d one with unit depth (D = KD = OD = 1, no depth stride, padding or dilation).
//
// For `channels` input planes of D x H x W, the columns matrix has one row per (channel, tap)
// (channels * KD*KH*KW rows, taps in (kd, kh, kw) order) and one column per output position
// (OD*OH*OW), holding the input value that tap sees there (0 in the padding).
#include <algorithm>
#include <cstdint>
#include <cstring>

namespace ember::cpu {

struct WindowGeom {
  int64_t D = 1, H = 1, W = 1;     // input spatial size
  int64_t KD = 1, KH = 1, KW = 1;  // kernel
  int64_t OD = 1, OH = 1, OW = 1;  // output positions
  int64_t sd = 1, sh = 1, sw = 1;  // stride
  int64_t pd = 0, ph = 0, pw = 0;  // padding (both sides)
  int64_t dd = 1, dh = 1, dw = 1;  // dilation
  int64_t spatial() const { return D * H * W; }
  int64_t out_spatial() const { return OD * OH * OW; }
  int64_t taps() const { return KD * KH * KW; }
};

namespace detail_im2col {
// Output columns [lo, hi) of a stride-1 row whose input column (ow + iw0) lies inside [0, W).
inline void inside_range(const WindowGeom& g, int64_t iw0, int64_t& lo, int64_t& hi) {
  lo = 0;
  hi = g.OW;
  if (g.sw == 1) {
    lo = std::clamp<int64_t>(-iw0, 0, g.OW);
    hi = std::clamp<int64_t>(g.W - iw0, lo, g.OW);
  }
}
}  // namespace detail_im2col

template <class T> void im2col(const T* x, T* col, int64_t channels, const WindowGeom& g) {
  const int64_t OS = g.out_spatial();
  for (int64_t c = 0; c < channels; ++c) {
    const T* xc = x + c * g.spatial();
    for (int64_t kd = 0; kd < g.KD; ++kd)
      for (int64_t kh = 0; kh < g.KH; ++kh)
        for (int64_t kw = 0; kw < g.KW; ++kw) {
          T* row = col + (((c * g.KD + kd) * g.KH + kh) * g.KW + kw) * OS;
          const int64_t iw0 = kw * g.dw - g.pw;
          int64_t lo, hi;
          detail_im2col::inside_range(g, iw0, lo, hi);
          for (int64_t od = 0; od < g.OD; ++od) {
            const int64_t id = od * g.sd - g.pd + kd * g.dd;
            for (int64_t oh = 0; oh < g.OH; ++oh) {
              const int64_t ih = oh * g.sh - g.ph + kh * g.dh;
              T* r = row + (od * g.OH + oh) * g.OW;
              if (id < 0 || id >= g.D || ih < 0 || ih >= g.H) {
                std::fill(r, r + g.OW, T(0));
                continue;
              }
              const T* xr = xc + (id * g.H + ih) * g.W;
              if (g.sw == 1) {
                std::fill(r, r + lo, T(0));
                if (hi > lo) std::memcpy(r + lo, xr + iw0 + lo, size_t(hi - lo) * sizeof(T));
                std::fill(r + hi, r + g.OW, T(0));
              } else {
                for (int64_t ow = 0; ow < g.OW; ++ow) {
                  const int64_t iw = ow * g.sw + iw0;
                  r[ow] = (iw >= 0 && iw < g.W) ? xr[iw] : T(0);
                }
              }
            }
          }
        }
  }
}

// The adjoint of im2col: adds each column entry into the input pixel it came from (x pre-zeroed).
template <class T> void col2im(const T* col, T* x, int64_t channels, const WindowGeom& g) {
  const int64_t OS = g.out_spatial();
  for (int64_t c = 0; c < channels; ++c) {
    T* xc = x + c * g.spatial();
    for (int64_t kd = 0; kd < g.KD; ++kd)
      for (int64_t kh = 0; kh < g.KH; ++kh)
        for (int64_t kw = 0; kw < g.KW; ++kw) {
          const T* row = col + (((c * g.KD + kd) * g.KH + kh) * g.KW + kw) * OS;
          const int64_t iw0 = kw * g.dw - g.pw;
          int64_t lo, hi;
          detail_im2col::inside_range(g, iw0, lo, hi);
          for (int64_t od = 0; od < g.OD; ++od) {
            const int64_t id = od * g.sd - g.pd + kd * g.dd;
            if (id < 0 || id >= g.D) continue;
            for (int64_t oh = 0; oh < g.OH; ++oh) {
              const int64_t ih = oh * g.sh - g.ph + kh * g.dh;
              if (ih < 0 || ih >= g.H) continue;
              const T* r = row + (od * g.OH + oh) * g.OW;
              T* xr = xc + (id * g.H + ih) * g.W;
              if (g.sw == 1) {
                T* dst = xr + iw0;
                for (int64_t ow = lo; ow < hi; ++ow) dst[ow] += r[ow];
              } else {
                for (int64_t ow = 0; ow < g.OW; ++ow) {
                  const int64_t iw = ow * g.sw + iw0;
                  if (iw >= 0 && iw < g.W) xr[iw] += r[ow];
                }
              }
            }
          }
        }
  }
}

}  // namespace ember::cpu
