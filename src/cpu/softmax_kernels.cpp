// CPU kernels for softmax and log_softmax: one fused kernel per row (max, exp-and-sum, scale),
// stable for large inputs because the row max is subtracted before exp.
//  - the reduced dim is innermost: each row is a contiguous run, rows are split across threads;
//  - otherwise (shape [outer, n, inner]): a block of up to 256 neighbouring columns is handled
//    at once, each pass walking the n rows of the block with contiguous vector loops.
// float16/bfloat16 compute in float32; float32 uses the vectorisable exp_f32.
//
// Full-width vectors for the exp loops where the CPU has them (GCC's default for -march=native
// on AVX-512 parts is 256-bit); a tuning preference only, ignored elsewhere.
#pragma GCC target("prefer-vector-width=512")
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/parallel.h"
#include "cpu/tensor_iter.h"
#include "cpu/vec16.h"
#include "core/dtype_dispatch.h"
#include "ops/reduce_utils.h"
#if __has_include("cpu/vec_math.h")
#include "cpu/vec_math.h"
#define EMBER_SOFTMAX_HAVE_EXP_F32 1
#endif
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cpu {
namespace {

template <class T> inline T exp_t(T x) {
#ifdef EMBER_SOFTMAX_HAVE_EXP_F32
  if constexpr (std::is_same_v<T, float>) return exp_f32(x);
  else return std::exp(x);
#else
  return std::exp(x);
#endif
}
template <class T> inline T max_t(T a, T x) { return x > a ? x : a; }  // NaN rows turn NaN through exp

// The max of a float row in 16-float vectors (its sum: vec16::row_sum): at a softmax's usual 32
// to 128 per row the scalar trees that close the lane loops below cost as much as the row.
inline float row_max_f32(const float* x, int64_t n) {
  vec16::F a = vec16::F{} - std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; i += 16) {
    const vec16::F v = vec16::load_upto(x + i, n - i, -std::numeric_limits<float>::infinity());
    a = v > a ? v : a;
  }
  return vec16::max(a);
}

template <class T, bool kLog> void softmax_row(const T* __restrict x, T* __restrict y, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    const float mx = row_max_f32(x, n);
    if constexpr (kLog) {
      // the sum of exp(x - max) without storing the exps (the output only wants x - max - log s):
      // sixteen at a time through a stack vector, one pass fewer over the row
      vec16::F acc = vec16::F{};
      int64_t j = 0;
      for (; j + 16 <= n; j += 16) {
        float e[16];
        for (int k = 0; k < 16; ++k) e[k] = exp_t(x[j + k] - mx);
        acc += vec16::load(e);
      }
      float s = vec16::sum(acc);
      for (; j < n; ++j) s += exp_t(x[j] - mx);
      const float ls = std::log(s);
      for (j = 0; j < n; ++j) y[j] = (x[j] - mx) - ls;
      return;
    }
    for (int64_t j = 0; j < n; ++j) y[j] = exp_t(x[j] - mx);
    const float inv = 1.0f / vec16::row_sum(y, n);
    for (int64_t j = 0; j < n; ++j) y[j] *= inv;
    return;
  }
  constexpr int K = 64 / sizeof(T);  // one 512-bit vector of lanes, two of them
  constexpr T ninf = -std::numeric_limits<T>::infinity();
  // 1. max
  T m[2 * K];
  for (int k = 0; k < 2 * K; ++k) m[k] = ninf;
  int64_t i = 0;
  for (; i + 2 * K <= n; i += 2 * K)
    for (int k = 0; k < 2 * K; ++k) m[k] = max_t(m[k], x[i + k]);
  for (; i < n; ++i) m[0] = max_t(m[0], x[i]);
  for (int w = K; w >= 1; w /= 2)
    for (int k = 0; k < w; ++k) m[k] = max_t(m[k], m[k + w]);
  const T mx = m[0];
  // 2. exp(x - max) into y (a plain loop, so exp vectorises), then their sum
  for (int64_t j = 0; j < n; ++j) y[j] = exp_t(x[j] - mx);
  T s[2 * K];
  for (int k = 0; k < 2 * K; ++k) s[k] = T(0);
  i = 0;
  for (; i + 2 * K <= n; i += 2 * K)
    for (int k = 0; k < 2 * K; ++k) s[k] += y[i + k];
  for (; i < n; ++i) s[0] += y[i];
  for (int w = K; w >= 1; w /= 2)
    for (int k = 0; k < w; ++k) s[k] += s[k + w];
  // 3. scale
  if constexpr (kLog) {
    const T ls = std::log(s[0]);
    for (int64_t j = 0; j < n; ++j) y[j] = (x[j] - mx) - ls;
  } else {
    const T inv = T(1) / s[0];
    for (int64_t j = 0; j < n; ++j) y[j] *= inv;
  }
}

// Columns [j0, j0 + len) of one [n, inner] slab.
template <class T, bool kLog>
void softmax_block(const T* __restrict x, T* __restrict y, int64_t n, int64_t inner, int64_t len) {
  constexpr int64_t B = 256;
  T mx[B], s[B];
  for (int64_t k = 0; k < len; ++k) mx[k] = -std::numeric_limits<T>::infinity();
  for (int64_t r = 0; r < n; ++r) {
    const T* row = x + r * inner;
    for (int64_t k = 0; k < len; ++k) mx[k] = max_t(mx[k], row[k]);
  }
  for (int64_t k = 0; k < len; ++k) s[k] = T(0);
  for (int64_t r = 0; r < n; ++r) {
    const T* row = x + r * inner;
    T* out = y + r * inner;
    for (int64_t k = 0; k < len; ++k) {
      T e = exp_t(row[k] - mx[k]);
      if constexpr (!kLog) out[k] = e;
      s[k] += e;
    }
  }
  if constexpr (kLog) {
    for (int64_t k = 0; k < len; ++k) s[k] = std::log(s[k]);
    for (int64_t r = 0; r < n; ++r) {
      const T* row = x + r * inner;
      T* out = y + r * inner;
      for (int64_t k = 0; k < len; ++k) out[k] = (row[k] - mx[k]) - s[k];
    }
  } else {
    for (int64_t k = 0; k < len; ++k) s[k] = T(1) / s[k];
    for (int64_t r = 0; r < n; ++r) {
      T* out = y + r * inner;
      for (int64_t k = 0; k < len; ++k) out[k] *= s[k];
    }
  }
}

// float16/bfloat16 rows along the last dim: each row converted to float32 in a per-thread
// buffer, computed, and converted back (no whole-tensor cast passes).
template <bool kLog> Tensor reduced_rows(const Tensor& x, DType dt) {
  Tensor y = empty(x.sizes(), {.dtype = dt, .device = x.device()});
  const int64_t n = x.dim() == 0 ? 1 : x.sizes().back(), rows = x.numel() / n;
  const char* in = static_cast<const char*>(x.data_ptr());
  char* out = static_cast<char*>(y.data_ptr());
  const int64_t es = element_size(dt);
  int64_t grain = std::max<int64_t>(1, kGrainSize / (4 * n));
  parallel_for(0, rows, grain, [&](int64_t b, int64_t e) {
    std::vector<float> buf_in(static_cast<size_t>(n)), buf_out(static_cast<size_t>(n));
    for (int64_t r = b; r < e; ++r) {
      const float* row = detail::load_block<float>(dt, in + r * n * es, es, n, buf_in.data());
      softmax_row<float, kLog>(row, buf_out.data(), n);
      detail::store_block<float>(dt, out + r * n * es, es, n, buf_out.data());
    }
  });
  return y;
}

template <bool kLog> Tensor softmax_impl(const Tensor& a, int64_t dim, std::optional<DType> dtype) {
  const char* name = kLog ? "log_softmax" : "softmax";
  Tensor x0 = dtype ? reduce::convert(a, *dtype) : a;
  int64_t d = reduce::wrap_dim(dim, a.dim());
  DType out_dt = x0.dtype();
  DType cdt = is_reduced_float(out_dt) ? kFloat32 : out_dt;
  if (is_reduced_float(out_dt) && a.numel() > 0 && (a.dim() == 0 || d == a.dim() - 1))
    return reduced_rows<kLog>(x0.contiguous(), out_dt);
  Tensor x = reduce::convert(x0, cdt, /*contig=*/true);
  Tensor y = empty(a.sizes(), {.dtype = cdt, .device = a.device()});
  if (a.numel() == 0) return reduce::convert(y, out_dt);
  int64_t outer = 1, n = a.dim() == 0 ? 1 : a.sizes()[d], inner = 1;
  for (int64_t i = 0; i < d; ++i) outer *= a.sizes()[i];
  for (int64_t i = d + 1; i < a.dim(); ++i) inner *= a.sizes()[i];
  visit_dtype<kFloatTypes>(cdt, name, [&]<class T>() {
    const T* in = x.data_ptr<T>();
    T* out = y.data_ptr<T>();
    if (inner == 1) {
      int64_t grain = std::max<int64_t>(1, kGrainSize / (4 * n));
      parallel_for(0, outer, grain, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) softmax_row<T, kLog>(in + r * n, out + r * n, n);
      });
      return;
    }
    constexpr int64_t B = 256;
    const int64_t nblk = (inner + B - 1) / B;
    int64_t grain = std::max<int64_t>(1, kGrainSize / (4 * n * std::min(B, inner)));
    parallel_for(0, outer * nblk, grain, [&](int64_t tb, int64_t te) {
      for (int64_t t = tb; t < te; ++t) {
        int64_t o = t / nblk, j0 = (t % nblk) * B;
        int64_t off = o * n * inner + j0;
        softmax_block<T, kLog>(in + off, out + off, n, inner, std::min(B, inner - j0));
      }
    });
  });
  return reduce::convert(y, out_dt);
}

Tensor softmax_cpu(const Tensor& a, int64_t dim, std::optional<DType> dtype) {
  return softmax_impl<false>(a, dim, dtype);
}
Tensor log_softmax_cpu(const Tensor& a, int64_t dim, std::optional<DType> dtype) {
  return softmax_impl<true>(a, dim, dtype);
}

EMBER_REGISTER_KERNEL(softmax, CPU, softmax_cpu);
EMBER_REGISTER_KERNEL(log_softmax, CPU, log_softmax_cpu);

}  // namespace
}  // namespace ember::cpu
