// softmax and log_softmax: public functions and dtype rules. The input is cast to `dtype`
// first when given (as PyTorch); otherwise integral and bool inputs are refused with PyTorch's
// message. Kernels: src/cpu/softmax_kernels.cpp.
#include "cpu/reduce_utils.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember {

namespace {
void check_softmax_input(const char* op, const Tensor& a, int64_t dim, std::optional<DType> dtype) {
  int64_t d = reduce::wrap_dim(dim, a.dim());
  DType t = dtype ? *dtype : a.dtype();
  bool lastdim = a.dim() == 0 || d == a.dim() - 1;
  EMBER_CHECK(is_floating(t), '"', op, lastdim ? "_lastdim_kernel_impl" : "_kernel_impl",
              "\" not implemented for '", reduce::torch_type_name(t), "'");
}
}  // namespace

Tensor softmax(const Tensor& a, int64_t dim, std::optional<DType> dtype) {
  check_softmax_input("softmax", a, dim, dtype);
  return ops::softmax()(a, dim, dtype);
}

Tensor log_softmax(const Tensor& a, int64_t dim, std::optional<DType> dtype) {
  check_softmax_input("log_softmax", a, dim, dtype);
  return ops::log_softmax()(a, dim, dtype);
}

}  // namespace ember
