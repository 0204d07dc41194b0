// CPU kernel for conj_physical: (re, im) -> (re, -im) over complex64/complex128.
#include <complex>

#include "cpu/tensor_iter.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cpu {
namespace {

Tensor conj_physical_cpu(const Tensor& a) {
  Tensor out;
  TensorIter it = TensorIter::unary_op(out, a, {.op_name = "conj_physical"});
  visit_dtype<kComplexTypes>(it.compute_dtype(), "conj_physical", [&]<class T>() {
    cpu_kernel(it, [](T z) -> T { return std::conj(z); });
  });
  return it.output();
}

EMBER_REGISTER_KERNEL(conj_physical, CPU, conj_physical_cpu);

}  // namespace
}  // namespace ember::cpu
