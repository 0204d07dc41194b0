// Exported programs (ember/export.h): the graph as JSON and its constants as safetensors in one
// zip, and the checked way back.
#include "ember/export.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "compile/capture_kernel.h"
#include "compile/passes.h"
#include "ember/compile/compiled_template.h"
#include "core/json_string.h"
#include "ember/core/backend.h"
#include "ember/ops.h"
#include "ember/serialize/serialize.h"
#include "serialize/json.h"
#include "serialize/zip.h"

namespace ember::exporting {

using compiler::Arg;
using compiler::Graph;
using compiler::Node;
using compiler::ValueId;
using compiler::ValueInfo;
using compiler::ValueKind;

namespace {

constexpr const char* kGraphEntry = "program/graph.json";
constexpr const char* kConstantsEntry = "program/constants.safetensors";
// 2: symbolic sizes (dynamic dims); version 1 files (no dynamic dims) still load
constexpr int kVersion = 2;

// ---- writing

std::string sizes_str(const Shape& s) {
  std::string o = "[";
  for (size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
  return o + "]";
}

void put_ints(std::string& o, const std::vector<int64_t>& v) {
  o += '[';
  for (size_t i = 0; i < v.size(); ++i) o += (i ? "," : "") + std::to_string(v[i]);
  o += ']';
}

// JSON has no infinities or NaN: those are the strings "inf", "-inf", "nan" (a causal mask's fill).
std::string number(double d) {
  if (std::isnan(d)) return "\"nan\"";
  if (std::isinf(d)) return d > 0 ? "\"inf\"" : "\"-inf\"";
  std::ostringstream os;
  os.precision(17);
  os << d;
  return os.str();
}

const char* kind_name(Arg::Kind k) {
  switch (k) {
    case Arg::None: return "none";
    case Arg::Tensors: return "tensors";
    case Arg::Int: return "int";
    case Arg::Double: return "double";
    case Arg::Bool: return "bool";
    case Arg::String: return "string";
    case Arg::Ints: return "ints";
    case Arg::Doubles: return "doubles";
    case Arg::DType: return "dtype";
    case Arg::Options: return "options";
    case Arg::Generator: return "generator";
    case Arg::Unsupported: return "unsupported";
  }
  return "none";
}

void put_arg(std::string& o, const Node& n, const Arg& a) {
  EMBER_CHECK_VALUE(a.kind != Arg::Unsupported, "export: ", n.op, " takes ", a.s, ", which a saved program cannot hold");
  EMBER_CHECK_VALUE(a.kind != Arg::Generator || a.i == 0, "export: ", n.op,
                    " uses an explicit Generator, which a saved program cannot hold");
  o += "[\"";
  o += kind_name(a.kind);
  o += "\",";
  switch (a.kind) {
    case Arg::Tensors: case Arg::Int: case Arg::Bool: case Arg::DType: case Arg::Generator: o += std::to_string(a.i); break;
    case Arg::Double: o += number(a.d); break;
    case Arg::String: case Arg::Options: append_json_string(o, a.s); break;
    case Arg::Ints: put_ints(o, a.ints); break;
    case Arg::Doubles: {
      o += '[';
      for (size_t i = 0; i < a.doubles.size(); ++i) o += (i ? "," : "") + number(a.doubles[i]);
      o += ']';
      break;
    }
    default: o += "null";
  }
  o += ']';
}

const char* site_name(compiler::SymSite::Where w) {
  return w == compiler::SymSite::Size ? "size" : w == compiler::SymSite::Stride ? "stride"
       : w == compiler::SymSite::Arg ? "arg" : "value";
}

// "symbols": the dynamic dims; "symbolic": every number of the graph that depends on them, as a
// polynomial ([[coef, power of dim 0, power of dim 1, ...], ...]) with its readable form beside.
void put_symbolic(std::string& o, const compiler::SymbolicShapes* sym) {
  o += "\"symbols\":[";
  if (sym)
    for (size_t i = 0; i < sym->names.size(); ++i) {
      o += i ? "," : "";
      o += "{\"name\":";
      append_json_string(o, sym->names[i]);
      o += ",\"min\":" + std::to_string(sym->min[i]) + ",\"max\":" + std::to_string(sym->max[i]) +
           ",\"example\":" + std::to_string(sym->example[i]) + "}";
    }
  o += "],\n\"symbolic\":[";
  if (sym)
    for (size_t k = 0; k < sym->sites.size(); ++k) {
      const auto& site = sym->sites[k];
      o += k ? ",\n" : "\n";
      o += std::string("{\"at\":\"") + site_name(site.where) + "\",\"item\":" + std::to_string(site.item) +
           ",\"index\":" + std::to_string(site.index) + ",\"element\":" + std::to_string(site.element) + ",\"poly\":[";
      for (size_t t = 0; t < site.poly.terms.size(); ++t) {
        std::vector<int64_t> term{site.poly.terms[t].coef};
        for (uint8_t p : site.poly.terms[t].power) term.push_back(p);
        o += t ? "," : "";
        put_ints(o, term);
      }
      o += "],\"expr\":";
      append_json_string(o, site.poly.str(sym->names));
      o += "}";
    }
  o += "],\n";
}

std::string graph_to_json(const Graph& g, const std::map<std::string, std::string>& metadata,
                          const compiler::SymbolicShapes* sym) {
  std::string o = "{\"format\":\"ember.export\",\"version\":" + std::to_string(kVersion) + ",\n\"metadata\":{";
  size_t k = 0;
  for (const auto& [key, value] : metadata) {
    o += k++ ? "," : "";
    append_json_string(o, key);
    o += ':';
    append_json_string(o, value);
  }
  o += "},\n";
  put_symbolic(o, sym);
  o += "\"inputs\":";
  put_ints(o, std::vector<int64_t>(g.inputs.begin(), g.inputs.end()));
  o += ",\n\"outputs\":";
  put_ints(o, std::vector<int64_t>(g.outputs.begin(), g.outputs.end()));
  o += ",\n\"values\":[";
  for (size_t v = 0; v < g.values.size(); ++v) {
    const ValueInfo& i = g.values[v];
    o += v ? ",\n" : "\n";
    o += "{\"kind\":\"";
    o += i.kind == ValueKind::Input ? "input" : i.kind == ValueKind::Constant ? "constant" : "node";
    o += "\",\"dtype\":\"" + std::string(dtype_name(i.dtype)) + "\",\"device\":";
    append_json_string(o, i.device.str());
    o += ",\"sizes\":";
    put_ints(o, std::vector<int64_t>(i.sizes.begin(), i.sizes.end()));
    o += ",\"strides\":";
    put_ints(o, i.strides);
    o += std::string(",\"requires_grad\":") + (i.requires_grad ? "true" : "false") +
         ",\"wrapped\":" + (i.wrapped_number ? "true" : "false") + "}";
  }
  o += "],\n\"nodes\":[";
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    EMBER_CHECK_VALUE(!node.opaque(), "export: '", node.op,
                      "' is opaque Python code (a custom op or an autograd.Function), which a saved program "
                      "cannot run");
    o += n ? ",\n" : "\n";
    o += "{\"op\":";
    append_json_string(o, node.op);
    o += ",\"inputs\":";
    put_ints(o, std::vector<int64_t>(node.inputs.begin(), node.inputs.end()));
    o += ",\"outputs\":";
    put_ints(o, std::vector<int64_t>(node.outputs.begin(), node.outputs.end()));
    o += ",\"args\":[";
    for (size_t a = 0; a < node.args.size(); ++a) {
      o += a ? "," : "";
      put_arg(o, node, node.args[a]);
    }
    o += std::string("],\"mutates\":") + (node.mutates ? "true" : "false") +
         ",\"grad\":" + (node.grad_enabled ? "true" : "false") + "}";
  }
  o += "\n]}\n";
  return o;
}

// ---- reading (every field checked)

using json::Json;

[[noreturn]] void bad(const std::string& what) { throw ValueError("export: not a valid ember program: " + what); }

const Json& member(const Json& o, const char* key) {
  if (o.kind != Json::Object) bad(std::string("expected an object holding '") + key + "'");
  for (size_t i = 0; i < o.keys.size(); ++i)
    if (o.keys[i] == key) return o.values[i];
  bad(std::string("missing '") + key + "'");
}

const Json* find_member(const Json& o, const char* key) {
  for (size_t i = 0; i < o.keys.size(); ++i)
    if (o.keys[i] == key) return &o.values[i];
  return nullptr;
}

int64_t as_int(const Json& j, const char* what) {
  if (j.kind != Json::Number) bad(std::string(what) + " is not a number");
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(j.text, &used);
  } catch (const std::exception&) {
    bad(std::string(what) + " is not an integer");
  }
  if (used != j.text.size()) bad(std::string(what) + " is not an integer");
  return v;
}

double as_double(const Json& j, const char* what) {
  if (j.kind == Json::String) {
    if (j.text == "inf") return std::numeric_limits<double>::infinity();
    if (j.text == "-inf") return -std::numeric_limits<double>::infinity();
    if (j.text == "nan") return std::numeric_limits<double>::quiet_NaN();
  }
  if (j.kind != Json::Number) bad(std::string(what) + " is not a number");
  try {
    return std::stod(j.text);
  } catch (const std::exception&) {
    bad(std::string(what) + " is not a number");
  }
}

bool as_bool(const Json& j, const char* what) {
  if (j.kind != Json::Bool) bad(std::string(what) + " is not true/false");
  return j.b;
}

const std::string& as_string(const Json& j, const char* what) {
  if (j.kind != Json::String) bad(std::string(what) + " is not a string");
  return j.text;
}

std::vector<int64_t> as_ints(const Json& j, const char* what) {
  if (j.kind != Json::Array) bad(std::string(what) + " is not a list");
  std::vector<int64_t> v;
  for (const auto& e : j.arr) v.push_back(as_int(e, what));
  return v;
}

DType dtype_named(const std::string& s) {
  for (int k = 0; k < kNumDTypes; ++k)
    if (s == dtype_name(DType(k))) return DType(k);
  bad("unknown dtype '" + s + "'");
}

Arg parse_arg(const Json& j) {
  if (j.kind != Json::Array || j.arr.size() != 2) bad("an op argument is not a [kind, value] pair");
  const std::string& kind = as_string(j.arr[0], "an argument's kind");
  const Json& v = j.arr[1];
  Arg a;
  if (kind == "none") a.kind = Arg::None;
  else if (kind == "tensors") a.kind = Arg::Tensors, a.i = as_int(v, "a tensor slot count");
  else if (kind == "int") a.kind = Arg::Int, a.i = as_int(v, "an int argument");
  else if (kind == "bool") a.kind = Arg::Bool, a.i = as_int(v, "a bool argument");
  else if (kind == "dtype") a.kind = Arg::DType, a.i = as_int(v, "a dtype argument");
  else if (kind == "generator") a.kind = Arg::Generator, a.i = as_int(v, "a generator argument");
  else if (kind == "double") a.kind = Arg::Double, a.d = as_double(v, "a number argument");
  else if (kind == "string") a.kind = Arg::String, a.s = as_string(v, "a string argument");
  else if (kind == "options") a.kind = Arg::Options, a.s = as_string(v, "an options argument");
  else if (kind == "ints") a.kind = Arg::Ints, a.ints = as_ints(v, "an int list argument");
  else if (kind == "doubles") {
    a.kind = Arg::Doubles;
    if (v.kind != Json::Array) bad("a number list argument is not a list");
    for (const auto& e : v.arr) a.doubles.push_back(as_double(e, "a number list argument"));
  } else {
    bad("unknown argument kind '" + kind + "'");
  }
  return a;
}

// The "symbols" and "symbolic" members (nullptr: no dynamic dims), checked against g by Program.
std::shared_ptr<const compiler::SymbolicShapes> parse_symbolic(const Json& doc) {
  const Json* symbols = find_member(doc, "symbols");
  const Json* sites = find_member(doc, "symbolic");
  if (!symbols && !sites) return nullptr;
  if (!symbols || !sites || symbols->kind != Json::Array || sites->kind != Json::Array)
    bad("'symbols' and 'symbolic' must both be lists");
  if (symbols->arr.empty()) {
    if (!sites->arr.empty()) bad("symbolic sizes without dynamic dims");
    return nullptr;
  }
  auto sym = std::make_shared<compiler::SymbolicShapes>();
  for (const auto& d : symbols->arr) {
    sym->names.push_back(as_string(member(d, "name"), "a dynamic dim's name"));
    sym->min.push_back(as_int(member(d, "min"), "a dynamic dim's min"));
    sym->max.push_back(as_int(member(d, "max"), "a dynamic dim's max"));
    sym->example.push_back(as_int(member(d, "example"), "a dynamic dim's example size"));
  }
  for (const auto& j : sites->arr) {
    compiler::SymSite site;
    const std::string& at = as_string(member(j, "at"), "a symbolic size's place");
    site.where = at == "size" ? compiler::SymSite::Size : at == "stride" ? compiler::SymSite::Stride
               : at == "arg" ? compiler::SymSite::Arg : at == "value" ? compiler::SymSite::Value : (bad("a symbolic size at '" + at + "'"), compiler::SymSite::Size);
    auto small = [](const Json& v, const char* what) {
      const int64_t x = as_int(v, what);
      if (x < -1 || x > (int64_t(1) << 30)) bad(std::string(what) + " is out of range");
      return int32_t(x);
    };
    site.item = small(member(j, "item"), "a symbolic size's item");
    site.index = small(member(j, "index"), "a symbolic size's index");
    site.element = small(member(j, "element"), "a symbolic size's element");
    const Json& poly = member(j, "poly");
    if (poly.kind != Json::Array) bad("a symbolic size's poly is not a list");
    for (const auto& term : poly.arr) {
      const auto v = as_ints(term, "a symbolic size's term");
      if (v.empty() || v.size() > sym->names.size() + 1) bad("a symbolic size's term has the wrong length");
      compiler::SymTerm t;
      t.coef = v[0];
      for (size_t k = 1; k < v.size(); ++k) {
        if (v[k] < 0 || v[k] > 4) bad("a symbolic size's power is out of range");
        t.power.push_back(uint8_t(v[k]));
      }
      site.poly.terms.push_back(std::move(t));
    }
    sym->sites.push_back(std::move(site));
  }
  return sym;
}

Graph parse_graph(const std::string& text, const std::map<std::string, Tensor>& constants,
                  std::map<std::string, std::string>& metadata, std::optional<Device> target,
                  std::shared_ptr<const compiler::SymbolicShapes>& symbolic) {
  const Json doc = json::JsonParser(text, "export: program/graph.json").parse_document();
  if (as_string(member(doc, "format"), "format") != "ember.export") bad("format is not 'ember.export'");
  const int64_t version = as_int(member(doc, "version"), "version");
  if (version < 1 || version > kVersion)
    bad("version " + std::to_string(version) + " (this ember reads 1 to " + std::to_string(kVersion) + ")");
  if (version >= 2) symbolic = parse_symbolic(doc);
  const Json& meta = member(doc, "metadata");
  if (meta.kind != Json::Object) bad("metadata is not an object");
  for (size_t i = 0; i < meta.keys.size(); ++i) metadata[meta.keys[i]] = as_string(meta.values[i], "a metadata value");
  Graph g;
  const Json& values = member(doc, "values");
  if (values.kind != Json::Array) bad("values is not a list");
  std::vector<char> defined(values.arr.size(), 0);
  auto id_in_range = [&](int64_t v, const char* what) {
    if (v < 0 || v >= int64_t(values.arr.size())) bad(std::string(what) + " names value " + std::to_string(v) + " of " +
                                                      std::to_string(values.arr.size()));
    return ValueId(v);
  };
  for (size_t v = 0; v < values.arr.size(); ++v) {
    const Json& j = values.arr[v];
    ValueInfo info;
    const std::string& kind = as_string(member(j, "kind"), "a value's kind");
    info.kind = kind == "input" ? ValueKind::Input : kind == "constant" ? ValueKind::Constant
              : kind == "node" ? ValueKind::NodeOutput : (bad("unknown value kind '" + kind + "'"), ValueKind::Input);
    info.dtype = dtype_named(as_string(member(j, "dtype"), "a value's dtype"));
    info.device = Device(as_string(member(j, "device"), "a value's device"));
    if (target) info.device = *target;
    for (int64_t d : as_ints(member(j, "sizes"), "a value's sizes")) {
      if (d < 0 || d > (int64_t(1) << 40)) bad("a value has size " + std::to_string(d));
      info.sizes.push_back(d);
    }
    info.strides = as_ints(member(j, "strides"), "a value's strides");
    if (info.strides.size() != info.sizes.size()) bad("a value's strides and sizes differ in length");
    info.requires_grad = as_bool(member(j, "requires_grad"), "requires_grad");
    info.wrapped_number = as_bool(member(j, "wrapped"), "wrapped");
    if (info.kind == ValueKind::Constant) {
      auto it = constants.find("v" + std::to_string(v));
      if (it == constants.end()) bad("constant " + std::to_string(v) + " is missing from the tensors");
      const Tensor& t = it->second;
      if (t.dtype() != info.dtype || Shape(t.sizes().begin(), t.sizes().end()) != info.sizes)
        bad("constant " + std::to_string(v) + " does not have the declared dtype and shape");
      info.constant = info.device == t.device() ? t : t.to(info.device);
      if (info.wrapped_number) info.constant.impl()->set_wrapped_number(true);
      info.external = true;  // the program's own parameters: written in place, never copied per call
      defined[v] = 1;
    }
    g.values.push_back(std::move(info));
  }
  const Json& inputs = member(doc, "inputs");
  if (inputs.kind != Json::Array) bad("inputs is not a list");
  for (size_t i = 0; i < inputs.arr.size(); ++i) {
    const ValueId v = id_in_range(as_int(inputs.arr[i], "an input"), "an input");
    if (g.values[size_t(v)].kind != ValueKind::Input) bad("input " + std::to_string(i) + " is not an input value");
    g.values[size_t(v)].input_index = int32_t(i);
    g.inputs.push_back(v);
    defined[size_t(v)] = 1;
  }
  const Json& nodes = member(doc, "nodes");
  if (nodes.kind != Json::Array) bad("nodes is not a list");
  for (size_t n = 0; n < nodes.arr.size(); ++n) {
    const Json& j = nodes.arr[n];
    Node node;
    const std::string& op = as_string(member(j, "op"), "an op name");
    const Json& args = member(j, "args");
    if (args.kind != Json::Array) bad("an op's args is not a list");
    for (const auto& a : args.arr) node.args.push_back(parse_arg(a));
    if (target)  // factories make their tensors on the program's device
      for (size_t i = 0; i < node.args.size(); ++i)
        if (node.args[i].kind == Arg::Options) {
          TensorOptions o = compiler::detail::options_from(node.args[i], op.c_str(), i);
          if (o.device) o.device = *target;
          node.args[i] = compiler::detail::to_arg(o);
        }
    auto [name, replay] = compiler::detail::replay_for(op, node.args);  // checks the op and its arguments
    node.op = name;
    node.replay = std::move(replay);
    for (int64_t v : as_ints(member(j, "inputs"), "a node's inputs")) {
      if (v == compiler::kNoValue) {
        node.inputs.push_back(compiler::kNoValue);
        continue;
      }
      const ValueId id = id_in_range(v, "a node's input");
      if (!defined[size_t(id)]) bad(op + " reads value " + std::to_string(id) + " before anything defines it");
      node.inputs.push_back(id);
    }
    size_t slots = 0;
    for (const auto& a : node.args)
      if (a.kind == Arg::Tensors) slots += size_t(a.i);
    if (slots != node.inputs.size()) bad(op + " has " + std::to_string(node.inputs.size()) + " inputs for " +
                                         std::to_string(slots) + " tensor arguments");
    for (int64_t v : as_ints(member(j, "outputs"), "a node's outputs")) {
      const ValueId id = id_in_range(v, "a node's output");
      if (defined[size_t(id)] || g.values[size_t(id)].kind != ValueKind::NodeOutput)
        bad(op + " defines value " + std::to_string(id) + " twice or over an input or constant");
      g.values[size_t(id)].producer = int32_t(n);
      defined[size_t(id)] = 1;
      node.outputs.push_back(id);
    }
    node.mutates = as_bool(member(j, "mutates"), "mutates");
    node.grad_enabled = as_bool(member(j, "grad"), "grad");
    g.nodes.push_back(std::move(node));
  }
  for (int64_t v : as_ints(member(doc, "outputs"), "outputs")) {
    const ValueId id = id_in_range(v, "an output");
    if (!defined[size_t(id)]) bad("output value " + std::to_string(id) + " is never defined");
    g.outputs.push_back(id);
  }
  g.ops_captured = int64_t(g.nodes.size());
  return g;
}

}  // namespace

Program::Program(compiler::Graph graph, std::map<std::string, std::string> metadata,
                 std::shared_ptr<const compiler::SymbolicShapes> symbolic, bool compile_now)
    : metadata_(std::move(metadata)), symbolic_(std::move(symbolic)) {
  if (symbolic_) binders_ = symbolic_->check(graph);
  graph_ = graph;
  if (compile_now) compiled_ = compiler::compile_graph(std::move(graph));
}

std::shared_ptr<compiler::CompiledGraph> Program::compiled() const {
  std::lock_guard<std::mutex> lock(specialisations_->mu);
  if (!compiled_) compiled_ = compiler::compile_graph(graph_);
  return compiled_;
}

std::shared_ptr<compiler::CompiledGraph> Program::specialise(const std::vector<int64_t>& dims, bool fuse) const {
  EMBER_CHECK_VALUE(symbolic_, "exported program: specialise() on a program without dynamic dims");
  EMBER_CHECK_VALUE(dims.size() == symbolic_->names.size(), "exported program: specialise() takes ",
                    symbolic_->names.size(), " sizes, got ", dims.size());
  compiler::Graph g = symbolic_->specialise(graph_, dims);
  compiler::run_graph_passes(g, {}, /*simplify=*/true);  // (no captured tensors at these sizes: no folding)
  return compiler::compile_graph(std::move(g), {.fuse = fuse});
}

const compiler::Graph& Program::graph() const { return graph_; }
int64_t Program::num_inputs() const { return int64_t(graph_.inputs.size()); }

std::shared_ptr<compiler::CompiledGraph> Program::specialised(const std::vector<int64_t>& dims) const {
  if (dims == symbolic_->example) return compiled();
  auto& cache = *specialisations_;
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    auto it = cache.graphs.find(dims);
    if (it != cache.graphs.end()) {
      it->second.second = ++cache.clock;
      return it->second.first;
    }
  }
  // built outside the lock (fusion may call the system compiler the first time)
  auto compile_at = [this](const std::vector<int64_t>& at) {
    return compiler::compile_graph(symbolic_->specialise(graph(), at));
  };
  std::shared_ptr<const compiler::CompiledTemplate> fitted;
  bool fit = false;
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    fitted = cache.fitted;
    // (a second new set of sizes: sizes do vary; EMBER_COMPILE_TEMPLATES=0 compiles each, to compare)
    static const bool templates = [] {
      const char* env = std::getenv("EMBER_COMPILE_TEMPLATES");
      return !(env && std::string(env) == "0");
    }();
    fit = templates && !cache.fit_tried && !cache.graphs.empty();
    cache.fit_tried = cache.fit_tried || fit;
  }
  if (fit) {
    std::string why;
    fitted = compiler::fit_template(*symbolic_, compile_at, why);
    std::lock_guard<std::mutex> lock(cache.mu);
    cache.fitted = fitted;
    cache.not_fitted = fitted ? "" : why;
  }
  std::shared_ptr<compiler::CompiledGraph> built = fitted ? fitted->at(dims) : nullptr;
  const bool renumbered = built != nullptr;
  if (!built) built = compile_at(dims);
  std::lock_guard<std::mutex> lock(cache.mu);
  ++(renumbered ? cache.renumbered : cache.compiled);
  if (cache.graphs.size() >= 16) {
    auto oldest = cache.graphs.begin();
    for (auto it = cache.graphs.begin(); it != cache.graphs.end(); ++it)
      if (it->second.second < oldest->second.second) oldest = it;
    cache.graphs.erase(oldest);
  }
  cache.graphs[dims] = {built, ++cache.clock};
  return built;
}

Program::SpecialisationStats Program::specialisation_stats() const {
  std::lock_guard<std::mutex> lock(specialisations_->mu);
  return {specialisations_->renumbered, specialisations_->compiled, specialisations_->not_fitted};
}

std::vector<Tensor> Program::run(const std::vector<Tensor>& inputs) const {
  const Graph& g = graph();
  EMBER_CHECK_VALUE(inputs.size() == g.inputs.size(), "exported program: expected ", g.inputs.size(), " inputs, got ",
                    inputs.size());
  std::shared_ptr<compiler::CompiledGraph> compiled = symbolic_ ? nullptr : this->compiled();
  if (symbolic_) compiled = specialised(symbolic_->bind(g, binders_, inputs));
  return run_exact(*compiled, inputs);
}

std::vector<Tensor> Program::run_exact(const compiler::CompiledGraph& compiled, const std::vector<Tensor>& inputs) const {
  std::vector<ValueInfo> wants;  // (read without building a renumbered compilation's graph)
  for (size_t i = 0; i < inputs.size(); ++i) wants.push_back(compiled.input_info(i));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueInfo& want = wants[i];
    const Tensor& t = inputs[i];
    EMBER_CHECK_VALUE(t.defined(), "exported program: input ", i, " is undefined");
    EMBER_CHECK_VALUE(t.dtype() == want.dtype && t.device() == want.device &&
                          Shape(t.sizes().begin(), t.sizes().end()) == want.sizes,
                      "exported program: input ", i, " must be ", dtype_name(want.dtype), " on ", want.device.str(),
                      " of size ", symbolic_ ? symbolic_->describe_sizes(graph(), graph().inputs[i]) : sizes_str(want.sizes),
                      " (as exported), got ", dtype_name(t.dtype()), " on ", t.device().str(),
                      " of size ", t.sizes());
  }
  // the graph was captured from contiguous-or-not inputs; give it the layout it saw
  std::vector<Tensor> in;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueInfo& want = wants[i];
    in.push_back(std::vector<int64_t>(inputs[i].strides().begin(), inputs[i].strides().end()) == want.strides
                     ? inputs[i] : inputs[i].contiguous());
  }
  return compiled.run(in);
}

std::string Program::graph_json() const { return graph_to_json(graph(), metadata_, symbolic_.get()); }

std::string Program::save_to_bytes() const {
  const Graph& g = graph();
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].kind == ValueKind::Constant && g.values[v].constant.defined())
      tensors.emplace_back("v" + std::to_string(v), g.values[v].constant.detach().contiguous().cpu());
  serialize::ZipWriter zip;
  zip.add(kGraphEntry, graph_to_json(g, metadata_, symbolic_.get()));
  zip.add(kConstantsEntry, safetensors::save_to_bytes(tensors, {{"format", "ember.export"}}));
  return zip.finish();
}

void Program::save(const std::string& path) const { ember::atomic_write_file(path, save_to_bytes()); }

namespace {
Program load_archive(const std::string& bytes, std::optional<Device> device, bool verify_crc) {
  // "cuda" means the current GPU, as everywhere: the program's inputs must then be on cuda:N
  // (tensors always carry an index), not on an index-less device no tensor has.
  if (device && !device->is_cpu()) device = resolve_device(*device);
  serialize::ZipReader zip(bytes.data(), bytes.size(), verify_crc);
  const auto* graph = zip.find(kGraphEntry);
  const auto* consts = zip.find(kConstantsEntry);
  if (!graph || !consts) bad(std::string("it lacks ") + (graph ? kConstantsEntry : kGraphEntry));
  std::map<std::string, Tensor> constants;
  for (auto& [name, t] : safetensors::load_from_bytes(std::string(zip.read(*consts)))) constants[name] = t;
  std::map<std::string, std::string> metadata;
  std::shared_ptr<const compiler::SymbolicShapes> symbolic;
  Graph g = parse_graph(std::string(zip.read(*graph)), constants, metadata, device, symbolic);
  return Program(std::move(g), std::move(metadata), std::move(symbolic));
}
}  // namespace

Program with_symbolic(const Program& p, const std::string& text, bool caller_binds) {
  const Json doc = json::JsonParser(text, "export: symbolic sizes").parse_document();
  auto symbolic = parse_symbolic(doc);
  if (symbolic && caller_binds) {
    auto own = std::make_shared<compiler::SymbolicShapes>(*symbolic);
    own->caller_binds = true;
    symbolic = own;
  }
  return Program(p.graph(), p.metadata(), std::move(symbolic), /*compile_now=*/false);
}

Program load_from_bytes(const std::string& bytes, std::optional<Device> device) {
  return load_archive(bytes, device, /*verify_crc=*/true);
}

std::shared_ptr<const compiler::SymbolicShapes> detail::parse_symbolic_json(const std::string& text) {
  return parse_symbolic(json::JsonParser(text, "export: symbolic sizes").parse_document());
}

Program detail::load_from_bytes_unchecked_crc(const std::string& bytes) {
  return load_archive(bytes, std::nullopt, /*verify_crc=*/false);
}

Program load(const std::string& path, std::optional<Device> device) {
  std::ifstream f(path, std::ios::binary);
  EMBER_CHECK_VALUE(f.good(), "export: cannot open ", path);
  std::stringstream buf;
  buf << f.rdbuf();
  return load_from_bytes(buf.str(), device);
}

}  // namespace ember::exporting
