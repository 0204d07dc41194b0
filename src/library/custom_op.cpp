// C++ custom operators (ember/library.h): the registry, dispatch by device, autograd, the profiler
// event, and how compile captures and export saves a call.
#include "ember/library.h"

#include <cctype>
#include <map>
#include <memory>
#include <mutex>

#include "autograd/record.h"
#include "compile/capture_kernel.h"
#include "ember/compile/capture.h"
#include "ember/dispatch/op_recording.h"

namespace ember::library {

namespace {

std::mutex& registry_mutex() {
  static std::mutex mu;
  return mu;
}
std::map<std::string, std::unique_ptr<CustomOp>>& registry() {
  static std::map<std::string, std::unique_ptr<CustomOp>> ops;
  return ops;
}

bool identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// A saved call: [tensors n] [doubles attrs] -> a replay through the registered op.
compiler::Replay replay_from(const std::string& name, const std::vector<compiler::Arg>& args) {
  if (args.size() != 2 || args[0].kind != compiler::Arg::Tensors || args[1].kind != compiler::Arg::Doubles)
    throw ValueError(name + ": a saved call does not have the custom-op form (tensors, attrs)");
  const int64_t n = args[0].i;
  std::vector<double> attrs = args[1].doubles;
  return [name, n, attrs](const std::vector<Tensor>& in) {
    EMBER_CHECK_VALUE(int64_t(in.size()) == n, name, ": a saved call has ", n, " inputs, got ", in.size());
    return find(name)(in, attrs);
  };
}

}  // namespace

CustomOp::CustomOp(std::string name, std::string schema) : name_(std::move(name)), schema_(std::move(schema)) {}

CustomOp& CustomOp::kernel(DeviceType device, Kernel k) {
  EMBER_CHECK_VALUE(k != nullptr, name_, ": kernel(): an empty kernel");
  for (auto& [d, existing] : kernels_)
    if (d == device) {
      existing = std::move(k);
      return *this;
    }
  kernels_.emplace_back(device, std::move(k));
  return *this;
}
CustomOp& CustomOp::autograd(Backward b) {
  backward_ = std::move(b);
  return *this;
}
CustomOp& CustomOp::shape(ShapeFn s) {
  shape_ = std::move(s);
  return *this;
}

bool CustomOp::has_kernel(DeviceType device) const {
  for (const auto& [d, k] : kernels_)
    if (d == device) return true;
  return false;
}

std::vector<Shape> CustomOp::infer_shape(const std::vector<Tensor>& inputs, const std::vector<double>& attrs) const {
  EMBER_CHECK(shape_ != nullptr, name_, ": no shape function is registered (.shape(...))");
  return shape_(inputs, attrs);
}

std::vector<Tensor> CustomOp::run_kernel(const std::vector<Tensor>& inputs, const std::vector<double>& attrs) const {
  std::optional<Device> device;
  for (const auto& t : inputs) {
    if (!t.defined()) continue;
    EMBER_CHECK_VALUE(!device || *device == t.device(), name_, ": expected all inputs on one device, got ",
                      device->str(), " and ", t.device().str());
    device = t.device();
  }
  const DeviceType type = device ? device->type : DeviceType::CPU;
  for (const auto& [d, k] : kernels_)
    if (d == type) return k(inputs, attrs);
  throw NotImplementedError(name_ + ": no kernel registered for device type '" + device_type_name(type) + "'");
}

std::vector<Tensor> CustomOp::operator()(const std::vector<Tensor>& inputs, const std::vector<double>& attrs) const {
  profiler::detail::CompositeScope event(name_.c_str());
  auto compute = [&] {
    const bool wants_grad = autograd::GradMode::is_enabled() && autograd::any_requires_grad(inputs);
    if (!wants_grad) return run_kernel(inputs, attrs);
    std::vector<Tensor> out = autograd::below_autograd([&] {
      autograd::NoGradGuard no_grad;
      return run_kernel(inputs, attrs);
    });
    std::vector<autograd::Save> saves;
    for (const auto& t : inputs) saves.push_back(autograd::saved_input(t));
    for (const auto& t : out) saves.push_back(autograd::saved_output(t));
    const size_t n_in = inputs.size();
    autograd::record(name_.c_str(), inputs, out, std::move(saves),
                     [this, n_in, attrs](const autograd::variable_list& g, autograd::LambdaNode& n) {
                       EMBER_CHECK(backward_ != nullptr, name_,
                                   ": no autograd formula is registered (.autograd(...)), so it cannot be differentiated");
                       std::vector<Tensor> in, outs;
                       for (size_t i = 0; i < n_in; ++i) in.push_back(n.unpack(i));
                       for (size_t i = n_in; i < n.saved.size(); ++i) outs.push_back(n.unpack(i));
                       auto grads = backward_(g, in, outs, attrs);
                       EMBER_CHECK(grads.size() == n_in, name_, ": the backward returned ", grads.size(),
                                   " gradients for ", n_in, " inputs");
                       return grads;
                     });
    return out;
  };
  if (!compiler::detail::tracing()) return compute();
  // inside ember.compile / export: one node of its own, which export can save
  std::vector<Tensor> out;
  {
    ExcludeDispatchKeyGuard paused(DispatchKey::Tracer);
    out = compute();
  }
  compiler::Arg tensors, numbers;
  tensors.kind = compiler::Arg::Tensors;
  tensors.i = int64_t(inputs.size());
  numbers.kind = compiler::Arg::Doubles;
  numbers.doubles = attrs;
  compiler::detail::record_opaque(name_, inputs, out, replay_from(name_, {tensors, numbers}), false,
                                  {tensors, numbers});
  return out;
}

CustomOp& define(const std::string& name, const std::string& schema) {
  const size_t sep = name.find("::");
  EMBER_CHECK_VALUE(sep != std::string::npos && identifier(name.substr(0, sep)) && identifier(name.substr(sep + 2)),
                    "library::define: expected a name 'namespace::op' of identifiers, got '", name, "'");
  std::lock_guard<std::mutex> lock(registry_mutex());
  auto& ops = registry();
  EMBER_CHECK(!ops.count(name), "library::define: an op named '", name, "' is already registered");
  auto& op = ops[name] = std::make_unique<CustomOp>(name, schema);
  compiler::detail::register_replay_factory(op->name().c_str(), [name](const std::vector<compiler::Arg>& args) {
    return replay_from(name, args);
  });
  return *op;
}

const CustomOp& find(const std::string& name) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  auto it = registry().find(name);
  if (it == registry().end()) {
    std::string known;
    for (const auto& [n, op] : registry()) known += (known.empty() ? "" : ", ") + n;
    throw ValueError("library: no custom op named '" + name + "' (registered: " + (known.empty() ? "none" : known) + ")");
  }
  return *it->second;
}

std::vector<std::string> registered() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  std::vector<std::string> names;
  for (const auto& [n, op] : registry()) names.push_back(n);
  return names;
}

}  // namespace ember::library
