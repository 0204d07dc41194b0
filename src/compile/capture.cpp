// Capture (ember/compile/capture.h): the open session of this thread, which the Tracer kernels
// (capture_kernel.h) feed, and the graph it finishes into.
#include "ember/compile/capture.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>

#include "compile/capture_kernel.h"
#include "compile/passes.h"
#include "ember/core/errors.h"

namespace ember::compiler {

struct CaptureSession::State {
  Graph graph;
  std::unordered_map<const TensorImpl*, ValueId> ids;  // the value each live tensor holds now
  std::vector<Tensor> seen;          // every tensor met, kept alive so no address is reused
  std::vector<Tensor> captured;      // per value: the tensor capture saw (constant folding)
  std::vector<char> written;         // per value: its contents came from ops (or outside, for inputs)
  std::string break_reason;
  std::vector<int64_t> structure_sizes;  // note_size_shaped_structure's
  int64_t ops = 0;
  DispatchKeySet entry_layers;  // the layers on when capture began (autocast)
  std::function<std::string(const std::string&)> break_listener;
  IncludeDispatchKeyGuard* tracer_on = nullptr;
};

namespace {

thread_local CaptureSession::State* t_session = nullptr;

ValueId add_value(CaptureSession::State& s, const Tensor& t, ValueKind kind, bool written) {
  ValueInfo v;
  v.kind = kind;
  v.sizes = Shape(t.sizes().begin(), t.sizes().end());
  v.strides.assign(t.strides().begin(), t.strides().end());
  v.dtype = t.dtype();
  v.device = t.device();
  v.requires_grad = t.requires_grad();
  v.wrapped_number = t.impl()->is_wrapped_number();
  if (kind == ValueKind::Constant) v.constant = t;
  const auto id = ValueId(s.graph.values.size());
  s.graph.values.push_back(std::move(v));
  s.captured.push_back(t);
  s.written.push_back(written);
  s.ids[t.impl()] = id;
  s.seen.push_back(t);
  return id;
}

// The value `t` holds for a reader: what an op made of it, an input, or (first met) a constant.
// An `empty` no op has filled yet was filled by the program outside the dispatcher (a scalar
// turned into a tensor, data copied in): it becomes a constant of the contents it has now.
ValueId read_value(CaptureSession::State& s, const Tensor& t) {
  auto it = s.ids.find(t.impl());
  if (it == s.ids.end()) {
    const ValueId id = add_value(s, t, ValueKind::Constant, true);
    s.graph.values[size_t(id)].external = !t.impl()->is_wrapped_number();
    return id;
  }
  const ValueId id = it->second;
  if (s.written[size_t(id)]) return id;
  Tensor snapshot;
  if (t.impl()->is_wrapped_number()) {
    snapshot = t;  // never written again: the tensor itself
  } else {
    ExcludeDispatchKeyGuard below(DispatchKey::Tracer);
    snapshot = t.clone();
  }
  const ValueId c = add_value(s, snapshot, ValueKind::Constant, true);
  s.ids[t.impl()] = c;  // later readers of t read the snapshot too
  return c;
}

std::string fmt_double(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

std::string printed(const Arg& a) {
  switch (a.kind) {
    case Arg::None: return "None";
    case Arg::Int: return std::to_string(a.i);
    case Arg::Double: return fmt_double(a.d);
    case Arg::Bool: return a.i ? "True" : "False";
    case Arg::String: return "'" + a.s + "'";
    case Arg::Ints: {
      std::string s = "[";
      for (size_t i = 0; i < a.ints.size(); ++i) s += (i ? ", " : "") + std::to_string(a.ints[i]);
      return s + "]";
    }
    case Arg::Doubles: {
      std::string s = "[";
      for (size_t i = 0; i < a.doubles.size(); ++i) s += (i ? ", " : "") + fmt_double(a.doubles[i]);
      return s + "]";
    }
    case Arg::DType: return dtype_name(DType(a.i));
    case Arg::Options: return "options(" + a.s + ")";
    case Arg::Generator: return a.i ? "generator" : "default_generator";
    case Arg::Unsupported: return a.s;
    case Arg::Tensors: break;
  }
  return "";
}

}  // namespace

namespace detail {

bool capturing() { return t_session != nullptr; }

void note_break(const std::string& what) {
  if (!t_session || !t_session->break_reason.empty()) return;
  // inside a captured op (the Tracer layer is off below it) a read is the kernel's own business
  if (local_dispatch_state().excluded.has(DispatchKey::Tracer)) return;
  auto& s = *t_session;
  s.break_reason = what + " (after " + std::to_string(s.ops) + " captured ops)";
  if (s.break_listener) {
    auto listener = std::move(s.break_listener);  // once; and a break inside it is not another
    s.break_reason += listener(what);
  }
}

std::vector<ValueId> values_of_arguments(const char* op, const std::vector<Tensor>& tensors, bool mutates) {
  auto& s = *t_session;
  std::vector<ValueId> ids;
  ids.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (!t.defined()) {
      ids.push_back(kNoValue);
      continue;
    }
    if (i == 0 && mutates && overwrites_first_argument(op)) {
      auto it = s.ids.find(t.impl());
      if (it != s.ids.end() && !s.written[size_t(it->second)]) {
        ids.push_back(it->second);  // filling an empty: not a read of what it held
        continue;
      }
    }
    ids.push_back(read_value(s, t));
  }
  return ids;
}

void note_uncapturable_args(const Node& node) {
  // a replay would hold a raw pointer to a generator it cannot keep alive
  for (const auto& a : node.args)
    if (a.kind == Arg::Generator && a.i != 0) note_break(std::string(node.op) + "() with an explicit Generator");
}

void record_node(Node&& node, const std::vector<Tensor>& results) {
  auto& s = *t_session;
  // grad mode is replayed per node; a layer switched on or off inside (autocast, with its
  // dtype) is not, so the function runs eagerly
  node.grad_enabled = local_dispatch_state().grad_enabled;
  if (local_dispatch_state().included.remove(DispatchKey::Tracer).bits != s.entry_layers.bits)
    note_break("autocast (a dispatcher layer) was switched inside the function");
  for (const auto& r : results)
    if (!r.defined()) {  // (an optional result not computed: a graph value cannot stand for it)
      note_break(std::string(node.op) + "() returned an undefined tensor");
      return;
    }
  const auto index = int32_t(s.graph.nodes.size());
  const bool uninitialised = allocates_uninitialised(node.op);
  for (const auto& r : results) {
    const ValueId id = add_value(s, r, ValueKind::NodeOutput, !uninitialised);
    s.graph.values[size_t(id)].producer = index;
    node.outputs.push_back(id);
  }
  s.graph.nodes.push_back(std::move(node));
  ++s.ops;
}

bool broken() { return t_session && !t_session->break_reason.empty(); }

bool tracing() { return t_session && !broken() && !local_dispatch_state().excluded.has(DispatchKey::Tracer); }

void note_size_shaped_structure(int64_t size) {
  // (inside a captured op's kernel too: a slice there that clamps shapes the op's result)
  if (t_session) t_session->structure_sizes.push_back(size);
}

void record_opaque(const std::string& name, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                   Replay replay, bool mutates, std::vector<Arg> args) {
  if (!t_session) return;
  // node names are const char*: keep each distinct one for the process
  static std::mutex mu;
  static std::set<std::string> names;
  const char* stable;
  {
    std::lock_guard<std::mutex> lock(mu);
    stable = names.insert(name).first->c_str();
  }
  Node node;
  node.op = stable;
  node.mutates = mutates;
  node.args = std::move(args);
  node.inputs = values_of_arguments(node.op, inputs, mutates);
  node.replay = std::move(replay);
  record_node(std::move(node), outputs);
}

Arg to_arg(const Scalar& v) {
  Arg a;
  if (v.is_bool()) {
    a.kind = Arg::Bool;
    a.i = v.to<bool>();
  } else if (v.is_integral()) {
    a.kind = Arg::Int;
    a.i = v.to<int64_t>();
  } else if (v.is_floating()) {
    a.kind = Arg::Double;
    a.d = v.to<double>();
  } else {
    a.kind = Arg::Unsupported;
    a.s = "a complex scalar " + v.str();  // (the value: CSE compares printed arguments)
  }
  return a;
}
Arg to_arg(const std::string& v) {
  Arg a;
  a.kind = Arg::String;
  a.s = v;
  return a;
}
Arg to_arg(DType v) {
  Arg a;
  a.kind = Arg::DType;
  a.i = int64_t(v);
  return a;
}
Arg to_arg(const TensorOptions& v) {
  Arg a;
  a.kind = Arg::Options;
  a.s = std::string(v.dtype ? dtype_name(*v.dtype) : "-") + "," + (v.device ? v.device->str() : "-") + "," +
        (v.requires_grad ? "1" : "0");
  return a;
}

void bad_arg(const char* op, size_t index, const char* expected) {
  throw ValueError(std::string(op) + ": argument " + std::to_string(index) + " of a saved call is not " + expected);
}
Scalar scalar_from(const Arg& a, const char* op, size_t index) {
  if (a.kind == Arg::Bool) return Scalar(a.i != 0);
  if (a.kind == Arg::Int) return Scalar(a.i);
  if (a.kind == Arg::Double) return Scalar(a.d);
  bad_arg(op, index, "a number");
}
std::string string_from(const Arg& a, const char* op, size_t index) {
  if (a.kind != Arg::String) bad_arg(op, index, "a string");
  return a.s;
}
DType dtype_from(const Arg& a, const char* op, size_t index) {
  if (a.kind != Arg::DType || a.i < 0 || a.i >= kNumDTypes) bad_arg(op, index, "a dtype");
  return DType(a.i);
}
TensorOptions options_from(const Arg& a, const char* op, size_t index) {
  if (a.kind != Arg::Options) bad_arg(op, index, "tensor options");
  const size_t c1 = a.s.find(','), c2 = c1 == std::string::npos ? c1 : a.s.find(',', c1 + 1);
  if (c2 == std::string::npos) bad_arg(op, index, "tensor options (dtype,device,requires_grad)");
  const std::string dt = a.s.substr(0, c1), dev = a.s.substr(c1 + 1, c2 - c1 - 1), rg = a.s.substr(c2 + 1);
  TensorOptions o;
  if (dt != "-") {
    bool found = false;
    for (int k = 0; k < kNumDTypes && !found; ++k)
      if (dt == dtype_name(DType(k))) o.dtype = DType(k), found = true;
    if (!found) bad_arg(op, index, "tensor options with a known dtype");
  }
  if (dev != "-") o.device = Device(dev);  // (Device's parser rejects what it does not know)
  if (rg != "0" && rg != "1") bad_arg(op, index, "tensor options with requires_grad 0 or 1");
  o.requires_grad = rg == "1";
  return o;
}

namespace {
std::map<std::string, ReplayFactory>& replay_factories() {
  static std::map<std::string, ReplayFactory> f;
  return f;
}
}  // namespace

void register_replay_factory(const char* op, ReplayFactory make) { replay_factories()[op] = std::move(make); }

std::pair<const char*, Replay> replay_for(const std::string& op, const std::vector<Arg>& args) {
  auto it = replay_factories().find(op);
  if (it == replay_factories().end())
    throw ValueError("a saved graph calls '" + op + "', which is neither an ember op nor a custom op registered in this "
                     "process (import the module that defines it, or load its library, before loading the program)");
  return {it->first.c_str(), it->second(args)};
}

void register_saved_op(const std::string& name, SavedOpRun run) {
  register_replay_factory(name.c_str(), [name, run](const std::vector<Arg>& args) -> Replay {
    if (args.size() != 2 || args[0].kind != Arg::Tensors || args[1].kind != Arg::String)
      throw ValueError(name + ": a saved call does not have the form (tensors, call)");
    const int64_t n = args[0].i;
    const std::string spec = args[1].s;
    return [name, n, spec, run](const std::vector<Tensor>& in) {
      EMBER_CHECK_VALUE(int64_t(in.size()) == n, name, ": a saved call has ", n, " inputs, got ", in.size());
      return run(spec, in);
    };
  });
}


}  // namespace detail

CaptureSession::CaptureSession(const std::vector<Tensor>& inputs) : state_(std::make_unique<State>()) {
  EMBER_CHECK(!t_session, "ember.compile: a capture is already open on this thread (compiled functions do not nest "
              "their captures; the inner one runs eagerly)");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    EMBER_CHECK(t.defined(), "ember.compile: input ", i, " is an undefined tensor");
    auto it = state_->ids.find(t.impl());
    const ValueId id = it != state_->ids.end() ? it->second : add_value(*state_, t, ValueKind::Input, true);
    if (it == state_->ids.end()) state_->graph.values[size_t(id)].input_index = int32_t(i);
    state_->graph.inputs.push_back(id);
  }
  t_session = state_.get();
  state_->entry_layers = local_dispatch_state().included;
  state_->tracer_on = new IncludeDispatchKeyGuard(DispatchKey::Tracer);
}

CaptureSession::~CaptureSession() { close(); }

void CaptureSession::close() {
  if (t_session != state_.get()) return;
  delete state_->tracer_on;
  state_->tracer_on = nullptr;
  t_session = nullptr;
}

std::string CaptureSession::break_reason() const { return state_->break_reason; }
void CaptureSession::on_break(std::function<std::string(const std::string&)> listener) {
  state_->break_listener = std::move(listener);
}
int64_t CaptureSession::ops_recorded() const { return state_->ops; }

Graph CaptureSession::finish(const std::vector<Tensor>& outputs, bool simplify) {
  EMBER_CHECK(t_session == state_.get(), "ember.compile: finish() on a capture that is not open");
  auto& s = *state_;
  for (const auto& t : outputs) {
    EMBER_CHECK(t.defined(), "ember.compile: the function returned an undefined tensor");
    s.graph.outputs.push_back(read_value(s, t));
  }
  delete s.tracer_on;
  s.tracer_on = nullptr;
  t_session = nullptr;
  Graph g = std::move(s.graph);
  g.ops_captured = s.ops;
  run_graph_passes(g, s.captured, simplify);  // the captured tensors go with the session
  return g;
}

CaptureSession::Finished CaptureSession::finish_both(const std::vector<Tensor>& outputs) {
  Graph raw = finish(outputs, /*simplify=*/false);
  Graph simplified = raw;  // value ids are kept by the passes, so the captured tensors still match
  run_graph_passes(simplified, state_->captured, /*simplify=*/true);
  return {std::move(raw), std::move(simplified)};
}

const std::vector<int64_t>& CaptureSession::structure_sizes() const { return state_->structure_sizes; }

std::string guard_signature(const std::vector<Tensor>& all, bool with_sizes) {
  std::string s = "grad=" + std::to_string(local_dispatch_state().grad_enabled) +
                  " layers=" + std::to_string(local_dispatch_state().included.bits);
  char buf[32];
  for (size_t i = 0; i < all.size(); ++i) {
    const Tensor& t = all[i];
    s += '|';
    if (!t.defined()) {
      s += "undefined";
      continue;
    }
    s += dtype_name(t.dtype());
    s += '@';
    s += t.device().str();
    if (t.requires_grad()) s += "+g";
    s += '[';
    if (with_sizes) {
      for (int64_t d : t.sizes()) s += std::to_string(d) + ',';
      s += '/';
      for (int64_t d : t.strides()) s += std::to_string(d) + ',';
    } else {
      s += "rank " + std::to_string(t.dim()) + (t.is_contiguous() ? ",contiguous" : "");
    }
    s += ']';
    for (size_t j = 0; j < i; ++j)
      if (all[j].defined() && all[j].impl() == t.impl()) {
        std::snprintf(buf, sizeof buf, "=%zu", j);
        s += buf;
        break;
      }
  }
  return s;
}

// ---- Graph

bool Node::random() const {
  for (const auto& a : args)
    if (a.kind == Arg::Generator) return true;
  return false;
}

std::string Node::attrs() const {
  std::string s;
  for (const auto& a : args)
    if (a.kind != Arg::Tensors) s += (s.empty() ? "" : ", ") + printed(a);
  return s;
}

bool Graph::has_mutation() const {
  return std::any_of(nodes.begin(), nodes.end(), [](const Node& n) { return n.mutates; });
}

std::string Graph::str() const {
  std::ostringstream os;
  auto name = [&](ValueId v) { return v == kNoValue ? std::string("None") : "%" + std::to_string(v); };
  auto shape = [&](ValueId v) {
    const auto& i = values[size_t(v)];
    std::string s = std::string(dtype_name(i.dtype)) + "[";
    for (size_t d = 0; d < i.sizes.size(); ++d) s += (d ? ", " : "") + std::to_string(i.sizes[d]);
    return s + "]";
  };
  for (size_t i = 0; i < inputs.size(); ++i) os << "  input " << i << ": " << name(inputs[i]) << " " << shape(inputs[i]) << "\n";
  for (size_t v = 0; v < values.size(); ++v)
    if (values[v].kind == ValueKind::Constant)
      os << "  constant " << name(ValueId(v)) << " " << shape(ValueId(v)) << "\n";
  for (const auto& n : nodes) {
    os << "  ";
    for (size_t i = 0; i < n.outputs.size(); ++i) os << (i ? ", " : "") << name(n.outputs[i]) << " " << shape(n.outputs[i]);
    os << (n.outputs.empty() ? "" : " = ") << n.op << "(";
    for (size_t i = 0; i < n.inputs.size(); ++i) os << (i ? ", " : "") << name(n.inputs[i]);
    const std::string attrs = n.attrs();
    if (!attrs.empty()) os << (n.inputs.empty() ? "" : ", ") << attrs;
    os << (n.opaque() ? ", opaque" : "") << ")\n";
  }
  os << "  return";
  for (size_t i = 0; i < outputs.size(); ++i) os << (i ? ", " : " ") << name(outputs[i]);
  os << "\n";
  return os.str();
}

}  // namespace ember::compiler
