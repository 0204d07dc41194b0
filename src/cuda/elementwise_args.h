#pragma once
// What a CUDA elementwise kernel launch needs, as plain data: the .cu files include this and
// the shared formulas only (no tensor headers, so nvcc compiles them quickly), and the host
// side (elementwise_host.cpp) fills it from an ElementwisePlan.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace ember::cuda {

inline constexpr int kMaxOperands = 8;
inline constexpr int kMaxDims = 16;

// ember::DType's values (checked against the enum in elementwise_host.cpp).
enum DTypeCode : int8_t {
  kCodeBool, kCodeUInt8, kCodeInt8, kCodeInt16, kCodeInt32, kCodeInt64,
  kCodeFloat16, kCodeBFloat16, kCodeFloat32, kCodeFloat64, kCodeComplex64, kCodeComplex128
};

struct ElementwiseArgs {
  int noutputs = 1;
  int ntensors = 0;  // outputs first, then inputs
  int ndim = 0;      // merged iteration dims, inner first
  int64_t numel = 0;
  int8_t compute = 0;  // the DTypeCode the op computes in (float32 for float16/bfloat16)
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxOperands][kMaxDims] = {};  // bytes; 0 along broadcast dims
  char* data[kMaxOperands] = {};
  int8_t dtype[kMaxOperands] = {};
  // Inputs that are 0-dim host tensors (Python numbers) travel by value, in both forms; data
  // is null for them.
  bool host_scalar[kMaxOperands] = {};
  double scalar_f[kMaxOperands] = {};
  int64_t scalar_i[kMaxOperands] = {};
  // Every device operand is one dense run in the output's order (host scalars aside).
  bool dense = false;
  cudaStream_t stream = nullptr;
  // Per-op parameters (add's alpha, clamp's bounds, leaky_relu's slope, ...), in the compute
  // type's two forms.
  double param_f[4] = {};
  int64_t param_i[4] = {};
};

// An op asked for a dtype it has no kernel for: torch's "not implemented for 'Half'" error.
[[noreturn]] void throw_dtype_not_implemented(const char* op, int8_t code);

}  // namespace ember::cuda
