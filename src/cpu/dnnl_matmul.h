#pragma once
// bfloat16 matrix products on oneDNN's matmul primitive: on a CPU with AMX (or AVX512-BF16) its
// kernels multiply bfloat16 directly, accumulate in float32 and round the result once, as
// PyTorch does; 512^3 runs in 0.10 ms where the float32 path (convert, sgemm, convert back)
// takes 0.8 ms. mm, bmm and addmm (so matmul, linear, einsum) of bfloat16 come here first
// (src/cpu/blas_kernels.cpp).
//
// Each function returns false, leaving out untouched, when it does not apply: no oneDNN in the
// build (EMBER_HAVE_DNNL 0), a CPU without native bfloat16 kernels, dtypes other than
// bfloat16, an empty product, or one so small that the float32 path is as fast. The caller
// then runs the float32 path. float16 always takes that path: oneDNN 2.6 has no float16 matmul
// on CPUs (it declines every shape).
#include "ember/tensor.h"

namespace ember::cpu::dnnl_matmul {

// out = alpha * (a @ b) + beta * out, with a (M, K) or (batch, M, K), b (K, N) or (batch, K, N)
// in any strides (expanded batches included) and out contiguous (M, N) or (batch, M, N). With
// beta == 0 out's old contents are ignored, NaN included.
bool gemm_into(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, const Scalar& beta);

// out = a @ b + bias for 2-d a, b and out as above and bias a vector of N values added to every
// row (addmm's self for linear): the bias is added inside oneDNN, saving a pass over out.
bool linear_into(Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias);

}  // namespace ember::cpu::dnnl_matmul
