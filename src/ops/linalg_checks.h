#pragma once
// Argument checks and LAPACK-failure errors shared by the linalg ops (linalg_factor.cpp,
// linalg_decomp.cpp, linalg_norms.cpp), with PyTorch 2.x's messages.
#include "ember/tensor.h"

namespace ember::linalg_checks {

// A float32/float64 tensor of at least two dims: "linalg.inv: The input tensor A must have at
// least 2 dimensions." / "...: Expected a floating point or complex tensor as input. Got Long".
void check_matrices(const Tensor& A, const char* op, const char* name = "A");
// ... and square: "linalg.inv: A must be batches of square matrices, but they are 2 by 3 matrices"
void check_square(const Tensor& A, const char* op, const char* name = "A");
void check_floating(const Tensor& A, const char* op);

enum class Failure { Singular, SolveSingular, NotPositiveDefinite, LuSingular };
// Raises torch's error for the first nonzero LAPACK info (int32, batch shape), naming the
// batch element when the input was batched.
void check_info(const Tensor& info, const char* op, Failure kind);

}  // namespace ember::linalg_checks
