#pragma once
// Gradients shared by ops whose forward is a matrix product or an activation (src/ops/linalg.cpp,
// unary.cpp; the fused _addmm_epilogue in addmm_epilogue.cpp computes the same ones).
#include <string>

#include "ember/tensor.h"

namespace ember::product_grads {

// A matrix stored column-major (a t() of a contiguous one, e.g. linear's weight.t()): its
// gradient is computed in that layout too, (g^T m1)^T instead of m1^T g, so it arrives at the
// leaf with the leaf's own strides and AccumulateGrad takes it without a transposing copy.
bool column_major(const Tensor& m);
// For out = m1 @ m2 and its gradient g: grad m1 = g m2^H, grad m2 = m1^H g.
Tensor mat1_grad(const Tensor& g, const Tensor& m2, bool m1_column_major);
Tensor mat2_grad(const Tensor& g, const Tensor& m1, bool m2_column_major);
// g * gelu'(x) in differentiable ops (a backward that builds a graph: create_graph).
Tensor gelu_grad(const Tensor& g, const Tensor& x, const std::string& approximate);

}  // namespace ember::product_grads
