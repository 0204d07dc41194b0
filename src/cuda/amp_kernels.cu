// CUDA kernels of GradScaler's ops: the CPU kernels' semantics (src/cpu/amp_kernels.cpp),
// multiplication in the compute type (float for float16/bfloat16), found_inf written as a plain
// store of 1.0f (every writer stores the same value, so the race is benign and needs no atomic).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>

#include "cuda/amp_launchers.h"
#include "cuda/cuda_check.h"
#include "cuda/elementwise.cuh"

namespace ember::cuda {
namespace {

constexpr int kThreads = 256;

template <class S> __global__ void unscale_kernel(S* g, int64_t n, float* found_inf, const float* inv_scale) {
  using C = std::conditional_t<std::is_same_v<S, double>, double, float>;
  const float inv = *inv_scale;
  bool bad = false;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    C v = convert<C>(g[i]);
    bad |= !isfinite(v);
    if (inv != 1.0f) g[i] = convert<S>(v * C(inv));
  }
  if (bad) *found_inf = 1.0f;
}

__global__ void update_scale_kernel(float* scale, int32_t* tracker, const float* found_inf, double growth_factor,
                                    double backoff_factor, int64_t growth_interval) {
  if (*found_inf > 0.0f) {
    *scale = float(double(*scale) * backoff_factor);
    *tracker = 0;
    return;
  }
  const int32_t successful = *tracker + 1;
  if (successful == growth_interval) {
    const float grown = float(double(*scale) * growth_factor);
    if (isfinite(grown)) *scale = grown;
    *tracker = 0;
  } else {
    *tracker = successful;
  }
}

}  // namespace

void launch_non_finite_check_and_unscale(void* grad, int64_t numel, int8_t dtype, float* found_inf,
                                         const float* inv_scale, cudaStream_t stream) {
  if (numel == 0) return;
  const unsigned blocks = unsigned(std::min<int64_t>((numel + kThreads - 1) / kThreads, 4096));
  visit_storage<kStoreFloat>(dtype, "_amp_foreach_non_finite_check_and_unscale_", [&]<class S>() {
    unscale_kernel<S><<<blocks, kThreads, 0, stream>>>(static_cast<S*>(grad), numel, found_inf, inv_scale);
  });
  EMBER_CUDA_CHECK_LAUNCH();
}

void launch_update_scale(float* scale, int32_t* growth_tracker, const float* found_inf, double growth_factor,
                         double backoff_factor, int64_t growth_interval, cudaStream_t stream) {
  update_scale_kernel<<<1, 1, 0, stream>>>(scale, growth_tracker, found_inf, growth_factor, backoff_factor,
                                           growth_interval);
  EMBER_CUDA_CHECK_LAUNCH();
}

}  // namespace ember::cuda
