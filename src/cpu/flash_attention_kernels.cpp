// CPU kernels of the flash attention ops (op_list.h; the CUDA kernels are
// src/cuda/flash_attention_*): the same blocked algorithm, with the GEMM library on tiles that
// stay in cache, so memory grows with T x block instead of T x T.
//   forward, per (head, block of 128 queries): for each block of 512 keys, S = scale Q K^T (one
//     GEMM), the online softmax row by row (running max m and sum l; the output rows rescaled
//     by exp(m_old - m_new)), O += P V (one GEMM); O / l and lse = m + log(l) at the end.
//   backward: P = exp(S - lse) and dS = P (dO V^T - rowsum(dO O)) recomputed per tile (the price
//     of not storing P). With at least as many heads as threads (heads a multiple of the thread
//     count, or 4 per thread) one pass per head: each tile adds dV += P^T dO, dK += scale dS^T Q
//     and dQ += scale dS K (5 GEMMs a tile, torch's CPU scheme). Otherwise two passes without
//     atomics, split over blocks: per (head, block of 128 keys) dV and dK over the query blocks;
//     per (head, block of 128 queries) dQ over the key blocks (7 GEMMs a tile).
// Causal masks are top-left aligned (query i sees keys j <= i), as torch's is_causal. An
// attn_mask is additive (a bool mask is 0 where it keeps, -inf where it hides), broadcast to
// (..., Tq, Tk) and read in place; a query row whose every key is masked gives 0 (and lse +inf,
// so its recomputed P is 0), as torch 2.x's safe softmax. float32 and float64 compute in
// themselves, float16/bfloat16 in float32; lse is float32 (float64 for float64 input).
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

// An additive mask over the scores of every head, read in place: row i of head h starts at
// data + head_offset[h] + i * row_stride (0 when the mask is broadcast over queries).
template <class T> struct MaskView {
  const T* data = nullptr;  // nullptr: no mask
  std::vector<int64_t> head_offset;
  int64_t row_stride = 0;
  explicit operator bool() const { return data != nullptr; }
  const T* row(int64_t h, int64_t i) const { return data + head_offset[size_t(h)] + i * row_stride; }
};

// Row reductions with independent lanes (two 512-bit vectors), so they vectorise without
// reassociating one chain: the scalar loops they replace made the softmax part of the forward
// cost as much as its two GEMMs.
template <class T> constexpr int kLanes = 2 * 64 / sizeof(T);
template <class T> inline T max_t(T a, T x) { return x > a ? x : a; }  // NaN never wins; it reaches the sum

// x[j] += m[j] (when m is given) and the max of the result, over n elements.
template <class T> T add_and_max(T* __restrict x, const T* __restrict m, int64_t n) {
  constexpr int K = kLanes<T>;
  T mx[K];
  for (int k = 0; k < K; ++k) mx[k] = -std::numeric_limits<T>::infinity();
  int64_t j = 0;
  if (m) {
    for (; j + K <= n; j += K)
      for (int k = 0; k < K; ++k) {
        x[j + k] += m[j + k];
        mx[k] = max_t(mx[k], x[j + k]);
      }
    for (; j < n; ++j) x[j] += m[j], mx[0] = max_t(mx[0], x[j]);
  } else {
    for (; j + K <= n; j += K)
      for (int k = 0; k < K; ++k) mx[k] = max_t(mx[k], x[j + k]);
    for (; j < n; ++j) mx[0] = max_t(mx[0], x[j]);
  }
  for (int w = K / 2; w >= 1; w /= 2)
    for (int k = 0; k < w; ++k) mx[k] = max_t(mx[k], mx[k + w]);
  return mx[0];
}

// x[j] = exp(x[j] - base) in place, returning their sum.
template <class T> T exp_and_sum(T* __restrict x, int64_t n, T base) {
  constexpr int K = kLanes<T>;
  T s[K];
  for (int k = 0; k < K; ++k) s[k] = T(0);
  int64_t j = 0;
  for (; j + K <= n; j += K)
    for (int k = 0; k < K; ++k) {
      const T e = exp_t(x[j + k] - base);
      x[j + k] = e;
      s[k] += e;
    }
  for (; j < n; ++j) x[j] = exp_t(x[j] - base), s[0] += x[j];
  for (int w = K / 2; w >= 1; w /= 2)
    for (int k = 0; k < w; ++k) s[k] += s[k + w];
  return s[0];
}

// The keys query i sees among [k0, k0 + nk): all, or (causal) those up to i.
inline int64_t visible(int64_t i, int64_t k0, int64_t nk, bool causal) {
  return causal ? std::clamp<int64_t>(i - k0 + 1, 0, nk) : nk;
}

// An operand as the kernels read or write it: [T, D] matrices, one per flattened leading index,
// each at its own offset, rows `ld` elements apart with unit stride inside a row. So q, k and v
// cut from one qkv projection (q = qkv.split(d, 2)[0].view(b, t, h, hd).transpose(1, 2)) are read
// where they lie: copying them to contiguous tensors was 4% of a GPT block's forward.
template <class P> struct HeadRows {
  P* data = nullptr;
  int64_t ld = 0;
  std::vector<int64_t> head_offset;
  P* head(int64_t h) const { return data + head_offset[size_t(h)]; }
};

// Where each [T, ...] matrix of t starts: the element offset of every flattened leading index
// (t's dims before its last two; a mask broadcast there has stride 0).
std::vector<int64_t> head_offsets(const Tensor& t, int64_t heads) {
  std::vector<int64_t> offsets(static_cast<size_t>(heads));
  for (int64_t h = 0; h < heads; ++h) {
    int64_t rest = h, off = 0;
    for (int64_t i = t.dim() - 3; i >= 0; --i) {
      off += (rest % t.sizes()[i]) * t.strides()[i];
      rest /= t.sizes()[i];
    }
    offsets[size_t(h)] = off;
  }
  return offsets;
}

template <class P> HeadRows<P> head_rows(const Tensor& t, int64_t heads) {
  HeadRows<P> r;
  r.data = static_cast<P*>(t.data_ptr());
  const int64_t nd = t.dim(), rows = t.sizes()[nd - 2], d = t.sizes()[nd - 1];
  r.ld = rows > 1 ? t.strides()[nd - 2] : std::max<int64_t>(d, 1);
  r.head_offset = head_offsets(t, heads);
  return r;
}

// t itself when the kernels can read it in place (the compute dtype, unit stride along D, rows
// that do not overlap), else a contiguous copy in the compute dtype.
Tensor readable(const Tensor& t, DType cdt) {
  const int64_t nd = t.dim(), rows = t.sizes()[nd - 2], d = t.sizes()[nd - 1];
  const bool in_place = t.dtype() == cdt && d > 0 && (d == 1 || t.strides()[nd - 1] == 1) &&
                        (rows <= 1 || t.strides()[nd - 2] >= d);
  return in_place ? t : t.to(cdt).contiguous();
}

// A zero-filled (or uninitialised) result shaped like `like` ([b, h, T, D]): laid out [b, T, h,
// D] when `like` is (torch's layout for attention outputs: out.transpose(1, 2).reshape(b, T, h *
// D) is then a view, not a copy), contiguous otherwise.
Tensor attention_result(const Tensor& like, DType dt, bool zeroed, bool sequence_major) {
  TensorOptions opts{.dtype = dt, .device = like.device()};
  if (!sequence_major) return zeroed ? zeros(like.sizes(), opts) : empty(like.sizes(), opts);
  const Shape s = like.sizes();
  Shape t{s[0], s[2], s[1], s[3]};
  return (zeroed ? zeros(t, opts) : empty(t, opts)).transpose(1, 2);
}
// Whether a 4-D [b, h, T, D] tensor is stored sequence-major ([b, T, h, D] order).
bool sequence_major(const Tensor& t) {
  return t.dim() == 4 && t.sizes()[1] > 1 && t.sizes()[2] > 1 && t.strides()[1] < t.strides()[2] &&
         t.strides()[3] == 1;
}

// Leading dims of one head's q, k, v and output rows.
struct RowStrides {
  int64_t q, k, v, o;
};

template <class T>
void forward_head(const T* q, const T* k, const T* v, T* o, T* lse, const MaskView<T>& mask, int64_t h,
                  const Geometry& g, const RowStrides& ld, int64_t q0, T scale, bool causal, std::vector<T>& s,
                  std::vector<T>& stats) {
  const int64_t nq = std::min(kQBlock, g.tq - q0), d = g.d;
  T* m = stats.data();
  T* l = m + nq;
  std::fill(m, m + nq, -std::numeric_limits<T>::infinity());
  std::fill(l, l + nq, T(0));
  T* acc = o + q0 * ld.o;  // the output rows accumulate in place
  for (int64_t r = 0; r < nq; ++r) std::fill(acc + r * ld.o, acc + r * ld.o + d, T(0));
  const int64_t k_end = causal ? std::min(g.tk, q0 + nq) : g.tk;
  for (int64_t k0 = 0; k0 < k_end; k0 += kKBlock) {
    const int64_t nk = std::min(kKBlock, k_end - k0);
    gemm(false, true, nq, nk, d, scale, q + q0 * ld.q, ld.q, k + k0 * ld.k, ld.k, T(0), s.data(), nk);
    for (int64_t r = 0; r < nq; ++r) {
      T* sr = s.data() + r * nk;
      const int64_t n = visible(q0 + r, k0, nk, causal);
      const T mx = add_and_max(sr, mask ? mask.row(h, q0 + r) + k0 : nullptr, n);
      const T mn = std::max(m[r], mx);
      const T base = std::isinf(mn) && mn < 0 ? T(0) : mn;  // nothing visible yet
      const T alpha = exp_t(m[r] - base);
      const T sum = exp_and_sum(sr, n, base);
      std::fill(sr + n, sr + nk, T(0));
      l[r] = l[r] * alpha + sum;
      m[r] = mn;
      if (alpha != T(1))
        for (int64_t c = 0; c < d; ++c) acc[r * ld.o + c] *= alpha;
    }
    gemm(false, false, nq, d, nk, T(1), s.data(), nk, v + k0 * ld.v, ld.v, T(1), acc, ld.o);
  }
  for (int64_t r = 0; r < nq; ++r) {
    // l == 0: every key masked; the row is 0 and lse +inf, so the backward's P is 0 too
    const T inv = l[r] > T(0) ? T(1) / l[r] : T(0);
    for (int64_t c = 0; c < d; ++c) acc[r * ld.o + c] *= inv;
    lse[q0 + r] = l[r] > T(0) ? m[r] + std::log(l[r]) : std::numeric_limits<T>::infinity();
  }
}

// P = exp(scale q k^T - lse) and dS = P (dO v^T - rowdot) for queries [q0, q0 + nq) and keys
// [k0, k0 + nk) of one head, zero where the mask hides a key.
template <class T>
void probs_and_dscores(const T* q, const T* k, const T* v, const T* go, const T* lse, const T* rowdot,
                       const MaskView<T>& mask, int64_t h, const Geometry& g, const RowStrides& ld, int64_t ldgo,
                       int64_t q0, int64_t nq, int64_t k0, int64_t nk, T scale, bool causal, T* p, T* ds) {
  const int64_t d = g.d;
  gemm(false, true, nq, nk, d, scale, q + q0 * ld.q, ld.q, k + k0 * ld.k, ld.k, T(0), p, nk);
  gemm(false, true, nq, nk, d, T(1), go + q0 * ldgo, ldgo, v + k0 * ld.v, ld.v, T(0), ds, nk);
  for (int64_t r = 0; r < nq; ++r) {
    const int64_t n = visible(q0 + r, k0, nk, causal);
    T* pr = p + r * nk;
    T* dr = ds + r * nk;
    const T ls = lse[q0 + r], dd = rowdot[q0 + r];
    if (mask) {
      const T* mr = mask.row(h, q0 + r) + k0;
      for (int64_t j = 0; j < n; ++j) pr[j] += mr[j];
    }
    for (int64_t j = 0; j < n; ++j) pr[j] = exp_t(pr[j] - ls);
    for (int64_t j = 0; j < n; ++j) dr[j] = pr[j] * (dr[j] - dd);
    std::fill(pr + n, pr + nk, T(0));
    std::fill(dr + n, dr + nk, T(0));
  }
}

template <class T>
std::tuple<Tensor, Tensor> forward_typed(const Tensor& q, const Tensor& k, const Tensor& v, const MaskView<T>& mask,
                                         const Geometry& g, bool causal, double scale) {
  Tensor out = attention_result(q, q.dtype(), /*zeroed=*/false, /*sequence_major=*/q.dim() == 4);
  Tensor lse = empty(Shape(q.sizes().begin(), q.sizes().end() - 1), q.options());
  const HeadRows<const T> rq = head_rows<const T>(q, g.heads), rk = head_rows<const T>(k, g.heads),
                          rv = head_rows<const T>(v, g.heads);
  const HeadRows<T> ro = head_rows<T>(out, g.heads);
  const RowStrides ld{rq.ld, rk.ld, rv.ld, ro.ld};
  T* pl = lse.data_ptr<T>();
  const int64_t qblocks = (g.tq + kQBlock - 1) / kQBlock;
  parallel_for(0, g.heads * qblocks, 1, [&](int64_t b0, int64_t b1) {
    std::vector<T> s(size_t(kQBlock * kKBlock)), stats(size_t(2 * kQBlock));
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t h = b / qblocks, q0 = (b % qblocks) * kQBlock;
      forward_head<T>(rq.head(h), rk.head(h), rv.head(h), ro.head(h), pl + h * g.tq, mask, h, g, ld, q0, T(scale),
                      causal, s, stats);
    }
  });
  return {out, lse};
}

// Whether the backward runs one pass per head: enough heads to give every thread the same
// share (or so many that the imbalance is small).
bool backward_by_head(int64_t heads) {
  const int64_t threads = detail::max_parallel_threads();
  return heads % threads == 0 || heads >= 4 * threads;
}

template <class T>
std::tuple<Tensor, Tensor, Tensor> backward_typed(const Tensor& go, const Tensor& q, const Tensor& k, const Tensor& v,
                                                  const MaskView<T>& mask, const Tensor& out, const Tensor& lse,
                                                  const Geometry& g, bool causal, double scale) {
  // The gradients take their inputs' layout (sequence-major for q, k, v cut from one projection),
  // so the split's backward gathers them without transposing copies.
  Tensor dq = attention_result(q, q.dtype(), true, sequence_major(q)),
         dk = attention_result(k, k.dtype(), true, sequence_major(k)),
         dv = attention_result(v, v.dtype(), true, sequence_major(v));
  Tensor rowdot = (go * out).sum({-1});
  const HeadRows<const T> rq = head_rows<const T>(q, g.heads), rk = head_rows<const T>(k, g.heads),
                          rv = head_rows<const T>(v, g.heads), rg = head_rows<const T>(go, g.heads);
  const HeadRows<T> rdq = head_rows<T>(dq, g.heads), rdk = head_rows<T>(dk, g.heads), rdv = head_rows<T>(dv, g.heads);
  const RowStrides ld{rq.ld, rk.ld, rv.ld, 0};
  const T* pl = lse.data_ptr<T>();
  const T* pd = rowdot.data_ptr<T>();
  const T sc = T(scale);
  const int64_t d = g.d, kblocks = (g.tk + kBwdBlock - 1) / kBwdBlock, qblocks = (g.tq + kBwdBlock - 1) / kBwdBlock;
  // P and dS of one tile, for head h, queries [q0, q0 + nq), keys [k0, k0 + nk)
  auto tile = [&](int64_t h, int64_t q0, int64_t nq, int64_t k0, int64_t nk, T* p, T* ds) {
    probs_and_dscores<T>(rq.head(h), rk.head(h), rv.head(h), rg.head(h), pl + h * g.tq, pd + h * g.tq, mask, h, g,
                         ld, rg.ld, q0, nq, k0, nk, sc, causal, p, ds);
  };
  // dV += P^T dO and dK += scale dS^T Q for a tile's keys; dQ += scale dS K for its queries.
  auto add_dkv = [&](int64_t h, int64_t q0, int64_t nq, int64_t k0, int64_t nk, const T* p, const T* ds) {
    gemm(true, false, nk, d, nq, T(1), p, nk, rg.head(h) + q0 * rg.ld, rg.ld, T(1), rdv.head(h) + k0 * rdv.ld, rdv.ld);
    gemm(true, false, nk, d, nq, sc, ds, nk, rq.head(h) + q0 * rq.ld, rq.ld, T(1), rdk.head(h) + k0 * rdk.ld, rdk.ld);
  };
  auto add_dq = [&](int64_t h, int64_t q0, int64_t nq, int64_t k0, int64_t nk, const T* ds) {
    gemm(false, false, nq, d, nk, sc, ds, nk, rk.head(h) + k0 * rk.ld, rk.ld, T(1), rdq.head(h) + q0 * rdq.ld, rdq.ld);
  };
  if (backward_by_head(g.heads)) {
    parallel_for(0, g.heads, 1, [&](int64_t h0, int64_t h1) {
      std::vector<T> p(size_t(kBwdBlock * kBwdBlock)), ds(p.size());
      for (int64_t h = h0; h < h1; ++h)
        for (int64_t q0 = 0; q0 < g.tq; q0 += kBwdBlock) {
          const int64_t nq = std::min(kBwdBlock, g.tq - q0);
          const int64_t k_end = causal ? std::min(g.tk, q0 + nq) : g.tk;
          for (int64_t k0 = 0; k0 < k_end; k0 += kBwdBlock) {
            const int64_t nk = std::min(kBwdBlock, k_end - k0);
            tile(h, q0, nq, k0, nk, p.data(), ds.data());
            add_dkv(h, q0, nq, k0, nk, p.data(), ds.data());
            add_dq(h, q0, nq, k0, nk, ds.data());
          }
        }
    });
    return {dq, dk, dv};
  }
  // dK, dV: a key block gathers from every query block that sees it
  parallel_for(0, g.heads * kblocks, 1, [&](int64_t b0, int64_t b1) {
    std::vector<T> p(size_t(kBwdBlock * kBwdBlock)), ds(p.size());
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t h = b / kblocks, k0 = (b % kblocks) * kBwdBlock, nk = std::min(kBwdBlock, g.tk - k0);
      for (int64_t q0 = causal ? k0 / kBwdBlock * kBwdBlock : 0; q0 < g.tq; q0 += kBwdBlock) {
        const int64_t nq = std::min(kBwdBlock, g.tq - q0);
        tile(h, q0, nq, k0, nk, p.data(), ds.data());
        add_dkv(h, q0, nq, k0, nk, p.data(), ds.data());
      }
    }
  });
  // dQ: a query block gathers from every key block it sees
  parallel_for(0, g.heads * qblocks, 1, [&](int64_t b0, int64_t b1) {
    std::vector<T> p(size_t(kBwdBlock * kBwdBlock)), ds(p.size());
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t h = b / qblocks, q0 = (b % qblocks) * kBwdBlock, nq = std::min(kBwdBlock, g.tq - q0);
      const int64_t k_end = causal ? std::min(g.tk, q0 + nq) : g.tk;
      for (int64_t k0 = 0; k0 < k_end; k0 += kBwdBlock) {
        const int64_t nk = std::min(kBwdBlock, k_end - k0);
        tile(h, q0, nq, k0, nk, p.data(), ds.data());
        add_dq(h, q0, nq, k0, nk, ds.data());
      }
    }
  });
  return {dq, dk, dv};
}

void check_floating(const char* op, const Tensor& q) {
  EMBER_CHECK_TYPE(is_floating(q.dtype()), op, ": expected a floating-point dtype, got ", dtype_name(q.dtype()));
}

// attn_mask as the kernels read it: additive, of the compute dtype, expanded to the scores'
// (..., Tq, Tk) with unit stride along the keys (a copy only when the mask is not).
Tensor additive_scores_mask(const char* op, const std::optional<Tensor>& attn_mask, const Tensor& q, int64_t tk,
                            DType cdt) {
  if (!attn_mask || !attn_mask->defined()) return {};
  const Tensor& m = *attn_mask;
  EMBER_CHECK_TYPE(m.dtype() == kBool || is_floating(m.dtype()), op,
                   ": expected attn_mask of dtype bool or a floating dtype, got ", dtype_name(m.dtype()));
  Shape scores(q.sizes().begin(), q.sizes().end());
  scores.back() = tk;
  bool fits = m.dim() <= int64_t(scores.size());
  for (int64_t i = 1; fits && i <= m.dim(); ++i) {
    const int64_t ms = m.sizes()[m.dim() - i];
    fits = ms == 1 || ms == scores[scores.size() - size_t(i)];
  }
  EMBER_CHECK(fits, op, ": attn_mask of size ", m.sizes(), " does not broadcast to the attention scores' size ",
              scores);
  Tensor a = m.dtype() == kBool
                 ? zeros(m.sizes(), {.dtype = cdt, .device = m.device()})
                       .masked_fill(m.logical_not(), -std::numeric_limits<double>::infinity())
                 : m.to(cdt);
  a = a.expand(scores);
  if (tk > 1 && a.strides().back() != 1) a = a.contiguous();
  return a;
}

template <class T> MaskView<T> mask_view(const Tensor& a, const Geometry& g) {
  MaskView<T> view;
  if (!a.defined()) return view;
  view.data = a.data_ptr<T>();
  view.row_stride = a.strides()[a.dim() - 2];
  view.head_offset = head_offsets(a, g.heads);
  return view;
}

std::tuple<Tensor, Tensor> flash_forward_cpu(const Tensor& query, const Tensor& key, const Tensor& value,
                                             const std::optional<Tensor>& attn_mask, bool causal, double scale) {
  const char* op = "_flash_attention_forward";
  const Geometry g = flash_attention_geometry(op, query, key, value);
  check_floating(op, query);
  const DType cdt = reduce::compute_dtype(query.dtype());
  Tensor q = readable(query, cdt), k = readable(key, cdt), v = readable(value, cdt);
  Tensor m = additive_scores_mask(op, attn_mask, query, g.tk, cdt);
  auto [out, lse] = cdt == kFloat64 ? forward_typed<double>(q, k, v, mask_view<double>(m, g), g, causal, scale)
                                    : forward_typed<float>(q, k, v, mask_view<float>(m, g), g, causal, scale);
  return {out.to(query.dtype()), lse};
}

std::tuple<Tensor, Tensor, Tensor> flash_backward_cpu(const Tensor& grad_out, const Tensor& query, const Tensor& key,
                                                      const Tensor& value, const std::optional<Tensor>& attn_mask,
                                                      const Tensor& out, const Tensor& lse, bool causal,
                                                      double scale) {
  const char* op = "_flash_attention_backward";
  const Geometry g = flash_attention_geometry(op, query, key, value);
  check_floating(op, query);
  const DType cdt = reduce::compute_dtype(query.dtype());
  Tensor q = readable(query, cdt), k = readable(key, cdt), v = readable(value, cdt), go = readable(grad_out, cdt);
  Tensor o = readable(out, cdt), l = lse.to(cdt).contiguous();
  Tensor m = additive_scores_mask(op, attn_mask, query, g.tk, cdt);
  auto [dq, dk, dv] = cdt == kFloat64
                          ? backward_typed<double>(go, q, k, v, mask_view<double>(m, g), o, l, g, causal, scale)
                          : backward_typed<float>(go, q, k, v, mask_view<float>(m, g), o, l, g, causal, scale);
  const DType dt = query.dtype();
  return {dq.to(dt), dk.to(dt), dv.to(dt)};
}

EMBER_REGISTER_KERNEL(_flash_attention_forward, CPU, flash_forward_cpu);
EMBER_REGISTER_KERNEL(_flash_attention_backward, CPU, flash_backward_cpu);

}  // namespace
}  // namespace ember::cpu
