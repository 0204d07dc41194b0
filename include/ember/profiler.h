#pragma once
// ember::profiler (torch.profiler): where the time and memory of a program go.
//
// While a session is on, every dispatched op, every composite that torch names as an op
// (linear, conv2d, layer_norm, the losses), every autograd backward node and every user region
// is an event with its thread, start and end, input shapes and dtypes (record_shapes), the
// Python stack (with_stack, from Python) and the memory it allocated and freed
// (profile_memory); GPU kernels and copies come from the CUDA backend's tracer (CUPTI) with
// the op that launched them. In C++:
//
//   ember::profiler::Profiler prof({.record_shapes = true, .profile_memory = true});
//   prof.start();
//   { ember::profiler::RecordFunction region("forward"); loss = model->forward(x); }
//   loss.backward();
//   prof.stop();
//   std::cout << prof.result().table(ember::profiler::key_averages(prof.result()), {.sort_by = "self_cpu_time_total"});
//   prof.result().export_chrome_trace("trace.json");
//
// Names follow torch's, so existing tooling reads the trace (Perfetto, chrome://tracing,
// Holistic Trace Analysis): dispatched ops are "aten::<op>", backward nodes
// "autograd::engine::evaluate_function: <Node>" around "<Node>", user regions keep their name.
// With no session on, the dispatcher pays one relaxed atomic load per op.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/core/device.h"
#include "ember/dispatch/op_recording.h"  // InputInfo

namespace ember::profiler {

enum class ActivityType : uint8_t { CPU, CUDA };

struct ProfilerConfig {
  bool cpu = true;    // ProfilerActivity.CPU: ops, regions, backward nodes, memory
  bool cuda = false;  // ProfilerActivity.CUDA: kernels, copies and memsets on their streams
  bool record_shapes = false;
  bool profile_memory = false;
  bool with_stack = false;  // the Python stack of each op (only ops called from Python have one)
  bool with_flops = false;  // estimated FLOPs of matmuls, convolutions and elementwise mul/add
};

// What an event is; torch's trace categories.
enum class EventKind : uint8_t {
  Op,              // cpu_op: a dispatched op, a composite, a backward node
  UserAnnotation,  // user_annotation: record_function
  Kernel,          // kernel: GPU work (also memcpy / memset, see device_activity_kind)
  Runtime,         // cuda_runtime: the host call that launched GPU work
};

struct ProfilerEvent {
  int64_t id = 0;  // "External id": unique in the session
  std::string name;
  EventKind kind = EventKind::Op;
  int64_t start_ns = 0, end_ns = 0;  // the session's clock (ns since it started)
  uint64_t thread = 0;               // OS thread id (CPU events)
  int64_t sequence_nr = -1;          // autograd sequence number linking forward ops and nodes
  uint64_t fwd_thread = 0;           // the thread that ran the forward op (backward nodes)
  std::vector<InputInfo> inputs;
  std::vector<std::string> stack;    // innermost frame first: "file.py(12): func"
  int64_t flops = 0;
  // Tree on one thread: the innermost enclosing event and the ones directly inside.
  int64_t parent = -1;
  std::vector<int64_t> children;
  // Memory (profile_memory): bytes allocated minus freed while the event was innermost (self)
  // and while it or anything inside it ran (total), per device kind.
  int64_t self_cpu_memory = 0, cpu_memory = 0, self_device_memory = 0, device_memory = 0;
  // GPU time: for kernels their own duration; for CPU events the kernels they launched
  // directly (self) and with everything inside them (total).
  int64_t self_device_time_ns = 0, device_time_ns = 0;
  // GPU events: where they ran; the CPU event that launched them (-1: none recorded).
  DeviceType device_type = DeviceType::CPU;
  int device_index = -1;
  int64_t stream = 0;
  int64_t correlation = 0;   // links a Runtime call to the Kernel it launched
  int64_t launched_by = -1;  // index of the innermost CPU event open at the launch
  std::string device_activity_kind;  // "kernel", "gpu_memcpy", "gpu_memset"
  std::vector<int64_t> grid, block;  // kernels' launch shape

  int64_t duration_ns() const { return end_ns - start_ns; }
  int64_t self_cpu_time_ns = 0;  // duration minus the CPU children's durations
};

// One allocation (bytes > 0) or free (bytes < 0) while profile_memory was on, with the device
// allocator's totals after it ("Total Allocated" / "Total Reserved").
struct MemoryEvent {
  int64_t ts_ns = 0;
  uint64_t thread = 0;
  uintptr_t addr = 0;
  int64_t bytes = 0;
  int64_t total_allocated = 0, total_reserved = 0;
  Device device;
  int64_t event = -1;  // index of the innermost CPU event open on that thread (-1: none)
};

// key_averages(): events with the same key (name, plus input shapes or the top of the stack
// when asked) summed; averages derive from the sums and count.
struct EventAverage {
  std::string key;
  int64_t count = 0;
  int64_t cpu_time_total_ns = 0, self_cpu_time_total_ns = 0;
  int64_t device_time_total_ns = 0, self_device_time_total_ns = 0;
  int64_t cpu_memory = 0, self_cpu_memory = 0, device_memory = 0, self_device_memory = 0;
  int64_t flops = 0;
  std::string input_shapes;        // as torch prints them: "[[8, 64], [32, 64], [32]]"
  std::vector<std::string> stack;  // when grouped by stack
  bool is_device_event = false;    // a kernel / memcpy row (its time is device time)
  bool is_user_annotation = false;
  bool has_parent = false;         // some event of the group was inside another CPU event
};

struct TableOptions {
  std::string sort_by;  // any EventAverage time/memory/count name in torch's spelling, or ""
  int64_t row_limit = 100;
  int64_t max_name_column_width = 55;
  int64_t max_shapes_column_width = 80;
  int64_t max_src_column_width = 75;
  std::string header;
  bool top_level_events_only = false;
  std::string time_unit;  // "s", "ms", "us" or "" (each value picks its own)
};

class ProfilerResult {
 public:
  ProfilerResult(ProfilerConfig config, std::vector<ProfilerEvent> events, std::vector<MemoryEvent> memory,
                 int64_t duration_ns, int64_t base_time_epoch_ns, std::vector<std::string> warnings);
  const ProfilerConfig& config() const { return config_; }
  const std::vector<ProfilerEvent>& events() const { return events_; }
  const std::vector<MemoryEvent>& memory_events() const { return memory_; }
  int64_t duration_ns() const { return duration_ns_; }
  int64_t base_time_epoch_ns() const { return base_time_epoch_ns_; }
  const std::vector<std::string>& warnings() const { return warnings_; }
  // The device kind whose columns the table shows ("cuda"), or "" when no device was traced.
  std::string use_device() const;

  // Trace Event Format JSON (Perfetto, chrome://tracing), written atomically.
  void export_chrome_trace(const std::string& path) const;
  std::string chrome_trace_json(const std::string& trace_name = "") const;

 private:
  ProfilerConfig config_;
  std::vector<ProfilerEvent> events_;
  std::vector<MemoryEvent> memory_;
  int64_t duration_ns_;
  int64_t base_time_epoch_ns_;
  std::vector<std::string> warnings_;
};

// ---- the tables ----
// group_by_input_shape: one row per (name, input shapes); group_by_stack_n > 0: per (name,
// first n stack frames).
std::vector<EventAverage> key_averages(const ProfilerResult& result, bool group_by_input_shape = false,
                                       int group_by_stack_n = 0);
// One row per event (prof.events().table()).
std::vector<EventAverage> event_rows(const ProfilerResult& result);
// torch's table: Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time avg, the device
// columns when any device time was recorded, CPU Mem / Self CPU Mem (and device) with
// profile_memory, # of Calls, Input Shapes when recorded, Source Location with stacks, Total
// FLOPs with with_flops, and the "Self CPU time total" line.
std::string table(const std::vector<EventAverage>& rows, const TableOptions& options, const std::string& use_device,
                  bool profile_memory, bool with_flops);
// torch's number formats: "1.234ms" and "12.00 KB".
std::string format_time_us(double us);
std::string format_memory(int64_t bytes);

// ---- sessions ----
// A low-level session: collect from now until disable_profiler(). One at a time per process.
void enable_profiler(const ProfilerConfig& config);
std::shared_ptr<ProfilerResult> disable_profiler();
bool is_profiler_enabled();

// torch.profiler.schedule's actions and function.
enum class ProfilerAction { None, Warmup, Record, RecordAndSave };
using Schedule = std::function<ProfilerAction(int64_t step)>;
// Skips skip_first steps, then cycles: wait steps idle, warmup steps (collecting and thrown
// away), active steps recorded, the last of them RecordAndSave; repeat cycles (0 = forever).
Schedule schedule(int64_t wait, int64_t warmup, int64_t active, int64_t repeat = 0, int64_t skip_first = 0,
                  int64_t skip_first_wait = 0);

// torch.profiler.profile: start/stop (or a scope), step() advancing the schedule, and
// on_trace_ready called with each finished recording.
class Profiler {
 public:
  explicit Profiler(ProfilerConfig config = {}, Schedule schedule = nullptr,
                    std::function<void(Profiler&)> on_trace_ready = nullptr);
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  void start();
  void stop();
  void step();
  int64_t step_num() const { return step_num_; }
  ProfilerAction current_action() const { return action_; }
  // The last finished recording (throws when there is none yet).
  const ProfilerResult& result() const;
  std::shared_ptr<ProfilerResult> result_ptr() const { return result_; }

 private:
  void transition(ProfilerAction from, ProfilerAction to);
  void finish_recording(bool save);

  ProfilerConfig config_;
  Schedule schedule_;
  std::function<void(Profiler&)> on_trace_ready_;
  int64_t step_num_ = 0;
  ProfilerAction action_ = ProfilerAction::None;
  bool running_ = false;
  bool collecting_ = false;
  int64_t step_event_ = -1;
  std::shared_ptr<ProfilerResult> result_;
};

// ---- user regions ----
// torch.autograd.profiler.record_function as a scope: a "user_annotation" event around it.
// Free when no session is on.
class RecordFunction {
 public:
  explicit RecordFunction(const std::string& name);
  explicit RecordFunction(const char* name) : RecordFunction(std::string(name)) {}
  ~RecordFunction() { end(); }
  RecordFunction(const RecordFunction&) = delete;
  RecordFunction& operator=(const RecordFunction&) = delete;
  void end();  // closes the region early (idempotent)

 private:
  int64_t handle_ = -1;
};

// Handles for languages that cannot hold a scope (the Python binding): begin returns a handle
// (-1 when nothing is recorded), end closes it on the thread that opened it.
int64_t record_function_enter(const std::string& name, EventKind kind = EventKind::UserAnnotation);
void record_function_exit(int64_t handle);

// The Python binding installs this: the current Python stack, innermost first, or empty when
// the calling thread holds no interpreter frame.
void set_python_stack_provider(std::vector<std::string> (*provider)());
// The current Python stack from that provider (empty without one or outside Python).
std::vector<std::string> current_python_stack();

}  // namespace ember::profiler
