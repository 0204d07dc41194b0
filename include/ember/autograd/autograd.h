#pragma once
// Public autograd API: backward, grad, hooks, custom Functions, checkpointing.
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "ember/autograd/grad_mode.h"
#include "ember/autograd/node.h"
#include "ember/tensor.h"

namespace ember::autograd {

// Computes gradients of `outputs` and accumulates them into the .grad of the leaves.
// grad_outputs: one per output (undefined = ones for a scalar output). retain_graph defaults
// to create_graph.
void backward(const variable_list& outputs, const variable_list& grad_outputs = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
              const variable_list& inputs = {});

// Returns d(outputs)/d(inputs) without touching .grad (torch.autograd.grad).
variable_list grad(const variable_list& outputs, const variable_list& inputs,
                   const variable_list& grad_outputs = {}, std::optional<bool> retain_graph = std::nullopt,
                   bool create_graph = false, bool allow_unused = false);

// Removes a hook registered with register_hook when destroyed or when remove() is called.
class RemovableHandle {
 public:
  RemovableHandle() = default;
  explicit RemovableHandle(std::function<void()> remover) : remover_(std::move(remover)) {}
  void remove() { if (remover_) { auto r = std::move(remover_); remover_ = nullptr; r(); } }
 private:
  std::function<void()> remover_;
};

// A leaf's hook that runs after its .grad was accumulated (register_post_accumulate_grad_hook).
RemovableHandle register_post_accumulate_grad_hook(const Tensor& leaf, std::function<void(const Tensor&)> hook);

// ---- custom functions: subclass Function<YourOp> with static forward/backward ----
//   struct MyExp : Function<MyExp> {
//     static Tensor forward(AutogradContext* ctx, const Tensor& x) {
//       Tensor y = x.exp(); ctx->save_for_backward({y}); return y; }
//     static variable_list backward(AutogradContext* ctx, const variable_list& g) {
//       return {g[0] * ctx->get_saved_variables()[0]}; }
//   };
//   Tensor y = MyExp::apply(x);
class CustomNode;
class AutogradContext {
 public:
  void save_for_backward(const variable_list& tensors);
  variable_list get_saved_variables() const;
  void mark_non_differentiable(const variable_list& tensors);
  bool needs_input_grad(size_t i) const;
  // Arbitrary non-tensor values to carry to backward.
  std::vector<Scalar> saved_data;

 private:
  friend class CustomNode;
  friend variable_list apply_custom(const char*, const std::function<variable_list(AutogradContext*)>&,
                                    const std::function<variable_list(AutogradContext*, const variable_list&)>&,
                                    const variable_list&);
  std::vector<Tensor> to_save_;
  std::vector<SavedVariable> saved_;
  std::vector<bool> needs_input_grad_;
  std::vector<TensorImpl*> non_differentiable_;
  CustomNode* node_ = nullptr;
};

variable_list apply_custom(const char* name, const std::function<variable_list(AutogradContext*)>& forward,
                           const std::function<variable_list(AutogradContext*, const variable_list&)>& backward,
                           const variable_list& tensor_inputs);

template <class T> struct Function {
  template <class... Args> static auto apply(Args&&... args) {
    variable_list inputs;
    (collect(inputs, args), ...);
    using R = decltype(T::forward(static_cast<AutogradContext*>(nullptr), std::forward<Args>(args)...));
    auto fwd = [&](AutogradContext* ctx) -> variable_list {
      if constexpr (std::is_same_v<R, Tensor>) return {T::forward(ctx, std::forward<Args>(args)...)};
      else return T::forward(ctx, std::forward<Args>(args)...);
    };
    variable_list out = apply_custom(typeid(T).name(), fwd, &T::backward, inputs);
    if constexpr (std::is_same_v<R, Tensor>) return out[0];
    else return out;
  }
 private:
  static void collect(variable_list& v, const Tensor& t) { v.push_back(t); }
  template <class A> static void collect(variable_list&, const A&) {}
};

// Gradient checkpointing: runs fn without keeping its intermediate activations and runs it
// again during backward to get them. Gradients are identical to running fn normally.
// Random ops inside fn see the same random numbers on recomputation (the default generator's
// state is restored).
variable_list checkpoint(const std::function<variable_list(const variable_list&)>& fn, const variable_list& inputs);

}  // namespace ember::autograd
