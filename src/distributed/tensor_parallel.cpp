#include "ember/distributed/tensor_parallel.h"

#include "ember/autograd/autograd.h"
#include "ember/nn/functional.h"
#include "ember/ops.h"

namespace ember::distributed::tensor_parallel {
namespace {

using autograd::AutogradContext;
using autograd::variable_list;

// The sum over the group, as a new tensor object: the group's worker may still hold the one it
// wrote, and must never end up owning an autograd graph (see functional.cpp's result()).
Tensor summed(const Tensor& t, ProcessGroup& g) {
  Tensor out = t.detach().contiguous().clone();
  g.all_reduce(out, ReduceOp::SUM)->wait();
  return out.detach();
}

Tensor gathered_last(const Tensor& t, ProcessGroup& g) {
  Shape shape{int64_t(g.size())};
  shape.insert(shape.end(), t.sizes().begin(), t.sizes().end());
  Tensor pieces = empty(shape, {.dtype = t.dtype(), .device = t.device()});
  g.all_gather_into(pieces, t.detach().contiguous())->wait();
  return cat(pieces.unbind(0), -1);
}

Tensor chunk_last(const Tensor& t, ProcessGroup& g) {
  const int64_t n = g.size(), width = t.size(-1);
  EMBER_CHECK_VALUE(width % n == 0, "tensor parallel: the last dimension (", width, ") must divide by the group size ",
                    n);
  return t.narrow(-1, g.rank() * (width / n), width / n).contiguous();
}

Tensor slice(const Tensor& w, int64_t dim, const ProcessGroup& g, const char* who) {
  const int64_t n = g.size(), size = w.size(dim);
  EMBER_CHECK_VALUE(size % n == 0, who, ": the layer's dimension ", dim, " (", size, ") must divide by the group size ",
                    n);
  return nn::make_parameter(w.detach().narrow(dim, g.rank() * (size / n), size / n).contiguous().clone(),
                            w.requires_grad());
}

}  // namespace

Tensor copy_to(const Tensor& x, const std::shared_ptr<ProcessGroup>& group) {
  auto g = group;
  return autograd::apply_custom(
      "CopyToTensorParallelBackward", [&](AutogradContext*) -> variable_list { return {x.view(x.sizes())}; },
      [g](AutogradContext*, const variable_list& grads) -> variable_list { return {summed(grads[0], *g)}; }, {x})[0];
}

Tensor reduce_from(const Tensor& x, const std::shared_ptr<ProcessGroup>& group) {
  auto g = group;
  return autograd::apply_custom(
      "ReduceFromTensorParallelBackward", [&](AutogradContext*) -> variable_list { return {summed(x, *g)}; },
      [](AutogradContext*, const variable_list& grads) -> variable_list { return {grads[0]}; }, {x})[0];
}

Tensor gather_from(const Tensor& x, const std::shared_ptr<ProcessGroup>& group) {
  auto g = group;
  return autograd::apply_custom(
      "GatherFromTensorParallelBackward", [&](AutogradContext*) -> variable_list { return {gathered_last(x, *g)}; },
      [g](AutogradContext*, const variable_list& grads) -> variable_list { return {chunk_last(grads[0], *g)}; },
      {x})[0];
}

Tensor scatter_to(const Tensor& x, const std::shared_ptr<ProcessGroup>& group) {
  auto g = group;
  return autograd::apply_custom(
      "ScatterToTensorParallelBackward", [&](AutogradContext*) -> variable_list { return {chunk_last(x, *g)}; },
      [g](AutogradContext*, const variable_list& grads) -> variable_list { return {gathered_last(grads[0], *g)}; },
      {x})[0];
}

std::shared_ptr<ColumnParallelLinear> ColumnParallelLinear::from(const nn::Linear& whole,
                                                                  std::shared_ptr<ProcessGroup> group,
                                                                  bool gather_output) {
  auto m = std::make_shared<ColumnParallelLinear>();
  m->in_features = whole.in_features;
  m->out_features = whole.out_features;
  m->gather_output = gather_output;
  m->register_parameter("weight", &m->weight) = slice(whole.weight, 0, *group, "ColumnParallelLinear");
  if (whole.bias.defined()) m->register_parameter("bias", &m->bias) = slice(whole.bias, 0, *group, "ColumnParallelLinear");
  m->group_ = std::move(group);
  return m;
}

Tensor ColumnParallelLinear::forward(const Tensor& x) {
  Tensor y = nn::functional::linear(copy_to(x, group_), weight,
                                    bias.defined() ? std::optional<Tensor>(bias) : std::nullopt);
  return gather_output ? gather_from(y, group_) : y;
}

std::string ColumnParallelLinear::extra_repr() const {
  return detail::cat("in_features=", in_features, ", out_features=", out_features, ", local_out_features=",
                     weight.size(0), ", gather_output=", gather_output ? "True" : "False");
}

std::shared_ptr<RowParallelLinear> RowParallelLinear::from(const nn::Linear& whole, std::shared_ptr<ProcessGroup> group,
                                                           bool input_is_parallel) {
  auto m = std::make_shared<RowParallelLinear>();
  m->in_features = whole.in_features;
  m->out_features = whole.out_features;
  m->input_is_parallel = input_is_parallel;
  m->register_parameter("weight", &m->weight) = slice(whole.weight, 1, *group, "RowParallelLinear");
  if (whole.bias.defined())
    m->register_parameter("bias", &m->bias) = nn::make_parameter(whole.bias.detach().clone(), whole.bias.requires_grad());
  m->group_ = std::move(group);
  return m;
}

Tensor RowParallelLinear::forward(const Tensor& x) {
  Tensor y = reduce_from(nn::functional::linear(input_is_parallel ? x : scatter_to(x, group_), weight), group_);
  return bias.defined() ? y + bias : y;
}

std::string RowParallelLinear::extra_repr() const {
  return detail::cat("in_features=", in_features, ", out_features=", out_features, ", local_in_features=",
                     weight.size(1), ", input_is_parallel=", input_is_parallel ? "True" : "False");
}

}  // namespace ember::distributed::tensor_parallel
