// Nodes, saved variables and gradient accumulation.
#include <atomic>

#include "autograd/meta.h"
#include "ember/autograd/saved_tensor_hooks.h"
#include "ember/ops.h"
#include "profiler/recorder.h"

namespace ember::autograd {

namespace {
std::atomic<uint64_t> g_next_sequence_nr{0};
}

Node::Node()
    : sequence_nr_(g_next_sequence_nr.fetch_add(1, std::memory_order_relaxed)),
      fwd_thread_id_(profiler::detail::current_thread_id()) {}

uint64_t peek_sequence_nr() { return g_next_sequence_nr.load(std::memory_order_relaxed); }

// Children whose last reference was held here are released iteratively by release_node.
Node::~Node() {
  for (auto& e : next_edges_)
    if (e.fn) release_node(std::move(e.fn));
}

void release_node(std::shared_ptr<Node>&& node) {
  thread_local bool draining = false;
  thread_local std::vector<std::shared_ptr<Node>> pending;
  if (!node) return;
  if (node.use_count() > 1) { node.reset(); return; }
  pending.push_back(std::move(node));
  if (draining) return;  // an outer call frees it
  draining = true;
  while (!pending.empty()) {
    std::shared_ptr<Node> n = std::move(pending.back());
    pending.pop_back();
    n.reset();  // its destructor pushes its own children
  }
  draining = false;
}

uint32_t Node::add_input_metadata(const Tensor& t) {
  input_meta_.push_back(t.defined() ? InputMeta{t.sizes(), t.dtype(), t.device()} : InputMeta{});
  return uint32_t(input_meta_.size() - 1);
}

int Node::add_pre_hook(uint32_t index, TensorHook hook) {
  pre_hooks_.emplace_back(next_hook_id_, index, std::move(hook));
  return next_hook_id_++;
}
void Node::remove_pre_hook(int id) {
  std::erase_if(pre_hooks_, [id](const auto& h) { return std::get<0>(h) == id; });
}

int Node::add_node_pre_hook(NodePreHook hook) {
  node_pre_hooks_.emplace_back(next_hook_id_, std::move(hook));
  return next_hook_id_++;
}
int Node::add_node_post_hook(NodePostHook hook) {
  node_post_hooks_.emplace_back(next_hook_id_, std::move(hook));
  return next_hook_id_++;
}
void Node::remove_node_hook(int id) {
  std::erase_if(node_pre_hooks_, [id](const auto& h) { return h.first == id; });
  std::erase_if(node_post_hooks_, [id](const auto& h) { return h.first == id; });
}

// ---- SavedVariable

SavedVariable::SavedVariable(const Tensor& t, bool is_output) {
  if (!t.defined()) return;
  was_defined_ = true;
  is_output_ = is_output;
  saved_version_ = t._version();
  requires_grad_ = t.requires_grad();
  if (const SavedTensorHooks* hooks = current_saved_tensor_hooks()) {
    // The pair is taken off the stack while pack runs, so tensors pack itself saves for a
    // backward (a copy to the CPU under autograd) are saved plainly, as torch does.
    SavedTensorHooks pair = *hooks;
    pop_saved_tensor_hooks();
    struct Restore {
      const SavedTensorHooks& pair;
      ~Restore() { push_saved_tensor_hooks(pair); }
    } restore{pair};
    packed_ = pair.pack(t.detach());
    unpack_ = pair.unpack;
  } else {
    data_ = t.detach();
  }
  AutogradMeta* m = get_meta(t);
  if (m) {
    output_nr_ = m->output_nr;
    if (!is_output && m->grad_fn) grad_fn_ = m->grad_fn;
    if (!m->grad_fn && m->requires_grad_flag) leaf_ = t.impl_ptr();
    if (m->grad_fn) op_name_ = m->grad_fn->name();
  }
}

SavedVariable::~SavedVariable() {
  if (grad_fn_) release_node(std::move(grad_fn_));
}

void SavedVariable::reset_data() {
  data_ = Tensor();
  packed_.reset();
  unpack_ = nullptr;
  if (grad_fn_) release_node(std::move(grad_fn_));
  leaf_.reset();
  released_ = true;
}

Tensor SavedVariable::unpack(const std::shared_ptr<Node>& saved_for) const {
  if (!was_defined_) return Tensor();
  EMBER_CHECK(!released_,
              "Trying to backward through the graph a second time (or directly access saved tensors after they "
              "have already been freed). Saved intermediate values of the graph are freed when you call "
              ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
              "graph a second time or if you need to access saved tensors after calling backward.");
  Tensor data = data_;
  if (unpack_) {
    // Saved under hooks: the tensor comes back from the unpack hook. Autograd cannot see in-place
    // writes to what pack kept, so there is no version check (as torch).
    data = unpack_(packed_);
    EMBER_CHECK(data.defined(), "the unpack hook of saved_tensors_hooks returned None; it must return a tensor");
  } else {
    check_version(saved_for);
    if (leaf_) return Tensor(leaf_);
  }
  if (!requires_grad_) return data;
  // Re-attach history so a graph of the backward can be built (double backward); a leaf's value
  // from an unpack hook is wired to the leaf's accumulator so a double backward reaches .grad.
  Tensor t = data.detach();
  if (leaf_) {
    set_history(t, grad_accumulator(Tensor(leaf_)), 0);
    return t;
  }
  std::shared_ptr<Node> fn = is_output_ ? saved_for : grad_fn_;
  if (fn) set_history(t, fn, output_nr_);
  return t;
}

void SavedVariable::check_version(const std::shared_ptr<Node>& saved_for) const {
  uint32_t now = data_._version();
  if (now == saved_version_) return;
  std::string what = tensor_description(data_);
  if (!op_name_.empty() || is_output_)
    what += detail::cat(", which is output ", output_nr_, " of ",
                        is_output_ && saved_for ? saved_for->name() : op_name_, ",");
  throw Error(detail::cat(
      "one of the variables needed for gradient computation has been modified by an inplace operation: ",
      what, " is at version ", now, "; expected version ", saved_version_,
      " instead. Hint: the backtrace further above may show the operation that failed to compute its "
      "gradient. The variable in question was changed in there or anywhere later. Good luck!"));
}

// ---- saved-tensor hooks: a stack per thread

namespace {
std::vector<SavedTensorHooks>& hook_stack() {
  thread_local std::vector<SavedTensorHooks> stack;
  return stack;
}
}  // namespace

void push_saved_tensor_hooks(SavedTensorHooks hooks) { hook_stack().push_back(std::move(hooks)); }

void pop_saved_tensor_hooks() {
  EMBER_CHECK(!hook_stack().empty(), "pop_saved_tensor_hooks: no saved-tensor hooks are installed on this thread");
  hook_stack().pop_back();
}

const SavedTensorHooks* current_saved_tensor_hooks() {
  auto& stack = hook_stack();
  return stack.empty() ? nullptr : &stack.back();
}

// ---- LambdaNode

variable_list LambdaNode::apply(variable_list&& grads) {
  // Several outputs: the ones no gradient reached count as zeros.
  for (size_t i = 0; i < grads.size(); ++i)
    if (!grads[i].defined() && i < input_meta_.size() && is_floating_or_complex(input_meta_[i].dtype))
      grads[i] = zeros(input_meta_[i].shape, {.dtype = input_meta_[i].dtype, .device = input_meta_[i].device});
  return fn_(grads, *this);
}

void LambdaNode::release_variables() {
  for (auto& s : saved) s.reset_data();
  released_ = true;
}

// ---- AccumulateGrad

// (a view counts too: linear's weight and bias gradients are a transpose and a reshape of fresh
// results, and their copies were a quarter of the seeds' MLP step)
bool storage_held_only_by(const Tensor& g) {
  const long storage_refs = g.impl()->storage().use_count();
  if (!g.impl()->is_view()) return storage_refs == 1;
  const auto& base = g.impl()->view_base();
  return storage_refs == 2 && base.use_count() == 1 && base->storage() == g.impl()->storage();
}

AccumulateGrad::AccumulateGrad(std::shared_ptr<TensorImpl> leaf) : leaf_(std::move(leaf)) {
  Tensor t(leaf_);
  add_input_metadata(t);
}

variable_list AccumulateGrad::apply(variable_list&& grads) {
  Tensor leaf(leaf_);
  Tensor g = grads.empty() ? Tensor() : grads[0];
  AutogradMeta& m = materialize_meta(leaf);
  for (auto& [id, hook] : m.leaf_hooks) {
    if (!g.defined()) break;
    Tensor r = hook(g);
    if (r.defined()) g = r;
  }
  if (!g.defined()) return {};
  if (!m.grad.defined()) {
    if (GradMode::is_enabled()) {
      m.grad = g;  // create_graph: keep the gradient's own history
    } else {
      // Steal a gradient nobody else holds; otherwise copy so later in-place accumulation
      // cannot write into a tensor another part of the graph still uses.
      bool exclusive = g.impl_ptr().use_count() <= 2 && storage_held_only_by(g) && g.is_contiguous() &&
                       g.dtype() == leaf.dtype() && !g.requires_grad();
      m.grad = exclusive ? g.detach() : g.detach().clone();
      if (m.grad.dtype() != leaf.dtype()) m.grad = m.grad.to(leaf.dtype());
    }
  } else if (GradMode::is_enabled()) {
    m.grad = m.grad + g;
  } else {
    m.grad.add_(g);
  }
  for (auto& [id, hook] : m.post_accumulate_hooks) hook(leaf);
  return {};
}

}  // namespace ember::autograd
