// Moving a group of FFT lines between a tensor and the split lane vectors of src/cpu/fft_plan.h.
//
// Lane t of a group reads the line that starts `stride` elements after lane t-1's. Stride 1 (the
// lines of a strided dim, side by side in memory) is two vector loads and a de-interleaving
// shuffle per complex element; other strides (the lines of the last dim, n apart) gather with
// AVX-512 where the build has it, else one lane at a time.
#pragma once

#include <complex>
#include <cstdint>
#include <cstring>
#include <utility>

#if defined(__AVX512F__) && defined(__AVX512DQ__)
#include <immintrin.h>
#define EMBER_FFT_AVX512 1
#endif

#include "cpu/fft_plan.h"

namespace ember::cpu::fft {

template <class R> struct LaneIo {
  using V = Vec<R>;
  using C = std::complex<R>;
  static constexpr int64_t L = kLanes<R>;
  int64_t stride;
#if defined(EMBER_FFT_AVX512)
  __m512i real_index{}, complex_index{};  // lane offsets in R units (32-bit for float, 64-bit for double)
#endif

  explicit LaneIo(int64_t lane_stride) : stride(lane_stride) {
#if defined(EMBER_FFT_AVX512)
    if constexpr (std::is_same_v<R, float>) {
      const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
      real_index = _mm512_mullo_epi32(iota, _mm512_set1_epi32(int(stride)));
      complex_index = _mm512_mullo_epi32(iota, _mm512_set1_epi32(int(2 * stride)));
    } else {
      const __m512i iota = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
      real_index = _mm512_mullo_epi64(iota, _mm512_set1_epi64(stride));
      complex_index = _mm512_mullo_epi64(iota, _mm512_set1_epi64(2 * stride));
    }
#endif
  }
  // 32-bit gather offsets must fit (float); callers fall back to one line at a time beyond.
  static bool fits(int64_t lane_stride) { return 2 * lane_stride * L < (int64_t(1) << 31); }

  // Real parts (even floats) and imaginary parts (odd) of the L complex numbers in a, b.
  template <size_t... C> static V even(V a, V b, std::index_sequence<C...>) {
    return __builtin_shufflevector(a, b, int(2 * C)...);
  }
  template <size_t... C> static V odd(V a, V b, std::index_sequence<C...>) {
    return __builtin_shufflevector(a, b, int(2 * C + 1)...);
  }
  // re, im interleaved: the first L / 2 complex numbers, then the last.
  template <size_t... C> static V low(V re, V im, std::index_sequence<C...>) {
    return __builtin_shufflevector(re, im, int(C % 2 ? L + C / 2 : C / 2)...);
  }
  template <size_t... C> static V high(V re, V im, std::index_sequence<C...>) {
    return __builtin_shufflevector(re, im, int(C % 2 ? L + L / 2 + C / 2 : L / 2 + C / 2)...);
  }
  static V deinterleave_even(V a, V b) { return even(a, b, std::make_index_sequence<L>{}); }
  static V deinterleave_odd(V a, V b) { return odd(a, b, std::make_index_sequence<L>{}); }
  static V interleave_low(V re, V im) { return low(re, im, std::make_index_sequence<L>{}); }
  static V interleave_high(V re, V im) { return high(re, im, std::make_index_sequence<L>{}); }

  // p: lane 0's element.
  void load(const C* p, V& re, V& im) const {
    const R* f = reinterpret_cast<const R*>(p);
    if (stride == 1) {
      V a, b;
      std::memcpy(&a, f, sizeof(V));
      std::memcpy(&b, f + L, sizeof(V));
      re = deinterleave_even(a, b);
      im = deinterleave_odd(a, b);
      return;
    }
#if defined(EMBER_FFT_AVX512)
    if constexpr (std::is_same_v<R, float>) {
      re = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), 0xFFFF, complex_index, f, 4);
      im = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), 0xFFFF, complex_index, f + 1, 4);
    } else {
      re = _mm512_mask_i64gather_pd(_mm512_setzero_pd(), 0xFF, complex_index, f, 8);
      im = _mm512_mask_i64gather_pd(_mm512_setzero_pd(), 0xFF, complex_index, f + 1, 8);
    }
#else
    for (int64_t t = 0; t < L; ++t) {
      re[t] = f[2 * t * stride];
      im[t] = f[2 * t * stride + 1];
    }
#endif
  }
  void load(const R* p, V& x) const {
    if (stride == 1) {
      std::memcpy(&x, p, sizeof(V));
      return;
    }
#if defined(EMBER_FFT_AVX512)
    // (the masked forms: GCC 12 warns that the unmasked ones read an uninitialised source)
    if constexpr (std::is_same_v<R, float>) x = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), 0xFFFF, real_index, p, 4);
    else x = _mm512_mask_i64gather_pd(_mm512_setzero_pd(), 0xFF, real_index, p, 8);
#else
    for (int64_t t = 0; t < L; ++t) x[t] = p[t * stride];
#endif
  }
  void store(C* p, V re, V im) const {
    R* f = reinterpret_cast<R*>(p);
    if (stride == 1) {
      const V a = interleave_low(re, im), b = interleave_high(re, im);
      std::memcpy(f, &a, sizeof(V));
      std::memcpy(f + L, &b, sizeof(V));
      return;
    }
#if defined(EMBER_FFT_AVX512)
    if constexpr (std::is_same_v<R, float>) {
      _mm512_i32scatter_ps(f, complex_index, re, 4);
      _mm512_i32scatter_ps(f + 1, complex_index, im, 4);
    } else {
      _mm512_i64scatter_pd(f, complex_index, re, 8);
      _mm512_i64scatter_pd(f + 1, complex_index, im, 8);
    }
#else
    for (int64_t t = 0; t < L; ++t) {
      f[2 * t * stride] = re[t];
      f[2 * t * stride + 1] = im[t];
    }
#endif
  }
  void store(R* p, V x) const {
    if (stride == 1) {
      std::memcpy(p, &x, sizeof(V));
      return;
    }
#if defined(EMBER_FFT_AVX512)
    if constexpr (std::is_same_v<R, float>) _mm512_i32scatter_ps(p, real_index, x, 4);
    else _mm512_i64scatter_pd(p, real_index, x, 8);
#else
    for (int64_t t = 0; t < L; ++t) p[t * stride] = x[t];
#endif
  }
};

// In-register transpose of an L x L tile held as L row vectors: level B exchanges bit B of the
// row and column indices (rows i and i + B swap their off-diagonal B-blocks), so after every
// level each element has moved from (r, c) to (c, r). log2(L) levels of L two-source shuffles.
template <class V, int64_t L, int64_t B, size_t... C> [[gnu::always_inline]] inline V keep_low(V a, V b, std::index_sequence<C...>) {
  return __builtin_shufflevector(a, b, int((C & B) ? (L + C - B) : C)...);
}
template <class V, int64_t L, int64_t B, size_t... C> [[gnu::always_inline]] inline V keep_high(V a, V b, std::index_sequence<C...>) {
  return __builtin_shufflevector(a, b, int((C & B) ? (L + C) : (C + B))...);
}
template <class V, int64_t L, int64_t B> [[gnu::always_inline]] inline void transpose_level(V* rows) {
  for (int64_t i = 0; i < L; ++i)
    if (!(i & B)) {
      const V a = rows[i], b = rows[i + B];
      rows[i] = keep_low<V, L, B>(a, b, std::make_index_sequence<L>{});
      rows[i + B] = keep_high<V, L, B>(a, b, std::make_index_sequence<L>{});
    }
}
template <class R, int64_t B = 1> [[gnu::always_inline]] inline void transpose_tile(Vec<R>* rows) {
  constexpr int64_t L = kLanes<R>;
  if constexpr (B < L) {
    transpose_level<Vec<R>, L, B>(rows);
    transpose_tile<R, 2 * B>(rows);
  }
}

// Where the lines of one group lie, and their elements' moves in and out of lane vectors: as
// LaneIo where the group is full and evenly spaced, else lane by lane. With V = R the group is
// one line.
template <class R, class V> class GroupIo {
 public:
  using C = std::complex<R>;
  static constexpr bool kVector = !std::is_same_v<V, R>;
  static constexpr int64_t L = kVector ? kLanes<R> : 1;

  // Lines first .. first + count - 1 of `len` elements each, `inner` apart.
  GroupIo(int64_t first, int64_t count, int64_t len, int64_t inner) : count_(count), io_(0) {
    for (int64_t t = 0; t < count; ++t) base_[t] = ((first + t) / inner) * len * inner + (first + t) % inner;
    if constexpr (kVector) {
      const int64_t stride = count > 1 ? base_[1] - base_[0] : 0;
      bool even = count == L && stride > 0 && LaneIo<R>::fits(stride);
      for (int64_t t = 2; even && t < count; ++t) even = base_[t] - base_[t - 1] == stride;
      if (even) io_ = LaneIo<R>(stride);
    }
  }
  // Element `at` of every line (at counted in elements from each line's start).
  void load(const C* data, int64_t at, V& re, V& im) const {
    if constexpr (kVector) {
      if (io_.stride) return io_.load(data + base_[0] + at, re, im);
      for (int64_t t = 0; t < count_; ++t) {
        re[t] = data[base_[t] + at].real();
        im[t] = data[base_[t] + at].imag();
      }
    } else {
      re = data[base_[0] + at].real();
      im = data[base_[0] + at].imag();
    }
  }
  void load(const R* data, int64_t at, V& x) const {
    if constexpr (kVector) {
      if (io_.stride) return io_.load(data + base_[0] + at, x);
      for (int64_t t = 0; t < count_; ++t) x[t] = data[base_[t] + at];
    } else {
      x = data[base_[0] + at];
    }
  }
  void store(C* data, int64_t at, V re, V im) const {
    if constexpr (kVector) {
      if (io_.stride) return io_.store(data + base_[0] + at, re, im);
      for (int64_t t = 0; t < count_; ++t) data[base_[t] + at] = C(re[t], im[t]);
    } else {
      data[base_[0] + at] = C(re, im);
    }
  }
  void store(R* data, int64_t at, V x) const {
    if constexpr (kVector) {
      if (io_.stride) return io_.store(data + base_[0] + at, x);
      for (int64_t t = 0; t < count_; ++t) data[base_[t] + at] = x[t];
    } else {
      data[base_[0] + at] = x;
    }
  }

  // Elements k * step (k < points) of every line, into re[k] and im[k] (or x[k]). Where the lines
  // are contiguous runs (step 1) a tile of L elements of L lines moves at a time: one vector load
  // per line, one transpose, where element-wise gathers from lines a power of two apart would
  // all fall into the same cache set.
  void load_all(const C* data, int64_t points, int64_t step, V* re, V* im) const {
    int64_t k = 0;
    if constexpr (kVector)
      if (step == 1 && io_.stride)
        for (; k + L <= points; k += L) {
          for (int64_t t = 0; t < L; ++t) {
            const R* f = reinterpret_cast<const R*>(data + base_[0] + t * io_.stride + k);
            V a, b;
            std::memcpy(&a, f, sizeof(V));
            std::memcpy(&b, f + L, sizeof(V));
            re[k + t] = LaneIo<R>::deinterleave_even(a, b);
            im[k + t] = LaneIo<R>::deinterleave_odd(a, b);
          }
          transpose_tile<R>(re + k);
          transpose_tile<R>(im + k);
        }
    for (; k < points; ++k) load(data, k * step, re[k], im[k]);
  }
  void load_all(const R* data, int64_t points, int64_t step, V* x) const {
    int64_t k = 0;
    if constexpr (kVector)
      if (step == 1 && io_.stride)
        for (; k + L <= points; k += L) {
          for (int64_t t = 0; t < L; ++t) std::memcpy(&x[k + t], data + base_[0] + t * io_.stride + k, sizeof(V));
          transpose_tile<R>(x + k);
        }
    for (; k < points; ++k) load(data, k * step, x[k]);
  }
  // The reverse, each value times scale; re/im (x) are clobbered.
  void store_all(C* data, int64_t points, int64_t step, V* re, V* im, R scale) const {
    int64_t k = 0;
    if constexpr (kVector)
      if (step == 1 && io_.stride)
        for (; k + L <= points; k += L) {
          transpose_tile<R>(re + k);
          transpose_tile<R>(im + k);
          for (int64_t t = 0; t < L; ++t) {
            R* f = reinterpret_cast<R*>(data + base_[0] + t * io_.stride + k);
            const V a = LaneIo<R>::interleave_low(re[k + t] * scale, im[k + t] * scale);
            const V b = LaneIo<R>::interleave_high(re[k + t] * scale, im[k + t] * scale);
            std::memcpy(f, &a, sizeof(V));
            std::memcpy(f + L, &b, sizeof(V));
          }
        }
    for (; k < points; ++k) store(data, k * step, re[k] * scale, im[k] * scale);
  }
  void store_all(R* data, int64_t points, int64_t step, V* x, R scale) const {
    int64_t k = 0;
    if constexpr (kVector)
      if (step == 1 && io_.stride)
        for (; k + L <= points; k += L) {
          transpose_tile<R>(x + k);
          for (int64_t t = 0; t < L; ++t) {
            const V v = x[k + t] * scale;
            std::memcpy(data + base_[0] + t * io_.stride + k, &v, sizeof(V));
          }
        }
    for (; k < points; ++k) store(data, k * step, x[k] * scale);
  }

 private:
  int64_t count_;
  int64_t base_[L];
  LaneIo<R> io_;  // stride 0: lane by lane
};

}  // namespace ember::cpu::fft
