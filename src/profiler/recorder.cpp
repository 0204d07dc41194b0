// The recording side of the profiler: sessions, per-thread buffers, and the hooks the
// dispatcher, the autograd engine, storages and record_function call.
#include "profiler/recorder.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>
#include <mutex>

#include "ember/autograd/node.h"
#include "ember/core/allocator.h"
#include "ember/core/backend.h"
#include "ember/core/caching_allocator.h"
#include "ember/core/errors.h"
#include "profiler/raw_events.h"

namespace ember::profiler::detail {

std::atomic<uint32_t> g_op_recording{0};

namespace {

std::mutex g_mu;                        // guards g_session and its buffer list
std::unique_ptr<RawSession> g_session;  // the recording session (null: none)
std::atomic<uint64_t> g_active{0};      // its id while it records
uint64_t g_next_session = 1;
std::atomic<int64_t> g_next_event_id{1};
std::atomic<int64_t> g_cpu_allocated{0};  // CPU bytes allocated (minus freed) while recording
// The session's settings, written before g_active is published (release) and read after it.
ProfilerConfig g_config;
bool g_gpu_tracing = false;
std::vector<std::string> (*g_stack_provider)() = nullptr;
GpuTracer* g_gpu_tracer = nullptr;

thread_local std::shared_ptr<ThreadBuffer> t_buffer;
// Handles of ops that pushed an external correlation id, so each push gets its pop.
thread_local std::vector<int64_t> t_pushed;

uint64_t os_thread_id() { return uint64_t(::syscall(SYS_gettid)); }

ThreadBuffer* buffer() {
  uint64_t id = g_active.load(std::memory_order_acquire);
  if (id == 0) return nullptr;
  ThreadBuffer* b = t_buffer.get();
  if (b && b->session == id) return b;
  std::lock_guard g(g_mu);
  if (!g_session || g_session->id != id) return nullptr;
  auto fresh = std::make_shared<ThreadBuffer>();
  fresh->session = id;
  fresh->os_tid = os_thread_id();
  fresh->events.reserve(1024);
  g_session->buffers.push_back(fresh);
  t_buffer = fresh;
  return fresh.get();
}

int64_t encode(uint64_t session, size_t index) { return int64_t((session & 0x7fffffffu) << 32) | int64_t(index); }


std::string int_list(ArrayRef<int64_t> v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

uint64_t current_thread_id() {
  static std::atomic<uint64_t> next{1};
  thread_local uint64_t id = next.fetch_add(1, std::memory_order_relaxed);
  return id;
}

void register_gpu_tracer(GpuTracer* tracer) { g_gpu_tracer = tracer; }
GpuTracer* gpu_tracer() { return g_gpu_tracer; }

// ---- events ----

int64_t begin_event(const char* static_name, std::string dynamic_name, EventKind kind, int64_t seq_nr,
                    uint64_t fwd_thread, std::vector<InputInfo>&& inputs) {
  ThreadBuffer* b = buffer();
  if (!b) return -1;
  RawEvent e;
  e.static_name = static_name;
  e.dynamic_name = std::move(dynamic_name);
  e.kind = kind;
  const int64_t id = g_next_event_id.fetch_add(1, std::memory_order_relaxed);
  e.id = id;
  e.seq_nr = seq_nr;
  e.fwd_thread = fwd_thread;
  e.inputs = std::move(inputs);
  if (g_config.with_stack && g_stack_provider) e.stack = g_stack_provider();
  bool push = g_gpu_tracing && kind == EventKind::Op;
  e.start_ns = now_ns();
  int64_t handle;
  {
    std::lock_guard g(b->mu);
    if (b->closed) return -1;
    size_t index = b->events.size();
    e.parent = b->open.empty() ? -1 : b->open.back();
    b->events.push_back(std::move(e));
    b->open.push_back(int32_t(index));
    handle = encode(b->session, index);
  }
  if (push) {
    g_gpu_tracer->push_external_id(id);
    t_pushed.push_back(handle);
  }
  return handle;
}

void end_event(int64_t handle) {
  if (handle < 0) return;
  int64_t t = now_ns();
  if (!t_pushed.empty() && t_pushed.back() == handle) {
    t_pushed.pop_back();
    if (g_gpu_tracer) g_gpu_tracer->pop_external_id();
  }
  ThreadBuffer* b = t_buffer.get();
  if (!b || int64_t(b->session & 0x7fffffffu) != (handle >> 32)) return;
  size_t index = size_t(handle & 0xffffffff);
  std::lock_guard g(b->mu);
  if (b->closed || index >= b->events.size()) return;
  b->events[index].end_ns = t;
  for (size_t k = b->open.size(); k-- > 0;) {
    if (b->open[k] == int32_t(index)) {
      b->open.erase(b->open.begin() + std::ptrdiff_t(k));
      break;
    }
  }
}

int64_t op_begin(const char* name, bool autograd, std::vector<InputInfo>&& inputs) {
  int64_t seq = autograd ? int64_t(autograd::peek_sequence_nr()) : -1;
  return begin_event(name, {}, EventKind::Op, seq, 0, std::move(inputs));
}

void op_end(int64_t handle) { end_event(handle); }

namespace {
thread_local const char* t_open_composite = nullptr;
}
bool is_open_composite(const char* name) { return t_open_composite && std::strcmp(t_open_composite, name) == 0; }
const char* swap_open_composite(const char* name) { return std::exchange(t_open_composite, name); }

bool any_requires_grad_for_record(const Tensor& t) {
  return t.defined() && t.requires_grad() && local_dispatch_state().grad_enabled;
}

// ---- inputs ----

void describe(std::vector<InputInfo>& out, const Tensor& t) {
  if (!t.defined()) return describe_none(out);
  InputInfo i;
  i.dims.assign(t.sizes().begin(), t.sizes().end());
  i.strides.assign(t.strides().begin(), t.strides().end());
  i.type = torch_cpp_type_name(t.dtype());  // torch's "Input type"
  out.push_back(std::move(i));
}
void describe(std::vector<InputInfo>& out, const std::optional<Tensor>& t) {
  if (!t) return describe_none(out);
  describe(out, *t);
}
void describe(std::vector<InputInfo>& out, ArrayRef<Tensor> ts) {
  InputInfo i;
  i.type = "TensorList";
  for (const auto& t : ts) i.list_dims.emplace_back(t.defined() ? t.sizes() : Shape{});
  out.push_back(std::move(i));
}
void describe(std::vector<InputInfo>& out, ArrayRef<std::optional<Tensor>> ts) {
  InputInfo i;
  i.type = "TensorList";
  for (const auto& t : ts) i.list_dims.emplace_back(t && t->defined() ? t->sizes() : Shape{});
  out.push_back(std::move(i));
}
void describe(std::vector<InputInfo>& out, const Scalar& s) {
  InputInfo i;
  i.type = "Scalar";
  if (s.is_bool()) {
    i.concrete = s.to<bool>() ? "True" : "False";
  } else if (s.is_integral()) {
    i.concrete = std::to_string(s.to<int64_t>());
  } else if (s.is_complex()) {
    i.concrete = "";
  } else {
    double v = s.to<double>();
    char buf[64];
    if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e16) std::snprintf(buf, sizeof buf, "%.0f.", v);
    else std::snprintf(buf, sizeof buf, "%g", v);
    i.concrete = buf;
  }
  out.push_back(std::move(i));
}
void describe(std::vector<InputInfo>& out, ArrayRef<int64_t> values) {
  InputInfo i;
  i.type = "ScalarList";
  i.concrete = int_list(values);
  out.push_back(std::move(i));
}
void describe_none(std::vector<InputInfo>& out) { out.emplace_back(); }

// ---- memory ----

void report_memory(const void* ptr, int64_t bytes, Device device) {
  ThreadBuffer* b = buffer();
  if (!b) return;
  MemoryEvent m;
  m.ts_ns = now_ns();
  m.thread = b->os_tid;
  m.addr = uintptr_t(ptr);
  m.bytes = bytes;
  m.device = device;
  if (device.type == DeviceType::CPU) {
    m.total_allocated = g_cpu_allocated.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  } else if (has_device_backend(device.type)) {
    DeviceMemoryStats s = device_backend(device.type).memory_stats(device.index < 0 ? 0 : device.index);
    m.total_allocated = s.allocated_bytes[kStatAll].current;
    m.total_reserved = s.reserved_bytes[kStatAll].current;
  }
  std::lock_guard g(b->mu);
  if (b->closed) return;
  m.event = b->open.empty() ? -1 : b->open.back();
  b->memory.push_back(m);
}

// ---- backward nodes ----

BackwardNodeScope::BackwardNodeScope(const std::string& node_name, int64_t seq_nr, uint64_t fwd_thread)
    : name_(node_name == "AccumulateGrad" ? "torch::autograd::AccumulateGrad" : node_name),
      seq_nr_(name_ == "torch::autograd::AccumulateGrad" ? -1 : seq_nr),
      fwd_thread_(fwd_thread) {
  outer_ = begin_event(nullptr, "autograd::engine::evaluate_function: " + name_, EventKind::Op, seq_nr_,
                       seq_nr_ >= 0 ? fwd_thread_ : 0, {});
}
BackwardNodeScope::~BackwardNodeScope() {
  end_apply();
  end_event(outer_);
}
void BackwardNodeScope::begin_apply(const std::vector<Tensor>& grads) {
  if (outer_ < 0) return;
  std::vector<InputInfo> inputs;
  if (recording_inputs())
    for (const auto& g : grads) describe(inputs, g);
  inner_ = begin_event(nullptr, name_, EventKind::Op, seq_nr_, seq_nr_ >= 0 ? fwd_thread_ : 0, std::move(inputs));
}
void BackwardNodeScope::end_apply() {
  end_event(inner_);
  inner_ = -1;
}

}  // namespace ember::profiler::detail

namespace ember::profiler {

using namespace detail;

void set_python_stack_provider(std::vector<std::string> (*provider)()) { g_stack_provider = provider; }
std::vector<std::string> current_python_stack() { return g_stack_provider ? g_stack_provider() : std::vector<std::string>{}; }

bool is_profiler_enabled() { return g_active.load(std::memory_order_acquire) != 0; }

void enable_profiler(const ProfilerConfig& config) {
  std::lock_guard g(g_mu);
  EMBER_CHECK(!g_session, "profiler: a profiling session is already running in this process "
                          "(profilers cannot be nested; stop the other one first)");
  auto s = std::make_unique<RawSession>();
  s->config = config;
  s->id = g_next_session++;
  g_config = config;
  g_gpu_tracing = false;
  if (config.cuda) {
    std::string why;
    if (!g_gpu_tracer) {
      s->warnings.push_back("ProfilerActivity.CUDA was asked for, but this build of ember has no CUDA backend; "
                            "only CPU activity is recorded");
    } else if (!g_gpu_tracer->start(&why)) {
      s->warnings.push_back("ProfilerActivity.CUDA: GPU activity cannot be traced here (" + why +
                            "); only CPU activity is recorded");
    } else {
      g_gpu_tracing = true;
    }
  }
  g_cpu_allocated.store(0);
  s->start_ns = now_ns();
  s->epoch_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::system_clock::now().time_since_epoch()).count();
  g_session = std::move(s);
  g_active.store(g_session->id, std::memory_order_release);
  uint32_t bits = 0;
  // CPU events are the frame kernels attach to, so a CUDA-only session records ops too (torch
  // records them as well and only hides them in the table).
  if (config.cpu || config.cuda) bits |= kRecordOps;
  if (config.record_shapes || config.with_flops) bits |= kRecordInputs;
  g_op_recording.fetch_or(bits);
  g_memory_reporter.store(config.profile_memory ? &report_memory : nullptr);
}

std::shared_ptr<ProfilerResult> disable_profiler() {
  std::unique_ptr<RawSession> s;
  {
    std::lock_guard g(g_mu);
    EMBER_CHECK(g_session, "profiler: no profiling session is running (start() was not called, or stop() was "
                           "called twice)");
    g_op_recording.fetch_and(~(kRecordOps | kRecordInputs));
    g_memory_reporter.store(nullptr);
    g_active.store(0, std::memory_order_release);
    s = std::move(g_session);
  }
  s->stop_ns = now_ns();
  if (g_gpu_tracing) {
    g_gpu_tracer->stop(s->activities, s->runtime_calls);
    g_gpu_tracing = false;
  }
  for (auto& b : s->buffers) {
    std::lock_guard g(b->mu);
    b->closed = true;
  }
  return build_result(*s);
}

// ---- record_function ----

int64_t record_function_enter(const std::string& name, EventKind kind) {
  if (!recording_ops()) return -1;
  return begin_event(nullptr, name, kind, -1, 0, {});
}
void record_function_exit(int64_t handle) { end_event(handle); }

RecordFunction::RecordFunction(const std::string& name) {
  if (recording_ops()) handle_ = begin_event(nullptr, name, EventKind::UserAnnotation, -1, 0, {});
}
void RecordFunction::end() {
  if (handle_ >= 0) end_event(handle_);
  handle_ = -1;
}

}  // namespace ember::profiler
