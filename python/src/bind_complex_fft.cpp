// Complex numbers (ember.view_as_real, Tensor.real, conj, ...) and ember.fft's transforms
// (ember._C._fft; python/ember/fft wraps them with torch's signatures). Glue only: the
// formulas and checks are in src/ops/complex.cpp and src/ops/fft.cpp.
#include "bind_ops.h"
#include "ember/fft.h"

namespace ember::python {
namespace {

using fft::Norm;
using fft::OptSizes;

void bind_complex(nb::module_& m, TensorClass& cls) {
  m.def("view_as_real", &ember::view_as_real, nb::arg("input"));
  m.def("view_as_complex", &ember::view_as_complex, nb::arg("input"));
  def_both(m, cls, "conj", [](const Tensor& a) { return conj(a); });
  def_both(m, cls, "conj_physical", [](const Tensor& a) { return conj_physical(a); });
  // ember conjugates eagerly: there is never a pending conjugate or negative bit to resolve.
  def_both(m, cls, "resolve_conj", [](const Tensor& a) { return a; });
  def_both(m, cls, "resolve_neg", [](const Tensor& a) { return a; });
  def_both(m, cls, "is_conj", [](const Tensor&) { return false; });
  def_both(m, cls, "is_neg", [](const Tensor&) { return false; });
  def_both(m, cls, "angle", [](const Tensor& a) { return angle(a); });
  def_both(m, cls, "sgn", [](const Tensor& a) { return sgn(a); });
  auto sgn_inplace = [](nb::handle_t<Tensor> self) {
    Tensor& t = tensor_of(self);
    if (t.is_complex()) t.copy_(sgn(t));
    else t.sign_();
    return nb::borrow(self);
  };
  cls.def("sgn_", sgn_inplace);
  m.def("sgn_", sgn_inplace, nb::arg("input"));
  m.def("is_complex", [](const Tensor& a) { return a.is_complex(); }, nb::arg("input"));
  cls.def("is_complex", [](const Tensor& a) { return a.is_complex(); });
  m.def("real", &ember::real, nb::arg("input"));
  m.def("imag", &ember::imag, nb::arg("input"));
  m.def("complex", &ember::complex, nb::arg("real"), nb::arg("imag"));
  m.def("polar", &ember::polar, nb::arg("abs"), nb::arg("angle"));
  // x.real / x.imag: views; assigning writes through them (x.real = t, as torch).
  cls.def_prop_rw(
      "real", [](const Tensor& a) { return real(a); },
      [](Tensor& a, const Tensor& v) { Tensor r = real(a); r.copy_(v); });
  cls.def_prop_rw(
      "imag", [](const Tensor& a) { return imag(a); },
      [](Tensor& a, const Tensor& v) { Tensor r = imag(a); r.copy_(v); });
}

void bind_fft(nb::module_& m) {
  nb::module_ f = m.def_submodule("_fft", "ember.fft's transforms (use ember.fft)");
  auto one = [&](const char* name, Tensor (*fn)(const Tensor&, std::optional<int64_t>, int64_t, const Norm&)) {
    f.def(name, fn, nb::arg("input"), nb::arg("n").none() = nb::none(), nb::arg("dim") = -1,
          nb::arg("norm").none() = nb::none());
  };
  one("fft", &fft::fft);
  one("ifft", &fft::ifft);
  one("rfft", &fft::rfft);
  one("irfft", &fft::irfft);
  one("hfft", &fft::hfft);
  one("ihfft", &fft::ihfft);
  auto many = [&](const char* name, Tensor (*fn)(const Tensor&, const OptSizes&, const OptSizes&, const Norm&)) {
    f.def(name, fn, nb::arg("input"), nb::arg("s").none() = nb::none(), nb::arg("dim").none() = nb::none(),
          nb::arg("norm").none() = nb::none());
  };
  many("fftn", &fft::fftn);
  many("ifftn", &fft::ifftn);
  many("rfftn", &fft::rfftn);
  many("irfftn", &fft::irfftn);
  f.def("fftshift", &fft::fftshift, nb::arg("input"), nb::arg("dim").none() = nb::none());
  f.def("ifftshift", &fft::ifftshift, nb::arg("input"), nb::arg("dim").none() = nb::none());
}

}  // namespace

void bind_complex_fft(nb::module_& m, TensorClass& cls) {
  bind_complex(m, cls);
  bind_fft(m);
}

}  // namespace ember::python
