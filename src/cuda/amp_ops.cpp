// GradScaler's ops on CUDA (op_list.h, section "mixed precision"; checked in
// src/amp/grad_scaler_ops.cpp): one kernel per gradient on the current stream, nothing read back.
// A gradient that is not one dense run goes through a contiguous copy written back after.
#include "cuda/amp_launchers.h"
#include "cuda/cuda_state.h"
#include "ember/ops.h"
#include "ops/dense_run.h"
#include "ops/op_handles.h"

namespace ember::cuda {
namespace {

void non_finite_check_and_unscale(TensorList grads, const Tensor& found_inf, const Tensor& inv_scale) {
  const int device = inv_scale.device().index;
  GpuGuard guard(device);
  cudaStream_t stream = current_cuda_stream(device);
  for (const Tensor& g : grads) {
    DenseRun run(g);
    launch_non_finite_check_and_unscale(run.data(), g.numel(), int8_t(g.dtype()), static_cast<float*>(found_inf.data_ptr()),
                                        static_cast<const float*>(inv_scale.data_ptr()), stream);
    run.write_back();
  }
}

Tensor update_scale(const Tensor& scale, const Tensor& growth_tracker, const Tensor& found_inf, double growth_factor,
                    double backoff_factor, int64_t growth_interval) {
  const int device = scale.device().index;
  GpuGuard guard(device);
  launch_update_scale(static_cast<float*>(scale.data_ptr()), static_cast<int32_t*>(growth_tracker.data_ptr()),
                      static_cast<const float*>(found_inf.data_ptr()), growth_factor, backoff_factor, growth_interval,
                      current_cuda_stream(device));
  return scale;
}

}  // namespace

EMBER_REGISTER_KERNEL(_amp_foreach_non_finite_check_and_unscale_, CUDA, non_finite_check_and_unscale);
EMBER_REGISTER_KERNEL(_amp_update_scale_, CUDA, update_scale);

}  // namespace ember::cuda
