// Row groups (fusion.h): reductions over the last dim with the elementwise nodes around them, one
// kernel per group, one pass over each row per reduction and one to store. What a softmax, an
// RMSNorm or a layer norm written by hand becomes:
//   e = (x - x.amax(-1, keepdim=True)).exp(); p = e / e.sum(-1, keepdim=True)
//   y = x * (x.pow(2).mean(-1, keepdim=True) + eps).rsqrt() * w
// Values are full-size (the rows) or one number per row; every pass recomputes the full-size
// values it needs from the operands (a few flops each, where eager writes and rereads a tensor
// per op). The reductions keep 16 partial results per row and combine them at its end, so the
// loops vectorise; the sums therefore round differently from eager's (to within float rounding,
// not bit for bit as the elementwise groups are). Where gradients are wanted, the kernel's source
// holds a generated backward too (emit_backward_body).
#include <algorithm>
#include <cstring>
#include <optional>
#include <unordered_map>

#include "compile/fusion.h"

namespace ember::compiler {
namespace {

using fusion_detail::is_contiguous;
using fusion_detail::numel;

enum class Reduce { None, Sum, Mean, Max, Min };

enum class Level : uint8_t { Full, Row };

struct RowBuilder {
  const Graph& g;
  FusedGroup grp;
  Shape row_sizes;  // sizes with the last dim 1
  std::unordered_map<ValueId, Level> produced;
  std::unordered_map<ValueId, size_t> operand_of;
  bool has_reduction = false;

  explicit RowBuilder(const Graph& graph) : g(graph) {}

  // A reduction over the last dim with keepdim: sum/mean (no dtype), amax/amin.
  Reduce reduction(const Node& n) const {
    const std::string op = n.op;
    const bool sum = op == "sum" || op == "mean";
    if (!sum && op != "amax" && op != "amin") return Reduce::None;
    if (n.inputs.size() != 1 || n.args.size() != (sum ? 4u : 3u)) return Reduce::None;
    const ValueInfo& in = g.values[size_t(n.inputs[0])];
    const int64_t rank = int64_t(in.sizes.size());
    const Arg& dims = n.args[1];
    if (rank < 1 || dims.kind != Arg::Ints || dims.ints.size() != 1 || (dims.ints[0] != -1 && dims.ints[0] != rank - 1))
      return Reduce::None;
    if (n.args[2].kind != Arg::Bool || n.args[2].i != 1) return Reduce::None;  // keepdim
    if (sum && n.args[3].kind != Arg::None) return Reduce::None;                // a dtype
    return op == "sum" ? Reduce::Sum : op == "mean" ? Reduce::Mean : op == "amax" ? Reduce::Max : Reduce::Min;
  }

  // How value v enters the group at `level` (nullopt: it cannot).
  std::optional<FusedOperand> operand(ValueId v, Level level) const {
    const ValueInfo& i = g.values[size_t(v)];
    if (!i.device.is_cpu()) return std::nullopt;
    if (numel(i.sizes) == 1 && i.requires_grad) {
      // no gradient for a number, except one that is a per-row operand over one row (its gradient
      // is that row's: read as kScalar it would get none)
      if (i.sizes != row_sizes || i.dtype != kFloat32) return std::nullopt;
      return FusedOperand{v, FusedOperand::kRow, i.dtype};
    }
    if (numel(i.sizes) == 1 && i.sizes.size() <= grp.sizes.size() &&
        (i.dtype == kFloat32 || i.dtype == kFloat64 || i.dtype == kInt64 || i.dtype == kInt32 || i.dtype == kBool))
      return FusedOperand{v, FusedOperand::kScalar, i.dtype};
    if (i.dtype != kFloat32 || !is_contiguous(i)) return std::nullopt;
    if (i.sizes == row_sizes) return FusedOperand{v, FusedOperand::kRow, i.dtype};
    if (level == Level::Row) return std::nullopt;
    if (i.sizes == grp.sizes) return FusedOperand{v, FusedOperand::kFull, i.dtype};
    // a vector over the last dim (leading 1s): a norm's weight
    size_t lead = 0;
    while (lead < i.sizes.size() && i.sizes[lead] == 1) ++lead;
    if (i.sizes.size() - lead == 1 && i.sizes.back() == grp.inner) return FusedOperand{v, FusedOperand::kInner, i.dtype};
    return std::nullopt;
  }

  // The level of an input already in the group, or of an operand that may join.
  std::optional<Level> input_level(ValueId v, Level want) const {
    auto it = produced.find(v);
    if (it != produced.end()) return it->second;
    auto o = operand(v, want);
    if (!o) return std::nullopt;
    return o->kind == FusedOperand::kRow ? Level::Row : o->kind == FusedOperand::kScalar ? want : Level::Full;
  }

  // Whether node n can join, with the group's sizes set (nullopt: no; else its output's level).
  std::optional<Level> joins(const Node& n) const {
    if (n.mutates || n.random() || n.opaque() || n.outputs.size() != 1 || n.inputs.empty()) return std::nullopt;
    const ValueInfo& out = g.values[size_t(n.outputs[0])];
    if (out.dtype != kFloat32 || !out.device.is_cpu() || !is_contiguous(out)) return std::nullopt;
    for (ValueId v : n.inputs)
      if (v == kNoValue) return std::nullopt;
    if (reduction(n) != Reduce::None) {
      // it reduces full rows: the group's own full-size value, or a full-size operand (not one
      // number that only broadcasts to a row, whose reduction is itself)
      if (out.sizes != row_sizes) return std::nullopt;
      const ValueId x = n.inputs[0];
      auto made = produced.find(x);
      if (made != produced.end()) return made->second == Level::Full ? std::optional<Level>(Level::Row) : std::nullopt;
      auto o = operand(x, Level::Full);
      if (!o || o->kind != FusedOperand::kFull) return std::nullopt;
      return Level::Row;
    }
    const Level level = out.sizes == grp.sizes ? Level::Full : out.sizes == row_sizes ? Level::Row
                        : static_cast<Level>(255);
    if (level != Level::Full && level != Level::Row) return std::nullopt;
    std::vector<std::string> names(n.inputs.size(), "x");
    if (!fusion_detail::expression(g, n, names)) return std::nullopt;
    if (out.requires_grad && !fusion_detail::derivative(g, n, names, "y", "g")) return std::nullopt;
    for (ValueId v : n.inputs) {
      auto l = input_level(v, level);
      if (!l || (level == Level::Row && *l != Level::Row)) return std::nullopt;
    }
    return level;
  }

  // Starts a group over the shape of n's full-size values (n: a reduction, or elementwise over them).
  bool start(const Node& n) {
    if (n.outputs.size() != 1 || n.inputs.empty() || n.inputs[0] == kNoValue) return false;
    const Shape full = reduction(n) != Reduce::None ? g.values[size_t(n.inputs[0])].sizes
                                                    : g.values[size_t(n.outputs[0])].sizes;
    if (full.empty() || full.back() < 2 || numel(full) == 0) return false;
    grp = FusedGroup();
    grp.rows = true;
    grp.sizes = full;
    grp.inner = full.back();
    row_sizes = full;
    row_sizes.back() = 1;
    produced.clear();
    operand_of.clear();
    has_reduction = false;
    auto l = joins(n);
    if (!l || (*l != Level::Full && reduction(n) == Reduce::None)) return false;
    add(n, *l);
    return true;
  }

  void add(const Node& n, Level level) {
    const Level reads = reduction(n) != Reduce::None ? Level::Full : level;  // a reduction reads full rows
    for (ValueId v : n.inputs) {
      if (produced.count(v) || operand_of.count(v)) continue;
      operand_of[v] = grp.inputs.size();
      grp.inputs.push_back(*operand(v, reads));
    }
    produced[n.outputs[0]] = level;
    has_reduction = has_reduction || reduction(n) != Reduce::None;
    grp.needs_grad = grp.needs_grad || g.values[size_t(n.outputs[0])].requires_grad;
    grp.nodes.push_back(int32_t(&n - g.nodes.data()));
  }
};

// acc with v folded in. max/min keep a NaN once met (v != v), as amax/amin propagate it; written
// as a compare and a select so the 16 lanes vectorise.
std::string combine(Reduce r, const std::string& acc, const std::string& v) {
  if (r == Reduce::Max || r == Reduce::Min) {
    const std::string x = "(" + v + ")";
    return "[&] { const float y = " + x + "; return y " + (r == Reduce::Max ? ">" : "<") + " " + acc + " || y != y ? y : " +
           acc + "; }()";
  }
  return acc + " + " + v;
}

const char* identity(Reduce r) {
  return r == Reduce::Max ? "-__builtin_inff()" : r == Reduce::Min ? "__builtin_inff()" : "0.0f";
}

// Whether value v is one number per row in this group (made at row level, or a per-row operand).
bool per_row(const RowBuilder& b, ValueId v) {
  auto it = b.produced.find(v);
  if (it != b.produced.end()) return it->second == Level::Row;
  auto op = b.operand_of.find(v);
  return op != b.operand_of.end() && b.grp.inputs[op->second].kind == FusedOperand::kRow;
}

// The full-size values up to (not including) node `upto` in a lambda body over element j, the
// operands loaded as needed (the compiler drops what the caller does not use). A value already in
// a row buffer (`filled`) is read from it instead of recomputed.
void emit_full_values(std::ostringstream& os, const RowBuilder& b, size_t upto, const std::string& indent,
                      std::unordered_map<ValueId, std::string>& name, const std::unordered_map<ValueId, int>& filled) {
  const FusedGroup& grp = b.grp;
  for (size_t k = 0; k < grp.inputs.size(); ++k) {
    const auto& o = grp.inputs[k];
    if (o.kind == FusedOperand::kFull) os << indent << "const float a" << k << " = in" << k << "[base + j];\n";
    else if (o.kind == FusedOperand::kInner) os << indent << "const float a" << k << " = in" << k << "[j];\n";
    else continue;
    name[o.value] = "a" + std::to_string(k);
  }
  for (size_t p = 0; p < upto; ++p) {
    const Node& n = b.g.nodes[size_t(grp.nodes[p])];
    if (b.produced.at(n.outputs[0]) != Level::Full) continue;
    const std::string v = "t" + std::to_string(n.outputs[0]);
    name[n.outputs[0]] = v;
    if (filled.count(n.outputs[0])) {
      os << indent << "const float " << v << " = buf" << n.outputs[0] << "[j];  // " << n.op << " (kept)\n";
      continue;
    }
    std::vector<std::string> args;
    for (ValueId x : n.inputs) args.push_back(name.at(x));
    if (std::strcmp(n.op, "div") == 0 && n.attrs() == "None" && per_row(b, n.inputs[1])) {
      // a division by a row's value (a softmax's sum): one reciprocal per row, hoisted out of the
      // loop, and a multiply per element (a division costs several; the result may differ from
      // eager's in the last bit, as the row's sums do)
      os << indent << "const float " << v << " = " << args[0] << " * (1.0f / " << args[1] << ");  // div\n";
      continue;
    }
    os << indent << "const float " << v << " = " << *fusion_detail::expression(b.g, n, args) << ";  // " << n.op << "\n";
  }
}

// The reductions' inputs that nodes after them (or the group's outputs) read again: the pass
// that reduces one keeps it in a row buffer, so later passes read it instead of recomputing it
// (a softmax's exp: computed once, as eager does).
std::unordered_map<ValueId, int> kept_values(const RowBuilder& b) {
  std::unordered_map<ValueId, int> kept;
  const auto& nodes = b.grp.nodes;
  for (size_t p = 0; p < nodes.size(); ++p) {
    const Node& n = b.g.nodes[size_t(nodes[p])];
    if (b.reduction(n) == Reduce::None || !b.produced.count(n.inputs[0])) continue;
    const ValueId v = n.inputs[0];
    bool again = std::find(b.grp.outputs.begin(), b.grp.outputs.end(), v) != b.grp.outputs.end();
    for (size_t q = p + 1; q < nodes.size() && !again; ++q) {
      const auto& ins = b.g.nodes[size_t(nodes[q])].inputs;
      again = std::find(ins.begin(), ins.end(), v) != ins.end();
    }
    if (again) kept[v] = 1;
  }
  return kept;
}

// Per row, at row scope: the per-row operands, then in program order each reduction's pass over
// the row and the per-row nodes (row_name: their names; filled: the row buffers written). With
// `counts`, each amax/amin also counts its ties (the backward shares the gradient among them).
void emit_row_forward(std::ostringstream& os, const RowBuilder& b, const std::unordered_map<ValueId, int>& kept,
                      std::unordered_map<ValueId, std::string>& row_name, std::unordered_map<ValueId, int>& filled,
                      bool counts) {
  const Graph& g = b.g;
  const FusedGroup& grp = b.grp;
  for (size_t k = 0; k < grp.inputs.size(); ++k) {
    const auto& o = grp.inputs[k];
    if (o.kind == FusedOperand::kScalar) row_name[o.value] = "in" + std::to_string(k);
    if (o.kind == FusedOperand::kRow) {
      os << "    const float a" << k << " = in" << k << "[r];\n";
      row_name[o.value] = "a" + std::to_string(k);
    }
  }
  for (size_t p = 0; p < grp.nodes.size(); ++p) {
    const Node& n = g.nodes[size_t(grp.nodes[p])];
    const ValueId out = n.outputs[0];
    if (b.produced.at(out) != Level::Row) continue;
    const std::string v = "t" + std::to_string(out);
    const Reduce r = b.reduction(n);
    if (r == Reduce::None) {
      std::vector<std::string> args;
      for (ValueId x : n.inputs) args.push_back(row_name.at(x));
      os << "    const float " << v << " = " << *fusion_detail::expression(g, n, args) << ";  // " << n.op << "\n";
      row_name[out] = v;
      continue;
    }
    // A pass over the row. An operand that lies in memory (an input, a row buffer) or that later
    // passes read again (a softmax's exp: written to its row buffer first, by a plain loop the
    // compiler vectorises, exp and all) is reduced from there with two vector accumulators
    // (cpu/vec16.h's row_sum and row_extreme: a NaN tracked on the side, so the chain through the
    // accumulators is one instruction). 12288x128 softmax: 1.19 -> 0.98 ms on one thread. Any other operand is
    // accumulated inside the loop that computes it, sixteen lanes at a time: writing it to a
    // scratch row and reading it back made RMSNorm over 768 1.5x slower.
    const ValueId x = n.inputs[0];
    const auto operand = b.operand_of.find(x);
    const auto input_kind = operand == b.operand_of.end() ? FusedOperand::kScalar : grp.inputs[operand->second].kind;
    const char* kind = r == Reduce::Max ? "max" : r == Reduce::Min ? "min" : "sum";
    std::string row;  // where the operand lies, or "" (accumulated as computed)
    if (filled.count(x)) {
      row = "buf" + std::to_string(x);
    } else if (input_kind == FusedOperand::kFull || input_kind == FusedOperand::kInner) {
      row = "in" + std::to_string(operand->second) + (input_kind == FusedOperand::kFull ? " + base" : "");
    } else if (kept.count(x)) {
      row = "buf" + std::to_string(x);
      std::unordered_map<ValueId, std::string> name = row_name;
      os << "    for (int64_t j = 0; j < L; ++j) {\n";
      emit_full_values(os, b, p, "      ", name, filled);
      os << "      " << row << "[j] = " << name.at(x) << ";\n    }\n";
      filled[x] = 1;
    }
    if (!row.empty()) {
      const char* reduce = r == Reduce::Max ? "v16::row_extreme<true>" : r == Reduce::Min ? "v16::row_extreme<false>"
                                                                                           : "v16::row_sum";
      os << "    const float " << v << " = " << reduce << "(" << row << ", L)" << (r == Reduce::Mean ? " / float(L)" : "")
         << ";  // " << n.op << "\n";
      os << "    auto " << v << "_at = [&](int64_t j) -> float { return (" << row << ")[j]; };\n";
    } else {
      os << "    float " << v << "_acc[16];\n    for (int l = 0; l < 16; ++l) " << v << "_acc[l] = " << identity(r) << ";\n";
      os << "    auto " << v << "_at = [&](int64_t j) -> float {\n";
      std::unordered_map<ValueId, std::string> name = row_name;
      emit_full_values(os, b, p, "      ", name, filled);
      os << "      return " << name.at(x) << ";\n    };\n";
      os << "    int64_t " << v << "_j = 0;\n"
         << "    for (; " << v << "_j + 16 <= L; " << v << "_j += 16)\n"
         << "      for (int l = 0; l < 16; ++l) " << v << "_acc[l] = "
         << combine(r, v + "_acc[l]", v + "_at(" + v + "_j + l)") << ";\n"
         << "    for (; " << v << "_j < L; ++" << v << "_j) " << v << "_acc[0] = "
         << combine(r, v + "_acc[0]", v + "_at(" + v + "_j)") << ";\n"
         << "    const float " << v << " = lanes_" << kind << "(" << v << "_acc)" << (r == Reduce::Mean ? " / float(L)" : "")
         << ";  // " << n.op << "\n";
    }
    if (counts && (r == Reduce::Max || r == Reduce::Min))
      os << "    float " << v << "_ties = 0.0f;\n    for (int64_t j = 0; j < L; ++j) " << v << "_ties += " << v
         << "_at(j) == " << v << " ? 1.0f : 0.0f;\n";
    row_name[out] = v;
  }
}

const char* const kPrelude =
    "\n#include <cstdint>\n#include <memory>\n#include \"cpu/elementwise_math.h\"\n#include \"cpu/vec16.h\"\n\n"
    "namespace {\n"
    "namespace f = ember::formula;\nusing M = ember::cpu::CpuMath;\nnamespace v16 = ember::cpu::vec16;\n"
    "struct Args { int64_t numel, inner; const void* const* in; void* const* out; };\n"
    // 16 partial results combined by vector shuffles (cpu/vec16.h), not a scalar tree that
    // mispredicts; max/min keep a NaN once met, as amax/amin
    "inline float lanes_sum(const float* acc) { return v16::sum(v16::load(acc)); }\n"
    "inline float lanes_max(const float* acc) {\n"
    "  return v16::fold(v16::load(acc), [](v16::F a, v16::F b) { return (b > a) | (b != b) ? b : a; });\n}\n"
    "inline float lanes_min(const float* acc) {\n"
    "  return v16::fold(v16::load(acc), [](v16::F a, v16::F b) { return (b < a) | (b != b) ? b : a; });\n}\n\n";

void emit_kept_buffers(std::ostringstream& os, const std::unordered_map<ValueId, int>& kept, const char* prefix = "buf") {
  for (const auto& [v, _] : kept)
    os << "  std::unique_ptr<float[]> " << prefix << "_" << v << "(new float[L]);\n  float* __restrict " << prefix << v
       << " = " << prefix << "_" << v << ".get();\n";
}

// A body's opening: its arguments (struct `args`), the row length, the operand pointers.
void emit_body_head(std::ostringstream& os, const FusedGroup& grp, const char* name, const char* args,
                    const char* extra_param = "") {
  os << "void " << name << "(void* ctx, int64_t r0, int64_t r1" << extra_param << ") {\n  const " << args
     << "& a = *static_cast<const " << args << "*>(ctx);\n  const int64_t L = a.inner;\n";
  fusion_detail::emit_operand_pointers(os, grp);
}

void emit_forward_body(std::ostringstream& os, const RowBuilder& b) {
  const FusedGroup& grp = b.grp;
  emit_body_head(os, grp, "body", "Args");
  for (size_t k = 0; k < grp.outputs.size(); ++k)
    os << "  float* __restrict out" << k << " = static_cast<float*>(a.out[" << k << "]);\n";
  const auto kept = kept_values(b);
  emit_kept_buffers(os, kept);
  os << "  for (int64_t r = r0; r < r1; ++r) {\n    const int64_t base = r * L;\n";
  std::unordered_map<ValueId, std::string> row_name;
  std::unordered_map<ValueId, int> filled;
  emit_row_forward(os, b, kept, row_name, filled, /*counts=*/false);
  // the last pass stores the full-size outputs; then the per-row ones
  bool full_outputs = false;
  for (ValueId v : grp.outputs) full_outputs = full_outputs || b.produced.at(v) == Level::Full;
  if (full_outputs) {
    os << "    for (int64_t j = 0; j < L; ++j) {\n";
    std::unordered_map<ValueId, std::string> name = row_name;
    emit_full_values(os, b, grp.nodes.size(), "      ", name, filled);
    for (size_t k = 0; k < grp.outputs.size(); ++k)
      if (b.produced.at(grp.outputs[k]) == Level::Full)
        os << "      out" << k << "[base + j] = " << name.at(grp.outputs[k]) << ";\n";
    os << "    }\n";
  }
  for (size_t k = 0; k < grp.outputs.size(); ++k)
    if (b.produced.at(grp.outputs[k]) == Level::Row) os << "    out" << k << "[r] = " << row_name.at(grp.outputs[k]) << ";\n";
  os << "  }\n}\n\n";
}

// The backward, per row: the forward's per-row values recomputed (and its row buffers filled),
// then the segments of full-size nodes between the reductions in reverse, one pass each: every
// value's gradient from the nodes after it in the segment, from the reduction that ends the
// segment (sum: its gradient; mean: / L; amax/amin: shared among the ties), from the outputs'
// gradients, and from later segments (through a row buffer); per-row values' gradients summed
// over the pass; then the per-row nodes of that stretch in reverse. Operands' gradients are
// full-size buffers (summed to their shapes by the caller) or, for per-row operands, one number
// per row.
void emit_backward_body(std::ostringstream& os, const RowBuilder& b) {
  const Graph& g = b.g;
  const FusedGroup& grp = b.grp;
  const auto& nodes = grp.nodes;
  auto wants = [&](ValueId v) { return g.values[size_t(v)].requires_grad; };
  // segments: reductions at positions red[0..m-1]; segment s holds the full-size nodes between red[s-1] and red[s]
  std::vector<size_t> red;
  for (size_t p = 0; p < nodes.size(); ++p)
    if (b.reduction(g.nodes[size_t(nodes[p])]) != Reduce::None) red.push_back(p);
  const size_t m = red.size();
  auto segment_of_position = [&](size_t p) {
    size_t s = 0;
    while (s < m && red[s] < p) ++s;
    return s;
  };
  std::unordered_map<ValueId, size_t> seg;  // full-size values made in the group
  for (size_t p = 0; p < nodes.size(); ++p) {
    const ValueId v = g.nodes[size_t(nodes[p])].outputs[0];
    if (b.produced.at(v) == Level::Full) seg[v] = segment_of_position(p);
  }
  // values whose gradient arrives from a later segment's pass: kept in a row buffer
  std::unordered_map<ValueId, int> carried;
  for (size_t p = 0; p < nodes.size(); ++p) {
    const Node& n = g.nodes[size_t(nodes[p])];
    const bool reduction = b.reduction(n) != Reduce::None;
    const size_t at = reduction ? segment_of_position(p) : (b.produced.at(n.outputs[0]) == Level::Full ? seg.at(n.outputs[0]) : m + 1);
    for (ValueId x : n.inputs)
      if (seg.count(x) && wants(x) && seg.at(x) < at && at <= m) carried[x] = 1;
  }
  os << fusion_detail::kBackwardArgs << "\n";
  emit_body_head(os, grp, "backward_body", "BackwardArgs", ", int64_t c");
  fusion_detail::emit_gradient_pointers(os, g, grp);
  const auto kept = kept_values(b);
  emit_kept_buffers(os, kept);
  emit_kept_buffers(os, carried, "gbuf");
  os << "  for (int64_t r = r0; r < r1; ++r) {\n    const int64_t base = r * L;\n";
  std::unordered_map<ValueId, std::string> row_name;
  std::unordered_map<ValueId, int> filled;
  emit_row_forward(os, b, kept, row_name, filled, /*counts=*/true);
  filled = kept;  // every kept value is in its buffer now
  for (size_t k = 0; k < grp.inputs.size(); ++k) {
    const auto& o = grp.inputs[k];
    if (!wants(o.value)) continue;
    if (o.kind == FusedOperand::kRow) os << "    float dgin" << k << " = 0.0f;\n";
    else if (o.kind != FusedOperand::kInner) os << "    for (int64_t j = 0; j < L; ++j) gin" << k << "[base + j] = 0.0f;\n";
  }
  for (const auto& [v, _] : carried) os << "    for (int64_t j = 0; j < L; ++j) gbuf" << v << "[j] = 0.0f;\n";
  for (size_t p = 0; p < nodes.size(); ++p) {  // per-row values' gradients, at row scope
    const ValueId v = g.nodes[size_t(nodes[p])].outputs[0];
    if (b.produced.at(v) == Level::Row && wants(v)) os << "    float d" << v << " = 0.0f;\n";
  }
  for (size_t k = 0; k < grp.outputs.size(); ++k)
    if (b.produced.at(grp.outputs[k]) == Level::Row && wants(grp.outputs[k]))
      os << "    d" << grp.outputs[k] << " += gout" << k << "[r];\n";
  // where a share of the gradient of x goes, inside a pass over segment s (or at row scope: s = npos);
  // a per-row target inside a pass gets one partial sum per lane (`lanes` collects them), so the
  // pass vectorises as the forward's reductions do
  const size_t kRowScope = size_t(-1);
  std::vector<std::string> lanes;
  auto add_to = [&](ValueId x, const std::string& share, size_t s) -> std::string {
    if (share.empty() || !wants(x)) return "";
    auto lane = [&](const std::string& target) {
      if (s == kRowScope) return target + " += " + share + ";";
      if (std::find(lanes.begin(), lanes.end(), target) == lanes.end()) lanes.push_back(target);
      return target + "_lane[l] += " + share + ";";
    };
    auto lv = b.produced.find(x);
    if (lv != b.produced.end()) {
      if (lv->second == Level::Row) return lane("d" + std::to_string(x));
      if (s == kRowScope) return "";
      return (seg.at(x) == s ? "d" + std::to_string(x) : "gbuf" + std::to_string(x) + "[j]") + " += " + share + ";";
    }
    const size_t k = b.operand_of.at(x);
    const auto kind = grp.inputs[k].kind;
    if (kind == FusedOperand::kRow) return lane("dgin" + std::to_string(k));
    if (kind == FusedOperand::kScalar || s == kRowScope) return "";
    return "gin" + std::to_string(k) + (kind == FusedOperand::kInner ? "[j] += " : "[base + j] += ") + share + ";";
  };
  // node n's shares of its output's gradient, added to its inputs' (names: how values are spelled
  // where the lines go; s: the segment, or kRowScope)
  auto emit_shares = [&](std::ostream& out, const char* indent, const Node& n,
                         const std::unordered_map<ValueId, std::string>& names, size_t s) {
    std::vector<std::string> args;
    for (ValueId x : n.inputs) args.push_back(names.at(x));
    const ValueId y = n.outputs[0];
    const auto shares = *fusion_detail::derivative(g, n, args, names.at(y), "d" + std::to_string(y));
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const std::string line = add_to(n.inputs[i], shares[i], s);
      if (!line.empty()) out << indent << line << "  // " << n.op << "\n";
    }
  };
  for (size_t s = m + 1; s-- > 0;) {
    const size_t first = s == 0 ? 0 : red[s - 1] + 1, last = s == m ? nodes.size() : red[s];  // positions [first, last)
    std::ostringstream pass;  // the body over element j (lane l), written first to learn its lanes
    lanes.clear();
    std::unordered_map<ValueId, std::string> name = row_name;
    emit_full_values(pass, b, last, "      ", name, filled);
    for (size_t p = first; p < last; ++p) {
      const ValueId v = g.nodes[size_t(nodes[p])].outputs[0];
      if (b.produced.at(v) == Level::Full && wants(v))
        pass << "      float d" << v << " = " << (carried.count(v) ? "gbuf" + std::to_string(v) + "[j]" : "0.0f") << ";\n";
    }
    for (size_t k = 0; k < grp.outputs.size(); ++k) {
      const ValueId v = grp.outputs[k];
      if (b.produced.at(v) == Level::Full && seg.at(v) == s && wants(v)) pass << "      d" << v << " += gout" << k << "[base + j];\n";
    }
    if (s < m) {  // the reduction that ends this segment
      const Node& n = g.nodes[size_t(nodes[red[s]])];
      const ValueId u = n.outputs[0], x = n.inputs[0];
      if (wants(u)) {
        const Reduce r = b.reduction(n);
        const std::string du = "d" + std::to_string(u), xv = name.at(x), uv = row_name.at(u);
        const std::string share = r == Reduce::Sum ? du : r == Reduce::Mean ? du + " / float(L)"
                                : "(" + xv + " == " + uv + " ? " + du + " / " + uv + "_ties : 0.0f)";
        pass << "      " << add_to(x, share, s) << "  // " << n.op << "\n";
      }
    }
    for (size_t p = last; p-- > first;) {
      const Node& n = g.nodes[size_t(nodes[p])];
      const ValueId y = n.outputs[0];
      if (b.produced.at(y) == Level::Full && wants(y)) emit_shares(pass, "      ", n, name, s);
    }
    const std::string fn = "segment" + std::to_string(s);
    for (const auto& t : lanes) os << "    float " << t << "_lane[16];\n    for (int l = 0; l < 16; ++l) " << t << "_lane[l] = 0.0f;\n";
    os << "    auto " << fn << " = [&](int64_t j, int l) {\n" << pass.str() << "      (void)l;\n    };\n"
       << "    int64_t " << fn << "_j = 0;\n"
       << "    for (; " << fn << "_j + 16 <= L; " << fn << "_j += 16)\n      for (int l = 0; l < 16; ++l) " << fn << "(" << fn
       << "_j + l, l);\n    for (; " << fn << "_j < L; ++" << fn << "_j) " << fn << "(" << fn << "_j, 0);\n";
    for (const auto& t : lanes) os << "    " << t << " += lanes_sum(" << t << "_lane);\n";
    // the per-row nodes of this stretch, in reverse
    const size_t row_first = s == 0 ? 0 : red[s - 1], row_last = s == m ? nodes.size() : red[s];
    for (size_t p = row_last; p-- > row_first;) {
      const Node& n = g.nodes[size_t(nodes[p])];
      const ValueId y = n.outputs[0];
      if (b.produced.at(y) == Level::Row && b.reduction(n) == Reduce::None && wants(y))
        emit_shares(os, "    ", n, row_name, kRowScope);
    }
  }
  for (size_t k = 0; k < grp.inputs.size(); ++k)
    if (wants(grp.inputs[k].value) && grp.inputs[k].kind == FusedOperand::kRow)
      os << "    gin" << k << "[r] = dgin" << k << ";\n";
  os << "  }\n}\n\n";
}

std::string generate_row_source(const RowBuilder& b) {
  const FusedGroup& grp = b.grp;
  std::ostringstream os;
  os << "// ember.compile fused row kernel:";
  for (int32_t i : grp.nodes) os << " " << b.g.nodes[size_t(i)].op;
  os << kPrelude;
  emit_forward_body(os, b);
  if (grp.needs_grad) emit_backward_body(os, b);
  os << "}  // namespace\n\n";
  os << fusion_detail::entry("ember_fused", "int64_t numel, int64_t inner, const void* const* in, void* const* out",
                             "Args a{numel, inner, in, out};", "body");
  if (grp.needs_grad) os << fusion_detail::backward_entry();
  return os.str();
}

}  // namespace

std::vector<FusedGroup> find_row_groups(const Graph& g, const fusion_detail::ValueUses& uses) {
  std::vector<FusedGroup> groups;
  std::optional<RowBuilder> b;  // the open group
  auto close = [&] {
    if (b && b->has_reduction && b->grp.nodes.size() >= 2) {
      b->grp.outputs = uses.outputs_of(g, b->grp.nodes);
      for (ValueId v : b->grp.outputs)
        b->grp.output_sizes.push_back(b->produced.at(v) == Level::Full ? b->grp.sizes : b->row_sizes);
      b->grp.source = generate_row_source(*b);
      groups.push_back(std::move(b->grp));
    }
    b.reset();
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (b) {
      if (auto level = b->joins(n)) {
        b->add(n, *level);
        continue;
      }
    }
    // a node that reads the group, or writes anything, ends it (the kernel runs at its last node)
    bool reads_group = n.mutates;
    for (ValueId v : n.inputs) reads_group = reads_group || (b && v != kNoValue && b->produced.count(v));
    RowBuilder fresh(g);
    const bool starts = fresh.start(n);
    if (starts || reads_group) {
      close();
      if (starts) b.emplace(std::move(fresh));
    }
  }
  close();
  return groups;
}

}  // namespace ember::compiler
