// _addmm_epilogue: pre = mat1 @ mat2 + bias, out = act(pre) + residual (op_list.h), its gradient
// beside it, and the composition backends without a fused kernel run.
//   backward: g_pre = g (none) | where(saved <= 0, 0, g) (relu, saved = out or pre) | g gelu'(pre)
//             grad bias = g_pre summed over rows, grad mat1 = g_pre mat2^T, grad mat2 = mat1^T g_pre,
//             grad residual = g
// These are the gradients eager's AddmmBackward0, ReluBackward0/GeluBackward0 and AddBackward0
// compute, in the same ops, so a compiled Linear's gradients are eager's.
#include "ops/addmm_epilogue.h"

#include "autograd/record.h"
#include "ember/ops.h"
#include "ops/op_handles.h"
#include "ops/product_grads.h"

namespace ember {

void check_addmm_epilogue(const char* op, const std::optional<Tensor>& bias, const Tensor& m1, const Tensor& m2,
                          const std::optional<Tensor>& residual, int64_t activation) {
  EMBER_CHECK(m1.dim() == 2 && m2.dim() == 2 && m1.size(1) == m2.size(0), op,
              ": expected mat1 (M, K) and mat2 (K, N), got ", m1.sizes(), " and ", m2.sizes());
  const int64_t M = m1.size(0), N = m2.size(1);
  EMBER_CHECK(!bias || (bias->dim() == 1 && bias->size(0) == N), op, ": expected a bias of shape (", N, "), got ",
              bias->sizes());
  EMBER_CHECK(!residual || (residual->dim() == 2 && residual->size(0) == M && residual->size(1) == N), op,
              ": expected a residual of shape (", M, ", ", N, "), got ", residual->sizes());
  EMBER_CHECK(activation >= 0 && activation <= 3, op, ": activation must be 0 (none), 1 (relu), 2 (gelu) or 3 (gelu tanh), got ",
              activation);
  for (const Tensor* t : {bias ? &*bias : nullptr, &m2, residual ? &*residual : nullptr}) {
    if (!t) continue;
    EMBER_CHECK(t->dtype() == m1.dtype(), op, ": expected tensors of one dtype, got ", dtype_name(m1.dtype()), " and ",
                dtype_name(t->dtype()));
    EMBER_CHECK(t->device() == m1.device(), op, ": expected tensors on one device, got ", m1.device().str(), " and ",
                t->device().str());
  }
}

namespace {
using namespace autograd;
using A = EpilogueActivation;

const char* gelu_form(int64_t act) { return A(act) == A::GeluTanh ? "tanh" : "none"; }

// the activation's input the gradient reads: relu's output will do when nothing was added after it
bool gradient_reads_pre(int64_t act, bool has_residual) {
  return A(act) == A::Gelu || A(act) == A::GeluTanh || (A(act) == A::Relu && has_residual);
}

std::tuple<Tensor, Tensor> addmm_epilogue_ag(const std::optional<Tensor>& bias, const Tensor& m1, const Tensor& m2,
                                             const std::optional<Tensor>& residual, int64_t act, bool save_pre) {
  const Tensor b = bias ? *bias : Tensor(), r = residual ? *residual : Tensor();
  const bool grad = GradMode::is_enabled() && any_requires_grad({b, m1, m2, r});
  const bool reads_pre = gradient_reads_pre(act, r.defined());
  auto [out, pre] = below_autograd(
      [&] { return ops::_addmm_epilogue()(bias, m1, m2, residual, act, save_pre || (grad && reads_pre)); });
  if (grad) {
    // gelu's gradient under create_graph recomputes pre with history from the operands, so those
    // are kept whichever needs a gradient
    const bool gelu = A(act) == A::Gelu || A(act) == A::GeluTanh;
    record("AddmmEpilogueBackward0", {b, m1, m2, r}, {out},
           {saved_input(gelu || m2.requires_grad() ? m1 : Tensor()), saved_input(gelu || m1.requires_grad() ? m2 : Tensor()),
            saved_input(reads_pre ? pre : Tensor()), saved_output(A(act) == A::Relu && !reads_pre ? out : Tensor()),
            saved_input(gelu ? b : Tensor())},
           [act, gelu, reads_pre, bias_sizes = b.defined() ? b.sizes() : Shape{},
            m1_cm = product_grads::column_major(m1),
            m2_cm = product_grads::column_major(m2)](const variable_list& g, LambdaNode& n) -> variable_list {
             const Tensor& go = g[0];
             Tensor gp = go;
             if (A(act) == A::Relu) {
               gp = where((reads_pre ? n.unpack(2) : n.unpack(3)).le(0), 0, go);
             } else if (gelu && GradMode::is_enabled()) {  // a differentiable backward: pre with its history
               const Tensor bias = n.unpack(4), m1 = n.unpack(0), m2 = n.unpack(1);
               const Tensor pre = bias.defined() ? addmm(bias, m1, m2) : mm(m1, m2);
               gp = product_grads::gelu_grad(go, pre, gelu_form(act));
             } else if (gelu) {  // one fused pass
               gp = ops::gelu_backward()(go, n.unpack(2), gelu_form(act));
             }
             return {grad_for(n, 0, [&] { return sum_to(gp, bias_sizes); }),
                     grad_for(n, 1, [&] { return product_grads::mat1_grad(gp, n.unpack(1), m1_cm); }),
                     grad_for(n, 2, [&] { return product_grads::mat2_grad(gp, n.unpack(0), m2_cm); }),
                     grad_for(n, 3, [&] { return go; })};
           });
  }
  return {out, save_pre ? pre : Tensor()};
}

}  // namespace

std::tuple<Tensor, Tensor> addmm_epilogue_composite(const std::optional<Tensor>& bias, const Tensor& m1,
                                                    const Tensor& m2, const std::optional<Tensor>& residual,
                                                    int64_t act, bool save_pre) {
  check_addmm_epilogue("_addmm_epilogue", bias, m1, m2, residual, act);
  const Tensor pre = bias ? addmm(*bias, m1, m2, 1, 1) : mm(m1, m2);
  Tensor out = A(act) == A::None ? pre : A(act) == A::Relu ? relu(pre) : gelu(pre, gelu_form(act));
  if (residual) out = add(*residual, out);
  return {out, save_pre ? pre : Tensor()};
}

EMBER_REGISTER_KERNEL(_addmm_epilogue, Autograd, addmm_epilogue_ag);
EMBER_REGISTER_KERNEL(_addmm_epilogue, CompositeBackend, addmm_epilogue_composite);

}  // namespace ember
