#pragma once
// cuBLAS and cuBLASLt handles for the CUDA GEMM kernels (blas_ops.cpp).
//
// Handles: one per (device, thread), created on the thread's first call on that device (cuBLAS
// handles are not safe to share between threads that call at once). When a thread ends, its
// handles go back to a per-device pool and the next new thread takes them, so a program that
// starts threads over and over creates only as many handles as it ever ran threads at once;
// they are never destroyed (torch's scheme: at process exit the driver may already be gone).
//
// Workspace: a BlasSession takes one from ember's caching allocator for every call, on the
// current stream, and sets it on the handle (cublasSetWorkspace, after cublasSetStream, which
// resets it); cuBLASLt calls get the same buffer. The allocator is stream-ordered, so the buffer
// returns to the cache when the session ends, while the GEMM is still queued, and is reused only
// by later work on the same stream: no per-stream map of workspaces, nothing held between calls,
// and memory_allocated() is back where it was after every product. The size is torch's default
// (32 MiB on compute capability 9.x and newer, 8 MiB + 128 KiB before); when even that cannot be
// had, cuBLAS keeps its own default workspace and cuBLASLt gets none.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>

#include "ember/tensor.h"

namespace ember::cuda {

[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* expr, const char* file, int line);

// This thread's handles for `device` (the device must be current: a GpuGuard is held).
cublasHandle_t cublas_handle(int device);
cublasLtHandle_t cublaslt_handle(int device);

// One cuBLAS call's context on `device` (current, under a GpuGuard): the handle bound to this
// thread's current stream, with a workspace unless told (level-1 calls such as dot need none).
// Keep it alive until the calls are queued.
class BlasSession {
 public:
  explicit BlasSession(int device, bool with_workspace = true);
  BlasSession(const BlasSession&) = delete;
  BlasSession& operator=(const BlasSession&) = delete;

  cublasHandle_t handle() const { return handle_; }
  cublasLtHandle_t lt() const { return cublaslt_handle(device_); }
  cudaStream_t stream() const { return stream_; }
  void* workspace() const { return workspace_bytes_ ? workspace_.data_ptr() : nullptr; }
  size_t workspace_bytes() const { return workspace_bytes_; }

 private:
  int device_;
  cublasHandle_t handle_;
  cudaStream_t stream_;
  Tensor workspace_;
  size_t workspace_bytes_ = 0;
};

}  // namespace ember::cuda

// Every cuBLAS / cuBLASLt call is checked, with torch's wording ("CUDA error:
// CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasGemmEx(...)`").
#define EMBER_CUBLAS_CHECK(expr)                                                        \
  do {                                                                                  \
    cublasStatus_t ember_cublas_status_ = (expr);                                       \
    if (ember_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                  \
      ::ember::cuda::throw_cublas_error(ember_cublas_status_, #expr, __FILE__, __LINE__); \
  } while (0)
