// The optimizers' multi-tensor update ops (op_list.h, section "optimizers"): the checks every
// backend relies on, then the dispatch. A kernel may index all lists with one i and take each
// tensor's numel from its parameter; a device kernel may read every tensor of a call on one
// device. Errors name the op, the list, the index and both values, as PyTorch's do.
#include "ember/optim/fused.h"

#include "ember/autograd/grad_mode.h"
#include "ember/ops.h"

#include "ops/op_handles.h"

namespace ember {
namespace {

// One list argument: one tensor per parameter, or none when its option is off (`off` says
// which). Step counts (`steps`) are one-element float32 tensors whatever the parameter's dtype,
// as torch's fused optimizers keep them.
struct ListArg {
  const char* name;
  TensorList list;
  const char* off = nullptr;
  bool steps = false;
};

void check_entry(const char* op, const ListArg& a, size_t i, const Tensor& p) {
  const Tensor& t = a.list[i];
  EMBER_CHECK(t.defined(), op, ": expected ", a.name, "[", i, "] to be a tensor, got an undefined one");
  EMBER_CHECK(t.device() == p.device(), op, ": expected ", a.name, "[", i, "] on ", p.device().str(),
              " (the device of params[", i, "]), got ", t.device().str());
  if (a.steps) {
    EMBER_CHECK(t.dtype() == DType::Float32 && t.numel() == 1, op, ": expected ", a.name, "[", i,
                "] to be a one-element float32 tensor, got ", dtype_name(t.dtype()), " of shape ", t.sizes());
    return;
  }
  EMBER_CHECK(t.dtype() == p.dtype(), op, ": expected ", a.name, "[", i, "] of dtype ", dtype_name(p.dtype()),
              " (the dtype of params[", i, "]), got ", dtype_name(t.dtype()));
  EMBER_CHECK(t.sizes() == p.sizes(), op, ": expected ", a.name, "[", i, "] of shape ", p.sizes(),
              " (the shape of params[", i, "]), got ", t.sizes());
}

// Lengths first, then one pass over the parameters that checks every list's entry beside its
// parameter (one visit of each parameter's metadata: an optimizer step passes hundreds).
void check(const char* op, TensorList params, std::initializer_list<ListArg> lists) {
  for (const ListArg& a : lists) {
    if (a.off)
      EMBER_CHECK(a.list.empty(), op, ": expected ", a.name, " to be empty with ", a.off, ", got ", a.list.size(),
                  " tensors");
    else
      EMBER_CHECK(a.list.size() == params.size(), op, ": expected ", a.name, " to hold one tensor per param (",
                  params.size(), "), got ", a.list.size());
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    EMBER_CHECK(p.defined(), op, ": expected params[", i, "] to be a tensor, got an undefined one");
    EMBER_CHECK(p.device() == params[0].device(), op, ": expected all params on one device, got ",
                params[0].device().str(), " (params[0]) and ", p.device().str(), " (params[", i, "])");
    for (const ListArg& a : lists)
      if (!a.off) check_entry(op, a, i, p);
  }
}

}  // namespace

namespace {
// Complex parameters (and their gradients and states) update as their (re, im) pairs, as
// torch's optimizers do through view_as_real: every rule here is elementwise.
std::vector<Tensor> real_views(TensorList ts) {
  NoGradGuard no_grad;
  std::vector<Tensor> out;
  out.reserve(ts.size());
  for (const Tensor& t : ts) out.push_back(t.defined() && t.is_complex() ? view_as_real(t) : t);
  return out;
}

// Adam and AdamW take the same lists; only the weight-decay rule differs.
void check_adam(const char* op, TensorList params, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
                TensorList max_exp_avg_sqs, TensorList state_steps, bool amsgrad) {
  check(op, params,
        {{"grads", grads}, {"exp_avgs", exp_avgs}, {"exp_avg_sqs", exp_avg_sqs},
         {"max_exp_avg_sqs", max_exp_avg_sqs, amsgrad ? nullptr : "amsgrad=False"},
         {"state_steps", state_steps, nullptr, /*steps=*/true}});
}
}  // namespace

void _fused_adam_(TensorList params, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
                  TensorList max_exp_avg_sqs, TensorList state_steps, double lr, double beta1, double beta2,
                  double weight_decay, double eps, bool amsgrad, bool maximize) {
  check_adam("_fused_adam_", params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, amsgrad);
  ops::_fused_adam_()(real_views(params), real_views(grads), real_views(exp_avgs), real_views(exp_avg_sqs),
                      real_views(max_exp_avg_sqs), state_steps, lr, beta1, beta2, weight_decay, eps, amsgrad, maximize);
}

void _fused_adamw_(TensorList params, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
                   TensorList max_exp_avg_sqs, TensorList state_steps, double lr, double beta1, double beta2,
                   double weight_decay, double eps, bool amsgrad, bool maximize) {
  check_adam("_fused_adamw_", params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, amsgrad);
  ops::_fused_adamw_()(real_views(params), real_views(grads), real_views(exp_avgs), real_views(exp_avg_sqs),
                       real_views(max_exp_avg_sqs), state_steps, lr, beta1, beta2, weight_decay, eps, amsgrad, maximize);
}

void _fused_sgd_(TensorList params, TensorList grads, TensorList momentum_buffer_list, double weight_decay,
                 double momentum, double lr, double dampening, bool nesterov, bool maximize, bool is_first_step) {
  check("_fused_sgd_", params,
        {{"grads", grads}, {"momentum_buffer_list", momentum_buffer_list, momentum != 0 ? nullptr : "momentum=0"}});
  ops::_fused_sgd_()(real_views(params), real_views(grads), real_views(momentum_buffer_list), weight_decay, momentum,
                     lr, dampening, nesterov, maximize, is_first_step);
}

void _fused_adagrad_(TensorList params, TensorList grads, TensorList state_sums, TensorList state_steps, double lr,
                     double lr_decay, double weight_decay, double eps, bool maximize) {
  check("_fused_adagrad_", params,
        {{"grads", grads}, {"state_sums", state_sums}, {"state_steps", state_steps, nullptr, /*steps=*/true}});
  ops::_fused_adagrad_()(real_views(params), real_views(grads), real_views(state_sums), state_steps, lr, lr_decay,
                         weight_decay, eps, maximize);
}

void _fused_rmsprop_(TensorList params, TensorList grads, TensorList square_avgs, TensorList momentum_buffer_list,
                     TensorList grad_avgs, double lr, double alpha, double eps, double weight_decay, double momentum,
                     bool centered, bool maximize) {
  check("_fused_rmsprop_", params,
        {{"grads", grads},
         {"square_avgs", square_avgs},
         {"momentum_buffer_list", momentum_buffer_list, momentum > 0 ? nullptr : "momentum=0"},
         {"grad_avgs", grad_avgs, centered ? nullptr : "centered=False"}});
  ops::_fused_rmsprop_()(real_views(params), real_views(grads), real_views(square_avgs),
                         real_views(momentum_buffer_list), real_views(grad_avgs), lr, alpha, eps, weight_decay,
                         momentum, centered, maximize);
}

}  // namespace ember
