// ember's special functions and scans (include/ember/special.h) as torch's module functions and
// Tensor methods: lgamma, digamma, polygamma, erfinv, erfc, i0, sinc, xlogy, logaddexp(2),
// heaviside, logit, deg2rad, rad2deg, cummax, cummin, logcumsumexp; the torch.special-only names
// (i1, i0e, i1e, xlog1py, entr) as _C._special_<name> for python/ember/special.py.
#include "bind_ops.h"
#include "ember/build_info.h"

namespace ember::python {
namespace {

using Self = nb::handle_t<Tensor>;

// A Python number as a 0-dim wrapped-number tensor (on the host, as torch's; type promotion as torch's).
Tensor operand(nb::handle h) {
  if (nb::isinstance<Tensor>(h)) return tensor_of(h);
  Scalar s;
  EMBER_CHECK_TYPE(scalar_from_python(h.ptr(), true, s), "expected a Tensor or a number, got ", Py_TYPE(h.ptr())->tp_name);
  return wrapped_scalar(s);
}

// f(a, b) where either may be a Python number (torch.xlogy(2, t) is valid), at least one a tensor.
template <class F> void def_binary_any(nb::module_& m, TensorClass& cls, const char* name, F f, const char* inplace = nullptr) {
  m.def(name, [f, name](nb::handle a, nb::handle b) {
    EMBER_CHECK_TYPE(nb::isinstance<Tensor>(a) || nb::isinstance<Tensor>(b), name, "(): expected at least one Tensor argument");
    return f(operand(a), operand(b));
  }, nb::arg("input"), nb::arg("other"));
  cls.def(name, [f](const Tensor& a, nb::handle b) { return f(a, operand(b)); }, nb::arg("other"));
  if (inplace) {
    cls.def(inplace, [f](Self self, nb::handle b) {
      Tensor& t = tensor_of(self);
      Tensor r = f(t, operand(b));
      EMBER_CHECK(can_cast(r.dtype(), t.dtype()), "result type ", scalar_type_name(r.dtype()), " can't be cast to the desired output type ", scalar_type_name(t.dtype()));
      t.copy_(r);
      return nb::borrow(self);
    }, nb::arg("other"));
  }
}

}  // namespace

void bind_special(nb::module_& m, nb::class_<Tensor>& cls) {
#define EMBER_SPECIAL_UNARY(name, fn)                                                 \
  def_both(m, cls, name, [](const Tensor& a) { return fn(a); });                     \
  cls.def(name "_", [](Self self) { fn##_(tensor_of(self)); return nb::borrow(self); }); \
  m.def(name "_", [](Self self) { fn##_(tensor_of(self)); return nb::borrow(self); }, nb::arg("input"));
  EMBER_SPECIAL_UNARY("lgamma", lgamma) EMBER_SPECIAL_UNARY("digamma", digamma) EMBER_SPECIAL_UNARY("erfinv", erfinv)
  EMBER_SPECIAL_UNARY("erfc", erfc) EMBER_SPECIAL_UNARY("i0", i0) EMBER_SPECIAL_UNARY("sinc", sinc)
#undef EMBER_SPECIAL_UNARY
  m.def("polygamma", [](int64_t n, const Tensor& a) { return polygamma(n, a); }, nb::arg("n"), nb::arg("input"));
  cls.def("polygamma", [](const Tensor& a, int64_t n) { return polygamma(n, a); }, nb::arg("n"));
  cls.def("polygamma_", [](Self self, int64_t n) {
    Tensor& t = tensor_of(self);
    t.copy_(polygamma(n, t));
    return nb::borrow(self);
  }, nb::arg("n"));
  def_both(m, cls, "logit", [](const Tensor& a, std::optional<double> eps) { return logit(a, eps); },
           nb::arg("eps") = nb::none());
  cls.def("logit_", [](Self self, std::optional<double> eps) {
    Tensor& t = tensor_of(self);
    t.copy_(logit(t, eps));
    return nb::borrow(self);
  }, nb::arg("eps") = nb::none());
  for (auto [name, fn] : {std::pair{"deg2rad", &deg2rad}, std::pair{"rad2deg", &rad2deg}}) {
    def_both(m, cls, name, fn);
    cls.def((std::string(name) + "_").c_str(), [fn](Self self) {
      Tensor& t = tensor_of(self);
      EMBER_CHECK(is_floating(t.dtype()), "result type Float can't be cast to the desired output type ", scalar_type_name(t.dtype()));
      t.copy_(fn(t));
      return nb::borrow(self);
    });
  }

  def_binary_any(m, cls, "xlogy", [](const Tensor& a, const Tensor& b) { return xlogy(a, b); }, "xlogy_");
  def_binary_any(m, cls, "igamma", [](const Tensor& a, const Tensor& b) { return igamma(a, b); }, "igamma_");
  def_binary_any(m, cls, "igammac", [](const Tensor& a, const Tensor& b) { return igammac(a, b); }, "igammac_");
  def_binary_any(m, cls, "logaddexp", [](const Tensor& a, const Tensor& b) { return logaddexp(a, b); });
  def_binary_any(m, cls, "logaddexp2", [](const Tensor& a, const Tensor& b) { return logaddexp2(a, b); });
  def_both(m, cls, "heaviside", [](const Tensor& a, const Tensor& v) { return heaviside(a, v); }, nb::arg("values"));
  cls.def("heaviside_", [](Self self, const Tensor& v) {
    Tensor& t = tensor_of(self);
    t.copy_(heaviside(t, v));
    return nb::borrow(self);
  }, nb::arg("values"));

  def_both(m, cls, "cummax", [](const Tensor& a, int64_t dim) {
    auto [v, i] = cummax(a, dim);
    return return_pair("cummax", v, i);
  }, nb::arg("dim"));
  def_both(m, cls, "cummin", [](const Tensor& a, int64_t dim) {
    auto [v, i] = cummin(a, dim);
    return return_pair("cummin", v, i);
  }, nb::arg("dim"));
  def_both(m, cls, "logcumsumexp", [](const Tensor& a, int64_t dim) { return logcumsumexp(a, dim); }, nb::arg("dim"));

  // searchsorted's C++ op; ember.searchsorted / bucketize (python/ember/_composite_ops.py) parse
  // torch's arguments (side=, sorter=, a number as the value) and call it.
  m.def("_searchsorted", [](const Tensor& seq, const Tensor& values, bool out_int32, bool right) {
    return searchsorted(seq, values, out_int32, right);
  }, nb::arg("sorted_sequence"), nb::arg("values"), nb::arg("out_int32") = false, nb::arg("right") = false);
  m.def("_standard_gamma_grad", [](const Tensor& alpha, const Tensor& x) { return _standard_gamma_grad(alpha, x); },
        nb::arg("alpha"), nb::arg("x"));
  m.def("_has_onednn", &has_onednn);
  m.def("_onednn_version", &onednn_version);

  // torch.special-only names (python/ember/special.py gives them their public names).
  m.def("_special_i1", [](const Tensor& a) { return i1(a); }, nb::arg("input"));
  m.def("_special_i0e", [](const Tensor& a) { return i0e(a); }, nb::arg("input"));
  m.def("_special_i1e", [](const Tensor& a) { return i1e(a); }, nb::arg("input"));
  m.def("_special_entr", [](const Tensor& a) { return entr(a); }, nb::arg("input"));
  def_binary_any(m, cls, "_special_xlog1py", [](const Tensor& a, const Tensor& b) { return xlog1py(a, b); });
}

}  // namespace ember::python
