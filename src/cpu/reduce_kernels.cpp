// CPU kernels for reductions (sum, mean, prod, amax/amin, max/min over a dim, argmax/argmin,
// var, norm, any/all) and scans (cumsum, cumprod).
//
// One engine serves every reduction. The input's dims are split into kept and reduced ones,
// size-1 dims dropped and neighbours that walk memory as one merged. Then:
//  - inner mode (a reduced dim is innermost in memory): each output reduces its slice with a
//    loop over contiguous runs that keeps several independent accumulators (vectorised);
//    a few outputs over a long slice split the slice across threads instead;
//  - vector mode (a kept dim is innermost, e.g. sum over dim 0 of a matrix): for a block of
//    neighbouring outputs, every reduced position adds a contiguous vector into a block of
//    accumulators. No transposing copy.
// float32 accumulates in double (sum, mean, prod, norm), integers in int64; sums and means add
// float lanes first and flush them into the double every few thousand elements (row_sum.h).
// float16/bfloat16 are computed in float32 and the result cast back.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <type_traits>
#include <utility>

#include "core/parallel.h"
#include "core/dtype_dispatch.h"
#include "ops/reduce_utils.h"
#include "cpu/row_sum.h"
#include "cpu/vec16.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cpu {
namespace {

using reduce::compute_dtype;
using reduce::convert;
using reduce::dim_mask;
using reduce::reduced_shape;

// ------------------------------------------------------------------------------ geometry
struct Geom {
  int64_t num_out = 1, num_red = 1;
  std::vector<int64_t> ksz, kis, kos;  // kept dims (outer first): size, input stride, output stride
  std::vector<int64_t> rsz, ris;       // reduced dims (outer first): size, input stride
};

Geom make_geom(const Tensor& in, uint64_t mask) {
  Geom g;
  const Shape& sz = in.sizes();
  const Shape& st = in.strides();
  const int nd = int(sz.size());
  Shape kshape(nd);
  for (int d = 0; d < nd; ++d) kshape[d] = (mask >> d) & 1 ? 1 : sz[d];
  Shape ost = contiguous_strides(kshape);
  struct K { int64_t s, is, os; };
  struct R { int64_t s, is; };
  std::vector<K> kept;
  std::vector<R> red;
  for (int d = 0; d < nd; ++d) {
    if ((mask >> d) & 1) {
      g.num_red *= sz[d];
      if (sz[d] != 1) red.push_back({sz[d], st[d]});
    } else {
      g.num_out *= sz[d];
      if (sz[d] != 1) kept.push_back({sz[d], st[d], ost[d]});
    }
  }
  // Walk memory from the largest stride to the smallest; a reduction's order doesn't matter
  // (index-tracking reductions have a single reduced dim, which no sort moves).
  std::stable_sort(kept.begin(), kept.end(), [](const K& a, const K& b) { return a.is > b.is; });
  std::stable_sort(red.begin(), red.end(), [](const R& a, const R& b) { return a.is > b.is; });
  for (const K& k : kept) {
    if (!g.ksz.empty() && g.kis.back() == k.is * k.s && g.kos.back() == k.os * k.s) {
      g.ksz.back() *= k.s; g.kis.back() = k.is; g.kos.back() = k.os;
    } else {
      g.ksz.push_back(k.s); g.kis.push_back(k.is); g.kos.push_back(k.os);
    }
  }
  for (const R& r : red) {
    if (!g.rsz.empty() && g.ris.back() == r.is * r.s) {
      g.rsz.back() *= r.s; g.ris.back() = r.is;
    } else {
      g.rsz.push_back(r.s); g.ris.push_back(r.is);
    }
  }
  return g;
}

// Input and output offsets of output number o (row-major over the kept dims in g's order).
inline void out_offsets(const Geom& g, int64_t o, size_t ndims, int64_t& in_off, int64_t& out_off) {
  in_off = 0; out_off = 0;
  for (size_t d = ndims; d-- > 0;) {
    int64_t i = o % g.ksz[d];
    o /= g.ksz[d];
    in_off += i * g.kis[d];
    out_off += i * g.kos[d];
  }
}

// ------------------------------------------------------------------------------ engine
// An Op has: in_t, acc_t, kLanes, identity(), step(acc, x, index), combine(acc, acc) and
// store(out_offset, acc). `index` is the position in the (single) reduced dim.

// Sums (sum, mean) of floating input: a dense run adds in the input type's lanes and flushes
// into the double accumulator every few thousand elements (row_sum), twice the lanes per
// vector of converting every element to double, and about as accurate.
template <class Op> constexpr bool lane_summed() {
  if constexpr (requires { Op::kLaneSum; }) return Op::kLaneSum;
  else return false;
}

// amax/amin of a dense float row in 16-float vectors: a select per vector (four chains on long
// rows), a padded vector for the tail, four shuffles at the end. The generic lane loop leaves rows
// shorter than two of its vectors, and its combining tree, to scalar code whose NaN-propagating
// compare mispredicts on random data (amax over 32-long rows was 8x behind torch).
template <bool kMax> inline float dense_extreme(const float* p, int64_t n) {
  using vec16::F;
  using M = vec16::I;
  const float id = kMax ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  // a plain max/min select (one vmaxps/vminps per vector) and, beside it, whether a NaN was met:
  // two short chains instead of one long compare-or-select chain
  auto pick_v = [](F acc, F x) { return kMax ? (x > acc ? x : acc) : (x < acc ? x : acc); };
  F acc = F{} + id;
  M nan = M{};
  int64_t i = 0;
  if (n >= 128) {  // four independent chains (a select's latency, not its throughput, bounds one)
    F a0 = acc, a1 = acc, a2 = acc, a3 = acc;
    M n0 = nan, n1 = nan;
    for (; i + 64 <= n; i += 64) {
      const F x0 = vec16::load(p + i), x1 = vec16::load(p + i + 16), x2 = vec16::load(p + i + 32),
              x3 = vec16::load(p + i + 48);
      a0 = pick_v(a0, x0);
      a1 = pick_v(a1, x1);
      a2 = pick_v(a2, x2);
      a3 = pick_v(a3, x3);
      n0 |= (x0 != x0) | (x1 != x1);
      n1 |= (x2 != x2) | (x3 != x3);
    }
    acc = pick_v(pick_v(a0, a1), pick_v(a2, a3));
    nan = n0 | n1;
  }
  for (; i < n; i += 16) {
    const F x = vec16::load_upto(p + i, n - i, id);
    acc = pick_v(acc, x);
    nan |= (x != x);
  }
  if (vec16::any(nan)) return std::numeric_limits<float>::quiet_NaN();  // a NaN anywhere is the answer, as torch's
  return kMax ? vec16::max(acc) : vec16::min(acc);
}

// Sum of a dense float row: float vectors (eight chains on long rows: four left the adds
// latency-bound, 1024-long rows 1.6x behind torch; a padded vector for the tail, four shuffles), flushed into a double every kRowSumFlush elements as row_sum does. The
// generic lane loop's 32-lane combining tree cost as much as a short row itself (a sum over
// 32-long rows was 2.5x behind torch).
inline double dense_sum(const float* p, int64_t n) {
  using vec16::F;
  double total = 0;
  for (int64_t b0 = 0; b0 < n; b0 += kRowSumFlush) {
    const int64_t b1 = std::min(n, b0 + kRowSumFlush);
    F acc = F{};
    int64_t i = b0;
    if (b1 - b0 >= 128) {
      F a0 = acc, a1 = acc, a2 = acc, a3 = acc, a4 = acc, a5 = acc, a6 = acc, a7 = acc;
      for (; i + 128 <= b1; i += 128) {
        a0 += vec16::load(p + i);
        a1 += vec16::load(p + i + 16);
        a2 += vec16::load(p + i + 32);
        a3 += vec16::load(p + i + 48);
        a4 += vec16::load(p + i + 64);
        a5 += vec16::load(p + i + 80);
        a6 += vec16::load(p + i + 96);
        a7 += vec16::load(p + i + 112);
      }
      for (; i + 64 <= b1; i += 64) {
        a0 += vec16::load(p + i);
        a1 += vec16::load(p + i + 16);
        a2 += vec16::load(p + i + 32);
        a3 += vec16::load(p + i + 48);
      }
      acc = ((a0 + a4) + (a1 + a5)) + ((a2 + a6) + (a3 + a7));
    }
    for (; i < b1; i += 16) acc += vec16::load_upto(p + i, b1 - i, 0.0f);
    total += double(vec16::sum(acc));
  }
  return total;
}

// One run of n elements at stride s, positions idx0, idx0+1, ...
template <class Op>
inline typename Op::acc_t run(const Op& op, const typename Op::in_t* p, int64_t n, int64_t s, int64_t idx0) {
  using A = typename Op::acc_t;
  constexpr int K = Op::kLanes;
  // an op with a vector routine for a whole dense row (float sums and extremes) uses it
  if constexpr (requires { Op::dense_row(p, n); }) {
    if (s == 1 && n > 0) return A(Op::dense_row(p, n));
  }
  if constexpr (lane_summed<Op>()) {
    if (s == 1 && n >= 2 * K) return A(row_sum(p, n, [](typename Op::in_t v) { return v; }));
  }
  if constexpr (requires { Op::kArg; }) {
    // (float rows from 16 on: the vector max, then a short search for its first position)
    if (s == 1 && n >= (std::is_same_v<typename Op::in_t, float> ? 16 : 64)) return op.dense_run(p, n, idx0);
  }
  if (s == 1 && n >= 2 * K) {
    A a[K];
    for (int k = 0; k < K; ++k) a[k] = op.identity();
    int64_t i = 0;
    for (; i + K <= n; i += K)
      for (int k = 0; k < K; ++k) a[k] = op.step(a[k], p[i + k], idx0 + i + k);
    for (; i < n; ++i) a[0] = op.step(a[0], p[i], idx0 + i);
    for (int w = K / 2; w >= 1; w /= 2)
      for (int k = 0; k < w; ++k) a[k] = op.combine(a[k], a[k + w]);
    return a[0];
  }
  A a = op.identity();
  for (int64_t i = 0; i < n; ++i) a = op.step(a, p[i * s], idx0 + i);
  return a;
}

// Reduces linear reduced positions [b, e) of the slice starting at base.
template <class Op>
typename Op::acc_t reduce_range(const Op& op, const typename Op::in_t* base, const Geom& g, int64_t b,
                                int64_t e) {
  const int nd = int(g.rsz.size());
  if (nd == 0) return op.step(op.identity(), base[0], 0);
  const int64_t n0 = g.rsz[nd - 1], s0 = g.ris[nd - 1];
  int64_t cnt[64];
  int64_t lin = b;
  for (int d = nd - 1; d >= 0; --d) { cnt[d] = lin % g.rsz[d]; lin /= g.rsz[d]; }
  typename Op::acc_t acc = op.identity();
  int64_t pos = b;
  while (pos < e) {
    int64_t off = 0;
    for (int d = 0; d < nd - 1; ++d) off += cnt[d] * g.ris[d];
    int64_t len = std::min(n0 - cnt[nd - 1], e - pos);
    acc = op.combine(acc, run(op, base + off + cnt[nd - 1] * s0, len, s0, pos));
    pos += len;
    cnt[nd - 1] += len;
    for (int d = nd - 1; d > 0 && cnt[d] >= g.rsz[d]; --d) { cnt[d] = 0; ++cnt[d - 1]; }
  }
  return acc;
}

template <class Op> void inner_mode(const Op& op, const typename Op::in_t* in, const Geom& g) {
  using A = typename Op::acc_t;
  const size_t nk = g.ksz.size();
  const int nt = ember::detail::max_parallel_threads();
  if (g.num_out < nt && g.num_red >= 2 * kGrainSize) {
    // Few outputs, long slices: split each slice across threads, combine in slice order.
    for (int64_t o = 0; o < g.num_out; ++o) {
      int64_t io, oo;
      out_offsets(g, o, nk, io, oo);
      std::vector<std::pair<int64_t, A>> parts;
      std::mutex mu;
      parallel_for(0, g.num_red, kGrainSize, [&](int64_t b, int64_t e) {
        A r = reduce_range(op, in + io, g, b, e);
        std::lock_guard<std::mutex> lock(mu);
        parts.emplace_back(b, r);
      });
      std::sort(parts.begin(), parts.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
      A acc = op.identity();
      for (auto& p : parts) acc = op.combine(acc, p.second);
      op.store(oo, acc);
    }
    return;
  }
  int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, g.num_red));
  if (nk == 1 && g.rsz.size() == 1) {
    // Rows (one kept dim, one reduced dim), e.g. x.sum(-1): no per-output index arithmetic;
    // it costs as much as the reduction itself on rows of a hundred elements.
    const int64_t kis = g.kis[0], kos = g.kos[0], n = g.rsz[0], rs = g.ris[0];
    parallel_for(0, g.num_out, grain, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) op.store(o * kos, run(op, in + o * kis, n, rs, 0));
    });
    return;
  }
  parallel_for(0, g.num_out, grain, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      int64_t io, oo;
      out_offsets(g, o, nk, io, oo);
      op.store(oo, reduce_range(op, in + io, g, 0, g.num_red));
    }
  });
}

// Adds reduced positions [r0, r1) of the block of len outputs at base into buf (A[len], which the
// caller set to the identity). r0 > 0 only with one reduced dim.
template <class Op>
void accumulate_block(const Op& op, const typename Op::in_t* base, const Geom& g, int64_t r0, int64_t r1, int64_t len,
                      typename Op::acc_t* buf) {
  using A = typename Op::acc_t;
  using In = typename Op::in_t;
  constexpr int64_t kMaxBlock = 256;
  const int nd = int(g.rsz.size());
  int64_t cnt[64] = {0};
  int64_t off = 0;
  if (nd == 1) {
    cnt[0] = r0;
    off = r0 * g.ris[0];
  }
  // Lane sums of float input add rows in float and flush into the double block every
  // kRowSumFlush / 16 rows (as row_sum does along a row).
  [[maybe_unused]] In fbuf[kMaxBlock];
  [[maybe_unused]] int64_t since_flush = 0;
  constexpr bool kFloatRows = lane_summed<Op>() && std::is_same_v<In, float>;
  if constexpr (kFloatRows) std::fill(fbuf, fbuf + len, In(0));
  for (int64_t r = r0; r < r1; ++r) {
    const In* q = base + off;
    if constexpr (kFloatRows) {
      if (nd == 1 && len <= 64 && r + 4 <= r1 && since_flush + 4 <= kRowSumFlush / 16) {
        // narrow blocks (a bias gradient's few columns): four rows per step in two chains, so
        // the adds into one short buffer do not wait on each other
        const int64_t s0 = g.ris[0];
        for (int64_t k = 0; k < len; ++k) fbuf[k] += (q[k] + q[k + s0]) + (q[k + 2 * s0] + q[k + 3 * s0]);
        r += 3;
        off += 3 * s0;
        cnt[0] += 3;
        since_flush += 3;
      } else {
        for (int64_t k = 0; k < len; ++k) fbuf[k] += q[k];
      }
      if (++since_flush == kRowSumFlush / 16 || r + 1 == r1) {
        for (int64_t k = 0; k < len; ++k) buf[k] += A(fbuf[k]), fbuf[k] = In(0);
        since_flush = 0;
      }
    } else {
      for (int64_t k = 0; k < len; ++k) buf[k] = op.step(buf[k], q[k], r);
    }
    if (nd == 0) break;
    ++cnt[nd - 1];
    off += g.ris[nd - 1];
    for (int d = nd - 1; d > 0 && cnt[d] >= g.rsz[d]; --d) {
      off -= cnt[d] * g.ris[d];
      cnt[d] = 0;
      ++cnt[d - 1];
      off += g.ris[d - 1];
    }
  }
}

template <class Op> void vector_mode(const Op& op, const typename Op::in_t* in, const Geom& g) {
  using A = typename Op::acc_t;
  constexpr int64_t kMaxBlock = 256;
  const size_t nk = g.ksz.size();
  const int64_t K = g.ksz.back(), kos = g.kos.back();
  const int64_t n_outer = g.num_out / K;
  const int nt = ember::detail::max_parallel_threads();
  if (n_outer == 1 && K <= 64 && g.rsz.size() == 1 && nt > 1 && g.num_red * K >= 2 * kGrainSize) {
    // One narrow row of outputs over many rows (a bias gradient: x.sum(0) of [N, 32]): split the
    // rows across threads, each summing every column, and combine the partial rows in row order.
    // Splitting the columns instead gave each thread half of every 128-byte row, and two threads
    // took longer than one (35 against 22 us over 12288 x 32; now 12-19). From 64 columns up,
    // column blocks are whole cache lines and the four-row loop below runs only on blocks of
    // at most 64, so blocks stay (128 columns by rows: 69-95 us against 54).
    int64_t io, oo;
    out_offsets(g, 0, nk - 1, io, oo);
    std::vector<std::pair<int64_t, std::unique_ptr<A[]>>> parts;  // (A may be bool: no vector<A>)
    std::mutex mu;
    parallel_for(0, g.num_red, std::max<int64_t>(64, kGrainSize / K), [&](int64_t b, int64_t e) {
      std::unique_ptr<A[]> buf(new A[size_t(K)]);
      std::fill(buf.get(), buf.get() + K, op.identity());
      accumulate_block(op, in + io, g, b, e, K, buf.get());
      std::lock_guard<std::mutex> lock(mu);
      parts.emplace_back(b, std::move(buf));
    });
    std::sort(parts.begin(), parts.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    for (int64_t k = 0; k < K; ++k) {
      A acc = op.identity();
      for (auto& p : parts) acc = op.combine(acc, p.second[k]);
      op.store(oo + k * kos, acc);
    }
    return;
  }
  int64_t B = kMaxBlock;
  if (n_outer < nt) {
    // blocks a multiple of the threads in number (768 columns on 2 threads: 4 blocks of 192, not
    // 3 of 256, two of which would fall to one thread)
    const int64_t per = std::max<int64_t>(1, (K + int64_t(nt) * kMaxBlock - 1) / (int64_t(nt) * kMaxBlock));
    B = std::clamp<int64_t>((K / (nt * per) + 15) / 16 * 16, 16, kMaxBlock);
  }
  const int64_t nblk = (K + B - 1) / B;
  int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, B * g.num_red));
  parallel_for(0, n_outer * nblk, grain, [&](int64_t tb, int64_t te) {
    A buf[kMaxBlock];
    for (int64_t t = tb; t < te; ++t) {
      int64_t o = t / nblk, j0 = (t % nblk) * B, len = std::min(B, K - j0);
      int64_t io, oo;
      out_offsets(g, o, nk - 1, io, oo);  // outer kept dims only (the last one is the block)
      // out_offsets walks dims [0, nk-1) as the inner-first decomposition of o.
      for (int64_t k = 0; k < len; ++k) buf[k] = op.identity();
      accumulate_block(op, in + io + j0, g, 0, g.num_red, len, buf);
      for (int64_t k = 0; k < len; ++k) op.store(oo + (j0 + k) * kos, buf[k]);
    }
  });
}

// Runs op over `in` (whose dtype is Op::in_t) reducing the dims in mask.
template <class Op> void launch(const Op& op, const Tensor& in, uint64_t mask) {
  Geom g = make_geom(in, mask);
  if (g.num_out == 0) return;
  const auto* data = static_cast<const typename Op::in_t*>(in.data_ptr());
  if (g.num_red == 0) {  // empty slices: every output is the identity
    const size_t nk = g.ksz.size();
    for (int64_t o = 0; o < g.num_out; ++o) {
      int64_t io, oo;
      out_offsets(g, o, nk, io, oo);
      op.store(oo, op.identity());
    }
    return;
  }
  bool vec = !g.ksz.empty() && g.kis.back() == 1 && g.ksz.back() >= 16 &&
             (g.ris.empty() || g.ris.back() != 1);
  if (vec) vector_mode(op, data, g);
  else inner_mode(op, data, g);
}

// ------------------------------------------------------------------------------ ops
template <class T> constexpr bool is_fp = std::is_floating_point_v<T>;
template <class T> using acc_of =
    std::conditional_t<std::is_same_v<T, complex64> || std::is_same_v<T, complex128>, complex128,
                       std::conditional_t<is_fp<T>, double, int64_t>>;

template <class T, class O> struct SumOp {
  using in_t = T;
  using acc_t = acc_of<T>;
  static constexpr int kLanes = 16;
  static constexpr bool kLaneSum = is_fp<T>;
  O* out;
  acc_t identity() const { return acc_t(0); }
  acc_t step(acc_t a, T x, int64_t) const { return a + acc_t(x); }
  acc_t combine(acc_t a, acc_t b) const { return a + b; }
  static double dense_row(const float* p, int64_t n) requires std::is_same_v<T, float> { return dense_sum(p, n); }
  void store(int64_t off, acc_t a) const { out[off] = O(a); }
};

template <class T> struct MeanOp {
  using in_t = T;
  using acc_t = double;
  static constexpr int kLanes = 16;
  static constexpr bool kLaneSum = is_fp<T>;
  T* out;
  double inv_n;
  acc_t identity() const { return 0.0; }
  acc_t step(acc_t a, T x, int64_t) const { return a + acc_t(x); }
  acc_t combine(acc_t a, acc_t b) const { return a + b; }
  static double dense_row(const float* p, int64_t n) requires std::is_same_v<T, float> { return dense_sum(p, n); }
  void store(int64_t off, acc_t a) const { out[off] = T(a * inv_n); }
};

template <class T, class O> struct ProdOp {
  using in_t = T;
  using acc_t = acc_of<T>;
  static constexpr int kLanes = 8;
  O* out;
  acc_t identity() const { return acc_t(1); }
  acc_t step(acc_t a, T x, int64_t) const { return a * acc_t(x); }
  acc_t combine(acc_t a, acc_t b) const { return a * b; }
  void store(int64_t off, acc_t a) const { out[off] = O(a); }
};

// NaN-propagating max/min.
template <class T, bool kMax> inline T pick(T a, T x) {
  if constexpr (is_fp<T>) {
    // Bitwise | keeps this branch-free so the lane loops vectorise.
    if constexpr (kMax) return ((x > a) | (x != x)) ? x : a;
    else return ((x < a) | (x != x)) ? x : a;
  } else if constexpr (std::is_same_v<T, bool>) {
    return kMax ? (a || x) : (a && x);
  } else {
    if constexpr (kMax) return x > a ? x : a;
    else return x < a ? x : a;
  }
}
template <class T, bool kMax> constexpr T extreme_identity() {
  if constexpr (std::is_same_v<T, bool>) return !kMax;
  else if constexpr (is_fp<T>) return kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  else return kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
}

template <class T, bool kMax> struct ExtremeOp {
  using in_t = T;
  using acc_t = T;
  static constexpr int kLanes = 32;
  T* out;
  acc_t identity() const { return extreme_identity<T, kMax>(); }
  acc_t step(acc_t a, T x, int64_t) const { return pick<T, kMax>(a, x); }
  acc_t combine(acc_t a, acc_t b) const { return pick<T, kMax>(a, b); }
  static float dense_row(const float* p, int64_t n) requires std::is_same_v<T, float> { return dense_extreme<kMax>(p, n); }
  void store(int64_t off, acc_t a) const { out[off] = a; }
};

template <class T> struct Vec64 { typedef T type __attribute__((vector_size(64))); };

// Value and index of the first max (min); a NaN wins over numbers, the first NaN over later ones.
template <class T> struct ValIdx { T v; int64_t i; };
template <class T, bool kMax> inline bool better(T x, T y) {
  if constexpr (is_fp<T>) {
    if (x != x) return y == y;
    return kMax ? x > y : x < y;
  } else {
    return kMax ? x > y : x < y;
  }
}
template <class T, bool kMax> struct ArgOp {
  using in_t = T;
  using acc_t = ValIdx<T>;
  static constexpr int kLanes = 8;
  static constexpr bool kArg = true;
  T* values;         // may be null (argmax)
  int64_t* indices;
  acc_t identity() const { return {extreme_identity<T, kMax>(), -1}; }
  acc_t step(acc_t a, T x, int64_t i) const {
    return (a.i < 0 || better<T, kMax>(x, a.v)) ? acc_t{x, i} : a;
  }
  // A dense run in two steps that vectorise: the max of each chunk, then a search for the
  // first position of the best value inside the first chunk that holds it.
  // NaN-propagating max (min) of p[0, len). Floats use GCC vector extensions: the compare-
  // and-select form the auto-vectoriser refuses for floats (under -ftrapping-math).
  static T chunk_extreme(const T* p, int64_t len) {
    if constexpr (std::is_same_v<T, float>) return dense_extreme<kMax>(p, len);  // (shuffles, not a scalar tree)
    constexpr int L = 64 / sizeof(T) >= 8 ? 64 / sizeof(T) : 8;
    int64_t i = 0;
    T m = extreme_identity<T, kMax>();
    if constexpr (is_fp<T>) {
      using V = typename Vec64<T>::type;
      using M = decltype(V{} > V{});
      V acc, x;
      for (int k = 0; k < L; ++k) acc[k] = m;
      M nan = M{} != M{};  // all false
      for (; i + L <= len; i += L) {
        std::memcpy(&x, p + i, sizeof(V));
        if constexpr (kMax) acc = x > acc ? x : acc;
        else acc = x < acc ? x : acc;
        nan |= x != x;
      }
      for (int k = 0; k < L; ++k) {
        if (nan[k]) return std::numeric_limits<T>::quiet_NaN();
        m = pick<T, kMax>(m, acc[k]);
      }
    } else {
      T lanes[L];
      for (int k = 0; k < L; ++k) lanes[k] = m;
      for (; i + L <= len; i += L)
        for (int k = 0; k < L; ++k) lanes[k] = pick<T, kMax>(lanes[k], p[i + k]);
      for (int k = 0; k < L; ++k) m = pick<T, kMax>(m, lanes[k]);
    }
    for (; i < len; ++i) m = pick<T, kMax>(m, p[i]);
    return m;
  }
  acc_t dense_run(const T* p, int64_t n, int64_t idx0) const {
    constexpr int64_t C = 256;
    T best = extreme_identity<T, kMax>();
    int64_t best_chunk = -1;
    for (int64_t c0 = 0; c0 < n; c0 += C) {
      int64_t len = std::min(C, n - c0);
      T m = chunk_extreme(p + c0, len);
      if (best_chunk < 0 || better<T, kMax>(m, best)) { best = m; best_chunk = c0; }
    }
    int64_t len = std::min(C, n - best_chunk);
    for (int64_t i = 0; i < len; ++i) {
      T x = p[best_chunk + i];
      bool hit;
      if constexpr (is_fp<T>) hit = (best != best) ? (x != x) : (x == best);
      else hit = x == best;
      if (hit) return {best, idx0 + best_chunk + i};
    }
    return {best, idx0 + best_chunk};  // unreachable
  }
  acc_t combine(acc_t a, acc_t b) const {
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    if (better<T, kMax>(b.v, a.v)) return b;
    if (better<T, kMax>(a.v, b.v)) return a;
    return b.i < a.i ? b : a;
  }
  void store(int64_t off, acc_t a) const {
    if (values) values[off] = a.v;
    indices[off] = a.i;
  }
};

template <class T, class O, bool kAny> struct AnyAllOp {
  using in_t = T;
  using acc_t = bool;
  static constexpr int kLanes = 32;
  O* out;
  acc_t identity() const { return !kAny; }
  acc_t step(acc_t a, T x, int64_t) const {
    bool nz = x != T(0);
    return kAny ? (a || nz) : (a && nz);
  }
  acc_t combine(acc_t a, acc_t b) const { return kAny ? (a || b) : (a && b); }
  void store(int64_t off, acc_t a) const { out[off] = O(a); }
};

enum class NormKind { L0, L1, L2, Inf, NegInf, P };
template <class T, NormKind kKind> struct NormOp {
  using in_t = T;
  using acc_t = double;
  static constexpr int kLanes = 16;
  T* out;
  double p;
  acc_t identity() const { return kKind == NormKind::NegInf ? std::numeric_limits<double>::infinity() : 0.0; }
  acc_t step(acc_t a, T x, int64_t) const {
    double v = double(x);
    if constexpr (kKind == NormKind::L0) return a + (v != 0.0 ? 1.0 : 0.0);
    else if constexpr (kKind == NormKind::L1) return a + std::abs(v);
    else if constexpr (kKind == NormKind::L2) return a + v * v;
    else if constexpr (kKind == NormKind::Inf) return pick<double, true>(a, std::abs(v));
    else if constexpr (kKind == NormKind::NegInf) return pick<double, false>(a, std::abs(v));
    else return a + std::pow(std::abs(v), p);
  }
  acc_t combine(acc_t a, acc_t b) const {
    if constexpr (kKind == NormKind::Inf) return pick<double, true>(a, b);
    else if constexpr (kKind == NormKind::NegInf) return pick<double, false>(a, b);
    else return a + b;
  }
  void store(int64_t off, acc_t a) const {
    if constexpr (kKind == NormKind::L2) out[off] = T(std::sqrt(a));
    else if constexpr (kKind == NormKind::P) out[off] = T(std::pow(a, 1.0 / p));
    else out[off] = T(a);
  }
};

// ------------------------------------------------------------------------------ kernels
// float16/bfloat16 inputs are computed in float32.
Tensor compute_input(const Tensor& t) { return is_reduced_float(t.dtype()) ? convert(t, kFloat32) : t; }

// sum and prod: integral/bool inputs accumulate in int64; dtype casts the input first.
template <template <class, class> class OpT>
Tensor sum_like(const char* name, const Tensor& a, IntArrayRef dims, bool keepdim, std::optional<DType> dtype) {
  uint64_t mask = dim_mask(dims, a.dim());
  DType out_dt = dtype ? *dtype : (is_integral(a.dtype(), true) ? kInt64 : a.dtype());
  Tensor x = compute_input(dtype ? convert(a, *dtype) : a);
  DType loop_out = is_integral(x.dtype(), true) ? kInt64 : x.dtype();
  Tensor out = empty(reduced_shape(a.sizes(), mask, keepdim), {.dtype = loop_out, .device = a.device()});
  visit_dtype<kNumericAndBool>(x.dtype(), name, [&]<class T>() {
    using O = std::conditional_t<is_fp<T>, T, int64_t>;
    launch(OpT<T, O>{out.data_ptr<O>()}, x, mask);
  });
  return convert(out, out_dt);
}

Tensor sum_cpu(const Tensor& a, IntArrayRef dims, bool keepdim, std::optional<DType> dtype) {
  return sum_like<SumOp>("sum_cpu", a, dims, keepdim, dtype);
}
Tensor prod_cpu(const Tensor& a, IntArrayRef dims, bool keepdim, std::optional<DType> dtype) {
  return sum_like<ProdOp>("prod_cpu", a, dims, keepdim, dtype);
}

Tensor mean_cpu(const Tensor& a, IntArrayRef dims, bool keepdim, std::optional<DType> dtype) {
  uint64_t mask = dim_mask(dims, a.dim());
  DType out_dt = dtype ? *dtype : a.dtype();
  Tensor x = compute_input(convert(a, out_dt));
  Tensor out = empty(reduced_shape(a.sizes(), mask, keepdim), {.dtype = x.dtype(), .device = a.device()});
  int64_t n = reduce::reduced_numel(a.sizes(), mask);
  visit_dtype<kFloatTypes>(x.dtype(), "mean_cpu", [&]<class T>() {
    launch(MeanOp<T>{out.data_ptr<T>(), n == 0 ? std::nan("") : 1.0 / double(n)}, x, mask);
  });
  return convert(out, out_dt);
}

template <bool kMax> Tensor extreme_cpu(const Tensor& a, IntArrayRef dims, bool keepdim) {
  const char* name = kMax ? "amax" : "amin";
  reduce::zero_numel_check_dims(a, dims, kMax ? "amax()" : "amin()");
  uint64_t mask = dim_mask(dims, a.dim());
  Tensor x = compute_input(a);
  Tensor out = empty(reduced_shape(a.sizes(), mask, keepdim), {.dtype = x.dtype(), .device = a.device()});
  visit_dtype<kNumericAndBool>(x.dtype(), name, [&]<class T>() {
    launch(ExtremeOp<T, kMax>{out.data_ptr<T>()}, x, mask);
  });
  return convert(out, a.dtype());
}
Tensor amax_cpu(const Tensor& a, IntArrayRef dims, bool keepdim) { return extreme_cpu<true>(a, dims, keepdim); }
Tensor amin_cpu(const Tensor& a, IntArrayRef dims, bool keepdim) { return extreme_cpu<false>(a, dims, keepdim); }

// Values and indices along one dim (values only when want_values).
template <bool kMax>
std::pair<Tensor, Tensor> arg_reduce(const char* name, const Tensor& a, std::optional<int64_t> dim, bool keepdim,
                                     bool want_values) {
  Tensor x = compute_input(a);
  uint64_t mask;
  Shape out_shape;
  if (dim) {
    int64_t d = reduce::wrap_dim(*dim, a.dim());
    mask = a.dim() == 0 ? 0 : uint64_t(1) << d;
    out_shape = reduced_shape(a.sizes(), mask, keepdim);
  } else {
    x = convert(x, x.dtype(), /*contig=*/true);  // one flat reduced dim
    mask = dim_mask({}, a.dim());
    out_shape = reduced_shape(a.sizes(), mask, keepdim);
  }
  Tensor values = want_values ? empty(out_shape, {.dtype = x.dtype(), .device = a.device()}) : Tensor();
  Tensor indices = empty(out_shape, {.dtype = kInt64, .device = a.device()});
  constexpr uint32_t kTypes = kNumericAndBool;
  visit_dtype<kTypes>(x.dtype(), name, [&]<class T>() {
    launch(ArgOp<T, kMax>{want_values ? values.data_ptr<T>() : nullptr, indices.data_ptr<int64_t>()}, x, mask);
  });
  if (want_values) values = convert(values, a.dtype());
  return {values, indices};
}

std::tuple<Tensor, Tensor> max_dim_cpu(const Tensor& a, int64_t dim, bool keepdim) {
  reduce::zero_numel_check_dims(a, {dim}, "max()");
  auto [v, i] = arg_reduce<true>("max_cpu", a, dim, keepdim, true);
  return {v, i};
}
std::tuple<Tensor, Tensor> min_dim_cpu(const Tensor& a, int64_t dim, bool keepdim) {
  reduce::zero_numel_check_dims(a, {dim}, "min()");
  auto [v, i] = arg_reduce<false>("min_cpu", a, dim, keepdim, true);
  return {v, i};
}
Tensor argmax_cpu(const Tensor& a, std::optional<int64_t> dim, bool keepdim) {
  EMBER_CHECK(a.dtype() != kBool, "\"argmax_cpu\" not implemented for 'Bool'");
  if (dim) reduce::zero_numel_check_dims(a, {*dim}, "argmax()");
  else reduce::zero_numel_check_dims(a, {}, "argmax()");
  return arg_reduce<true>("argmax_cpu", a, dim, keepdim, false).second;
}
Tensor argmin_cpu(const Tensor& a, std::optional<int64_t> dim, bool keepdim) {
  EMBER_CHECK(a.dtype() != kBool, "\"argmin_cpu\" not implemented for 'Bool'");
  if (dim) reduce::zero_numel_check_dims(a, {*dim}, "argmin()");
  else reduce::zero_numel_check_dims(a, {}, "argmin()");
  return arg_reduce<false>("argmin_cpu", a, dim, keepdim, false).second;
}

template <bool kAny> Tensor any_all_cpu(const Tensor& a, IntArrayRef dims, bool keepdim) {
  const char* name = kAny ? "any" : "all";
  uint64_t mask = dim_mask(dims, a.dim());
  Tensor x = compute_input(a);
  DType out_dt = a.dtype() == kUInt8 ? kUInt8 : kBool;
  Tensor out = empty(reduced_shape(a.sizes(), mask, keepdim), {.dtype = out_dt, .device = a.device()});
  visit_dtype<kNumericAndBool>(x.dtype(), name, [&]<class T>() {
    if (out_dt == kUInt8) launch(AnyAllOp<T, uint8_t, kAny>{out.data_ptr<uint8_t>()}, x, mask);
    else launch(AnyAllOp<T, bool, kAny>{out.data_ptr<bool>()}, x, mask);
  });
  return out;
}
Tensor any_cpu(const Tensor& a, IntArrayRef dims, bool keepdim) { return any_all_cpu<true>(a, dims, keepdim); }
Tensor all_cpu(const Tensor& a, IntArrayRef dims, bool keepdim) { return any_all_cpu<false>(a, dims, keepdim); }

Tensor norm_cpu(const Tensor& a, const Scalar& p, IntArrayRef dims, bool keepdim) {
  EMBER_CHECK(is_floating(a.dtype()), "linalg.vector_norm: Expected a floating point or complex tensor as input. Got ",
              reduce::torch_type_name(a.dtype()));
  uint64_t mask = dim_mask(dims, a.dim());
  double pv = p.to_double();
  bool inf = std::isinf(pv);
  if (inf && a.numel() == 0) {
    EMBER_CHECK(reduce::reduced_numel(a.sizes(), mask) != 0 || a.dim() == 0,
                "linalg.vector_norm cannot compute the ", p.str(), " norm on an empty tensor because the "
                "operation does not have an identity");
  }
  Tensor x = compute_input(a);
  Tensor out = empty(reduced_shape(a.sizes(), mask, keepdim), {.dtype = x.dtype(), .device = a.device()});
  visit_dtype<kFloatTypes>(x.dtype(), "norm", [&]<class T>() {
    T* o = out.data_ptr<T>();
    if (pv == 2.0) launch(NormOp<T, NormKind::L2>{o, pv}, x, mask);
    else if (pv == 1.0) launch(NormOp<T, NormKind::L1>{o, pv}, x, mask);
    else if (pv == 0.0) launch(NormOp<T, NormKind::L0>{o, pv}, x, mask);
    else if (inf && pv > 0) launch(NormOp<T, NormKind::Inf>{o, pv}, x, mask);
    else if (inf) launch(NormOp<T, NormKind::NegInf>{o, pv}, x, mask);
    else launch(NormOp<T, NormKind::P>{o, pv}, x, mask);
  });
  return convert(out, a.dtype());
}

// var = sum((x - mean)^2) / max(0, n - correction), the two-pass formula, computed with ember ops.
Tensor var_cpu(const Tensor& a, IntArrayRef dims, int64_t correction, bool keepdim) {
  uint64_t mask = dim_mask(dims, a.dim());
  int64_t n = reduce::reduced_numel(a.sizes(), mask);
  Tensor x = compute_input(a);
  Tensor m = mean_cpu(x, dims, true, std::nullopt);
  Tensor d = sub(x, m);
  Tensor ss = sum_cpu(mul(d, d), dims, keepdim, std::nullopt);
  double denom = double(std::max<int64_t>(0, n - correction));
  ss = mul(ss, wrapped_scalar(1.0 / denom));  // 0 / 0 -> nan, as PyTorch
  return convert(ss, a.dtype());
}

// ------------------------------------------------------------------------------ scans
template <bool kSum> Tensor scan_cpu(const Tensor& a, int64_t dim, std::optional<DType> dtype) {
  const char* name = kSum ? "cumsum" : "cumprod";
  int64_t d = reduce::wrap_dim(dim, a.dim());
  DType out_dt = dtype ? *dtype : (is_integral(a.dtype(), true) ? kInt64 : a.dtype());
  Tensor x = convert(a, compute_dtype(out_dt) == kBool ? kInt64 : compute_dtype(out_dt), /*contig=*/true);
  Tensor out = empty(a.sizes(), {.dtype = x.dtype(), .device = a.device()});
  if (a.numel() == 0) return convert(out, out_dt);
  int64_t outer = 1, n = a.dim() == 0 ? 1 : a.sizes()[d], inner = 1;
  for (int64_t i = 0; i < d; ++i) outer *= a.sizes()[i];
  for (int64_t i = d + 1; i < a.dim(); ++i) inner *= a.sizes()[i];
  // cumsum takes complex tensors too (its gradient, a reversed cumsum, is the same formula);
  // cumprod's complex gradient would need conjugates its formula does not take.
  constexpr uint32_t kTypes = kSum ? (kNumericTypes | kComplexTypes) : kNumericTypes;
  visit_dtype<kTypes>(x.dtype(), name, [&]<class T>() {
    using A = acc_of<T>;
    const T* in = x.data_ptr<T>();
    T* o = out.data_ptr<T>();
    auto op = [](A acc, T v) { return kSum ? acc + A(v) : acc * A(v); };
    const A init = kSum ? A(0) : A(1);
    if (inner == 1) {
      int64_t grain = std::max<int64_t>(1, kGrainSize / n);
      parallel_for(0, outer, grain, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          const T* p = in + r * n;
          T* q = o + r * n;
          A acc = init;
          for (int64_t i = 0; i < n; ++i) { acc = op(acc, p[i]); q[i] = T(acc); }
        }
      });
      return;
    }
    constexpr int64_t B = 256;
    int64_t nblk = (inner + B - 1) / B;
    int64_t grain = std::max<int64_t>(1, kGrainSize / (B * n));
    parallel_for(0, outer * nblk, grain, [&](int64_t tb, int64_t te) {
      A buf[B];
      for (int64_t t = tb; t < te; ++t) {
        int64_t r = t / nblk, j0 = (t % nblk) * B, len = std::min(B, inner - j0);
        for (int64_t k = 0; k < len; ++k) buf[k] = init;
        for (int64_t i = 0; i < n; ++i) {
          const T* p = in + (r * n + i) * inner + j0;
          T* q = o + (r * n + i) * inner + j0;
          for (int64_t k = 0; k < len; ++k) { buf[k] = op(buf[k], p[k]); q[k] = T(buf[k]); }
        }
      }
    });
  });
  return convert(out, out_dt);
}
Tensor cumsum_cpu(const Tensor& a, int64_t dim, std::optional<DType> dtype) { return scan_cpu<true>(a, dim, dtype); }
Tensor cumprod_cpu(const Tensor& a, int64_t dim, std::optional<DType> dtype) { return scan_cpu<false>(a, dim, dtype); }

EMBER_REGISTER_KERNEL(sum, CPU, sum_cpu);
EMBER_REGISTER_KERNEL(mean, CPU, mean_cpu);
EMBER_REGISTER_KERNEL(prod, CPU, prod_cpu);
EMBER_REGISTER_KERNEL(amax, CPU, amax_cpu);
EMBER_REGISTER_KERNEL(amin, CPU, amin_cpu);
EMBER_REGISTER_KERNEL(max_dim, CPU, max_dim_cpu);
EMBER_REGISTER_KERNEL(min_dim, CPU, min_dim_cpu);
EMBER_REGISTER_KERNEL(argmax, CPU, argmax_cpu);
EMBER_REGISTER_KERNEL(argmin, CPU, argmin_cpu);
EMBER_REGISTER_KERNEL(var, CPU, var_cpu);
EMBER_REGISTER_KERNEL(norm, CPU, norm_cpu);
EMBER_REGISTER_KERNEL(any, CPU, any_cpu);
EMBER_REGISTER_KERNEL(all, CPU, all_cpu);
EMBER_REGISTER_KERNEL(cumsum, CPU, cumsum_cpu);
EMBER_REGISTER_KERNEL(cumprod, CPU, cumprod_cpu);

}  // namespace
}  // namespace ember::cpu
