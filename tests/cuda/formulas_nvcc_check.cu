// Compile-only check that src/ops/elementwise_formulas.h builds as device code: a kernel calls
// functors of every kind (elementary-function formulas, integer division reporting to a device
// sink, comparisons). Run by ctest as elementwise_formulas_nvcc when nvcc is found; needs no GPU.
#include "ops/elementwise_formulas.h"

namespace f = ember::formula;

struct DeviceZeroDiv {
  int* flag;
  __device__ void operator()() const { *flag = 1; }
};

__global__ void formulas(float* out, const float* a, const float* b, double* dout, int* iout, const int* ia,
                         const int* ib, int* zero_div, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = a[i], y = b[i];
  out[i] = f::sigmoid_fn<>{}(x) + f::gelu_tanh_fn<>{}(x) + f::gelu_backward_fn<>{}(x, y) + f::remainder_fn<>{}(x, y) +
           f::div_floor_fn<>{}(x, y) + f::maximum_fn<>{}(x, y) + f::round_fn<>{}(x) + f::sign_fn<>{}(x) +
           f::pow_fn<>{}(x, y) + f::lerp_fn<>{}(x, y, 0.3f) + f::round_decimals_fn<float>{100.f, false}(x) +
           f::clamp_fn<>{}(x, -1.f, 1.f) + f::frac_fn<>{}(x) + f::nan_to_num_fn<float>{0.f, 1.f, -1.f}(x) +
           f::abs_fn<>{}(x) + f::erf_fn<>{}(x) + f::expm1_fn<>{}(x) + f::atan2_fn<>{}(x, y) + f::isinf_fn<>{}(x);
  dout[i] = f::exp_fn<>{}(double(x)) + f::div_trunc_fn<>{}(double(x), double(y)) + f::silu_fn<>{}(double(y));
  DeviceZeroDiv z{zero_div};
  iout[i] = f::powi(ia[i], ib[i]) + f::remainder_fn<f::StdMath, DeviceZeroDiv>{z}(ia[i], ib[i]) +
            f::div_floor_fn<f::StdMath, DeviceZeroDiv>{z}(ia[i], ib[i]) + f::bitwise_left_shift_fn<>{}(ia[i], ib[i]) +
            f::bitwise_right_shift_fn<>{}(ia[i], ib[i]) + f::square_fn<>{}(ia[i]) + f::add_fn<int>{2}(ia[i], ib[i]) +
            f::mul_fn<>{}(ia[i], ib[i]) + f::eq_fn<>{}(ia[i], ib[i]) + f::logical_xor_fn<>{}(ia[i], ib[i]) +
            int(f::pow_fn<>{}((unsigned short)ia[i], (unsigned short)ib[i]));
}
