// Python operators on Tensor, bound straight to the C++ ops (they are the hottest calls from
// Python: no wrapper layer). A number on either side is a wrapped number for type promotion.
// Operands of any other type give NotImplemented (nb::is_operator), so `x == None` is False
// and Python's own TypeError is raised for `x + "a"`. In-place operators return self, the same
// Python object, as torch's do.
#include "bind_ops.h"

namespace ember::python {
namespace {

using Self = nb::handle_t<Tensor>;


}  // namespace

void bind_ops_operators(TensorClass& cls) {
  const auto op = nb::is_operator();
  // a <op> b for tensor and number b; F is the C++ call, written once for both types.
#define EMBER_BINOP(pyname, expr)                                                           \
  cls.def(pyname, [](const Tensor& a, const Tensor& b) { return expr; }, op);              \
  cls.def(pyname, [](const Tensor& a, const Scalar& b) { return expr; }, op);
  EMBER_BINOP("__add__", add(a, b))
  EMBER_BINOP("__sub__", sub(a, b))
  EMBER_BINOP("__mul__", mul(a, b))
  EMBER_BINOP("__truediv__", div(a, b))
  EMBER_BINOP("__floordiv__", floor_divide(a, b))
  EMBER_BINOP("__mod__", remainder(a, b))
  EMBER_BINOP("__pow__", pow(a, b))
  EMBER_BINOP("__eq__", eq(a, b))
  EMBER_BINOP("__ne__", ne(a, b))
  EMBER_BINOP("__lt__", lt(a, b))
  EMBER_BINOP("__le__", le(a, b))
  EMBER_BINOP("__gt__", gt(a, b))
  EMBER_BINOP("__ge__", ge(a, b))
  EMBER_BINOP("__and__", bitwise_and(a, b))
  EMBER_BINOP("__or__", bitwise_or(a, b))
  EMBER_BINOP("__xor__", bitwise_xor(a, b))
#undef EMBER_BINOP
  cls.def("__lshift__", [](const Tensor& a, const Tensor& b) { return bitwise_left_shift(a, b); }, op);
  cls.def("__lshift__", [](const Tensor& a, const Scalar& b) { return bitwise_left_shift(a, b); }, op);
  cls.def("__rshift__", [](const Tensor& a, const Tensor& b) { return bitwise_right_shift(a, b); }, op);
  cls.def("__rshift__", [](const Tensor& a, const Scalar& b) { return bitwise_right_shift(a, b); }, op);
  cls.def("__matmul__", [](const Tensor& a, const Tensor& b) { return matmul(a, b); }, op,
          nb::call_guard<nb::gil_scoped_release>());

  // ---- reflected: number <op> tensor
  cls.def("__radd__", [](const Tensor& a, const Scalar& b) { return add(a, b); }, op);
  cls.def("__rsub__", [](const Tensor& a, const Scalar& b) { return rsub(a, b); }, op);
  cls.def("__rmul__", [](const Tensor& a, const Scalar& b) { return mul(a, b); }, op);
  cls.def("__rtruediv__", [](const Tensor& a, const Scalar& b) { return div(b, a); }, op);
  cls.def("__rfloordiv__", [](const Tensor& a, const Scalar& b) { return floor_divide(wrapped_scalar(b), a); }, op);
  cls.def("__rmod__", [](const Tensor& a, const Scalar& b) { return remainder(wrapped_scalar(b), a); }, op);
  cls.def("__rpow__", [](const Tensor& a, const Scalar& b) { return pow(b, a); }, op);
  cls.def("__rand__", [](const Tensor& a, const Scalar& b) { return bitwise_and(a, b); }, op);
  cls.def("__ror__", [](const Tensor& a, const Scalar& b) { return bitwise_or(a, b); }, op);
  cls.def("__rxor__", [](const Tensor& a, const Scalar& b) { return bitwise_xor(a, b); }, op);
  cls.def("__rlshift__", [](const Tensor& a, const Scalar& b) { return bitwise_left_shift(b, a); }, op);
  cls.def("__rrshift__", [](const Tensor& a, const Scalar& b) { return bitwise_right_shift(b, a); }, op);
  cls.def("__rmatmul__", [](const Tensor& a, const Tensor& b) { return matmul(b, a); }, op,
          nb::call_guard<nb::gil_scoped_release>());

  // ---- in place: mutate, then hand back self itself
#define EMBER_IOP(pyname, stmt)                                                                         \
  cls.def(pyname, [](Self self, const Tensor& b) { Tensor& a = tensor_of(self); stmt; return nb::borrow(self); }, op); \
  cls.def(pyname, [](Self self, const Scalar& b) { Tensor& a = tensor_of(self); stmt; return nb::borrow(self); }, op);
  EMBER_IOP("__iadd__", a.add_(b))
  EMBER_IOP("__isub__", a.sub_(b))
  EMBER_IOP("__imul__", a.mul_(b))
  EMBER_IOP("__itruediv__", a.div_(b))
  EMBER_IOP("__ipow__", a.pow_(b))
  EMBER_IOP("__ifloordiv__", floor_divide_(a, as_tensor(b)))
  EMBER_IOP("__imod__", remainder_(a, as_tensor(b)))
  EMBER_IOP("__iand__", bitwise_and_(a, as_tensor(b)))
  EMBER_IOP("__ior__", bitwise_or_(a, as_tensor(b)))
  EMBER_IOP("__ixor__", bitwise_xor_(a, as_tensor(b)))
  EMBER_IOP("__ilshift__", bitwise_left_shift_(a, as_tensor(b)))
  EMBER_IOP("__irshift__", bitwise_right_shift_(a, as_tensor(b)))
#undef EMBER_IOP

  // ---- unary
  cls.def("__neg__", [](const Tensor& a) { return neg(a); });
  cls.def("__abs__", [](const Tensor& a) { return abs(a); });
  cls.def("__invert__", [](const Tensor& a) { return bitwise_not(a); });
  cls.def("__pos__", [](Self self) {
    positive(tensor_of(self));
    return nb::borrow(self);
  });
}

}  // namespace ember::python
