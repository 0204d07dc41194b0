// Matmul epilogues (passes.h: fuse_matmul_epilogues). A Linear is captured as addmm(bias, x, W^T),
// or mm(x, W^T) without a bias (with views around it for 3-d inputs); when the one reader of its result is a relu, a gelu or a
// residual add of a same-shaped tensor, the three become one _addmm_epilogue node:
//
//   %9 = addmm(%2, %7, %8, 1, 1)            %9, %_ = _addmm_epilogue(%2, %7, %8, None, 1, False)
//   %10 = relu(%9)                     ->   (%10 is %9's value, under %10's id)
//
//   %35 = addmm(%8, %34, %33, 1, 1)         %r = view(%0, [1024, 256])
//   %36 = view(%35, [8, 128, 256])     ->   %f, %_ = _addmm_epilogue(%8, %34, %33, %r, 0, False)
//   %37 = add(%0, %36, 1)                   %37 = view(%f, [8, 128, 256])
//
// The fused node sits where the reader was (the residual exists there), so the graph's other
// reads keep their order. Only in graphs that write no shared tensor in place: moving the
// product's reads later is safe only when nothing can change its operands in between.
#include <cstring>

#include "compile/capture_kernel.h"
#include "compile/fusion.h"
#include "compile/passes.h"

namespace ember::compiler {
namespace {

bool is(const Node& n, const char* op) { return std::strcmp(n.op, op) == 0; }
bool is_one(const Arg& a) { return (a.kind == Arg::Int && a.i == 1) || (a.kind == Arg::Double && a.d == 1.0); }

Arg tensors_arg(int64_t slots) {
  Arg a;
  a.kind = Arg::Tensors;
  a.i = slots;
  return a;
}

// A node calling `op` with these arguments, as capture would have recorded it.
Node make_node(const char* op, std::vector<Arg> args, std::vector<ValueId> inputs, std::vector<ValueId> outputs,
               bool grad_enabled) {
  Node n;
  auto [name, replay] = detail::replay_for(op, args);
  n.op = name;
  n.args = std::move(args);
  n.replay = std::move(replay);
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.grad_enabled = grad_enabled;
  return n;
}

Node make_view(ValueId in, ValueId out, const Shape& sizes, bool grad_enabled) {
  Arg shape;
  shape.kind = Arg::Ints;
  shape.ints.assign(sizes.begin(), sizes.end());
  return make_node("view", {tensors_arg(1), shape}, {in}, {out}, grad_enabled);
}

// The dtypes and device the CPU's fused kernel takes (others would compose the same ops again).
bool fusable(const ValueInfo& v) { return v.device.is_cpu() && (v.dtype == kFloat32 || v.dtype == kFloat64); }

struct Match {
  int32_t addmm = -1, view = -1, reader = -1;  // the product (addmm or mm), its reshape, its reader
  ValueId bias = kNoValue, mat1 = kNoValue, mat2 = kNoValue;
  int64_t activation = 0;         // EpilogueActivation's codes
  ValueId residual = kNoValue;    // the add's other operand
};

}  // namespace

void fuse_matmul_epilogues(Graph& g) {
  if (writes_shared_tensors(g)) return;
  const ValueUses uses(g);
  auto sole_reader = [&](ValueId v) { return uses.sole_reader(v); };

  std::vector<Match> matches;
  std::vector<char> taken(g.nodes.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& mm = g.nodes[i];
    // a Linear with a bias (addmm(bias, x, W^T, 1, 1)) or without one (mm(x, W^T))
    const bool with_bias = is(mm, "addmm") && mm.inputs.size() == 3 && mm.args.size() == 5 && is_one(mm.args[3]) &&
                           is_one(mm.args[4]);
    if (!with_bias && !(is(mm, "mm") && mm.inputs.size() == 2 && mm.args.size() == 2)) continue;
    Match m;
    m.bias = with_bias ? mm.inputs[0] : kNoValue;
    m.mat1 = mm.inputs[with_bias ? 1 : 0];
    m.mat2 = mm.inputs[with_bias ? 2 : 1];
    const ValueId product = mm.outputs[0];
    if (m.mat1 == kNoValue || m.mat2 == kNoValue || (with_bias && m.bias == kNoValue)) continue;
    const ValueInfo& pv = g.values[size_t(product)];
    if (!fusable(pv) || pv.sizes.size() != 2 || g.values[size_t(m.mat1)].dtype != pv.dtype) continue;
    if (with_bias) {
      const ValueInfo& bv = g.values[size_t(m.bias)];
      if (bv.sizes.size() != 1 || bv.sizes[0] != pv.sizes[1] || bv.dtype != pv.dtype) continue;
    }
    m.addmm = int32_t(i);
    ValueId chain = product;
    int32_t r = sole_reader(chain);
    if (r >= 0 && is(g.nodes[size_t(r)], "view")) {  // a reshape to (..., N): the same rows
      const ValueId viewed = g.nodes[size_t(r)].outputs[0];
      if (g.values[size_t(viewed)].sizes.empty() || g.values[size_t(viewed)].sizes.back() != pv.sizes[1]) continue;
      m.view = r;
      chain = viewed;
      r = sole_reader(chain);
    }
    if (r < 0 || taken[size_t(r)]) continue;
    const Node& c = g.nodes[size_t(r)];
    if (c.grad_enabled != mm.grad_enabled || (m.view >= 0 && g.nodes[size_t(m.view)].grad_enabled != mm.grad_enabled))
      continue;
    if (is(c, "relu") && c.inputs.size() == 1) {
      m.activation = 1;
    } else if (is(c, "gelu") && c.inputs.size() == 1 && c.args.size() == 2 && c.args[1].kind == Arg::String &&
               (c.args[1].s == "none" || c.args[1].s == "tanh")) {
      m.activation = c.args[1].s == "tanh" ? 3 : 2;
    } else if (is(c, "add") && c.inputs.size() == 2 && c.args.size() == 3 && is_one(c.args[2]) &&
               (c.inputs[0] == chain) != (c.inputs[1] == chain)) {
      const ValueId other = c.inputs[0] == chain ? c.inputs[1] : c.inputs[0];
      const ValueInfo& ov = g.values[size_t(other)];
      const ValueInfo& cv = g.values[size_t(c.outputs[0])];
      // a residual of the result's own shape, dtype and device (no broadcast, no promotion)
      if (other == kNoValue || ov.sizes != cv.sizes || ov.dtype != pv.dtype || ov.device != pv.device ||
          cv.dtype != pv.dtype || !fusion_detail::is_contiguous(ov))
        continue;
      m.residual = other;
    } else {
      continue;
    }
    m.reader = r;
    taken[size_t(r)] = 1;
    matches.push_back(m);
  }
  if (matches.empty()) return;

  // rebuild the node list: the product (and its view) go, the reader becomes the fused node
  std::vector<std::vector<Node>> replace_at(g.nodes.size());
  std::vector<char> drop(g.nodes.size(), 0);
  auto new_value = [&](const ValueInfo& like) {
    g.values.push_back(like);
    g.values.back().kind = ValueKind::NodeOutput;
    return ValueId(g.values.size() - 1);
  };
  for (const Match& m : matches) {
    const Node& mm = g.nodes[size_t(m.addmm)];
    const Node& c = g.nodes[size_t(m.reader)];
    const ValueInfo product = g.values[size_t(mm.outputs[0])];
    const ValueId result = c.outputs[0];
    const bool grad = c.grad_enabled;
    std::vector<Node>& seq = replace_at[size_t(m.reader)];
    ValueId residual = m.residual;
    if (residual != kNoValue && g.values[size_t(residual)].sizes != product.sizes) {
      ValueInfo flat = product;
      flat.requires_grad = g.values[size_t(residual)].requires_grad;
      const ValueId r2 = new_value(flat);
      seq.push_back(make_view(residual, r2, product.sizes, grad));
      residual = r2;
    }
    const bool same_shape = g.values[size_t(result)].sizes == product.sizes;
    ValueInfo fused_info = product;
    fused_info.requires_grad = g.values[size_t(result)].requires_grad;
    const ValueId fused = same_shape ? result : new_value(fused_info);
    ValueInfo pre_info = product;
    const ValueId pre = new_value(pre_info);  // undefined on every run (save_pre is off)
    Arg activation;
    activation.kind = Arg::Int;
    activation.i = m.activation;
    Arg save_pre;
    save_pre.kind = Arg::Bool;
    save_pre.i = 0;
    seq.push_back(make_node("_addmm_epilogue",
                            {tensors_arg(1), tensors_arg(1), tensors_arg(1), tensors_arg(1), activation, save_pre},
                            {m.bias, m.mat1, m.mat2, residual}, {fused, pre}, grad));
    if (!same_shape) seq.push_back(make_view(fused, result, g.values[size_t(result)].sizes, grad));
    drop[size_t(m.addmm)] = 1;
    if (m.view >= 0) drop[size_t(m.view)] = 1;
    g.values[size_t(mm.outputs[0])].producer = -1;
    if (m.view >= 0) g.values[size_t(g.nodes[size_t(m.view)].outputs[0])].producer = -1;
    ++g.matmul_epilogues;
  }
  std::vector<Node> nodes;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!replace_at[i].empty()) {
      for (Node& n : replace_at[i]) nodes.push_back(std::move(n));
    } else if (!drop[i]) {
      nodes.push_back(std::move(g.nodes[i]));
    }
  }
  g.nodes = std::move(nodes);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId v : g.nodes[i].outputs) g.values[size_t(v)].producer = int32_t(i);
}

}  // namespace ember::compiler
