// Compile-only check that src/ops/special_formulas.h builds as device code (the special
// functions' formulas a CUDA backend would call): a kernel calls every functor. Run by ctest as
// special_formulas_nvcc when nvcc is found; needs no GPU.
#include "ops/special_formulas.h"

namespace f = ember::formula;

__global__ void special_formulas(float* out, const float* a, const float* b, double* dout, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = a[i], y = b[i];
  out[i] = f::lgamma_fn<>{}(x) + f::digamma_fn<>{}(x) + f::erfinv_fn<>{}(x) + f::erfc_fn<>{}(x) + f::i0_fn<>{}(x) +
           f::i1_fn<>{}(x) + f::sinc_fn<>{}(x) + f::polygamma_fn<>{3}(x) + f::igamma_fn<>{}(x, y) +
           f::igammac_fn<>{}(x, y) + f::standard_gamma_grad_fn<>{}(x, y);
  dout[i] = f::digamma_fn<>{}(double(x)) + f::polygamma_fn<>{1}(double(y));
}
