// CPU kernels for comparisons and logical ops: the operands are compared in their promoted
// dtype and the result is bool.
#include "cpu/tensor_iter.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cpu {
namespace {

template <class Cmp> Tensor compare(const Tensor& a, const Tensor& b, const char* name, Cmp cmp) {
  Tensor out;
  TensorIter it = TensorIter::binary_op(out, a, b, {.op_name = name, .output_dtype = DType::Bool});
  visit_dtype<kNumericAndBool>(it.compute_dtype(), name, [&]<class T>() {
    cpu_kernel(it, [cmp](T x, T y) -> bool { return cmp(x, y); });
  });
  return it.output();
}

Tensor eq_cpu(const Tensor& a, const Tensor& b) { return compare(a, b, "eq", [](auto x, auto y) { return x == y; }); }
Tensor ne_cpu(const Tensor& a, const Tensor& b) { return compare(a, b, "ne", [](auto x, auto y) { return x != y; }); }
Tensor lt_cpu(const Tensor& a, const Tensor& b) { return compare(a, b, "lt", [](auto x, auto y) { return x < y; }); }
Tensor le_cpu(const Tensor& a, const Tensor& b) { return compare(a, b, "le", [](auto x, auto y) { return x <= y; }); }
Tensor gt_cpu(const Tensor& a, const Tensor& b) { return compare(a, b, "gt", [](auto x, auto y) { return x > y; }); }
Tensor ge_cpu(const Tensor& a, const Tensor& b) { return compare(a, b, "ge", [](auto x, auto y) { return x >= y; }); }

// Logical ops: nonzero (NaN included) is true.
Tensor logical_and_cpu(const Tensor& a, const Tensor& b) {
  return compare(a, b, "logical_and", [](auto x, auto y) {
    using T = decltype(x);
    return (x != T(0)) & (y != T(0));
  });
}
Tensor logical_or_cpu(const Tensor& a, const Tensor& b) {
  return compare(a, b, "logical_or", [](auto x, auto y) {
    using T = decltype(x);
    return (x != T(0)) | (y != T(0));
  });
}
Tensor logical_xor_cpu(const Tensor& a, const Tensor& b) {
  return compare(a, b, "logical_xor", [](auto x, auto y) {
    using T = decltype(x);
    return (x != T(0)) != (y != T(0));
  });
}

Tensor logical_not_cpu(const Tensor& a) {
  Tensor out;
  TensorIter it = TensorIter::unary_op(out, a, {.op_name = "logical_not", .output_dtype = DType::Bool});
  visit_dtype<kNumericAndBool>(it.compute_dtype(), "logical_not", [&]<class T>() {
    cpu_kernel(it, [](T x) -> bool { return x == T(0); });
  });
  return it.output();
}

EMBER_REGISTER_KERNEL(eq, CPU, eq_cpu);
EMBER_REGISTER_KERNEL(ne, CPU, ne_cpu);
EMBER_REGISTER_KERNEL(lt, CPU, lt_cpu);
EMBER_REGISTER_KERNEL(le, CPU, le_cpu);
EMBER_REGISTER_KERNEL(gt, CPU, gt_cpu);
EMBER_REGISTER_KERNEL(ge, CPU, ge_cpu);
EMBER_REGISTER_KERNEL(logical_and, CPU, logical_and_cpu);
EMBER_REGISTER_KERNEL(logical_or, CPU, logical_or_cpu);
EMBER_REGISTER_KERNEL(logical_xor, CPU, logical_xor_cpu);
EMBER_REGISTER_KERNEL(logical_not, CPU, logical_not_cpu);

}  // namespace
}  // namespace ember::cpu
