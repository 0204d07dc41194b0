#pragma once
// Per-tensor autograd state and the helpers that connect tensors to graph nodes.
#include <memory>
#include <vector>

#include "ember/autograd/autograd.h"

namespace ember::autograd {

struct AutogradMeta final : AutogradMetaInterface {
  bool requires_grad_flag = false;  // set on leaves by requires_grad_()
  std::shared_ptr<Node> grad_fn;    // null for leaves
  std::weak_ptr<Node> grad_accumulator;
  uint32_t output_nr = 0;
  Tensor grad;
  bool retains_grad = false;
  // Hooks on a leaf's gradient, run by its AccumulateGrad before accumulating.
  std::vector<std::pair<int, TensorHook>> leaf_hooks;
  // Hooks run after the leaf's .grad was updated (optimizers overlapping with backward).
  std::vector<std::pair<int, std::function<void(const Tensor&)>>> post_accumulate_hooks;
  int next_hook_id = 0;
  // For views: the version of the shared counter when grad_fn was set; a later in-place write
  // to the base or another view makes grad_fn stale and it is rebuilt from the base.
  uint32_t attr_version = 0;

  bool requires_grad() const override { return requires_grad_flag || grad_fn != nullptr; }
};

// Whether g's storage is reachable only through g: held by g alone, or g is a view whose base
// nobody else holds (node.cpp). A gradient that passes can be taken or written in place.
bool storage_held_only_by(const Tensor& g);

AutogradMeta* get_meta(const Tensor& t);
AutogradMeta& materialize_meta(const Tensor& t);

// The edge a gradient for `t` follows: (grad_fn, output_nr), (grad accumulator, 0) for a leaf that
// requires grad, or an invalid edge.
Edge gradient_edge(const Tensor& t);
std::shared_ptr<Node> grad_accumulator(const Tensor& t);
void set_history(const Tensor& t, const std::shared_ptr<Node>& fn, uint32_t output_nr);

// "[ember.FloatTensor [2, 3]]", as PyTorch names tensors in autograd errors.
std::string tensor_description(const Tensor& t);

}  // namespace ember::autograd
