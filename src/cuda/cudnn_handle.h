#pragma once
// cuDNN handles for the cuDNN convolutions (conv_cudnn.cpp), as cublas_handle.h's: one per
// (device, thread), created on the thread's first call on that device, given back to a
// per-device pool when the thread ends and never destroyed. cudnn_handle() binds the handle to
// the thread's current stream (cudnnSetStream) on every call.
//
// Compiled only where CMake found cuDNN (EMBER_CUDNN=1); without it this header is empty.
#if EMBER_CUDNN
#include <cudnn.h>

namespace ember::cuda {

[[noreturn]] void throw_cudnn_error(cudnnStatus_t status, const char* expr, const char* file, int line);

// This thread's handle for `device` (current: a GpuGuard is held), set to the current stream.
cudnnHandle_t cudnn_handle(int device);

}  // namespace ember::cuda

// Every cuDNN call is checked: "cuDNN error: CUDNN_STATUS_BAD_PARAM when calling `...` (file:line)".
#define EMBER_CUDNN_CHECK(expr)                                                        \
  do {                                                                                 \
    cudnnStatus_t ember_cudnn_status_ = (expr);                                        \
    if (ember_cudnn_status_ != CUDNN_STATUS_SUCCESS)                                   \
      ::ember::cuda::throw_cudnn_error(ember_cudnn_status_, #expr, __FILE__, __LINE__); \
  } while (0)

#endif  // EMBER_CUDNN
