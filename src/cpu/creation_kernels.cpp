// CPU kernels for arange and linspace (the random fills are in random_kernels.cpp).
#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/tensor_iter.h"
#include "ember/ops.h"
#include "ops/arange_length.h"
#include "ops/op_handles.h"

namespace ember::cpu {
namespace {

// Integers go through int64 (a negative value wraps, as PyTorch's CPU gives: linspace(-3, 3, 7)
// in uint8 starts 253), never a direct double -> unsigned conversion, whose out-of-range result
// C++ leaves undefined and CUDA saturates. cuda/shape_kernels.cu converts the same way.
template <class T> T from_double(double v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return T(float(v));
  else if constexpr (std::is_integral_v<T>) return T(int64_t(v));
  else return static_cast<T>(v);
}

Tensor arange_cpu(const Scalar& start, const Scalar& end, const Scalar& step, TensorOptions opts) {
  DType dt = opts.dtype_or_default();
  const int64_t n = arange_length(start, end, step, dt);
  const double s = start.to_double(), st = step.to_double();
  Tensor out = empty({n}, {.dtype = dt, .device = Device(kCPU)});
  visit_dtype<kAllTypes & ~bit(DType::Bool)>(dt, "arange", [&]<class T>() {
    T* p = out.data_ptr<T>();
    if constexpr (std::is_integral_v<T>) {
      int64_t is = start.to_int(), ist = step.to_int();
      if (!start.is_floating() && !step.is_floating()) { for (int64_t i = 0; i < n; ++i) p[i] = T(is + i * ist); return; }
    }
    // One fused multiply-add per element, written out so every build (with or without FMA
    // contraction) and the CUDA kernel give the same bits.
    for (int64_t i = 0; i < n; ++i) p[i] = from_double<T>(std::fma(double(i), st, s));
  });
  return out;
}

Tensor linspace_cpu(const Scalar& start, const Scalar& end, int64_t steps, TensorOptions opts) {
  DType dt = opts.dtype_or_default();
  Tensor out = empty({steps}, {.dtype = dt, .device = Device(kCPU)});
  double s = start.to_double(), e = end.to_double();
  double step = steps > 1 ? (e - s) / double(steps - 1) : 0.0;
  int64_t half = steps / 2;
  visit_dtype<kAllTypes & ~bit(DType::Bool)>(dt, "linspace", [&]<class T>() {
    T* p = out.data_ptr<T>();
    // Symmetric from both ends, as PyTorch does, so the last value is exactly `end`.
    for (int64_t i = 0; i < steps; ++i) {
      double v = (i < half || steps == 1) ? std::fma(step, double(i), s) : std::fma(-step, double(steps - 1 - i), e);
      p[i] = from_double<T>(v);
    }
  });
  return out;
}

EMBER_REGISTER_KERNEL(arange, CPU, arange_cpu);
EMBER_REGISTER_KERNEL(linspace, CPU, linspace_cpu);

}  // namespace
}  // namespace ember::cpu
