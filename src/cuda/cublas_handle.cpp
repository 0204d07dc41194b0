// cuBLAS / cuBLASLt handles per (device, thread), pooled across threads, and the per-call
// workspace (see cublas_handle.h).
#include "cuda/cublas_handle.h"

#include <mutex>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/cuda_state.h"
#include "ember/core/caching_allocator.h"
#include "ember/core/errors.h"
#include "ember/ops.h"

namespace ember::cuda {

void throw_cublas_error(cublasStatus_t status, const char* expr, const char* file, int line) {
  throw Error(detail::cat("CUDA error: ", cublasGetStatusName(status), " when calling `", expr, "` (", file, ":", line, ")"));
}

namespace {

// Handles given back by threads that ended, per device. Never destroyed (see the header).
struct HandlePool {
  std::mutex mu;
  std::vector<cublasHandle_t> blas;
  std::vector<cublasLtHandle_t> lt;
};
HandlePool& pool(int device) {
  static auto* pools = new HandlePool[kMaxGpus];
  return pools[device];
}

// This thread's handles; returned to the pools when the thread ends.
struct ThreadHandles {
  cublasHandle_t blas[kMaxGpus] = {};
  cublasLtHandle_t lt[kMaxGpus] = {};
  ~ThreadHandles() {
    for (int d = 0; d < kMaxGpus; ++d) {
      if (!blas[d] && !lt[d]) continue;
      HandlePool& p = pool(d);
      std::lock_guard lock(p.mu);
      if (blas[d]) p.blas.push_back(blas[d]);
      if (lt[d]) p.lt.push_back(lt[d]);
    }
  }
};
ThreadHandles& thread_handles() {
  thread_local ThreadHandles handles;
  return handles;
}

void check_device(int device) {
  EMBER_CHECK(device >= 0 && device < gpu_count(), "cuBLAS: invalid device index ", device);
}

// torch's default cuBLAS workspace size (getChosenWorkspaceSize): 32 MiB from compute
// capability 9.0 on, 4096 * 1024 * 2 + 16 * 1024 * 8 bytes before.
size_t workspace_size(int device) {
  static size_t sizes[kMaxGpus] = {};
  static std::once_flag once[kMaxGpus];
  std::call_once(once[device], [&] {
    int major = 0;
    EMBER_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    sizes[device] = major >= 9 ? size_t(4096) * 8 * 1024 : size_t(4096) * 1024 * 2 + size_t(16) * 1024 * 8;
  });
  return sizes[device];
}

}  // namespace

cublasHandle_t cublas_handle(int device) {
  check_device(device);
  cublasHandle_t& h = thread_handles().blas[device];
  if (h) return h;
  {
    HandlePool& p = pool(device);
    std::lock_guard lock(p.mu);
    if (!p.blas.empty()) {
      h = p.blas.back();
      p.blas.pop_back();
      return h;
    }
  }
  cublasHandle_t created = nullptr;
  EMBER_CUBLAS_CHECK(cublasCreate(&created));  // binds the handle to the current device
  h = created;
  return h;
}

cublasLtHandle_t cublaslt_handle(int device) {
  check_device(device);
  cublasLtHandle_t& h = thread_handles().lt[device];
  if (h) return h;
  {
    HandlePool& p = pool(device);
    std::lock_guard lock(p.mu);
    if (!p.lt.empty()) {
      h = p.lt.back();
      p.lt.pop_back();
      return h;
    }
  }
  cublasLtHandle_t created = nullptr;
  EMBER_CUBLAS_CHECK(cublasLtCreate(&created));
  h = created;
  return h;
}

BlasSession::BlasSession(int device, bool with_workspace)
    : device_(device), handle_(cublas_handle(device)), stream_(current_cuda_stream(device)) {
  // cublasSetStream also resets the handle's workspace to cuBLAS's own: set ours after it.
  EMBER_CUBLAS_CHECK(cublasSetStream(handle_, stream_));
  if (!with_workspace) return;
  const size_t bytes = workspace_size(device);
  try {
    workspace_ = empty({int64_t(bytes)}, {.dtype = kUInt8, .device = Device(DeviceType::CUDA, int16_t(device))});
    workspace_bytes_ = bytes;
  } catch (const OutOfMemoryError&) {
    // No memory to spare: cuBLAS keeps the default workspace cublasSetStream gave back, and
    // cuBLASLt calls get none (algorithms that need no workspace).
    workspace_bytes_ = 0;
    return;
  }
  EMBER_CUBLAS_CHECK(cublasSetWorkspace(handle_, workspace_.data_ptr(), workspace_bytes_));
}

}  // namespace ember::cuda
