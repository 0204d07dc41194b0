#pragma once
// GradScaler's two ops on CUDA as plain data (amp_kernels.cu launches, amp_ops.cpp fills).
// inv_scale, found_inf, scale and growth_tracker stay on the device: no launch waits for the host.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace ember::cuda {

// One gradient: multiplied in place by *inv_scale; *found_inf = 1 when a value is not finite.
void launch_non_finite_check_and_unscale(void* grad, int64_t numel, int8_t dtype, float* found_inf,
                                         const float* inv_scale, cudaStream_t stream);
void launch_update_scale(float* scale, int32_t* growth_tracker, const float* found_inf, double growth_factor,
                         double backoff_factor, int64_t growth_interval, cudaStream_t stream);

}  // namespace ember::cuda
