// One-operand elementwise ops: the public functions and their argument checks.
// Floating ops (exp, log, sin, sigmoid, ...) compute integer and bool inputs in the default
// float dtype; "keep" ops (neg, abs, floor, relu, ...) keep the input's dtype. In-place forms
// write into self, which must be able to hold the result, and bump its version counter.
#include <cfloat>

#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember {

namespace {
Tensor& bumped(Tensor& t) { t.impl()->bump_version(); return t; }

void check_not_bool_neg(const Tensor& a) {
  EMBER_CHECK(a.dtype() != DType::Bool,
              "Negation, the `-` operator, on a bool tensor is not supported. "
              "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
}
}  // namespace

#define EMBER_UNARY_PUBLIC(n)                                   \
  Tensor n(const Tensor& a) { return ops::n()(a); }             \
  Tensor& n##_(Tensor& a) { return bumped(ops::n##_()(a)); }
EMBER_UNARY_FLOAT_OPS(EMBER_UNARY_PUBLIC)
EMBER_UNARY_PUBLIC(sign) EMBER_UNARY_PUBLIC(relu)
EMBER_UNARY_PUBLIC(floor) EMBER_UNARY_PUBLIC(ceil) EMBER_UNARY_PUBLIC(round)
EMBER_UNARY_PUBLIC(trunc) EMBER_UNARY_PUBLIC(frac)
#undef EMBER_UNARY_PUBLIC

// |z| of a complex tensor is real (torch's abs); in place it could not be stored back.
Tensor abs(const Tensor& a) { return is_complex(a.dtype()) ? complex_abs(a) : ops::abs()(a); }
Tensor& abs_(Tensor& a) {
  EMBER_CHECK(!is_complex(a.dtype()), "In-place abs is not supported for complex tensors.");
  return bumped(ops::abs_()(a));
}

Tensor neg(const Tensor& a) {
  check_not_bool_neg(a);
  return ops::neg()(a);
}
Tensor& neg_(Tensor& a) {
  check_not_bool_neg(a);
  return bumped(ops::neg_()(a));
}

// square(x) is pow(x, 2): a bool tensor squares to int64, as in PyTorch.
Tensor square(const Tensor& a) {
  if (a.dtype() == DType::Bool) return ops::square()(a.to(DType::Int64));
  return ops::square()(a);
}
Tensor& square_(Tensor& a) {
  EMBER_CHECK(a.dtype() != DType::Bool, "result type int64 can't be cast to the desired output type bool");
  return bumped(ops::square_()(a));
}

// decimals 0 is plain round (which also takes integers); the scaled form is floating only.
Tensor round(const Tensor& a, int64_t decimals) {
  return decimals == 0 ? round(a) : ops::round_decimals()(a, decimals);
}
Tensor& round_(Tensor& a, int64_t decimals) {
  return decimals == 0 ? round_(a) : bumped(ops::round_decimals_()(a, decimals));
}

Tensor gelu(const Tensor& a, const std::string& approximate) {
  EMBER_CHECK(approximate == "none" || approximate == "tanh",
              "approximate argument must be either none or tanh.");
  return ops::gelu()(a, approximate);
}

Tensor leaky_relu(const Tensor& a, const Scalar& negative_slope) {
  return ops::leaky_relu()(a, negative_slope);
}

namespace {
// The largest finite value of a floating dtype: nan_to_num's default for +-inf.
double largest_finite(DType t) {
  switch (t) {
    case DType::Float16: return 65504.0;
    case DType::BFloat16: return 3.3895313892515355e38;
    case DType::Float32: return double(FLT_MAX);
    default: return DBL_MAX;
  }
}
}  // namespace

// The defaults are resolved here, so every backend's kernel gets three numbers.
Tensor nan_to_num(const Tensor& a, std::optional<double> nan, std::optional<double> posinf,
                  std::optional<double> neginf) {
  const double big = largest_finite(a.dtype());
  return ops::nan_to_num()(a, nan.value_or(0.0), posinf.value_or(big), neginf.value_or(-big));
}

Tensor isnan(const Tensor& a) { return ops::isnan()(a); }
Tensor isinf(const Tensor& a) { return ops::isinf()(a); }
Tensor isfinite(const Tensor& a) { return ops::isfinite()(a); }
Tensor isposinf(const Tensor& a) { return logical_and(isinf(a), gt(a, 0)); }
Tensor isneginf(const Tensor& a) { return logical_and(isinf(a), lt(a, 0)); }
Tensor isreal(const Tensor& a) { return ones_like(a, {.dtype = kBool}); }
// -0.0 counts as negative: it is the zero whose reciprocal is -inf.
Tensor signbit(const Tensor& a) {
  if (!is_floating(a.dtype())) return lt(a, 0);
  return logical_or(lt(a, 0), logical_and(eq(a, 0), lt(reciprocal(a), 0)));
}
Tensor positive(const Tensor& a) {
  EMBER_CHECK(a.dtype() != kBool, "The `+` operator, on a bool tensor is not supported.");
  return a;
}

}  // namespace ember

// ---------------------------------------------------------------- gradients
// Formulas are written with ember ops, so they are themselves differentiable (double backward).
// Ops whose formula uses the result save it as an output; in-place forms then need no copy of
// self's old value.
#include <cmath>

#include "autograd/record.h"
#include "ops/product_grads.h"

namespace ember::product_grads {

// PyTorch's gelu_backward, both forms:
//   none: x * Phi(x) -> Phi(x) + x * phi(x)
//   tanh: 0.5 x (1 + tanh(k (x + 0.044715 x^3))), k = sqrt(2 / pi)
Tensor gelu_grad(const Tensor& g, const Tensor& x, const std::string& approximate) {
  if (approximate == "tanh") {
    constexpr double kBeta = M_SQRT2 * M_2_SQRTPI * 0.5, kKappa = 0.044715;
    Tensor x_sq = x * x;
    Tensor inner = (x + x_sq * x * kKappa) * kBeta;
    Tensor t = inner.tanh();
    Tensor left = x * 0.5, right = t + 1;
    Tensor left_derivative = right * 0.5;
    Tensor right_derivative = left * (1 - t * t);
    Tensor inner_derivative = (x_sq * (3 * kKappa) + 1) * kBeta;
    return g * (left_derivative + right_derivative * inner_derivative);
  }
  constexpr double kAlpha = M_SQRT1_2, kBeta = M_2_SQRTPI * M_SQRT1_2 * 0.5;
  Tensor cdf = ((x * kAlpha).erf() + 1) * 0.5;
  Tensor pdf = (x * x * -0.5).exp() * kBeta;
  return g * (cdf + x * pdf);
}

}  // namespace ember::product_grads

namespace ember {
namespace {
using namespace autograd;  // record, below_autograd, saved_input, grad_for, ...

enum class Uses { Nothing, Self, Result };
using Formula = Tensor (*)(const Tensor& grad, const Tensor& saved);

Tensor unary_autograd(const char* name, const Tensor& a, Tensor out, Uses uses, Formula f) {
  std::vector<autograd::Save> saves;
  if (uses == Uses::Self) saves.push_back(saved_input(a));
  if (uses == Uses::Result) saves.push_back(saved_output(out));
  record(name, {a}, {out}, std::move(saves), [f, uses](const variable_list& g, LambdaNode& n) -> variable_list {
    return {grad_for(n, 0, [&] {
      Tensor s = uses == Uses::Nothing ? Tensor() : n.unpack(0);
      // The complex ops here are holomorphic: torch's gradient is g * conj(f'(z)), which is
      // conj(f(conj(g))) for a formula f linear in g (f(g) = g * f'(z)).
      if (s.defined() && is_complex(s.dtype())) return conj(f(conj(g[0]), s));
      return f(g[0], s);
    })};
  });
  return out;
}

// op's autograd kernel and its in-place form; `formula` sees g (the gradient) and s (self or the
// result, per `uses`).
#define EMBER_UNARY_GRAD(op, name, uses, ...)                                                          \
  Tensor op##_autograd(const Tensor& a) {                                                              \
    return unary_autograd(name, a, below_autograd([&] { return ops::op()(a); }), Uses::uses,           \
                          [](const Tensor& g, [[maybe_unused]] const Tensor& s) -> Tensor { return __VA_ARGS__; }); \
  }                                                                                                    \
  Tensor& op##_inplace_autograd(Tensor& a) {                                                           \
    return record_inplace(a, Uses::uses == Uses::Self, [](const Tensor& s) { return op##_autograd(s); }); \
  }                                                                                                    \
  EMBER_REGISTER_KERNEL(op, Autograd, op##_autograd);                                                  \
  EMBER_REGISTER_KERNEL(op##_, Autograd, op##_inplace_autograd);

// tanh's, sigmoid's, silu's and relu's gradients as ops (torch's tanh_backward, sigmoid_backward,
// silu_backward, threshold_backward): one fused pass on the CPU and CUDA (ops/elementwise_formulas.h,
// the composite's float32 bits), these formulas on a backend without a kernel of its own; the
// formulas themselves where a graph of the backward is built (create_graph) or the values are complex.
Tensor tanh_backward_composite(const Tensor& g, const Tensor& y) { return g * (1 - y * y); }
Tensor sigmoid_backward_composite(const Tensor& g, const Tensor& y) { return g * (1 - y) * y; }
Tensor silu_backward_composite(const Tensor& g, const Tensor& x) {
  Tensor sig = x.sigmoid();
  return g * sig * (1 + x * (1 - sig));
}
Tensor threshold_backward_composite(const Tensor& g, const Tensor& self, const Scalar& threshold) {
  return where(self.le(threshold), 0, g);  // (NaN passes the gradient)
}
EMBER_REGISTER_KERNEL(tanh_backward, CompositeBackend, tanh_backward_composite);
EMBER_REGISTER_KERNEL(sigmoid_backward, CompositeBackend, sigmoid_backward_composite);
EMBER_REGISTER_KERNEL(silu_backward, CompositeBackend, silu_backward_composite);
EMBER_REGISTER_KERNEL(threshold_backward, CompositeBackend, threshold_backward_composite);

bool fused_backward_applies(const Tensor& y) { return !GradMode::is_enabled() && is_floating(y.dtype()); }
Tensor tanh_grad(const Tensor& g, const Tensor& y) {
  return fused_backward_applies(y) ? ops::tanh_backward()(g, y) : tanh_backward_composite(g, y);
}
Tensor sigmoid_grad(const Tensor& g, const Tensor& y) {
  return fused_backward_applies(y) ? ops::sigmoid_backward()(g, y) : sigmoid_backward_composite(g, y);
}
Tensor silu_grad(const Tensor& g, const Tensor& x) {
  return fused_backward_applies(x) ? ops::silu_backward()(g, x) : silu_backward_composite(g, x);
}
Tensor relu_grad(const Tensor& g, const Tensor& y) {
  return fused_backward_applies(y) ? ops::threshold_backward()(g, y, Scalar(0.0))
                                   : threshold_backward_composite(g, y, Scalar(0.0));
}

// ---- floating ops
EMBER_UNARY_GRAD(exp, "ExpBackward0", Result, g * s)
EMBER_UNARY_GRAD(exp2, "Exp2Backward0", Result, g * (s * M_LN2))
EMBER_UNARY_GRAD(log, "LogBackward0", Self, g / s)
EMBER_UNARY_GRAD(log1p, "Log1PBackward0", Self, g / (s + 1))
EMBER_UNARY_GRAD(expm1, "Expm1Backward0", Result, g * (s + 1))
EMBER_UNARY_GRAD(log2, "Log2Backward0", Self, g / (s * M_LN2))
EMBER_UNARY_GRAD(log10, "Log10Backward0", Self, g / (s * M_LN10))
EMBER_UNARY_GRAD(sqrt, "SqrtBackward0", Result, g / (s * 2))
EMBER_UNARY_GRAD(rsqrt, "RsqrtBackward0", Result, g * s.pow(3) * -0.5)
EMBER_UNARY_GRAD(sin, "SinBackward0", Self, g * s.cos())
EMBER_UNARY_GRAD(cos, "CosBackward0", Self, g * -s.sin())
EMBER_UNARY_GRAD(tan, "TanBackward0", Result, g * (s * s + 1))
EMBER_UNARY_GRAD(asin, "AsinBackward0", Self, g * (-s * s + 1).rsqrt())
EMBER_UNARY_GRAD(acos, "AcosBackward0", Self, g * -(-s * s + 1).rsqrt())
EMBER_UNARY_GRAD(atan, "AtanBackward0", Self, g / (s * s + 1))
EMBER_UNARY_GRAD(sinh, "SinhBackward0", Self, g * s.cosh())
EMBER_UNARY_GRAD(cosh, "CoshBackward0", Self, g * s.sinh())
EMBER_UNARY_GRAD(tanh, "TanhBackward0", Result, tanh_grad(g, s))
EMBER_UNARY_GRAD(sigmoid, "SigmoidBackward0", Result, sigmoid_grad(g, s))
EMBER_UNARY_GRAD(silu, "SiluBackward0", Self, silu_grad(g, s))
EMBER_UNARY_GRAD(erf, "ErfBackward0", Self, g * (-(s * s)).exp() * M_2_SQRTPI)
EMBER_UNARY_GRAD(reciprocal, "ReciprocalBackward0", Result, -g * (s * s))

// ---- dtype-keeping ops. sign, floor, ceil, round and trunc are piecewise constant: zero
// gradients, as PyTorch. square is pow(x, 2) there, hence PowBackward0.
EMBER_UNARY_GRAD(neg, "NegBackward0", Nothing, -g)
EMBER_UNARY_GRAD(abs, "AbsBackward0", Self, g * s.sign())
EMBER_UNARY_GRAD(sign, "SignBackward0", Nothing, zeros_like(g))
EMBER_UNARY_GRAD(square, "PowBackward0", Self, g * (s * 2.0))
EMBER_UNARY_GRAD(relu, "ReluBackward0", Result, relu_grad(g, s))
EMBER_UNARY_GRAD(floor, "FloorBackward0", Nothing, zeros_like(g))
EMBER_UNARY_GRAD(ceil, "CeilBackward0", Nothing, zeros_like(g))
EMBER_UNARY_GRAD(round, "RoundBackward0", Nothing, zeros_like(g))
EMBER_UNARY_GRAD(trunc, "TruncBackward0", Nothing, zeros_like(g))
EMBER_UNARY_GRAD(frac, "FracBackward0", Nothing, g)
#undef EMBER_UNARY_GRAD

// ---- ops with extra arguments
Tensor nan_to_num_autograd(const Tensor& a, std::optional<double> nan, std::optional<double> posinf,
                           std::optional<double> neginf) {
  Tensor out = below_autograd([&] { return ops::nan_to_num()(a, nan, posinf, neginf); });
  record("NanToNumBackward0", {a}, {out}, {saved_input(a)}, [](const variable_list& g, LambdaNode& n) -> variable_list {
    return {grad_for(n, 0, [&] { return g[0] * n.unpack(0).isfinite(); })};
  });
  return out;
}

Tensor leaky_relu_autograd(const Tensor& a, const Scalar& slope) {
  Tensor out = below_autograd([&] { return ops::leaky_relu()(a, slope); });
  record("LeakyReluBackward0", {a}, {out}, {saved_input(a)},
         [slope](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] { return where(n.unpack(0).gt(0), g[0], g[0] * slope); })};
         });
  return out;
}

using product_grads::gelu_grad;
Tensor gelu_autograd(const Tensor& a, const std::string& approximate) {
  Tensor out = below_autograd([&] { return ops::gelu()(a, approximate); });
  record("GeluBackward0", {a}, {out}, {saved_input(a)},
         [approximate](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] {
             // one fused pass unless the backward itself must be differentiable
             return GradMode::is_enabled() ? gelu_grad(g[0], n.unpack(0), approximate)
                                           : ops::gelu_backward()(g[0], n.unpack(0), approximate);
           })};
         });
  return out;
}

// round(decimals): piecewise constant, zero gradient (RoundBackward1).
Tensor round_decimals_autograd(const Tensor& a, int64_t decimals) {
  Tensor out = below_autograd([&] { return ops::round_decimals()(a, decimals); });
  record("RoundBackward1", {a}, {out}, {}, [](const variable_list& g, LambdaNode& n) -> variable_list {
    return {grad_for(n, 0, [&] { return zeros_like(g[0]); })};
  });
  return out;
}
Tensor& round_decimals_inplace_autograd(Tensor& a, int64_t decimals) {
  return record_inplace(a, false, [decimals](const Tensor& s) { return round_decimals_autograd(s, decimals); });
}

EMBER_REGISTER_KERNEL(round_decimals, Autograd, round_decimals_autograd);
EMBER_REGISTER_KERNEL(round_decimals_, Autograd, round_decimals_inplace_autograd);
EMBER_REGISTER_KERNEL(nan_to_num, Autograd, nan_to_num_autograd);
EMBER_REGISTER_KERNEL(leaky_relu, Autograd, leaky_relu_autograd);
EMBER_REGISTER_KERNEL(gelu, Autograd, gelu_autograd);

}  // namespace
}  // namespace ember
