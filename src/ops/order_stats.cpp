// Reductions by selection: median, nanmedian and kthvalue. The public functions check their
// arguments as PyTorch does; the per-dim forms are dispatched ops (kernels:
// src/cpu/order_stats_kernels.cpp), the all-elements forms go through them on the flattened
// input. Every result is one of the input's values: NaN is ordered as the largest value
// (median propagates it, nanmedian skips it), and for an even count the lower of the two middle
// values is the median, as in PyTorch.
#include <limits>

#include "ember/ops.h"
#include "ops/op_handles.h"
#include "ops/shape_utils.h"

namespace ember {

namespace {
// PyTorch's zero_numel_check_dims: the reduced dim must hold something (a 0-dim tensor holds one).
int64_t checked_reduction_dim(const Tensor& a, int64_t dim, const char* fn) {
  int64_t d = wrap_dim(dim, a.dim());
  if (a.dim() > 0) EMBER_CHECK_INDEX(a.size(d) != 0, fn, ": Expected reduction dim ", d, " to have non-zero size.");
  return d;
}
}  // namespace

Tensor median(const Tensor& a) { return ops::median()(a); }
Tensor nanmedian(const Tensor& a) { return ops::nanmedian()(a); }

std::tuple<Tensor, Tensor> median(const Tensor& a, int64_t dim, bool keepdim) {
  return ops::median_dim()(a, checked_reduction_dim(a, dim, "median()"), keepdim);
}
// PyTorch's nanmedian shares median's implementation, and its messages.
std::tuple<Tensor, Tensor> nanmedian(const Tensor& a, int64_t dim, bool keepdim) {
  return ops::nanmedian_dim()(a, checked_reduction_dim(a, dim, "median()"), keepdim);
}

std::tuple<Tensor, Tensor> kthvalue(const Tensor& a, int64_t k, int64_t dim, bool keepdim) {
  int64_t d = wrap_dim(dim, a.dim());
  int64_t slice = a.dim() == 0 ? 1 : a.size(d);
  EMBER_CHECK(k >= 1 && k <= slice, "kthvalue(): selected number k out of range for dimension ", d);
  return ops::kthvalue()(a, k, d, keepdim);
}

namespace {
// median()/nanmedian() of every element: the dim form on the flattened input. An empty input
// gives NaN (PyTorch 2.x), converted to the input's dtype as torch converts it.
template <auto DimOp> Tensor all_elements(const Tensor& a) {
  if (a.numel() == 0)
    return full({}, std::numeric_limits<double>::quiet_NaN(), {.dtype = kFloat32, .device = a.device()}).to(a.dtype());
  return std::get<0>(DimOp()(a.reshape({-1}), 0, false));
}
Tensor median_composite(const Tensor& a) { return all_elements<ops::median_dim>(a); }
Tensor nanmedian_composite(const Tensor& a) { return all_elements<ops::nanmedian_dim>(a); }
EMBER_REGISTER_KERNEL(median, CompositeBackend, median_composite);
EMBER_REGISTER_KERNEL(nanmedian, CompositeBackend, nanmedian_composite);
}  // namespace

}  // namespace ember

// ---------------------------------------------------------------- gradients
// derivatives.yaml: the dim forms send the gradient to the selected index; the all-elements
// forms share it evenly among the inputs equal to the result (formulas in reduce_backward.h).
#include "ops/reduce_backward.h"

namespace ember {
namespace {
using namespace autograd;  // record, below_autograd, saved_input, ...

template <auto Op, class... A>
std::tuple<Tensor, Tensor> selected_ag(const char* name, const Tensor& a, int64_t dim, bool keepdim, A... args) {
  auto [values, indices] = below_autograd([&] { return Op()(a, args..., dim, keepdim); });
  record(name, {a}, {values, indices}, {saved_output(indices)},
         value_selecting_backward(a.sizes(), wrap_dim(dim, a.dim()), keepdim));
  return {values, indices};
}
std::tuple<Tensor, Tensor> kthvalue_ag(const Tensor& a, int64_t k, int64_t dim, bool keepdim) {
  return selected_ag<ops::kthvalue>("KthvalueBackward0", a, dim, keepdim, k);
}
std::tuple<Tensor, Tensor> median_dim_ag(const Tensor& a, int64_t dim, bool keepdim) {
  return selected_ag<ops::median_dim>("MedianBackward1", a, dim, keepdim);
}
std::tuple<Tensor, Tensor> nanmedian_dim_ag(const Tensor& a, int64_t dim, bool keepdim) {
  return selected_ag<ops::nanmedian_dim>("NanmedianBackward1", a, dim, keepdim);
}

template <auto Op> Tensor evenly_ag(const char* name, const Tensor& a) {
  Tensor out = below_autograd([&] { return Op()(a); });
  record(name, {a}, {out}, {saved_input(a), saved_output(out)},
         [](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] { return evenly_distribute_backward(g[0], n.unpack(0), n.unpack(1)); })};
         });
  return out;
}
Tensor median_ag(const Tensor& a) { return evenly_ag<ops::median>("MedianBackward0", a); }
Tensor nanmedian_ag(const Tensor& a) { return evenly_ag<ops::nanmedian>("NanmedianBackward0", a); }

EMBER_REGISTER_KERNEL(kthvalue, Autograd, kthvalue_ag);
EMBER_REGISTER_KERNEL(median_dim, Autograd, median_dim_ag);
EMBER_REGISTER_KERNEL(nanmedian_dim, Autograd, nanmedian_dim_ag);
EMBER_REGISTER_KERNEL(median, Autograd, median_ag);
EMBER_REGISTER_KERNEL(nanmedian, Autograd, nanmedian_ag);

}  // namespace
}  // namespace ember
