// Elementwise math as ember.<op>(input, other) and Tensor.<op>(other), with the in-place
// Tensor.<op>_ forms. `other` may be a tensor or a Python number; numbers take part in type
// promotion as torch's wrapped numbers do (int tensor + 2.5 -> float32).
#include <cmath>
#include <type_traits>

#include "bind_ops.h"

namespace ember::python {
namespace {

using Self = nb::handle_t<Tensor>;


// name(input, other) for a tensor and for a number `other`, as function and method; with
// `inplace`, also Tensor.<inplace_name>(other), the C++ in-place op (returning self itself).
template <class F, class G = std::nullptr_t>
void def_binary(nb::module_& m, TensorClass& cls, const char* name, F f, const char* inplace_name = nullptr,
                G inplace = nullptr) {
  // Ops torch defines for tensors only (maximum, logical_and, ...) are lambdas taking a Tensor.
  constexpr bool scalar_other = std::is_invocable_v<F, const Tensor&, const Scalar&>;
  def_both(m, cls, name, [f](const Tensor& a, const Tensor& b) { return f(a, b); }, nb::arg("other"));
  if constexpr (scalar_other) def_both(m, cls, name, [f](const Tensor& a, const Scalar& b) { return f(a, b); }, nb::arg("other"));
  if constexpr (!std::is_same_v<G, std::nullptr_t>) {
    cls.def(inplace_name, [inplace](Self self, const Tensor& b) {
      inplace(tensor_of(self), b);
      return nb::borrow(self);
    }, nb::arg("other"));
    if constexpr (scalar_other) {
      cls.def(inplace_name, [inplace](Self self, const Scalar& b) {
        Tensor& t = tensor_of(self);
        inplace(t, as_tensor(b));
        return nb::borrow(self);
      }, nb::arg("other"));
    }
  }
}

// clamp's bounds: numbers, tensors, or None each; a tensor bound turns the other into one too
// (Python argument parsing; the clamping is C++'s).
struct ClampBounds {
  bool tensors = false;
  std::optional<Scalar> min_s, max_s;
  std::optional<Tensor> min_t, max_t;
};
ClampBounds clamp_bounds(const Tensor& self, nb::handle lo, nb::handle hi) {
  auto scalar = [](nb::handle h, const char* which) -> std::optional<Scalar> {
    if (h.is_none()) return std::nullopt;
    Scalar s;
    EMBER_CHECK_TYPE(scalar_from_python(h.ptr(), true, s), "clamp(): argument '", which,
                     "' must be a Number or a Tensor, not ", Py_TYPE(h.ptr())->tp_name);
    return s;
  };
  ClampBounds b;
  b.tensors = nb::isinstance<Tensor>(lo) || nb::isinstance<Tensor>(hi);
  if (!b.tensors) {
    b.min_s = scalar(lo, "min");
    b.max_s = scalar(hi, "max");
    return b;
  }
  auto tensor = [&](nb::handle h, const char* which) -> std::optional<Tensor> {
    if (h.is_none()) return std::nullopt;
    if (nb::isinstance<Tensor>(h)) return tensor_of(h);
    return wrapped_scalar(*scalar(h, which));
  };
  b.min_t = tensor(lo, "min");
  b.max_t = tensor(hi, "max");
  return b;
}
Tensor clamp_any(const Tensor& self, nb::handle lo, nb::handle hi) {
  ClampBounds b = clamp_bounds(self, lo, hi);
  return b.tensors ? clamp(self, b.min_t, b.max_t) : clamp(self, b.min_s, b.max_s);
}

// torch.where(condition, input, other) with numbers allowed on either side.
Tensor where_any(const Tensor& cond, nb::handle a, nb::handle b) {
  bool ta = nb::isinstance<Tensor>(a), tb = nb::isinstance<Tensor>(b);
  auto number = [](nb::handle h, const char* which) {
    Scalar s;
    EMBER_CHECK_TYPE(scalar_from_python(h.ptr(), true, s), "where(): argument '", which,
                     "' must be a Tensor or a Number, not ", Py_TYPE(h.ptr())->tp_name);
    return s;
  };
  if (ta && tb) return where(cond, tensor_of(a), tensor_of(b));
  if (ta) return where(cond, tensor_of(a), number(b, "other"));
  if (tb) return where(cond, number(a, "input"), tensor_of(b));
  return where(cond, number(a, "input"), number(b, "other"));
}

}  // namespace

void bind_ops_math(nb::module_& m, TensorClass& cls) {
  // ---- arithmetic with alpha / rounding_mode
  auto add_t = [](const Tensor& a, const Tensor& b, const Scalar& alpha) { return add(a, b, alpha); };
  auto add_s = [](const Tensor& a, const Scalar& b, const Scalar& alpha) { return add(a, b, alpha); };
  auto sub_t = [](const Tensor& a, const Tensor& b, const Scalar& alpha) { return sub(a, b, alpha); };
  auto sub_s = [](const Tensor& a, const Scalar& b, const Scalar& alpha) { return sub(a, b, alpha); };
  for (const char* name : {"add"}) {
    def_both(m, cls, name, add_t, nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1);
    def_both(m, cls, name, add_s, nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1);
  }
  for (const char* name : {"sub", "subtract"}) {
    def_both(m, cls, name, sub_t, nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1);
    def_both(m, cls, name, sub_s, nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1);
  }
  cls.def("add_", [](Self self, const Tensor& b, const Scalar& alpha) {
    tensor_of(self).add_(b, alpha);
    return nb::borrow(self);
  }, nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1);
  cls.def("add_", [](Self self, const Scalar& b, const Scalar& alpha) {
    tensor_of(self).add_(b, alpha);
    return nb::borrow(self);
  }, nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1);
  for (const char* name : {"sub_", "subtract_"}) {
    cls.def(name, [](Self self, const Tensor& b, const Scalar& alpha) {
      tensor_of(self).sub_(b, alpha);
      return nb::borrow(self);
    }, nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1);
    cls.def(name, [](Self self, const Scalar& b, const Scalar& alpha) {
      tensor_of(self).sub_(b, alpha);
      return nb::borrow(self);
    }, nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1);
  }
  m.def("rsub", [](const Tensor& a, const Tensor& b, const Scalar& alpha) { return rsub(a, b, alpha); },
        nb::arg("input"), nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1);
  m.def("rsub", [](const Tensor& a, const Scalar& b, const Scalar& alpha) { return rsub(a, b, alpha); },
        nb::arg("input"), nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1);

  for (const char* name : {"mul", "multiply"}) {
    def_both(m, cls, name, [](const Tensor& a, const Tensor& b) { return mul(a, b); }, nb::arg("other"));
    def_both(m, cls, name, [](const Tensor& a, const Scalar& b) { return mul(a, b); }, nb::arg("other"));
  }
  for (const char* name : {"mul_", "multiply_"}) {
    cls.def(name, [](Self self, const Tensor& b) { tensor_of(self).mul_(b); return nb::borrow(self); }, nb::arg("other"));
    cls.def(name, [](Self self, const Scalar& b) { tensor_of(self).mul_(b); return nb::borrow(self); }, nb::arg("other"));
  }
  using OptStr = std::optional<std::string>;
  for (const char* name : {"div", "divide"}) {
    def_both(m, cls, name, [](const Tensor& a, const Tensor& b, OptStr r) { return div(a, b, r); }, nb::arg("other"),
             nb::kw_only(), nb::arg("rounding_mode") = nb::none());
    def_both(m, cls, name, [](const Tensor& a, const Scalar& b, OptStr r) { return div(a, b, r); }, nb::arg("other"),
             nb::kw_only(), nb::arg("rounding_mode") = nb::none());
  }
  for (const char* name : {"div_", "divide_"}) {
    cls.def(name, [](Self self, const Tensor& b, OptStr r) {
      tensor_of(self).div_(b, r);
      return nb::borrow(self);
    }, nb::arg("other"), nb::kw_only(), nb::arg("rounding_mode") = nb::none());
    cls.def(name, [](Self self, const Scalar& b, OptStr r) {
      tensor_of(self).div_(b, r);
      return nb::borrow(self);
    }, nb::arg("other"), nb::kw_only(), nb::arg("rounding_mode") = nb::none());
  }
  def_binary(m, cls, "true_divide", [](const Tensor& a, const auto& b) { return div(a, b); }, "true_divide_",
             [](Tensor& a, const Tensor& b) { div_(a, b); });
  def_binary(m, cls, "floor_divide", [](const Tensor& a, const auto& b) { return floor_divide(a, b); },
             "floor_divide_", [](Tensor& a, const Tensor& b) { floor_divide_(a, b); });
  def_binary(m, cls, "remainder", [](const Tensor& a, const auto& b) { return remainder(a, b); }, "remainder_",
             [](Tensor& a, const Tensor& b) { remainder_(a, b); });
  def_binary(m, cls, "fmod", [](const Tensor& a, const auto& b) { return fmod(a, b); }, "fmod_",
             [](Tensor& a, const Tensor& b) { fmod_(a, b); });

  // pow(exponent): tensor or number exponent; torch.pow(number, tensor) too.
  def_both(m, cls, "pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); }, nb::arg("exponent"));
  def_both(m, cls, "pow", [](const Tensor& a, const Scalar& b) { return pow(a, b); }, nb::arg("exponent"));
  m.def("pow", [](const Scalar& a, const Tensor& b) { return pow(a, b); }, nb::arg("self"), nb::arg("exponent"));
  cls.def("pow_", [](Self self, const Tensor& b) { tensor_of(self).pow_(b); return nb::borrow(self); },
          nb::arg("exponent"));
  cls.def("pow_", [](Self self, const Scalar& b) { tensor_of(self).pow_(b); return nb::borrow(self); },
          nb::arg("exponent"));
  def_both(m, cls, "float_power", [](const Tensor& a, const Tensor& b) { return float_power(a, b); },
           nb::arg("exponent"));
  def_both(m, cls, "float_power", [](const Tensor& a, const Scalar& b) { return float_power(a, b); },
           nb::arg("exponent"));
  m.def("float_power", [](const Scalar& a, const Tensor& b) { return float_power(a, b); }, nb::arg("self"),
        nb::arg("exponent"));

  // Tensor-only binary ops (torch.maximum(x, 2) is a TypeError in torch too).
  def_binary(m, cls, "maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); });
  def_binary(m, cls, "minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); });
  def_binary(m, cls, "fmax", [](const Tensor& a, const Tensor& b) { return fmax(a, b); });
  def_binary(m, cls, "fmin", [](const Tensor& a, const Tensor& b) { return fmin(a, b); });
  def_binary(m, cls, "atan2", [](const Tensor& a, const Tensor& b) { return atan2(a, b); }, "atan2_",
             [](Tensor& a, const Tensor& b) { atan2_(a, b); });
  def_binary(m, cls, "arctan2", [](const Tensor& a, const Tensor& b) { return atan2(a, b); }, "arctan2_",
             [](Tensor& a, const Tensor& b) { atan2_(a, b); });
  def_binary(m, cls, "hypot", [](const Tensor& a, const Tensor& b) { return hypot(a, b); }, "hypot_",
             [](Tensor& a, const Tensor& b) { hypot_(a, b); });
  def_binary(m, cls, "logical_and", [](const Tensor& a, const Tensor& b) { return logical_and(a, b); },
             "logical_and_", [](Tensor& a, const Tensor& b) { logical_and_(a, b); });
  def_binary(m, cls, "logical_or", [](const Tensor& a, const Tensor& b) { return logical_or(a, b); },
             "logical_or_", [](Tensor& a, const Tensor& b) { logical_or_(a, b); });
  def_binary(m, cls, "logical_xor", [](const Tensor& a, const Tensor& b) { return logical_xor(a, b); },
             "logical_xor_", [](Tensor& a, const Tensor& b) { logical_xor_(a, b); });
  def_binary(m, cls, "bitwise_and", [](const Tensor& a, const auto& b) { return bitwise_and(a, b); }, "bitwise_and_",
             [](Tensor& a, const Tensor& b) { bitwise_and_(a, b); });
  def_binary(m, cls, "bitwise_or", [](const Tensor& a, const auto& b) { return bitwise_or(a, b); }, "bitwise_or_",
             [](Tensor& a, const Tensor& b) { bitwise_or_(a, b); });
  def_binary(m, cls, "bitwise_xor", [](const Tensor& a, const auto& b) { return bitwise_xor(a, b); }, "bitwise_xor_",
             [](Tensor& a, const Tensor& b) { bitwise_xor_(a, b); });
  def_binary(m, cls, "bitwise_left_shift", [](const Tensor& a, const auto& b) { return bitwise_left_shift(a, b); },
             "bitwise_left_shift_", [](Tensor& a, const Tensor& b) { bitwise_left_shift_(a, b); });
  def_binary(m, cls, "bitwise_right_shift", [](const Tensor& a, const auto& b) { return bitwise_right_shift(a, b); },
             "bitwise_right_shift_", [](Tensor& a, const Tensor& b) { bitwise_right_shift_(a, b); });

  // ---- comparisons (bool results) and their aliases
  def_binary(m, cls, "eq", [](const Tensor& a, const auto& b) { return eq(a, b); });
  def_binary(m, cls, "ne", [](const Tensor& a, const auto& b) { return ne(a, b); });
  def_binary(m, cls, "not_equal", [](const Tensor& a, const auto& b) { return ne(a, b); });
  def_binary(m, cls, "lt", [](const Tensor& a, const auto& b) { return lt(a, b); });
  def_binary(m, cls, "less", [](const Tensor& a, const auto& b) { return lt(a, b); });
  def_binary(m, cls, "le", [](const Tensor& a, const auto& b) { return le(a, b); });
  def_binary(m, cls, "less_equal", [](const Tensor& a, const auto& b) { return le(a, b); });
  def_binary(m, cls, "gt", [](const Tensor& a, const auto& b) { return gt(a, b); });
  def_binary(m, cls, "greater", [](const Tensor& a, const auto& b) { return gt(a, b); });
  def_binary(m, cls, "ge", [](const Tensor& a, const auto& b) { return ge(a, b); });
  def_binary(m, cls, "greater_equal", [](const Tensor& a, const auto& b) { return ge(a, b); });
  def_both(m, cls, "equal", [](const Tensor& a, const Tensor& b) { return equal(a, b); }, nb::arg("other"));
  def_both(m, cls, "allclose", [](const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
    return allclose(a, b, rtol, atol, equal_nan);
  }, nb::arg("other"), nb::arg("rtol") = 1e-5, nb::arg("atol") = 1e-8, nb::arg("equal_nan") = false);
  def_both(m, cls, "isclose", [](const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
    return isclose(a, b, rtol, atol, equal_nan);
  }, nb::arg("other"), nb::arg("rtol") = 1e-5, nb::arg("atol") = 1e-8, nb::arg("equal_nan") = false);

  // ---- clamp / lerp / where / nan_to_num
  for (const char* name : {"clamp", "clip"}) {
    def_both(m, cls, name, &clamp_any, nb::arg("min") = nb::none(), nb::arg("max") = nb::none());
  }
  for (const char* name : {"clamp_", "clip_"}) {
    cls.def(name, [](Self self, nb::handle lo, nb::handle hi) {
      ClampBounds b = clamp_bounds(tensor_of(self), lo, hi);
      if (b.tensors) tensor_of(self).clamp_(b.min_t, b.max_t);
      else tensor_of(self).clamp_(b.min_s, b.max_s);
      return nb::borrow(self);
    }, nb::arg("min") = nb::none(), nb::arg("max") = nb::none());
  }
  def_both(m, cls, "clamp_min", [](const Tensor& a, nb::handle lo) { return clamp_any(a, lo, nb::none()); },
           nb::arg("min"));
  def_both(m, cls, "clamp_max", [](const Tensor& a, nb::handle hi) { return clamp_any(a, nb::none(), hi); },
           nb::arg("max"));
  cls.def("clamp_min_", [](Self self, nb::handle lo) {
    ClampBounds b = clamp_bounds(tensor_of(self), lo, nb::none());
    if (b.tensors) tensor_of(self).clamp_(b.min_t, std::nullopt);
    else tensor_of(self).clamp_(b.min_s, std::nullopt);
    return nb::borrow(self);
  }, nb::arg("min"));
  cls.def("clamp_max_", [](Self self, nb::handle hi) {
    ClampBounds b = clamp_bounds(tensor_of(self), nb::none(), hi);
    if (b.tensors) tensor_of(self).clamp_(std::nullopt, b.max_t);
    else tensor_of(self).clamp_(std::nullopt, b.max_s);
    return nb::borrow(self);
  }, nb::arg("max"));
  def_both(m, cls, "lerp", [](const Tensor& a, const Tensor& end, const Scalar& w) { return lerp(a, end, w); },
           nb::arg("end"), nb::arg("weight"));
  def_both(m, cls, "lerp", [](const Tensor& a, const Tensor& end, const Tensor& w) { return lerp(a, end, w); },
           nb::arg("end"), nb::arg("weight"));
  cls.def("lerp_", [](Self self, const Tensor& end, const Scalar& w) {
    tensor_of(self).lerp_(end, w);
    return nb::borrow(self);
  }, nb::arg("end"), nb::arg("weight"));
  cls.def("lerp_", [](Self self, const Tensor& end, const Tensor& w) {
    tensor_of(self).lerp_(end, w);
    return nb::borrow(self);
  }, nb::arg("end"), nb::arg("weight"));
  m.def("where", &where_any, nb::arg("condition"), nb::arg("input"), nb::arg("other"));
  m.def("where", [](const Tensor& cond) { return tensor_tuple(nonzero_numpy(cond)); }, nb::arg("condition"));
  cls.def("where", [](const Tensor& self, const Tensor& cond, nb::handle other) {
    return where_any(cond, nb::cast(self), other);
  }, nb::arg("condition"), nb::arg("other"));
  using OptD = std::optional<double>;
  def_both(m, cls, "nan_to_num", [](const Tensor& a, OptD nan, OptD pinf, OptD ninf) {
    return nan_to_num(a, nan, pinf, ninf);
  }, nb::arg("nan") = 0.0, nb::arg("posinf") = nb::none(), nb::arg("neginf") = nb::none());
  cls.def("nan_to_num_", [](Self self, OptD nan, OptD pinf, OptD ninf) {
    tensor_of(self).nan_to_num_(nan, pinf, ninf);
    return nb::borrow(self);
  }, nb::arg("nan") = 0.0, nb::arg("posinf") = nb::none(), nb::arg("neginf") = nb::none());
  def_both(m, cls, "addcmul", [](const Tensor& a, const Tensor& t1, const Tensor& t2, const Scalar& v) {
    return addcmul(a, t1, t2, v);
  }, nb::arg("tensor1"), nb::arg("tensor2"), nb::kw_only(), nb::arg("value") = 1);
  def_both(m, cls, "addcdiv", [](const Tensor& a, const Tensor& t1, const Tensor& t2, const Scalar& v) {
    return addcdiv(a, t1, t2, v);
  }, nb::arg("tensor1"), nb::arg("tensor2"), nb::kw_only(), nb::arg("value") = 1);
  cls.def("addcmul_", [](Self self, const Tensor& t1, const Tensor& t2, const Scalar& v) {
    tensor_of(self).addcmul_(t1, t2, v);
    return nb::borrow(self);
  }, nb::arg("tensor1"), nb::arg("tensor2"), nb::kw_only(), nb::arg("value") = 1);
  cls.def("addcdiv_", [](Self self, const Tensor& t1, const Tensor& t2, const Scalar& v) {
    tensor_of(self).addcdiv_(t1, t2, v);
    return nb::borrow(self);
  }, nb::arg("tensor1"), nb::arg("tensor2"), nb::kw_only(), nb::arg("value") = 1);

  // ---- unary ops: ember.exp(x), x.exp(), x.exp_() and ember.exp_(x)
#define EMBER_UNARY(name, fn)                                                        \
  def_both(m, cls, name, [](const Tensor& a) { return fn(a); });                     \
  cls.def(name "_", [](Self self) { fn##_(tensor_of(self)); return nb::borrow(self); }); \
  m.def(name "_", [](Self self) { fn##_(tensor_of(self)); return nb::borrow(self); }, nb::arg("input"));
  EMBER_UNARY("neg", neg) EMBER_UNARY("negative", neg) EMBER_UNARY("abs", abs) EMBER_UNARY("absolute", abs)
  EMBER_UNARY("sign", sign) EMBER_UNARY("reciprocal", reciprocal)
  EMBER_UNARY("exp", exp) EMBER_UNARY("exp2", exp2) EMBER_UNARY("log", log) EMBER_UNARY("log1p", log1p)
  EMBER_UNARY("expm1", expm1) EMBER_UNARY("log2", log2) EMBER_UNARY("log10", log10) EMBER_UNARY("sqrt", sqrt)
  EMBER_UNARY("rsqrt", rsqrt) EMBER_UNARY("square", square) EMBER_UNARY("sin", sin) EMBER_UNARY("cos", cos)
  EMBER_UNARY("tan", tan) EMBER_UNARY("asin", asin) EMBER_UNARY("arcsin", asin) EMBER_UNARY("acos", acos)
  EMBER_UNARY("arccos", acos) EMBER_UNARY("atan", atan) EMBER_UNARY("arctan", atan) EMBER_UNARY("sinh", sinh)
  EMBER_UNARY("cosh", cosh) EMBER_UNARY("tanh", tanh) EMBER_UNARY("sigmoid", sigmoid) EMBER_UNARY("relu", relu)
  EMBER_UNARY("silu", silu) EMBER_UNARY("erf", erf) EMBER_UNARY("floor", floor) EMBER_UNARY("ceil", ceil)
  EMBER_UNARY("trunc", trunc) EMBER_UNARY("fix", trunc) EMBER_UNARY("frac", frac)
#undef EMBER_UNARY
  def_both(m, cls, "round", [](const Tensor& a, int64_t d) { return round(a, d); }, nb::kw_only(),
           nb::arg("decimals") = 0);
  auto round_inplace = [](Self self, int64_t d) {
    round_(tensor_of(self), d);
    return nb::borrow(self);
  };
  cls.def("round_", round_inplace, nb::kw_only(), nb::arg("decimals") = 0);
  m.def("round_", round_inplace, nb::arg("input"), nb::kw_only(), nb::arg("decimals") = 0);
  // torch returns self itself (the same Python object) from positive.
  def_both(m, cls, "positive", [](Self self) {
    positive(tensor_of(self));
    return nb::borrow(self);
  });
  def_both(m, cls, "logical_not", [](const Tensor& a) { return logical_not(a); });
  cls.def("logical_not_", [](Self self) {
    tensor_of(self).logical_not_();
    return nb::borrow(self);
  });
  def_both(m, cls, "bitwise_not", [](const Tensor& a) { return bitwise_not(a); });
  cls.def("bitwise_not_", [](Self self) {
    tensor_of(self).bitwise_not_();
    return nb::borrow(self);
  });
  def_both(m, cls, "isnan", [](const Tensor& a) { return isnan(a); });
  def_both(m, cls, "isinf", [](const Tensor& a) { return isinf(a); });
  def_both(m, cls, "isfinite", [](const Tensor& a) { return isfinite(a); });
  def_both(m, cls, "isposinf", [](const Tensor& a) { return isposinf(a); });
  def_both(m, cls, "isneginf", [](const Tensor& a) { return isneginf(a); });
  def_both(m, cls, "isreal", [](const Tensor& a) { return isreal(a); });
  def_both(m, cls, "signbit", [](const Tensor& a) { return signbit(a); });
  m.def("gelu", [](const Tensor& a, const std::string& approximate) { return gelu(a, approximate); },
        nb::arg("input"), nb::kw_only(), nb::arg("approximate") = "none");
  m.def("leaky_relu", [](const Tensor& a, const Scalar& slope) { return leaky_relu(a, slope); }, nb::arg("input"),
        nb::arg("negative_slope") = 0.01);

  // ---- fills and copies in place
  cls.def("fill_", [](Self self, const Scalar& v) { tensor_of(self).fill_(v); return nb::borrow(self); },
          nb::arg("value"));
  cls.def("fill_", [](Self self, const Tensor& v) { tensor_of(self).fill_(v); return nb::borrow(self); },
          nb::arg("value"));
  m.def("fill_", [](Self self, const Scalar& v) { tensor_of(self).fill_(v); return nb::borrow(self); },
        nb::arg("input"), nb::arg("value"));
  cls.def("zero_", [](Self self) { tensor_of(self).zero_(); return nb::borrow(self); });
  m.def("zero_", [](Self self) { tensor_of(self).zero_(); return nb::borrow(self); }, nb::arg("input"));
  cls.def("copy_", [](Self self, const Tensor& src, bool non_blocking) {
    tensor_of(self).copy_(src, non_blocking);
    return nb::borrow(self);
  }, nb::arg("src"), nb::arg("non_blocking") = false);
}

}  // namespace ember::python
