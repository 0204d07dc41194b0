// ember._C._compile: the capture session and compiled graphs (include/ember/compile/) that
// ember.compile (python/ember/_compile.py) drives; guards and caching live on the Python side,
// where the arguments are (glue only).
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>

#include "bind.h"
#include "compile/kernel_cache.h"
#include "ember/compile/capture.h"
#include "ember/compile/compiled_graph.h"
#include "ember/compile/compiled_template.h"
#include "ember/compile/device_graphs.h"
#include "ember/compile/symbolic.h"
#include "ember/export.h"

namespace ember::python {
namespace {
// A number's place as _compile_dynamic names it: (at, item, index, element).
nb::tuple place_tuple(const compiler::SymSite& s) {
  static const char* at[] = {"size", "stride", "arg", "value"};
  return nb::make_tuple(at[s.where], s.item, s.index, s.element);
}
nb::object number_object(const compiler::GraphNumbers& n, size_t k) {
  return n.is_double[k] ? nb::object(nb::float_(n.doubles[k])) : nb::object(nb::int_(n.ints[k]));
}
}  // namespace

namespace {

using OptionalTensors = std::vector<std::optional<Tensor>>;

OptionalTensors optional_tensors(const std::vector<Tensor>& tensors) {
  OptionalTensors out;
  for (const auto& t : tensors) out.push_back(t.defined() ? std::optional<Tensor>(t) : std::nullopt);
  return out;
}

// Device graphs (compile/device_graphs.h): mode="reduce-overhead"'s GraphedRun over a compiled
// graph, and make_graphed_callables' capture of a Python callable's forward and backward.
void bind_device_graphs(nb::module_& m) {
  using namespace compiler;
  nb::class_<GraphedRun>(m, "GraphedRun")
      .def("__init__", [](GraphedRun* self, std::shared_ptr<CompiledGraph> graph, const std::vector<Tensor>& inputs,
                          size_t n_args) {
        new (self) GraphedRun([graph](const std::vector<Tensor>& in) { return graph->run(in); }, inputs, n_args);
      }, nb::arg("graph"), nb::arg("inputs"), nb::arg("n_args"))
      .def("__call__", &GraphedRun::operator(), nb::arg("inputs"))
      .def("reads_current_storage", &GraphedRun::reads_current_storage, nb::arg("inputs"))
      .def_prop_ro("training", &GraphedRun::training)
      .def_prop_ro("replays", &GraphedRun::replays);
  nb::class_<ForwardBackwardGraphs>(m, "ForwardBackwardGraphs")
      .def_prop_ro("static_inputs", [](const ForwardBackwardGraphs& c) { return c.static_inputs; })
      .def_prop_ro("static_outputs", [](const ForwardBackwardGraphs& c) { return c.static_outputs; })
      .def_prop_ro("static_grad_outputs", [](const ForwardBackwardGraphs& c) { return optional_tensors(c.static_grad_outputs); })
      .def_prop_ro("static_grad_inputs", [](const ForwardBackwardGraphs& c) { return optional_tensors(c.static_grad_inputs); })
      .def("replay_forward", [](ForwardBackwardGraphs& c) { c.replay_forward(); })
      .def("replay_backward", [](ForwardBackwardGraphs& c, const OptionalTensors& grads) {
        std::vector<Tensor> g;
        for (const auto& t : grads) g.push_back(t ? *t : Tensor());
        return optional_tensors(replay_backward(c, g));
      }, nb::arg("grads"));
  m.def("capture_forward_backward", [](nb::callable call, const std::vector<Tensor>& static_inputs, int64_t pool,
                                       bool allow_unused) {
    // the callable may outlive this call (an emulated capture reruns it) and die on any thread
    std::shared_ptr<nb::callable> fn(new nb::callable(call), [](nb::callable* f) {
      nb::gil_scoped_acquire gil;
      delete f;
    });
    return capture_forward_backward([fn] {
      nb::gil_scoped_acquire gil;
      return nb::cast<std::vector<Tensor>>((*fn)());
    }, static_inputs, pool, allow_unused);
  }, nb::arg("call"), nb::arg("static_inputs"), nb::arg("pool") = 0, nb::arg("allow_unused") = false);
  m.def("device_graphable", &device_graphable, nb::arg("tensors"));
  m.def("mark_step_begin", &mark_step_begin);
  m.def("set_emulated_device_graphs", &compiler::detail::set_emulated_device_graphs, nb::arg("on"));
}

}  // namespace

void bind_compile(nb::module_& parent) {
  nb::module_ m = parent.def_submodule("_compile", "ember.compile's capture and compiled graphs");
  using namespace compiler;
  m.def("toolchain", [] {  // ember.utils.cpp_extension's compiler, headers and library
    const Toolchain t = toolchain();
    return std::map<std::string, std::string>{{"cxx", t.cxx}, {"include", t.include_dir}, {"library", t.library}};
  });
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
      })
      // (dynamic shapes fit a compiled graph's numbers over its compilations: compiled_template.h)
      .def("structure_key", &CompiledGraph::structure_key);
  // The numbers that differ between compilations of one structure (structure_key): [((at, item,
  // index, element), (each compilation's value, int or float))].
  m.def("differing_numbers", [](const std::vector<std::shared_ptr<CompiledGraph>>& compiled) {
    std::vector<GraphNumbers> all;
    for (const auto& c : compiled) all.push_back(graph_numbers(c->graph()));
    nb::list out;
    for (size_t k : differing_places(all)) {
      nb::list values;
      for (const auto& n : all) values.append(number_object(n, k));
      out.append(nb::make_tuple(place_tuple(all[0].places[k]), nb::tuple(values)));
    }
    return out;
  }, nb::arg("compiled"));
  nb::class_<CompiledTemplate>(m, "CompiledTemplate")
      .def("__init__", [](CompiledTemplate* t, std::shared_ptr<CompiledGraph> base, const std::string& sites) {
             new (t) CompiledTemplate(std::move(base), sites);
           }, nb::arg("base"), nb::arg("sites"))
      .def("at", &CompiledTemplate::at, nb::arg("dims"))
      .def_prop_ro("sites", &CompiledTemplate::sites);
  nb::class_<CaptureSession>(m, "CaptureSession")
      .def(nb::init<const std::vector<Tensor>&>(), nb::arg("inputs"))
      .def("finish", [](CaptureSession& s, const std::vector<Tensor>& outputs, bool fuse) {
             return compile_graph(s.finish(outputs), {.fuse = fuse});
           }, nb::arg("outputs"), nb::arg("fuse") = true)
      .def("finish_program", [](CaptureSession& s, const std::vector<Tensor>& outputs,
                                 const std::map<std::string, std::string>& metadata, bool simplify) {
             return exporting::Program(s.finish(outputs, simplify), metadata);
           }, nb::arg("outputs"), nb::arg("metadata"), nb::arg("simplify") = true)
      .def("finish_dynamic", [](CaptureSession& s, const std::vector<Tensor>& outputs, bool fuse) {
             // (the graph to run at these sizes, the raw graph as a program to fit sizes on)
             auto both = s.finish_both(outputs);
             auto running = compile_graph(std::move(both.simplified), {.fuse = fuse});
             return std::make_pair(running, exporting::Program(std::move(both.raw), {}, nullptr, false));
           }, nb::arg("outputs"), nb::arg("fuse") = true)
      .def_prop_ro("structure_sizes", &CaptureSession::structure_sizes)
      .def("close", &CaptureSession::close)
      .def("on_break", [](CaptureSession& s, nb::callable listener) {
        s.on_break([listener](const std::string& what) -> std::string {
          nb::gil_scoped_acquire gil;  // (a break may come from code that let the GIL go)
          return nb::cast<std::string>(listener(what));
        });
      }, nb::arg("listener"))
      .def_prop_ro("break_reason", &CaptureSession::break_reason)
      .def_prop_ro("ops_recorded", &CaptureSession::ops_recorded);
  nb::class_<exporting::Program>(m, "Program")
      .def("run", &exporting::Program::run, nb::arg("inputs"))
      .def("save", &exporting::Program::save, nb::arg("path"))
      .def("save_to_bytes", [](const exporting::Program& p) {
        const std::string b = p.save_to_bytes();
        return nb::bytes(b.data(), b.size());
      })
      .def_prop_ro("metadata", &exporting::Program::metadata)
      .def("set_metadata", &exporting::Program::set_metadata, nb::arg("key"), nb::arg("value"))
      .def("graph_json", &exporting::Program::graph_json)
      .def("numbers", [](const exporting::Program& p) {
        // (skeleton, [place], [number], input value ids, constant value ids): what a dynamic
        // capture is fitted from (symbolic.h: graph_numbers)
        const auto& g = p.graph();
        const GraphNumbers n = graph_numbers(g);
        nb::list places, values;
        for (size_t k = 0; k < n.places.size(); ++k) {
          places.append(place_tuple(n.places[k]));
          values.append(number_object(n, k));
        }
        std::vector<int64_t> inputs(g.inputs.begin(), g.inputs.end()), constants;
        for (size_t v = 0; v < g.values.size(); ++v)
          if (g.values[v].kind == ValueKind::Constant) constants.push_back(int64_t(v));
        return nb::make_tuple(nb::bytes(n.skeleton.data(), n.skeleton.size()), places, values, inputs, constants);
      })
      .def("constants", [](const exporting::Program& p) {  // value id -> tensor
        std::map<int64_t, Tensor> out;
        const auto& g = p.graph();
        for (size_t v = 0; v < g.values.size(); ++v)
          if (g.values[v].kind == ValueKind::Constant && g.values[v].constant.defined()) out[int64_t(v)] = g.values[v].constant;
        return out;
      })
      .def_prop_ro("num_inputs", &exporting::Program::num_inputs)
      .def("with_symbolic", &exporting::with_symbolic, nb::arg("json"), nb::arg("caller_binds") = false)
      .def("specialise", &exporting::Program::specialise, nb::arg("dims"), nb::arg("fuse") = true)
      .def_prop_ro("dynamic", [](const exporting::Program& p) { return p.symbolic() != nullptr; })
      .def_prop_ro("specialisation_stats", [](const exporting::Program& p) {  // (renumbered, compiled, why no template)
        const auto s = p.specialisation_stats();
        return nb::make_tuple(s.renumbered, s.compiled, s.not_fitted);
      })
      .def("describe", [](const exporting::Program& p) { return p.graph().str(); });
  m.def("load_program", &exporting::load, nb::arg("path"), nb::arg("device").none() = nb::none());
  m.def("load_program_bytes", [](nb::bytes b, std::optional<Device> device) {
    return exporting::load_from_bytes(std::string(b.c_str(), b.size()), device);
  }, nb::arg("data"), nb::arg("device").none() = nb::none());
  m.def("note_break", &compiler::detail::note_break, nb::arg("what"));
  // Python code the graph records as one opaque node: run it inside `with paused():` (its own ops
  // stay out of the graph), then record it with a callable that re-runs it on new tensors.
  // `saved_call`: the call's non-tensor arguments encoded (a Python custom op's), so that a saved
  // program can hold the node (register_saved_op re-runs it on load); None: opaque, not savable.
  m.def("record_opaque", [](const std::string& name, const std::vector<Tensor>& inputs,
                            const std::vector<Tensor>& outputs, nb::callable replay, bool mutates,
                            std::optional<std::string> saved_call) {
    std::vector<compiler::Arg> args;
    if (saved_call) {
      compiler::Arg tensors, call;
      tensors.kind = compiler::Arg::Tensors;
      tensors.i = int64_t(inputs.size());
      call.kind = compiler::Arg::String;
      call.s = *saved_call;
      args = {tensors, call};
    }
    compiler::detail::record_opaque(name, inputs, outputs, [replay](const std::vector<Tensor>& in) {
      nb::gil_scoped_acquire gil;
      return nb::cast<std::vector<Tensor>>(replay(in));
    }, mutates, std::move(args));
  }, nb::arg("name"), nb::arg("inputs"), nb::arg("outputs"), nb::arg("replay"), nb::arg("mutates"),
     nb::arg("saved_call").none() = nb::none());
  m.def("register_saved_op", [](const std::string& name, nb::callable run) {
    // held for the process (a loaded program may run it at any time), never released: the
    // interpreter may be gone by the time static objects are destroyed
    auto* keep = new nb::callable(run);
    compiler::detail::register_saved_op(name, [keep](const std::string& spec, const std::vector<Tensor>& in) {
      nb::gil_scoped_acquire gil;
      return nb::cast<std::vector<Tensor>>((*keep)(spec, in));
    });
  }, nb::arg("name"), nb::arg("run"));
  struct Paused {
    std::unique_ptr<ExcludeDispatchKeyGuard> guard;
  };
  nb::class_<Paused>(m, "paused")
      .def(nb::init<>())
      .def("__enter__", [](Paused& p) { p.guard = std::make_unique<ExcludeDispatchKeyGuard>(DispatchKey::Tracer); })
      .def("__exit__", [](Paused& p, nb::args) { p.guard.reset(); });
  m.def("capturing", &compiler::detail::capturing);  // a capture is open on this thread
  m.def("tracing", &compiler::detail::tracing);  // ... and ops dispatched here would be recorded
  m.def("signature", &compiler::guard_signature, nb::arg("tensors"), nb::arg("with_sizes") = true);
  // Whether tensors[which[k]] has sizes[k] and, where a size is above 1, strides[k]: a fitted
  // graph's fixed inputs (a model's parameters), checked in one call per bind.
  m.def("layouts_match", [](const std::vector<Tensor>& tensors, const std::vector<int64_t>& which,
                            const std::vector<std::vector<int64_t>>& sizes, const std::vector<std::vector<int64_t>>& strides) {
    EMBER_CHECK_VALUE(which.size() == sizes.size() && which.size() == strides.size(),
                      "layouts_match: which, sizes and strides differ in length");
    for (size_t k = 0; k < which.size(); ++k) {
      EMBER_CHECK_VALUE(which[k] >= 0 && size_t(which[k]) < tensors.size(), "layouts_match: index ", which[k],
                        " out of range for ", tensors.size(), " tensors");
      const Tensor& t = tensors[size_t(which[k])];
      const auto got = t.sizes();
      if (got.size() != sizes[k].size() || strides[k].size() != got.size()) return false;
      for (size_t d = 0; d < got.size(); ++d)
        if (got[d] != sizes[k][d] || (got[d] > 1 && t.strides()[d] != strides[k][d])) return false;
    }
    return true;
  }, nb::arg("tensors"), nb::arg("which"), nb::arg("sizes"), nb::arg("strides"));
  // which C++ tensor a Python one holds: a replayed result that is an input (or an outside
  // tensor) is handed back as the caller's own Python object, as eager returns `self`
  m.def("impl_id", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.impl()); });
  bind_device_graphs(m);
}

}  // namespace ember::python
