#pragma once
// The output size of one pooled dim (PyTorch's pooling_output_shape: padding, dilation,
// ceil_mode), in one place for everything that needs it: the argument checks
// (src/nn/functional/pool.cpp, pool_nd.cpp) and the kernels that size their outputs by it
// (src/cpu/pool_kernels.cpp, src/cuda/pool_ops.cpp).
#include <cstdint>

namespace ember {

inline int64_t pool_out_size(int64_t in, int64_t k, int64_t pad, int64_t s, int64_t dil, bool ceil_mode) {
  int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  // ceil_mode: the last window must start inside the input or its left padding
  if (ceil_mode && (out - 1) * s >= in + pad) --out;
  return out;
}

}  // namespace ember
