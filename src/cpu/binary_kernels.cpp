// CPU kernels for two-operand elementwise ops.
#include "cpu/tensor_iter.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cpu {
namespace {

Tensor& add_into(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, const char* name) {
  TensorIter it = TensorIter::binary_op(out, a, b, {.op_name = name});
  visit_dtype<kNumericAndBool>(it.compute_dtype(), name, [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) {
      bool al = alpha.to_bool();
      cpu_kernel(it, [al](bool x, bool y) -> bool { return x || (al && y); });
    } else {
      T al = alpha.to<T>();
      if (al == T(1)) cpu_kernel(it, [](T x, T y) -> T { return x + y; });
      else cpu_kernel(it, [al](T x, T y) -> T { return x + al * y; });
    }
  });
  out = it.output();
  return out;
}

Tensor add_cpu(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  Tensor out;
  return add_into(out, a, b, alpha, "add");
}
Tensor& add_inplace_cpu(Tensor& self, const Tensor& b, const Scalar& alpha) {
  return add_into(self, self, b, alpha, "add_");
}
Tensor sub_cpu(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  Tensor out;
  return add_into(out, a, b, -alpha, "sub");
}
Tensor& sub_inplace_cpu(Tensor& self, const Tensor& b, const Scalar& alpha) {
  return add_into(self, self, b, -alpha, "sub_");
}

Tensor& mul_into(Tensor& out, const Tensor& a, const Tensor& b, const char* name) {
  TensorIter it = TensorIter::binary_op(out, a, b, {.op_name = name});
  visit_dtype<kNumericAndBool>(it.compute_dtype(), name, [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) cpu_kernel(it, [](bool x, bool y) -> bool { return x && y; });
    else cpu_kernel(it, [](T x, T y) -> T { return x * y; });
  });
  out = it.output();
  return out;
}
Tensor mul_cpu(const Tensor& a, const Tensor& b) { Tensor out; return mul_into(out, a, b, "mul"); }
Tensor& mul_inplace_cpu(Tensor& self, const Tensor& b) { return mul_into(self, self, b, "mul_"); }

EMBER_REGISTER_KERNEL(add, CPU, add_cpu);
EMBER_REGISTER_KERNEL(add_, CPU, add_inplace_cpu);
EMBER_REGISTER_KERNEL(sub, CPU, sub_cpu);
EMBER_REGISTER_KERNEL(sub_, CPU, sub_inplace_cpu);
EMBER_REGISTER_KERNEL(mul, CPU, mul_cpu);
EMBER_REGISTER_KERNEL(mul_, CPU, mul_inplace_cpu);

}  // namespace
}  // namespace ember::cpu
