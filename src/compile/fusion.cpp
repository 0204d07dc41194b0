// Fusion of elementwise chains (fusion.h): which nodes join a group, and the C++ of its kernel.
#include "compile/fusion.h"

#include <cmath>
#include <cstring>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "compile/device_codegen.h"
#include "ember/core/errors.h"

namespace ember::compiler {
namespace {
// (the helpers shared with fusion_rows.cpp are fusion_detail's, defined below at file scope)
using namespace fusion_detail;

// One-operand ops whose float32 CPU kernel is f::<op>_fn<CpuMath> (cpu/unary_kernels.cpp).
const char* const kUnary[] = {"exp",  "exp2", "log",  "log1p", "expm1",   "log2", "log10", "sqrt", "rsqrt",
                              "sin",  "cos",  "tan",  "asin",  "acos",    "atan", "sinh",  "cosh", "tanh",
                              "sigmoid", "silu", "erf", "reciprocal", "neg", "abs", "square", "relu", "sign"};
// Two-operand ops of the same kind (cpu/binary_kernels.cpp).
const char* const kBinary[] = {"mul", "maximum", "minimum", "atan2"};

bool in(const char* op, const char* const* list, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (std::strcmp(op, list[i]) == 0) return true;
  return false;
}
template <size_t N> bool in(const char* op, const char* const (&list)[N]) { return in(op, list, N); }

std::string float_literal(double v) {
  if (std::isnan(v)) return "__builtin_nanf(\"\")";
  if (std::isinf(v)) return v > 0 ? "__builtin_inff()" : "-__builtin_inff()";
  std::ostringstream os;
  os.precision(9);
  os << std::scientific << float(v) << "f";
  return os.str();
}

}  // namespace

namespace fusion_detail {
bool fusible_dtype(DType dt) { return dt == kFloat32 || dt == kBFloat16 || dt == kFloat16; }
bool is_16bit_float(DType dt) { return dt == kBFloat16 || dt == kFloat16; }

bool is_contiguous(const ValueInfo& v) {
  int64_t expect = 1;
  for (size_t d = v.sizes.size(); d-- > 0;) {
    if (v.sizes[d] != 1 && v.strides[d] != expect) return false;
    expect *= v.sizes[d];
  }
  return true;
}

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}
}  // namespace fusion_detail

namespace {

// A constant number (a 0-dim constant, e.g. pow's exponent from a Python float).
std::optional<double> constant_number(const Graph& g, ValueId v) {
  const auto& info = g.values[size_t(v)];
  if (info.kind != ValueKind::Constant || !info.constant.defined() || info.constant.numel() != 1) return std::nullopt;
  if (!is_floating(info.dtype) && info.dtype != kInt64 && info.dtype != kInt32) return std::nullopt;
  return info.constant.item().to<double>();
}

// add/sub's alpha (their third argument, a Scalar saved as a number).
double alpha_of(const Node& n) {
  const Arg& a = n.args.at(2);
  return a.kind == Arg::Double ? a.d : double(a.i);
}

}  // namespace

// The C++ expression of node n over operand expressions a, or nullopt when fusion does not
// cover this op or these arguments. Each form is the eager float32 kernel's.
std::optional<std::string> fusion_detail::expression(const Graph& g, const Node& n, const std::vector<std::string>& a) {
  const std::string op = n.op;
  if (in(n.op, kUnary) && a.size() == 1) return "f::" + op + "_fn<M>{}(" + a[0] + ")";
  // a cast between fused dtypes: the value itself (a 16-bit result is rounded where it is made,
  // as every 16-bit value of a group is: node_value)
  if (op == "to_dtype" && a.size() == 1 && n.inputs.size() == 1 &&
      fusible_dtype(g.values[size_t(n.inputs[0])].dtype) && fusible_dtype(g.values[size_t(n.outputs[0])].dtype))
    return a[0];
  if (in(n.op, kBinary) && a.size() == 2) return "f::" + op + "_fn<M>{}(" + a[0] + ", " + a[1] + ")";
  const std::string attrs = n.attrs();
  if ((op == "add" || op == "sub") && a.size() == 2) {
    const double alpha = op == "add" ? alpha_of(n) : -alpha_of(n);
    return "f::add_fn<float, M>{" + float_literal(alpha) + "}(" + a[0] + ", " + a[1] + ")";
  }
  if (op == "div" && a.size() == 2 && attrs == "None") return "f::div_true_fn<M>{}(" + a[0] + ", " + a[1] + ")";
  // where(condition, x, y): the condition a bool operand, loaded as 0 or 1
  if (op == "where" && a.size() == 3 && g.values[size_t(n.inputs[0])].dtype == kBool)
    return "(" + a[0] + " != 0.0f ? " + a[1] + " : " + a[2] + ")";
  if (op == "gelu" && a.size() == 1) {
    if (attrs == "'none'") return "f::gelu_fn<M>{}(" + a[0] + ")";
    if (attrs == "'tanh'") return "f::gelu_tanh_fn<M>{}(" + a[0] + ")";
    return std::nullopt;
  }
  if (op == "pow" && a.size() == 2) {
    const ValueInfo& e = g.values[size_t(n.inputs[1])];
    if (numel(e.sizes) != 1 || e.sizes.size() != 0) return "f::pow_fn<M>{}(" + a[0] + ", " + a[1] + ")";
    const auto c = constant_number(g, n.inputs[1]);  // the eager kernel's special exponents
    if (!c) return std::nullopt;
    const double x = *c;
    if (x == 2) return "f::square_fn<M>{}(" + a[0] + ")";
    if (x == 3) return "f::cube_fn<M>{}(" + a[0] + ")";
    if (x == 1) return a[0];
    if (x == 0) return std::string("1.0f");
    if (x == -1) return "f::reciprocal_fn<M>{}(" + a[0] + ")";
    if (x == -2) return "f::inverse_square_fn<M>{}(" + a[0] + ")";
    if (x == 0.5) return "f::sqrt_fn<M>{}(" + a[0] + ")";
    if (x == -0.5) return "f::rsqrt_fn<M>{}(" + a[0] + ")";
    return "f::pow_fn<M>{}(" + a[0] + ", " + float_literal(x) + ")";
  }
  return std::nullopt;
}

// Each input's share of the gradient of node n (expressions over its operands a, its output y
// and the output's gradient g; "" for none), or nullopt when fusion has no backward for it. The
// formulas are the eager autograd's (derivatives.yaml's), evaluated in float.
std::optional<std::vector<std::string>> fusion_detail::derivative(const Graph& g, const Node& n,
                                                                  const std::vector<std::string>& a,
                                                                  const std::string& y, const std::string& gr) {
  const std::string op = n.op;
  auto one = [](std::string e) { return std::optional<std::vector<std::string>>(std::vector<std::string>{std::move(e)}); };
  if (a.size() == 1) {
    const std::string& x = a[0];
    if (op == "to_dtype") return one(gr);
    if (op == "exp") return one(gr + " * " + y);
    if (op == "exp2") return one(gr + " * " + y + " * 0.693147180559945309f");
    if (op == "log") return one(gr + " / " + x);
    if (op == "log1p") return one(gr + " / (" + x + " + 1.0f)");
    if (op == "expm1") return one(gr + " * (" + y + " + 1.0f)");
    if (op == "log2") return one(gr + " / (" + x + " * 0.693147180559945309f)");
    if (op == "log10") return one(gr + " / (" + x + " * 2.30258509299404568f)");
    if (op == "sqrt") return one(gr + " / (2.0f * " + y + ")");
    if (op == "rsqrt") return one("-0.5f * " + gr + " * " + y + " * " + y + " * " + y);
    if (op == "sin") return one(gr + " * M::cos(" + x + ")");
    if (op == "cos") return one("-" + gr + " * M::sin(" + x + ")");
    if (op == "tan") return one(gr + " * (1.0f + " + y + " * " + y + ")");
    if (op == "asin") return one(gr + " / M::sqrt(1.0f - " + x + " * " + x + ")");
    if (op == "acos") return one("-" + gr + " / M::sqrt(1.0f - " + x + " * " + x + ")");
    if (op == "atan") return one(gr + " / (1.0f + " + x + " * " + x + ")");
    if (op == "sinh") return one(gr + " * M::cosh(" + x + ")");
    if (op == "cosh") return one(gr + " * M::sinh(" + x + ")");
    if (op == "tanh") return one(gr + " * (1.0f - " + y + " * " + y + ")");
    if (op == "sigmoid") return one(gr + " * (1.0f - " + y + ") * " + y);
    if (op == "silu") {
      const std::string sg = "(1.0f / (1.0f + M::exp(-" + x + ")))";
      return one(gr + " * " + sg + " * (1.0f + " + x + " * (1.0f - " + sg + "))");
    }
    if (op == "erf") return one(gr + " * 1.12837916709551257f * M::exp(-" + x + " * " + x + ")");
    if (op == "reciprocal") return one("-" + gr + " * " + y + " * " + y);
    if (op == "neg") return one("-" + gr);
    if (op == "abs") return one(x + " > 0.0f ? " + gr + " : (" + x + " < 0.0f ? -" + gr + " : 0.0f)");
    if (op == "square") return one("2.0f * " + x + " * " + gr);
    if (op == "relu") return one(y + " <= 0.0f ? 0.0f : " + gr);  // threshold_backward: NaN passes
    if (op == "sign") return one("");
    if (op == "gelu" && n.attrs() == "'none'") return one("f::gelu_backward_fn<M>{}(" + gr + ", " + x + ")");
    if (op == "gelu" && n.attrs() == "'tanh'") return one("f::gelu_tanh_backward_fn<M>{}(" + gr + ", " + x + ")");
    return std::nullopt;
  }
  using V = std::vector<std::string>;
  if (op == "where" && a.size() == 3)  // (the condition, a bool operand, has no gradient)
    return V{"", "(" + a[0] + " != 0.0f ? " + gr + " : 0.0f)", "(" + a[0] + " != 0.0f ? 0.0f : " + gr + ")"};
  if (a.size() != 2) return std::nullopt;
  const std::string &x = a[0], &z = a[1];
  if (op == "add" || op == "sub") {
    const double alpha = op == "add" ? alpha_of(n) : -alpha_of(n);
    return V{gr, alpha == 1 ? gr : float_literal(alpha) + " * " + gr};
  }
  if (op == "mul") return V{gr + " * " + z, gr + " * " + x};
  if (op == "div" && n.attrs() == "None") return V{gr + " / " + z, "-" + gr + " * " + x + " / (" + z + " * " + z + ")"};
  if (op == "maximum" || op == "minimum") {  // ties share the gradient, as torch's
    const char* cmp = op == "maximum" ? " > " : " < ";
    return V{"(" + x + cmp + z + " ? " + gr + " : (" + x + " == " + z + " ? 0.5f * " + gr + " : 0.0f))",
             "(" + z + cmp + x + " ? " + gr + " : (" + x + " == " + z + " ? 0.5f * " + gr + " : 0.0f))"};
  }
  if (op == "atan2") {
    const std::string den = "(" + x + " * " + x + " + " + z + " * " + z + ")";
    return V{gr + " * " + z + " / " + den, "-" + gr + " * " + x + " / " + den};
  }
  if (op == "pow") {  // only a constant exponent (a tensor exponent's gradient has edge cases left to eager)
    const ValueInfo& e = g.values[size_t(n.inputs[1])];
    if (e.sizes.size() != 0) return std::nullopt;
    const auto c = constant_number(g, n.inputs[1]);
    if (!c) return std::nullopt;
    if (*c == 0) return V{"0.0f", ""};
    if (*c == 1) return V{gr, ""};
    if (*c == 2) return V{"2.0f * " + x + " * " + gr, ""};
    return V{gr + " * " + float_literal(*c) + " * M::pow(" + x + ", " + float_literal(*c - 1) + ")", ""};
  }
  return std::nullopt;
}

namespace {

struct Builder {
  const Graph& g;
  FusedGroup grp;
  std::unordered_map<ValueId, int> produced;  // value -> 1 when made inside the group
  std::unordered_map<ValueId, size_t> operand_of;

  explicit Builder(const Graph& graph) : g(graph) {}
  void reset() {
    grp = FusedGroup();
    produced.clear();
    operand_of.clear();
  }

  // How value v enters a group over `sizes` on `device` (nullopt: it cannot).
  std::optional<FusedOperand> operand_kind(ValueId v, const Shape& sizes, int64_t& inner, const Device& device) const {
    const ValueInfo& i = g.values[size_t(v)];
    const int64_t n = numel(i.sizes);
    // one number (a Python scalar, a 0-dim tensor): float32 computes with it converted, as eager;
    // a device kernel reads one on its device, or gets one on the host by value
    if (n == 1 && i.sizes.size() <= sizes.size() && (i.device.is_cpu() || i.device == device) &&
        (i.dtype == kFloat32 || i.dtype == kFloat64 || i.dtype == kInt64 || i.dtype == kInt32 || i.dtype == kBool))
      return FusedOperand{v, FusedOperand::kScalar, i.dtype};
    if (i.device != device) return std::nullopt;
    // (a bool tensor is read as 0 or 1, as eager promotes it: where's condition, a mask multiplied in)
    if (!(fusible_dtype(i.dtype) || i.dtype == kBool) || !is_contiguous(i)) return std::nullopt;
    if (i.sizes == sizes) return FusedOperand{v, FusedOperand::kFull, i.dtype};
    // the trailing dims of the output (leading 1s dropped): a bias over the last dims
    size_t lead = 0;
    while (lead < i.sizes.size() && i.sizes[lead] == 1) ++lead;
    const size_t dims = i.sizes.size() - lead;
    if (dims == 0 || dims > sizes.size() || i.sizes.size() > sizes.size()) return std::nullopt;
    for (size_t d = 0; d < dims; ++d)
      if (i.sizes[lead + d] != sizes[sizes.size() - dims + d]) return std::nullopt;
    if (inner != 0 && inner != n) return std::nullopt;
    inner = n;
    return FusedOperand{v, FusedOperand::kInner, i.dtype};
  }

  // Whether node n can join (or start) the current group.
  bool fusible(const Node& n, int64_t& inner) const {
    if (n.mutates || n.random() || n.opaque() || n.outputs.size() != 1) return false;
    const ValueInfo& out = g.values[size_t(n.outputs[0])];
    if (!fusible_dtype(out.dtype) || !is_contiguous(out) || numel(out.sizes) == 0) return false;
    if (!out.device.is_cpu() && !device_codegen(out.device.type)) return false;
    if (!grp.nodes.empty() && (out.sizes != grp.sizes || out.device != grp.device)) return false;
    std::vector<std::string> names;
    for (ValueId v : n.inputs) {
      if (v == kNoValue) return false;
      names.push_back("x");
      if (produced.count(v)) continue;
      if (!operand_kind(v, out.sizes, inner, out.device)) return false;
    }
    if (out.requires_grad && !derivative(g, n, names, "y", "g")) return false;
    return expression(g, n, names).has_value();
  }

  void add(int32_t index, int64_t inner) {
    const Node& n = g.nodes[size_t(index)];
    if (grp.nodes.empty()) {
      grp.sizes = g.values[size_t(n.outputs[0])].sizes;
      grp.device = g.values[size_t(n.outputs[0])].device;
    }
    grp.inner = inner;
    for (ValueId v : n.inputs) {
      if (produced.count(v) || operand_of.count(v)) continue;
      int64_t in = grp.inner;
      operand_of[v] = grp.inputs.size();
      grp.inputs.push_back(*operand_kind(v, grp.sizes, in, grp.device));
    }
    produced[n.outputs[0]] = 1;
    grp.needs_grad = grp.needs_grad || g.values[size_t(n.outputs[0])].requires_grad;
    grp.nodes.push_back(index);
  }
};

}  // namespace

// The operand pointers of a kernel body (`in<k>`: a number, or a float pointer).
void fusion_detail::emit_operand_pointers(std::ostringstream& os, const FusedGroup& grp) {
  for (size_t k = 0; k < grp.inputs.size(); ++k) {
    const auto& o = grp.inputs[k];
    if (o.kind == FusedOperand::kScalar) {
      const char* type = o.dtype == kFloat64 ? "double" : o.dtype == kInt64 ? "int64_t" : o.dtype == kInt32 ? "int32_t"
                         : o.dtype == kBool ? "bool" : "float";
      os << "  const float in" << k << " = float(*static_cast<const " << type << "*>(a.in[" << k << "]));\n";
    }
    else if (is_16bit_float(o.dtype))
      os << "  const uint16_t* __restrict in" << k << " = static_cast<const uint16_t*>(a.in[" << k << "]);\n";
    else if (o.dtype == kBool)
      os << "  const bool* __restrict in" << k << " = static_cast<const bool*>(a.in[" << k << "]);\n";
    else
      os << "  const float* __restrict in" << k << " = static_cast<const float*>(a.in[" << k << "]);\n";
  }
}

namespace {
// the generated helpers' prefix for a 16-bit float dtype
const char* helper_prefix(DType dt) { return dt == kBFloat16 ? "ember_bf16_" : "ember_f16_"; }
}  // namespace

std::string fusion_detail::load_expression(const FusedOperand& o, const std::string& element) {
  if (o.dtype == kBool && o.kind != FusedOperand::kScalar) return "(" + element + " ? 1.0f : 0.0f)";
  if (!is_16bit_float(o.dtype) || o.kind == FusedOperand::kScalar) return element;
  return std::string(helper_prefix(o.dtype)) + "load(" + element + ")";
}

std::string fusion_detail::node_value(const Graph& g, const Node& n, const std::string& formula) {
  const DType dt = g.values[size_t(n.outputs[0])].dtype;
  return is_16bit_float(dt) ? std::string(helper_prefix(dt)) + "round(" + formula + ")" : formula;
}

std::string fusion_detail::store_expression(DType dt, const std::string& v) {
  return is_16bit_float(dt) ? std::string(helper_prefix(dt)) + "store(" + v + ")" : v;
}

void fusion_detail::emit_values(std::ostringstream& os, const Graph& g, const FusedGroup& grp, const LoopBody& at,
                                std::unordered_map<ValueId, std::string>& name) {
  for (size_t k = 0; k < grp.inputs.size(); ++k) {
    const auto& o = grp.inputs[k];
    const std::string v = "a" + std::to_string(k);
    const std::string in = "in" + std::to_string(k);
    os << at.indent << "const float " << v << " = "
       << (o.kind == FusedOperand::kScalar ? in
           : load_expression(o, in + (o.kind == FusedOperand::kFull ? at.full : at.inner)))
       << ";\n";
    name[o.value] = v;
  }
  for (int32_t i : grp.nodes) {
    const Node& n = g.nodes[size_t(i)];
    std::vector<std::string> args;
    for (ValueId v : n.inputs) args.push_back(name.at(v));
    const std::string v = "t" + std::to_string(n.outputs[0]);
    os << at.indent << "const float " << v << " = " << node_value(g, n, *expression(g, n, args)) << ";  // " << n.op
       << "\n";
    name[n.outputs[0]] = v;
  }
}

void fusion_detail::emit_gradients(std::ostringstream& os, const Graph& g, const FusedGroup& grp, const LoopBody& at,
                                   const std::unordered_map<ValueId, std::string>& name) {
  std::unordered_map<ValueId, std::string> grad;
  auto grad_of = [&](ValueId v) -> const std::string& {
    auto it = grad.find(v);
    if (it == grad.end()) {
      it = grad.emplace(v, "d" + std::to_string(v)).first;
      os << at.indent << "float " << it->second << " = 0.0f;\n";
    }
    return it->second;
  };
  // (each gradient is declared before the line that adds to it is started)
  for (size_t k = 0; k < grp.outputs.size(); ++k) {
    const std::string d = grad_of(grp.outputs[k]);
    os << at.indent << d << " += gout" << k << at.full << ";\n";
  }
  for (auto it = grp.nodes.rbegin(); it != grp.nodes.rend(); ++it) {
    const Node& n = g.nodes[size_t(*it)];
    const ValueId out = n.outputs[0];
    if (!grad.count(out)) continue;  // nothing flows back through this node
    std::vector<std::string> args;
    for (ValueId v : n.inputs) args.push_back(name.at(v));
    const auto shares = *derivative(g, n, args, name.at(out), grad.at(out));
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (!shares[i].empty()) {
        const std::string d = grad_of(n.inputs[i]);
        os << at.indent << d << " += " << shares[i] << ";  // " << n.op << "\n";
      }
  }
  for (size_t k = 0; k < grp.inputs.size(); ++k) {
    if (!g.values[size_t(grp.inputs[k].value)].requires_grad) continue;
    auto it = grad.find(grp.inputs[k].value);
    const std::string d = it == grad.end() ? "0.0f" : it->second;
    if (at.inner_gradients_in_chunks && grp.inputs[k].kind == FusedOperand::kInner)
      os << at.indent << "gin" << k << at.inner << " += " << d << ";\n";
    else
      os << at.indent << "gin" << k << at.full << " = " << d << ";\n";
  }
}

namespace {

// The CPU loop body's lines and elements (a row of `inner` from `base`).
const fusion_detail::LoopBody kCpuBody{"      ", "[base + j]", "[j]", /*inner_gradients_in_chunks=*/true};

// 16-bit float values in float: loaded exactly, stored and rounded as ember's eager kernels round
// them. bfloat16: nearest even, NaN -> 0x7fc0 (cpu/tensor_iter.h's store_block), branch-free so
// loops vectorise; float16: ember::Half's own conversions, which eager's kernels call.
const char* const kHalfHelpers =
    "inline float ember_bf16_load(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }\n"
    "inline uint16_t ember_bf16_store(float x) {\n"
    "  const uint32_t u = std::bit_cast<uint32_t>(x);\n"
    "  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;\n"
    "  return uint16_t((u & 0x7fffffffu) > 0x7f800000u ? 0x7fc0u : rounded);\n"
    "}\n"
    "inline float ember_bf16_round(float x) { return ember_bf16_load(ember_bf16_store(x)); }\n"
    "inline float ember_f16_load(uint16_t h) { return ember::Half::to_float(h); }\n"
    "inline uint16_t ember_f16_store(float x) { return ember::Half::from_float(x); }\n"
    "inline float ember_f16_round(float x) { return ember_f16_load(ember_f16_store(x)); }\n";

const char* const kLoopHead =
    "  for (int64_t r = r0; r < r1; ++r) {\n"
    "    const int64_t base = r * a.inner;\n"
    "    const int64_t n = a.numel - base < a.inner ? a.numel - base : a.inner;\n"
    "    for (int64_t j = 0; j < n; ++j) {\n";

}  // namespace

std::string fusion_detail::entry(const char* name, const char* params, const char* args_init, const char* body) {
  return std::string("extern \"C\" void ") + name + "(" + params +
         ",\n    void (*parallel)(int64_t, int64_t, void*, void (*)(void*, int64_t, int64_t))) {\n  " + args_init +
         "\n  const int64_t rows = (numel + inner - 1) / inner;\n"
         "  const int64_t grain = inner >= 32768 ? 1 : 32768 / inner;\n"
         "  parallel(rows, grain, &a, " + body + ");\n}\n";
}

const char* const fusion_detail::kBackwardArgs =
    "struct BackwardArgs { int64_t numel, inner; const void* const* in; const void* const* gout; void* const* gin;\n"
    "                      int64_t rows, chunks; };\n";

void fusion_detail::emit_gradient_pointers(std::ostringstream& os, const Graph& g, const FusedGroup& grp) {
  for (size_t k = 0; k < grp.outputs.size(); ++k)
    os << "  const float* __restrict gout" << k << " = static_cast<const float*>(a.gout[" << k << "]);\n";
  // only operands that wanted a gradient at capture get one (the guards keep that true), and
  // their slots are never null: stores without a branch keep the loop vectorised
  for (size_t k = 0; k < grp.inputs.size(); ++k) {
    if (!g.values[size_t(grp.inputs[k].value)].requires_grad) continue;
    os << "  float* __restrict gin" << k << " = static_cast<float*>(a.gin[" << k << "])";
    if (grp.inputs[k].kind == FusedOperand::kInner)  // the chunk's row of partial sums
      os << " + c * a.inner;\n  for (int64_t j = 0; j < a.inner; ++j) gin" << k << "[j] = 0.0f;\n";
    else
      os << ";\n";
  }
}

std::string fusion_detail::backward_entry() {
  const std::string chunks = std::to_string(kGradientChunks);
  return "namespace {\nvoid backward_chunks(void* ctx, int64_t c0, int64_t c1) {\n"
         "  const BackwardArgs& a = *static_cast<const BackwardArgs*>(ctx);\n"
         "  for (int64_t c = c0; c < c1; ++c) backward_body(ctx, c * a.rows / a.chunks, (c + 1) * a.rows / a.chunks, c);\n"
         "}\n}  // namespace\n\n"
         "extern \"C\" void ember_fused_backward(int64_t numel, int64_t inner, const void* const* in, "
         "const void* const* gout, void* const* gin,\n"
         "    void (*parallel)(int64_t, int64_t, void*, void (*)(void*, int64_t, int64_t))) {\n"
         "  const int64_t rows = (numel + inner - 1) / inner;\n"
         "  BackwardArgs a{numel, inner, in, gout, gin, rows, rows < " + chunks + " ? rows : " + chunks + "};\n"
         "  if (a.chunks == 0) return;\n"
         "  // chunks of at least ~32K elements per task, as the forward's grain\n"
         "  const int64_t grain_rows = inner >= 32768 ? 1 : 32768 / inner, per_chunk = rows / a.chunks;\n"
         "  parallel(a.chunks, (grain_rows + per_chunk - 1) / per_chunk, &a, backward_chunks);\n}\n";
}

namespace {

// The backward body over rows [r0, r1) of chunk c: the forward values recomputed, then each
// node's input gradients accumulated in reverse program order (d<v>), and the operands'
// gradients stored (a kInner operand's summed into the chunk's row of its buffer).
void emit_backward(std::ostringstream& os, const Graph& g, const FusedGroup& grp) {
  os << kBackwardArgs << "\n"
        "void backward_body(void* ctx, int64_t r0, int64_t r1, int64_t c) {\n"
        "  const BackwardArgs& a = *static_cast<const BackwardArgs*>(ctx);\n";
  emit_operand_pointers(os, grp);
  emit_gradient_pointers(os, g, grp);
  os << kLoopHead;
  std::unordered_map<ValueId, std::string> name;
  emit_values(os, g, grp, kCpuBody, name);
  emit_gradients(os, g, grp, kCpuBody, name);
  os << "    }\n  }\n}\n\n";
}

// The kernel's source: one loop over rows of `inner` elements, each operand loaded, the nodes'
// formulas in program order, the group's outputs stored; and the backward kernel when the group
// needs a gradient.
std::string generate_source(const Graph& g, const FusedGroup& grp) {
  std::ostringstream os;
  os << "// ember.compile fused kernel:";
  for (int32_t i : grp.nodes) os << " " << g.nodes[size_t(i)].op;
  os << "\n#include <bit>\n#include <cstdint>\n#include \"cpu/elementwise_math.h\"\n#include \"ember/core/half.h\"\n\n"
        "namespace {\n"
        "namespace f = ember::formula;\nusing M = ember::cpu::CpuMath;\n"
        "struct Args { int64_t numel, inner; const void* const* in; void* const* out; };\n"
     << kHalfHelpers << "\n"
        "void body(void* ctx, int64_t r0, int64_t r1) {\n"
        "  const Args& a = *static_cast<const Args*>(ctx);\n";
  emit_operand_pointers(os, grp);
  for (size_t k = 0; k < grp.outputs.size(); ++k) {
    const char* type = is_16bit_float(g.values[size_t(grp.outputs[k])].dtype) ? "uint16_t" : "float";
    os << "  " << type << "* __restrict out" << k << " = static_cast<" << type << "*>(a.out[" << k << "]);\n";
  }
  os << kLoopHead;
  std::unordered_map<ValueId, std::string> name;
  emit_values(os, g, grp, kCpuBody, name);
  for (size_t k = 0; k < grp.outputs.size(); ++k) {
    os << "      out" << k << "[base + j] = "
       << store_expression(g.values[size_t(grp.outputs[k])].dtype, name.at(grp.outputs[k])) << ";\n";
  }
  os << "    }\n  }\n}\n\n";
  if (grp.needs_grad) emit_backward(os, g, grp);
  os << "}  // namespace\n\n";
  os << entry("ember_fused", "int64_t numel, int64_t inner, const void* const* in, void* const* out",
              "Args a{numel, inner, in, out};", "body");
  if (grp.needs_grad) os << backward_entry();
  return os.str();
}

}  // namespace

fusion_detail::ValueUses::ValueUses(const Graph& g) : readers(g.values.size()), returned(g.values.size(), 0) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId v : g.nodes[i].inputs)
      if (v != kNoValue) readers[size_t(v)].push_back(int32_t(i));
  for (ValueId v : g.outputs) returned[size_t(v)] = 1;
}

std::vector<ValueId> fusion_detail::ValueUses::outputs_of(const Graph& g, const std::vector<int32_t>& nodes) const {
  std::unordered_map<int32_t, int> member;
  for (int32_t i : nodes) member[i] = 1;
  std::vector<ValueId> out;
  for (int32_t i : nodes) {
    const ValueId v = g.nodes[size_t(i)].outputs[0];
    bool outside = returned[size_t(v)];
    for (int32_t r : readers[size_t(v)]) outside = outside || !member.count(r);
    if (outside) out.push_back(v);
  }
  return out;
}

std::vector<FusedGroup> find_fusion_groups(const Graph& g) {
  const ValueUses uses(g);
  std::vector<FusedGroup> groups = find_row_groups(g, uses);
  std::vector<char> taken(g.nodes.size(), 0);
  for (const auto& grp : groups)
    for (int32_t i : grp.nodes) taken[size_t(i)] = 1;

  Builder b(g);
  auto close = [&] {
    if (b.grp.nodes.size() >= 2) {
      b.grp.outputs = uses.outputs_of(g, b.grp.nodes);
      b.grp.output_sizes.assign(b.grp.outputs.size(), b.grp.sizes);
      b.grp.source = b.grp.device.is_cpu() ? generate_source(g, b.grp) : generate_device_source(g, b.grp);
      groups.push_back(std::move(b.grp));
    }
    b.reset();
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (taken[i]) {  // a row group's node: an elementwise group never spans one (its kernel's order)
      close();
      continue;
    }
    int64_t inner = b.grp.inner;
    if (b.fusible(n, inner)) {
      b.add(int32_t(i), inner);
      continue;
    }
    // a fresh group may start here (another shape)
    Builder fresh(g);
    int64_t fresh_inner = 0;
    const bool starts = fresh.fusible(n, fresh_inner);
    // a node that reads the group, or writes anything, ends it (the kernel runs at its last node)
    bool reads_group = n.mutates;
    for (ValueId v : n.inputs) reads_group = reads_group || (v != kNoValue && b.produced.count(v));
    if (starts || reads_group) {
      close();
      if (starts) b.add(int32_t(i), fresh_inner);
    }
  }
  close();
  return groups;
}

}  // namespace ember::compiler
