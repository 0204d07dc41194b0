#pragma once
// The multi-tensor ops as loops of single-tensor ops: the kernels of every backend without its
// own (CompositeBackend), and the CUDA kernels' fallback for norms they do not fuse.
#include "ember/tensor.h"

namespace ember {
Tensor foreach_norm_stacked_loop(TensorList tensors, double ord);
void foreach_mul_loop(TensorList tensors, const Tensor& scale);
}  // namespace ember
