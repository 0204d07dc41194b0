// CPU kernels for indexing: index_select, gather, scatter(_add), index_add, advanced indexing
// (index / index_put_), nonzero, masked_fill_ and bincount.
//
// Every kernel reads all index values and checks them against the size they index before it
// writes a byte, so an out-of-range index never reaches memory. Pure data movement (gather,
// index_select, index, scatter, index_put_ without accumulate) is dispatched on the element
// size, not the dtype, so it is instantiated four times instead of ten.
#include <algorithm>
#include <atomic>
#include <cstring>

#include "cpu/tensor_iter.h"
#include "ember/ops.h"
#include "ops/advanced_index.h"
#include "ops/index_checks.h"
#include "ops/op_handles.h"
#include "ops/shape_utils.h"

namespace ember::cpu {
namespace {
using index_checks::broadcast_index_shapes;
using index_checks::broadcast_strides;
using index_checks::check_gather_shapes;


// Sizes and strides seen as at least 1-D (a 0-dim tensor is a 1-element vector).
Shape sizes1(const Tensor& t) { return t.dim() ? t.sizes() : Shape{1}; }
Shape strides1(const Tensor& t) { return t.dim() ? t.strides() : Shape{1}; }

// int64, contiguous copy (or the tensor itself when it already is one).
Tensor as_long_contiguous(const Tensor& t) { return t.to(kInt64).contiguous(); }

[[noreturn]] void throw_out_of_bounds(int64_t v, int64_t dim, int64_t size) {
  throw IndexError(::ember::detail::cat("index ", v, " is out of bounds for dimension ", dim, " with size ", size));
}
// Checks 0 <= v < size for every index (no wrapping: gather/scatter/index_select semantics).
// As unsigned numbers negatives are huge, so the largest index seen as unsigned decides: a max
// reduction with no early exit, which vectorises (the compare-and-branch loop ran at ~1 ns per
// index, 40% of a gather), on every thread for a large index. Only after a failure is the first
// bad value looked for, to name it.
void check_range(const int64_t* p, int64_t n, int64_t dim, int64_t size) {
  std::atomic<bool> bad{false};
  parallel_for(0, n, 4 * kGrainSize, [&](int64_t b, int64_t e) {
    uint64_t largest = 0;
    for (int64_t i = b; i < e; ++i) largest = std::max(largest, uint64_t(p[i]));
    if (largest >= uint64_t(size)) bad.store(true, std::memory_order_relaxed);
  });
  if (!bad.load()) return;
  for (int64_t i = 0; i < n; ++i)
    if (p[i] < 0 || p[i] >= size) throw_out_of_bounds(p[i], dim, size);
}

// Walks the positions of `sizes` in row-major order, tracking an element offset per operand.
template <int N> struct Walker {
  Shape sizes;
  std::array<Shape, N> strides;
  int64_t numel() const { return shape_numel(sizes); }
  void seek(int64_t linear, int64_t* counter, int64_t* offs) const {
    for (int i = 0; i < N; ++i) offs[i] = 0;
    for (size_t d = sizes.size(); d-- > 0;) {
      int64_t c = linear % sizes[d];
      linear /= sizes[d];
      counter[d] = c;
      for (int i = 0; i < N; ++i) offs[i] += c * strides[i][d];
    }
  }
  void next(int64_t* counter, int64_t* offs) const {
    for (size_t d = sizes.size(); d-- > 0;) {
      for (int i = 0; i < N; ++i) offs[i] += strides[i][d];
      if (++counter[d] < sizes[d]) return;
      for (int i = 0; i < N; ++i) offs[i] -= strides[i][d] * sizes[d];
      counter[d] = 0;
    }
  }
  // fn(const int64_t* offs) for every position; parallel when grain allows.
  template <class F> void run(int64_t grain, const F& fn) const {
    int64_t total = numel();
    if (total <= 0) return;
    auto body = [&](int64_t b, int64_t e) {
      std::vector<int64_t> counter(sizes.size() + 1);
      std::array<int64_t, N> offs{};
      seek(b, counter.data(), offs.data());
      for (int64_t p = b; p < e; ++p) {
        fn(offs.data());
        if (p + 1 < e) next(counter.data(), offs.data());
      }
    };
    if (grain <= 0) body(0, total);
    else parallel_for(0, total, grain, body);
  }
};

// Like Walker::run over all dims but the last; fn(offs, n, inner_strides) runs a tight loop
// over the n elements of the last dim.
template <int N, class F> void walk_rows(const Walker<N>& w, int64_t grain, const F& fn) {
  if (w.sizes.empty()) {
    std::array<int64_t, N> zero{};
    int64_t offs[N] = {};
    fn(offs, int64_t(1), zero.data());
    return;
  }
  Walker<N> outer;
  outer.sizes.assign(w.sizes.begin(), w.sizes.end() - 1);
  std::array<int64_t, N> inner_st;
  for (int i = 0; i < N; ++i) {
    outer.strides[i].assign(w.strides[i].begin(), w.strides[i].end() - 1);
    inner_st[i] = w.strides[i].back();
  }
  const int64_t n = w.sizes.back();
  if (n == 0) return;
  outer.run(grain <= 0 ? 0 : std::max<int64_t>(1, grain / n),
            [&](const int64_t* offs) { fn(offs, n, inner_st.data()); });
}

template <size_t S> struct Bytes;
template <> struct Bytes<1> { using type = uint8_t; };
template <> struct Bytes<2> { using type = uint16_t; };
template <> struct Bytes<4> { using type = uint32_t; };
template <> struct Bytes<8> { using type = uint64_t; };

// Calls f.template operator()<U>() with U an unsigned integer of the tensor's element size.
template <class F> void visit_size(DType t, F&& f) {
  switch (element_size(t)) {
    case 1: f.template operator()<uint8_t>(); return;
    case 2: f.template operator()<uint16_t>(); return;
    case 4: f.template operator()<uint32_t>(); return;
    case 8: f.template operator()<uint64_t>(); return;
    case 16: f.template operator()<complex128>(); return;  // moved whole, never computed on
  }
  EMBER_CHECK(false, "unsupported element size");
}

// dst += alpha * v in T's arithmetic (bool: or; half types through float).
template <class T> inline T add_scaled(T dst, T v, T alpha) {
  if constexpr (std::is_same_v<T, bool>) return dst || (alpha && v);
  else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
    return T(float(dst) + float(alpha) * float(v));
  else return T(dst + alpha * v);
}
template <class T> inline T add_plain(T dst, T v) {
  if constexpr (std::is_same_v<T, bool>) return dst || v;
  else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return T(float(dst) + float(v));
  else return T(dst + v);
}
template <class T> inline T scalar_as(const Scalar& s) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return T(float(s.to_double()));
  else return s.to<T>();
}

// ------------------------------------------------------------------ index_select

Tensor index_select_cpu(const Tensor& self, int64_t dim, const Tensor& index) {
  dim = wrap_dim(dim, self.dim());
  EMBER_CHECK(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  EMBER_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32,
              "index_select(): Expected dtype int32 or int64 for index");
  Tensor idx = as_long_contiguous(index);
  const int64_t* ip = idx.data_ptr<int64_t>();
  const int64_t K = idx.numel();
  Shape ssz = sizes1(self), sst = strides1(self);
  const int64_t N = ssz[dim];
  check_range(ip, K, dim, N);
  Shape out_shape = self.sizes();
  if (self.dim() > 0) out_shape[dim] = K;
  else EMBER_CHECK(K == 1, "index_select(): Index to scalar can have only 1 value, got ", K, " value(s)");
  Tensor out = empty(out_shape, {.dtype = self.dtype(), .device = self.device()});
  if (out.numel() == 0) return out;
  const int64_t es = self.element_size();
  if (self.is_contiguous()) {
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= ssz[d];
    for (size_t d = dim + 1; d < ssz.size(); ++d) inner *= ssz[d];
    const char* src = static_cast<const char*>(self.data_ptr());
    char* dst = static_cast<char*>(out.data_ptr());
    if (inner == 1) {
      visit_size(self.dtype(), [&]<class U>() {
        const U* s = reinterpret_cast<const U*>(src);
        U* o = reinterpret_cast<U*>(dst);
        parallel_for(0, outer, std::max<int64_t>(1, kGrainSize / K), [&](int64_t b, int64_t e) {
          for (int64_t r = b; r < e; ++r)
            for (int64_t k = 0; k < K; ++k) o[r * K + k] = s[r * N + ip[k]];
        });
      });
    } else {
      const int64_t row = inner * es;
      parallel_for(0, outer * K, std::max<int64_t>(1, kGrainSize / inner), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          int64_t o = r / K, k = r % K;
          std::memcpy(dst + r * row, src + (o * N + ip[k]) * row, size_t(row));
        }
      });
    }
    return out;
  }
  // Strided source: walk the output; the source offset along dim comes from the index.
  // Operands: 0 = out, 1 = self (stride along dim zeroed), 2 = position along dim.
  Walker<3> w;
  w.sizes = sizes1(out);
  Shape ost = strides1(out), kst(w.sizes.size(), 0);
  Shape sst0 = sst;
  sst0[dim] = 0;
  kst[dim] = 1;
  w.strides = {ost, sst0, kst};
  const int64_t sd = sst[dim];
  visit_size(self.dtype(), [&]<class U>() {
    const U* s = static_cast<const U*>(self.data_ptr());
    U* o = static_cast<U*>(out.data_ptr());
    walk_rows(w, kGrainSize, [&](const int64_t* off, int64_t n, const int64_t* st) {
      for (int64_t j = 0; j < n; ++j) o[off[0] + j * st[0]] = s[off[1] + j * st[1] + ip[off[2] + j * st[2]] * sd];
    });
  });
  return out;
}

// ------------------------------------------------------------------ gather / scatter

Tensor gather_cpu(const Tensor& self, int64_t dim, const Tensor& index) {
  dim = wrap_dim(dim, self.dim());
  EMBER_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32, "gather(): Expected dtype int64 for index");
  check_gather_shapes(self, dim, index, nullptr);
  Tensor idx = as_long_contiguous(index);
  Shape ssz = sizes1(self), sst = strides1(self);
  check_range(idx.data_ptr<int64_t>(), idx.numel(), dim, ssz[dim]);
  Tensor out = empty(index.sizes(), {.dtype = self.dtype(), .device = self.device()});
  if (out.numel() == 0) return out;
  Walker<3> w;  // 0 = out, 1 = index (both contiguous over index's shape), 2 = self without dim
  w.sizes = sizes1(index);
  Shape cst = contiguous_strides(w.sizes);
  Shape sst0 = sst;
  sst0[dim] = 0;
  w.strides = {cst, cst, sst0};
  const int64_t sd = sst[dim];
  const int64_t* ip = idx.data_ptr<int64_t>();
  visit_size(self.dtype(), [&]<class U>() {
    const U* s = static_cast<const U*>(self.data_ptr());
    U* o = static_cast<U*>(out.data_ptr());
    walk_rows(w, kGrainSize, [&](const int64_t* off, int64_t n, const int64_t* st) {
      const int64_t s2 = st[2];
      U* oo = o + off[0];
      const int64_t* ii = ip + off[1];
      const U* ss = s + off[2];
      if (s2 == 0 && sd == 1) {  // gather along the last dim of a dense row: a plain table lookup
        for (int64_t j = 0; j < n; ++j) oo[j] = ss[ii[j]];
        return;
      }
      for (int64_t j = 0; j < n; ++j) oo[j] = ss[j * s2 + ii[j] * sd];
    });
  });
  return out;
}

// Runs body(offs, n, inner_strides) over w's rows (w walks index's positions, with self's
// offsets lacking `dim`), on several threads where no two can reach the same element of self:
// positions that differ outside `dim` never meet. When dim is the last dim each row is one
// line along dim, so rows are split; otherwise the last dim's range is split and each thread
// walks every line along dim within its columns. Each element of self then receives its
// contributions on one thread in the serial order, so results equal the serial walk's exactly.
template <int N, class F> void walk_scatter(const Walker<N>& w, int64_t dim, const F& body) {
  const int64_t total = w.numel();
  const size_t last = w.sizes.size() - 1;
  if (w.sizes.empty() || total < 2 * kGrainSize) {
    walk_rows(w, 0, body);
  } else if (dim == int64_t(last)) {
    walk_rows(w, kGrainSize, body);
  } else {
    const int64_t cols = w.sizes[last];
    parallel_for(0, cols, std::max<int64_t>(1, kGrainSize * cols / total), [&](int64_t c0, int64_t c1) {
      Walker<N> part = w;
      part.sizes[last] = c1 - c0;
      walk_rows(part, 0, [&](const int64_t* off, int64_t n, const int64_t* st) {
        int64_t shifted[N];
        for (int i = 0; i < N; ++i) shifted[i] = off[i] + c0 * w.strides[i][last];
        body(shifted, n, st);
      });
    });
  }
}

// Writes (or accumulates) src values into self at the indexed positions; duplicate indices
// apply in order (walk_scatter). value_only: src is a one-element tensor broadcast to all.
template <bool Accumulate>
Tensor& scatter_impl(const char* op, Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                     bool value_only) {
  dim = wrap_dim(dim, self.dim());
  EMBER_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32, op, "(): Expected dtype int64 for index");
  if (!value_only)
    EMBER_CHECK(self.dtype() == src.dtype(), op, "(): Expected self.dtype to be equal to src.dtype");
  check_gather_shapes(self, dim, index, value_only ? nullptr : &src);
  Tensor idx = as_long_contiguous(index);
  Shape ssz = sizes1(self), sst = strides1(self);
  check_range(idx.data_ptr<int64_t>(), idx.numel(), dim, ssz[dim]);
  if (idx.numel() == 0) return self;
  Tensor source = (!value_only && src.is_alias_of(self)) ? src.clone() : src;
  Walker<3> w;  // 0 = index, 1 = self without dim, 2 = src
  w.sizes = sizes1(index);
  Shape sst0 = sst;
  sst0[dim] = 0;
  Shape srcst = value_only ? Shape(w.sizes.size(), 0) : strides1(source);
  w.strides = {contiguous_strides(w.sizes), sst0, srcst};
  const int64_t sd = sst[dim];
  const int64_t* ip = idx.data_ptr<int64_t>();
  if constexpr (!Accumulate) {
    visit_size(self.dtype(), [&]<class U>() {
      U* s = static_cast<U*>(self.data_ptr());
      const U* v = static_cast<const U*>(source.data_ptr());
      walk_scatter(w, dim, [&](const int64_t* off, int64_t n, const int64_t* st) {
        for (int64_t j = 0; j < n; ++j) s[off[1] + j * st[1] + ip[off[0] + j] * sd] = v[off[2] + j * st[2]];
      });
    });
  } else {
    visit_dtype<kAllTypes>(self.dtype(), op, [&]<class T>() {
      T* s = static_cast<T*>(self.data_ptr());
      const T* v = static_cast<const T*>(source.data_ptr());
      walk_scatter(w, dim, [&](const int64_t* off, int64_t n, const int64_t* st) {
        for (int64_t j = 0; j < n; ++j) {
          T& d = s[off[1] + j * st[1] + ip[off[0] + j] * sd];
          d = add_plain(d, v[off[2] + j * st[2]]);
        }
      });
    });
  }
  return self;
}

Tensor& scatter_cpu(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_impl<false>("scatter", self, dim, index, src, false);
}
Tensor& scatter_value_cpu(Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  Tensor v = empty({}, {.dtype = self.dtype(), .device = self.device()});
  ops::fill_()(v, value);
  return scatter_impl<false>("scatter", self, dim, index, v, true);
}
Tensor& scatter_add_cpu(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_impl<true>("scatter_add", self, dim, index, src, false);
}

// ------------------------------------------------------------------ index_add_

Tensor& index_add_cpu(Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
  dim = wrap_dim(dim, self.dim());
  EMBER_CHECK(index.dim() <= 1, "index_add_(): Index is supposed to be a vector");
  EMBER_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32,
              "index_add_(): Expected dtype int32/int64 for index");
  EMBER_CHECK(self.dtype() == source.dtype(), "index_add_(): self (", dtype_name(self.dtype()), ") and source (",
              dtype_name(source.dtype()), ") must have the same scalar type");
  Tensor idx = as_long_contiguous(index);
  const int64_t K = idx.numel();
  Shape ssz = sizes1(self);
  Shape want = ssz;
  want[dim] = K;
  EMBER_CHECK(std::max<int64_t>(source.dim(), 1) == int64_t(ssz.size()) && IntArrayRef(sizes1(source)) == IntArrayRef(want),
              "index_add_(): source ", source.sizes(), " must have the shape of self ", self.sizes(),
              " with dimension ", dim, " of size ", K, " (the number of indices)");
  const int64_t N = ssz[dim];
  const int64_t* ip = idx.data_ptr<int64_t>();
  check_range(ip, K, dim, N);
  if (self.numel() == 0 || K == 0) return self;
  Tensor work = self.is_contiguous() ? self : self.contiguous();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= ssz[d];
  for (size_t d = dim + 1; d < ssz.size(); ++d) inner *= ssz[d];
  // The source is read in place when its dims before and after `dim` each walk with one stride
  // (a dense tensor, or an expand: the gradient of `.sum()` reaching an embedding is one number
  // broadcast, whose contiguous copy cost more than the adds); otherwise from a contiguous copy.
  const Shape src_strides = source.dim() ? Shape(source.strides().begin(), source.strides().end()) : Shape{1};
  auto flat_stride = [&](int64_t from, int64_t to) -> std::optional<int64_t> {  // dims [from, to) as one index
    std::optional<int64_t> unit;
    int64_t span = 1;
    for (int64_t d = to - 1; d >= from; --d) {
      if (want[size_t(d)] == 1) continue;
      if (!unit) unit = src_strides[size_t(d)];
      else if (src_strides[size_t(d)] != *unit * span) return std::nullopt;
      span *= want[size_t(d)];
    }
    return unit.value_or(0);
  };
  const std::optional<int64_t> outer_stride = flat_stride(0, dim);
  const std::optional<int64_t> inner_stride = flat_stride(dim + 1, int64_t(want.size()));
  Tensor src = source;
  int64_t so = outer_stride.value_or(0), sk = src_strides[size_t(dim)], si = inner_stride.value_or(0);
  if (!outer_stride || !inner_stride || source.is_alias_of(work)) {
    src = source.contiguous();
    if (src.is_same(source)) src = source.clone();  // (an alias of self: read a copy)
    so = K * inner;
    sk = inner;
    si = 1;
  }
  visit_dtype<kAllTypes>(self.dtype(), "index_add_", [&]<class T>() {
    T* s = static_cast<T*>(work.data_ptr());
    const T* v = static_cast<const T*>(src.data_ptr());
    const T al = scalar_as<T>(alpha);
    // Tasks own disjoint (outer row, inner range) blocks and apply every index in order; rows
    // are cut into as many blocks (of at least 16) as give every thread two (an embedding's
    // gradient, one outer row of 256, ran on one thread).
    const int64_t threads = ember::detail::max_parallel_threads();
    const int64_t per_row = std::max<int64_t>(1, (2 * threads + outer - 1) / outer);
    const int64_t blk = std::min<int64_t>(4096, std::max<int64_t>(16, ((inner + per_row - 1) / per_row + 15) / 16 * 16));
    const int64_t nblk = (inner + blk - 1) / blk;
    parallel_for(0, outer * nblk, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, K * std::min(inner, blk))),
                 [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        int64_t o = t / nblk, i0 = (t % nblk) * blk, i1 = std::min(inner, i0 + blk);
        for (int64_t k = 0; k < K; ++k) {
          T* d = s + (o * N + ip[k]) * inner;
          const T* x = v + o * so + k * sk;
          if (si == 1) {
            for (int64_t i = i0; i < i1; ++i) d[i] = add_scaled(d[i], x[i], al);
          } else {
            for (int64_t i = i0; i < i1; ++i) d[i] = add_scaled(d[i], x[i * si], al);
          }
        }
      }
    });
  });
  if (!work.is_same(self)) ops::copy_()(self, work, false);
  return self;
}

// ------------------------------------------------------------------ compaction
// nonzero and x[mask] keep the true positions of a dense tensor in order: every thread counts
// its chunk's trues, a prefix sum places the chunks, and each writes its picks. Picks are written
// branch-free (every position writes, the cursor moves by 0 or 1) into a block buffer whose kept
// rows are then copied out: at half density a branch per element mispredicts every other time
// (nonzero of 800K took 3.4 ms through the strided walker, x[mask] 6.7 ms).

struct CompactPlan {
  int64_t nchunks = 0, per = 0;
  std::vector<int64_t> start;  // start[c]: picks before chunk c; start[nchunks]: all of them
};

// Whether v is nonzero (bool and half types through their bits/float).
template <class T> inline bool nonzero_value(T v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return float(v) != 0.0f;
  else return v != T(0);
}

// count(b, e) -> the picks in [b, e).
template <class Count> CompactPlan plan_compaction(int64_t n, const Count& count) {
  CompactPlan c;
  c.nchunks = n > kGrainSize ? std::min<int64_t>(ember::detail::max_parallel_threads(), (n + kGrainSize - 1) / kGrainSize)
                             : (n > 0 ? 1 : 0);
  c.per = c.nchunks ? (n + c.nchunks - 1) / c.nchunks : 0;
  c.start.assign(size_t(c.nchunks + 1), 0);
  parallel_for(0, c.nchunks, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t k = cb; k < ce; ++k) c.start[k + 1] = count(k * c.per, std::min(n, (k + 1) * c.per));
  });
  for (int64_t k = 0; k < c.nchunks; ++k) c.start[k + 1] += c.start[k];
  return c;
}

// Runs emit(chunk, b, e) for every chunk, in parallel.
template <class Emit> void run_compaction(const CompactPlan& c, int64_t n, const Emit& emit) {
  parallel_for(0, c.nchunks, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t k = cb; k < ce; ++k) emit(k, k * c.per, std::min(n, (k + 1) * c.per));
  });
}

inline constexpr int64_t kCompactBlock = 256;

// nonzero of a contiguous tensor: rows of nd indices, the index vector carried along.
template <class T> Tensor nonzero_dense(const Tensor& self, const T* p) {
  using Stored = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;  // bool loads do not vectorise
  const Stored* v = reinterpret_cast<const Stored*>(p);
  const int64_t n = self.numel(), nd = self.dim();
  const Shape sizes = self.sizes();
  CompactPlan plan = plan_compaction(n, [&](int64_t b, int64_t e) {
    int64_t cnt = 0;
    for (int64_t i = b; i < e; ++i) cnt += nonzero_value(v[i]);
    return cnt;
  });
  Tensor out = empty({plan.start[size_t(plan.nchunks)], nd}, {.dtype = kInt64, .device = self.device()});
  int64_t* o = out.data_ptr<int64_t>();
  run_compaction(plan, n, [&](int64_t chunk, int64_t b, int64_t e) {
    std::vector<int64_t> idx(static_cast<size_t>(nd)), buf(static_cast<size_t>(kCompactBlock * nd));
    for (int64_t d = nd - 1, r = b; d >= 0; --d) {
      idx[size_t(d)] = r % sizes[size_t(d)];
      r /= sizes[size_t(d)];
    }
    int64_t* q = o + plan.start[size_t(chunk)] * nd;
    for (int64_t i0 = b; i0 < e; i0 += kCompactBlock) {
      const int64_t nb = std::min(kCompactBlock, e - i0);
      int64_t kept = 0;
      for (int64_t i = 0; i < nb; ++i) {
        int64_t* row = buf.data() + kept * nd;
        for (int64_t d = 0; d < nd; ++d) row[d] = idx[size_t(d)];
        kept += nonzero_value(v[i0 + i]);
        for (int64_t d = nd - 1; d >= 0; --d) {
          if (++idx[size_t(d)] < sizes[size_t(d)]) break;
          idx[size_t(d)] = 0;
        }
      }
      std::memcpy(q, buf.data(), size_t(kept * nd) * sizeof(int64_t));
      q += kept * nd;
    }
  });
  return out;
}

// self[mask] for a bool mask over self's leading dims (masked_select's shape case): the rows of
// self after those dims, picked where the mask is true. self and mask contiguous.
template <class U> void masked_rows(const Tensor& self, const Tensor& mask, Tensor& out) {
  const uint8_t* m = static_cast<const uint8_t*>(mask.data_ptr());
  const U* s = static_cast<const U*>(self.data_ptr());
  const int64_t n = mask.numel(), Q = self.numel() / std::max<int64_t>(n, 1);
  CompactPlan plan = plan_compaction(n, [&](int64_t b, int64_t e) {
    int64_t cnt = 0;
    for (int64_t i = b; i < e; ++i) cnt += m[i] != 0;
    return cnt;
  });
  Shape shape{plan.start[size_t(plan.nchunks)]};
  for (int64_t d = mask.dim(); d < self.dim(); ++d) shape.push_back(self.sizes()[size_t(d)]);
  out = empty(shape, {.dtype = self.dtype(), .device = self.device()});
  U* o = static_cast<U*>(out.data_ptr());
  run_compaction(plan, n, [&](int64_t chunk, int64_t b, int64_t e) {
    U* q = o + plan.start[size_t(chunk)] * Q;
    if (Q != 1) {
      for (int64_t i = b; i < e; ++i)
        if (m[i]) {
          std::memcpy(q, s + i * Q, size_t(Q) * sizeof(U));
          q += Q;
        }
      return;
    }
    U buf[kCompactBlock];
    for (int64_t i0 = b; i0 < e; i0 += kCompactBlock) {
      const int64_t nb = std::min(kCompactBlock, e - i0);
      int64_t kept = 0;
      for (int64_t i = 0; i < nb; ++i) {
        buf[kept] = s[i0 + i];
        kept += m[i0 + i] != 0;
      }
      std::memcpy(q, buf, size_t(kept) * sizeof(U));
      q += kept;
    }
  });
}

// x[mask] with one bool mask over x's leading dims, shapes matching: a compaction, not nonzero +
// a gather through per-dim index tensors. Anything else (or a mismatch, which the general path
// reports) returns an undefined tensor.
Tensor index_by_mask(const Tensor& self, ArrayRef<std::optional<Tensor>> indices) {
  if (indices.size() != 1 || !indices[0] || !indices[0]->defined()) return {};
  const Tensor& mask = *indices[0];
  if (mask.dtype() != kBool || !mask.is_cpu() || mask.dim() == 0 || mask.dim() > self.dim()) return {};
  for (int64_t d = 0; d < mask.dim(); ++d)
    if (mask.sizes()[size_t(d)] != self.sizes()[size_t(d)]) return {};
  const size_t es = element_size(self.dtype());
  if (es != 1 && es != 2 && es != 4 && es != 8) return {};
  Tensor s = self.contiguous(), m = mask.contiguous(), out;
  visit_size(self.dtype(), [&]<class U>() { masked_rows<U>(s, m, out); });
  return out;
}

// ------------------------------------------------------------------ nonzero

Tensor nonzero_cpu(const Tensor& self) {
  if (self.dim() == 0) {  // one number: one row of no coordinates, or none
    Tensor out;
    visit_dtype<kAllTypes>(self.dtype(), "nonzero", [&]<class T>() {
      out = empty({nonzero_value(*static_cast<const T*>(self.data_ptr())) ? 1 : 0, 0},
                  {.dtype = kInt64, .device = self.device()});
    });
    return out;
  }
  // a strided tensor is compacted from a contiguous copy: one pass, then the dense compaction
  // (walking its strides per element cost more than the copy)
  const Tensor dense = self.contiguous();
  Tensor out;
  visit_dtype<kAllTypes>(self.dtype(), "nonzero", [&]<class T>() {
    out = nonzero_dense<T>(dense, static_cast<const T*>(dense.data_ptr()));
  });
  return out;
}

// ------------------------------------------------------------------ advanced indexing

// The plan of one advanced-indexing expression over self:
//   result = [pre dims] + [broadcast index dims] + [post dims]
// element (p, b, q) lives at self offset pre_off[p] + idx_off[b] + post_off[q].
struct AdvIndex {
  Shape pre_sizes, pre_strides, post_sizes, post_strides;
  Shape bshape;
  std::vector<int64_t> idx_off;  // checked offsets, one per broadcast index position
  Shape result_shape;
  int64_t P = 1, B = 1, Q = 1;
};

AdvIndex make_adv_index(const Tensor& self, ArrayRef<std::optional<Tensor>> indices) {
  AdvancedIndexGeometry g = advanced_index_geometry(self, indices, as_long_contiguous);
  AdvIndex r;
  r.pre_sizes = std::move(g.pre_sizes);
  r.pre_strides = std::move(g.pre_strides);
  r.post_sizes = std::move(g.post_sizes);
  r.post_strides = std::move(g.post_strides);
  r.bshape = std::move(g.bshape);
  r.result_shape = std::move(g.result_shape);
  r.P = shape_numel(r.pre_sizes);
  r.B = shape_numel(r.bshape);
  r.Q = shape_numel(r.post_sizes);

  // 4. Offsets per broadcast position, each index checked (negatives wrap once).
  r.idx_off.assign(r.B, 0);
  for (size_t i = 0; i < g.idx.size(); ++i) {
    const int64_t dim = g.idims[i], size = g.sz[dim], stride = g.st[dim];
    const int64_t* p = g.idx[i].data_ptr<int64_t>();
    Walker<1> w;
    w.sizes = r.bshape;
    w.strides = {*broadcast_strides(g.idx[i], r.bshape)};
    int64_t b = 0;
    // The dim named in messages is the one of the user's tensor (a 0-dim mask's inserted dim is not).
    w.run(0, [&](const int64_t* off) {
      int64_t v = p[off[0]];
      if (v < -size || v >= size) [[unlikely]] throw_out_of_bounds(v, dim, size);
      if (v < 0) v += size;
      r.idx_off[b++] += v * stride;
    });
  }
  return r;
}

std::vector<int64_t> offsets_of(const Shape& sizes, const Shape& strides) {
  std::vector<int64_t> out(shape_numel(sizes));
  Walker<1> w;
  w.sizes = sizes;
  w.strides = {strides};
  int64_t i = 0;
  w.run(0, [&](const int64_t* off) { out[i++] = off[0]; });
  return out;
}
bool is_dense_run(const Shape& sizes, const Shape& strides) {
  int64_t expect = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expect) return false;
    expect *= sizes[d];
  }
  return true;
}

Tensor index_cpu(const Tensor& self, ArrayRef<std::optional<Tensor>> indices) {
  if (Tensor picked = index_by_mask(self, indices); picked.defined()) return picked;
  AdvIndex a = make_adv_index(self, indices);
  Tensor out = empty(a.result_shape, {.dtype = self.dtype(), .device = self.device()});
  if (out.numel() == 0) return out;
  std::vector<int64_t> pre = offsets_of(a.pre_sizes, a.pre_strides);
  const bool dense = is_dense_run(a.post_sizes, a.post_strides);
  std::vector<int64_t> post = dense ? std::vector<int64_t>{} : offsets_of(a.post_sizes, a.post_strides);
  const int64_t B = a.B, Q = a.Q, es = self.element_size();
  visit_size(self.dtype(), [&]<class U>() {
    const U* s = static_cast<const U*>(self.data_ptr());
    U* o = static_cast<U*>(out.data_ptr());
    parallel_for(0, a.P * B, std::max<int64_t>(1, kGrainSize / Q), [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        const U* base = s + pre[r / B] + a.idx_off[r % B];
        U* dst = o + r * Q;
        if (dense) {
          if (Q == 1) *dst = *base;
          else std::memcpy(dst, base, size_t(Q * es));
        } else {
          for (int64_t q = 0; q < Q; ++q) dst[q] = base[post[q]];
        }
      }
    });
  });
  return out;
}

Tensor& index_put_cpu(Tensor& self, ArrayRef<std::optional<Tensor>> indices, const Tensor& values, bool accumulate) {
  EMBER_CHECK(values.dtype() == self.dtype(), "Index put requires the source and destination dtypes match, got ",
              dtype_name(self.dtype()), " for the destination and ", dtype_name(values.dtype()), " for the source.");
  AdvIndex a = make_adv_index(self, indices);
  auto vst = broadcast_strides(values, a.result_shape);
  EMBER_CHECK(vst.has_value(), "shape mismatch: value tensor of shape ", values.sizes(),
              " cannot be broadcast to indexing result of shape ", a.result_shape);
  if (shape_numel(a.result_shape) == 0) return self;
  Tensor v = values.is_alias_of(self) ? values.clone() : values;
  if (!v.is_same(values)) vst = broadcast_strides(v, a.result_shape);
  // Value offsets: the (pre, b) part walked row by row, the post part precomputed.
  const size_t npre = a.pre_sizes.size(), nb = a.bshape.size();
  Shape row_sizes = a.pre_sizes, row_strides(vst->begin(), vst->begin() + npre + nb);
  row_sizes.insert(row_sizes.end(), a.bshape.begin(), a.bshape.end());
  Shape vpost_strides(vst->begin() + npre + nb, vst->end());
  std::vector<int64_t> pre = offsets_of(a.pre_sizes, a.pre_strides);
  std::vector<int64_t> post = offsets_of(a.post_sizes, a.post_strides);
  std::vector<int64_t> vpost = offsets_of(a.post_sizes, vpost_strides);
  Walker<1> rows;
  rows.sizes = row_sizes;
  rows.strides = {row_strides};
  const int64_t B = a.B, Q = a.Q;
  int64_t r = 0;
  if (!accumulate) {
    visit_size(self.dtype(), [&]<class U>() {
      U* s = static_cast<U*>(self.data_ptr());
      const U* x = static_cast<const U*>(v.data_ptr());
      rows.run(0, [&](const int64_t* off) {
        U* base = s + pre[r / B] + a.idx_off[r % B];
        const U* vb = x + off[0];
        for (int64_t q = 0; q < Q; ++q) base[post[q]] = vb[vpost[q]];
        ++r;
      });
    });
  } else {
    visit_dtype<kAllTypes>(self.dtype(), "index_put_", [&]<class T>() {
      T* s = static_cast<T*>(self.data_ptr());
      const T* x = static_cast<const T*>(v.data_ptr());
      rows.run(0, [&](const int64_t* off) {
        T* base = s + pre[r / B] + a.idx_off[r % B];
        const T* vb = x + off[0];
        for (int64_t q = 0; q < Q; ++q) base[post[q]] = add_plain(base[post[q]], vb[vpost[q]]);
        ++r;
      });
    });
  }
  return self;
}

// ------------------------------------------------------------------ masked_fill_

Tensor& masked_fill_cpu(Tensor& self, const Tensor& mask, const Scalar& value) {
  EMBER_CHECK(mask.dtype() == kBool, "masked_fill_ only supports boolean masks, but got mask with dtype ",
              dtype_name(mask.dtype()));
  if (self.numel() == 0) return self;
  TensorIter it({self}, {self, mask}, {.op_name = "masked_fill_", .compute_dtype = self.dtype(),
                                       .output_dtype = self.dtype(), .cast_inputs = false,
                                       .upcast_reduced_float = false});
  visit_dtype<kAllAndComplex>(self.dtype(), "masked_fill_", [&]<class T>() {
    const T v = scalar_as<T>(value);
    if constexpr (std::is_same_v<T, float>) {
      // A blend on the bits: GCC vectorises this, not the select on a bool (an attention mask
      // over 8x4x128x128 floats, clone included: 218 -> 164 us).
      const int32_t vb = std::bit_cast<int32_t>(v);
      cpu_kernel(it, [vb](float x, bool m) -> float {
        const int32_t mk = -int32_t(m);
        return std::bit_cast<float>((std::bit_cast<int32_t>(x) & ~mk) | (vb & mk));
      });
    } else if constexpr (std::is_same_v<T, BFloat16> || std::is_same_v<T, Half>) {
      // The same blend on 16 bits: a select on the struct stays scalar (bf16 attention masks).
      const int16_t vb = std::bit_cast<int16_t>(v);
      cpu_kernel(it, [vb](T x, bool m) -> T {
        const int16_t mk = int16_t(-int16_t(m));
        return std::bit_cast<T>(int16_t((std::bit_cast<int16_t>(x) & ~mk) | (vb & mk)));
      });
    } else {
      cpu_kernel(it, [v](T x, bool m) -> T { return m ? v : x; });
    }
  });
  return self;
}

// ------------------------------------------------------------------ bincount

Tensor bincount_cpu(const Tensor& self, const std::optional<Tensor>& weights, int64_t minlength) {
  const bool has_w = index_checks::check_bincount_args(self, weights, minlength);
  Tensor x = as_long_contiguous(self);
  const int64_t* p = x.data_ptr<int64_t>();
  const int64_t n = x.numel();
  int64_t mx = -1;
  for (int64_t i = 0; i < n; ++i) {
    EMBER_CHECK(p[i] >= 0, "bincount only supports 1-d non-negative integral inputs.");
    mx = std::max(mx, p[i]);
  }
  const int64_t len = std::max(minlength, mx + 1);
  if (!has_w) {
    Tensor out = empty({len}, {.dtype = kInt64, .device = self.device()});
    int64_t* o = out.data_ptr<int64_t>();
    std::fill(o, o + len, 0);
    for (int64_t i = 0; i < n; ++i) ++o[p[i]];
    return out;
  }
  DType odt = weights->dtype() == kFloat32 ? kFloat32 : kFloat64;
  Tensor w = weights->to(odt).contiguous();
  Tensor out = empty({len}, {.dtype = odt, .device = self.device()});
  visit_dtype<kFloatTypes>(odt, "bincount", [&]<class T>() {
    T* o = out.data_ptr<T>();
    const T* wp = w.data_ptr<T>();
    std::fill(o, o + len, T(0));
    for (int64_t i = 0; i < n; ++i) o[p[i]] += wp[i];
  });
  return out;
}

EMBER_REGISTER_KERNEL(index_select, CPU, index_select_cpu);
EMBER_REGISTER_KERNEL(gather, CPU, gather_cpu);
EMBER_REGISTER_KERNEL(scatter_, CPU, scatter_cpu);
EMBER_REGISTER_KERNEL(scatter_value_, CPU, scatter_value_cpu);
EMBER_REGISTER_KERNEL(scatter_add_, CPU, scatter_add_cpu);
EMBER_REGISTER_KERNEL(index_add_, CPU, index_add_cpu);
EMBER_REGISTER_KERNEL(index, CPU, index_cpu);
EMBER_REGISTER_KERNEL(index_put_, CPU, index_put_cpu);
EMBER_REGISTER_KERNEL(nonzero, CPU, nonzero_cpu);
EMBER_REGISTER_KERNEL(masked_fill_, CPU, masked_fill_cpu);
EMBER_REGISTER_KERNEL(bincount, CPU, bincount_cpu);

}  // namespace
}  // namespace ember::cpu
