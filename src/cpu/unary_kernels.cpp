// CPU kernels for one-operand elementwise ops: the float family (integers compute in the
// default float dtype), the dtype-keeping family, activations, nan_to_num and the predicates.
// float32 kernels use the vectorisable functions of vec_math.h; float64 uses libm.
#include <cfloat>
#include <cmath>
#include <limits>

#include "cpu/tensor_iter.h"
#include "cpu/vec_math.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cpu {
namespace {

template <class T> constexpr bool is_f32 = std::is_same_v<T, float>;

// ---------------------------------------------------------------- floating unary ops
// Each functor maps T (float or double) to T.
#define EMBER_FLOAT_FN(name, f32_expr, f64_expr)                        \
  struct name##_fn {                                                    \
    template <class T> static T f(T x) {                                \
      if constexpr (is_f32<T>) return f32_expr;                         \
      else return f64_expr;                                             \
    }                                                                   \
  };
EMBER_FLOAT_FN(exp, exp_f32(x), std::exp(x))
EMBER_FLOAT_FN(exp2, exp2_f32(x), std::exp2(x))
EMBER_FLOAT_FN(log, log_f32(x), std::log(x))
EMBER_FLOAT_FN(log1p, log1p_f32(x), std::log1p(x))
EMBER_FLOAT_FN(expm1, expm1_f32(x), std::expm1(x))
EMBER_FLOAT_FN(log2, log2_f32(x), std::log2(x))
EMBER_FLOAT_FN(log10, log10_f32(x), std::log10(x))
EMBER_FLOAT_FN(sqrt, std::sqrt(x), std::sqrt(x))
EMBER_FLOAT_FN(rsqrt, 1.0f / std::sqrt(x), 1.0 / std::sqrt(x))
EMBER_FLOAT_FN(sin, std::sin(x), std::sin(x))
EMBER_FLOAT_FN(cos, std::cos(x), std::cos(x))
EMBER_FLOAT_FN(tan, std::tan(x), std::tan(x))
EMBER_FLOAT_FN(asin, std::asin(x), std::asin(x))
EMBER_FLOAT_FN(acos, std::acos(x), std::acos(x))
EMBER_FLOAT_FN(atan, std::atan(x), std::atan(x))
EMBER_FLOAT_FN(sinh, std::sinh(x), std::sinh(x))
EMBER_FLOAT_FN(cosh, std::cosh(x), std::cosh(x))
EMBER_FLOAT_FN(tanh, tanh_f32(x), std::tanh(x))
EMBER_FLOAT_FN(sigmoid, sigmoid_f32(x), 1.0 / (1.0 + std::exp(-x)))
EMBER_FLOAT_FN(silu, silu_f32(x), x / (1.0 + std::exp(-x)))
EMBER_FLOAT_FN(erf, erf_f32(x), std::erf(x))
EMBER_FLOAT_FN(reciprocal, 1.0f / x, 1.0 / x)
#undef EMBER_FLOAT_FN

// The build passes -fno-math-errno, so std::sqrt vectorises like the vec_math.h functions.
template <class Fn> Tensor& unary_float_into(Tensor& out, const Tensor& a, const char* name) {
  TensorIter it = TensorIter::unary_op(out, a, {.op_name = name, .int_to_float = true});
  visit_dtype<kFloatTypes>(it.compute_dtype(), name, [&]<class T>() {
    cpu_kernel(it, [](T x) -> T { return Fn::f(x); });
  });
  out = it.output();
  return out;
}

#define EMBER_FLOAT_KERNELS(n)                                                              \
  Tensor n##_cpu(const Tensor& a) { Tensor out; return unary_float_into<n##_fn>(out, a, #n); } \
  Tensor& n##_inplace_cpu(Tensor& a) { return unary_float_into<n##_fn>(a, a, #n "_"); }        \
  EMBER_REGISTER_KERNEL(n, CPU, n##_cpu);                                                   \
  EMBER_REGISTER_KERNEL(n##_, CPU, n##_inplace_cpu);
EMBER_UNARY_FLOAT_OPS(EMBER_FLOAT_KERNELS)
#undef EMBER_FLOAT_KERNELS

// ---------------------------------------------------------------- dtype-keeping unary ops
// Each functor lists the dtypes it supports (Types) and maps T to T. Integer floor/ceil/
// round/trunc are the identity (a copy), as in PyTorch.
struct neg_fn {
  static constexpr uint32_t Types = kNumericTypes;
  template <class T> static T f(T x) { return T(-x); }
};
struct abs_fn {
  static constexpr uint32_t Types = kNumericAndBool;
  template <class T> static T f(T x) {
    if constexpr (std::is_unsigned_v<T> || std::is_same_v<T, bool>) return x;
    else if constexpr (std::is_floating_point_v<T>) return std::abs(x);
    else return T(x < 0 ? -x : x);
  }
};
struct sign_fn {
  static constexpr uint32_t Types = kNumericAndBool;
  template <class T> static T f(T x) {
    if constexpr (std::is_same_v<T, bool>) return x;
    else return T(T(T(0) < x) - T(x < T(0)));
  }
};
struct square_fn {
  static constexpr uint32_t Types = kNumericTypes;
  template <class T> static T f(T x) { return T(x * x); }
};
struct relu_fn {
  static constexpr uint32_t Types = kNumericTypes;
  template <class T> static T f(T x) { return x < T(0) ? T(0) : x; }  // NaN stays NaN
};
struct floor_fn {
  static constexpr uint32_t Types = kNumericTypes;
  template <class T> static T f(T x) {
    if constexpr (std::is_floating_point_v<T>) return std::floor(x); else return x;
  }
};
struct ceil_fn {
  static constexpr uint32_t Types = kNumericTypes;
  template <class T> static T f(T x) {
    if constexpr (std::is_floating_point_v<T>) return std::ceil(x); else return x;
  }
};
struct trunc_fn {
  static constexpr uint32_t Types = kNumericTypes;
  template <class T> static T f(T x) {
    if constexpr (std::is_floating_point_v<T>) return std::trunc(x); else return x;
  }
};
struct round_fn {  // half to even
  static constexpr uint32_t Types = kNumericTypes;
  template <class T> static T f(T x) {
    if constexpr (is_f32<T>) return round_even_f32(x);
    else if constexpr (std::is_same_v<T, double>) return round_even_f64(x);
    else return x;
  }
};
struct frac_fn {
  static constexpr uint32_t Types = kFloatTypes;
  template <class T> static T f(T x) { return x - std::trunc(x); }
};

template <class Fn> Tensor& unary_keep_into(Tensor& out, const Tensor& a, const char* name) {
  TensorIter it = TensorIter::unary_op(out, a, {.op_name = name});
  visit_dtype<Fn::Types>(it.compute_dtype(), name, [&]<class T>() {
    cpu_kernel(it, [](T x) -> T { return Fn::template f<T>(x); });
  });
  out = it.output();
  return out;
}

// round(decimals != 0), floating types only: PyTorch's round_decimals_kernel. 10^|decimals| is
// computed in double and converted to the compute type once.
Tensor& round_decimals_into(Tensor& out, const Tensor& a, int64_t decimals, const char* name) {
  TensorIter it = TensorIter::unary_op(out, a, {.op_name = name});
  visit_dtype<kFloatTypes>(it.compute_dtype(), "round_cpu", [&]<class T>() {
    const bool negative = decimals < 0;
    const T ten_pow = T(std::pow(10.0, std::fabs(double(decimals))));
    cpu_kernel(it, [ten_pow, negative](T x) -> T {
      return negative ? round_fn::f(x / ten_pow) * ten_pow : round_fn::f(x * ten_pow) / ten_pow;
    });
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

#define EMBER_KEEP_KERNELS(n)                                                              \
  Tensor n##_cpu(const Tensor& a) { Tensor out; return unary_keep_into<n##_fn>(out, a, #n); } \
  Tensor& n##_inplace_cpu(Tensor& a) { return unary_keep_into<n##_fn>(a, a, #n "_"); }        \
  EMBER_REGISTER_KERNEL(n, CPU, n##_cpu);                                                  \
  EMBER_REGISTER_KERNEL(n##_, CPU, n##_inplace_cpu);
EMBER_UNARY_KEEP_OPS(EMBER_KEEP_KERNELS)
#undef EMBER_KEEP_KERNELS

// ---------------------------------------------------------------- activations
Tensor gelu_cpu(const Tensor& a, const std::string& approximate) {
  bool tanh_form = approximate == "tanh";
  Tensor out;
  TensorIter it = TensorIter::unary_op(out, a, {.op_name = "gelu"});
  visit_dtype<kFloatTypes>(it.compute_dtype(), "GeluKernelImpl", [&]<class T>() {
    if (tanh_form) {
      const T k = T(0.7978845608028654), c = T(0.044715);
      cpu_kernel(it, [k, c](T x) -> T {
        T inner = k * (x + c * x * x * x);
        if constexpr (is_f32<T>) return 0.5f * x * (1.0f + tanh_f32(inner));
        else return 0.5 * x * (1.0 + std::tanh(inner));
      });
    } else {
      cpu_kernel(it, [](T x) -> T {
        if constexpr (is_f32<T>) return 0.5f * x * (1.0f + erf_f32(x * 0.707106781186547524f));
        else return 0.5 * x * (1.0 + std::erf(x * 0.70710678118654752440));
      });
    }
  });
  return it.output();
}

// g * gelu'(x), PyTorch's GeluBackward formulas (src/ops/unary.cpp has them as ember ops):
//   none: Phi(x) + x * phi(x);  tanh: 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2).
Tensor gelu_backward_cpu(const Tensor& grad, const Tensor& x, const std::string& approximate) {
  bool tanh_form = approximate == "tanh";
  Tensor out;
  TensorIter it = TensorIter::binary_op(out, grad, x, {.op_name = "gelu_backward"});
  visit_dtype<kFloatTypes>(it.compute_dtype(), "GeluBackwardKernelImpl", [&]<class T>() {
    if (tanh_form) {
      const T k = T(0.7978845608028654), c = T(0.044715);
      cpu_kernel(it, [k, c](T g, T v) -> T {
        T t;
        if constexpr (is_f32<T>) t = tanh_f32(k * (v + c * v * v * v));
        else t = std::tanh(k * (v + c * v * v * v));
        return g * (T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * k * (T(1) + T(3) * c * v * v));
      });
    } else {
      const T alpha = T(0.70710678118654752440), beta = T(0.39894228040143267794);  // 1/sqrt(2), 1/sqrt(2 pi)
      cpu_kernel(it, [alpha, beta](T g, T v) -> T {
        T cdf, pdf;
        if constexpr (is_f32<T>) {
          cdf = 0.5f * (1.0f + erf_f32(v * alpha));
          pdf = beta * exp_f32(-0.5f * v * v);
        } else {
          cdf = 0.5 * (1.0 + std::erf(v * alpha));
          pdf = beta * std::exp(-0.5 * v * v);
        }
        return g * (cdf + v * pdf);
      });
    }
  });
  return it.output();
}

Tensor leaky_relu_cpu(const Tensor& a, const Scalar& negative_slope) {
  Tensor out;
  TensorIter it = TensorIter::unary_op(out, a, {.op_name = "leaky_relu"});
  visit_dtype<kFloatTypes>(it.compute_dtype(), "leaky_relu_cpu", [&]<class T>() {
    T s = negative_slope.to<T>();
    cpu_kernel(it, [s](T x) -> T { return x > T(0) ? x : x * s; });
  });
  return it.output();
}

// ---------------------------------------------------------------- nan_to_num, predicates
double dtype_max(DType t) {
  switch (t) {
    case DType::Float16: return 65504.0;
    case DType::BFloat16: return 3.3895313892515355e38;
    case DType::Float32: return double(FLT_MAX);
    default: return DBL_MAX;
  }
}

Tensor nan_to_num_cpu(const Tensor& a, std::optional<double> nan, std::optional<double> posinf,
                      std::optional<double> neginf) {
  if (!is_floating(a.dtype())) return ops::clone()(a);
  double nv = nan.value_or(0.0);
  double pv = posinf.value_or(dtype_max(a.dtype()));
  double mv = neginf.value_or(-dtype_max(a.dtype()));
  Tensor out;
  TensorIter it = TensorIter::unary_op(out, a, {.op_name = "nan_to_num"});
  visit_dtype<kFloatTypes>(it.compute_dtype(), "nan_to_num", [&]<class T>() {
    const T n = T(nv), p = T(pv), m = T(mv);
    const T inf = std::numeric_limits<T>::infinity();
    cpu_kernel(it, [=](T x) -> T { return x != x ? n : (x == inf ? p : (x == -inf ? m : x)); });
  });
  return it.output();
}

template <class Pred> Tensor predicate(const Tensor& a, const char* name, bool int_value, Pred pred) {
  Tensor out;
  if (!is_floating(a.dtype())) {
    out = empty(a.sizes(), {.dtype = DType::Bool, .device = a.device()});
    ops::fill_()(out, int_value);
    return out;
  }
  TensorIter it = TensorIter::unary_op(out, a, {.op_name = name, .output_dtype = DType::Bool});
  visit_dtype<kFloatTypes>(it.compute_dtype(), name, [&]<class T>() {
    cpu_kernel(it, [pred](T x) -> bool { return pred(x); });
  });
  return it.output();
}
Tensor isnan_cpu(const Tensor& a) {
  return predicate(a, "isnan", false, [](auto x) { return x != x; });
}
Tensor isinf_cpu(const Tensor& a) {
  return predicate(a, "isinf", false, [](auto x) {
    return std::abs(x) == std::numeric_limits<decltype(x)>::infinity();
  });
}
Tensor isfinite_cpu(const Tensor& a) {
  // x - x is 0 for finite x and NaN for inf and NaN.
  return predicate(a, "isfinite", true, [](auto x) { return (x - x) == decltype(x)(0); });
}

Tensor bitwise_not_cpu(const Tensor& a) {
  Tensor out;
  TensorIter it = TensorIter::unary_op(out, a, {.op_name = "bitwise_not"});
  visit_dtype<kIntAndBool>(it.compute_dtype(), "bitwise_not_cpu", [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) cpu_kernel(it, [](bool x) -> bool { return !x; });
    else cpu_kernel(it, [](T x) -> T { return T(~x); });
  });
  return it.output();
}

EMBER_REGISTER_KERNEL(gelu, CPU, gelu_cpu);
EMBER_REGISTER_KERNEL(gelu_backward, CPU, gelu_backward_cpu);
EMBER_REGISTER_KERNEL(leaky_relu, CPU, leaky_relu_cpu);
EMBER_REGISTER_KERNEL(nan_to_num, CPU, nan_to_num_cpu);
EMBER_REGISTER_KERNEL(isnan, CPU, isnan_cpu);
EMBER_REGISTER_KERNEL(isinf, CPU, isinf_cpu);
EMBER_REGISTER_KERNEL(isfinite, CPU, isfinite_cpu);
EMBER_REGISTER_KERNEL(bitwise_not, CPU, bitwise_not_cpu);

}  // namespace
}  // namespace ember::cpu
