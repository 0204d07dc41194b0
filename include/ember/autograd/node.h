#pragma once
// The autograd graph: a Node per recorded op, Edges to the nodes of its inputs, and the
// tensors it saved for backward. Built during forward, run by the engine (engine.cpp).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ember/tensor.h"

namespace ember::autograd {

class Node;
using variable_list = std::vector<Tensor>;

// Where a gradient goes: input `input_nr` of node `fn`. An edge with no fn goes nowhere
// (the input did not require grad).
struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;
  bool valid() const { return fn != nullptr; }
};

// Shape, dtype and device of a gradient a node expects, so an undefined gradient can be
// replaced by zeros when a node has several outputs and only some received one.
struct InputMeta {
  Shape shape;
  DType dtype = DType::Float32;
  Device device;
};

using TensorHook = std::function<Tensor(const Tensor&)>;  // returns a replacement or undefined

class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Gradients with respect to this node's outputs in, gradients for its inputs out (one per
  // next edge; undefined where none flows).
  virtual variable_list apply(variable_list&& grads) = 0;
  virtual std::string name() const = 0;
  // Frees saved tensors after a backward without retain_graph.
  virtual void release_variables() {}

  const std::vector<Edge>& next_edges() const { return next_edges_; }
  std::vector<Edge>& mutable_next_edges() { return next_edges_; }
  void set_next_edges(std::vector<Edge> e) { next_edges_ = std::move(e); }
  size_t num_outputs() const { return next_edges_.size(); }  // = number of op inputs
  bool needs_input_grad(size_t i) const { return i < next_edges_.size() && next_edges_[i].valid(); }

  uint32_t add_input_metadata(const Tensor& t);
  const std::vector<InputMeta>& input_metadata() const { return input_meta_; }
  size_t num_inputs() const { return input_meta_.size(); }  // = number of op outputs

  uint64_t sequence_nr() const { return sequence_nr_; }
  // The profiler's id of the thread that recorded this node (the forward op's thread).
  uint64_t fwd_thread_id() const { return fwd_thread_id_; }

  // Hooks on the gradient arriving at input `index` (tensor.register_hook for non-leaves).
  int add_pre_hook(uint32_t index, TensorHook hook);
  void remove_pre_hook(int id);
  const std::vector<std::tuple<int, uint32_t, TensorHook>>& pre_hooks() const { return pre_hooks_; }
  // retain_grad's hooks run after every other hook on the same gradient, as in PyTorch.
  int add_retains_grad_hook(uint32_t index, TensorHook hook) { return add_hook_to(retains_grad_hooks_, index, std::move(hook)); }
  const std::vector<std::tuple<int, uint32_t, TensorHook>>& retains_grad_hooks() const { return retains_grad_hooks_; }

  // Whole-node hooks (torch.autograd.graph.Node.register_prehook / register_hook). A pre-hook gets
  // the gradients arriving (one per op output) before the node runs; a post-hook gets the
  // gradients it computed (one per op input) and those that arrived. Either may return
  // replacements for the gradients it can change (same count), or an empty list to keep them.
  using NodePreHook = std::function<variable_list(const variable_list& grad_outputs)>;
  using NodePostHook = std::function<variable_list(const variable_list& grad_inputs, const variable_list& grad_outputs)>;
  int add_node_pre_hook(NodePreHook hook);
  int add_node_post_hook(NodePostHook hook);
  void remove_node_hook(int id);
  const std::vector<std::pair<int, NodePreHook>>& node_pre_hooks() const { return node_pre_hooks_; }
  const std::vector<std::pair<int, NodePostHook>>& node_post_hooks() const { return node_post_hooks_; }
  // An opaque slot a language binding may use (Python's Node.metadata dict).
  std::shared_ptr<void>& binding_data() { return binding_data_; }

 protected:
  std::vector<Edge> next_edges_;
  std::vector<InputMeta> input_meta_;
  uint64_t sequence_nr_;
  uint64_t fwd_thread_id_;
  std::vector<std::tuple<int, uint32_t, TensorHook>> pre_hooks_;
  std::vector<std::tuple<int, uint32_t, TensorHook>> retains_grad_hooks_;
  int add_hook_to(std::vector<std::tuple<int, uint32_t, TensorHook>>& list, uint32_t index, TensorHook hook) {
    list.emplace_back(next_hook_id_, index, std::move(hook));
    return next_hook_id_++;
  }
  int next_hook_id_ = 0;
  std::vector<std::pair<int, NodePreHook>> node_pre_hooks_;
  std::vector<std::pair<int, NodePostHook>> node_post_hooks_;
  std::shared_ptr<void> binding_data_;
};

// The sequence number the next Node will get: the profiler stamps it on the forward op whose
// autograd layer creates that node, so the trace links the op to its backward.
uint64_t peek_sequence_nr();

// Drops a node reference without recursing down a long chain of nodes (a 100,000-op graph
// would otherwise overflow the stack when freed).
void release_node(std::shared_ptr<Node>&& node);

// A tensor saved for backward. It keeps the data and the version it had when saved; unpacking
// it after an in-place change, or after the graph was freed, raises PyTorch's errors. An output
// of the node that saves it is held without its grad_fn (which is that node) to avoid a cycle.
class SavedVariable {
 public:
  SavedVariable() = default;
  SavedVariable(const Tensor& t, bool is_output);
  SavedVariable(const SavedVariable&) = default;
  SavedVariable(SavedVariable&&) = default;
  SavedVariable& operator=(const SavedVariable&) = default;
  SavedVariable& operator=(SavedVariable&&) = default;
  ~SavedVariable();

  // The tensor as saved, re-attached to its history (so double backward works). `saved_for`
  // is the node unpacking it (for the output case).
  Tensor unpack(const std::shared_ptr<Node>& saved_for = nullptr) const;
  void reset_data();
  bool defined() const { return was_defined_; }

 private:
  // Raises PyTorch's error when the saved tensor was written in place after it was saved.
  void check_version(const std::shared_ptr<Node>& saved_for) const;

  Tensor data_;  // shares storage and version counter, no autograd meta
  std::shared_ptr<Node> grad_fn_;  // for saved inputs that are not leaves
  std::shared_ptr<TensorImpl> leaf_;  // for saved leaves: the leaf itself (its .grad stays shared)
  uint32_t saved_version_ = 0;
  uint32_t output_nr_ = 0;
  bool is_output_ = false;
  bool requires_grad_ = false;
  bool was_defined_ = false;
  bool released_ = false;
  std::string op_name_;
  // Saved under saved-tensor hooks: data_ is empty, the pack hook's result is kept here and the
  // tensor comes back through unpack_ (saved_tensor_hooks.h).
  std::shared_ptr<void> packed_;
  std::function<Tensor(const std::shared_ptr<void>&)> unpack_;
};

// A node whose backward is a closure: how every built-in op records itself.
class LambdaNode : public Node {
 public:
  // grads: one per output of the op (zeros where none arrived); returns one per input (undefined
  // where self.needs_input_grad(i) is false).
  using Backward = std::function<variable_list(const variable_list& grads, LambdaNode& self)>;
  LambdaNode(std::string name, Backward fn) : name_(std::move(name)), fn_(std::move(fn)) {}
  variable_list apply(variable_list&& grads) override;
  std::string name() const override { return name_; }
  void release_variables() override;
  // Saved tensors live here (not in the closure) so they can be freed and version-checked.
  std::vector<SavedVariable> saved;
  Tensor unpack(size_t i) { return saved[i].unpack(shared_from_this()); }

 private:
  std::string name_;
  Backward fn_;
  bool released_ = false;
};

// Accumulates a leaf's gradient into its .grad.
class AccumulateGrad : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> leaf);
  variable_list apply(variable_list&& grads) override;
  std::string name() const override { return "AccumulateGrad"; }
  const std::shared_ptr<TensorImpl>& leaf() const { return leaf_; }
 private:
  std::shared_ptr<TensorImpl> leaf_;
};

}  // namespace ember::autograd
