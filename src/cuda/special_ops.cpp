// The special functions' CUDA kernels, registered with the dispatcher with the CPU kernels'
// dtype rules (cpu/special_kernels.cpp): integers compute in the default float dtype, except
// _standard_gamma_grad, which takes floating inputs only.
#include "cuda/elementwise_host.h"
#include "cuda/elementwise_launchers.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cuda {
namespace {

EMBER_UNARY_SPECIAL_OPS(EMBER_CUDA_UNARY_FLOAT_KERNELS)

Tensor polygamma_cuda(int64_t n, const Tensor& a) {
  Tensor out;
  return run_elementwise(out, {a}, {.op_name = "polygamma", .int_to_float = true}, launch_polygamma,
                         [&](ElementwiseArgs& args) { args.param_i[0] = n; });
}
Tensor igamma_cuda(const Tensor& a, const Tensor& x) {
  Tensor out;
  return run_elementwise(out, {a, x}, {.op_name = "igamma", .int_to_float = true}, launch_igamma);
}
Tensor igammac_cuda(const Tensor& a, const Tensor& x) {
  Tensor out;
  return run_elementwise(out, {a, x}, {.op_name = "igammac", .int_to_float = true}, launch_igammac);
}
Tensor standard_gamma_grad_cuda(const Tensor& alpha, const Tensor& x) {
  Tensor out;
  return run_elementwise(out, {alpha, x}, {.op_name = "_standard_gamma_grad"}, launch_standard_gamma_grad);
}

}  // namespace

EMBER_REGISTER_KERNEL(polygamma, CUDA, polygamma_cuda);
EMBER_REGISTER_KERNEL(igamma, CUDA, igamma_cuda);
EMBER_REGISTER_KERNEL(igammac, CUDA, igammac_cuda);
EMBER_REGISTER_KERNEL(_standard_gamma_grad, CUDA, standard_gamma_grad_cuda);

}  // namespace ember::cuda
