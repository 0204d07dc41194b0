// CUDA launchers for two- and three-operand elementwise ops: add/sub (alpha), mul, the
// divisions, the arithmetic family of op_list.h, clamp and lerp, on the formulas the CPU uses.
// Integer division by zero gives 0 without an error on the GPU (a kernel cannot raise; torch's
// CUDA kernels do not raise either).
#include "cuda/elementwise.cuh"
#include "cuda/elementwise_launchers.h"
#include "ops/elementwise_formulas.h"

namespace ember::cuda {
namespace f = formula;
using M = f::StdMath;

namespace {
template <uint32_t Set, class Fn> void binary_same(const ElementwiseArgs& a, const char* name) {
  visit_compute<Set>(a.compute, name, [&]<class T>() { launch<T, T, 2>(a, Fn{}); });
}

template <class T> T param(const ElementwiseArgs& a, int i) {
  if constexpr (std::is_floating_point_v<T>) return T(a.param_f[i]);
  else if constexpr (std::is_same_v<T, bool>) return a.param_i[i] != 0;
  else return T(a.param_i[i]);
}

// clamp's three forms as one-input functors with the bounds held by value.
template <class T> struct ClampBoth {
  T lo, hi;
  __device__ T operator()(T x) const { return f::clamp_fn<M>{}(x, lo, hi); }
};
template <class T> struct ClampLow {
  T lo;
  __device__ T operator()(T x) const { return f::maximum_fn<M>{}(x, lo); }
};
template <class T> struct ClampHigh {
  T hi;
  __device__ T operator()(T x) const { return f::minimum_fn<M>{}(x, hi); }
};
struct ClampTensors {
  template <class T> __device__ T operator()(T x, T lo, T hi) const { return f::clamp_fn<M>{}(x, lo, hi); }
};
template <class T> struct LerpScalar {
  T w;
  __device__ T operator()(T s, T e) const { return f::lerp_fn<M>{}(s, e, w); }
};
}  // namespace

void launch_add(const ElementwiseArgs& a) {
  visit_compute<kCudaNumericAndBool>(a.compute, "add_cuda", [&]<class T>() { launch<T, T, 2>(a, f::add_fn<T, M>{param<T>(a, 0)}); });
}
void launch_mul(const ElementwiseArgs& a) { binary_same<kCudaNumericAndBool, f::mul_fn<M>>(a, "mul_cuda"); }
void launch_div_true(const ElementwiseArgs& a) { binary_same<kCudaFloat, f::div_true_fn<M>>(a, "div_true_cuda"); }
void launch_div_trunc(const ElementwiseArgs& a) { binary_same<kCudaNumeric, f::div_trunc_fn<M>>(a, "div_trunc_cuda"); }
void launch_div_floor(const ElementwiseArgs& a) { binary_same<kCudaNumeric, f::div_floor_fn<M>>(a, "div_floor_cuda"); }
void launch_floor_divide(const ElementwiseArgs& a) { launch_div_floor(a); }
void launch_remainder(const ElementwiseArgs& a) { binary_same<kCudaNumeric, f::remainder_fn<M>>(a, "remainder_cuda"); }
void launch_fmod(const ElementwiseArgs& a) { binary_same<kCudaNumeric, f::fmod_fn<M>>(a, "fmod_cuda"); }
void launch_pow(const ElementwiseArgs& a) { binary_same<kCudaNumeric, f::pow_fn<M>>(a, "pow_cuda"); }
void launch_maximum(const ElementwiseArgs& a) { binary_same<kCudaNumericAndBool, f::maximum_fn<M>>(a, "maximum_cuda"); }
void launch_minimum(const ElementwiseArgs& a) { binary_same<kCudaNumericAndBool, f::minimum_fn<M>>(a, "minimum_cuda"); }
void launch_atan2(const ElementwiseArgs& a) { binary_same<kCudaFloat, f::atan2_fn<M>>(a, "atan2_cuda"); }
void launch_bitwise_and(const ElementwiseArgs& a) { binary_same<kCudaIntAndBool, f::bitwise_and_fn<M>>(a, "bitwise_and_cuda"); }
void launch_bitwise_or(const ElementwiseArgs& a) { binary_same<kCudaIntAndBool, f::bitwise_or_fn<M>>(a, "bitwise_or_cuda"); }
void launch_bitwise_xor(const ElementwiseArgs& a) { binary_same<kCudaIntAndBool, f::bitwise_xor_fn<M>>(a, "bitwise_xor_cuda"); }
void launch_bitwise_left_shift(const ElementwiseArgs& a) { binary_same<kCudaInt, f::bitwise_left_shift_fn<M>>(a, "lshift_cuda"); }
void launch_bitwise_right_shift(const ElementwiseArgs& a) { binary_same<kCudaInt, f::bitwise_right_shift_fn<M>>(a, "rshift_cuda"); }

void launch_clamp(const ElementwiseArgs& a) {
  visit_compute<kCudaNumeric>(a.compute, "clamp_cuda", [&]<class T>() {
    const T lo = param<T>(a, 1), hi = param<T>(a, 2);
    switch (a.param_i[0]) {
      case 3: return launch<T, T, 1>(a, ClampBoth<T>{lo, hi});
      case 1: return launch<T, T, 1>(a, ClampLow<T>{lo});
      default: return launch<T, T, 1>(a, ClampHigh<T>{hi});
    }
  });
}
void launch_clamp_tensor(const ElementwiseArgs& a) {
  visit_compute<kCudaNumeric>(a.compute, "clamp_cuda", [&]<class T>() {
    if (a.ntensors == 4) return launch<T, T, 3>(a, ClampTensors{});
    if (a.param_i[0] == 1) return launch<T, T, 2>(a, f::maximum_fn<M>{});
    launch<T, T, 2>(a, f::minimum_fn<M>{});
  });
}
void launch_lerp(const ElementwiseArgs& a) {
  visit_compute<kCudaFloat>(a.compute, "lerp_cuda", [&]<class T>() { launch<T, T, 3>(a, f::lerp_fn<M>{}); });
}
void launch_lerp_scalar(const ElementwiseArgs& a) {
  visit_compute<kCudaFloat>(a.compute, "lerp_cuda", [&]<class T>() { launch<T, T, 2>(a, LerpScalar<T>{T(a.param_f[0])}); });
}

}  // namespace ember::cuda
