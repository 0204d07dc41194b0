#pragma once
// nn::Module: the base of every layer and model, as torch.nn.Module.
//
// Declaring a member layer or parameter registers it under its own name, in one line:
//
//   struct TwoLayerMLP : nn::Module {
//     EMBER_MODULE(nn::Linear, fc1, 784, 256);
//     EMBER_MODULE(nn::Linear, fc2, 256, 10);
//     Tensor forward(const Tensor& x) override { return fc2(fc1(x).relu()); }
//   };
//
// state_dict keys are PyTorch's ("fc1.weight", "0.bias", "bn.num_batches_tracked"). Modules are
// not copyable or movable (parents hold pointers to their members); hold models by value or in
// a std::shared_ptr, and use clone-free constructs (Sequential owns its children).
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/autograd/autograd.h"
#include "ember/tensor.h"

namespace ember::nn {

class Module;

// A tensor registered as a parameter (a leaf that requires grad). Kept as a plain Tensor so
// weight tying is an assignment: decoder.weight = encoder.weight.
using Parameter = Tensor;
inline Tensor make_parameter(Tensor t, bool requires_grad = true) {
  Tensor p = t.detach();
  if (requires_grad && is_floating(p.dtype())) p.requires_grad_(true);
  return p;
}

struct LoadResult {
  std::vector<std::string> missing_keys;
  std::vector<std::string> unexpected_keys;
};

using StateDict = std::vector<std::pair<std::string, Tensor>>;  // ordered, as PyTorch's OrderedDict

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The one-tensor forward used by containers; modules with other signatures add overloads.
  virtual Tensor forward(const Tensor& input);
  Tensor operator()(const Tensor& input) { return forward(input); }

  // Registration (the EMBER_MODULE / EMBER_PARAMETER / EMBER_BUFFER macros call these).
  Tensor& register_parameter(const std::string& name, Tensor* slot);
  Tensor& register_parameter(const std::string& name, Tensor value, bool requires_grad = true);
  Tensor& register_buffer(const std::string& name, Tensor* slot, bool persistent = true);
  Tensor& register_buffer(const std::string& name, Tensor value, bool persistent = true);
  Module& register_module(const std::string& name, Module* child);
  Module& register_module(const std::string& name, std::shared_ptr<Module> child);

  // Traversal (recursive ones de-duplicate shared tensors/modules, as PyTorch).
  std::vector<Tensor> parameters(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
  std::vector<Module*> children() const;
  std::vector<std::pair<std::string, Module*>> named_children() const;
  std::vector<Module*> modules();
  std::vector<std::pair<std::string, Module*>> named_modules(const std::string& prefix = "");
  Module* get_submodule(const std::string& dotted);
  Tensor& get_parameter(const std::string& dotted);

  // Mode and housekeeping.
  virtual Module& train(bool on = true);
  Module& eval() { return train(false); }
  bool is_training() const { return training_; }
  Module& to(DType dtype);
  Module& to(Device device);
  // Uninitialised tensors of the same sizes and dtypes on `device` for every parameter and buffer
  // (torch's to_empty): how a module built on the meta device gets memory before it is loaded. A
  // tensor registered in two places stays one tensor.
  Module& to_empty(Device device);
  Module& apply(const std::function<void(Module&)>& fn);
  void zero_grad(bool set_to_none = true);
  Module& requires_grad_(bool on = true);
  int64_t num_parameters(bool only_trainable = false) const;

  // Checkpoint state: parameters and persistent buffers under dotted names.
  StateDict state_dict(const std::string& prefix = "") const;
  // Copies values in (under no_grad). strict: missing/unexpected keys are an error.
  LoadResult load_state_dict(const StateDict& state, bool strict = true);

  // Printing as PyTorch: "Linear(in_features=2, out_features=3, bias=True)", nested with indent.
  virtual std::string name() const { return "Module"; }
  virtual std::string extra_repr() const { return ""; }
  std::string repr() const;

 protected:
  bool training_ = true;

 private:
  struct TensorSlot {
    std::string name;
    Tensor* slot;
    std::shared_ptr<Tensor> owned;  // for tensors registered by value
    bool persistent = true;
  };
  struct ChildSlot {
    std::string name;
    Module* module;
    std::shared_ptr<Module> owned;
  };
  std::vector<std::pair<std::string, Tensor>> named_tensors(bool recurse, bool buffers) const;
  std::vector<TensorSlot> params_, buffers_;
  std::vector<ChildSlot> children_;
  friend class Sequential;
  friend class ModuleList;
  friend class ModuleDict;
};

std::ostream& operator<<(std::ostream& os, const Module& m);

namespace detail {
// Constructed right after the member it names (declaration order), so `member` is ready.
struct ModuleRegistrar {
  ModuleRegistrar(Module* parent, const char* name, Module* member) { parent->register_module(name, member); }
};
struct ParameterRegistrar {
  ParameterRegistrar(Module* parent, const char* name, Tensor* member) { parent->register_parameter(name, member); }
};
struct BufferRegistrar {
  BufferRegistrar(Module* parent, const char* name, Tensor* member, bool persistent) {
    parent->register_buffer(name, member, persistent);
  }
};
}  // namespace detail

}  // namespace ember::nn

// Declares a member submodule and registers it under its own name.
#define EMBER_MODULE(Type, name, ...)                                                              \
  Type name = Type(__VA_ARGS__);                                                                    \
  ::ember::nn::detail::ModuleRegistrar ember_registrar_##name##_{this, #name, &name}
// Declares a member parameter (initial value expr) and registers it.
#define EMBER_PARAMETER(name, ...)                                                                 \
  ::ember::Tensor name = ::ember::nn::make_parameter(__VA_ARGS__);                                  \
  ::ember::nn::detail::ParameterRegistrar ember_registrar_##name##_{this, #name, &name}
// Declares a member buffer (persistent: in state_dict) and registers it.
#define EMBER_BUFFER(name, ...)                                                                    \
  ::ember::Tensor name = (__VA_ARGS__);                                                             \
  ::ember::nn::detail::BufferRegistrar ember_registrar_##name##_{this, #name, &name, true}
