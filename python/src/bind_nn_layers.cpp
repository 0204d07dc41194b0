// Issue 15's layers in ember._C._nn: interpolate (the modes, sizes and checks are
// F::interpolate's; Python's F.interpolate turns int / float arguments into per-dim lists).
#include "bind.h"
#include "ember/nn/functional.h"

namespace ember::python {

void bind_nn_layers(nb::module_& m) {
  namespace F = ember::nn::functional;
  nb::module_ nn = nb::borrow<nb::module_>(m.attr("_nn"));
  nn.def("interpolate", &F::interpolate, nb::arg("input"), nb::arg("size") = nb::none(),
         nb::arg("scale_factor") = nb::none(), nb::arg("mode") = "nearest", nb::arg("align_corners") = nb::none(),
         nb::arg("recompute_scale_factor") = nb::none(), nb::arg("antialias") = false,
         nb::call_guard<nb::gil_scoped_release>());
}

}  // namespace ember::python
