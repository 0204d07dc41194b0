#pragma once
// Type promotion and casting rules shared by every backend (TensorIter on the CPU, the CUDA
// iterator later) and by the ops' own checks: one definition of PyTorch's rules.
#include <vector>

#include "ember/ops.h"

namespace ember {

// The dtype an op over these operands computes in, honouring wrapped numbers and 0-dim tensors
// (PyTorch's three tiers: dimensioned tensors > 0-dim tensors > wrapped numbers).
DType compute_result_type(const std::vector<Tensor>& operands);

}  // namespace ember
