// Comparisons and logical ops: eq/ne/lt/le/gt/ge compare in the promoted dtype and give bool;
// equal, isclose and allclose are built from them.
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember {

namespace {

// True when every element of a bool tensor is true.
bool all_true(const Tensor& mask) {
  Tensor c = mask.cpu().contiguous();
  const bool* p = c.data_ptr<bool>();
  for (int64_t i = 0, n = c.numel(); i < n; ++i)
    if (!p[i]) return false;
  return true;
}
}  // namespace

#define EMBER_COMPARE_PUBLIC(n)                                                      \
  Tensor n(const Tensor& a, const Tensor& b) { return ops::n()(a, b); }             \
  Tensor n(const Tensor& a, const Scalar& b) { return ops::n()(a, wrapped_scalar(b)); }
EMBER_COMPARE_PUBLIC(eq) EMBER_COMPARE_PUBLIC(ne) EMBER_COMPARE_PUBLIC(lt)
EMBER_COMPARE_PUBLIC(le) EMBER_COMPARE_PUBLIC(gt) EMBER_COMPARE_PUBLIC(ge)
#undef EMBER_COMPARE_PUBLIC

Tensor logical_and(const Tensor& a, const Tensor& b) { return ops::logical_and()(a, b); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return ops::logical_or()(a, b); }
Tensor logical_xor(const Tensor& a, const Tensor& b) { return ops::logical_xor()(a, b); }
Tensor logical_not(const Tensor& a) { return ops::logical_not()(a); }

// torch.equal: same shape and the same values (NaN is not equal to NaN).
bool equal(const Tensor& a, const Tensor& b) {
  EMBER_CHECK(a.device() == b.device(), "Expected all tensors to be on the same device, but found at least two devices, ",
              a.device().str(), " and ", b.device().str(), "!");
  if (!(IntArrayRef(a.sizes()) == IntArrayRef(b.sizes()))) return false;
  if (a.numel() == 0) return true;
  return all_true(eq(a, b));
}

// |a - b| <= atol + rtol * |b|, elementwise; equal values (infinities included) are close.
Tensor isclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  EMBER_CHECK(a.dtype() == b.dtype(), dtype_name(a.dtype()), " did not match ", dtype_name(b.dtype()));
  EMBER_CHECK(rtol >= 0, "rtol must be greater than or equal to zero, but got ", rtol);
  EMBER_CHECK(atol >= 0, "atol must be greater than or equal to zero, but got ", atol);
  Tensor close = eq(a, b);
  if (equal_nan && a.is_floating_point()) close = logical_or(close, logical_and(isnan(a), isnan(b)));
  if (rtol == 0 && atol == 0) return close;
  // Bools compute the error in the default float dtype; other dtypes in their own.
  Tensor ca = a.dtype() == DType::Bool ? a.to(default_dtype()) : a;
  Tensor cb = b.dtype() == DType::Bool ? b.to(default_dtype()) : b;
  Tensor allowed = add(abs(mul(cb, rtol)), atol);
  Tensor actual = abs(sub(ca, cb));
  return logical_or(close, logical_and(isfinite(actual), le(actual, allowed)));
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  Tensor c = isclose(a, b, rtol, atol, equal_nan);
  return c.numel() == 0 || all_true(c);
}

}  // namespace ember

// ---------------------------------------------------------------- gradients
// None: comparisons and logical ops give bool tensors, which never require grad. They register
// no Autograd kernel, so a call with an input that requires grad falls through to the backend.
