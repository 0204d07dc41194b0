#pragma once
// Custom operators from C++ (torch.library / TORCH_LIBRARY's role; issue 24): an op named
// "namespace::name" with a schema for people, a kernel per device type, an optional autograd
// formula and shape function. It dispatches by its inputs' device, records its gradient, shows in
// the profiler, is captured by ember.compile as a node of its own (not traced into) and is saved
// in exported programs, which a process that registered the same op can load.
//
//   EMBER_CUSTOM_OP(mylib, scaled_tanh, "(Tensor x, float scale) -> Tensor") {
//     op.kernel(DeviceType::CPU, [](const auto& in, const auto& attrs) {
//         return std::vector<Tensor>{in[0].tanh() * attrs[0]}; })
//       .autograd([](const auto& grads, const auto& in, const auto& out, const auto& attrs) {
//         return std::vector<Tensor>{grads[0] * (1 - out[0] * out[0] / (attrs[0] * attrs[0])) * attrs[0]}; })
//       .shape([](const auto& in, const auto&) { return std::vector<Shape>{Shape(in[0].sizes())}; });
//   }
//   auto y = ember::library::find("mylib::scaled_tanh")({x}, {2.0})[0];
//
// Calling convention: tensors in, numbers (attrs) alongside, tensors out; Python reaches the same
// op as ember.ops.mylib.scaled_tanh(x, 2.0).
#include <functional>
#include <string>
#include <vector>

#include "ember/tensor.h"

namespace ember::library {

class CustomOp {
 public:
  using Kernel = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs, const std::vector<double>& attrs)>;
  // The inputs' gradients (undefined where there is none) from the outputs' gradients.
  using Backward = std::function<std::vector<Tensor>(const std::vector<Tensor>& grads, const std::vector<Tensor>& inputs,
                                                     const std::vector<Tensor>& outputs, const std::vector<double>& attrs)>;
  using ShapeFn = std::function<std::vector<Shape>(const std::vector<Tensor>& inputs, const std::vector<double>& attrs)>;

  CustomOp(std::string name, std::string schema);
  CustomOp& kernel(DeviceType device, Kernel k);
  CustomOp& autograd(Backward b);
  CustomOp& shape(ShapeFn s);

  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs, const std::vector<double>& attrs = {}) const;
  // The output shapes the shape function gives (throws if none was registered).
  std::vector<Shape> infer_shape(const std::vector<Tensor>& inputs, const std::vector<double>& attrs = {}) const;

  const std::string& name() const { return name_; }
  const std::string& schema() const { return schema_; }
  bool has_kernel(DeviceType device) const;

 private:
  std::vector<Tensor> run_kernel(const std::vector<Tensor>& inputs, const std::vector<double>& attrs) const;
  std::string name_, schema_;
  std::vector<std::pair<DeviceType, Kernel>> kernels_;
  Backward backward_;
  ShapeFn shape_;
};

// Registers (or, for a name already defined, fails) and returns the op for configuring.
CustomOp& define(const std::string& name, const std::string& schema);
// The op registered under name; throws a ValueError naming the registered ones otherwise.
const CustomOp& find(const std::string& name);
std::vector<std::string> registered();

namespace detail {
struct Registrar {
  Registrar(const char* name, const char* schema, void (*configure)(CustomOp&)) { configure(define(name, schema)); }
};
}  // namespace detail

}  // namespace ember::library

// Defines custom op ns::name from a static initialiser; the braces that follow configure `op`.
#define EMBER_CUSTOM_OP(ns, name, schema)                                                               \
  static void ember_custom_op_configure_##ns##_##name(::ember::library::CustomOp& op);                 \
  static const ::ember::library::detail::Registrar ember_custom_op_registrar_##ns##_##name(             \
      #ns "::" #name, schema, &ember_custom_op_configure_##ns##_##name);                                \
  static void ember_custom_op_configure_##ns##_##name([[maybe_unused]] ::ember::library::CustomOp& op)
