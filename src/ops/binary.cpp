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

}  // namespace ember
