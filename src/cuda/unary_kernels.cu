// CUDA launchers for one-operand elementwise ops: the floating family (integers compute in
// the default float dtype, float16/bfloat16 in float32), the dtype-keeping family, predicates
// and activations. Every one calls the formula the CPU calls (ops/elementwise_formulas.h).
#include "cuda/elementwise.cuh"
#include "cuda/elementwise_launchers.h"
#include "ops/elementwise_formulas.h"

namespace ember::cuda {
namespace f = formula;
using M = f::StdMath;

namespace {
template <uint32_t Set, class Fn> void unary_same(const ElementwiseArgs& a, const char* name) {
  visit_compute<Set>(a.compute, name, [&]<class T>() { launch<T, T, 1>(a, Fn{}); });
}
template <uint32_t Set, class Fn> void unary_bool(const ElementwiseArgs& a, const char* name) {
  visit_compute<Set>(a.compute, name, [&]<class T>() { launch<bool, T, 1>(a, Fn{}); });
}
}  // namespace

#define EMBER_CUDA_FLOAT(n) \
  void launch_##n(const ElementwiseArgs& a) { unary_same<kCudaFloat, f::n##_fn<M>>(a, #n "_cuda"); }
EMBER_UNARY_FLOAT_OPS(EMBER_CUDA_FLOAT)
#undef EMBER_CUDA_FLOAT

// The dtypes each takes, as the CPU's (and PyTorch's): abs and sign also bool, frac floating only.
constexpr uint32_t keep_set(const char* op) {
  auto eq = [](const char* x, const char* y) {
    while (*x && *x == *y) ++x, ++y;
    return *x == *y;
  };
  if (eq(op, "abs") || eq(op, "sign")) return kCudaNumericAndBool;
  return eq(op, "frac") ? kCudaFloat : kCudaNumeric;
}
#define EMBER_CUDA_KEEP(n) \
  void launch_##n(const ElementwiseArgs& a) { unary_same<keep_set(#n), f::n##_fn<M>>(a, #n "_cuda"); }
EMBER_UNARY_KEEP_OPS(EMBER_CUDA_KEEP)
#undef EMBER_CUDA_KEEP

void launch_logical_not(const ElementwiseArgs& a) { unary_bool<kCudaNumericAndBool, f::logical_not_fn<M>>(a, "logical_not_cuda"); }
void launch_bitwise_not(const ElementwiseArgs& a) { unary_same<kCudaIntAndBool, f::bitwise_not_fn<M>>(a, "bitwise_not_cuda"); }
void launch_isnan(const ElementwiseArgs& a) { unary_bool<kCudaFloat, f::isnan_fn<M>>(a, "isnan_cuda"); }
void launch_isinf(const ElementwiseArgs& a) { unary_bool<kCudaFloat, f::isinf_fn<M>>(a, "isinf_cuda"); }
void launch_isfinite(const ElementwiseArgs& a) { unary_bool<kCudaFloat, f::isfinite_fn<M>>(a, "isfinite_cuda"); }
void launch_gelu(const ElementwiseArgs& a) { unary_same<kCudaFloat, f::gelu_fn<M>>(a, "GeluCUDAKernelImpl"); }
void launch_gelu_tanh(const ElementwiseArgs& a) { unary_same<kCudaFloat, f::gelu_tanh_fn<M>>(a, "GeluCUDAKernelImpl"); }

void launch_gelu_backward(const ElementwiseArgs& a) {
  visit_compute<kCudaFloat>(a.compute, "GeluBackwardCUDAKernelImpl", [&]<class T>() { launch<T, T, 2>(a, f::gelu_backward_fn<M>{}); });
}
void launch_gelu_tanh_backward(const ElementwiseArgs& a) {
  visit_compute<kCudaFloat>(a.compute, "GeluBackwardCUDAKernelImpl", [&]<class T>() { launch<T, T, 2>(a, f::gelu_tanh_backward_fn<M>{}); });
}
void launch_tanh_backward(const ElementwiseArgs& a) {
  visit_compute<kCudaFloat>(a.compute, "tanh_backward_cuda", [&]<class T>() { launch<T, T, 2>(a, f::tanh_backward_fn<M>{}); });
}
void launch_sigmoid_backward(const ElementwiseArgs& a) {
  visit_compute<kCudaFloat>(a.compute, "sigmoid_backward_cuda", [&]<class T>() { launch<T, T, 2>(a, f::sigmoid_backward_fn<M>{}); });
}
void launch_silu_backward(const ElementwiseArgs& a) {
  visit_compute<kCudaFloat>(a.compute, "silu_backward_cuda", [&]<class T>() { launch<T, T, 2>(a, f::silu_backward_fn<M>{}); });
}
void launch_threshold_backward(const ElementwiseArgs& a) {
  visit_compute<kCudaFloat>(a.compute, "threshold_backward_cuda", [&]<class T>() {
    launch<T, T, 2>(a, f::threshold_backward_fn<T>{T(a.param_f[0])});
  });
}
void launch_leaky_relu(const ElementwiseArgs& a) {
  visit_compute<kCudaFloat>(a.compute, "leaky_relu_cuda", [&]<class T>() { launch<T, T, 1>(a, f::leaky_relu_fn<T>{T(a.param_f[0])}); });
}
void launch_nan_to_num(const ElementwiseArgs& a) {
  visit_compute<kCudaFloat>(a.compute, "nan_to_num_cuda", [&]<class T>() {
    launch<T, T, 1>(a, f::nan_to_num_fn<T>{T(a.param_f[0]), T(a.param_f[1]), T(a.param_f[2])});
  });
}
void launch_round_decimals(const ElementwiseArgs& a) {
  visit_compute<kCudaFloat>(a.compute, "round_cuda", [&]<class T>() {
    launch<T, T, 1>(a, f::round_decimals_fn<T, M>{T(a.param_f[0]), a.param_i[0] != 0});
  });
}

}  // namespace ember::cuda
