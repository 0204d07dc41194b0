// Two-operand elementwise ops: the public functions, their argument checks and (from the
// autograd issue on) their gradient formulas. Scalars become wrapped-number tensors so one
// kernel serves tensor-tensor and tensor-scalar forms.
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember {

namespace {
Tensor wrap(const Scalar& s, const Tensor& like) { return wrapped_scalar(s, like.device()); }
void check_alpha(const char* op, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  if (alpha.is_integral() && alpha.to_int() == 1) return;  // the common case costs nothing
  DType t = result_type(a, b);
  EMBER_CHECK(is_floating(t) || !alpha.is_floating(), "For integral input tensors, argument alpha must not be a floating point number.");
  EMBER_CHECK(t != DType::Bool || alpha.is_bool() || alpha.to_int() == 1 || alpha.to_int() == 0,
              "Boolean alpha only supported for Boolean results.");
}
Tensor& bumped(Tensor& t) { t.impl()->bump_version(); return t; }
}  // namespace

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  check_alpha("add", a, b, alpha);
  return ops::add()(a, b, alpha);
}
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha) { return add(a, wrap(b, a), alpha); }
Tensor& add_(Tensor& self, const Tensor& other, const Scalar& alpha) {
  check_alpha("add_", self, other, alpha);
  return bumped(ops::add_()(self, other, alpha));
}

Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  EMBER_CHECK(a.dtype() != DType::Bool || b.dtype() != DType::Bool,
              "Subtraction, the `-` operator, with two bool tensors is not supported. "
              "Use the `^` or `logical_xor()` operator instead.");
  check_alpha("sub", a, b, alpha);
  return ops::sub()(a, b, alpha);
}
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha) { return sub(a, wrap(b, a), alpha); }
Tensor rsub(const Tensor& a, const Scalar& b, const Scalar& alpha) { return sub(wrap(b, a), a, alpha); }
Tensor& sub_(Tensor& self, const Tensor& other, const Scalar& alpha) {
  EMBER_CHECK(self.dtype() != DType::Bool || other.dtype() != DType::Bool,
              "Subtraction, the `-` operator, with two bool tensors is not supported. "
              "Use the `^` or `logical_xor()` operator instead.");
  check_alpha("sub_", self, other, alpha);
  return bumped(ops::sub_()(self, other, alpha));
}

Tensor mul(const Tensor& a, const Tensor& b) { return ops::mul()(a, b); }
Tensor mul(const Tensor& a, const Scalar& b) { return mul(a, wrap(b, a)); }
Tensor& mul_(Tensor& self, const Tensor& other) { return bumped(ops::mul_()(self, other)); }

// ---------------------------------------------------------------- division family

namespace {
void check_rounding_mode(const std::optional<std::string>& mode) {
  EMBER_CHECK(!mode || *mode == "trunc" || *mode == "floor",
              "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '",
              mode.value_or(""), "'");
}
// pow(integer tensor, negative integer number) has no integer result.
void check_int_pow(const Tensor& base, const Tensor& exponent) {
  if (!exponent.impl()->is_wrapped_number() || is_floating(base.dtype()) || is_floating(exponent.dtype()))
    return;
  EMBER_CHECK(exponent.item().to_int() >= 0, "Integers to negative integer powers are not allowed.");
}
}  // namespace

Tensor div(const Tensor& a, const Tensor& b, std::optional<std::string> rounding_mode) {
  check_rounding_mode(rounding_mode);
  return ops::div()(a, b, rounding_mode);
}
Tensor div(const Tensor& a, const Scalar& b, std::optional<std::string> rounding_mode) {
  return div(a, wrap(b, a), std::move(rounding_mode));
}
Tensor div(const Scalar& a, const Tensor& b) { return div(wrap(a, b), b); }
Tensor& div_(Tensor& self, const Tensor& other, std::optional<std::string> rounding_mode) {
  check_rounding_mode(rounding_mode);
  return bumped(ops::div_()(self, other, rounding_mode));
}

Tensor floor_divide(const Tensor& a, const Tensor& b) { return ops::floor_divide()(a, b); }
Tensor floor_divide(const Tensor& a, const Scalar& b) { return floor_divide(a, wrap(b, a)); }
Tensor remainder(const Tensor& a, const Tensor& b) { return ops::remainder()(a, b); }
Tensor remainder(const Tensor& a, const Scalar& b) { return remainder(a, wrap(b, a)); }
Tensor fmod(const Tensor& a, const Tensor& b) { return ops::fmod()(a, b); }
Tensor fmod(const Tensor& a, const Scalar& b) { return fmod(a, wrap(b, a)); }

// ---------------------------------------------------------------- pow, maximum, minimum, atan2
Tensor pow(const Tensor& a, const Tensor& b) {
  check_int_pow(a, b);
  return ops::pow()(a, b);
}
Tensor pow(const Tensor& a, const Scalar& b) { return pow(a, wrap(b, a)); }
Tensor pow(const Scalar& a, const Tensor& b) { return ops::pow()(wrap(a, b), b); }
Tensor& pow_(Tensor& self, const Tensor& exponent) {
  check_int_pow(self, exponent);
  return bumped(ops::pow_()(self, exponent));
}
Tensor maximum(const Tensor& a, const Tensor& b) { return ops::maximum()(a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return ops::minimum()(a, b); }
Tensor atan2(const Tensor& a, const Tensor& b) { return ops::atan2()(a, b); }

// ---------------------------------------------------------------- bitwise (integers and bool)
Tensor bitwise_and(const Tensor& a, const Tensor& b) { return ops::bitwise_and()(a, b); }
Tensor bitwise_and(const Tensor& a, const Scalar& b) { return bitwise_and(a, wrap(b, a)); }
Tensor bitwise_or(const Tensor& a, const Tensor& b) { return ops::bitwise_or()(a, b); }
Tensor bitwise_or(const Tensor& a, const Scalar& b) { return bitwise_or(a, wrap(b, a)); }
Tensor bitwise_xor(const Tensor& a, const Tensor& b) { return ops::bitwise_xor()(a, b); }
Tensor bitwise_xor(const Tensor& a, const Scalar& b) { return bitwise_xor(a, wrap(b, a)); }
Tensor bitwise_not(const Tensor& a) { return ops::bitwise_not()(a); }
Tensor bitwise_left_shift(const Tensor& a, const Tensor& b) { return ops::bitwise_left_shift()(a, b); }
Tensor bitwise_right_shift(const Tensor& a, const Tensor& b) { return ops::bitwise_right_shift()(a, b); }

// ---------------------------------------------------------------- where, clamp, lerp
namespace {
void check_condition(const Tensor& c) {
  EMBER_CHECK(c.dtype() == DType::Bool,
              "where expected condition to be a boolean tensor, but got a tensor with dtype ",
              dtype_name(c.dtype()));
}
void check_clamp_bounds(bool has_min, bool has_max) {
  EMBER_CHECK(has_min || has_max, "torch.clamp: At least one of 'min' or 'max' must not be None");
}
}  // namespace

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  check_condition(condition);
  return ops::where()(condition, a, b);
}
Tensor where(const Tensor& condition, const Tensor& a, const Scalar& b) {
  return where(condition, a, wrap(b, a));
}
Tensor where(const Tensor& condition, const Scalar& a, const Tensor& b) {
  return where(condition, wrap(a, b), b);
}
Tensor where(const Tensor& condition, const Scalar& a, const Scalar& b) {
  return where(condition, wrap(a, condition), wrap(b, condition));
}

Tensor clamp(const Tensor& a, std::optional<Scalar> min, std::optional<Scalar> max) {
  check_clamp_bounds(min.has_value(), max.has_value());
  return ops::clamp()(a, min, max);
}
Tensor clamp(const Tensor& a, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  bool has_min = min && min->defined(), has_max = max && max->defined();
  check_clamp_bounds(has_min, has_max);
  return ops::clamp_tensor()(a, has_min ? min : std::nullopt, has_max ? max : std::nullopt);
}
Tensor& clamp_(Tensor& self, std::optional<Scalar> min, std::optional<Scalar> max) {
  check_clamp_bounds(min.has_value(), max.has_value());
  return bumped(ops::clamp_()(self, min, max));
}

Tensor lerp(const Tensor& start, const Tensor& end, const Scalar& weight) {
  EMBER_CHECK(start.dtype() == end.dtype(), "expected dtype ", dtype_name(start.dtype()),
              " for `end` but got dtype ", dtype_name(end.dtype()));
  // The weight travels as a float64 0-dim tensor so its value is not rounded to start's dtype.
  return ops::lerp()(start, end, scalar_tensor(weight, {.dtype = DType::Float64, .device = start.device()}));
}
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight) {
  EMBER_CHECK(start.dtype() == end.dtype(), "expected dtype ", dtype_name(start.dtype()),
              " for `end` but got dtype ", dtype_name(end.dtype()));
  EMBER_CHECK(start.dtype() == weight.dtype(), "expected dtype ", dtype_name(start.dtype()),
              " for `weight` but got dtype ", dtype_name(weight.dtype()));
  return ops::lerp()(start, end, weight);
}

}  // namespace ember

// ---------------------------------------------------------------- gradients
// Formulas are written with ember ops, so they are themselves differentiable (double backward).
#include "autograd/record.h"

namespace ember {
namespace {
using autograd::below_autograd;
using autograd::grad_for;
using autograd::LambdaNode;
using autograd::record;
using autograd::record_inplace;
using autograd::saved_input;
using autograd::sum_to;
using autograd::variable_list;

Tensor add_autograd(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  Tensor out = below_autograd([&] { return ops::add()(a, b, alpha); });
  record("AddBackward0", {a, b}, {out}, {},
         [sa = a.sizes(), sb = b.sizes(), alpha](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] { return sum_to(g[0], sa); }),
                   grad_for(n, 1, [&] { return sum_to(alpha.to_double() == 1.0 ? g[0] : g[0] * alpha, sb); })};
         });
  return out;
}
Tensor sub_autograd(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  Tensor out = below_autograd([&] { return ops::sub()(a, b, alpha); });
  record("SubBackward0", {a, b}, {out}, {},
         [sa = a.sizes(), sb = b.sizes(), alpha](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] { return sum_to(g[0], sa); }),
                   grad_for(n, 1, [&] { return sum_to(g[0] * (-alpha), sb); })};
         });
  return out;
}
Tensor mul_autograd(const Tensor& a, const Tensor& b) {
  Tensor out = below_autograd([&] { return ops::mul()(a, b); });
  record("MulBackward0", {a, b}, {out}, {saved_input(a), saved_input(b)},
         [sa = a.sizes(), sb = b.sizes()](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] { return sum_to(g[0] * n.unpack(1), sa); }),
                   grad_for(n, 1, [&] { return sum_to(g[0] * n.unpack(0), sb); })};
         });
  return out;
}
Tensor& add_inplace_autograd(Tensor& self, const Tensor& b, const Scalar& alpha) {
  return record_inplace(self, false, [&](const Tensor& s) { return add_autograd(s, b, alpha); });
}
Tensor& sub_inplace_autograd(Tensor& self, const Tensor& b, const Scalar& alpha) {
  return record_inplace(self, false, [&](const Tensor& s) { return sub_autograd(s, b, alpha); });
}
Tensor& mul_inplace_autograd(Tensor& self, const Tensor& b) {
  return record_inplace(self, true, [&](const Tensor& s) { return mul_autograd(s, b); });
}

EMBER_REGISTER_KERNEL(add, Autograd, add_autograd);
EMBER_REGISTER_KERNEL(sub, Autograd, sub_autograd);
EMBER_REGISTER_KERNEL(mul, Autograd, mul_autograd);
EMBER_REGISTER_KERNEL(add_, Autograd, add_inplace_autograd);
EMBER_REGISTER_KERNEL(sub_, Autograd, sub_inplace_autograd);
EMBER_REGISTER_KERNEL(mul_, Autograd, mul_inplace_autograd);

}  // namespace
}  // namespace ember
