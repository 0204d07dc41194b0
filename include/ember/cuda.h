#pragma once
// ember::cuda: torch.cuda's device, stream, event and memory API in C++ (Python: ember.cuda).
// Every call goes through the registered CUDA DeviceBackend (core/backend.h), so this header
// and its implementation exist in every build: without the CUDA backend, or without a GPU,
// is_available() is false, the counts and statistics are zero, and calls that need a GPU throw.
// `device` arguments of -1 mean the current device.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ember/core/backend.h"
#include "ember/core/caching_allocator.h"

namespace ember::cuda {

bool is_built();      // this library was compiled with the CUDA backend
bool is_available();  // built, a driver answered, and there is at least one GPU
int device_count();
int current_device();
void set_device(int device);
void synchronize(int device = -1);
std::string get_device_name(int device = -1);
DeviceProperties get_device_properties(int device = -1);
std::pair<int, int> get_device_capability(int device = -1);
// The CUDA runtime version this build targets ("13.0"), empty when built without CUDA
// (torch.version.cuda is None then).
std::string version();

// Seeds the default generator of the current GPU / of every GPU.
void manual_seed(uint64_t seed);
void manual_seed_all(uint64_t seed);

// ---- memory (the caching allocator; torch's names and meanings)
int64_t memory_allocated(int device = -1);
int64_t max_memory_allocated(int device = -1);
int64_t memory_reserved(int device = -1);
int64_t max_memory_reserved(int device = -1);
void reset_peak_memory_stats(int device = -1);
void reset_accumulated_memory_stats(int device = -1);
DeviceMemoryStats memory_stats_raw(int device = -1);
std::vector<std::pair<std::string, int64_t>> memory_stats(int device = -1);
std::string memory_summary(int device = -1, bool abbreviated = false);
void empty_cache();
std::pair<size_t, size_t> mem_get_info(int device = -1);  // (free, total) bytes

// ---- memory history and snapshots (torch.cuda.memory._record_memory_history / _snapshot)
// Every GPU's allocator starts (or stops) recording, as torch's (which ignores its device
// argument too); see CachingAllocator::record_history. Throws without a GPU, as torch.
void record_memory_history(bool enabled, size_t max_entries, RecordContext when, bool clear_history,
                           StackContextFn context);
// One per GPU, in device order: its segments and its history. Empty without a GPU.
std::vector<AllocatorSnapshot> memory_snapshot();

// ---- streams and events
// The stream that kernels of `device` are queued on by this thread.
Stream current_stream(int device = -1);
Stream default_stream(int device = -1);
// A new stream (priority: lower numbers are more urgent, as CUDA's; 0 is the default).
Stream new_stream(int device = -1, int priority = 0);
void set_stream(Stream stream);
bool query_stream(Stream stream);
void synchronize_stream(Stream stream);

// torch.cuda.Event: created lazily on the device of its first record().
class Event {
 public:
  explicit Event(bool enable_timing = false, bool blocking = false, bool interprocess = false);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;

  void record();  // on the current stream of the current device
  void record(Stream stream);
  void wait();  // makes the current stream wait
  void wait(Stream stream);
  bool query() const;  // true when the recorded work has finished (or nothing was recorded)
  void synchronize() const;
  // Milliseconds between this event's record and end's (both recorded, timing enabled).
  double elapsed_time(const Event& end) const;
  bool recorded() const { return event_ != nullptr; }
  Device device() const { return device_; }

 private:
  void* event_ = nullptr;
  Device device_{DeviceType::CUDA, -1};
  bool enable_timing_, blocking_;
};

// ---- graphs (torch.cuda.CUDAGraph, torch.cuda.graph_pool_handle)
// Captures the work the current stream of the current GPU queues between capture_begin and
// capture_end (that stream must not be the default one: see python/ember/cuda/graphs.py for the
// side stream torch.cuda.graph switches to), then replay() runs it again as one launch on the
// current stream. Tensors allocated during the capture live in the graph's memory pool and are
// what each replay writes; inputs are fed by copying into the tensors the capture read.
// Inside a capture, anything that waits for the device (.item(), host copies, synchronize) fails
// and invalidates it, and random numbers are refused (a replay would repeat them).
class CUDAGraph {
 public:
  CUDAGraph();
  ~CUDAGraph();
  CUDAGraph(const CUDAGraph&) = delete;
  CUDAGraph& operator=(const CUDAGraph&) = delete;
  // pool: 0 for a pool of this graph's own, or graph_pool_handle() / another graph's pool() to
  // share one (graphs replayed in capture order may share memory). capture_error_mode: "global",
  // "thread_local" or "relaxed" (cudaStreamCaptureMode).
  void capture_begin(int64_t pool = 0, const std::string& capture_error_mode = "global");
  void capture_end();
  void replay();
  void reset();
  int64_t pool() const;

 private:
  std::unique_ptr<DeviceGraph> impl_;
  int device_ = -1;
};
int64_t graph_pool_handle();
// Whether the current stream of the current GPU is being captured (false without a GPU).
bool is_current_stream_capturing();

}  // namespace ember::cuda
