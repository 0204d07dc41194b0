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

Tensor msort(const Tensor& a) { return std::get<0>(sort(a, 0, false)); }

std::tuple<Tensor, Tensor> topk(const Tensor& a, int64_t k, int64_t dim, bool largest, bool sorted) {
  return ops::topk()(a, k, dim, largest, sorted);
}

std::tuple<Tensor, Tensor, Tensor> unique(const Tensor& a, bool sorted, bool return_inverse, bool return_counts,
                                          std::optional<int64_t> dim) {
  return ops::unique()(a, sorted, return_inverse, return_counts, dim);
}

}  // namespace ember

// ---------------------------------------------------------------- gradients
// The values are a selection of self: their gradient goes back to the positions the indices
// name (distinct within a slice, so scatter suffices). The indices are not differentiable.
#include "autograd/record.h"

namespace ember {
namespace {
using namespace autograd;  // record, below_autograd, saved_input, grad_for, ...

LambdaNode::Backward selected_values_backward(const Shape& sizes, int64_t dim) {
  return [sizes, dim](const variable_list& g, LambdaNode& n) -> variable_list {
    return {zeros(sizes, {.dtype = g[0].dtype(), .device = g[0].device()}).scatter(dim, n.unpack(0), g[0])};
  };
}

std::tuple<Tensor, Tensor> sort_ag(const Tensor& self, int64_t dim, bool descending, bool stable) {
  auto [values, indices] = below_autograd([&] { return ops::sort()(self, dim, descending, stable); });
  record("SortBackward0", {self}, {values, indices}, {saved_output(indices)}, selected_values_backward(self.sizes(), dim));
  return {values, indices};
}

std::tuple<Tensor, Tensor> topk_ag(const Tensor& self, int64_t k, int64_t dim, bool largest, bool sorted) {
  auto [values, indices] = below_autograd([&] { return ops::topk()(self, k, dim, largest, sorted); });
  record("TopkBackward0", {self}, {values, indices}, {saved_output(indices)}, selected_values_backward(self.sizes(), dim));
  return {values, indices};
}

EMBER_REGISTER_KERNEL(sort, Autograd, sort_ag);
EMBER_REGISTER_KERNEL(topk, Autograd, topk_ag);

}  // namespace
}  // namespace ember
