// ember._C._profiler: the profiler's sessions, results and tables (include/ember/profiler.h) for
// python/ember/profiler/ and ember.autograd.profiler, and the Python stack provider that
// with_stack records. Glue only.
#include <Python.h>
#include <frameobject.h>

#include <nanobind/stl/function.h>
#include <nanobind/stl/shared_ptr.h>

#include "bind.h"
#include "ember/profiler.h"

namespace ember::python {

namespace {

namespace P = ember::profiler;

bool is_profiler_frame(const char* file) {
  std::string_view f(file);
  // (and the out= wrapper ember puts around namespace functions: the user's line is the caller's)
  for (std::string_view tail : {"ember/autograd/profiler.py", "ember/profiler/profiler.py", "ember/_profiler_region.py",
                                "ember/_out.py"})
    if (f.size() >= tail.size() && f.substr(f.size() - tail.size()) == tail) return true;
  return false;
}

// The calling thread's Python stack, innermost first, as torch prints frames: "file.py(12): f".
// Ops often run with the GIL released (backward, large kernels); a Python thread that released
// it takes it back to read its own frames. Threads that never ran Python (the thread pool, a
// C++ program's threads) have no stack and never wait for the GIL.
std::vector<std::string> python_stack() {
  std::vector<std::string> out;
  if (!Py_IsInitialized()) return out;
  std::optional<PyGILState_STATE> taken;
  if (!PyGILState_Check()) {
    if (PyGILState_GetThisThreadState() == nullptr) return out;
    taken = PyGILState_Ensure();
  }
  struct Release {
    std::optional<PyGILState_STATE>& s;
    ~Release() { if (s) PyGILState_Release(*s); }
  } release{taken};
  PyFrameObject* f = PyEval_GetFrame();
  if (!f) return out;
  Py_INCREF(f);
  while (f) {
    PyCodeObject* code = PyFrame_GetCode(f);
    const char* file = PyUnicode_AsUTF8(code->co_filename);
    const char* name = PyUnicode_AsUTF8(code->co_name);
    // A region's own entry frames (record_function.__enter__, profile.step) say nothing.
    if (out.empty() && file && is_profiler_frame(file)) {
      Py_DECREF(code);
      PyFrameObject* back = PyFrame_GetBack(f);
      Py_DECREF(f);
      f = back;
      continue;
    }
    out.push_back(std::string(file ? file : "?") + "(" + std::to_string(PyFrame_GetLineNumber(f)) + "): " +
                  (name ? name : "?"));
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(f);
    Py_DECREF(f);
    f = back;
  }
  return out;
}

const char* kind_name(const P::ProfilerEvent& e) {
  switch (e.kind) {
    case P::EventKind::UserAnnotation: return "user_annotation";
    case P::EventKind::Kernel: return e.device_activity_kind.empty() ? "kernel" : e.device_activity_kind.c_str();
    case P::EventKind::Runtime: return "cuda_runtime";
    default: return "cpu_op";
  }
}

// torch's input_shapes: one list per argument ([] for non-tensors), a list of lists for a TensorList.
nb::list shapes_of(const std::vector<P::InputInfo>& inputs) {
  nb::list out;
  for (const auto& in : inputs) {
    if (in.type == "TensorList") {
      nb::list l;
      for (const auto& d : in.list_dims) l.append(nb::cast(d));
      out.append(l);
    } else {
      out.append(nb::cast(in.dims));
    }
  }
  return out;
}

}  // namespace

void bind_profiler(nb::module_& m) {
  auto p = m.def_submodule("_profiler", "the profiler (include/ember/profiler.h)");
  P::set_python_stack_provider(&python_stack);

  nb::enum_<P::ActivityType>(p, "ProfilerActivity")
      .value("CPU", P::ActivityType::CPU)
      .value("CUDA", P::ActivityType::CUDA);
  nb::enum_<P::ProfilerAction>(p, "ProfilerAction")
      .value("NONE", P::ProfilerAction::None)
      .value("WARMUP", P::ProfilerAction::Warmup)
      .value("RECORD", P::ProfilerAction::Record)
      .value("RECORD_AND_SAVE", P::ProfilerAction::RecordAndSave);

  nb::class_<P::ProfilerEvent>(p, "_Event")
      .def_ro("id", &P::ProfilerEvent::id)
      .def_ro("name", &P::ProfilerEvent::name)
      .def_prop_ro("kind", [](const P::ProfilerEvent& e) { return std::string(kind_name(e)); })
      .def_ro("start_ns", &P::ProfilerEvent::start_ns)
      .def_ro("end_ns", &P::ProfilerEvent::end_ns)
      .def_ro("thread", &P::ProfilerEvent::thread)
      .def_ro("sequence_nr", &P::ProfilerEvent::sequence_nr)
      .def_ro("fwd_thread", &P::ProfilerEvent::fwd_thread)
      .def_prop_ro("input_shapes", [](const P::ProfilerEvent& e) { return shapes_of(e.inputs); })
      .def_prop_ro("input_types", [](const P::ProfilerEvent& e) {
        std::vector<std::string> t;
        for (const auto& in : e.inputs) t.push_back(in.type);
        return t;
      })
      .def_prop_ro("input_strides", [](const P::ProfilerEvent& e) {
        std::vector<std::vector<int64_t>> t;
        for (const auto& in : e.inputs) t.push_back(in.strides);
        return t;
      })
      .def_prop_ro("concrete_inputs", [](const P::ProfilerEvent& e) {
        std::vector<std::string> t;
        for (const auto& in : e.inputs) t.push_back(in.concrete);
        return t;
      })
      .def_ro("stack", &P::ProfilerEvent::stack)
      .def_ro("flops", &P::ProfilerEvent::flops)
      .def_ro("parent", &P::ProfilerEvent::parent)
      .def_ro("children", &P::ProfilerEvent::children)
      .def_ro("self_cpu_memory", &P::ProfilerEvent::self_cpu_memory)
      .def_ro("cpu_memory", &P::ProfilerEvent::cpu_memory)
      .def_ro("self_device_memory", &P::ProfilerEvent::self_device_memory)
      .def_ro("device_memory", &P::ProfilerEvent::device_memory)
      .def_ro("self_device_time_ns", &P::ProfilerEvent::self_device_time_ns)
      .def_ro("device_time_ns", &P::ProfilerEvent::device_time_ns)
      .def_ro("self_cpu_time_ns", &P::ProfilerEvent::self_cpu_time_ns)
      .def_prop_ro("device_type", [](const P::ProfilerEvent& e) { return std::string(device_type_name(e.device_type)); })
      .def_ro("device_index", &P::ProfilerEvent::device_index)
      .def_ro("stream", &P::ProfilerEvent::stream)
      .def_ro("correlation", &P::ProfilerEvent::correlation)
      .def_ro("launched_by", &P::ProfilerEvent::launched_by);

  nb::class_<P::EventAverage>(p, "_EventAverage")
      .def_ro("key", &P::EventAverage::key)
      .def_ro("count", &P::EventAverage::count)
      .def_ro("cpu_time_total_ns", &P::EventAverage::cpu_time_total_ns)
      .def_ro("self_cpu_time_total_ns", &P::EventAverage::self_cpu_time_total_ns)
      .def_ro("device_time_total_ns", &P::EventAverage::device_time_total_ns)
      .def_ro("self_device_time_total_ns", &P::EventAverage::self_device_time_total_ns)
      .def_ro("cpu_memory", &P::EventAverage::cpu_memory)
      .def_ro("self_cpu_memory", &P::EventAverage::self_cpu_memory)
      .def_ro("device_memory", &P::EventAverage::device_memory)
      .def_ro("self_device_memory", &P::EventAverage::self_device_memory)
      .def_ro("flops", &P::EventAverage::flops)
      .def_ro("input_shapes", &P::EventAverage::input_shapes)
      .def_ro("stack", &P::EventAverage::stack)
      .def_ro("is_device_event", &P::EventAverage::is_device_event)
      .def_ro("is_user_annotation", &P::EventAverage::is_user_annotation)
      .def_ro("has_parent", &P::EventAverage::has_parent);

  nb::class_<P::ProfilerResult>(p, "_Result")
      .def_prop_ro("events", [](const P::ProfilerResult& r) { return r.events(); })
      .def_prop_ro("memory_events", [](const P::ProfilerResult& r) {
        nb::list out;
        for (const auto& m : r.memory_events())
          out.append(nb::make_tuple(m.ts_ns, m.thread, m.addr, m.bytes, m.total_allocated, m.total_reserved,
                                    m.device.str(), m.event));
        return out;
      })
      .def("key_averages", &P::key_averages, nb::arg("group_by_input_shape") = false, nb::arg("group_by_stack_n") = 0)
      .def("event_rows", &P::event_rows)
      .def("chrome_trace_json", &P::ProfilerResult::chrome_trace_json, nb::arg("trace_name") = "")
      .def("export_chrome_trace", &P::ProfilerResult::export_chrome_trace, nb::arg("path"))
      .def_prop_ro("use_device", &P::ProfilerResult::use_device)
      .def_prop_ro("duration_ns", &P::ProfilerResult::duration_ns)
      .def_prop_ro("base_time_ns", &P::ProfilerResult::base_time_epoch_ns)
      .def_prop_ro("warnings", &P::ProfilerResult::warnings)
      .def_prop_ro("profile_memory", [](const P::ProfilerResult& r) { return r.config().profile_memory; })
      .def_prop_ro("with_flops", [](const P::ProfilerResult& r) { return r.config().with_flops; })
      .def_prop_ro("record_shapes", [](const P::ProfilerResult& r) { return r.config().record_shapes; });

  p.def("table",
        [](const std::vector<P::EventAverage>& rows, std::string sort_by, int64_t row_limit, int64_t max_name,
           int64_t max_shapes, int64_t max_src, std::string header, bool top_level_only, std::string time_unit,
           std::string use_device, bool profile_memory, bool with_flops) {
          P::TableOptions o;
          o.sort_by = std::move(sort_by);
          o.row_limit = row_limit;
          o.max_name_column_width = max_name;
          o.max_shapes_column_width = max_shapes;
          o.max_src_column_width = max_src;
          o.header = std::move(header);
          o.top_level_events_only = top_level_only;
          o.time_unit = std::move(time_unit);
          return P::table(rows, o, use_device, profile_memory, with_flops);
        });
  p.def("format_time_us", &P::format_time_us);
  p.def("format_memory", &P::format_memory);
  p.def("is_profiler_enabled", &P::is_profiler_enabled);
  p.def("record_function_enter", [](const std::string& name) { return P::record_function_enter(name); });
  p.def("record_function_exit", &P::record_function_exit);
  p.def("schedule", &P::schedule, nb::arg("wait"), nb::arg("warmup"), nb::arg("active"), nb::arg("repeat") = 0,
        nb::arg("skip_first") = 0, nb::arg("skip_first_wait") = 0);

  nb::class_<P::Profiler>(p, "_Profiler")
      .def("__init__",
           [](P::Profiler* self, bool cpu, bool cuda, bool record_shapes, bool profile_memory, bool with_stack,
              bool with_flops, nb::object schedule_fn, nb::object on_ready) {
             P::ProfilerConfig c{.cpu = cpu, .cuda = cuda, .record_shapes = record_shapes, .profile_memory = profile_memory,
                                 .with_stack = with_stack, .with_flops = with_flops};
             P::Schedule s;
             if (!schedule_fn.is_none())
               s = [schedule_fn](int64_t step) {
                 nb::gil_scoped_acquire g;
                 return nb::cast<P::ProfilerAction>(schedule_fn(step));
               };
             std::function<void(P::Profiler&)> ready;
             if (!on_ready.is_none())
               ready = [on_ready](P::Profiler&) {
                 nb::gil_scoped_acquire g;
                 on_ready();
               };
             new (self) P::Profiler(c, std::move(s), std::move(ready));
           },
           nb::arg("cpu"), nb::arg("cuda"), nb::arg("record_shapes"), nb::arg("profile_memory"), nb::arg("with_stack"),
           nb::arg("with_flops"), nb::arg("schedule").none(), nb::arg("on_trace_ready").none())
      .def("start", &P::Profiler::start)
      .def("stop", &P::Profiler::stop)
      .def("step", &P::Profiler::step)
      .def_prop_ro("step_num", &P::Profiler::step_num)
      .def_prop_ro("current_action", &P::Profiler::current_action)
      .def_prop_ro("result", &P::Profiler::result_ptr);
}

}  // namespace ember::python
