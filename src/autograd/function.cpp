// Custom autograd functions (Function<T>::apply) and gradient checkpointing.
#include <cxxabi.h>

#include <algorithm>

#include "autograd/meta.h"
#include "autograd/record.h"
#include "ember/core/backend.h"
#include "ember/core/generator.h"
#include "ember/ops.h"

namespace ember::autograd {

class CustomNode final : public Node {
 public:
  CustomNode(std::string name, std::function<variable_list(AutogradContext*, const variable_list&)> backward)
      : name_(std::move(name)), backward_(std::move(backward)) {}
  std::string name() const override { return name_; }
  variable_list apply(variable_list&& grads) override {
    for (size_t i = 0; i < grads.size(); ++i)
      if (!grads[i].defined())
        grads[i] = zeros(input_meta_[i].shape, {.dtype = input_meta_[i].dtype, .device = input_meta_[i].device});
    variable_list out = backward_(&ctx, grads);
    EMBER_CHECK(out.size() == num_outputs(), "function ", name_, " returned an incorrect number of gradients (expected ",
                num_outputs(), ", got ", out.size(), ")");
    for (size_t i = 0; i < out.size(); ++i)
      if (!needs_input_grad(i)) out[i] = Tensor();
    return out;
  }
  void release_variables() override {
    for (auto& s : ctx.saved_) s.reset_data();
  }
  AutogradContext ctx;
  std::shared_ptr<CustomNode> self_ref() { return std::static_pointer_cast<CustomNode>(shared_from_this()); }

 private:
  std::string name_;
  std::function<variable_list(AutogradContext*, const variable_list&)> backward_;
};

void AutogradContext::save_for_backward(const variable_list& tensors) { to_save_ = tensors; }

variable_list AutogradContext::get_saved_variables() const {
  variable_list out;
  std::shared_ptr<Node> self = node_ ? node_->shared_from_this() : nullptr;
  for (const auto& s : saved_) out.push_back(s.unpack(self));
  return out;
}

void AutogradContext::mark_non_differentiable(const variable_list& tensors) {
  for (const auto& t : tensors) non_differentiable_.push_back(t.impl());
}

bool AutogradContext::needs_input_grad(size_t i) const {
  return i < needs_input_grad_.size() && needs_input_grad_[i];
}

namespace {
std::string demangle(const char* mangled) {
  int status = 0;
  char* s = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = status == 0 && s ? s : mangled;
  std::free(s);
  auto colon = name.rfind("::");
  if (colon != std::string::npos) name = name.substr(colon + 2);
  return name + "Backward";
}
}  // namespace

variable_list apply_custom(const char* type_name, const std::function<variable_list(AutogradContext*)>& forward,
                           const std::function<variable_list(AutogradContext*, const variable_list&)>& backward,
                           const variable_list& inputs) {
  bool record_history = GradMode::is_enabled() && any_requires_grad(inputs);
  auto node = std::make_shared<CustomNode>(demangle(type_name), backward);
  AutogradContext& ctx = node->ctx;
  ctx.node_ = node.get();
  for (const auto& t : inputs) ctx.needs_input_grad_.push_back(record_history && t.defined() && t.requires_grad());
  variable_list outputs;
  {
    NoGradGuard no_grad;  // forward's own ops are not recorded: the node stands for them
    outputs = forward(&ctx);
  }
  if (!record_history) return outputs;
  std::vector<Edge> edges;
  for (const auto& t : inputs) edges.push_back(gradient_edge(t));
  node->set_next_edges(std::move(edges));
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor& out = outputs[i];
    // An output that is also an input (returned as is) gets a fresh view so history stays acyclic.
    for (const auto& in : inputs)
      if (out.defined() && out.is_same(in)) out = out.view(out.sizes());
    node->add_input_metadata(out);
    bool non_diff = std::find(ctx.non_differentiable_.begin(), ctx.non_differentiable_.end(), out.impl()) !=
                    ctx.non_differentiable_.end();
    if (out.defined() && is_floating_or_complex(out.dtype()) && !non_diff) set_history(out, node, uint32_t(i));
  }
  for (const auto& t : ctx.to_save_) {
    bool is_output = false;
    for (const auto& o : outputs) is_output = is_output || (t.defined() && o.impl() == t.impl());
    ctx.saved_.emplace_back(t, is_output);
  }
  ctx.to_save_.clear();
  return outputs;
}

// ---- checkpoint

namespace {
// The generators a checkpointed region may draw from: the CPU's and those of its inputs'
// devices (torch stashes the same states), so the recomputation replays the forward's draws.
std::vector<Generator*> region_generators(const variable_list& inputs) {
  std::vector<Generator*> gens{&default_generator()};
  for (const auto& t : inputs) {
    if (!t.defined() || t.is_cpu()) continue;
    Generator* g = &default_generator(t.device());
    if (std::find(gens.begin(), gens.end(), g) == gens.end()) gens.push_back(g);
  }
  return gens;
}
std::vector<std::string> states_of(const std::vector<Generator*>& gens) {
  std::vector<std::string> states;
  for (Generator* g : gens) states.push_back(g->get_state());
  return states;
}
void set_states(const std::vector<Generator*>& gens, const std::vector<std::string>& states) {
  for (size_t i = 0; i < gens.size(); ++i) gens[i]->set_state(states[i]);
}
}  // namespace

variable_list checkpoint(const std::function<variable_list(const variable_list&)>& fn, const variable_list& inputs) {
  std::vector<Generator*> gens = region_generators(inputs);
  std::vector<std::string> rng_states = states_of(gens);
  auto forward = [&](AutogradContext* ctx) -> variable_list {
    ctx->save_for_backward(inputs);
    return fn(inputs);
  };
  auto backward = [fn, gens, rng_states](AutogradContext* ctx, const variable_list& grads) -> variable_list {
    variable_list saved = ctx->get_saved_variables();
    variable_list detached;
    for (const auto& t : saved) {
      Tensor d = t.detach();
      if (t.requires_grad()) d.requires_grad_(true);
      detached.push_back(d);
    }
    // Recompute with the random state the forward saw, then backprop through the recomputation.
    std::vector<std::string> current = states_of(gens);
    set_states(gens, rng_states);
    variable_list outs;
    {
      EnableGradGuard enable;
      outs = fn(detached);
    }
    set_states(gens, current);
    variable_list diff_outs, diff_grads;
    for (size_t i = 0; i < outs.size(); ++i)
      if (outs[i].requires_grad()) { diff_outs.push_back(outs[i]); diff_grads.push_back(grads[i]); }
    std::vector<size_t> where;
    for (size_t i = 0; i < detached.size(); ++i)
      if (detached[i].requires_grad()) where.push_back(i);
    variable_list result(detached.size());
    if (diff_outs.empty()) return result;
    // A full backward through the recomputation (not grad() w.r.t. the inputs): tensors fn
    // captures, such as a module's parameters, get their .grad as without checkpointing.
    ember::autograd::backward(diff_outs, diff_grads, false, GradMode::is_enabled());
    for (size_t k = 0; k < where.size(); ++k) result[where[k]] = detached[where[k]].grad();
    return result;
  };
  return apply_custom("CheckpointFunction", forward, backward, inputs);
}

}  // namespace ember::autograd
