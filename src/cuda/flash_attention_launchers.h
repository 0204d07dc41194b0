#pragma once
// Plain launch data for the CUDA flash attention kernels (flash_attention_kernels.cu);
// flash_attention_ops.cpp fills it. q, k, v, out and their gradients are contiguous
// [heads, T, head_dim] of one storage type (float16 or bfloat16, DTypeCode `code`); lse and
// the row terms are float [heads, Tq].
#include <cuda_runtime_api.h>

#include <cstdint>

namespace ember::cuda {

struct FlashAttentionLaunch {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* out = nullptr;  // forward: written; backward: read
  float* lse = nullptr;  // log-sum-exp of each query row's scaled scores (natural log)
  // backward
  const void* grad_out = nullptr;
  void* grad_q = nullptr;
  void* grad_k = nullptr;
  void* grad_v = nullptr;
  float* row_dot = nullptr;  // scratch: sum(grad_out * out) per query row
  float* grad_q_acc = nullptr;  // scratch: float accumulator of grad_q, [heads, Tq, head_dim], zeroed
  int64_t heads = 0;  // batch * heads
  int64_t tq = 0, tk = 0;
  int head_dim = 0;  // 64 or 128
  float scale = 1;
  bool causal = false;  // query i attends to keys j <= i (top-left aligned, as torch)
  int8_t code = 0;
  cudaStream_t stream = nullptr;
};

// Whether the kernels take this head dim / storage type.
bool flash_attention_supports(int head_dim, int8_t code);
void launch_flash_attention_forward(const FlashAttentionLaunch&);
void launch_flash_attention_backward(const FlashAttentionLaunch&);

}  // namespace ember::cuda
