// Graph passes (passes.h). All of them assume no aliasing surprises, so folding and merging are
// skipped in graphs that write any tensor in place (a write through one view changes what an
// identical-looking read of another returns); dead code removal keeps every writing node.
#include "compile/passes.h"

#include <cstring>
#include <map>
#include <tuple>

namespace ember::compiler {

bool is_pure(const Node& n) {
  // (an opaque node's Python arguments are baked into its replay, invisible to a comparison)
  return !n.opaque() && !n.mutates && !n.random() && !allocates_uninitialised(n.op);
}

bool overwrites_first_argument(const char* op) {
  static const char* const kOps[] = {"fill_", "copy_", "uniform_", "normal_", "random_", "bernoulli_",
                                     "exponential_", "log_normal_"};
  for (const char* o : kOps)
    if (std::strcmp(o, op) == 0) return true;
  return false;
}

bool allocates_uninitialised(const char* op) { return std::strcmp(op, "empty") == 0 || std::strcmp(op, "empty_strided") == 0; }

namespace {

// A write that gives a fresh `empty` its contents (a factory: ones = empty + fill_): no other
// view of that buffer exists yet, so it hides nothing from the passes.
bool initialises_fresh_buffer(const Graph& g, const Node& n) {
  if (!n.mutates || n.inputs.empty() || n.inputs[0] == kNoValue || !overwrites_first_argument(n.op)) return false;
  const ValueInfo& self = g.values[size_t(n.inputs[0])];
  return self.kind == ValueKind::NodeOutput && allocates_uninitialised(g.nodes[size_t(self.producer)].op);
}

// Values computed from the graph's own constants alone become constants: the capture already
// computed them. (Not from external tensors: they may change between calls.)
// A factory's fill (deterministic: not the random fills) folds too.
void fold_constants(Graph& g, const std::vector<Tensor>& captured) {
  for (auto& n : g.nodes) {
    const bool factory = initialises_fresh_buffer(g, n) && !n.random();
    if ((!is_pure(n) && !factory) || n.inputs.empty() || n.outputs.empty()) continue;
    bool all_constant = true;
    for (size_t i = factory ? 1 : 0; i < n.inputs.size(); ++i) {
      const ValueId v = n.inputs[i];
      all_constant = all_constant && (v == kNoValue || (g.values[size_t(v)].kind == ValueKind::Constant &&
                                                        !g.values[size_t(v)].external));
    }
    if (!all_constant) continue;
    for (ValueId v : n.outputs) {
      auto& info = g.values[size_t(v)];
      info.kind = ValueKind::Constant;
      info.constant = captured[size_t(v)];
      info.producer = -1;
    }
    n.outputs.clear();  // dead now: the pass below drops it
    n.mutates = false;
    ++g.constants_folded;
  }
}

// A pure node that repeats an earlier one (same op, inputs and arguments) reuses its outputs.
void merge_common(Graph& g) {
  std::map<std::tuple<std::string, std::vector<ValueId>, std::string>, int32_t> seen;
  std::vector<ValueId> replace(g.values.size());
  for (size_t v = 0; v < replace.size(); ++v) replace[v] = ValueId(v);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    auto& n = g.nodes[i];
    for (auto& v : n.inputs)
      if (v != kNoValue) v = replace[size_t(v)];
    if (!is_pure(n) || n.outputs.empty()) continue;
    auto key = std::make_tuple(std::string(n.op), n.inputs, n.attrs());
    auto [it, fresh] = seen.emplace(key, int32_t(i));
    if (fresh) continue;
    const auto& first = g.nodes[size_t(it->second)];
    for (size_t k = 0; k < n.outputs.size() && k < first.outputs.size(); ++k) replace[size_t(n.outputs[k])] = first.outputs[k];
    n.outputs.clear();
    ++g.common_merged;
  }
  for (auto& v : g.outputs) v = replace[size_t(v)];
}

// Nodes whose results nobody reads (and that write nothing) go.
void remove_dead(Graph& g) {
  std::vector<char> live(g.values.size(), 0);
  for (ValueId v : g.outputs) live[size_t(v)] = 1;
  std::vector<char> keep(g.nodes.size(), 0);
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const auto& n = g.nodes[i];
    bool needed = n.mutates;
    for (ValueId v : n.outputs) needed = needed || live[size_t(v)];
    if (!needed) continue;
    keep[i] = 1;
    for (ValueId v : n.inputs)
      if (v != kNoValue) live[size_t(v)] = 1;
  }
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (keep[i]) kept.push_back(std::move(g.nodes[i]));
    else ++g.dead_removed;
  }
  g.nodes = std::move(kept);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId v : g.nodes[i].outputs) g.values[size_t(v)].producer = int32_t(i);
  // constants nobody reads anymore release their tensors
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].kind == ValueKind::Constant && !live[v]) g.values[v].constant = Tensor();
}

// relu then max pooling is max pooling then relu: relu is monotone, so it commutes with a max,
// bit for bit, and the gradient reaches the same element or is zero either way (a window whose
// max is <= 0 gives 0 through relu's gradient in both orders; a NaN wins the max and passes
// relu's gradient in both). The relu then runs on the pooled tensor, a quarter of the elements
// for 2x2 windows, forward and backward (a CNN's conv -> relu -> pool). Only where the relu's
// result feeds the pool alone and the pool's indices go unread (they could differ at ties
// between non-positive values).
void pool_before_relu(Graph& g) {
  ValueUses uses(g);
  auto& readers = uses.readers;
  auto& returned = uses.returned;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& relu = g.nodes[i];
    if (std::strcmp(relu.op, "relu") != 0 || relu.inputs.size() != 1 || relu.outputs.size() != 1 ||
        relu.inputs[0] == kNoValue)
      continue;
    const ValueId x = relu.inputs[0], a = relu.outputs[0];
    if (returned[size_t(a)] || readers[size_t(a)].size() != 1) continue;
    const size_t j = size_t(readers[size_t(a)][0]);
    Node& pool = g.nodes[j];
    if (std::strcmp(pool.op, "max_pool2d_with_indices") != 0 || pool.inputs.size() != 1 || pool.outputs.size() != 2 ||
        pool.grad_enabled != relu.grad_enabled)
      continue;
    const ValueId pooled = pool.outputs[0], indices = pool.outputs[1];
    if (!readers[size_t(indices)].empty() || returned[size_t(indices)]) continue;
    // the pool takes x and makes a new value; the relu of that takes over the pooled value's id
    // (its readers stay as they are); the full-size relu value is gone
    const ValueId raw = ValueId(g.values.size());
    g.values.push_back(g.values[size_t(pooled)]);
    readers.emplace_back();
    returned.push_back(0);
    pool.inputs[0] = x;
    pool.outputs[0] = raw;
    relu.inputs[0] = raw;
    relu.outputs[0] = pooled;
    g.values[size_t(a)].producer = -1;
    std::swap(g.nodes[i], g.nodes[j]);  // the pool first, where the relu was
    for (size_t k : {i, j})
      for (ValueId v : g.nodes[k].outputs) g.values[size_t(v)].producer = int32_t(k);
    ++g.pools_before_relu;
  }
}

}  // namespace

ValueUses::ValueUses(const Graph& g) : readers(g.values.size()), returned(g.values.size(), 0) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId v : g.nodes[i].inputs)
      if (v != kNoValue) readers[size_t(v)].push_back(int32_t(i));
  for (ValueId v : g.outputs) returned[size_t(v)] = 1;
}

bool writes_shared_tensors(const Graph& g) {
  for (const auto& n : g.nodes)
    if (n.mutates && !initialises_fresh_buffer(g, n)) return true;
  return false;
}

void remove_dead_nodes(Graph& g) { remove_dead(g); }

void run_graph_passes(Graph& g, const std::vector<Tensor>& captured, bool simplify) {
  if (simplify && !writes_shared_tensors(g)) {
    if (!captured.empty()) fold_constants(g, captured);
    merge_common(g);
  }
  remove_dead(g);
  if (simplify && !writes_shared_tensors(g)) pool_before_relu(g);
}

}  // namespace ember::compiler
