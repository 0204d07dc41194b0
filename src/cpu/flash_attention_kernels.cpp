// CPU kernels of the flash attention ops (op_list.h; the CUDA kernels are
// src/cuda/flash_attention_*): the same blocked algorithm, with the GEMM library on tiles that
// stay in cache, so memory grows with T x block instead of T x T.
//   forward, per (head, block of 128 queries): for each block of 512 keys, S = scale Q K^T (one
//     GEMM), the online softmax row by row (running max m and sum l; the output rows rescaled
//     by exp(m_old - m_new)), O += P V (one GEMM); O / l and lse = m + log(l) at the end.
//   backward, two passes without atomics: per (head, block of 128 keys) dV += P^T dO and
//     dK += scale dS^T Q over the query blocks; per (head, block of 128 queries) dQ += scale dS K
//     over the key blocks; P = exp(S - lse) and dS = P (dO V^T - rowsum(dO O)) recomputed in
//     each (the price of not storing P).
// Causal masks are top-left aligned (query i sees keys j <= i), as torch's is_causal. float32
// and float64 compute in themselves, float16/bfloat16 in float32; lse is float32 (float64 for
// float64 input).
// Full-width vectors for the exp loops where the CPU has them (as the softmax kernels).
#pragma GCC target("prefer-vector-width=512")
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/parallel.h"
#include "cpu/gemm.h"
#include "cpu/vec_math.h"
#include "ember/ops.h"
#include "ops/flash_attention_geometry.h"
#include "ops/op_handles.h"
#include "ops/reduce_utils.h"

namespace ember::cpu {
namespace {

// Tiles of 128 x 512 (forward) and 128 x 128 (backward) scores: large enough that each GEMM call
// amortises its overhead (64 x 256 was 10-20% slower), small enough to stay in a core's L2.
constexpr int64_t kQBlock = 128, kKBlock = 512, kBwdBlock = 128;

using Geometry = FlashAttentionGeometry;

// exp in the vectorisable form for float32 (the loops below run over a row), std::exp for float64.
template <class T> inline T exp_t(T x) {
  if constexpr (std::is_same_v<T, float>) return exp_f32(x);
  else return std::exp(x);
}

// The keys query i sees among [k0, k0 + nk): all, or (causal) those up to i.
inline int64_t visible(int64_t i, int64_t k0, int64_t nk, bool causal) {
  return causal ? std::clamp<int64_t>(i - k0 + 1, 0, nk) : nk;
}

template <class T>
void forward_head(const T* q, const T* k, const T* v, T* o, T* lse, const Geometry& g, int64_t q0, T scale,
                  bool causal, std::vector<T>& s, std::vector<T>& stats) {
  const int64_t nq = std::min(kQBlock, g.tq - q0), d = g.d;
  T* m = stats.data();
  T* l = m + nq;
  std::fill(m, m + nq, -std::numeric_limits<T>::infinity());
  std::fill(l, l + nq, T(0));
  T* acc = o + q0 * d;  // the output rows accumulate in place
  std::fill(acc, acc + nq * d, T(0));
  const int64_t k_end = causal ? std::min(g.tk, q0 + nq) : g.tk;
  for (int64_t k0 = 0; k0 < k_end; k0 += kKBlock) {
    const int64_t nk = std::min(kKBlock, k_end - k0);
    gemm(false, true, nq, nk, d, scale, q + q0 * d, d, k + k0 * d, d, T(0), s.data(), nk);
    for (int64_t r = 0; r < nq; ++r) {
      T* sr = s.data() + r * nk;
      const int64_t n = visible(q0 + r, k0, nk, causal);
      T mx = -std::numeric_limits<T>::infinity();
      for (int64_t j = 0; j < n; ++j) mx = sr[j] > mx ? sr[j] : mx;  // NaN never wins; it reaches the sum
      const T mn = std::max(m[r], mx);
      const T base = std::isinf(mn) && mn < 0 ? T(0) : mn;  // nothing visible yet
      const T alpha = exp_t(m[r] - base);
      for (int64_t j = 0; j < n; ++j) sr[j] = exp_t(sr[j] - base);
      T sum = 0;
      for (int64_t j = 0; j < n; ++j) sum += sr[j];
      std::fill(sr + n, sr + nk, T(0));
      l[r] = l[r] * alpha + sum;
      m[r] = mn;
      if (alpha != T(1))
        for (int64_t c = 0; c < d; ++c) acc[r * d + c] *= alpha;
    }
    gemm(false, false, nq, d, nk, T(1), s.data(), nk, v + k0 * d, d, T(1), acc, d);
  }
  for (int64_t r = 0; r < nq; ++r) {
    const T inv = T(1) / l[r];
    for (int64_t c = 0; c < d; ++c) acc[r * d + c] *= inv;
    lse[q0 + r] = m[r] + std::log(l[r]);
  }
}

// P = exp(scale q k^T - lse) and dS = P (dO v^T - rowdot) for queries [q0, q0 + nq) and keys
// [k0, k0 + nk) of one head, zero where the mask hides a key.
template <class T>
void probs_and_dscores(const T* q, const T* k, const T* v, const T* go, const T* lse, const T* rowdot,
                       const Geometry& g, int64_t q0, int64_t nq, int64_t k0, int64_t nk, T scale, bool causal, T* p,
                       T* ds) {
  const int64_t d = g.d;
  gemm(false, true, nq, nk, d, scale, q + q0 * d, d, k + k0 * d, d, T(0), p, nk);
  gemm(false, true, nq, nk, d, T(1), go + q0 * d, d, v + k0 * d, d, T(0), ds, nk);
  for (int64_t r = 0; r < nq; ++r) {
    const int64_t n = visible(q0 + r, k0, nk, causal);
    T* pr = p + r * nk;
    T* dr = ds + r * nk;
    const T ls = lse[q0 + r], dd = rowdot[q0 + r];
    for (int64_t j = 0; j < n; ++j) pr[j] = exp_t(pr[j] - ls);
    for (int64_t j = 0; j < n; ++j) dr[j] = pr[j] * (dr[j] - dd);
    std::fill(pr + n, pr + nk, T(0));
    std::fill(dr + n, dr + nk, T(0));
  }
}

template <class T>
std::tuple<Tensor, Tensor> forward_typed(const Tensor& q, const Tensor& k, const Tensor& v, const Geometry& g,
                                         bool causal, double scale) {
  Tensor out = empty(q.sizes(), q.options());
  Tensor lse = empty(Shape(q.sizes().begin(), q.sizes().end() - 1), q.options());
  const T* pq = q.data_ptr<T>();
  const T* pk = k.data_ptr<T>();
  const T* pv = v.data_ptr<T>();
  T* po = out.data_ptr<T>();
  T* pl = lse.data_ptr<T>();
  const int64_t qblocks = (g.tq + kQBlock - 1) / kQBlock;
  parallel_for(0, g.heads * qblocks, 1, [&](int64_t b0, int64_t b1) {
    std::vector<T> s(size_t(kQBlock * kKBlock)), stats(size_t(2 * kQBlock));
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t h = b / qblocks, q0 = (b % qblocks) * kQBlock;
      forward_head<T>(pq + h * g.tq * g.d, pk + h * g.tk * g.d, pv + h * g.tk * g.d, po + h * g.tq * g.d,
                      pl + h * g.tq, g, q0, T(scale), causal, s, stats);
    }
  });
  return {out, lse};
}

template <class T>
std::tuple<Tensor, Tensor, Tensor> backward_typed(const Tensor& go, const Tensor& q, const Tensor& k, const Tensor& v,
                                                  const Tensor& out, const Tensor& lse, const Geometry& g, bool causal,
                                                  double scale) {
  Tensor dq = zeros(q.sizes(), q.options()), dk = zeros(k.sizes(), k.options()), dv = zeros(v.sizes(), v.options());
  Tensor rowdot = (go * out).sum({-1});
  const T* pq = q.data_ptr<T>();
  const T* pk = k.data_ptr<T>();
  const T* pv = v.data_ptr<T>();
  const T* pg = go.data_ptr<T>();
  const T* pl = lse.data_ptr<T>();
  const T* pd = rowdot.data_ptr<T>();
  const T sc = T(scale);
  const int64_t d = g.d, kblocks = (g.tk + kBwdBlock - 1) / kBwdBlock, qblocks = (g.tq + kBwdBlock - 1) / kBwdBlock;
  auto head = [&](const T* base, int64_t h, int64_t t) { return base + h * t * d; };
  // dK, dV: a key block gathers from every query block that sees it
  parallel_for(0, g.heads * kblocks, 1, [&](int64_t b0, int64_t b1) {
    std::vector<T> p(size_t(kBwdBlock * kBwdBlock)), ds(p.size());
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t h = b / kblocks, k0 = (b % kblocks) * kBwdBlock, nk = std::min(kBwdBlock, g.tk - k0);
      T* dkb = dk.data_ptr<T>() + (h * g.tk + k0) * d;
      T* dvb = dv.data_ptr<T>() + (h * g.tk + k0) * d;
      for (int64_t q0 = causal ? k0 / kBwdBlock * kBwdBlock : 0; q0 < g.tq; q0 += kBwdBlock) {
        const int64_t nq = std::min(kBwdBlock, g.tq - q0);
        probs_and_dscores<T>(head(pq, h, g.tq), head(pk, h, g.tk), head(pv, h, g.tk), head(pg, h, g.tq),
                             pl + h * g.tq, pd + h * g.tq, g, q0, nq, k0, nk, sc, causal, p.data(), ds.data());
        gemm(true, false, nk, d, nq, T(1), p.data(), nk, head(pg, h, g.tq) + q0 * d, d, T(1), dvb, d);
        gemm(true, false, nk, d, nq, sc, ds.data(), nk, head(pq, h, g.tq) + q0 * d, d, T(1), dkb, d);
      }
    }
  });
  // dQ: a query block gathers from every key block it sees
  parallel_for(0, g.heads * qblocks, 1, [&](int64_t b0, int64_t b1) {
    std::vector<T> p(size_t(kBwdBlock * kBwdBlock)), ds(p.size());
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t h = b / qblocks, q0 = (b % qblocks) * kBwdBlock, nq = std::min(kBwdBlock, g.tq - q0);
      T* dqb = dq.data_ptr<T>() + (h * g.tq + q0) * d;
      const int64_t k_end = causal ? std::min(g.tk, q0 + nq) : g.tk;
      for (int64_t k0 = 0; k0 < k_end; k0 += kBwdBlock) {
        const int64_t nk = std::min(kBwdBlock, k_end - k0);
        probs_and_dscores<T>(head(pq, h, g.tq), head(pk, h, g.tk), head(pv, h, g.tk), head(pg, h, g.tq),
                             pl + h * g.tq, pd + h * g.tq, g, q0, nq, k0, nk, sc, causal, p.data(), ds.data());
        gemm(false, false, nq, d, nk, sc, ds.data(), nk, head(pk, h, g.tk) + k0 * d, d, T(1), dqb, d);
      }
    }
  });
  return {dq, dk, dv};
}

void check_floating(const char* op, const Tensor& q) {
  EMBER_CHECK_TYPE(is_floating(q.dtype()), op, ": expected a floating-point dtype, got ", dtype_name(q.dtype()));
}

Tensor dense(const Tensor& t, DType dt) { return t.to(dt).contiguous(); }

std::tuple<Tensor, Tensor> flash_forward_cpu(const Tensor& query, const Tensor& key, const Tensor& value, bool causal,
                                             double scale) {
  const Geometry g = flash_attention_geometry("_flash_attention_forward", query, key, value);
  check_floating("_flash_attention_forward", query);
  const DType cdt = reduce::compute_dtype(query.dtype());
  Tensor q = dense(query, cdt), k = dense(key, cdt), v = dense(value, cdt);
  auto [out, lse] = cdt == kFloat64 ? forward_typed<double>(q, k, v, g, causal, scale)
                                    : forward_typed<float>(q, k, v, g, causal, scale);
  return {out.to(query.dtype()), lse};
}

std::tuple<Tensor, Tensor, Tensor> flash_backward_cpu(const Tensor& grad_out, const Tensor& query, const Tensor& key,
                                                      const Tensor& value, const Tensor& out, const Tensor& lse,
                                                      bool causal, double scale) {
  const Geometry g = flash_attention_geometry("_flash_attention_backward", query, key, value);
  check_floating("_flash_attention_backward", query);
  const DType cdt = reduce::compute_dtype(query.dtype());
  Tensor q = dense(query, cdt), k = dense(key, cdt), v = dense(value, cdt), go = dense(grad_out, cdt);
  Tensor o = dense(out, cdt), l = dense(lse, cdt);
  auto [dq, dk, dv] = cdt == kFloat64 ? backward_typed<double>(go, q, k, v, o, l, g, causal, scale)
                                      : backward_typed<float>(go, q, k, v, o, l, g, causal, scale);
  const DType dt = query.dtype();
  return {dq.to(dt), dk.to(dt), dv.to(dt)};
}

EMBER_REGISTER_KERNEL(_flash_attention_forward, CPU, flash_forward_cpu);
EMBER_REGISTER_KERNEL(_flash_attention_backward, CPU, flash_backward_cpu);

}  // namespace
}  // namespace ember::cpu
