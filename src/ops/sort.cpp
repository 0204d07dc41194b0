// Sorting ops: sort, argsort, topk, unique. NaN is the largest value; ties keep their order.
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember {

std::tuple<Tensor, Tensor> sort(const Tensor& a, int64_t dim, bool descending, bool stable) {
  return ops::sort()(a, dim, descending, stable);
}

Tensor argsort(const Tensor& a, int64_t dim, bool descending, bool stable) {
  return std::get<1>(sort(a, dim, descending, stable));
}

std::tuple<Tensor, Tensor> topk(const Tensor& a, int64_t k, int64_t dim, bool largest, bool sorted) {
  return ops::topk()(a, k, dim, largest, sorted);
}

std::tuple<Tensor, Tensor, Tensor> unique(const Tensor& a, bool sorted, bool return_inverse, bool return_counts,
                                          std::optional<int64_t> dim) {
  return ops::unique()(a, sorted, return_inverse, return_counts, dim);
}

}  // namespace ember
