// The backward engine: runs the graph from the roots in dependency order, each node once,
// with an explicit work queue (no recursion, so chains of any length are fine).
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "autograd/meta.h"
#include "ember/autograd/anomaly_mode.h"
#include "ember/compile/capture.h"
#include "profiler/recorder.h"
#include "ember/ops.h"

namespace ember::autograd {

namespace {

// A node pre-hook's replacement gradients (an empty result keeps them).
void run_node_pre_hook(const Node& n, const Node::NodePreHook& hook, variable_list& grads) {
  variable_list r = hook(grads);
  if (r.empty()) return;
  EMBER_CHECK(r.size() == grads.size(), "hook '", n.name(), "' has returned an incorrect number of values (got ",
              r.size(), ", but expected ", grads.size(), ")");
  grads = std::move(r);
}

// Anomaly mode: the first node whose gradient has a NaN stops backward, named as torch names it.
void check_no_nan(const Node& n, const variable_list& outputs) {
  for (size_t k = 0; k < outputs.size(); ++k) {
    const Tensor& g = outputs[k];
    if (!g.defined() || !is_floating_or_complex(g.dtype())) continue;
    if (g.isnan().any().item<bool>())
      throw Error(detail::cat("Function '", n.name(), "' returned nan values in its ", k, "th output."));
  }
}

struct CaptureTarget {
  Node* node;
  uint32_t input_nr;
  size_t slot;  // index in the result list
};

// Adds a gradient into a node's input buffer, checking it against what the node expects.
void accumulate(variable_list& buffer, const Node& target, uint32_t input_nr, Tensor g, const Node& producer,
                size_t producer_index) {
  const InputMeta& meta = target.input_metadata()[input_nr];
  if (!(IntArrayRef(g.sizes()) == IntArrayRef(meta.shape))) {
    EMBER_CHECK(g.numel() == shape_numel(meta.shape) || g.dim() == 0,
                "Function ", producer.name(), " returned an invalid gradient at index ", producer_index, " - got ",
                g.sizes(), " but expected shape compatible with ", meta.shape);
    g = g.dim() == 0 ? g.expand(meta.shape) : g.reshape(meta.shape);
  }
  if (g.dtype() != meta.dtype && is_floating_or_complex(meta.dtype)) g = g.to(meta.dtype);
  Tensor& slot = buffer[input_nr];
  if (!slot.defined()) {
    slot = g;
    return;
  }
  // Into the buffer's own tensor when nothing else can see it (torch's InputBuffer does the same):
  // a weight used at every step of a recurrent layer gathers its gradient with one add_ per step
  // instead of an allocation and a fresh sum (a quarter of an LSTM's backward).
  if (!GradMode::is_enabled() && slot.impl_ptr().use_count() == 1 && storage_held_only_by(slot) &&
      slot.is_contiguous() && slot.dtype() == g.dtype() && slot.device() == g.device() && !slot.requires_grad()) {
    slot.add_(g);
    return;
  }
  slot = slot + g;
}

}  // namespace

// Runs backward from (root edges, root grads). With captures, only the nodes that lead to them run,
// and the gradients arriving at them are returned instead of accumulated.
variable_list run_engine(const std::vector<Edge>& roots, const variable_list& root_grads, bool keep_graph,
                         bool create_graph, const std::vector<Edge>& captures) {
  // 1. Every node reachable from the roots, in DFS discovery order.
  std::vector<Node*> nodes;
  std::unordered_map<Node*, size_t> index;
  std::vector<Node*> stack;
  for (const auto& r : roots)
    if (r.fn && !index.count(r.fn.get())) { index[r.fn.get()] = nodes.size(); nodes.push_back(r.fn.get()); stack.push_back(r.fn.get()); }
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const auto& e : n->next_edges()) {
      if (!e.fn || index.count(e.fn.get())) continue;
      index[e.fn.get()] = nodes.size();
      nodes.push_back(e.fn.get());
      stack.push_back(e.fn.get());
    }
  }
  // 2. Which nodes must run: all of them for backward(); for grad(), those on a path to a capture.
  std::vector<char> needed(nodes.size(), captures.empty() ? 1 : 0);
  std::vector<char> is_capture_node(nodes.size(), 0);
  if (!captures.empty()) {
    for (const auto& c : captures)
      if (c.fn && index.count(c.fn.get())) needed[index[c.fn.get()]] = is_capture_node[index[c.fn.get()]] = 1;
    // Propagate "needed" to predecessors until nothing changes (iterate over a reverse
    // topological order computed with Kahn's algorithm).
    std::vector<int> indeg(nodes.size(), 0);
    for (Node* n : nodes)
      for (const auto& e : n->next_edges())
        if (e.fn) ++indeg[index[e.fn.get()]];
    std::vector<Node*> order;
    std::vector<Node*> ready;
    for (size_t i = 0; i < nodes.size(); ++i) if (indeg[i] == 0) ready.push_back(nodes[i]);
    while (!ready.empty()) {
      Node* n = ready.back();
      ready.pop_back();
      order.push_back(n);
      for (const auto& e : n->next_edges())
        if (e.fn && --indeg[index[e.fn.get()]] == 0) ready.push_back(e.fn.get());
    }
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      size_t i = index[*it];
      for (const auto& e : (*it)->next_edges())
        if (e.fn && needed[index[e.fn.get()]]) needed[i] = 1;
    }
  }
  // 3. Dependencies among needed nodes.
  std::vector<int> deps(nodes.size(), 0);
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!needed[i]) continue;
    for (const auto& e : nodes[i]->next_edges())
      if (e.fn && needed[index[e.fn.get()]]) ++deps[index[e.fn.get()]];
  }
  std::vector<variable_list> buffers(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) buffers[i].resize(nodes[i]->num_inputs());
  // Root gradients enter the buffers of the root nodes.
  struct GraphRootProducer final : Node {
    variable_list apply(variable_list&&) override { return {}; }
    std::string name() const override { return "GraphRoot"; }
  } graph_root;
  for (size_t r = 0; r < roots.size(); ++r) {
    if (!roots[r].fn) continue;
    size_t i = index[roots[r].fn.get()];
    accumulate(buffers[i], *nodes[i], roots[r].input_nr, root_grads[r], graph_root, r);
  }
  auto later_first = [](Node* a, Node* b) { return a->sequence_nr() < b->sequence_nr(); };
  std::priority_queue<Node*, std::vector<Node*>, decltype(later_first)> queue(later_first);
  std::unordered_set<Node*> queued;
  for (const auto& r : roots) {
    if (!r.fn) continue;
    size_t i = index[r.fn.get()];
    if (needed[i] && deps[i] == 0 && queued.insert(nodes[i]).second) queue.push(nodes[i]);
  }

  variable_list captured(captures.size());
  AutoGradMode grad_mode(create_graph);
  while (!queue.empty()) {
    Node* n = queue.top();
    queue.pop();
    size_t i = index[n];
    variable_list grads = std::move(buffers[i]);
    std::optional<profiler::detail::BackwardNodeScope> profiled;
    if (profiler::detail::recording_ops()) profiled.emplace(n->name(), int64_t(n->sequence_nr()), n->fwd_thread_id());
    // Tensor hooks on the gradients arriving here (register_hook on non-leaves, retain_grad).
    for (const auto* hooks : {&n->pre_hooks(), &n->retains_grad_hooks()}) {
      for (const auto& [id, input_nr, hook] : *hooks) {
        if (input_nr >= grads.size() || !grads[input_nr].defined()) continue;
        Tensor r = hook(grads[input_nr]);
        if (r.defined()) grads[input_nr] = r;
      }
    }
    if (is_capture_node[i]) {
      for (size_t c = 0; c < captures.size(); ++c)
        if (captures[c].fn.get() == n) captured[c] = grads[captures[c].input_nr];
      if (dynamic_cast<AccumulateGrad*>(n)) continue;  // grad() never touches .grad
    }
    bool any = false;
    for (const auto& g : grads) any = any || g.defined();
    variable_list outputs;
    if (any) {
      for (const auto& [id, hook] : n->node_pre_hooks()) run_node_pre_hook(*n, hook, grads);
      variable_list arrived;
      if (!n->node_post_hooks().empty()) arrived = grads;
      if (profiled) profiled->begin_apply(grads);
      outputs = n->apply(std::move(grads));
      if (profiled) profiled->end_apply();
      if (anomaly_check_nan()) check_no_nan(*n, outputs);
      for (const auto& [id, hook] : n->node_post_hooks()) {
        variable_list r = hook(outputs, arrived);
        if (r.empty()) continue;
        EMBER_CHECK(r.size() == outputs.size(), "hook '", n->name(), "' has returned an incorrect number of values "
                    "(got ", r.size(), ", but expected ", outputs.size(), ")");
        outputs = std::move(r);
      }
    }
    if (!keep_graph) n->release_variables();
    const auto& edges = n->next_edges();
    EMBER_CHECK(outputs.empty() || outputs.size() == edges.size(), "Function ", n->name(),
                " returned an incorrect number of gradients (expected ", edges.size(), ", got ", outputs.size(), ")");
    for (size_t k = 0; k < edges.size(); ++k) {
      const Edge& e = edges[k];
      if (!e.fn) continue;
      size_t j = index[e.fn.get()];
      if (!needed[j]) continue;
      if (k < outputs.size() && outputs[k].defined()) accumulate(buffers[j], *e.fn, e.input_nr, outputs[k], *n, k);
      if (--deps[j] == 0 && queued.insert(e.fn.get()).second) queue.push(e.fn.get());
    }
  }
  return captured;
}

namespace {

std::vector<Edge> root_edges(const variable_list& outputs) {
  std::vector<Edge> roots;
  for (size_t i = 0; i < outputs.size(); ++i) {
    EMBER_CHECK(outputs[i].defined(), "autograd: output ", i, " is undefined");
    Edge e = gradient_edge(outputs[i]);
    EMBER_CHECK(e.valid(), "element ", i, " of tensors does not require grad and does not have a grad_fn");
    roots.push_back(e);
  }
  return roots;
}

variable_list root_gradients(const variable_list& outputs, const variable_list& grad_outputs) {
  EMBER_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(), "grad can be implicitly created only for "
              "scalar outputs; got ", grad_outputs.size(), " gradients for ", outputs.size(), " outputs");
  variable_list grads;
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor g = grad_outputs.empty() ? Tensor() : grad_outputs[i];
    if (!g.defined()) {
      EMBER_CHECK(outputs[i].numel() == 1, "grad can be implicitly created only for scalar outputs");
      EMBER_CHECK(!is_complex(outputs[i].dtype()), "grad can be implicitly created only for real scalar outputs");
      g = ones_like(outputs[i]);
    } else {
      EMBER_CHECK(IntArrayRef(g.sizes()) == IntArrayRef(outputs[i].sizes()), "Mismatch in shape: grad_output[", i,
                  "] has a shape of ", g.sizes(), " and output[", i, "] has a shape of ", outputs[i].sizes(), ".");
    }
    grads.push_back(g);
  }
  return grads;
}

}  // namespace

variable_list grad(const variable_list& outputs, const variable_list& inputs, const variable_list& grad_outputs,
                   std::optional<bool> retain_graph, bool create_graph, bool allow_unused) {
  compiler::detail::note_break("autograd.grad() runs a backward pass");
  std::vector<Edge> roots = root_edges(outputs);
  variable_list grads = root_gradients(outputs, grad_outputs);
  std::vector<Edge> captures;
  for (const auto& in : inputs) {
    EMBER_CHECK(in.requires_grad(), "One of the differentiated Tensors does not require grad");
    captures.push_back(gradient_edge(in));
  }
  variable_list result = run_engine(roots, grads, retain_graph.value_or(create_graph), create_graph, captures);
  for (size_t i = 0; i < result.size(); ++i) {
    EMBER_CHECK(allow_unused || result[i].defined(),
                "One of the differentiated Tensors appears to not have been used in the graph. Set allow_unused=True "
                "if this is the desired behavior.");
    if (result[i].defined() && !create_graph) result[i] = result[i].detach();
  }
  return result;
}

void backward(const variable_list& outputs, const variable_list& grad_outputs, std::optional<bool> retain_graph,
              bool create_graph, const variable_list& inputs) {
  compiler::detail::note_break("Tensor.backward() runs a backward pass");
  if (!inputs.empty()) {
    // Accumulate only into the given tensors.
    variable_list gs = grad(outputs, inputs, grad_outputs, retain_graph, create_graph, /*allow_unused=*/true);
    NoGradGuard no_grad;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!gs[i].defined()) continue;
      Tensor& slot = const_cast<Tensor&>(inputs[i]).mutable_grad();
      slot = slot.defined() ? slot + gs[i] : gs[i];
    }
    return;
  }
  std::vector<Edge> roots = root_edges(outputs);
  variable_list grads = root_gradients(outputs, grad_outputs);
  run_engine(roots, grads, retain_graph.value_or(create_graph), create_graph, {});
}

}  // namespace ember::autograd
