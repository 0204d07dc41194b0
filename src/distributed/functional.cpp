#include "ember/distributed/functional.h"

#include "ember/autograd/autograd.h"
#include "ember/ops.h"

namespace ember::distributed::functional {
namespace {

using autograd::AutogradContext;
using autograd::variable_list;

// A dense copy that the collectives may write into (they work in place).
Tensor fresh(const Tensor& t) { return t.detach().contiguous().clone(); }

// What a collective wrote, as a new tensor object over the same memory. The process group's
// worker may hold the tensor it wrote until after the caller moves on; if autograd then gave that
// very object a history, the worker could end up releasing the graph, and with it the last
// reference to the group, on its own thread (a worker joining itself at destruction).
Tensor result(const Tensor& written) { return written.detach(); }

Tensor reduced(const Tensor& t, ProcessGroup& g, ReduceOp op) {
  Tensor out = fresh(t);
  g.all_reduce(out, op)->wait();
  return result(out);
}

Tensor gathered(const Tensor& t, ProcessGroup& g) {
  Shape shape(t.sizes().begin(), t.sizes().end());
  EMBER_CHECK_VALUE(!shape.empty(), "all_gather: expected a tensor with at least one dimension");
  shape[0] *= g.size();
  Tensor out = empty(shape, {.dtype = t.dtype(), .device = t.device()});
  g.all_gather_into(out, fresh(t))->wait();
  return result(out);
}

Tensor scattered(const Tensor& t, ProcessGroup& g, ReduceOp op) {
  EMBER_CHECK_VALUE(t.dim() >= 1 && t.size(0) % g.size() == 0, "reduce_scatter: expected dim 0 (", t.dim() ? t.size(0) : 0,
                    ") divisible by the group size ", g.size());
  Shape shape(t.sizes().begin(), t.sizes().end());
  shape[0] /= g.size();
  Tensor out = empty(shape, {.dtype = t.dtype(), .device = t.device()});
  g.reduce_scatter_from(out, fresh(t), op)->wait();
  return result(out);
}

// Every rank must take part in the backward collective: a rank whose loss did not reach the
// output joins with zeros.
struct Like {
  Shape shape;
  DType dtype;
  Device device;
  explicit Like(const Tensor& t) : shape(t.sizes().begin(), t.sizes().end()), dtype(t.dtype()), device(t.device()) {}
  Tensor or_zeros(const Tensor& g) const { return g.defined() ? g : zeros(shape, {.dtype = dtype, .device = device}); }
};

void check_differentiable(const char* what, ReduceOp op) {
  EMBER_CHECK_VALUE(op == ReduceOp::SUM || op == ReduceOp::AVG, what, ": only ReduceOp.SUM and AVG have a gradient "
                    "here, got ", reduce_op_name(op));
}

}  // namespace

Tensor all_reduce(const Tensor& input, const std::shared_ptr<ProcessGroup>& group, ReduceOp op) {
  check_differentiable("all_reduce", op);
  auto g = group;
  const Like out(input);
  return autograd::apply_custom(
      "AllReduceBackward", [&](AutogradContext*) -> variable_list { return {reduced(input, *g, op)}; },
      [g, op, out](AutogradContext*, const variable_list& grads) -> variable_list {
        return {reduced(out.or_zeros(grads[0]), *g, op)};
      },
      {input})[0];
}

Tensor all_gather(const Tensor& input, const std::shared_ptr<ProcessGroup>& group) {
  auto g = group;
  Like out(input);
  if (!out.shape.empty()) out.shape[0] *= g->size();
  return autograd::apply_custom(
      "AllGatherBackward", [&](AutogradContext*) -> variable_list { return {gathered(input, *g)}; },
      [g, out](AutogradContext*, const variable_list& grads) -> variable_list {
        return {scattered(out.or_zeros(grads[0]), *g, ReduceOp::SUM)};
      },
      {input})[0];
}

Tensor reduce_scatter(const Tensor& input, const std::shared_ptr<ProcessGroup>& group, ReduceOp op) {
  check_differentiable("reduce_scatter", op);
  auto g = group;
  Like out(input);
  if (!out.shape.empty()) out.shape[0] /= g->size();
  return autograd::apply_custom(
      "ReduceScatterBackward", [&](AutogradContext*) -> variable_list { return {scattered(input, *g, op)}; },
      [g, op, out](AutogradContext*, const variable_list& grads) -> variable_list {
        Tensor full = gathered(out.or_zeros(grads[0]), *g);
        if (op == ReduceOp::AVG) full = full.div(Scalar(g->size()));
        return {full};
      },
      {input})[0];
}

Tensor broadcast(const Tensor& input, int src, const std::shared_ptr<ProcessGroup>& group) {
  auto g = group;
  const Like out(input);
  return autograd::apply_custom(
      "BroadcastBackward",
      [&](AutogradContext*) -> variable_list {
        Tensor out = fresh(input);
        g->broadcast(out, src)->wait();
        return {result(out)};
      },
      [g, src, out](AutogradContext*, const variable_list& grads) -> variable_list {
        Tensor sum = fresh(out.or_zeros(grads[0]));
        g->reduce(sum, src, ReduceOp::SUM)->wait();
        if (g->rank() != src) sum.zero_();
        return {sum};
      },
      {input})[0];
}

}  // namespace ember::distributed::functional
