#pragma once
// What the CUDA optimizer updates need, as plain data (optim_kernels.cu launches it,
// optim_ops.cpp fills it): each parameter's flat tensors, batched, and the rule's hyperparameters. The
// step count stays on the device (a float in `step`), so no update waits for the host.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace ember::cuda {

struct OptimTensors {
  void* param = nullptr;
  const void* grad = nullptr;
  void* state[3] = {};  // the rule's state tensors, in the order its launcher names; null when off
  const float* step = nullptr;  // the step count, already incremented for this update
  int64_t numel = 0;
  int8_t dtype = 0;  // DTypeCode: float32, float64, float16 or bfloat16 (computed in float32)
  cudaStream_t stream = nullptr;
};

// state: exp_avg, exp_avg_sq, max_exp_avg_sq (amsgrad)
struct AdamRule {
  double lr, beta1, beta2, eps, weight_decay;
  bool amsgrad, maximize, decoupled;
};
// state: momentum_buffer (momentum != 0)
struct SGDRule {
  double lr, momentum, dampening, weight_decay;
  bool nesterov, maximize, first_step;
};
// state: sum
struct AdagradRule {
  double lr, lr_decay, weight_decay, eps;
  bool maximize;
};
// state: square_avg, momentum_buffer (momentum > 0), grad_avg (centered)
struct RMSpropRule {
  double lr, alpha, eps, weight_decay, momentum;
  bool centered, maximize;
};

// Up to kOptimBatch parameters of one dtype updated by one launch (torch's multi_tensor_apply):
// the list travels as the kernel's argument (under the 4 KiB limit), and each block finds its
// parameter from first_block. A step of a model with a hundred parameter tensors is then a few
// launches instead of a hundred.
inline constexpr int kOptimBatch = 40;
struct OptimBatch {
  OptimTensors t[kOptimBatch];
  int64_t first_block[kOptimBatch + 1] = {};  // parameter k's blocks: [first_block[k], first_block[k + 1])
  int count = 0;
};
// The blocks a parameter of n values gets in a batch (each walks its share with a block-stride loop).
int64_t optim_blocks(int64_t n);

void launch_adam_update(const OptimBatch& b, const AdamRule& r);
void launch_sgd_update(const OptimBatch& b, const SGDRule& r);
void launch_adagrad_update(const OptimBatch& b, const AdagradRule& r);
void launch_rmsprop_update(const OptimBatch& b, const RMSpropRule& r);

}  // namespace ember::cuda
