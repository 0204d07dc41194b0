// Symbolic sizes of exported programs (ember/compile/symbolic.h): checking them against a graph,
// binding them from a call's inputs, and specialising the graph to them.
#include "ember/compile/symbolic.h"

#include <cmath>
#include <set>
#include <unordered_map>
#include <type_traits>

#include "compile/capture_kernel.h"
#include "ember/core/errors.h"
#include "ember/ops.h"

namespace ember::compiler {

namespace {
[[noreturn]] void bad(const std::string& what) { throw ValueError("export: not a valid ember program: " + what); }

int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) throw ValueError("export: a symbolic size overflows int64");
  return r;
}
int64_t checked_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) throw ValueError("export: a symbolic size overflows int64");
  return r;
}

// The graph's number a site stands on (nullptr: the site is on nothing); const for a const graph.
template <class G> struct Leaf {
  static constexpr bool kConst = std::is_const_v<G>;
  std::conditional_t<kConst, const int64_t, int64_t>* i = nullptr;
  std::conditional_t<kConst, const double, double>* d = nullptr;
};

template <class G> Leaf<G> leaf(G& g, const SymSite& s) {
  Leaf<G> l;
  if (s.where == SymSite::Value) return l;  // a tensor (wrapped_number below)
  if (s.where == SymSite::Size || s.where == SymSite::Stride) {
    if (s.item < 0 || size_t(s.item) >= g.values.size()) return l;
    auto& v = g.values[size_t(s.item)];
    if (s.index < 0 || size_t(s.index) >= v.sizes.size()) return l;
    l.i = s.where == SymSite::Size ? &v.sizes[size_t(s.index)] : &v.strides[size_t(s.index)];
    return l;
  }
  if (s.item < 0 || size_t(s.item) >= g.nodes.size()) return l;
  auto& n = g.nodes[size_t(s.item)];
  if (s.index < 0 || size_t(s.index) >= n.args.size()) return l;
  auto& a = n.args[size_t(s.index)];
  if (s.element < 0) {
    if (a.kind == Arg::Int) l.i = &a.i;
    else if (a.kind == Arg::Double) l.d = &a.d;
  } else if (a.kind == Arg::Ints && size_t(s.element) < a.ints.size()) {
    l.i = &a.ints[size_t(s.element)];
  } else if (a.kind == Arg::Doubles && size_t(s.element) < a.doubles.size()) {
    l.d = &a.doubles[size_t(s.element)];
  }
  return l;
}

// A Value site's tensor: a 0-dim wrapped-number constant (nullptr: the site is on something else).
const Tensor* wrapped_number(const Graph& g, const SymSite& s) {
  if (s.where != SymSite::Value || s.item < 0 || size_t(s.item) >= g.values.size()) return nullptr;
  const ValueInfo& v = g.values[size_t(s.item)];
  if (v.kind != ValueKind::Constant || !v.wrapped_number || !v.constant.defined() || v.constant.dim() != 0) return nullptr;
  return &v.constant;
}

std::string where(const SymSite& s) {
  if (s.where == SymSite::Arg)
    return "node " + std::to_string(s.item) + " argument " + std::to_string(s.index) +
           (s.element >= 0 ? " element " + std::to_string(s.element) : "");
  if (s.where == SymSite::Value) return "constant " + std::to_string(s.item);
  return std::string(s.where == SymSite::Size ? "the size" : "the stride") + " of value " + std::to_string(s.item) +
         " dim " + std::to_string(s.index);
}
}  // namespace

int64_t SymPoly::eval(const std::vector<int64_t>& dims) const {
  int64_t sum = 0;
  for (const auto& t : terms) {
    int64_t v = t.coef;
    for (size_t i = 0; i < t.power.size() && i < dims.size(); ++i)
      for (uint8_t p = 0; p < t.power[i]; ++p) v = checked_mul(v, dims[i]);
    sum = checked_add(sum, v);
  }
  return sum;
}

std::string SymPoly::str(const std::vector<std::string>& names) const {
  std::string s;
  for (const auto& t : terms) {
    std::string term;
    bool any = false;
    for (size_t i = 0; i < t.power.size() && i < names.size(); ++i) {
      if (!t.power[i]) continue;
      term += (any ? "*" : "") + names[i] + (t.power[i] > 1 ? "^" + std::to_string(t.power[i]) : "");
      any = true;
    }
    const int64_t c = t.coef < 0 ? -t.coef : t.coef;
    if (!any) term = std::to_string(c);
    else if (c != 1) term = std::to_string(c) + "*" + term;
    s += s.empty() ? (t.coef < 0 ? "-" + term : term) : (t.coef < 0 ? " - " : " + ") + term;
  }
  return s.empty() ? "0" : s;
}

bool SymPoly::is_dim(size_t i) const {
  if (terms.size() != 1 || terms[0].coef != 1) return false;
  const auto& p = terms[0].power;
  for (size_t k = 0; k < p.size(); ++k)
    if (p[k] != (k == i ? 1 : 0)) return false;
  return i < p.size();
}

std::vector<DimBinder> SymbolicShapes::check(const Graph& g) const {
  const size_t k = names.size();
  if (k == 0 || k > 8) bad("a program has " + std::to_string(k) + " dynamic dims (1 to 8)");
  if (min.size() != k || max.size() != k || example.size() != k) bad("the dynamic dims' ranges do not match their names");
  std::set<std::string> seen;
  for (size_t i = 0; i < k; ++i) {
    if (names[i].empty() || !seen.insert(names[i]).second) bad("dynamic dim '" + names[i] + "' is unnamed or repeated");
    if (min[i] < 0 || (max[i] != -1 && max[i] < min[i]) || example[i] < min[i] || (max[i] != -1 && example[i] > max[i]))
      bad("dynamic dim '" + names[i] + "' has the range [" + std::to_string(min[i]) + ", " + std::to_string(max[i]) +
          "] around the example size " + std::to_string(example[i]));
  }
  std::vector<char> bound(k, 0);
  std::vector<DimBinder> binders;
  for (const auto& s : sites) {
    if (s.where > SymSite::Value) bad("a symbolic site of unknown kind");
    const auto l = leaf(g, s);
    const Tensor* number = wrapped_number(g, s);
    if (!l.i && !l.d && !number) bad("a symbolic size names " + where(s) + ", which is not a number of the graph");
    if (s.poly.terms.empty() || s.poly.terms.size() > 64) bad("a symbolic size at " + where(s) + " has no or too many terms");
    for (const auto& t : s.poly.terms) {
      if (t.power.size() > k) bad("a symbolic size at " + where(s) + " names more dims than the program has");
      for (uint8_t p : t.power)
        if (p > 4) bad("a symbolic size at " + where(s) + " has a power above 4");
    }
    const int64_t at_example = s.poly.eval(example);
    if (number ? number->item<double>() != double(at_example) : l.i ? *l.i != at_example : *l.d != double(at_example))
      bad("the symbolic size " + s.poly.str(names) + " at " + where(s) + " is " + std::to_string(at_example) +
          " at the example sizes, where the graph holds another number");
    if (s.where == SymSite::Size && g.values[size_t(s.item)].kind == ValueKind::Input)
      for (size_t i = 0; i < k; ++i)
        if (s.poly.is_dim(i)) {
          bound[i] = 1;
          binders.push_back({g.values[size_t(s.item)].input_index, s.index, int32_t(i)});
        }
    if ((s.where == SymSite::Size || s.where == SymSite::Stride) && g.values[size_t(s.item)].kind == ValueKind::Constant)
      bad("a symbolic size names constant " + std::to_string(s.item) + ", whose size is fixed");
  }
  for (size_t i = 0; i < k; ++i)
    if (!bound[i] && !caller_binds) bad("dynamic dim '" + names[i] + "' is not the size of any input dim");
  return binders;
}

std::vector<int64_t> SymbolicShapes::bind(const Graph& g, const std::vector<DimBinder>& binders,
                                          const std::vector<Tensor>& inputs) const {
  for (size_t i = 0; i < inputs.size() && i < g.inputs.size(); ++i) {
    const ValueInfo& want = g.values[size_t(g.inputs[i])];
    EMBER_CHECK_VALUE(inputs[i].defined(), "exported program: input ", i, " is undefined");
    EMBER_CHECK_VALUE(size_t(inputs[i].dim()) == want.sizes.size(), "exported program: input ", i, " must have ",
                      want.sizes.size(), " dims (exported as ", describe_sizes(g, g.inputs[i]), "), got size ",
                      inputs[i].sizes());
  }
  std::vector<int64_t> dims(names.size(), -1);
  std::vector<const DimBinder*> from(names.size(), nullptr);
  auto where = [](const DimBinder* b) { return "input " + std::to_string(b->input) + " dim " + std::to_string(b->dim); };
  for (const auto& b : binders) {
    if (b.input < 0 || size_t(b.input) >= inputs.size()) continue;
    const int64_t got = inputs[size_t(b.input)].size(b.dim);
    const size_t d = size_t(b.symbol);
    if (!from[d]) {
      dims[d] = got;
      from[d] = &b;
    } else {
      EMBER_CHECK_VALUE(dims[d] == got, "exported program: dynamic dim '", names[d], "' is ", dims[d], " in ",
                        where(from[d]), " but ", got, " in ", where(&b));
    }
  }
  for (size_t d = 0; d < names.size(); ++d)
    EMBER_CHECK_VALUE(dims[d] >= min[d] && (max[d] == -1 || dims[d] <= max[d]), "exported program: dynamic dim '",
                      names[d], "' is ", dims[d], " (", from[d] ? where(from[d]) : std::string("no input"),
                      "), outside the range it was exported for: [", min[d], ", ",
                      max[d] == -1 ? std::string("inf") : std::to_string(max[d]), "]");
  return dims;
}

namespace {
// A 0-dim wrapped number like `like` holding v (a Value site's constant at new sizes).
Tensor wrapped_like(const Tensor& like, int64_t v) {
  TensorOptions options;
  options.dtype = like.dtype();
  options.device = like.device();
  Tensor t = ember::full({}, Scalar(double(v)), options);
  t.impl()->set_wrapped_number(true);
  return t;
}
// Sets an Arg site's number in `args` (a copy of its node's arguments).
void set_arg(std::vector<Arg>& args, const SymSite& s, int64_t v) {
  if (s.index < 0 || size_t(s.index) >= args.size()) return;
  Arg& a = args[size_t(s.index)];
  if (s.element < 0) {
    if (a.kind == Arg::Int) a.i = v;
    else if (a.kind == Arg::Double) a.d = double(v);
  } else if (a.kind == Arg::Ints && size_t(s.element) < a.ints.size()) {
    a.ints[size_t(s.element)] = v;
  } else if (a.kind == Arg::Doubles && size_t(s.element) < a.doubles.size()) {
    a.doubles[size_t(s.element)] = double(v);
  }
}
}  // namespace

SymbolicShapes::Overlay SymbolicShapes::overlay(const Graph& g, const std::vector<int64_t>& dims,
                                                std::vector<std::pair<ValueId, Shape>>& sizes) const {
  Overlay out;
  std::unordered_map<ValueId, size_t> wanted;  // value -> its entry in sizes
  for (size_t k = 0; k < sizes.size(); ++k) wanted.emplace(sizes[k].first, k);
  std::unordered_map<int32_t, size_t> changed;  // node -> its entry in args
  std::vector<std::pair<int32_t, std::vector<Arg>>> args;
  for (const auto& s : sites) {
    if (s.where == SymSite::Stride) continue;  // (a run reads the tensors' own strides)
    if (s.where == SymSite::Size) {
      const auto w = wanted.find(ValueId(s.item));
      if (w == wanted.end()) continue;
      Shape& shape = sizes[w->second].second;
      if (s.index >= 0 && size_t(s.index) < shape.size()) shape[size_t(s.index)] = s.poly.eval(dims);
      continue;
    }
    if (s.item < 0) continue;
    const int64_t v = s.poly.eval(dims);
    if (s.where == SymSite::Value) {
      if (const Tensor* t = wrapped_number(g, s)) out.numbers.emplace_back(ValueId(s.item), wrapped_like(*t, v));
      continue;
    }
    if (size_t(s.item) >= g.nodes.size()) continue;
    const auto [at, fresh] = changed.emplace(s.item, args.size());
    if (fresh) args.emplace_back(s.item, g.nodes[size_t(s.item)].args);
    set_arg(args[at->second].second, s, v);
  }
  for (auto& [n, a] : args) out.replays.emplace_back(n, detail::replay_for(g.nodes[size_t(n)].op, a).second);
  return out;
}

Graph SymbolicShapes::specialise(const Graph& g, const std::vector<int64_t>& dims) const {
  Graph out = g;
  std::set<int32_t> changed;
  for (const auto& s : sites) {
    const auto l = leaf(out, s);
    const int64_t v = s.poly.eval(dims);
    if (l.i) *l.i = v;
    else if (l.d) *l.d = double(v);
    if (s.where == SymSite::Value) {
      Tensor& t = out.values[size_t(s.item)].constant;
      t = wrapped_like(t, v);
    }
    if (s.where == SymSite::Arg) changed.insert(s.item);
  }
  for (int32_t n : changed) {
    Node& node = out.nodes[size_t(n)];
    node.replay = detail::replay_for(node.op, node.args).second;
  }
  return out;
}

std::string SymbolicShapes::describe_sizes(const Graph& g, ValueId v) const {
  const ValueInfo& info = g.values[size_t(v)];
  std::vector<std::string> dims;
  for (int64_t d : info.sizes) dims.push_back(std::to_string(d));
  for (const auto& s : sites)
    if (s.where == SymSite::Size && s.item == v) dims[size_t(s.index)] = s.poly.str(names);
  std::string o = "[";
  for (size_t i = 0; i < dims.size(); ++i) o += (i ? ", " : "") + dims[i];
  return o + "]";
}

std::vector<size_t> differing_places(const std::vector<GraphNumbers>& all) {
  std::vector<size_t> out;
  if (all.empty()) return out;
  for (const auto& n : all)
    EMBER_CHECK_VALUE(n.places.size() == all[0].places.size(), "graph numbers of graphs with different skeletons");
  for (size_t k = 0; k < all[0].places.size(); ++k)
    for (const auto& n : all)
      if (n.ints[k] != all[0].ints[k] || n.doubles[k] != all[0].doubles[k]) {
        out.push_back(k);
        break;
      }
  return out;
}

GraphNumbers graph_numbers(const Graph& g) {
  GraphNumbers out;
  std::string& k = out.skeleton;
  auto place = [&](SymSite::Where w, size_t item, int64_t index, int64_t element, int64_t i, double d, bool is_double) {
    SymSite s;
    s.where = w;
    s.item = int32_t(item);
    s.index = int32_t(index);
    s.element = int32_t(element);
    out.places.push_back(std::move(s));
    out.ints.push_back(i);
    out.doubles.push_back(d);
    out.is_double.push_back(is_double ? 1 : 0);
  };
  // inf and nan are no polynomial's values (export's JSON writes them as strings): part of the skeleton
  auto finite = [](double d) { return std::isfinite(d); };
  auto not_a_place = [&](double d) { k += std::isnan(d) ? "nan," : d > 0 ? "inf," : "-inf,"; };
  auto ids = [&](const std::vector<ValueId>& v) {
    for (ValueId x : v) k += std::to_string(x) + ",";
    k += ";";
  };
  k += "in:";
  ids(g.inputs);
  k += "out:";
  ids(g.outputs);
  for (size_t v = 0; v < g.values.size(); ++v) {
    const ValueInfo& info = g.values[v];
    k += "\nv" + std::to_string(int(info.kind)) + " " + dtype_name(info.dtype) + " " + info.device.str() + " r" +
         std::to_string(info.sizes.size()) + "/" + std::to_string(info.strides.size()) + (info.requires_grad ? " g" : "") +
         (info.wrapped_number ? " w" : "") + (info.external ? " x" : "");
    for (size_t d = 0; d < info.sizes.size(); ++d) place(SymSite::Size, v, int64_t(d), -1, info.sizes[d], 0, false);
    for (size_t d = 0; d < info.strides.size(); ++d) place(SymSite::Stride, v, int64_t(d), -1, info.strides[d], 0, false);
    if (info.kind == ValueKind::Constant && info.wrapped_number && info.constant.defined() && info.constant.dim() == 0) {
      const bool floating = is_floating(info.constant.dtype());
      const Scalar x = info.constant.item();
      place(SymSite::Value, v, -1, -1, floating ? 0 : x.to_int(), floating ? x.to_double() : 0, floating);
    }
  }
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    k += "\nn" + std::string(node.op) + (node.mutates ? " m" : "") + (node.grad_enabled ? " g" : "") + " in:";
    ids(node.inputs);
    k += "out:";
    ids(node.outputs);
    for (size_t a = 0; a < node.args.size(); ++a) {
      const Arg& arg = node.args[a];
      k += " " + std::to_string(int(arg.kind)) + ":";
      switch (arg.kind) {
        case Arg::Int: place(SymSite::Arg, n, int64_t(a), -1, arg.i, 0, false); break;
        case Arg::Double: finite(arg.d) ? place(SymSite::Arg, n, int64_t(a), -1, 0, arg.d, true) : not_a_place(arg.d); break;
        case Arg::Ints:
          k += std::to_string(arg.ints.size());
          for (size_t e = 0; e < arg.ints.size(); ++e) place(SymSite::Arg, n, int64_t(a), int64_t(e), arg.ints[e], 0, false);
          break;
        case Arg::Doubles:
          k += std::to_string(arg.doubles.size());
          for (size_t e = 0; e < arg.doubles.size(); ++e)
            finite(arg.doubles[e]) ? place(SymSite::Arg, n, int64_t(a), int64_t(e), 0, arg.doubles[e], true)
                                   : not_a_place(arg.doubles[e]);
          break;
        case Arg::String: case Arg::Options: case Arg::Unsupported: k += std::to_string(arg.s.size()) + ":" + arg.s; break;
        default: k += std::to_string(arg.i);
      }
    }
  }
  return out;
}

}  // namespace ember::compiler
