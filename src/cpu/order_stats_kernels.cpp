// CPU kernels for the reductions that select one element per row along a dim: kthvalue,
// median and nanmedian. Each row is copied into a buffer of (key, position) and partitioned
// with std::nth_element (linear time) in the ordering of cpu/sort_utils.h: NaN the largest,
// ties by position, so the index returned for equal values is deterministic and the same one
// PyTorch's CPU median returns. Arguments are checked by the public functions
// (src/ops/order_stats.cpp); `dim` arrives wrapped.
#include "cpu/sort_utils.h"
#include "ember/ops.h"
#include "ops/op_handles.h"
#include "ops/shape_utils.h"

namespace ember::cpu {
namespace {

enum class Pick {
  Kth,        // the k-th smallest (1-based k), NaN counting as the largest
  Median,     // the lower median; a row holding NaN gives its first NaN
  NanMedian,  // the lower median of the non-NaN values; all-NaN rows give their first NaN
};

// Dtypes the selection kernels take: every numeric type, not bool (as PyTorch).
inline constexpr uint32_t kSelectTypes = kNumericTypes | kReducedFloatTypes;

std::tuple<Tensor, Tensor> select_along(const Tensor& self, int64_t dim, bool keepdim, Pick pick, int64_t k,
                                        const char* kernel_name) {
  dim = wrap_dim(dim, self.dim());
  const Shape sz = sizes1(self), ist = strides1(self);
  Shape kept = sz;
  kept[size_t(dim)] = 1;
  Tensor values = empty(kept, {.dtype = self.dtype(), .device = self.device()});
  Tensor indices = empty(kept, {.dtype = kInt64, .device = self.device()});
  const Shape ost = contiguous_strides(kept);
  const int64_t n = sz[size_t(dim)], is = ist[size_t(dim)];
  visit_dtype<kSelectTypes>(self.dtype(), kernel_name, [&]<class T>() {
    using K = key_t<T>;
    const T* in = static_cast<const T*>(self.data_ptr());
    T* vo = static_cast<T*>(values.data_ptr());
    int64_t* io = indices.data_ptr<int64_t>();
    for_each_row(sz, ist, ost, dim, n * 4, [&](int64_t ioff, int64_t ooff) {
      thread_local std::vector<Item<K>> buf;
      buf.resize(size_t(n));
      int64_t nans = 0, first_nan = -1;
      for (int64_t j = 0; j < n; ++j) {
        buf[size_t(j)] = {K(in[ioff + j * is]), j};
        if (is_nan(buf[size_t(j)].key)) {
          if (first_nan < 0) first_nan = j;
          ++nans;
        }
      }
      if (pick == Pick::Median && first_nan >= 0) {  // median propagates NaN
        vo[ooff] = in[ioff + first_nan * is];
        io[ooff] = first_nan;
        return;
      }
      // For nanmedian the NaNs sort last and the rank counts only the others; with no other
      // value, (0 - 1) / 2 truncates to rank 0: the first NaN.
      const int64_t rank = pick == Pick::Kth ? k - 1 : (n - (pick == Pick::NanMedian ? nans : 0) - 1) / 2;
      std::nth_element(buf.begin(), buf.begin() + rank, buf.end(),
                       [](const Item<K>& a, const Item<K>& b) { return before(a, b, false); });
      const int64_t pos = buf[size_t(rank)].pos;
      vo[ooff] = in[ioff + pos * is];
      io[ooff] = pos;
    });
  });
  if (self.dim() == 0) return {values.reshape({}), indices.reshape({})};
  if (!keepdim) return {values.squeeze(dim), indices.squeeze(dim)};
  return {values, indices};
}

std::tuple<Tensor, Tensor> kthvalue_cpu(const Tensor& self, int64_t k, int64_t dim, bool keepdim) {
  return select_along(self, dim, keepdim, Pick::Kth, k, "kthvalue_cpu");
}
std::tuple<Tensor, Tensor> median_dim_cpu(const Tensor& self, int64_t dim, bool keepdim) {
  return select_along(self, dim, keepdim, Pick::Median, 0, "median_out");
}
std::tuple<Tensor, Tensor> nanmedian_dim_cpu(const Tensor& self, int64_t dim, bool keepdim) {
  return select_along(self, dim, keepdim, Pick::NanMedian, 0, "nanmedian_out");
}

EMBER_REGISTER_KERNEL(kthvalue, CPU, kthvalue_cpu);
EMBER_REGISTER_KERNEL(median_dim, CPU, median_dim_cpu);
EMBER_REGISTER_KERNEL(nanmedian_dim, CPU, nanmedian_dim_cpu);

}  // namespace
}  // namespace ember::cpu
