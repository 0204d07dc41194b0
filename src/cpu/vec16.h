#pragma once
// Sixteen floats as one vector (GCC's and clang's vector extensions) for row reductions: loads,
// a tail padded with the reduction's identity, and the horizontal combine in four shuffles (lane
// l with l+8, then +4, +2, +1: the pairs a scalar tree over an array takes, without its
// branches, which mispredict on random data for max/min). Used by the reduction and softmax
// kernels and by ember.compile's generated row kernels.
#include <cstdint>
#include <cstring>

namespace ember::cpu::vec16 {

typedef float F __attribute__((vector_size(64)));
typedef int32_t I __attribute__((vector_size(64)));

inline F load(const float* p) {
  F v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// p[0, n) (n < 16) and `fill` after it
inline F load_tail(const float* p, int64_t n, float fill) {
  float t[16];
  for (int k = 0; k < 16; ++k) t[k] = k < n ? p[k] : fill;
  return load(t);
}

// the next 16 of the n (> 0) left at p: a whole vector, or the tail padded with `fill`
inline F load_upto(const float* p, int64_t n, float fill) { return n >= 16 ? load(p) : load_tail(p, n, fill); }

// op folded across the lanes; op(a, b) combines two vectors lane by lane
template <class Op> inline float fold(F a, Op op) {
  a = op(a, __builtin_shufflevector(a, a, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7));
  a = op(a, __builtin_shufflevector(a, a, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11));
  a = op(a, __builtin_shufflevector(a, a, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13));
  a = op(a, __builtin_shufflevector(a, a, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14));
  return a[0];
}

// whether any lane of a comparison's mask is set: the 64 bytes OR-ed as eight words, branch-free
// (a lane-by-lane test loop branches sixteen times a row)
inline bool any(I m) {
  uint64_t w[8];
  std::memcpy(w, &m, sizeof w);
  return ((w[0] | w[1]) | (w[2] | w[3]) | (w[4] | w[5]) | (w[6] | w[7])) != 0;
}

inline float sum(F a) { return fold(a, [](F x, F y) { return x + y; }); }
// (x > y ? x : y per lane: NaN lanes lose; callers that propagate NaN track it beside)
inline float max(F a) { return fold(a, [](F x, F y) { return y > x ? y : x; }); }
inline float min(F a) { return fold(a, [](F x, F y) { return y < x ? y : x; }); }

// A row's sum in two vectors (the tail padded with zeros): two chains of adds, not one (a softmax's
// sums, and compiled row kernels' sums over an input or a row buffer).
inline float row_sum(const float* x, int64_t n) {
  F a = F{}, b = F{};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a += load(x + i);
    b += load(x + i + 16);
  }
  for (; i < n; i += 16) a += load_upto(x + i, n - i, 0.0f);
  return sum(a + b);
}

// A row's max (kMax) or min in two vectors, NaN once a NaN is met (as amax/amin): the NaN is seen
// on the side, so the chain through each accumulator stays one instruction (compiled row kernels).
template <bool kMax> inline float row_extreme(const float* x, int64_t n) {
  const float start = kMax ? -__builtin_inff() : __builtin_inff();
  const auto pick = [](F a, F v) { return (kMax ? v > a : v < a) ? v : a; };
  F a = F{} + start, b = a;
  I nan = I{};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const F u = load(x + i), v = load(x + i + 16);
    a = pick(a, u);
    b = pick(b, v);
    nan |= (u != u) | (v != v);
  }
  for (; i < n; i += 16) {
    const F v = load_upto(x + i, n - i, start);
    a = pick(a, v);
    nan |= v != v;
  }
  if (any(nan)) return __builtin_nanf("");
  return kMax ? max(pick(a, b)) : min(pick(a, b));
}

}  // namespace ember::cpu::vec16
