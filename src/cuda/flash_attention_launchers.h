#pragma once
// Plain launch data for the CUDA flash attention kernels (flash_attention_kernels.cu);
// flash_attention_ops.cpp fills it. q, k, v, out and their gradients are [heads, T, head_dim]
// of one storage type (float16 or bfloat16, DTypeCode `code`); lse and the row terms are float
// [heads, Tq]. The inputs (q, k, v, out, grad_out) may be strided views: head h of a [B, H, T, D]
// view starts at (h / H) * outer + (h % H) * inner and its rows are `row` elements apart (a
// GPT's heads split out of one [B, T, 3C] projection need no copy); the gradients the kernels
// write are contiguous.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace ember::cuda {

// Where a strided input's heads and rows lie, in elements (all multiples of 8: 16-byte loads).
struct HeadLayout {
  int64_t outer = 0, inner = 0, row = 0;
};

struct FlashAttentionLaunch {
  HeadLayout q_at, k_at, v_at, out_at, grad_out_at;
  int64_t inner_heads = 1;  // H: head h is (h / H, h % H) of the leading dims
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
