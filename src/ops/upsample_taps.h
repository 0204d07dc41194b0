#pragma once
// The sampling taps of F.interpolate's modes, shared by the CPU kernels (src/cpu/
// upsample_kernels.cpp) and the CUDA host side (src/cuda/upsample_ops.cpp), so every coordinate
// rule lives in one place: along each spatial dim, output index o reads a few input indices
// ("taps") with fixed weights (nearest 1, linear 2, cubic 4), computed with PyTorch's formulas
// (ATen/native/UpSample.h, UpSampleKernel.cpp: positions in the op math type T, floored as float
// (floorf); the same-size shortcut of the linear modes; cubic taps clamped to the border;
// antialiased modes: every input under the scaled filter).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "ember/tensor.h"

namespace ember::upsample {

enum Mode : int64_t { kNearest = 0, kNearestExact = 1, kLinear = 2, kCubic = 3, kLinearAA = 4, kCubicAA = 5 };

// Input indices and weights of one spatial dim: output o reads idx[o*k + j] with weight w[o*k + j].
template <class T> struct Taps {
  int64_t k = 1;
  std::vector<int64_t> idx;
  std::vector<T> w;
};

// PyTorch's area_pixel_compute_scale: the input step per output step.
template <class T> T pixel_scale(int64_t in, int64_t out, bool align_corners, double scale) {
  if (align_corners) return out > 1 ? T(in - 1) / T(out - 1) : T(0);
  return scale > 0 ? T(1.0 / scale) : T(in) / T(out);
}

// PyTorch's area_pixel_compute_source_index: where output o samples the input.
template <class T> T source_index(T scale, int64_t o, bool align_corners, bool cubic) {
  if (align_corners) return scale * T(o);
  T src = scale * (T(o) + T(0.5)) - T(0.5);
  return (!cubic && src < T(0)) ? T(0) : src;
}

// Keys cubic convolution with A = -0.75 (PyTorch's get_cubic_upsample_coefficients).
template <class T> void cubic_weights(T t, T* c) {
  const T A = T(-0.75);
  auto near = [&](T x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };      // |x| <= 1
  auto far = [&](T x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };  // 1 < |x| < 2
  c[0] = far(t + T(1));
  c[1] = near(t);
  c[2] = near(T(1) - t);
  c[3] = far(T(2) - t);
}

// Antialiased taps (PyTorch's _compute_indices_min_size_weights_aa): when shrinking, the
// triangle (linear) or Keys a = -0.5 (cubic) filter is stretched by the scale, so every input
// pixel under it contributes; weights are normalised to sum to 1. Every output gets the same
// tap count (the widest support), unused taps having weight 0.
template <class T> Taps<T> make_aa_taps(int64_t in, int64_t out, double scale, bool cubic, bool align_corners) {
  auto filter = [cubic](T x) -> T {
    if (x < 0) x = -x;
    if (!cubic) return x < 1 ? T(1) - x : T(0);
    const T a = T(-0.5);
    if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;
    return T(0);
  };
  const T s = pixel_scale<T>(in, out, align_corners, scale);
  const T interp = cubic ? T(4) : T(2);
  const T support = s >= T(1) ? interp * T(0.5) * s : interp * T(0.5);
  const T invscale = s >= T(1) ? T(1) / s : T(1);
  Taps<T> t;
  t.k = int64_t(std::ceil(support)) * 2 + 1;
  t.idx.assign(size_t(out * t.k), 0);
  t.w.assign(size_t(out * t.k), T(0));
  for (int64_t o = 0; o < out; ++o) {
    const T center = s * (T(o) + T(0.5));
    const int64_t xmin = std::max<int64_t>(int64_t(center - support + T(0.5)), 0);
    const int64_t xsize = std::clamp<int64_t>(std::min<int64_t>(int64_t(center + support + T(0.5)), in) - xmin, 0, t.k);
    T total = T(0);
    for (int64_t j = 0; j < t.k; ++j) {
      t.idx[size_t(o * t.k + j)] = j < xsize ? xmin + j : xmin;
      if (j >= xsize) continue;
      const T w = filter((T(j + xmin) - center + T(0.5)) * invscale);
      t.w[size_t(o * t.k + j)] = w;
      total += w;
    }
    if (total != T(0))
      for (int64_t j = 0; j < xsize; ++j) t.w[size_t(o * t.k + j)] /= total;
  }
  return t;
}

// spatial_dims: how many dims the op interpolates (2-d nearest follows a rule of its own).
template <class T>
Taps<T> make_taps(int64_t in, int64_t out, double scale, int64_t mode, bool align_corners, size_t spatial_dims) {
  if (mode == kLinearAA || mode == kCubicAA) return make_aa_taps<T>(in, out, scale, mode == kCubicAA, align_corners);
  Taps<T> t;
  if (mode == kNearest || mode == kNearestExact) {
    t.k = 1;
    t.idx.resize(size_t(out));
    t.w.assign(size_t(out), T(1));
    // PyTorch 2.x's CPU forward: 1-d and 3-d (HelperInterpNearest / NearestExact) take the step
    // in the op math type, round the source position to float and floor it (floorf), clamped to
    // the last input; 2-d nearest uses nearest_idx instead: float step, and out == in copies,
    // out == 2 * in halves, whatever scale_factor was given (the two rules differ only when a
    // scale_factor makes out equal in or 2 * in). torch's nearest backward always uses
    // nearest_idx; here the backward is the exact adjoint of this forward.
    const bool nearest_idx = mode == kNearest && spatial_dims == 2;
    const T s = scale > 0 ? T(1.0 / scale) : T(in) / T(out);
    const float sf = scale > 0 ? float(1.0 / scale) : float(in) / float(out);
    for (int64_t o = 0; o < out; ++o) {
      int64_t i;
      if (nearest_idx) {
        i = out == in ? o : out == 2 * in ? (o >> 1) : int64_t(std::floor(float(o) * sf));
      } else {
        const T real = mode == kNearest ? s * T(o) : (T(o) + T(0.5)) * s;
        i = int64_t(std::floor(float(real)));
      }
      t.idx[size_t(o)] = std::min(i, in - 1);
    }
    return t;
  }
  const T ratio = pixel_scale<T>(in, out, align_corners, scale);
  if (mode == kLinear) {
    t.k = 2;
    t.idx.resize(size_t(2 * out));
    t.w.resize(size_t(2 * out));
    for (int64_t o = 0; o < out; ++o) {
      int64_t i0 = o, i1 = o;
      T l1 = T(0);
      if (out != in) {  // same size copies (compute_source_index_and_lambda)
        T real = source_index<T>(ratio, o, align_corners, false);
        i0 = std::min(int64_t(std::floor(float(real))), in - 1);  // floorf, as guard_index_and_lambda
        l1 = std::min(std::max(real - T(i0), T(0)), T(1));
        i1 = i0 + (i0 < in - 1 ? 1 : 0);
      }
      t.idx[size_t(2 * o)] = i0;
      t.idx[size_t(2 * o + 1)] = i1;
      t.w[size_t(2 * o)] = T(1) - l1;
      t.w[size_t(2 * o + 1)] = l1;
    }
    return t;
  }
  // cubic: four taps around floor(real), clamped to the border
  t.k = 4;
  t.idx.resize(size_t(4 * out));
  t.w.resize(size_t(4 * out));
  for (int64_t o = 0; o < out; ++o) {
    T real = source_index<T>(ratio, o, align_corners, true);
    int64_t i = std::min(int64_t(std::floor(float(real))), in - 1);
    T lambda = std::min(std::max(real - T(i), T(0)), T(1));
    cubic_weights<T>(lambda, &t.w[size_t(4 * o)]);
    for (int64_t j = 0; j < 4; ++j) t.idx[size_t(4 * o + j)] = std::clamp<int64_t>(i - 1 + j, 0, in - 1);
  }
  return t;
}

// The spatial geometry padded to three dims (leading size-1 dims with one unit tap).
template <class T> struct Grid {
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  Taps<T> taps[3];
};

template <class T>
Grid<T> make_grid(IntArrayRef in_sp, IntArrayRef out_sp, ArrayRef<double> scales, int64_t mode, bool align_corners) {
  Grid<T> g;
  const size_t nd = in_sp.size(), off = 3 - nd;
  for (size_t d = 0; d < 3; ++d) {
    if (d < off) {
      g.taps[d].idx = {0};
      g.taps[d].w = {T(1)};
      continue;
    }
    g.in[d] = in_sp[d - off];
    g.out[d] = out_sp[d - off];
    double s = scales.size() == nd ? scales[d - off] : -1.0;
    g.taps[d] = make_taps<T>(g.in[d], g.out[d], s, mode, align_corners, nd);
  }
  return g;
}

}  // namespace ember::upsample
