#pragma once
// Every CUDA runtime call is checked: a failure becomes ember::Error with torch's wording
// ("CUDA error: out of memory ..."), naming the call and where it was made.
#include <cuda_runtime_api.h>

namespace ember::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* expr, const char* file, int line);

}  // namespace ember::cuda

#define EMBER_CUDA_CHECK(expr)                                                     \
  do {                                                                             \
    cudaError_t ember_cuda_err_ = (expr);                                          \
    if (ember_cuda_err_ != cudaSuccess)                                            \
      ::ember::cuda::throw_cuda_error(ember_cuda_err_, #expr, __FILE__, __LINE__); \
  } while (0)

namespace ember::cuda {
// The answer of cudaEventQuery / cudaStreamQuery: true when done, false when the work is still
// queued (that "error" is cleared); anything else throws.
inline bool cuda_ready(cudaError_t err, const char* expr) {
  if (err == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  if (err != cudaSuccess) throw_cuda_error(err, expr, __FILE__, __LINE__);
  return true;
}
}  // namespace ember::cuda

// After a kernel launch: a bad configuration is reported here, faults in the kernel later.
#define EMBER_CUDA_CHECK_LAUNCH() EMBER_CUDA_CHECK(cudaGetLastError())
