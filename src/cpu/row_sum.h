#pragma once
// Sums over one contiguous row with independent lanes (2 x 64 bytes of accumulators, so the
// compiler vectorises them without reassociating a single chain), flushed into a double every
// kRowSumFlush elements: float rows keep float speed and most of double's accuracy. Used by the
// normalisation kernels, the reductions and the pooling kernels' wide windows.
#include <algorithm>
#include <cstdint>

namespace ember::cpu {

constexpr int64_t kRowSumFlush = 4096;  // elements summed in the compute type before a double flush

// Sum of term(i) for i in [0, n), term returning T.
template <class T, class Term> double lane_sum(int64_t n, Term term) {
  constexpr int K = 2 * 64 / sizeof(T);
  double total = 0;
  for (int64_t b0 = 0; b0 < n; b0 += kRowSumFlush) {
    const int64_t b1 = std::min(n, b0 + kRowSumFlush);
    T s[K];
    for (int k = 0; k < K; ++k) s[k] = T(0);
    int64_t i = b0;
    for (; i + K <= b1; i += K)
      for (int k = 0; k < K; ++k) s[k] += term(i + k);
    for (; i < b1; ++i) s[0] += term(i);
    for (int w = K / 2; w >= 1; w /= 2)
      for (int k = 0; k < w; ++k) s[k] += s[k + w];
    total += double(s[0]);
  }
  return total;
}

// Sum of f(x[i]) over the row.
template <class T, class F> double row_sum(const T* __restrict x, int64_t n, F f) {
  return lane_sum<T>(n, [&](int64_t i) { return f(x[i]); });
}

// Sum of x[i] * y[i] over the row.
template <class T> double row_dot(const T* __restrict x, const T* __restrict y, int64_t n) {
  return lane_sum<T>(n, [&](int64_t i) { return x[i] * y[i]; });
}

}  // namespace ember::cpu
