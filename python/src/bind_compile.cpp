// ember._C._compile: the capture session and compiled graphs (include/ember/compile/) that
// ember.compile (python/ember/_compile.py) drives; guards and caching live on the Python side,
// where the arguments are (glue only).
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bind.h"
#include "ember/compile/capture.h"
#include "ember/compile/compiled_graph.h"

namespace ember::python {

void bind_compile(nb::module_& parent) {
  nb::module_ m = parent.def_submodule("_compile", "ember.compile's capture and compiled graphs");
  using namespace compiler;
  nb::class_<CompiledGraph>(m, "CompiledGraph")
      .def("run", &CompiledGraph::run, nb::arg("inputs"))
      .def("describe", &CompiledGraph::describe, nb::arg("source") = false)
      .def_prop_ro("fused_kernels", &CompiledGraph::fused_kernels)
      .def_prop_ro("fused_nodes", &CompiledGraph::fused_nodes)
      .def_prop_ro("codegen_seconds", &CompiledGraph::codegen_seconds)
      .def_prop_ro("ops_captured", [](const CompiledGraph& g) { return g.graph().ops_captured; })
      .def_prop_ro("nodes", [](const CompiledGraph& g) { return g.graph().nodes.size(); })
      .def_prop_ro("external_ids", [](const CompiledGraph& g) {  // the tensors from outside it reads
        std::vector<uintptr_t> ids;
        for (const auto& info : g.graph().values)
          if (info.kind == ValueKind::Constant && info.external && info.constant.defined())
            ids.push_back(reinterpret_cast<uintptr_t>(info.constant.impl()));
        return ids;
      })
      .def_prop_ro("ops", [](const CompiledGraph& g) {
        std::vector<std::string> ops;
        for (const auto& n : g.graph().nodes) ops.emplace_back(n.op);
        return ops;
      });
  nb::class_<CaptureSession>(m, "CaptureSession")
      .def(nb::init<const std::vector<Tensor>&>(), nb::arg("inputs"))
      .def("finish", [](CaptureSession& s, const std::vector<Tensor>& outputs, bool fuse) {
             return compile_graph(s.finish(outputs), {.fuse = fuse});
           }, nb::arg("outputs"), nb::arg("fuse") = true)
      .def("close", &CaptureSession::close)
      .def("on_break", [](CaptureSession& s, nb::callable listener) {
        s.on_break([listener](const std::string& what) -> std::string {
          nb::gil_scoped_acquire gil;  // (a break may come from code that let the GIL go)
          return nb::cast<std::string>(listener(what));
        });
      }, nb::arg("listener"))
      .def_prop_ro("break_reason", &CaptureSession::break_reason)
      .def_prop_ro("ops_recorded", &CaptureSession::ops_recorded);
  m.def("note_break", &compiler::detail::note_break, nb::arg("what"));
  m.def("capturing", &compiler::detail::capturing);
  m.def("signature", &compiler::guard_signature, nb::arg("tensors"));
  // which C++ tensor a Python one holds: a replayed result that is an input (or an outside
  // tensor) is handed back as the caller's own Python object, as eager returns `self`
  m.def("impl_id", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.impl()); });
}

}  // namespace ember::python
