#pragma once
// The block -> tensor lookup of the multi-tensor launches (optim_kernels.cu, foreach_kernels.cu):
// a batch gives its tensor k the blocks [first_block[k], first_block[k + 1]), and each block
// finds its tensor, its first element and the stride of its block-stride loop there.
#include <cstdint>

namespace ember::cuda {

struct BlockShare {
  int k;
  int64_t first, stride;
};
// Batch: count tensors and their first_block table (count + 1 entries).
template <class Batch> __device__ __forceinline__ BlockShare block_share(const Batch& b) {
  int k = 0;
  while (k + 1 < b.count && int64_t(blockIdx.x) >= b.first_block[k + 1]) ++k;
  const int64_t blocks = b.first_block[k + 1] - b.first_block[k];
  return {k, (int64_t(blockIdx.x) - b.first_block[k]) * blockDim.x + threadIdx.x, blocks * blockDim.x};
}

}  // namespace ember::cuda
