// One-operand elementwise ops: the public functions and their argument checks.
// Floating ops (exp, log, sin, sigmoid, ...) compute integer and bool inputs in the default
// float dtype; "keep" ops (neg, abs, floor, relu, ...) keep the input's dtype. In-place forms
// write into self, which must be able to hold the result, and bump its version counter.
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
EMBER_UNARY_PUBLIC(abs) EMBER_UNARY_PUBLIC(sign) EMBER_UNARY_PUBLIC(relu)
EMBER_UNARY_PUBLIC(floor) EMBER_UNARY_PUBLIC(ceil) EMBER_UNARY_PUBLIC(round)
EMBER_UNARY_PUBLIC(trunc) EMBER_UNARY_PUBLIC(frac)
#undef EMBER_UNARY_PUBLIC

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

Tensor gelu(const Tensor& a, const std::string& approximate) {
  EMBER_CHECK(approximate == "none" || approximate == "tanh",
              "approximate argument must be either none or tanh.");
  return ops::gelu()(a, approximate);
}

Tensor leaky_relu(const Tensor& a, const Scalar& negative_slope) {
  return ops::leaky_relu()(a, negative_slope);
}

Tensor nan_to_num(const Tensor& a, std::optional<double> nan, std::optional<double> posinf,
                  std::optional<double> neginf) {
  return ops::nan_to_num()(a, nan, posinf, neginf);
}

Tensor isnan(const Tensor& a) { return ops::isnan()(a); }
Tensor isinf(const Tensor& a) { return ops::isinf()(a); }
Tensor isfinite(const Tensor& a) { return ops::isfinite()(a); }

}  // namespace ember
