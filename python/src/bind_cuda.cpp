// ember._C._cuda: the C++ ember::cuda API (include/ember/cuda.h) for python/ember/cuda/, plus
// Tensor.pin_memory / is_pinned / record_stream and ember.OutOfMemoryError. Glue only.
#include <unordered_map>

#include "bind.h"
#include "ember/core/caching_allocator.h"
#include "ember/cuda.h"
#include "ember/cudnn_flags.h"
#include "ember/sdp_flags.h"
#include "ember/matmul_precision.h"
#include "ember/profiler.h"

namespace ember::python {

namespace {
Stream stream_of(int device, int64_t id) { return Stream{Device(DeviceType::CUDA, int16_t(device)), id}; }
nb::tuple stream_tuple(Stream s) { return nb::make_tuple(int(s.device.index), s.id); }

// ---- torch.cuda.memory._snapshot()'s dict, frames still as "file.py(12): func" strings
// (python/ember/cuda/memory.py turns them into torch's {"filename", "line", "name"} dicts).
// One capture is shared by a block and its trace entries: each becomes one Python list.
class FramesCache {
 public:
  nb::list get(const StackFrames& frames) {
    if (!frames) return nb::list();
    auto it = lists_.find(frames.get());
    if (it != lists_.end()) return it->second;
    nb::list l;
    for (const std::string& f : *frames) l.append(nb::str(f.c_str(), f.size()));
    lists_.emplace(frames.get(), l);
    return l;
  }

 private:
  std::unordered_map<const std::vector<std::string>*, nb::list> lists_;
};

nb::dict block_dict(const BlockSnapshot& b, FramesCache& frames) {
  nb::dict d;
  d["address"] = b.address;
  d["size"] = b.size;
  d["requested_size"] = b.requested_size;
  d["state"] = block_state_name(b.state);
  d["frames"] = frames.get(b.frames);
  return d;
}

nb::dict segment_dict(const SegmentSnapshot& s, FramesCache& frames) {
  nb::dict d;
  d["device"] = s.device;
  d["address"] = s.address;
  d["total_size"] = s.total_size;
  d["allocated_size"] = s.allocated_size;
  d["active_size"] = s.active_size;
  d["requested_size"] = s.requested_size;
  d["stream"] = s.stream;
  d["segment_type"] = s.is_large ? "large" : "small";
  d["segment_pool_id"] = nb::make_tuple(0, 0);  // ember has no private pools (CUDA graphs)
  d["is_expandable"] = false;
  d["frames"] = frames.get(s.frames);
  nb::list blocks;
  for (const BlockSnapshot& b : s.blocks) blocks.append(block_dict(b, frames));
  d["blocks"] = blocks;
  return d;
}

// As torch: an "oom" entry names the device's free bytes instead of an address, and an entry
// without a recorded stack has no "frames" key.
nb::dict trace_entry_dict(const MemoryTraceEntry& e, FramesCache& frames) {
  nb::dict d;
  d["action"] = trace_action_name(e.action);
  d[e.action == TraceAction::Oom ? "device_free" : "addr"] = e.addr;
  d["size"] = e.size;
  d["stream"] = e.stream;
  d["time_us"] = e.time_us;
  if (e.frames) d["frames"] = frames.get(e.frames);
  return d;
}
}  // namespace

void bind_cuda(nb::module_& m, nb::class_<Tensor>& cls) {
  // torch.OutOfMemoryError (also torch.cuda.OutOfMemoryError): a RuntimeError.
  static nb::exception<ember::OutOfMemoryError> oom(m, "OutOfMemoryError", PyExc_RuntimeError);

  cls.def("pin_memory", [](const Tensor& t, nb::handle /*device*/) {
    nb::gil_scoped_release nogil;
    return t.pin_memory();
  }, nb::arg("device") = nb::none());
  cls.def("is_pinned", [](const Tensor& t, nb::handle /*device*/) { return t.is_pinned(); }, nb::arg("device") = nb::none());
  cls.def("_record_stream", [](const Tensor& t, int device, int64_t id) { t.record_stream(stream_of(device, id)); });

  nb::module_ c = m.def_submodule("_cuda", "ember::cuda");
  c.def("is_built", &cuda::is_built);
  c.def("is_available", &cuda::is_available);
  c.def("device_count", &cuda::device_count);
  c.def("current_device", &cuda::current_device);
  c.def("set_device", &cuda::set_device);
  c.def("synchronize", [](int device) {
    nb::gil_scoped_release nogil;
    cuda::synchronize(device);
  });
  c.def("version", [](void) -> nb::object {
    std::string v = cuda::version();
    return v.empty() ? nb::none() : nb::object(nb::str(v.c_str()));
  });
  c.def("get_device_properties", [](int device) {
    DeviceProperties p = cuda::get_device_properties(device);
    nb::dict d;
    d["name"] = p.name;
    d["major"] = p.major;
    d["minor"] = p.minor;
    d["total_memory"] = p.total_memory;
    d["multi_processor_count"] = p.multi_processor_count;
    d["L2_cache_size"] = p.L2_cache_size;
    d["max_threads_per_multi_processor"] = p.max_threads_per_multi_processor;
    d["warp_size"] = p.warp_size;
    d["regs_per_multiprocessor"] = p.regs_per_multiprocessor;
    d["is_integrated"] = p.is_integrated;
    d["is_multi_gpu_board"] = p.is_multi_gpu_board;
    d["uuid"] = p.uuid;
    return d;
  });
  c.def("manual_seed", &cuda::manual_seed);
  c.def("manual_seed_all", &cuda::manual_seed_all);
  c.def("initial_seed", [](int device) -> uint64_t {
    return default_generator(Device(DeviceType::CUDA, int16_t(device))).initial_seed();
  });
  // torch.cuda.default_generators[i]: the generator CUDA kernels draw from by default.
  c.def("default_generator", [](int device) -> Generator& {
    return default_generator(Device(DeviceType::CUDA, int16_t(device)));
  }, nb::rv_policy::reference);

  c.def("memory_stats", [](int device) {
    nb::dict d;
    for (auto& [k, v] : cuda::memory_stats(device)) d[k.c_str()] = v;
    return d;
  });
  c.def("memory_summary", &cuda::memory_summary);
  c.def("reset_peak_memory_stats", &cuda::reset_peak_memory_stats);
  c.def("reset_accumulated_memory_stats", &cuda::reset_accumulated_memory_stats);
  c.def("empty_cache", &cuda::empty_cache);
  c.def("mem_get_info", [](int device) {
    auto [free_bytes, total] = cuda::mem_get_info(device);
    return nb::make_tuple(free_bytes, total);
  });
  // torch.cuda.memory._record_memory_history: python/ember/cuda/memory.py checks the options
  // (with torch's messages) and maps `context` to a RecordContext level. Stacks are the Python
  // frames the profiler's provider sees on the allocating thread, innermost first.
  c.def("record_memory_history", [](bool enabled, int when, size_t max_entries, bool clear_history) {
    EMBER_CHECK_VALUE(when >= 0 && when <= int(RecordContext::All),
                      "record_memory_history: context level must be 0 (none) to 3 (all), got ", when);
    nb::gil_scoped_release nogil;  // the allocators' locks are taken without holding Python's
    cuda::record_memory_history(enabled, max_entries, RecordContext(when), clear_history,
                                [] { return profiler::current_python_stack(); });
  });
  c.def("memory_snapshot", [] {
    std::vector<AllocatorSnapshot> snaps;
    {
      nb::gil_scoped_release nogil;
      snaps = cuda::memory_snapshot();
    }
    FramesCache frames;
    nb::list segments, traces;
    for (const AllocatorSnapshot& snap : snaps) {  // device order: traces[i] is device i's
      for (const SegmentSnapshot& s : snap.segments) segments.append(segment_dict(s, frames));
      nb::list trace;
      for (const MemoryTraceEntry& e : snap.trace) trace.append(trace_entry_dict(e, frames));
      traces.append(trace);
    }
    nb::dict d;
    d["segments"] = segments;
    d["device_traces"] = traces;
    return d;
  });

  // Streams travel as (device index, id) pairs; python/ember/cuda wraps them in Stream objects.
  c.def("current_stream", [](int device) { return stream_tuple(cuda::current_stream(device)); });
  c.def("default_stream", [](int device) { return stream_tuple(cuda::default_stream(device)); });
  c.def("new_stream", [](int device, int priority) { return stream_tuple(cuda::new_stream(device, priority)); });
  c.def("set_stream", [](int device, int64_t id) { cuda::set_stream(stream_of(device, id)); });
  c.def("query_stream", [](int device, int64_t id) { return cuda::query_stream(stream_of(device, id)); });
  c.def("synchronize_stream", [](int device, int64_t id) {
    nb::gil_scoped_release nogil;
    cuda::synchronize_stream(stream_of(device, id));
  });
  c.def("stream_priority", [](int device, int64_t id) {
    return device_backend(DeviceType::CUDA).stream_priority(stream_of(device, id));
  });

  nb::class_<cuda::Event>(c, "Event")
      .def(nb::init<bool, bool, bool>(), nb::arg("enable_timing") = false, nb::arg("blocking") = false,
           nb::arg("interprocess") = false)
      .def("record", [](cuda::Event& e, int device, int64_t id) { e.record(stream_of(device, id)); })
      .def("wait", [](cuda::Event& e, int device, int64_t id) { e.wait(stream_of(device, id)); })
      .def("query", &cuda::Event::query)
      .def("synchronize", [](const cuda::Event& e) {
        nb::gil_scoped_release nogil;
        e.synchronize();
      })
      .def("elapsed_time", &cuda::Event::elapsed_time)
      .def_prop_ro("recorded", &cuda::Event::recorded)
      .def_prop_ro("device_index", [](const cuda::Event& e) { return int(e.device().index); });

  // torch.cuda.CUDAGraph's engine (python/ember/cuda/graphs.py wraps it). Capture and replay
  // release the GIL: other Python threads may run, as with torch.
  nb::class_<cuda::CUDAGraph>(c, "CUDAGraph")
      .def(nb::init<>())
      .def("capture_begin", [](cuda::CUDAGraph& g, int64_t pool, const std::string& mode) {
        nb::gil_scoped_release nogil;
        g.capture_begin(pool, mode);
      }, nb::arg("pool") = 0, nb::arg("capture_error_mode") = "global")
      .def("capture_end", [](cuda::CUDAGraph& g) {
        nb::gil_scoped_release nogil;
        g.capture_end();
      })
      .def("replay", [](cuda::CUDAGraph& g) {
        nb::gil_scoped_release nogil;
        g.replay();
      })
      .def("reset", &cuda::CUDAGraph::reset)
      .def("pool", &cuda::CUDAGraph::pool);
  c.def("graph_pool_handle", &cuda::graph_pool_handle);
  c.def("is_current_stream_capturing", &cuda::is_current_stream_capturing);

  // torch.set_float32_matmul_precision / get_float32_matmul_precision (ember/matmul_precision.h),
  // read by the CUDA GEMMs. The setter returns None, or for a value torch rejects the text of
  // torch's warning (python/ember/_global_flags.py warns with it; the setting is unchanged).
  c.def("set_float32_matmul_precision", [](const std::string& precision) -> nb::object {
    try {
      set_float32_matmul_precision(precision);
    } catch (const ValueError& e) {
      return nb::str(e.what());
    }
    return nb::none();
  });
  c.def("get_float32_matmul_precision", &get_float32_matmul_precision);

  // torch.backends.cudnn's flags (ember/cudnn_flags.h), read by the cuDNN convolutions;
  // python/ember/backends/cudnn exposes them as module attributes.
  c.def("cudnn_get_flags", [] {
    return nb::make_tuple(cudnn_enabled(), cudnn_benchmark(), cudnn_benchmark_limit(), cudnn_deterministic(),
                          cudnn_allow_tf32());
  });
  c.def("cudnn_set_enabled", &set_cudnn_enabled);
  c.def("cudnn_set_benchmark", &set_cudnn_benchmark);
  c.def("cudnn_set_benchmark_limit", &set_cudnn_benchmark_limit);
  c.def("cudnn_set_deterministic", &set_cudnn_deterministic);
  c.def("cudnn_set_allow_tf32", &set_cudnn_allow_tf32);
  c.def("cudnn_version", &cudnn_version);
  c.def("cudnn_is_available", &cudnn_is_available);

  // torch.backends.cuda's SDPA switches (ember/sdp_flags.h), read by F.scaled_dot_product_attention.
  c.def("sdp_flags", [] { return nb::make_tuple(flash_sdp_enabled(), mem_efficient_sdp_enabled(), math_sdp_enabled()); });
  c.def("enable_flash_sdp", &enable_flash_sdp);
  c.def("enable_mem_efficient_sdp", &enable_mem_efficient_sdp);
  c.def("enable_math_sdp", &enable_math_sdp);
  c.def("set_sdp_choice_ignores_sizes", &set_sdp_choice_ignores_sizes);
}

}  // namespace ember::python
