#pragma once
// How ops record themselves for autograd. An op's autograd kernel (registered for the Autograd
// dispatch key beside the op, e.g. in src/ops/binary.cpp) runs the op below autograd, then calls
// record() with the differentiable inputs, the outputs, the tensors backward needs and the
// gradient formula:
//
//   Tensor mul_autograd(const Tensor& a, const Tensor& b) {
//     Tensor out = below_autograd([&] { return ops::mul()(a, b); });
//     record("MulBackward0", {a, b}, {out}, {saved_input(a), saved_input(b)},
//            [](const variable_list& g, LambdaNode& n) -> variable_list {
//              return {grad_for(n, 0, [&] { return g[0] * n.unpack(1); }), ...};
//            });
//     return out;
//   }
#include <functional>

#include "ember/autograd/autograd.h"
#include "ember/dispatch/op.h"

namespace ember::autograd {

struct Save {
  Tensor tensor;
  bool is_output;
};
inline Save saved_input(const Tensor& t) { return {t, false}; }
inline Save saved_output(const Tensor& t) { return {t, true}; }

// Runs f with the Autograd layer switched off on this thread (the backend computes).
template <class F> decltype(auto) below_autograd(F&& f) {
  ExcludeDispatchKeyGuard guard(DispatchKey::Autograd);
  return f();
}

bool any_requires_grad(const variable_list& inputs);

// Attaches a LambdaNode named `name` as the grad_fn of the floating-point `outputs` when grad
// mode is on and an input requires grad. Returns it (or null when nothing was recorded).
std::shared_ptr<LambdaNode> record(const char* name, const variable_list& inputs, const variable_list& outputs,
                                   std::vector<Save> saves, LambdaNode::Backward backward);

// The gradient for input i if the node needs it, else an undefined tensor (skips the work).
template <class F> Tensor grad_for(const Node& n, size_t i, F&& f) {
  return n.needs_input_grad(i) ? Tensor(f()) : Tensor();
}

// An in-place op under autograd. compute(self_value) returns the op's result out of place with
// history recorded (self_value is self, or a clone of it when the formula needs self's old
// value, clone_self = true). The result is written into self and self's history moves to it;
// when self is a view, the base's history is updated through a CopySlices node.
Tensor& record_inplace(Tensor& self, bool clone_self, const std::function<Tensor(const Tensor&)>& compute);

// History for `view` as an as_strided window of `base`'s current history.
std::shared_ptr<Node> make_view_of_base_node(const Tensor& base, const Tensor& view);

// Sums a broadcast gradient back to `shape` (the inverse of broadcasting).
Tensor sum_to(const Tensor& grad, IntArrayRef shape);

}  // namespace ember::autograd
