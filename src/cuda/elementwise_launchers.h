#pragma once
// The launchers the .cu files export, one per op (or op form), called by the host side with
// an ElementwiseArgs. The op families come from op_list.h's X-macros, so a new op of a family
// gets its CUDA kernel by adding its formula.
#include "cuda/elementwise_args.h"

#define EMBER_OP(name, ...)
#include "ops/op_list.h"
#undef EMBER_OP

namespace ember::cuda {

#define EMBER_CUDA_DECLARE(n) void launch_##n(const ElementwiseArgs&);
EMBER_UNARY_FLOAT_OPS(EMBER_CUDA_DECLARE)
EMBER_UNARY_KEEP_OPS(EMBER_CUDA_DECLARE)
EMBER_BINARY_ARITH_OPS(EMBER_CUDA_DECLARE)
EMBER_COMPARE_OPS(EMBER_CUDA_DECLARE)
EMBER_UNARY_SPECIAL_OPS(EMBER_CUDA_DECLARE)  // special_kernels.cu
#undef EMBER_CUDA_DECLARE

// param_f[0] / param_i[0]: alpha
void launch_add(const ElementwiseArgs&);
void launch_div_true(const ElementwiseArgs&);
void launch_div_trunc(const ElementwiseArgs&);
void launch_div_floor(const ElementwiseArgs&);
void launch_logical_not(const ElementwiseArgs&);
void launch_bitwise_not(const ElementwiseArgs&);
void launch_isnan(const ElementwiseArgs&);
void launch_isinf(const ElementwiseArgs&);
void launch_isfinite(const ElementwiseArgs&);
void launch_gelu(const ElementwiseArgs&);
void launch_gelu_tanh(const ElementwiseArgs&);
void launch_gelu_backward(const ElementwiseArgs&);
void launch_gelu_tanh_backward(const ElementwiseArgs&);
void launch_tanh_backward(const ElementwiseArgs&);
void launch_sigmoid_backward(const ElementwiseArgs&);
void launch_silu_backward(const ElementwiseArgs&);
void launch_threshold_backward(const ElementwiseArgs&);  // param_f[0]: threshold
void launch_leaky_relu(const ElementwiseArgs&);  // param_f[0]: slope
void launch_nan_to_num(const ElementwiseArgs&);  // param_f[0..2]: nan, posinf, neginf
// clamp with bounds by value: param_i[0] bit 0 = has lower, bit 1 = has upper; bounds in
// param_f/param_i [1], [2]
void launch_clamp(const ElementwiseArgs&);
// clamp with tensor bounds: 3 inputs (x, lo, hi), or 2 with param_i[0] = 1 (lo) / 2 (hi)
void launch_clamp_tensor(const ElementwiseArgs&);
void launch_lerp(const ElementwiseArgs&);         // 3 inputs
void launch_lerp_scalar(const ElementwiseArgs&);  // 2 inputs, param_f[0]: weight
void launch_round_decimals(const ElementwiseArgs&);  // param_f[0]: 10^|d|, param_i[0]: d < 0
// copy with conversion (one input of any dtype into the output's dtype)
void launch_copy(const ElementwiseArgs&);
// fill: no input; param_f[0] / param_i[0] the value
void launch_fill(const ElementwiseArgs&);
// where(cond, a, b): inputs cond (bool), a, b of the output's dtype
void launch_where(const ElementwiseArgs&);
// masked_fill_: output self, inputs (self, mask); param value
void launch_masked_fill(const ElementwiseArgs&);
// special_kernels.cu: param_i[0] = n for polygamma; two inputs for the others
void launch_polygamma(const ElementwiseArgs&);
void launch_igamma(const ElementwiseArgs&);
void launch_igammac(const ElementwiseArgs&);
void launch_standard_gamma_grad(const ElementwiseArgs&);

}  // namespace ember::cuda
