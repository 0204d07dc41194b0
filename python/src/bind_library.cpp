// ember._C._library: C++ custom ops (include/ember/library.h) for ember.ops.<ns>.<op> (glue only).
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bind.h"
#include "ember/library.h"

namespace ember::python {

void bind_library(nb::module_& parent) {
  nb::module_ m = parent.def_submodule("_library", "C++ custom operators");
  m.def("registered", &library::registered);
  m.def("schema", [](const std::string& name) { return library::find(name).schema(); }, nb::arg("name"));
  m.def("call", [](const std::string& name, const std::vector<Tensor>& inputs, const std::vector<double>& attrs) {
    return library::find(name)(inputs, attrs);
  }, nb::arg("name"), nb::arg("inputs"), nb::arg("attrs"));
}

}  // namespace ember::python
