// Out-of-place masked_fill as one pure node (passes.h: masked_fills_as_where). Capture records
// `x.masked_fill(mask, v)` as the composite runs it -- a fresh buffer, x copied in, the fill in
// place -- three nodes, one of them writing, which no fusion takes:
//
//   %7 = empty([4, 8], ...)
//   %8 = copy_(%7, %6, False)          ->   %9 = where(%1, %c, %6)     (%c: v as a number)
//   %9 = masked_fill_(%8, %1, -inf)
//
// where(mask, v, x) has the same values (v cast to x's dtype as the fill casts it) and the same
// gradient for x (zero where masked), and joins an elementwise chain: attention's
// `(q @ k^T / scale).masked_fill(causal, -inf)` becomes one pass instead of three. Only where
// nothing else reads the fresh buffer, nothing writes between the copy and the fill, x is a
// floating tensor of the buffer's shape, and v is a float32 number (so casting it once or twice
// gives the same bits). Compile-only, as the matmul epilogues.
#include <cmath>
#include <cstring>

#include "compile/capture_kernel.h"
#include "compile/passes.h"
#include "ember/ops.h"

namespace ember::compiler {
namespace {

bool is(const Node& n, const char* op) { return std::strcmp(n.op, op) == 0; }

bool floating(DType dt) { return dt == kFloat32 || dt == kFloat64 || dt == kBFloat16 || dt == kFloat16; }

// The fill value as a number, when it is one a float32 holds exactly (or inf/nan).
std::optional<double> fill_value(const Arg& a) {
  double v;
  if (a.kind == Arg::Double) v = a.d;
  else if (a.kind == Arg::Int || a.kind == Arg::Bool) v = double(a.i);
  else return std::nullopt;
  if (!std::isfinite(v) || double(float(v)) == v) return v;
  return std::nullopt;
}

}  // namespace

void masked_fills_as_where(Graph& g) {
  const ValueUses uses(g);
  bool changed = false;
  for (size_t m = 0; m < g.nodes.size(); ++m) {
    Node& fill = g.nodes[m];
    if (!is(fill, "masked_fill_") || fill.inputs.size() != 2 || fill.outputs.size() != 1 || fill.args.size() != 3)
      continue;
    const auto value = fill_value(fill.args[2]);
    const ValueId filled = fill.inputs[0], mask = fill.inputs[1];
    if (!value || filled == kNoValue || mask == kNoValue) continue;
    const ValueInfo& f = g.values[size_t(filled)];
    if (f.kind != ValueKind::NodeOutput || uses.sole_reader(filled) != int32_t(m)) continue;
    const int32_t c = f.producer;
    Node& copy = g.nodes[size_t(c)];
    if (!is(copy, "copy_") || copy.inputs.size() != 2 || copy.outputs.size() != 1) continue;
    const ValueId fresh = copy.inputs[0], src = copy.inputs[1];
    if (fresh == kNoValue || src == kNoValue || uses.sole_reader(fresh) != c) continue;
    const ValueInfo &b = g.values[size_t(fresh)], &x = g.values[size_t(src)];
    if (b.kind != ValueKind::NodeOutput || !allocates_uninitialised(g.nodes[size_t(b.producer)].op)) continue;
    if (x.sizes != b.sizes || x.dtype != b.dtype || x.device != b.device || !floating(x.dtype)) continue;
    if (g.values[size_t(mask)].dtype != kBool || copy.grad_enabled != fill.grad_enabled) continue;
    bool writes_between = false;
    for (size_t k = size_t(c) + 1; k < m; ++k) writes_between = writes_between || g.nodes[k].mutates;
    if (writes_between) continue;
    // the number, as capture records a Python float: a 0-dim float64 wrapped number
    ValueInfo number;
    number.kind = ValueKind::Constant;
    number.constant = scalar_tensor(Scalar(*value), {.dtype = kFloat64});
    number.constant.impl()->set_wrapped_number(true);
    number.wrapped_number = true;
    number.dtype = kFloat64;
    number.device = Device(DeviceType::CPU);
    const auto number_id = ValueId(g.values.size());
    g.values.push_back(std::move(number));
    Arg one;
    one.kind = Arg::Tensors;
    one.i = 1;
    auto [name, replay] = detail::replay_for("where", {one, one, one});
    Node where;
    where.op = name;
    where.args = {one, one, one};
    where.replay = std::move(replay);
    where.inputs = {mask, number_id, src};
    where.outputs = fill.outputs;
    where.grad_enabled = fill.grad_enabled;
    g.nodes[m] = std::move(where);
    g.nodes[size_t(b.producer)].outputs.clear();  // the buffer and its copy go (dropped below)
    g.nodes[size_t(c)].outputs.clear();
    g.nodes[size_t(c)].mutates = false;
    ++g.masked_fills;
    changed = true;
  }
  // the buffers and copies go; so does a fill nobody reads (its write kept it, and what it read, alive)
  if (changed) remove_dead_nodes(g);
}

}  // namespace ember::compiler
