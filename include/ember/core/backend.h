#pragma once
// The contract a device backend fills in, beside its allocator (core/allocator.h) and its
// kernels (registered per op with the dispatcher): how many devices there are, which one is
// current on this thread (what DeviceGuard switches), how to wait for queued work, its
// streams, its default random generators and its byte copies to, from and within the device.
// PyTorch splits the same duties over c10::impl::DeviceGuardImplInterface, the generators and
// the copy kernels. Generic code (ops, optim, nn, data, serialize) reaches devices only through
// this interface and dispatched ops, never through a backend's own headers.
//
// The CPU registers the trivial implementation (one device, work done when a call returns, one
// stream, memcpy); CUDA registers its own (src/cuda/), a test device its own
// (tests/cpp/test_device.cpp).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "ember/core/allocator.h"
#include "ember/core/device.h"

namespace ember {

class Generator;
struct DeviceMemoryStats;  // ember/core/caching_allocator.h
class CachingAllocator;

// What torch.cuda.get_device_properties reports.
struct DeviceProperties {
  std::string name;
  int major = 0, minor = 0;  // compute capability
  int64_t total_memory = 0;  // bytes
  int multi_processor_count = 0;
  int64_t L2_cache_size = 0;  // bytes
  int max_threads_per_multi_processor = 0;
  int warp_size = 0;
  int regs_per_multiprocessor = 0;
  bool is_integrated = false, is_multi_gpu_board = false;
  std::string uuid;
};

// A queue of work on one device. id 0 is the device's default stream; other ids are the
// backend's to assign (CUDA: the cudaStream_t behind it).
struct Stream {
  Device device{DeviceType::CPU, 0};
  int64_t id = 0;
  bool operator==(const Stream&) const = default;
};

// A graph of device work (torch.cuda.CUDAGraph's engine): the kernels and copies queued on one
// stream between capture_begin and capture_end are recorded instead of run, and replay() runs
// them all as one launch. Memory the captured work allocates comes from a private pool (`pool`:
// a handle from DeviceBackend::graph_pool_handle or another graph's pool(), 0 for a new one)
// that outlives the capture, so replays find their tensors where the capture put them.
// mode: how strictly the capture forbids other calls that would break it, as
// cudaStreamCaptureMode: 0 global, 1 thread_local, 2 relaxed.
class DeviceGraph {
 public:
  virtual ~DeviceGraph() = default;
  virtual void capture_begin(Stream stream, int64_t pool, int mode) = 0;
  virtual void capture_end() = 0;
  virtual void replay(Stream stream) = 0;
  // Drops the captured graph and this graph's share of its pool.
  virtual void reset() = 0;
  virtual int64_t pool() const = 0;
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  virtual DeviceType type() const = 0;

  // ---- devices and the current device (the device guard)
  virtual int device_count() const = 0;
  // The device "cuda" without an index means on this thread.
  virtual int current_device() const = 0;
  virtual void set_device(int index) = 0;

  // ---- waiting: every stream of the device has finished its queued work
  virtual void synchronize(int index) = 0;

  // ---- streams
  virtual Stream current_stream(int index) const = 0;
  virtual void set_current_stream(Stream stream) = 0;
  // A new stream (priority: lower is more urgent, as CUDA's).
  virtual Stream new_stream(int index, int priority = 0) = 0;
  virtual void synchronize_stream(Stream stream) = 0;
  // True when the stream has no unfinished work.
  virtual bool query_stream(Stream stream) const = 0;

  // ---- random numbers: one default generator per device, seeded by manual_seed
  virtual Generator& default_generator(int index) = 0;

  // ---- bytes: copies between host memory and this backend's devices, or within them, queued
  // on `stream` (a device of this backend). Either side may be a CPU pointer.
  virtual void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes,
                          Stream stream) = 0;

  // ---- the rest is optional: an accelerator with streams, events and a caching allocator
  // fills it in (CUDA); the defaults say the device type lacks it.
  // The toolkit version the backend was built with ("13.0" for CUDA; torch.version.cuda).
  virtual std::string version() const { return {}; }
  virtual DeviceProperties properties(int index);
  // (free, total) bytes of the device (torch.cuda.mem_get_info).
  virtual void mem_get_info(int index, size_t* free_bytes, size_t* total_bytes);

  // Events (torch.cuda.Event): opaque handles ordered on streams.
  virtual void* create_event(int index, bool enable_timing, bool blocking);
  virtual void destroy_event(void* event);
  virtual void record_event(void* event, Stream stream);
  virtual void wait_event(void* event, Stream stream);  // later work on stream waits for the event
  virtual bool query_event(void* event);
  virtual void synchronize_event(void* event);
  virtual double event_elapsed_ms(void* start, void* end);
  virtual int stream_priority(Stream stream) const;

  // The caching allocator: statistics (torch.cuda.memory_stats and friends) and controls.
  virtual DeviceMemoryStats memory_stats(int index);
  virtual void reset_peak_memory_stats(int index);
  virtual void reset_accumulated_memory_stats(int index);
  virtual void empty_cache();
  // The memory at `data` (a pointer the device allocator returned) is in use on `stream` too:
  // it is not reused until the work queued there so far is done (Tensor.record_stream).
  virtual void record_stream(void* data, Stream stream);
  // The caching allocator of a device itself, for what goes beyond the statistics: its history
  // and detailed snapshots (torch.cuda.memory._record_memory_history / _snapshot).
  virtual CachingAllocator& caching_allocator(int index);

  // Page-locked host memory the device copies from and to asynchronously (Tensor.pin_memory).
  virtual DataPtr allocate_pinned(size_t nbytes);
  virtual bool is_pinned(const void* host_ptr) const;

  // Graphs (torch.cuda.graphs): a new, empty graph; a new memory pool handle for graphs to share;
  // whether work queued on `stream` is being captured now.
  virtual std::unique_ptr<DeviceGraph> new_graph();
  virtual int64_t graph_pool_handle(int index);
  virtual bool is_capturing(Stream stream) const;
};

// The backend registered for `type`; throws naming the device type when there is none
// (e.g. "cuda" in a build without CUDA). The CPU's is always there.
DeviceBackend& device_backend(DeviceType type);
bool has_device_backend(DeviceType type);
// Registers (or, with nullptr, removes) the backend of a device type; the CPU's stays.
void register_device_backend(DeviceType type, DeviceBackend* backend);

// `device` with its index filled in (the current device of its type when it has none).
Device resolve_device(Device device);
// Waits for every queued operation on the device (torch.cuda.synchronize).
void synchronize(Device device);
// The default generator of a device: the CPU's is default_generator().
Generator& default_generator(Device device);
// Copies nbytes between any two devices; the backend of the non-CPU side does it (on its
// current stream). dst and src may overlap only when they are the same pointer.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes);

// Makes `device` the current device of its type for the guard's lifetime (c10::DeviceGuard);
// a device without an index, or a CPU device, changes nothing.
class DeviceGuard {
 public:
  explicit DeviceGuard(Device device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  Device original_device() const { return original_; }

 private:
  Device original_;
  bool active_ = false;
};

// Makes `stream` its device's current stream (and that device current) for the guard's
// lifetime (torch.cuda.stream(s)).
class StreamGuard {
 public:
  explicit StreamGuard(Stream stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  DeviceGuard device_guard_;
  Stream original_;
};

}  // namespace ember
