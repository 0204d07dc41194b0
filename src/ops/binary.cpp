// Two-operand elementwise ops: the public functions, their argument checks and (from the
// autograd issue on) their gradient formulas. Scalars become wrapped-number tensors so one
// kernel serves tensor-tensor and tensor-scalar forms.
#include "amp/autocast.h"
#include "core/dtype_dispatch.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember {

namespace {
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
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha) { return add(a, wrapped_scalar(b), alpha); }
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
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha) { return sub(a, wrapped_scalar(b), alpha); }
Tensor rsub(const Tensor& a, const Scalar& b, const Scalar& alpha) { return sub(wrapped_scalar(b), a, alpha); }
Tensor rsub(const Tensor& a, const Tensor& b, const Scalar& alpha) { return sub(b, a, alpha); }
Tensor& sub_(Tensor& self, const Tensor& other, const Scalar& alpha) {
  EMBER_CHECK(self.dtype() != DType::Bool || other.dtype() != DType::Bool,
              "Subtraction, the `-` operator, with two bool tensors is not supported. "
              "Use the `^` or `logical_xor()` operator instead.");
  check_alpha("sub_", self, other, alpha);
  return bumped(ops::sub_()(self, other, alpha));
}

Tensor mul(const Tensor& a, const Tensor& b) { return ops::mul()(a, b); }
Tensor mul(const Tensor& a, const Scalar& b) { return mul(a, wrapped_scalar(b)); }
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
  return div(a, wrapped_scalar(b), std::move(rounding_mode));
}
Tensor div(const Scalar& a, const Tensor& b) { return div(wrapped_scalar(a), b); }
Tensor& div_(Tensor& self, const Tensor& other, std::optional<std::string> rounding_mode) {
  check_rounding_mode(rounding_mode);
  return bumped(ops::div_()(self, other, rounding_mode));
}

Tensor floor_divide(const Tensor& a, const Tensor& b) { return ops::floor_divide()(a, b); }
Tensor floor_divide(const Tensor& a, const Scalar& b) { return floor_divide(a, wrapped_scalar(b)); }
Tensor remainder(const Tensor& a, const Tensor& b) { return ops::remainder()(a, b); }
Tensor remainder(const Tensor& a, const Scalar& b) { return remainder(a, wrapped_scalar(b)); }
Tensor fmod(const Tensor& a, const Tensor& b) { return ops::fmod()(a, b); }
Tensor fmod(const Tensor& a, const Scalar& b) { return fmod(a, wrapped_scalar(b)); }
Tensor& floor_divide_(Tensor& self, const Tensor& other) { return bumped(ops::floor_divide_()(self, other)); }
Tensor& remainder_(Tensor& self, const Tensor& other) { return bumped(ops::remainder_()(self, other)); }
Tensor& fmod_(Tensor& self, const Tensor& other) { return bumped(ops::fmod_()(self, other)); }

// ---------------------------------------------------------------- pow, maximum, minimum, atan2
Tensor pow(const Tensor& a, const Tensor& b) {
  check_int_pow(a, b);
  return ops::pow()(a, b);
}
Tensor pow(const Tensor& a, const Scalar& b) { return pow(a, wrapped_scalar(b)); }
Tensor pow(const Scalar& a, const Tensor& b) { return ops::pow()(wrapped_scalar(a), b); }
Tensor& pow_(Tensor& self, const Tensor& exponent) {
  check_int_pow(self, exponent);
  return bumped(ops::pow_()(self, exponent));
}
Tensor maximum(const Tensor& a, const Tensor& b) { return ops::maximum()(a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return ops::minimum()(a, b); }
Tensor atan2(const Tensor& a, const Tensor& b) { return ops::atan2()(a, b); }
Tensor& atan2_(Tensor& self, const Tensor& other) { return bumped(ops::atan2_()(self, other)); }

// float_power: pow in float64 (the exponent too, so an integer exponent cannot round).
Tensor float_power(const Tensor& a, const Tensor& b) { return pow(a.to(kFloat64), b.to(kFloat64)); }
Tensor float_power(const Tensor& a, const Scalar& b) { return pow(a.to(kFloat64), Scalar(b.to_double())); }
Tensor float_power(const Scalar& a, const Tensor& b) { return pow(Scalar(a.to_double()), b.to(kFloat64)); }

// fmax/fmin pick self where it wins, ties included, or where other is NaN; so NaN results only
// where both are NaN, and the gradient of a tie goes to self (as PyTorch's formula).
Tensor fmax(const Tensor& a, const Tensor& b) { return where(logical_or(ge(a, b), isnan(b)), a, b); }
Tensor fmin(const Tensor& a, const Tensor& b) { return where(logical_or(le(a, b), isnan(b)), a, b); }

Tensor hypot(const Tensor& a, const Tensor& b) {
  DType t = result_type(a, b);
  EMBER_CHECK(is_floating(t), "\"hypot", backend_kernel_suffix(a.is_cpu() ? b.device() : a.device()), "\" not implemented for '",
              scalar_type_name(t), "'");
  return sqrt(add(mul(a, a), mul(b, b)));
}

Tensor addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  EMBER_AUTOCAST(addcmul, self, t1, t2, value);
  return add(self, mul(t1, t2), value);
}
Tensor addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  EMBER_AUTOCAST(addcdiv, self, t1, t2, value);
  EMBER_CHECK(!(is_integral(t1.dtype(), true) && is_integral(t2.dtype(), true)),
              "Integer division with addcdiv is no longer supported, and in a future release addcdiv will perform "
              "a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as "
              "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as "
              "(input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter "
              "implementation: (input + value * tensor1 / tensor2), for all dtypes.");
  return add(self, div(t1, t2), value);
}

// ---------------------------------------------------------------- bitwise (integers and bool)
Tensor bitwise_and(const Tensor& a, const Tensor& b) { return ops::bitwise_and()(a, b); }
Tensor bitwise_and(const Tensor& a, const Scalar& b) { return bitwise_and(a, wrapped_scalar(b)); }
Tensor bitwise_or(const Tensor& a, const Tensor& b) { return ops::bitwise_or()(a, b); }
Tensor bitwise_or(const Tensor& a, const Scalar& b) { return bitwise_or(a, wrapped_scalar(b)); }
Tensor bitwise_xor(const Tensor& a, const Tensor& b) { return ops::bitwise_xor()(a, b); }
Tensor bitwise_xor(const Tensor& a, const Scalar& b) { return bitwise_xor(a, wrapped_scalar(b)); }
Tensor bitwise_not(const Tensor& a) { return ops::bitwise_not()(a); }
Tensor bitwise_left_shift(const Tensor& a, const Tensor& b) { return ops::bitwise_left_shift()(a, b); }
Tensor bitwise_right_shift(const Tensor& a, const Tensor& b) { return ops::bitwise_right_shift()(a, b); }
Tensor bitwise_left_shift(const Tensor& a, const Scalar& b) { return bitwise_left_shift(a, wrapped_scalar(b)); }
Tensor bitwise_left_shift(const Scalar& a, const Tensor& b) { return bitwise_left_shift(wrapped_scalar(a), b); }
Tensor bitwise_right_shift(const Tensor& a, const Scalar& b) { return bitwise_right_shift(a, wrapped_scalar(b)); }
Tensor bitwise_right_shift(const Scalar& a, const Tensor& b) { return bitwise_right_shift(wrapped_scalar(a), b); }
Tensor& bitwise_and_(Tensor& self, const Tensor& other) { return bumped(ops::bitwise_and_()(self, other)); }
Tensor& bitwise_or_(Tensor& self, const Tensor& other) { return bumped(ops::bitwise_or_()(self, other)); }
Tensor& bitwise_xor_(Tensor& self, const Tensor& other) { return bumped(ops::bitwise_xor_()(self, other)); }
Tensor& bitwise_left_shift_(Tensor& self, const Tensor& other) { return bumped(ops::bitwise_left_shift_()(self, other)); }
Tensor& bitwise_right_shift_(Tensor& self, const Tensor& other) {
  return bumped(ops::bitwise_right_shift_()(self, other));
}

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
  return where(condition, a, wrapped_scalar(b));
}
Tensor where(const Tensor& condition, const Scalar& a, const Tensor& b) {
  return where(condition, wrapped_scalar(a), b);
}
Tensor where(const Tensor& condition, const Scalar& a, const Scalar& b) {
  return where(condition, wrapped_scalar(a), wrapped_scalar(b));
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
  // It is flagged as a wrapped number so autograd names the node LerpBackward0 (lerp.Scalar).
  Tensor w = scalar_tensor(weight, {.dtype = DType::Float64, .device = start.device()});
  w.impl()->set_wrapped_number(true);
  return ops::lerp()(start, end, w);
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
#include <cmath>

#include "autograd/record.h"

namespace ember {
namespace {
using namespace autograd;  // record, below_autograd, saved_input, grad_for, ...

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
           return {grad_for(n, 0, [&] { return sum_to(g[0] * conj(n.unpack(1)), sa); }),
                   grad_for(n, 1, [&] { return sum_to(g[0] * conj(n.unpack(0)), sb); })};
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


// ---- division family
// In-place forms write a floating result into self: self must be floating too (PyTorch's cast
// rule) and must already have the broadcast shape.
void check_inplace(const char* op, const Tensor& self, const Tensor& other) {
  DType rt = result_type(self, other);
  EMBER_CHECK(is_floating(self.dtype()) || !is_floating(rt), "result type ", scalar_type_name(rt),
              " can't be cast to the desired output type ", scalar_type_name(self.dtype()));
  Shape b = broadcast_shapes(self.sizes(), other.sizes());
  EMBER_CHECK(IntArrayRef(b) == IntArrayRef(self.sizes()), "output with shape ", self.sizes(),
              " doesn't match the broadcast shape ", b, " (", op, ")");
}
Tensor zeros_for(IntArrayRef shape, const Tensor& g) { return zeros(shape, {.dtype = g.dtype(), .device = g.device()}); }
Save save_if(bool needed, const Tensor& t) { return saved_input(needed ? t : Tensor()); }

Tensor div_autograd(const Tensor& a, const Tensor& b, const std::optional<std::string>& mode) {
  Tensor out = below_autograd([&] { return ops::div()(a, b, mode); });
  if (mode) {  // trunc / floor: piecewise constant
    record("DivBackward2", {a, b}, {out}, {},
           [sa = a.sizes(), sb = b.sizes()](const variable_list& g, LambdaNode& n) -> variable_list {
             return {grad_for(n, 0, [&] { return zeros_for(sa, g[0]); }),
                     grad_for(n, 1, [&] { return zeros_for(sb, g[0]); })};
           });
    return out;
  }
  record("DivBackward0", {a, b}, {out}, {save_if(b.requires_grad(), a), saved_input(b)},
         [sa = a.sizes(), sb = b.sizes()](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] { return sum_to(g[0] / conj(n.unpack(1)), sa); }),
                   grad_for(n, 1, [&] {
                     Tensor other = n.unpack(1);
                     return sum_to(-g[0] * conj((n.unpack(0) / other) / other), sb);
                   })};
         });
  return out;
}
Tensor& div_inplace_autograd(Tensor& self, const Tensor& b, const std::optional<std::string>& mode) {
  check_inplace("div_", self, b);
  return record_inplace(self, !mode && b.requires_grad(), [&](const Tensor& s) { return div_autograd(s, b, mode); });
}

// remainder: self - floor(self / other) * other; fmod: the same with trunc.
template <bool kFloor> Tensor mod_autograd(const Tensor& a, const Tensor& b) {
  Tensor out = below_autograd([&] { return kFloor ? ops::remainder()(a, b) : ops::fmod()(a, b); });
  // remainder(Tensor, Scalar) is RemainderBackward0, remainder(Tensor, Tensor) RemainderBackward1.
  bool scalar = b.impl()->is_wrapped_number();
  const char* name = kFloor ? (scalar ? "RemainderBackward0" : "RemainderBackward1")
                            : (scalar ? "FmodBackward0" : "FmodBackward1");
  bool need_other = b.requires_grad();
  record(name, {a, b}, {out}, {save_if(need_other, a), save_if(need_other, b)},
         [sa = a.sizes(), sb = b.sizes()](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] { return sum_to(g[0], sa); }),
                   grad_for(n, 1, [&] {
                     Tensor q = div(n.unpack(0), n.unpack(1), std::string(kFloor ? "floor" : "trunc"));
                     return sum_to(-g[0] * q, sb);
                   })};
         });
  return out;
}
Tensor remainder_autograd(const Tensor& a, const Tensor& b) { return mod_autograd<true>(a, b); }
Tensor fmod_autograd(const Tensor& a, const Tensor& b) { return mod_autograd<false>(a, b); }
Tensor& remainder_inplace_autograd(Tensor& self, const Tensor& b) {
  check_inplace("remainder_", self, b);
  return record_inplace(self, b.requires_grad(), [&](const Tensor& s) { return remainder_autograd(s, b); });
}
Tensor& fmod_inplace_autograd(Tensor& self, const Tensor& b) {
  check_inplace("fmod_", self, b);
  return record_inplace(self, b.requires_grad(), [&](const Tensor& s) { return fmod_autograd(s, b); });
}

Tensor floor_divide_autograd(const Tensor& a, const Tensor& b) {
  Tensor out = below_autograd([&] { return ops::floor_divide()(a, b); });
  record("FloorDivideBackward0", {a, b}, {out}, {},
         [sa = a.sizes(), sb = b.sizes()](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] { return zeros_for(sa, g[0]); }),
                   grad_for(n, 1, [&] { return zeros_for(sb, g[0]); })};
         });
  return out;
}
Tensor& floor_divide_inplace_autograd(Tensor& self, const Tensor& b) {
  check_inplace("floor_divide_", self, b);
  return record_inplace(self, false, [&](const Tensor& s) { return floor_divide_autograd(s, b); });
}

// ---- pow
// PowBackward0: pow(Tensor, Scalar); PowBackward1: pow(Tensor, Tensor); PowBackward2: pow(Scalar, Tensor).
Tensor pow_scalar_exponent_grad(const Tensor& g, const Tensor& self, double e) {
  if (e == 0.0) return zeros_like(self);
  return g * (self.pow(e - 1.0) * e);
}
Tensor pow_autograd(const Tensor& a, const Tensor& b) {
  Tensor out = below_autograd([&] { return ops::pow()(a, b); });
  if (b.impl()->is_wrapped_number()) {
    record("PowBackward0", {a, b}, {out}, {saved_input(a)},
           [e = b.item().to_double()](const variable_list& g, LambdaNode& n) -> variable_list {
             return {grad_for(n, 0, [&] { return pow_scalar_exponent_grad(g[0], n.unpack(0), e); }), Tensor()};
           });
    return out;
  }
  if (a.impl()->is_wrapped_number()) {
    double base = a.item().to_double();
    record("PowBackward2", {a, b}, {out}, {saved_output(out), save_if(base == 0.0, b)},
           [base, sb = b.sizes()](const variable_list& g, LambdaNode& n) -> variable_list {
             return {Tensor(), grad_for(n, 1, [&] {
                       Tensor r = n.unpack(0);
                       // d/de base^e = base^e * log(base); 0 for base 0 and e >= 0 (as PyTorch).
                       if (base == 0.0) return sum_to(g[0] * where(n.unpack(1).ge(0.0), 0.0, r * std::log(base)), sb);
                       return sum_to(g[0] * (r * std::log(base)), sb);
                     })};
           });
    return out;
  }
  record("PowBackward1", {a, b}, {out}, {saved_input(a), saved_input(b), saved_output(out)},
         [sa = a.sizes(), sb = b.sizes()](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] {
                     Tensor self = n.unpack(0), e = n.unpack(1);
                     return sum_to(where(e.eq(0.0), 0.0, g[0] * (e * self.pow(e - 1))), sa);
                   }),
                   grad_for(n, 1, [&] {
                     Tensor self = n.unpack(0), e = n.unpack(1), r = n.unpack(2);
                     Tensor zero_base = e.ge(0.0).logical_and(self.eq(0.0));
                     return sum_to(g[0] * where(zero_base, 0.0, r * self.log()), sb);
                   })};
         });
  return out;
}
Tensor& pow_inplace_autograd(Tensor& self, const Tensor& b) {
  check_inplace("pow_", self, b);
  return record_inplace(self, true, [&](const Tensor& s) { return pow_autograd(s, b); });
}

// ---- maximum, minimum: ties split the gradient equally (as PyTorch).
template <bool kMax> Tensor extremum_autograd(const Tensor& a, const Tensor& b) {
  Tensor out = below_autograd([&] { return kMax ? ops::maximum()(a, b) : ops::minimum()(a, b); });
  record(kMax ? "MaximumBackward0" : "MinimumBackward0", {a, b}, {out}, {saved_input(a), saved_input(b)},
         [sa = a.sizes(), sb = b.sizes()](const variable_list& g, LambdaNode& n) -> variable_list {
           Tensor x = n.unpack(0), y = n.unpack(1);
           Tensor split = where(x.eq(y), g[0] * 0.5, g[0]);
           // self loses where it is beaten, other where self wins.
           return {grad_for(n, 0, [&] { return sum_to(where(kMax ? x.lt(y) : x.gt(y), 0.0, split), sa); }),
                   grad_for(n, 1, [&] { return sum_to(where(kMax ? x.gt(y) : x.lt(y), 0.0, split), sb); })};
         });
  return out;
}
Tensor maximum_autograd(const Tensor& a, const Tensor& b) { return extremum_autograd<true>(a, b); }
Tensor minimum_autograd(const Tensor& a, const Tensor& b) { return extremum_autograd<false>(a, b); }
Tensor& maximum_inplace_autograd(Tensor& self, const Tensor& b) {
  check_inplace("maximum_", self, b);
  return record_inplace(self, true, [&](const Tensor& s) { return maximum_autograd(s, b); });
}
Tensor& minimum_inplace_autograd(Tensor& self, const Tensor& b) {
  check_inplace("minimum_", self, b);
  return record_inplace(self, true, [&](const Tensor& s) { return minimum_autograd(s, b); });
}

// ---- atan2(y, x): d/dy = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2)
Tensor atan2_autograd(const Tensor& a, const Tensor& b) {
  Tensor out = below_autograd([&] { return ops::atan2()(a, b); });
  record("Atan2Backward0", {a, b}, {out}, {saved_input(a), saved_input(b)},
         [sa = a.sizes(), sb = b.sizes()](const variable_list& g, LambdaNode& n) -> variable_list {
           Tensor y = n.unpack(0), x = n.unpack(1);
           Tensor recip = (y * y + x * x).reciprocal();
           return {grad_for(n, 0, [&] { return sum_to(g[0] * x * recip, sa); }),
                   grad_for(n, 1, [&] { return sum_to(g[0] * -y * recip, sb); })};
         });
  return out;
}
Tensor& atan2_inplace_autograd(Tensor& self, const Tensor& b) {
  check_inplace("atan2_", self, b);
  return record_inplace(self, true, [&](const Tensor& s) { return atan2_autograd(s, b); });
}

// ---- where, clamp, lerp
Tensor where_autograd(const Tensor& c, const Tensor& a, const Tensor& b) {
  Tensor out = below_autograd([&] { return ops::where()(c, a, b); });
  record("WhereBackward0", {a, b}, {out}, {saved_input(c)},
         [sa = a.sizes(), sb = b.sizes()](const variable_list& g, LambdaNode& n) -> variable_list {
           Tensor cond = n.unpack(0);
           return {grad_for(n, 0, [&] { return sum_to(where(cond, g[0], 0.0), sa); }),
                   grad_for(n, 1, [&] { return sum_to(where(cond, 0.0, g[0]), sb); })};
         });
  return out;
}

// PyTorch 2.x: the gradient passes strictly inside the bounds, min < x < max (1.13 included
// the bounds); NaN inputs get none.
Tensor clamp_autograd(const Tensor& a, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  Tensor out = below_autograd([&] { return ops::clamp()(a, min, max); });
  record("ClampBackward1", {a}, {out}, {saved_input(a)},
         [min, max](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] {
             Tensor x = n.unpack(0);
             Tensor pass = min && max ? x.gt(*min).logical_and(x.lt(*max)) : min ? x.gt(*min) : x.lt(*max);
             return where(pass, g[0], 0.0);
           })};
         });
  return out;
}
Tensor& clamp_inplace_autograd(Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  return record_inplace(self, true, [&](const Tensor& s) { return clamp_autograd(s, min, max); });
}

// Tensor bounds follow PyTorch 2.x, where clamp is max(x, min) then min(., max) and each tie
// splits its gradient evenly between the two sides:
//   x:   g where neither x < min nor x > max; halved where x ties exactly one bound
//   min: g where x < min <= max; g/2 where x == min < max
//   max: g where x > max or min > max (then max is the result); g/2 where x == max > min
// With one bound it is clamp_min / clamp_max: x keeps g unless past the bound, the bound gets g
// unless x is past it, and both get g/2 on a tie (NaN x passes its gradient to both).
Tensor clamp_tensor_autograd(const Tensor& a, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  Tensor out = below_autograd([&] { return ops::clamp_tensor()(a, min, max); });
  Tensor lo = min ? *min : Tensor(), hi = max ? *max : Tensor();
  record("ClampBackward0", {a, lo, hi}, {out}, {saved_input(a), saved_input(lo), saved_input(hi)},
         [sa = a.sizes(), slo = lo.defined() ? lo.sizes() : Shape{}, shi = hi.defined() ? hi.sizes() : Shape{}](
             const variable_list& g, LambdaNode& n) -> variable_list {
           Tensor x = n.unpack(0), lo = n.unpack(1), hi = n.unpack(2);
           const Tensor& gr = g[0];
           if (lo.defined() && hi.defined()) {
             Tensor tie_lo = x.eq(lo), tie_hi = x.eq(hi);
             return {grad_for(n, 0, [&] {
                       Tensor pass = x.lt(lo).logical_or(x.gt(hi)).logical_not();
                       Tensor half = tie_lo.logical_xor(tie_hi);
                       return sum_to(where(pass, where(half, gr * 0.5, gr), 0.0), sa);
                     }),
                     grad_for(n, 1, [&] {
                       Tensor full = x.lt(lo).logical_and(lo.le(hi));
                       Tensor half = tie_lo.logical_and(lo.lt(hi));
                       return sum_to(where(full, gr, where(half, gr * 0.5, 0.0)), slo);
                     }),
                     grad_for(n, 2, [&] {
                       Tensor full = x.gt(hi).logical_or(lo.gt(hi));
                       Tensor half = tie_hi.logical_and(lo.lt(hi));
                       return sum_to(where(full, gr, where(half, gr * 0.5, 0.0)), shi);
                     })};
           }
           const bool has_lo = lo.defined();
           const Tensor& b = has_lo ? lo : hi;
           Tensor split = where(x.eq(b), gr * 0.5, gr);
           Tensor x_past = has_lo ? x.lt(b) : x.gt(b), b_past = has_lo ? x.gt(b) : x.lt(b);
           return {grad_for(n, 0, [&] { return sum_to(where(x_past, 0.0, split), sa); }),
                   grad_for(n, 1, [&] { return sum_to(where(b_past, 0.0, split), slo); }),
                   grad_for(n, 2, [&] { return sum_to(where(b_past, 0.0, split), shi); })};
         });
  return out;
}

// LerpBackward0: lerp(start, end, Scalar) (the weight arrives as a wrapped number);
// LerpBackward1: lerp(start, end, Tensor).
Tensor lerp_autograd(const Tensor& start, const Tensor& end, const Tensor& weight) {
  Tensor out = below_autograd([&] { return ops::lerp()(start, end, weight); });
  if (weight.impl()->is_wrapped_number()) {
    record("LerpBackward0", {start, end}, {out}, {},
           [w = weight.item().to_double(), ss = start.sizes(), se = end.sizes()](const variable_list& g,
                                                                                  LambdaNode& n) -> variable_list {
             return {grad_for(n, 0, [&] { return sum_to(g[0] * (1.0 - w), ss); }),
                     grad_for(n, 1, [&] { return sum_to(g[0] * w, se); })};
           });
    return out;
  }
  bool need_w = weight.requires_grad();
  record("LerpBackward1", {start, end, weight}, {out},
         {save_if(need_w, start), save_if(need_w, end), saved_input(weight)},
         [ss = start.sizes(), se = end.sizes(), sw = weight.sizes()](const variable_list& g,
                                                                      LambdaNode& n) -> variable_list {
           Tensor w = n.unpack(2);
           return {grad_for(n, 0, [&] { return sum_to(g[0] * (1 - w), ss); }),
                   grad_for(n, 1, [&] { return sum_to(g[0] * w, se); }),
                   grad_for(n, 2, [&] { return sum_to(g[0] * (n.unpack(1) - n.unpack(0)), sw); })};
         });
  return out;
}

EMBER_REGISTER_KERNEL(div, Autograd, div_autograd);
EMBER_REGISTER_KERNEL(div_, Autograd, div_inplace_autograd);
EMBER_REGISTER_KERNEL(remainder, Autograd, remainder_autograd);
EMBER_REGISTER_KERNEL(remainder_, Autograd, remainder_inplace_autograd);
EMBER_REGISTER_KERNEL(fmod, Autograd, fmod_autograd);
EMBER_REGISTER_KERNEL(fmod_, Autograd, fmod_inplace_autograd);
EMBER_REGISTER_KERNEL(floor_divide, Autograd, floor_divide_autograd);
EMBER_REGISTER_KERNEL(floor_divide_, Autograd, floor_divide_inplace_autograd);
EMBER_REGISTER_KERNEL(pow, Autograd, pow_autograd);
EMBER_REGISTER_KERNEL(pow_, Autograd, pow_inplace_autograd);
EMBER_REGISTER_KERNEL(maximum, Autograd, maximum_autograd);
EMBER_REGISTER_KERNEL(maximum_, Autograd, maximum_inplace_autograd);
EMBER_REGISTER_KERNEL(minimum, Autograd, minimum_autograd);
EMBER_REGISTER_KERNEL(minimum_, Autograd, minimum_inplace_autograd);
EMBER_REGISTER_KERNEL(atan2, Autograd, atan2_autograd);
EMBER_REGISTER_KERNEL(atan2_, Autograd, atan2_inplace_autograd);
EMBER_REGISTER_KERNEL(where, Autograd, where_autograd);
EMBER_REGISTER_KERNEL(clamp, Autograd, clamp_autograd);
EMBER_REGISTER_KERNEL(clamp_, Autograd, clamp_inplace_autograd);
EMBER_REGISTER_KERNEL(clamp_tensor, Autograd, clamp_tensor_autograd);
EMBER_REGISTER_KERNEL(lerp, Autograd, lerp_autograd);

EMBER_REGISTER_KERNEL(add, Autograd, add_autograd);
EMBER_REGISTER_KERNEL(sub, Autograd, sub_autograd);
EMBER_REGISTER_KERNEL(mul, Autograd, mul_autograd);
EMBER_REGISTER_KERNEL(add_, Autograd, add_inplace_autograd);
EMBER_REGISTER_KERNEL(sub_, Autograd, sub_inplace_autograd);
EMBER_REGISTER_KERNEL(mul_, Autograd, mul_inplace_autograd);

}  // namespace
}  // namespace ember
