#pragma once
// Shared between the linalg source files, not public: solve with B always a (batch of)
// matrices (no vector-right-hand-side rule), batch dims broadcast.
#include "ember/tensor.h"

namespace ember::linalg_internal {

Tensor solve_matrices(const Tensor& A, const Tensor& B, const char* op);

}  // namespace ember::linalg_internal
