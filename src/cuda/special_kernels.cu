// CUDA launchers of the special functions (lgamma, digamma, erfinv, erfc, i0, i1, sinc,
// polygamma, igamma/igammac, _standard_gamma_grad): the CPU's formulas (ops/special_formulas.h),
// which compute in double and round once, so a GPU result equals the CPU's. These are rarely on
// a training step's hot path; the double arithmetic keeps them exact rather than fast.
#include "cuda/elementwise.cuh"
#include "cuda/elementwise_launchers.h"
#include "ops/special_formulas.h"

namespace ember::cuda {
namespace f = formula;

#define EMBER_CUDA_SPECIAL(n)                                                                         \
  void launch_##n(const ElementwiseArgs& a) {                                                         \
    visit_compute<kCudaFloat>(a.compute, #n "_cuda", [&]<class T>() { launch<T, T, 1>(a, f::n##_fn<>{}); }); \
  }
EMBER_UNARY_SPECIAL_OPS(EMBER_CUDA_SPECIAL)
#undef EMBER_CUDA_SPECIAL

void launch_polygamma(const ElementwiseArgs& a) {
  visit_compute<kCudaFloat>(a.compute, "polygamma_cuda", [&]<class T>() { launch<T, T, 1>(a, f::polygamma_fn<>{a.param_i[0]}); });
}
void launch_igamma(const ElementwiseArgs& a) {
  visit_compute<kCudaFloat>(a.compute, "igamma_cuda", [&]<class T>() { launch<T, T, 2>(a, f::igamma_fn<>{}); });
}
void launch_igammac(const ElementwiseArgs& a) {
  visit_compute<kCudaFloat>(a.compute, "igammac_cuda", [&]<class T>() { launch<T, T, 2>(a, f::igammac_fn<>{}); });
}
void launch_standard_gamma_grad(const ElementwiseArgs& a) {
  visit_compute<kCudaFloat>(a.compute, "_standard_gamma_grad_cuda", [&]<class T>() { launch<T, T, 2>(a, f::standard_gamma_grad_fn<>{}); });
}

}  // namespace ember::cuda
