#pragma once
// The CUDA multi-tensor ops as plain data (foreach_kernels.cu launches, foreach_ops.cpp fills):
// a batch of up to kForeachBatch dense tensors of one dtype, passed as the kernel's argument
// (torch's multi_tensor_apply). Each tensor gets blocks [first_block[k], first_block[k + 1]).
#include <cuda_runtime_api.h>

#include <cstdint>

namespace ember::cuda {

inline constexpr int kForeachBatch = 48;
struct ForeachBatch {
  void* data[kForeachBatch] = {};
  int64_t numel[kForeachBatch] = {};
  int64_t first_block[kForeachBatch + 1] = {};
  int count = 0;
  int8_t dtype = 0;  // DTypeCode of every tensor: float32, float64, float16 or bfloat16
  cudaStream_t stream = nullptr;
};
// The blocks a tensor of n values gets in a batch.
int64_t foreach_blocks(int64_t n);

// Which norm: sum |x| (1), sqrt(sum x^2) (2), max |x| (inf; NaN propagates).
enum ForeachNorm : int { kForeachNormL1, kForeachNormL2, kForeachNormInf };
// out[k] (k < b.count; float for float32/float16/bfloat16 tensors, double for float64) = the
// norm of tensor k. partial: first_block[count] scratch values of out's type.
void launch_foreach_norm(const ForeachBatch& b, int kind, void* partial, void* out);
// Every tensor *= *scale (one value of the compute type: float, or double for float64).
void launch_foreach_mul(const ForeachBatch& b, const void* scale);

}  // namespace ember::cuda
