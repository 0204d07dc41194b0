// The special functions' CUDA kernels, registered with the dispatcher with the CPU kernels'
// dtype rules (cpu/special_kernels.cpp): integers compute in the default float dtype, except
// _standard_gamma_grad, which takes floating inputs only.
#include "cuda/elementwise_host.h"
#include "cuda/special_launchers.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cuda {
namespace {

#define EMBER_CUDA_SPECIAL_KERNELS(n)                                                                  \
  Tensor n##_cuda(const Tensor& a) {                                                                  \
    Tensor out;                                                                                       \
    return run_elementwise(out, {a}, {.op_name = #n, .int_to_float = true}, launch_##n);              \
  }                                                                                                   \
  Tensor& n##_inplace_cuda(Tensor& a) { return run_elementwise(a, {a}, {.op_name = #n "_", .int_to_float = true}, launch_##n); } \
  EMBER_REGISTER_KERNEL(n, CUDA, n##_cuda);                                                           \
  EMBER_REGISTER_KERNEL(n##_, CUDA, n##_inplace_cuda);
EMBER_UNARY_SPECIAL_OPS(EMBER_CUDA_SPECIAL_KERNELS)
#undef EMBER_CUDA_SPECIAL_KERNELS

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
