// kthvalue, median and nanmedian along a dim on CUDA: a stable sort of each row (cuda/sort_ops:
// NaN ordered as the largest value, equal values in position order, as the CPU's selection
// orders them), then one gather of the chosen rank per row. A full sort does more work than the
// CPU's nth_element, but one launch of CUB's segmented radix sort beats a per-row selection
// kernel at the sizes these ops meet, and the answer (values and the index among ties) is the
// CPU's exactly. The rank of each row is computed on the device, so there is no host sync.
#include "core/dtype_dispatch.h"
#include "ember/ops.h"
#include "ops/op_handles.h"
#include "ops/shape_utils.h"

namespace ember::cuda {
namespace {

enum class Pick { Kth, Median, NanMedian };

std::tuple<Tensor, Tensor> select_along(const Tensor& self, int64_t dim, bool keepdim, Pick pick, int64_t k,
                                        const char* kernel_name) {
  if (self.dtype() == DType::Bool || is_complex(self.dtype())) throw_dtype_not_implemented(kernel_name, self.dtype());
  if (self.dim() == 0) {  // one element: itself, at index 0
    return {ops::clone()(self), zeros({}, {.dtype = kInt64, .device = self.device()})};
  }
  dim = wrap_dim(dim, self.dim());
  const int64_t n = self.sizes()[size_t(dim)];
  auto [sorted, positions] = ops::sort()(self, dim, /*descending=*/false, /*stable=*/true);
  Tensor rank;
  if (pick == Pick::Kth) {
    Shape kept = self.sizes();
    kept[size_t(dim)] = 1;
    rank = full(kept, Scalar(k - 1), {.dtype = kInt64, .device = self.device()});
  } else {
    // NaNs sort last: median takes a row's first NaN (rank n - nans), nanmedian the lower middle
    // of the others, (n - nans - 1) / 2, truncated, so an all-NaN row gives its first NaN.
    Tensor nans = ops::sum()(ops::isnan()(self), {dim}, /*keepdim=*/true, kInt64);
    if (pick == Pick::Median) {
      rank = where(nans.gt(Scalar(0)), nans.neg().add(Scalar(n)), Scalar((n - 1) / 2));
    } else {
      rank = nans.neg().add(Scalar(n - 1)).clamp_min(Scalar(0)).div(Scalar(2), std::string("trunc"));
    }
  }
  Tensor values = ops::gather()(sorted, dim, rank), indices = ops::gather()(positions, dim, rank);
  if (!keepdim) return {values.squeeze(dim), indices.squeeze(dim)};
  return {values, indices};
}

std::tuple<Tensor, Tensor> kthvalue_cuda(const Tensor& self, int64_t k, int64_t dim, bool keepdim) {
  return select_along(self, dim, keepdim, Pick::Kth, k, "kthvalue_cuda");
}
std::tuple<Tensor, Tensor> median_dim_cuda(const Tensor& self, int64_t dim, bool keepdim) {
  return select_along(self, dim, keepdim, Pick::Median, 0, "median_out_impl");
}
std::tuple<Tensor, Tensor> nanmedian_dim_cuda(const Tensor& self, int64_t dim, bool keepdim) {
  return select_along(self, dim, keepdim, Pick::NanMedian, 0, "nanmedian_out_impl");
}

}  // namespace

EMBER_REGISTER_KERNEL(kthvalue, CUDA, kthvalue_cuda);
EMBER_REGISTER_KERNEL(median_dim, CUDA, median_dim_cuda);
EMBER_REGISTER_KERNEL(nanmedian_dim, CUDA, nanmedian_dim_cuda);

}  // namespace ember::cuda
