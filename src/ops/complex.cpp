// Complex numbers: the two views between a complex tensor and its (real, imag) pairs, conj, and
// the functions torch defines on top of them (real, imag, abs, angle, complex, polar, sgn).
//
// view_as_real and view_as_complex are the primitives: everything that splits or builds a
// complex tensor goes through them, so their gradients (each other) are the only complex
// gradient formulas needed here. abs(z) = hypot(real, imag) and friends then get torch's
// complex gradients (grad * z / |z|, ...) from the real ops' formulas by the chain rule.
#include <cmath>

#include "amp/autocast.h"
#include "ember/ops.h"
#include "ops/op_handles.h"
#include "ops/shape_utils.h"

namespace ember {
namespace {

Tensor view_as_real_impl(const Tensor& self) {
  EMBER_CHECK(is_complex(self.dtype()), "view_as_real is only supported for complex tensors, got ",
              dtype_name(self.dtype()));
  Shape sizes = self.sizes(), strides = self.strides();
  for (auto& s : strides) s *= 2;
  sizes.push_back(2);
  strides.push_back(1);
  return make_view(self, complex_to_real(self.dtype()), std::move(sizes), std::move(strides),
                      self.storage_offset() * 2);
}

Tensor view_as_complex_impl(const Tensor& self) {
  DType t = self.dtype();
  EMBER_CHECK(t == DType::Float32 || t == DType::Float64,
              "view_as_complex is only supported for float and double tensors, but got a tensor of scalar type: ",
              scalar_type_name(t));
  EMBER_CHECK(self.dim() > 0, "Input tensor must have one or more dimensions");
  EMBER_CHECK(self.sizes().back() == 2, "Tensor must have a last dimension of size 2");
  EMBER_CHECK(self.strides().back() == 1, "Tensor must have a last dimension with stride 1");
  Shape sizes(self.sizes().begin(), self.sizes().end() - 1), strides(self.strides().begin(), self.strides().end() - 1);
  for (auto& s : strides) {
    EMBER_CHECK(s % 2 == 0, "Tensor must have a stride divisible by 2 for all but last dimension");
    s /= 2;
  }
  EMBER_CHECK(self.storage_offset() % 2 == 0, "Tensor must have a storage_offset divisible by 2");
  return make_view(self, real_to_complex(t), std::move(sizes), std::move(strides), self.storage_offset() / 2);
}

EMBER_REGISTER_KERNEL(view_as_real, CompositeBackend, view_as_real_impl);
EMBER_REGISTER_KERNEL(view_as_complex, CompositeBackend, view_as_complex_impl);

// A real tensor where a complex one is needed: (x, 0).
Tensor as_complex(const Tensor& x) {
  return is_complex(x.dtype()) ? x : x.to(real_to_complex(is_floating(x.dtype()) ? x.dtype() : default_dtype()));
}

}  // namespace

Tensor view_as_real(const Tensor& self) { return ops::view_as_real()(self); }
Tensor view_as_complex(const Tensor& self) { return ops::view_as_complex()(self); }

Tensor real(const Tensor& self) {
  return is_complex(self.dtype()) ? view_as_real(self).select(-1, 0) : self;
}
Tensor imag(const Tensor& self) {
  EMBER_CHECK(is_complex(self.dtype()), "imag is not implemented for tensors with non-complex dtypes.");
  return view_as_real(self).select(-1, 1);
}

Tensor conj_physical(const Tensor& self) {
  return is_complex(self.dtype()) ? ops::conj_physical()(self) : self.clone();
}
// torch's conj is lazy (a conjugate bit on a view); ember conjugates eagerly, and a real
// tensor is its own conjugate (returned as is, as torch does).
Tensor conj(const Tensor& self) { return is_complex(self.dtype()) ? ops::conj_physical()(self) : self; }

Tensor complex(const Tensor& real_part, const Tensor& imag_part) {
  DType a = real_part.dtype(), b = imag_part.dtype();
  EMBER_CHECK(a == b, "Expected object of scalar type ", scalar_type_name(a), " but got scalar type ",
              scalar_type_name(b), " for second argument");
  EMBER_CHECK(a == DType::Float32 || a == DType::Float64 || a == DType::Float16,
              "Expected both inputs to be Half, Float or Double tensors but got ", scalar_type_name(a), " and ",
              scalar_type_name(b));
  Shape shape = broadcast_shapes(real_part.sizes(), imag_part.sizes());
  DType parts = a == DType::Float16 ? DType::Float32 : a;  // no complex32: half parts widen
  Tensor pairs = stack({real_part.to(parts).expand(shape), imag_part.to(parts).expand(shape)}, -1);
  return view_as_complex(pairs);
}

Tensor polar(const Tensor& abs_value, const Tensor& angle_value) {
  EMBER_AUTOCAST(polar, abs_value, angle_value);
  EMBER_CHECK(abs_value.dtype() == angle_value.dtype(), "Expected object of scalar type ",
              scalar_type_name(abs_value.dtype()), " but got scalar type ", scalar_type_name(angle_value.dtype()),
              " for second argument");
  return complex(abs_value * angle_value.cos(), abs_value * angle_value.sin());
}

Tensor complex_abs(const Tensor& z) { return hypot(real(z), imag(z)); }

Tensor angle(const Tensor& self) {
  if (is_complex(self.dtype())) return atan2(imag(self), real(self));
  // Real input: 0 for x >= 0, pi for x < 0, NaN stays NaN (torch.angle).
  Tensor x = is_floating(self.dtype()) ? self : self.to(default_dtype());
  Tensor a = where(x.lt(0), Scalar(M_PI), Scalar(0.0)).to(x.dtype());
  return where(x.isnan(), x, a);
}

// z / |z| (0 at 0); for real tensors, sign.
Tensor sgn(const Tensor& self) {
  if (!is_complex(self.dtype())) return self.sign();
  Tensor r = complex_abs(self);
  return self / where(r.eq(0), Scalar(1.0), r);  // z = 0 divides by 1 and stays 0
}

}  // namespace ember

// ---------------------------------------------------------------- gradients
#include "autograd/record.h"

namespace ember {
namespace {
using namespace autograd;

Tensor view_as_real_ag(const Tensor& self) {
  Tensor out = below_autograd([&] { return ops::view_as_real()(self); });
  record("ViewAsRealBackward0", {self}, {out}, {}, [](const variable_list& g, LambdaNode&) -> variable_list {
    return {view_as_complex(g[0].contiguous())};
  });
  return out;
}
Tensor view_as_complex_ag(const Tensor& self) {
  Tensor out = below_autograd([&] { return ops::view_as_complex()(self); });
  record("ViewAsComplexBackward0", {self}, {out}, {}, [](const variable_list& g, LambdaNode&) -> variable_list {
    return {view_as_real(as_complex(g[0]))};
  });
  return out;
}
Tensor conj_physical_ag(const Tensor& self) {
  Tensor out = below_autograd([&] { return ops::conj_physical()(self); });
  record("ConjPhysicalBackward0", {self}, {out}, {}, [](const variable_list& g, LambdaNode&) -> variable_list {
    return {conj(g[0])};
  });
  return out;
}

EMBER_REGISTER_KERNEL(view_as_real, Autograd, view_as_real_ag);
EMBER_REGISTER_KERNEL(view_as_complex, Autograd, view_as_complex_ag);
EMBER_REGISTER_KERNEL(conj_physical, Autograd, conj_physical_ag);

}  // namespace
}  // namespace ember
