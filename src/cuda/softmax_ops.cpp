// The CUDA kernels of softmax and log_softmax, registered with the dispatcher. As the CPU kernel
// (src/cpu/softmax_kernels.cpp): `dtype` casts the input first, the output has the input's
// (cast) dtype, float16/bfloat16 compute in float. The kernels read their own dtype, so only
// a non-contiguous input is copied. Launchers: softmax_kernels.cu.
#include "cuda/cuda_state.h"
#include "cuda/reduce_launchers.h"
#include "ember/ops.h"
#include "ops/op_handles.h"
#include "ops/reduce_utils.h"

namespace ember::cuda {
namespace {

Tensor softmax_like(void (*launch)(const SoftmaxLaunch&), const Tensor& a, int64_t dim, std::optional<DType> dtype) {
  const int64_t d = reduce::wrap_dim(dim, a.dim());
  Tensor x = reduce::convert(a, dtype ? *dtype : a.dtype(), /*contig=*/true);
  Tensor y = empty(a.sizes(), {.dtype = x.dtype(), .device = a.device()});
  if (a.numel() == 0) return y;
  const int device = a.device().index;
  GpuGuard guard(device);
  SoftmaxLaunch L;
  L.in = x.data_ptr();
  L.out = y.data_ptr();
  L.code = int8_t(x.dtype());
  if (a.dim() > 0) {
    L.n = a.sizes()[d];
    for (int64_t i = 0; i < d; ++i) L.outer *= a.sizes()[i];
    for (int64_t i = d + 1; i < a.dim(); ++i) L.inner *= a.sizes()[i];
  }
  const GpuShape gs = gpu_shape(device);
  L.sms = gs.sms;
  L.threads_per_sm = gs.threads_per_sm;
  L.stream = current_cuda_stream(device);
  launch(L);
  return y;
}

Tensor softmax_cuda(const Tensor& a, int64_t dim, std::optional<DType> dtype) {
  return softmax_like(launch_softmax, a, dim, dtype);
}
Tensor log_softmax_cuda(const Tensor& a, int64_t dim, std::optional<DType> dtype) {
  return softmax_like(launch_log_softmax, a, dim, dtype);
}

EMBER_REGISTER_KERNEL(softmax, CUDA, softmax_cuda);
EMBER_REGISTER_KERNEL(log_softmax, CUDA, log_softmax_cuda);

}  // namespace
}  // namespace ember::cuda
