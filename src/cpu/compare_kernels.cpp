// CPU kernels for comparisons and logical ops: the operands are compared in their promoted
// dtype and the result is bool. The comparisons are the formulas of
// src/ops/elementwise_formulas.h.
#include "cpu/elementwise_math.h"
#include "cpu/tensor_iter.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cpu {
namespace {

namespace f = formula;

template <class Cmp> Tensor compare(const Tensor& a, const Tensor& b, const char* name) {
  Tensor out;
  TensorIter it = TensorIter::binary_op(out, a, b, {.op_name = name, .output_dtype = DType::Bool});
  visit_dtype<kNumericAndBool>(it.compute_dtype(), name, [&]<class T>() {
    cpu_kernel(it, [](T x, T y) -> bool { return Cmp{}(x, y); });
  });
  return it.output();
}

// Logical ops count nonzero (NaN included) as true.
#define EMBER_COMPARE_KERNEL(n)                                                                  \
  Tensor n##_cpu(const Tensor& a, const Tensor& b) { return compare<f::n##_fn<CpuMath>>(a, b, #n); } \
  EMBER_REGISTER_KERNEL(n, CPU, n##_cpu);
EMBER_COMPARE_OPS(EMBER_COMPARE_KERNEL)
#undef EMBER_COMPARE_KERNEL

Tensor logical_not_cpu(const Tensor& a) {
  Tensor out;
  TensorIter it = TensorIter::unary_op(out, a, {.op_name = "logical_not", .output_dtype = DType::Bool});
  visit_dtype<kNumericAndBool>(it.compute_dtype(), "logical_not", [&]<class T>() {
    cpu_kernel(it, [](T x) -> bool { return f::logical_not_fn<CpuMath>{}(x); });
  });
  return it.output();
}
EMBER_REGISTER_KERNEL(logical_not, CPU, logical_not_cpu);

}  // namespace
}  // namespace ember::cpu
