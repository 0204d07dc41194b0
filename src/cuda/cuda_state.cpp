// Devices, the current device and streams (see cuda_state.h).
#include "cuda/cuda_state.h"

#include <atomic>
#include <mutex>

#include "cuda/cuda_check.h"
#include "ember/core/errors.h"

namespace ember::cuda {

void throw_cuda_error(cudaError_t err, const char* expr, const char* file, int line) {
  // A call that breaks a graph capture fails at once and says why, not in CUDA's words alone.
  const bool capture = err == cudaErrorStreamCaptureUnsupported || err == cudaErrorStreamCaptureInvalidated ||
                       err == cudaErrorStreamCaptureImplicit || err == cudaErrorStreamCaptureUnjoined ||
                       err == cudaErrorStreamCaptureIsolation || err == cudaErrorStreamCaptureMerge ||
                       err == cudaErrorStreamCaptureUnmatched || err == cudaErrorStreamCaptureWrongThread;
  if (capture)
    throw Error(detail::cat("CUDA error: ", cudaGetErrorString(err), " (", expr, " at ", file, ":", line,
                            "): this operation is not allowed while a CUDA graph is being captured: it waits for the "
                            "device or reads back to the host (.item(), .cpu(), printing, a copy from pageable "
                            "memory, synchronize), and the capture is now invalid"));
  // torch's wording, then where: an asynchronous fault may surface at a later call.
  throw Error(detail::cat("CUDA error: ", cudaGetErrorString(err),
                          "\nCUDA kernel errors might be asynchronously reported at some other API call, so the "
                          "stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\n(",
                          expr, " at ", file, ":", line, ")"));
}

int gpu_count() {
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      (void)cudaGetLastError();  // no driver or no device: a CPU-only machine, not an error
      return 0;
    }
    return n > kMaxGpus ? kMaxGpus : n;
  }();
  return count;
}

int current_gpu() {
  // Every path to a GPU asks for the current device first: a CPU-only machine stops here with
  // torch's message instead of a runtime error code.
  EMBER_CHECK(gpu_count() > 0, "No CUDA GPUs are available (ember was built with CUDA, but no driver or GPU answered)");
  int d = 0;
  EMBER_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

void set_current_gpu(int index) {
  EMBER_CHECK_INDEX(index >= 0 && index < gpu_count(), "CUDA error: invalid device ordinal ", index, " (there are ",
                    gpu_count(), " CUDA device(s))");
  EMBER_CUDA_CHECK(cudaSetDevice(index));
}

GpuGuard::GpuGuard(int index) : previous_(current_gpu()) {
  if (index != previous_) EMBER_CUDA_CHECK(cudaSetDevice(index));
}
GpuGuard::~GpuGuard() {
  int now = -1;
  if (cudaGetDevice(&now) == cudaSuccess && now != previous_) (void)cudaSetDevice(previous_);
}

namespace {

struct StreamPool {
  std::once_flag created;
  cudaStream_t streams[kStreamsPerPool] = {};
  std::atomic<uint32_t> next{0};
};
StreamPool& pool(int device, int level) {
  static StreamPool pools[kMaxGpus][kPriorityLevels];
  StreamPool& p = pools[device][level];
  std::call_once(p.created, [&] {
    GpuGuard g(device);
    int least = 0, greatest = 0;
    EMBER_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    int priority = level == 0 ? least : greatest;
    // Non-blocking, as torch's pooled streams: no implicit ordering with the default stream.
    for (auto& s : p.streams) EMBER_CUDA_CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, priority));
  });
  return p;
}

int64_t& current_id(int device) {
  thread_local int64_t ids[kMaxGpus] = {};
  return ids[device];
}

void check_stream(Stream s) {
  EMBER_CHECK(s.device.is_cuda(), "expected a CUDA stream, got one of device ", s.device.str());
  EMBER_CHECK_INDEX(s.device.index >= 0 && s.device.index < gpu_count(), "stream of invalid device ", s.device.str());
  EMBER_CHECK(s.id >= 0 && s.id <= int64_t(kPriorityLevels) * kStreamsPerPool, "invalid CUDA stream id ", s.id);
}

}  // namespace

cudaStream_t stream_handle(Stream s) {
  check_stream(s);
  if (s.id == 0) return nullptr;  // the legacy default stream
  int64_t k = s.id - 1;
  return pool(s.device.index, int(k / kStreamsPerPool)).streams[k % kStreamsPerPool];
}

Stream current_stream_of(int device) { return Stream{Device(DeviceType::CUDA, int16_t(device)), current_id(device)}; }
void set_current_stream_of(Stream s) {
  check_stream(s);
  current_id(s.device.index) = s.id;
}
cudaStream_t current_cuda_stream(int device) { return stream_handle(current_stream_of(device)); }

Stream pooled_stream(int device, int priority) {
  int level = priority < 0 ? 1 : 0;
  StreamPool& p = pool(device, level);
  uint32_t slot = p.next.fetch_add(1) % kStreamsPerPool;
  return Stream{Device(DeviceType::CUDA, int16_t(device)), 1 + int64_t(level) * kStreamsPerPool + slot};
}

int priority_of(Stream s) {
  check_stream(s);
  // The two levels ember pools: normal (0) and high (reported as -1, torch's usual request).
  return (s.id == 0 || (s.id - 1) / kStreamsPerPool == 0) ? 0 : -1;
}

}  // namespace ember::cuda
