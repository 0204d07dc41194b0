#pragma once
// The special functions' CUDA launchers (special_kernels.cu), registered by special_ops.cpp.
#include "cuda/elementwise_args.h"

#define EMBER_OP(name, ...)
#include "ops/op_list.h"
#undef EMBER_OP

namespace ember::cuda {

#define EMBER_CUDA_DECLARE(n) void launch_##n(const ElementwiseArgs&);
EMBER_UNARY_SPECIAL_OPS(EMBER_CUDA_DECLARE)
#undef EMBER_CUDA_DECLARE
void launch_polygamma(const ElementwiseArgs&);  // param_i[0]: n
void launch_igamma(const ElementwiseArgs&);
void launch_igammac(const ElementwiseArgs&);
void launch_standard_gamma_grad(const ElementwiseArgs&);

}  // namespace ember::cuda
