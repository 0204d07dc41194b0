// CPU kernels for one-operand elementwise ops: the float family (integers compute in the
// default float dtype), the dtype-keeping family, activations, nan_to_num and the predicates.
// Each loop calls the op's formula (src/ops/elementwise_formulas.h) with the CPU's elementary
// functions (cpu/elementwise_math.h): vectorisable float32 versions, libm for float64.
#include <cmath>
#include <string_view>

#include "cpu/elementwise_math.h"
#include "cpu/tensor_iter.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cpu {
namespace {

namespace f = formula;

// Runs the unary formula Fn over the iterator's compute dtype, restricted to the dtypes Types.
template <uint32_t Types, class Fn> void unary_loop(TensorIter& it, const char* name, Fn fn) {
  visit_dtype<Types>(it.compute_dtype(), name, [&]<class T>() {
    cpu_kernel(it, [fn](T x) -> T { return fn(x); });
  });
}

// ---------------------------------------------------------------- floating unary ops
// The complex forms torch defines, from std::complex's functions (null: not defined on complex).
template <class T> auto complex_form(std::string_view op) -> T (*)(T) {
  using R = typename T::value_type;
  if (!op.empty() && op.back() == '_') op.remove_suffix(1);
  if (op == "exp") return [](T z) { return std::exp(z); };
  if (op == "log") return [](T z) { return std::log(z); };
  if (op == "log2") return [](T z) { return std::log(z) / R(M_LN2); };
  if (op == "log10") return [](T z) { return std::log10(z); };
  if (op == "sqrt") return [](T z) { return std::sqrt(z); };
  if (op == "rsqrt") return [](T z) { return T(1) / std::sqrt(z); };
  if (op == "reciprocal") return [](T z) { return T(1) / z; };
  if (op == "sin") return [](T z) { return std::sin(z); };
  if (op == "cos") return [](T z) { return std::cos(z); };
  if (op == "tan") return [](T z) { return std::tan(z); };
  if (op == "asin") return [](T z) { return std::asin(z); };
  if (op == "acos") return [](T z) { return std::acos(z); };
  if (op == "atan") return [](T z) { return std::atan(z); };
  if (op == "sinh") return [](T z) { return std::sinh(z); };
  if (op == "cosh") return [](T z) { return std::cosh(z); };
  if (op == "tanh") return [](T z) { return std::tanh(z); };
  if (op == "sigmoid") return [](T z) { return T(1) / (T(1) + std::exp(-z)); };
  return nullptr;
}

void complex_unary_loop(TensorIter& it, const char* name) {
  visit_dtype<kComplexTypes>(it.compute_dtype(), name, [&]<class T>() {
    T (*fn)(T) = complex_form<T>(name);
    if (!fn) throw_dtype_not_implemented(name, it.compute_dtype());
    cpu_kernel(it, [fn](T z) -> T { return fn(z); });
  });
}

// The build passes -fno-math-errno, so std::sqrt vectorises like the vec_math.h functions.
template <class Fn> Tensor& unary_float_into(Tensor& out, const Tensor& a, const char* name) {
  TensorIter it = TensorIter::unary_op(out, a, {.op_name = name, .int_to_float = true});
  if (is_complex(it.compute_dtype())) complex_unary_loop(it, name);
  else unary_loop<kFloatTypes>(it, name, Fn{});
  out = it.output();
  return out;
}

#define EMBER_FLOAT_KERNELS(n)                                                                                       \
  Tensor n##_cpu(const Tensor& a) { Tensor out; return unary_float_into<CpuFormula<f::n##_fn>::type>(out, a, #n); } \
  Tensor& n##_inplace_cpu(Tensor& a) { return unary_float_into<CpuFormula<f::n##_fn>::type>(a, a, #n "_"); }        \
  EMBER_REGISTER_KERNEL(n, CPU, n##_cpu);                                                                   \
  EMBER_REGISTER_KERNEL(n##_, CPU, n##_inplace_cpu);
EMBER_UNARY_FLOAT_OPS(EMBER_FLOAT_KERNELS)
#undef EMBER_FLOAT_KERNELS

// ---------------------------------------------------------------- dtype-keeping unary ops
// The dtypes each takes, as PyTorch: abs and sign also bool, frac floating types only.
constexpr uint32_t keep_types(std::string_view op) {
  if (op == "abs" || op == "sign") return kNumericAndBool;
  if (op == "neg" || op == "square") return kNumericTypes | kComplexTypes;
  return op == "frac" ? kFloatTypes : kNumericTypes;
}

template <class Fn, uint32_t Types> Tensor& unary_keep_into(Tensor& out, const Tensor& a, const char* name) {
  TensorIter it = TensorIter::unary_op(out, a, {.op_name = name});
  unary_loop<Types>(it, name, Fn{});
  out = it.output();
  return out;
}

// round(decimals != 0), floating types only: PyTorch's round_decimals_kernel. 10^|decimals| is
// computed in double and converted to the compute type once.
Tensor& round_decimals_into(Tensor& out, const Tensor& a, int64_t decimals, const char* name) {
  TensorIter it = TensorIter::unary_op(out, a, {.op_name = name});
  visit_dtype<kFloatTypes>(it.compute_dtype(), "round_cpu", [&]<class T>() {
    const T ten_pow = T(std::pow(10.0, std::fabs(double(decimals))));
    // The sign is fixed outside the loop, so each loop is branch-free.
    if (decimals < 0) cpu_kernel(it, [ten_pow](T x) -> T { return f::round_decimals_fn<T, CpuMath>{ten_pow, true}(x); });
    else cpu_kernel(it, [ten_pow](T x) -> T { return f::round_decimals_fn<T, CpuMath>{ten_pow, false}(x); });
  });
  out = it.output();
  return out;
}
Tensor round_decimals_cpu(const Tensor& a, int64_t decimals) {
  Tensor out;
  return round_decimals_into(out, a, decimals, "round");
}
Tensor& round_decimals_inplace_cpu(Tensor& a, int64_t decimals) { return round_decimals_into(a, a, decimals, "round_"); }
EMBER_REGISTER_KERNEL(round_decimals, CPU, round_decimals_cpu);
EMBER_REGISTER_KERNEL(round_decimals_, CPU, round_decimals_inplace_cpu);

#define EMBER_KEEP_KERNELS(n)                                                                                     \
  Tensor n##_cpu(const Tensor& a) {                                                                              \
    Tensor out;                                                                                                  \
    return unary_keep_into<f::n##_fn<CpuMath>, keep_types(#n)>(out, a, #n);                                      \
  }                                                                                                              \
  Tensor& n##_inplace_cpu(Tensor& a) { return unary_keep_into<f::n##_fn<CpuMath>, keep_types(#n)>(a, a, #n "_"); } \
  EMBER_REGISTER_KERNEL(n, CPU, n##_cpu);                                                                        \
  EMBER_REGISTER_KERNEL(n##_, CPU, n##_inplace_cpu);
EMBER_UNARY_KEEP_OPS(EMBER_KEEP_KERNELS)
#undef EMBER_KEEP_KERNELS

// ---------------------------------------------------------------- activations
Tensor gelu_cpu(const Tensor& a, const std::string& approximate) {
  Tensor out;
  TensorIter it = TensorIter::unary_op(out, a, {.op_name = "gelu"});
  visit_dtype<kFloatTypes>(it.compute_dtype(), "GeluKernelImpl", [&]<class T>() {
    if (approximate == "tanh") cpu_kernel(it, [](T x) -> T { return f::gelu_tanh_fn<CpuMath>{}(x); });
    else cpu_kernel(it, [](T x) -> T { return f::gelu_fn<CpuMath>{}(x); });
  });
  return it.output();
}

// The fused activation gradients (ops/elementwise_formulas.h: the composite's operations in its
// order, in the compute type: float32 bits kept, 16-bit types rounded once instead of per op).
template <template <class> class Formula> Tensor activation_backward_cpu(const Tensor& grad, const Tensor& v, const char* name) {
  Tensor out;
  TensorIter it = TensorIter::binary_op(out, grad, v, {.op_name = name});
  visit_dtype<kFloatTypes>(it.compute_dtype(), name, [&]<class T>() {
    cpu_kernel(it, [](T g, T x) -> T { return typename CpuFormula<Formula>::type{}(g, x); });
  });
  return it.output();
}
Tensor tanh_backward_cpu(const Tensor& g, const Tensor& y) { return activation_backward_cpu<f::tanh_backward_fn>(g, y, "tanh_backward"); }
Tensor sigmoid_backward_cpu(const Tensor& g, const Tensor& y) {
  return activation_backward_cpu<f::sigmoid_backward_fn>(g, y, "sigmoid_backward");
}
Tensor silu_backward_cpu(const Tensor& g, const Tensor& x) { return activation_backward_cpu<f::silu_backward_fn>(g, x, "silu_backward"); }

Tensor threshold_backward_cpu(const Tensor& grad, const Tensor& self, const Scalar& threshold) {
  Tensor out;
  TensorIter it = TensorIter::binary_op(out, grad, self, {.op_name = "threshold_backward"});
  visit_dtype<kFloatTypes>(it.compute_dtype(), "threshold_backward", [&]<class T>() {
    cpu_kernel(it, f::threshold_backward_fn<T>{T(threshold.to<double>())});
  });
  return it.output();
}

Tensor gelu_backward_cpu(const Tensor& grad, const Tensor& x, const std::string& approximate) {
  Tensor out;
  TensorIter it = TensorIter::binary_op(out, grad, x, {.op_name = "gelu_backward"});
  visit_dtype<kFloatTypes>(it.compute_dtype(), "GeluBackwardKernelImpl", [&]<class T>() {
    if (approximate == "tanh") cpu_kernel(it, [](T g, T v) -> T { return f::gelu_tanh_backward_fn<CpuMath>{}(g, v); });
    else cpu_kernel(it, [](T g, T v) -> T { return f::gelu_backward_fn<CpuMath>{}(g, v); });
  });
  return it.output();
}

Tensor leaky_relu_cpu(const Tensor& a, const Scalar& negative_slope) {
  Tensor out;
  TensorIter it = TensorIter::unary_op(out, a, {.op_name = "leaky_relu"});
  visit_dtype<kFloatTypes>(it.compute_dtype(), "leaky_relu_cpu", [&]<class T>() {
    const f::leaky_relu_fn<T> fn{negative_slope.to<T>()};
    cpu_kernel(it, [fn](T x) -> T { return fn(x); });
  });
  return it.output();
}

// ---------------------------------------------------------------- nan_to_num, predicates
// The three values arrive resolved (src/ops/unary.cpp fills the dtype's defaults).
Tensor nan_to_num_cpu(const Tensor& a, std::optional<double> nan, std::optional<double> posinf,
                      std::optional<double> neginf) {
  if (!is_floating(a.dtype())) return ops::clone()(a);
  const double nv = nan.value(), pv = posinf.value(), mv = neginf.value();
  Tensor out;
  TensorIter it = TensorIter::unary_op(out, a, {.op_name = "nan_to_num"});
  visit_dtype<kFloatTypes>(it.compute_dtype(), "nan_to_num", [&]<class T>() {
    const f::nan_to_num_fn<T> fn{T(nv), T(pv), T(mv)};
    cpu_kernel(it, [fn](T x) -> T { return fn(x); });
  });
  return it.output();
}

// Integer and bool inputs are never NaN or infinite: the answer is a fill.
template <class Pred> Tensor predicate(const Tensor& a, const char* name, bool int_value) {
  Tensor out;
  if (!is_floating(a.dtype())) {
    out = empty(a.sizes(), {.dtype = DType::Bool, .device = a.device()});
    ops::fill_()(out, int_value);
    return out;
  }
  TensorIter it = TensorIter::unary_op(out, a, {.op_name = name, .output_dtype = DType::Bool});
  visit_dtype<kFloatTypes>(it.compute_dtype(), name, [&]<class T>() {
    cpu_kernel(it, [](T x) -> bool { return Pred{}(x); });
  });
  return it.output();
}
Tensor isnan_cpu(const Tensor& a) { return predicate<f::isnan_fn<CpuMath>>(a, "isnan", false); }
Tensor isinf_cpu(const Tensor& a) { return predicate<f::isinf_fn<CpuMath>>(a, "isinf", false); }
Tensor isfinite_cpu(const Tensor& a) { return predicate<f::isfinite_fn<CpuMath>>(a, "isfinite", true); }

Tensor bitwise_not_cpu(const Tensor& a) {
  Tensor out;
  TensorIter it = TensorIter::unary_op(out, a, {.op_name = "bitwise_not"});
  unary_loop<kIntAndBool>(it, "bitwise_not_cpu", f::bitwise_not_fn<CpuMath>{});
  return it.output();
}

EMBER_REGISTER_KERNEL(gelu, CPU, gelu_cpu);
EMBER_REGISTER_KERNEL(gelu_backward, CPU, gelu_backward_cpu);
EMBER_REGISTER_KERNEL(tanh_backward, CPU, tanh_backward_cpu);
EMBER_REGISTER_KERNEL(sigmoid_backward, CPU, sigmoid_backward_cpu);
EMBER_REGISTER_KERNEL(silu_backward, CPU, silu_backward_cpu);
EMBER_REGISTER_KERNEL(threshold_backward, CPU, threshold_backward_cpu);
EMBER_REGISTER_KERNEL(leaky_relu, CPU, leaky_relu_cpu);
EMBER_REGISTER_KERNEL(nan_to_num, CPU, nan_to_num_cpu);
EMBER_REGISTER_KERNEL(isnan, CPU, isnan_cpu);
EMBER_REGISTER_KERNEL(isinf, CPU, isinf_cpu);
EMBER_REGISTER_KERNEL(isfinite, CPU, isfinite_cpu);
EMBER_REGISTER_KERNEL(bitwise_not, CPU, bitwise_not_cpu);

}  // namespace
}  // namespace ember::cpu
