// The CUDA DeviceBackend (core/backend.h): devices, the current device, streams, events,
// generators, byte copies, memory statistics and pinned memory, registered at load time. On a
// machine without a driver or GPU it is registered all the same and reports 0 devices, so
// ember.cuda.is_available() is False and everything else runs as a CPU build.
#include <cuda_runtime_api.h>

#include <cstring>
#include <deque>
#include <mutex>

#include "cuda/cuda_check.h"
#include "cuda/cuda_memory.h"
#include "cuda/cuda_state.h"
#include "ember/core/backend.h"
#include "ember/core/caching_allocator.h"
#include "ember/core/errors.h"
#include "ember/core/generator.h"

namespace ember::cuda {
namespace {

int checked(int index) {
  EMBER_CHECK_INDEX(index >= 0 && index < gpu_count(), "CUDA error: invalid device ordinal ", index,
                    " (there are ", gpu_count(), " CUDA device(s))");
  return index;
}

class CudaBackend final : public DeviceBackend {
 public:
  DeviceType type() const override { return DeviceType::CUDA; }
  int device_count() const override { return gpu_count(); }
  int current_device() const override {
    EMBER_CHECK(gpu_count() > 0, "No CUDA GPUs are available");
    return current_gpu();
  }
  void set_device(int index) override { set_current_gpu(checked(index)); }
  void synchronize(int index) override {
    GpuGuard g(checked(index));
    EMBER_CUDA_CHECK(cudaDeviceSynchronize());
  }

  Stream current_stream(int index) const override { return current_stream_of(checked(index)); }
  void set_current_stream(Stream stream) override { set_current_stream_of(stream); }
  Stream new_stream(int index, int priority) override { return pooled_stream(checked(index), priority); }
  void synchronize_stream(Stream stream) override {
    GpuGuard g(stream.device.index);
    EMBER_CUDA_CHECK(cudaStreamSynchronize(stream_handle(stream)));
  }
  bool query_stream(Stream stream) const override {
    GpuGuard g(stream.device.index);
    return cuda_ready(cudaStreamQuery(stream_handle(stream)), "cudaStreamQuery");
  }
  int stream_priority(Stream stream) const override { return priority_of(stream); }

  Generator& default_generator(int index) override {
    // One per GPU; a deque keeps references stable as devices are first touched.
    static std::deque<Generator>* generators = [] {
      auto* d = new std::deque<Generator>;
      for (int i = 0; i < gpu_count(); ++i) d->emplace_back(Device(DeviceType::CUDA, int16_t(i)));
      return d;
    }();
    return (*generators)[size_t(checked(index))];
  }

  // Bytes between host and device or between devices, ordered on `stream`; returns once the
  // copy is done (copy_ makes the non_blocking copies itself).
  void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes,
                  Stream stream) override {
    if (nbytes == 0 || dst == src) return;
    GpuGuard g(stream.device.index);
    cudaStream_t s = stream_handle(stream);
    if (dst_device.is_cuda() && src_device.is_cuda() && dst_device.index != src_device.index)
      EMBER_CUDA_CHECK(cudaMemcpyPeerAsync(dst, dst_device.index, src, src_device.index, nbytes, s));
    else
      EMBER_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDefault, s));
    EMBER_CUDA_CHECK(cudaStreamSynchronize(s));
  }

  std::string version() const override {
    return std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10);
  }

  DeviceProperties properties(int index) override {
    cudaDeviceProp p;
    EMBER_CUDA_CHECK(cudaGetDeviceProperties(&p, checked(index)));
    DeviceProperties r;
    r.name = p.name;
    r.major = p.major;
    r.minor = p.minor;
    r.total_memory = int64_t(p.totalGlobalMem);
    r.multi_processor_count = p.multiProcessorCount;
    r.L2_cache_size = p.l2CacheSize;
    r.max_threads_per_multi_processor = p.maxThreadsPerMultiProcessor;
    r.warp_size = p.warpSize;
    r.regs_per_multiprocessor = p.regsPerMultiprocessor;
    r.is_integrated = p.integrated != 0;
    r.is_multi_gpu_board = p.isMultiGpuBoard != 0;
    // torch prints the UUID in the 8-4-4-4-12 form.
    char buf[40];
    const auto* u = reinterpret_cast<const unsigned char*>(p.uuid.bytes);
    std::snprintf(buf, sizeof buf, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
                  u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    r.uuid = buf;
    return r;
  }
  void mem_get_info(int index, size_t* free_bytes, size_t* total_bytes) override {
    GpuGuard g(checked(index));
    EMBER_CUDA_CHECK(cudaMemGetInfo(free_bytes, total_bytes));
  }

  // ---- events
  void* create_event(int index, bool enable_timing, bool blocking) override {
    GpuGuard g(checked(index));
    unsigned flags = (enable_timing ? 0u : unsigned(cudaEventDisableTiming)) | (blocking ? unsigned(cudaEventBlockingSync) : 0u);
    cudaEvent_t e;
    EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&e, flags));
    return e;
  }
  void destroy_event(void* event) override { (void)cudaEventDestroy(static_cast<cudaEvent_t>(event)); }
  void record_event(void* event, Stream stream) override {
    GpuGuard g(stream.device.index);
    EMBER_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event), stream_handle(stream)));
  }
  void wait_event(void* event, Stream stream) override {
    GpuGuard g(stream.device.index);
    EMBER_CUDA_CHECK(cudaStreamWaitEvent(stream_handle(stream), static_cast<cudaEvent_t>(event), 0));
  }
  bool query_event(void* event) override {
    return cuda_ready(cudaEventQuery(static_cast<cudaEvent_t>(event)), "cudaEventQuery");
  }
  void synchronize_event(void* event) override { EMBER_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event))); }
  double event_elapsed_ms(void* start, void* end) override {
    float ms = 0;
    EMBER_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start), static_cast<cudaEvent_t>(end)));
    return ms;
  }

  // ---- memory
  DeviceMemoryStats memory_stats(int index) override { return device_allocator(checked(index)).stats(); }
  void reset_peak_memory_stats(int index) override { device_allocator(checked(index)).reset_peak_stats(); }
  void reset_accumulated_memory_stats(int index) override { device_allocator(checked(index)).reset_accumulated_stats(); }
  void empty_cache() override { empty_all_caches(); }
  void record_stream(void* data, Stream stream) override {
    if (data) device_allocator(checked(stream.device.index)).record_stream(data, stream.id);
  }
  CachingAllocator& caching_allocator(int index) override { return device_allocator(checked(index)); }
  DataPtr allocate_pinned(size_t nbytes) override { return ::ember::cuda::allocate_pinned(nbytes); }
  bool is_pinned(const void* host_ptr) const override { return is_pinned_ptr(host_ptr); }

  // ---- graphs
  std::unique_ptr<DeviceGraph> new_graph() override { return make_cuda_graph(); }
  int64_t graph_pool_handle(int) override { return new_graph_pool_id(); }
  bool is_capturing(Stream stream) const override { return stream_is_capturing(stream); }
};

const bool registered = [] {
  static CudaBackend backend;
  register_device_backend(DeviceType::CUDA, &backend);
  return true;
}();

}  // namespace
}  // namespace ember::cuda
