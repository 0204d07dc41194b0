#pragma once
// The CUDA runtime state ember keeps: how many GPUs answered, the current device, streams
// (ids <-> cudaStream_t) and this thread's current stream per device. Generic code sees these
// through the DeviceBackend (cuda_backend.cpp); kernels ask for current_cuda_stream().
#include <cuda_runtime_api.h>

#include <cstdint>

#include "ember/core/backend.h"

namespace ember::cuda {

inline constexpr int kMaxGpus = 64;
// Streams are pooled as torch's: per device and priority, kStreamsPerPool streams created on
// first use and handed out round-robin, so programs that make a Stream per step stay bounded.
inline constexpr int kStreamsPerPool = 32;
inline constexpr int kPriorityLevels = 2;  // 0 (default) and high

// 0 when there is no driver or no GPU (probed once; never throws).
int gpu_count();
// The calling thread's current device (cudaGetDevice).
int current_gpu();
void set_current_gpu(int index);

// The cudaStream_t behind a Stream: id 0 is the device's default (legacy) stream, others
// come from the pools.
cudaStream_t stream_handle(Stream stream);
Stream current_stream_of(int device);
void set_current_stream_of(Stream stream);
cudaStream_t current_cuda_stream(int device);
// A pooled stream of `device` with `priority` (<= -1 is high; 0 normal).
Stream pooled_stream(int device, int priority);
int priority_of(Stream stream);

// Makes `index` the current device for the guard's lifetime (no-op when it already is).
class GpuGuard {
 public:
  explicit GpuGuard(int index);
  ~GpuGuard();
  GpuGuard(const GpuGuard&) = delete;
  GpuGuard& operator=(const GpuGuard&) = delete;

 private:
  int previous_;
};

}  // namespace ember::cuda
