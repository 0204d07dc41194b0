// softmax and log_softmax: public functions and dtype rules. The input is cast to `dtype`
// first when given (as PyTorch); otherwise integral and bool inputs are refused with PyTorch's
// message. Kernels: src/cpu/softmax_kernels.cpp.
#include "ops/reduce_utils.h"
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

// ---------------------------------------------------------------- gradients
// Both formulas use the saved output y (saved as an output: no cycle); with a dtype argument the
// input was cast first, so the gradient is cast back to the input's dtype.
#include "autograd/record.h"

namespace ember {
namespace {
using namespace autograd;  // record, below_autograd, saved_input, grad_for, ...

Tensor to_input_dtype(const Tensor& g, DType dt) { return g.dtype() == dt ? g : g.to(dt); }
// Sum over the softmax dim, kept (a 0-dim tensor sums over nothing).
Tensor sum_dim(const Tensor& t, int64_t d) { return t.dim() == 0 ? t : t.sum({d}, /*keepdim=*/true); }

Tensor softmax_ag(const Tensor& a, int64_t dim, std::optional<DType> dtype) {
  Tensor out = below_autograd([&] { return ops::softmax()(a, dim, dtype); });
  int64_t d = reduce::wrap_dim(dim, a.dim());
  record("SoftmaxBackward0", {a}, {out}, {saved_output(out)},
         [d, dt = a.dtype()](const variable_list& g, LambdaNode& n) -> variable_list {
           Tensor y = n.unpack(0);
           return {to_input_dtype(y * (g[0] - sum_dim(g[0] * y, d)), dt)};
         });
  return out;
}

Tensor log_softmax_ag(const Tensor& a, int64_t dim, std::optional<DType> dtype) {
  Tensor out = below_autograd([&] { return ops::log_softmax()(a, dim, dtype); });
  int64_t d = reduce::wrap_dim(dim, a.dim());
  record("LogSoftmaxBackward0", {a}, {out}, {saved_output(out)},
         [d, dt = a.dtype()](const variable_list& g, LambdaNode& n) -> variable_list {
           Tensor y = n.unpack(0);
           return {to_input_dtype(g[0] - exp(y) * sum_dim(g[0], d), dt)};
         });
  return out;
}

EMBER_REGISTER_KERNEL(softmax, Autograd, softmax_ag);
EMBER_REGISTER_KERNEL(log_softmax, Autograd, log_softmax_ag);

}  // namespace
}  // namespace ember
