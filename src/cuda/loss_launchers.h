#pragma once
// Plain launch data for the CUDA fused cross entropy with class-index targets (loss_kernels.cu);
// loss_ops.cpp fills it. x is a contiguous (m, classes) tensor of DTypeCode `code`; "C" is the
// compute type (float for float32/float16/bfloat16, double for float64): weight, the per-row
// results and the gradient scalars are in C.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace ember::cuda {

struct CrossEntropyLaunch {
  const void* x = nullptr;
  const int64_t* target = nullptr;
  const void* weight = nullptr;  // classes entries of C, or null (all 1)
  int64_t m = 0, classes = 0;
  int64_t ignore_index = -100;
  double label_smoothing = 0;
  int8_t code = 0;
  cudaStream_t stream = nullptr;
  // forward: per-row loss and the weight of the row's target (0 when ignored), m entries of C
  void* row_loss = nullptr;
  void* row_weight = nullptr;
  // backward: dx (x's dtype); grad is m entries of C (reduction none) or one (mean, sum);
  // weight_sum (mean only) the sum of row_weight, one C on the device
  void* dx = nullptr;
  const void* grad = nullptr;
  bool grad_per_row = false;
  const void* weight_sum = nullptr;
};
void launch_cross_entropy(const CrossEntropyLaunch&);
// Only row_weight: the weights of the targets (for mean's divisor in the backward).
void launch_cross_entropy_target_weights(const CrossEntropyLaunch&);
void launch_cross_entropy_backward(const CrossEntropyLaunch&);

}  // namespace ember::cuda
