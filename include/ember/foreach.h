#pragma once
// Multi-tensor ops (torch._foreach_*): one call over a list of tensors, which a device runs as a
// few launches instead of one per tensor (CUDA: cuda/foreach_kernels.cu; elsewhere a loop).
// clip_grad_norm_ is built on them.
#include <vector>

#include "ember/core/scalar.h"
#include "ember/tensor.h"

namespace ember {

// The ord-norm (vector norm of all elements; ord 0, 1, 2, inf, -inf or any real p) of every
// tensor, each a 0-dim tensor of that tensor's dtype: torch._foreach_norm(tensors, ord).
std::vector<Tensor> _foreach_norm(TensorList tensors, double ord = 2);
// The same norms as one 1-D tensor; the tensors must be floating, of one dtype and on one device.
Tensor _foreach_norm_stacked(TensorList tensors, double ord = 2);
// Every tensor *= scale in place: torch._foreach_mul_(tensors, scale). A tensor scale is one
// element on the tensors' device (or a CPU scalar tensor) and is read there, without a sync.
void _foreach_mul_(TensorList tensors, const Tensor& scale);
void _foreach_mul_(TensorList tensors, const Scalar& scale);

}  // namespace ember
