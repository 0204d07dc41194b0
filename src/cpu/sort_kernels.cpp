// CPU kernels for sort, topk and unique.
//
// Ordering (cpu/sort_utils.h) follows PyTorch: NaN sorts as the largest value (last ascending,
// first descending); equal keys keep their original order (ties are broken by position), so
// every sort here is stable whether or not `stable` was asked for.
#include <memory>

#include "cpu/radix_sort.h"
#include "cpu/sort_utils.h"
#include "ember/ops.h"
#include "ops/op_handles.h"
#include "ops/shape_utils.h"

namespace ember::cpu {
namespace {

// From this row length on, sort runs a radix sort (cpu/radix_sort.h) instead of std::sort; the
// order is the same. Measured on rows of random floats (2 threads): 32 long 6.8 -> 4.9 ms for 16K
// rows, 1024 long 27 -> 4.2 ms for 1K rows; at 16, std::sort is the faster (4.4 against 8.5 ms).
constexpr int64_t kRadixRow = 32;

std::tuple<Tensor, Tensor> sort_cpu(const Tensor& self, int64_t dim, bool descending, bool stable) {
  dim = wrap_dim(dim, self.dim());
  Tensor values = empty(self.sizes(), {.dtype = self.dtype(), .device = self.device()});
  Tensor indices = empty(self.sizes(), {.dtype = kInt64, .device = self.device()});
  if (self.numel() == 0) return {values, indices};
  Shape sz = sizes1(self), ist = strides1(self), ost = contiguous_strides(sz);
  const int64_t n = sz[dim], is = ist[dim], os = ost[dim];
  visit_dtype<kAllTypes>(self.dtype(), "sort", [&]<class T>() {
    using K = key_t<T>;
    const T* in = static_cast<const T*>(self.data_ptr());
    T* vo = static_cast<T*>(values.data_ptr());
    int64_t* io = indices.data_ptr<int64_t>();
    if constexpr (std::is_arithmetic_v<K>) {
      if (n >= kRadixRow && n < (int64_t(1) << 31)) {
        using U = radix_key_t<K>;
        for_each_row(sz, ist, ost, dim, n * 4, [&](int64_t ioff, int64_t ooff) {
          thread_local std::vector<U> keys, keys2;
          thread_local std::vector<int64_t> pos, pos2;
          keys.resize(n), keys2.resize(n), pos.resize(n), pos2.resize(n);
          for (int64_t j = 0; j < n; ++j) {
            keys[j] = radix_key(K(in[ioff + j * is]), descending);
            pos[j] = j;
          }
          const int64_t* order = radix_sort(keys.data(), pos.data(), keys2.data(), pos2.data(), n);
          for (int64_t j = 0; j < n; ++j) {
            vo[ooff + j * os] = in[ioff + order[j] * is];
            io[ooff + j * os] = order[j];
          }
        });
        return;
      }
    }
    for_each_row(sz, ist, ost, dim, n * 8, [&](int64_t ioff, int64_t ooff) {
      thread_local std::vector<Item<K>> buf;
      buf.resize(n);
      for (int64_t j = 0; j < n; ++j) buf[j] = {K(in[ioff + j * is]), j};
      std::sort(buf.begin(), buf.end(), [descending](const Item<K>& a, const Item<K>& b) {
        return before(a, b, descending);
      });
      for (int64_t j = 0; j < n; ++j) {
        vo[ooff + j * os] = in[ioff + buf[j].pos * is];
        io[ooff + j * os] = buf[j].pos;
      }
    });
  });
  (void)stable;
  return {values, indices};
}

// Up to this k, topk keeps a sorted buffer in one pass instead of a partial sort of the row.
constexpr int64_t kSmallK = 64;

std::tuple<Tensor, Tensor> topk_cpu(const Tensor& self, int64_t k, int64_t dim, bool largest, bool sorted) {
  dim = wrap_dim(dim, self.dim());
  Shape sz = sizes1(self), ist = strides1(self);
  const int64_t n = sz[dim];
  EMBER_CHECK(k >= 0 && k <= n, "selected index k out of range");
  Shape osz = self.sizes();
  if (self.dim() > 0) osz[dim] = k;
  Tensor values = empty(osz, {.dtype = self.dtype(), .device = self.device()});
  Tensor indices = empty(osz, {.dtype = kInt64, .device = self.device()});
  if (values.numel() == 0) return {values, indices};
  Shape osz1 = sz;
  osz1[dim] = k;
  Shape ost = contiguous_strides(osz1);
  const int64_t is = ist[dim], os = ost[dim];
  visit_dtype<kAllTypes>(self.dtype(), "topk", [&]<class T>() {
    using K = key_t<T>;
    const T* in = static_cast<const T*>(self.data_ptr());
    T* vo = static_cast<T*>(values.data_ptr());
    int64_t* io = indices.data_ptr<int64_t>();
    for_each_row(sz, ist, ost, dim, n * 4, [&](int64_t ioff, int64_t ooff) {
      thread_local std::vector<Item<K>> buf;
      auto cmp = [largest](const Item<K>& a, const Item<K>& b) { return before(a, b, largest); };
      if (k <= kSmallK) {
        // Small k: one pass keeping the best k in order. Most elements lose to the current
        // k-th best on a single compare (NaN makes both compares false and takes the full
        // ordering path); a later equal key never displaces an earlier one, as the ordering says.
        buf.resize(k);
        int64_t have = 0;
        for (int64_t j = 0; j < n; ++j) {
          const Item<K> it{K(in[ioff + j * is]), j};
          if (have == k) {
            const K worst = buf[k - 1].key;
            if (largest ? it.key < worst : it.key > worst) continue;
            if (!cmp(it, buf[k - 1])) continue;
          } else {
            ++have;
          }
          int64_t p = have - 1;
          for (; p > 0 && cmp(it, buf[p - 1]); --p) buf[p] = buf[p - 1];
          buf[p] = it;
        }
      } else {
        buf.resize(n);
        for (int64_t j = 0; j < n; ++j) buf[j] = {K(in[ioff + j * is]), j};
        if (sorted) std::partial_sort(buf.begin(), buf.begin() + k, buf.end(), cmp);
        else if (k < n) std::nth_element(buf.begin(), buf.begin() + k, buf.end(), cmp);
      }
      for (int64_t j = 0; j < k; ++j) {
        vo[ooff + j * os] = in[ioff + buf[j].pos * is];
        io[ooff + j * os] = buf[j].pos;
      }
    });
  });
  return {values, indices};
}

// unique of integers whose range is at most twice their number (class labels, token ids): a count
// per value in the range, no sort. O(n + range). Returns false (nothing written) for wider ranges.
// 1M int64 labels of 1000 values: 8 ms by radix sort, this 2 ms.
template <class T>
bool unique_by_counting(const T* in, int64_t n, const Tensor& self, bool return_inverse, bool return_counts,
                        Tensor& values, Tensor& inverse, Tensor& counts) {
  const auto [lo_it, hi_it] = std::minmax_element(in, in + n);
  const T lo = *lo_it, hi = *hi_it;
  // the distance in unsigned arithmetic: hi - lo may not fit T (INT64_MIN .. INT64_MAX)
  const uint64_t range = uint64_t(hi) - uint64_t(lo) + 1;
  if (range == 0 || range > uint64_t(std::max<int64_t>(2 * n, 4096))) return false;
  std::vector<int64_t> slot(range, 0);  // the count of each value, then its group index
  for (int64_t j = 0; j < n; ++j) ++slot[uint64_t(in[j]) - uint64_t(lo)];
  int64_t u = 0;
  for (uint64_t r = 0; r < range; ++r) u += slot[r] != 0;
  values = empty({u}, {.dtype = self.dtype(), .device = self.device()});
  T* vo = static_cast<T*>(values.data_ptr());
  int64_t* co = nullptr;
  if (return_counts) {
    counts = empty({u}, {.dtype = kInt64, .device = self.device()});
    co = counts.data_ptr<int64_t>();
  }
  for (uint64_t r = 0, g = 0; r < range; ++r) {
    if (!slot[r]) continue;
    vo[g] = T(uint64_t(lo) + r);
    if (co) co[g] = slot[r];
    slot[r] = int64_t(g++);
  }
  if (return_inverse) {
    inverse = empty(self.sizes(), {.dtype = kInt64, .device = self.device()});
    int64_t* iv = inverse.data_ptr<int64_t>();
    for (int64_t j = 0; j < n; ++j) iv[j] = slot[uint64_t(in[j]) - uint64_t(lo)];
  }
  return true;
}

// unique over all elements (dim = None): sorted values, inverse (self's shape), counts.
std::tuple<Tensor, Tensor, Tensor> unique_flat(const Tensor& self, bool return_inverse, bool return_counts) {
  Tensor x = self.contiguous();
  const int64_t n = x.numel();
  Tensor values, inverse, counts;
  visit_dtype<kAllTypes>(self.dtype(), "unique", [&]<class T>() {
    using K = key_t<T>;
    const T* in = static_cast<const T*>(x.data_ptr());
    if constexpr (std::is_integral_v<K>) {
      if (n > 0 && unique_by_counting(in, n, self, return_inverse, return_counts, values, inverse, counts)) return;
    }
    // The positions in ascending (stable) order: the radix sort sort() uses for long rows (1M
    // int64 of 1000 values: 83 -> 8 ms; torch 2.15 13), else std::sort.
    // (uninitialised buffers: zero-filling 8 MB ones cost as much as the radix passes)
    std::unique_ptr<int64_t[]> pos(new int64_t[size_t(n)]), pos2;
    const int64_t* order = pos.get();
    bool radix = false;
    if constexpr (std::is_arithmetic_v<K>) {
      if (n >= kRadixRow && n < (int64_t(1) << 31)) {
        using U = radix_key_t<K>;
        std::unique_ptr<U[]> keys(new U[size_t(n)]), keys2(new U[size_t(n)]);
        pos2.reset(new int64_t[size_t(n)]);
        for (int64_t j = 0; j < n; ++j) {
          keys[j] = radix_key(K(in[j]), false);
          pos[j] = j;
        }
        order = radix_sort(keys.get(), pos.get(), keys2.get(), pos2.get(), n);
        radix = true;
      }
    }
    if (!radix) {
      std::vector<Item<K>> buf(n);
      for (int64_t j = 0; j < n; ++j) buf[j] = {K(in[j]), j};
      std::sort(buf.begin(), buf.end(), [](const Item<K>& a, const Item<K>& b) { return before(a, b, false); });
      for (int64_t j = 0; j < n; ++j) pos[j] = buf[j].pos;
    }
    // Group runs of equal values (NaN equals nothing, so each NaN stays apart, as in PyTorch).
    std::vector<int64_t> starts;
    for (int64_t j = 0; j < n; ++j)
      if (j == 0 || !(K(in[order[j]]) == K(in[order[j - 1]]))) starts.push_back(j);
    const int64_t u = int64_t(starts.size());
    values = empty({u}, {.dtype = self.dtype(), .device = self.device()});
    T* vo = static_cast<T*>(values.data_ptr());
    for (int64_t g = 0; g < u; ++g) vo[g] = in[order[starts[g]]];
    if (return_inverse) {
      inverse = empty(self.sizes(), {.dtype = kInt64, .device = self.device()});
      int64_t* iv = inverse.data_ptr<int64_t>();
      for (int64_t g = 0; g < u; ++g) {
        int64_t end = g + 1 < u ? starts[g + 1] : n;
        for (int64_t j = starts[g]; j < end; ++j) iv[order[j]] = g;
      }
    }
    if (return_counts) {
      counts = empty({u}, {.dtype = kInt64, .device = self.device()});
      int64_t* c = counts.data_ptr<int64_t>();
      for (int64_t g = 0; g < u; ++g) c[g] = (g + 1 < u ? starts[g + 1] : n) - starts[g];
    }
  });
  return {values, inverse, counts};
}

// unique slices along dim: the slices compared lexicographically (the other dims row-major).
std::tuple<Tensor, Tensor, Tensor> unique_dim(const Tensor& self, int64_t dim, bool return_inverse,
                                              bool return_counts) {
  dim = wrap_dim(dim, self.dim());
  Shape sz = sizes1(self);
  const int64_t S = sz[dim];
  int64_t zero_dims = 0;
  for (int64_t s : sz) zero_dims += s == 0;
  auto empty_long = [&](int64_t n) { return empty({n}, {.dtype = kInt64, .device = self.device()}); };
  if (S == 0) {
    EMBER_CHECK(zero_dims == 1, "Number of zero sized dimensions is more than one, so unique cannot be applied ");
    return {self.clone(), return_inverse ? empty_long(0) : Tensor(), return_counts ? empty_long(0) : Tensor()};
  }
  EMBER_CHECK(zero_dims == 0, "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied");
  Tensor x = self.contiguous();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= sz[d];
  for (size_t d = dim + 1; d < sz.size(); ++d) inner *= sz[d];
  std::vector<int64_t> ids(S), starts;
  visit_dtype<kAllTypes>(self.dtype(), "unique", [&]<class T>() {
    using K = key_t<T>;
    const T* in = static_cast<const T*>(x.data_ptr());
    // -1, 0, 1 for row a against row b (NaN the largest; NaNs compare equal here, for a total order).
    auto cmp = [&](int64_t a, int64_t b) -> int {
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          K va = K(in[(o * S + a) * inner + i]), vb = K(in[(o * S + b) * inner + i]);
          if (lt_nan(va, vb)) return -1;
          if (lt_nan(vb, va)) return 1;
        }
      return 0;
    };
    auto same = [&](int64_t a, int64_t b) {
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i)
          if (!(K(in[(o * S + a) * inner + i]) == K(in[(o * S + b) * inner + i]))) return false;
      return true;
    };
    for (int64_t r = 0; r < S; ++r) ids[r] = r;
    std::sort(ids.begin(), ids.end(), [&](int64_t a, int64_t b) {
      int c = cmp(a, b);
      return c != 0 ? c < 0 : a < b;
    });
    for (int64_t j = 0; j < S; ++j)
      if (j == 0 || !same(ids[j], ids[j - 1])) starts.push_back(j);
  });
  const int64_t u = int64_t(starts.size());
  Tensor sel = empty_long(u);
  int64_t* sp = sel.data_ptr<int64_t>();
  for (int64_t g = 0; g < u; ++g) sp[g] = ids[starts[g]];
  Tensor values = ops::index_select()(self, dim, sel);
  Tensor inverse, counts;
  if (return_inverse) {
    inverse = empty_long(S);
    int64_t* iv = inverse.data_ptr<int64_t>();
    for (int64_t g = 0; g < u; ++g) {
      int64_t end = g + 1 < u ? starts[g + 1] : S;
      for (int64_t j = starts[g]; j < end; ++j) iv[ids[j]] = g;
    }
  }
  if (return_counts) {
    counts = empty_long(u);
    int64_t* c = counts.data_ptr<int64_t>();
    for (int64_t g = 0; g < u; ++g) c[g] = (g + 1 < u ? starts[g + 1] : S) - starts[g];
  }
  return {values, inverse, counts};
}

std::tuple<Tensor, Tensor, Tensor> unique_cpu(const Tensor& self, bool sorted, bool return_inverse,
                                              bool return_counts, std::optional<int64_t> dim) {
  // Results are always sorted (sorted=false leaves the order unspecified, as in PyTorch).
  (void)sorted;
  if (dim) return unique_dim(self, *dim, return_inverse, return_counts);
  return unique_flat(self, return_inverse, return_counts);
}

EMBER_REGISTER_KERNEL(sort, CPU, sort_cpu);
EMBER_REGISTER_KERNEL(topk, CPU, topk_cpu);
EMBER_REGISTER_KERNEL(unique, CPU, unique_cpu);

}  // namespace
}  // namespace ember::cpu
