// CUDA launchers for comparisons and logical ops: operands compared in their promoted dtype,
// bool results (float16/bfloat16 tensors compare in float32 straight from their own bytes).
#include "cuda/elementwise.cuh"
#include "cuda/elementwise_launchers.h"
#include "ops/elementwise_formulas.h"

namespace ember::cuda {
namespace f = formula;

#define EMBER_CUDA_COMPARE(n)                                                                 \
  void launch_##n(const ElementwiseArgs& a) {                                                 \
    visit_compute<kCudaNumericAndBool>(a.compute, #n "_cuda",                                \
                                       [&]<class T>() { launch<bool, T, 2>(a, f::n##_fn<f::StdMath>{}); }); \
  }
EMBER_COMPARE_OPS(EMBER_CUDA_COMPARE)
#undef EMBER_CUDA_COMPARE

}  // namespace ember::cuda
