// ember::cuda (include/ember/cuda.h): torch.cuda's API over the registered CUDA DeviceBackend.
// Nothing here knows CUDA itself, so every build has it; without the backend or a GPU the
// queries answer as torch's do on such a machine and the rest throws naming the reason.
#include "ember/cuda.h"

#include "ember/core/errors.h"
#include "ember/core/generator.h"

namespace ember::cuda {
namespace {

DeviceBackend* backend_or_null() {
  return has_device_backend(DeviceType::CUDA) ? &device_backend(DeviceType::CUDA) : nullptr;
}

// The backend, with at least one GPU; torch's messages for the two ways that fails.
DeviceBackend& gpu_backend() {
  DeviceBackend* b = backend_or_null();
  EMBER_CHECK(b != nullptr, "Torch not compiled with CUDA enabled (this build of ember has no CUDA backend)");
  EMBER_CHECK(b->device_count() > 0, "No CUDA GPUs are available");
  return *b;
}

int resolve(DeviceBackend& b, int device) {
  if (device < 0) return b.current_device();
  EMBER_CHECK_INDEX(device < b.device_count(), "Invalid device id ", device, ": there are ", b.device_count(),
                    " CUDA device(s)");
  return device;
}

}  // namespace

bool is_built() { return backend_or_null() != nullptr; }
bool is_available() { return device_count() > 0; }
int device_count() {
  DeviceBackend* b = backend_or_null();
  return b ? b->device_count() : 0;
}
int current_device() { return gpu_backend().current_device(); }
void set_device(int device) {
  DeviceBackend& b = gpu_backend();
  b.set_device(resolve(b, device));
}
void synchronize(int device) {
  DeviceBackend& b = gpu_backend();
  b.synchronize(resolve(b, device));
}
DeviceProperties get_device_properties(int device) {
  DeviceBackend& b = gpu_backend();
  return b.properties(resolve(b, device));
}
std::string get_device_name(int device) { return get_device_properties(device).name; }
std::pair<int, int> get_device_capability(int device) {
  DeviceProperties p = get_device_properties(device);
  return {p.major, p.minor};
}
std::string version() {
  DeviceBackend* b = backend_or_null();
  return b ? b->version() : std::string();
}

// torch seeds lazily: without a GPU these are no-ops, never errors.
void manual_seed(uint64_t seed) {
  if (!is_available()) return;
  DeviceBackend& b = gpu_backend();
  b.default_generator(b.current_device()).manual_seed(seed);
}
void manual_seed_all(uint64_t seed) {
  for (int i = 0; i < device_count(); ++i) device_backend(DeviceType::CUDA).default_generator(i).manual_seed(seed);
}

// ---- memory. Without a GPU the statistics are zero, as torch's on such a machine.
DeviceMemoryStats memory_stats_raw(int device) {
  if (!is_available()) return {};
  DeviceBackend& b = gpu_backend();
  return b.memory_stats(resolve(b, device));
}
int64_t memory_allocated(int device) { return memory_stats_raw(device).allocated_bytes[0].current; }
int64_t max_memory_allocated(int device) { return memory_stats_raw(device).allocated_bytes[0].peak; }
int64_t memory_reserved(int device) { return memory_stats_raw(device).reserved_bytes[0].current; }
int64_t max_memory_reserved(int device) { return memory_stats_raw(device).reserved_bytes[0].peak; }
void reset_peak_memory_stats(int device) {
  DeviceBackend& b = gpu_backend();
  b.reset_peak_memory_stats(resolve(b, device));
}
void reset_accumulated_memory_stats(int device) {
  DeviceBackend& b = gpu_backend();
  b.reset_accumulated_memory_stats(resolve(b, device));
}
std::vector<std::pair<std::string, int64_t>> memory_stats(int device) {
  if (!is_available()) return {};
  return memory_stats_dict(memory_stats_raw(device));
}
std::string memory_summary(int device, bool abbreviated) {
  int index = 0;
  if (is_available()) index = resolve(gpu_backend(), device);
  return ::ember::memory_summary(memory_stats_raw(device), index, abbreviated);
}
void empty_cache() {
  if (is_available()) gpu_backend().empty_cache();
}
void record_memory_history(bool enabled, size_t max_entries, RecordContext when, bool clear_history,
                           StackContextFn context) {
  DeviceBackend& b = gpu_backend();
  for (int i = 0; i < b.device_count(); ++i) {
    b.caching_allocator(i).record_history(enabled, max_entries, context, when, clear_history);
  }
}
std::vector<AllocatorSnapshot> memory_snapshot() {
  if (!is_available()) return {};
  DeviceBackend& b = gpu_backend();
  std::vector<AllocatorSnapshot> out;
  for (int i = 0; i < b.device_count(); ++i) out.push_back(b.caching_allocator(i).memory_snapshot());
  return out;
}
std::pair<size_t, size_t> mem_get_info(int device) {
  DeviceBackend& b = gpu_backend();
  size_t free_bytes = 0, total = 0;
  b.mem_get_info(resolve(b, device), &free_bytes, &total);
  return {free_bytes, total};
}

// ---- streams
Stream current_stream(int device) {
  DeviceBackend& b = gpu_backend();
  return b.current_stream(resolve(b, device));
}
Stream default_stream(int device) {
  DeviceBackend& b = gpu_backend();
  return Stream{Device(DeviceType::CUDA, int16_t(resolve(b, device))), 0};
}
Stream new_stream(int device, int priority) {
  DeviceBackend& b = gpu_backend();
  return b.new_stream(resolve(b, device), priority);
}
void set_stream(Stream stream) {
  EMBER_CHECK(stream.device.is_cuda(), "set_stream: expected a CUDA stream, got one of ", stream.device.str());
  gpu_backend().set_current_stream(stream);
}
bool query_stream(Stream stream) { return gpu_backend().query_stream(stream); }
void synchronize_stream(Stream stream) { gpu_backend().synchronize_stream(stream); }

// ---- events
Event::Event(bool enable_timing, bool blocking, bool interprocess) : enable_timing_(enable_timing), blocking_(blocking) {
  EMBER_CHECK(!interprocess, "Event: interprocess events are not supported by ember");
}
Event::~Event() {
  if (event_) device_backend(DeviceType::CUDA).destroy_event(event_);
}
Event::Event(Event&& o) noexcept
    : event_(std::exchange(o.event_, nullptr)), device_(o.device_), enable_timing_(o.enable_timing_), blocking_(o.blocking_) {}
Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    if (event_) device_backend(DeviceType::CUDA).destroy_event(event_);
    event_ = std::exchange(o.event_, nullptr);
    device_ = o.device_;
    enable_timing_ = o.enable_timing_;
    blocking_ = o.blocking_;
  }
  return *this;
}
void Event::record() { record(current_stream()); }
void Event::record(Stream stream) {
  DeviceBackend& b = gpu_backend();
  if (!event_) {
    event_ = b.create_event(stream.device.index, enable_timing_, blocking_);
    device_ = stream.device;
  }
  EMBER_CHECK(stream.device == device_, "Event device ", device_.str(), " does not match recording stream's device ",
              stream.device.str());
  b.record_event(event_, stream);
}
void Event::wait() { wait(current_stream()); }
void Event::wait(Stream stream) {
  if (event_) gpu_backend().wait_event(event_, stream);  // an unrecorded event has nothing to wait for
}
bool Event::query() const { return event_ ? gpu_backend().query_event(event_) : true; }
void Event::synchronize() const {
  if (event_) gpu_backend().synchronize_event(event_);
}
double Event::elapsed_time(const Event& end) const {
  EMBER_CHECK(enable_timing_ && end.enable_timing_, "Both events must be created with argument 'enable_timing=True'.");
  EMBER_CHECK(event_ && end.event_, "Both events must be recorded before calculating elapsed time.");
  return gpu_backend().event_elapsed_ms(event_, end.event_);
}

// ---- graphs
CUDAGraph::CUDAGraph() = default;
CUDAGraph::~CUDAGraph() = default;

void CUDAGraph::capture_begin(int64_t pool, const std::string& capture_error_mode) {
  int mode = 0;
  if (capture_error_mode == "global") mode = 0;
  else if (capture_error_mode == "thread_local") mode = 1;
  else if (capture_error_mode == "relaxed") mode = 2;
  else
    EMBER_CHECK_VALUE(false, "CUDAGraph.capture_begin: capture_error_mode must be 'global', 'thread_local' or "
                             "'relaxed', got '", capture_error_mode, "'");
  DeviceBackend& b = gpu_backend();
  if (!impl_) impl_ = b.new_graph();
  device_ = b.current_device();
  impl_->capture_begin(b.current_stream(device_), pool, mode);
}
void CUDAGraph::capture_end() {
  EMBER_CHECK(impl_, "CUDAGraph.capture_end: no capture is in progress (call capture_begin first)");
  impl_->capture_end();
}
void CUDAGraph::replay() {
  EMBER_CHECK(impl_, "CUDAGraph.replay: the graph holds no capture (capture_begin and capture_end first)");
  impl_->replay(gpu_backend().current_stream(device_));
}
void CUDAGraph::reset() {
  if (impl_) impl_->reset();
}
int64_t CUDAGraph::pool() const { return impl_ ? impl_->pool() : 0; }

int64_t graph_pool_handle() {
  DeviceBackend& b = gpu_backend();
  return b.graph_pool_handle(b.current_device());
}
bool is_current_stream_capturing() {
  DeviceBackend* b = backend_or_null();
  if (!b || b->device_count() == 0) return false;
  return b->is_capturing(b->current_stream(b->current_device()));
}

}  // namespace ember::cuda
