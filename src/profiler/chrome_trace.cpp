// export_chrome_trace: the Trace Event Format JSON that Perfetto and chrome://tracing open, with
// torch's (Kineto's) categories and argument names so tools written for PyTorch traces read it:
// complete events ("ph": "X") for ops, regions, backward nodes, runtime calls and GPU work,
// "[memory]" instant events and memory counters, flow arrows from forward ops to their backward
// nodes ("fwdbwd") and from launches to kernels ("ac2g").
#include <unistd.h>

#include <cstdio>
#include <set>
#include <unordered_map>

#include "ember/profiler.h"
#include "core/json_string.h"
#include "ember/serialize/serialize.h"

namespace ember::profiler {

namespace {

class Json {
 public:
  std::string out;
  void str(const std::string& s) { append_json_string(out, s); }
  void key(const char* k) { str(k); out += ": "; }
  void num(int64_t v) { out += std::to_string(v); }
  void us(int64_t ns) {  // microseconds with the nanoseconds kept
    char buf[40];
    std::snprintf(buf, sizeof buf, "%lld.%03lld", (long long)(ns / 1000), (long long)((ns < 0 ? -ns : ns) % 1000));
    if (ns < 0 && ns > -1000) out += "-";
    out += buf;
  }
  void ints(const std::vector<int64_t>& v) {
    out += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out += ", ";
      num(v[i]);
    }
    out += ']';
  }
};

const char* category(const ProfilerEvent& e) {
  switch (e.kind) {
    case EventKind::UserAnnotation: return "user_annotation";
    case EventKind::Runtime: return "cuda_runtime";
    case EventKind::Kernel: return e.device_activity_kind.empty() ? "kernel" : e.device_activity_kind.c_str();
    default: return "cpu_op";
  }
}

void input_args(Json& j, const ProfilerEvent& e) {
  j.out += ", ";
  j.key("Input Dims");
  j.out += '[';
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    if (i) j.out += ", ";
    const auto& in = e.inputs[i];
    if (in.type == "TensorList") {
      j.out += '[';
      for (size_t k = 0; k < in.list_dims.size(); ++k) {
        if (k) j.out += ", ";
        j.ints(in.list_dims[k]);
      }
      j.out += ']';
    } else {
      j.ints(in.dims);
    }
  }
  j.out += "], ";
  j.key("Input Strides");
  j.out += '[';
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    if (i) j.out += ", ";
    j.ints(e.inputs[i].strides);
  }
  j.out += "], ";
  j.key("Input type");
  j.out += '[';
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    if (i) j.out += ", ";
    j.str(e.inputs[i].type);
  }
  j.out += "], ";
  j.key("Concrete Inputs");
  j.out += '[';
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    if (i) j.out += ", ";
    j.str(e.inputs[i].concrete);
  }
  j.out += ']';
}

}  // namespace

std::string ProfilerResult::chrome_trace_json(const std::string& trace_name) const {
  const int64_t pid = int64_t(::getpid());
  Json j;
  j.out.reserve(events_.size() * 256 + 1024);
  j.out += "{\n  ";
  j.key("schemaVersion");
  j.num(1);
  j.out += ",\n  ";
  j.key("deviceProperties");
  j.out += "[],\n  ";
  j.key("record_shapes");
  j.num(config_.record_shapes);
  j.out += ",\n  ";
  j.key("profile_memory");
  j.num(config_.profile_memory);
  j.out += ",\n  ";
  j.key("with_stack");
  j.num(config_.with_stack);
  j.out += ",\n  ";
  j.key("displayTimeUnit");
  j.str("ms");
  j.out += ",\n  ";
  j.key("baseTimeNanoseconds");
  j.num(base_time_epoch_ns_);
  j.out += ",\n  ";
  j.key("traceName");
  j.str(trace_name);
  j.out += ",\n  ";
  j.key("traceEvents");
  j.out += "[";
  bool first = true;
  auto begin_event = [&]() {
    j.out += first ? "\n    {" : ",\n    {";
    first = false;
  };

  // Metadata: names and order for the CPU process, its threads, each GPU and its streams.
  std::set<uint64_t> threads;
  std::set<std::pair<int, int64_t>> streams;
  for (const auto& e : events_) {
    if (e.kind == EventKind::Kernel) streams.insert({e.device_index, e.stream});
    else threads.insert(e.thread);
  }
  for (const auto& m : memory_) threads.insert(m.thread);
  auto meta = [&](const char* name, const std::string& p, const std::string& tid, const char* arg, const std::string& value, bool quoted) {
    begin_event();
    j.key("ph"); j.str("M"); j.out += ", ";
    j.key("name"); j.str(name); j.out += ", ";
    j.key("pid"); j.out += p; j.out += ", ";
    j.key("tid"); j.out += tid; j.out += ", ";
    j.key("ts"); j.num(0); j.out += ", ";
    j.key("args"); j.out += "{"; j.key(arg);
    if (quoted) j.str(value); else j.out += value;
    j.out += "}}";
  };
  meta("process_name", std::to_string(pid), "0", "name", "ember", true);
  meta("process_labels", std::to_string(pid), "0", "labels", "CPU", true);
  meta("process_sort_index", std::to_string(pid), "0", "sort_index", "0", false);
  for (uint64_t t : threads) {
    meta("thread_name", std::to_string(pid), std::to_string(t), "name", "thread " + std::to_string(t), true);
    meta("thread_sort_index", std::to_string(pid), std::to_string(t), "sort_index", std::to_string(t), false);
  }
  std::set<int> devices;
  for (const auto& [dev, stream] : streams) devices.insert(dev);
  for (int d : devices) {
    meta("process_name", std::to_string(d), "0", "name", "GPU " + std::to_string(d), true);
    meta("process_labels", std::to_string(d), "0", "labels", "GPU " + std::to_string(d), true);
    meta("process_sort_index", std::to_string(d), "0", "sort_index", std::to_string(1000000 + d), false);
  }
  for (const auto& [dev, stream] : streams)
    meta("thread_name", std::to_string(dev), std::to_string(stream), "name", "stream " + std::to_string(stream), true);

  // Forward ops by sequence number (global, so unique across threads) for the fwdbwd arrows:
  // the innermost, i.e. last opened, of the ops that carry it.
  std::unordered_map<int64_t, size_t> forward_of;
  for (size_t i = 0; i < events_.size(); ++i) {
    const auto& e = events_[i];
    if (e.kind == EventKind::Op && e.sequence_nr >= 0 && e.fwd_thread == 0 && e.name.rfind("autograd::", 0) != 0)
      forward_of[e.sequence_nr] = i;
  }
  std::unordered_map<int64_t, size_t> runtime_by_correlation;
  for (size_t i = 0; i < events_.size(); ++i)
    if (events_[i].kind == EventKind::Runtime) runtime_by_correlation[events_[i].correlation] = i;

  // Events.
  for (size_t i = 0; i < events_.size(); ++i) {
    const auto& e = events_[i];
    const bool gpu = e.kind == EventKind::Kernel;
    begin_event();
    j.key("ph"); j.str("X"); j.out += ", ";
    j.key("cat"); j.str(category(e)); j.out += ", ";
    j.key("name"); j.str(e.name); j.out += ", ";
    j.key("pid"); j.num(gpu ? e.device_index : pid); j.out += ", ";
    j.key("tid"); j.num(gpu ? e.stream : int64_t(e.thread)); j.out += ", ";
    j.key("ts"); j.us(e.start_ns); j.out += ", ";
    j.key("dur"); j.us(e.duration_ns()); j.out += ", ";
    j.key("args"); j.out += "{";
    if (gpu) {
      j.key("External id"); j.num(e.launched_by >= 0 ? events_[size_t(e.launched_by)].id : 0); j.out += ", ";
      j.key("device"); j.num(e.device_index); j.out += ", ";
      j.key("stream"); j.num(e.stream); j.out += ", ";
      j.key("correlation"); j.num(e.correlation);
      if (!e.grid.empty()) { j.out += ", "; j.key("grid"); j.ints(e.grid); }
      if (!e.block.empty()) { j.out += ", "; j.key("block"); j.ints(e.block); }
    } else {
      j.key("External id"); j.num(e.id);
      if (e.kind == EventKind::Runtime) { j.out += ", "; j.key("correlation"); j.num(e.correlation); }
      if (e.sequence_nr >= 0) {
        j.out += ", "; j.key("Sequence number"); j.num(e.sequence_nr);
        j.out += ", "; j.key("Fwd thread id"); j.num(int64_t(e.fwd_thread));
      }
      if (!e.inputs.empty()) input_args(j, e);
      if (!e.stack.empty()) {
        std::string s;
        for (const auto& f : e.stack) s += (s.empty() ? "" : ";") + f;
        j.out += ", "; j.key("Call stack"); j.str(s);
      }
      if (e.flops > 0) { j.out += ", "; j.key("flops"); j.num(e.flops); }
    }
    j.out += "}}";

    // Flow arrows.
    if (e.kind == EventKind::Op && e.sequence_nr >= 0 && e.fwd_thread != 0 && e.name.rfind("autograd::", 0) != 0) {
      auto it = forward_of.find(e.sequence_nr);
      if (it != forward_of.end()) {
        const auto& f = events_[it->second];
        const int64_t flow = e.id;
        begin_event();
        j.key("ph"); j.str("s"); j.out += ", "; j.key("id"); j.num(flow); j.out += ", ";
        j.key("pid"); j.num(pid); j.out += ", "; j.key("tid"); j.num(int64_t(f.thread)); j.out += ", ";
        j.key("ts"); j.us(f.start_ns); j.out += ", "; j.key("cat"); j.str("fwdbwd"); j.out += ", ";
        j.key("name"); j.str("fwdbwd"); j.out += "}";
        begin_event();
        j.key("ph"); j.str("f"); j.out += ", "; j.key("id"); j.num(flow); j.out += ", ";
        j.key("pid"); j.num(pid); j.out += ", "; j.key("tid"); j.num(int64_t(e.thread)); j.out += ", ";
        j.key("ts"); j.us(e.start_ns); j.out += ", "; j.key("cat"); j.str("fwdbwd"); j.out += ", ";
        j.key("name"); j.str("fwdbwd"); j.out += ", "; j.key("bp"); j.str("e"); j.out += "}";
      }
    }
    if (gpu) {
      auto it = runtime_by_correlation.find(e.correlation);
      if (it != runtime_by_correlation.end()) {
        const auto& r = events_[it->second];
        begin_event();
        j.key("ph"); j.str("s"); j.out += ", "; j.key("id"); j.num(e.correlation); j.out += ", ";
        j.key("pid"); j.num(pid); j.out += ", "; j.key("tid"); j.num(int64_t(r.thread)); j.out += ", ";
        j.key("ts"); j.us(r.start_ns); j.out += ", "; j.key("cat"); j.str("ac2g"); j.out += ", ";
        j.key("name"); j.str("ac2g"); j.out += "}";
        begin_event();
        j.key("ph"); j.str("f"); j.out += ", "; j.key("id"); j.num(e.correlation); j.out += ", ";
        j.key("pid"); j.num(e.device_index); j.out += ", "; j.key("tid"); j.num(e.stream); j.out += ", ";
        j.key("ts"); j.us(e.start_ns); j.out += ", "; j.key("cat"); j.str("ac2g"); j.out += ", ";
        j.key("name"); j.str("ac2g"); j.out += ", "; j.key("bp"); j.str("e"); j.out += "}";
      }
    }
  }

  // Memory: torch's "[memory]" instants, and a counter per device so the trace shows the curve.
  for (const auto& m : memory_) {
    const bool cpu = m.device.type == DeviceType::CPU;
    begin_event();
    j.key("ph"); j.str("i"); j.out += ", ";
    j.key("cat"); j.str("cpu_instant_event"); j.out += ", ";
    j.key("s"); j.str("t"); j.out += ", ";
    j.key("name"); j.str("[memory]"); j.out += ", ";
    j.key("pid"); j.num(pid); j.out += ", ";
    j.key("tid"); j.num(int64_t(m.thread)); j.out += ", ";
    j.key("ts"); j.us(m.ts_ns); j.out += ", ";
    j.key("args"); j.out += "{";
    j.key("Total Reserved"); j.num(m.total_reserved); j.out += ", ";
    j.key("Total Allocated"); j.num(m.total_allocated); j.out += ", ";
    j.key("Bytes"); j.num(m.bytes); j.out += ", ";
    j.key("Device Id"); j.num(cpu ? -1 : m.device.index); j.out += ", ";
    j.key("Device Type"); j.num(int64_t(m.device.type)); j.out += ", ";
    j.key("Addr"); j.num(int64_t(m.addr)); j.out += "}}";
    begin_event();
    j.key("ph"); j.str("C"); j.out += ", ";
    j.key("name"); j.str(cpu ? "Memory (CPU)" : "Memory (" + m.device.str() + ")"); j.out += ", ";
    j.key("pid"); j.num(pid); j.out += ", ";
    j.key("ts"); j.us(m.ts_ns); j.out += ", ";
    j.key("args"); j.out += "{";
    j.key("Total Allocated"); j.num(m.total_allocated);
    if (!cpu) { j.out += ", "; j.key("Total Reserved"); j.num(m.total_reserved); }
    j.out += "}}";
  }
  j.out += "\n  ]\n}\n";
  return j.out;
}

void ProfilerResult::export_chrome_trace(const std::string& path) const {
  atomic_write_file(path, chrome_trace_json(path));
}

}  // namespace ember::profiler
