// The optimizers' update ops on CUDA (op_list.h, section "optimizers"; checked in
// src/ops/optim.cpp): one kernel launch per batch of up to kOptimBatch parameters of a dtype
// on the current stream (optim_kernels.cu; torch's multi-tensor apply), the step counts read on
// the device. Tensors that are not one dense run (a transposed parameter, a state loaded with
// other strides) are updated through a contiguous copy written back after the kernels, as the
// CPU kernels do.
#include <optional>
#include <vector>

#include "cuda/cuda_state.h"
#include "cuda/elementwise_args.h"
#include "cuda/optim_launchers.h"
#include "ember/ops.h"
#include "ops/dense_run.h"
#include "ops/op_handles.h"

namespace ember::cuda {
namespace {

const Tensor kNone;
const Tensor& entry(TensorList list, size_t i) { return list.empty() ? kNone : list[i]; }

// Updates every parameter i with its grad, states and step on its device's current stream:
// parameters are batched (OptimBatch: one launch for up to kOptimBatch of one dtype, in list
// order), then the copies of non-dense tensors are written back.
template <class Launch>
void update_each(const char* op, TensorList params, TensorList grads, std::initializer_list<TensorList> states, TensorList steps,
                 const Launch& launch) {
  if (params.empty()) return;
  // Every dtype first, so a bad list fails before any parameter changes (as on the CPU).
  for (const Tensor& p : params)
    if (!is_floating(p.dtype())) throw_dtype_not_implemented(op, int8_t(p.dtype()));
  const int device = params[0].device().index;
  GpuGuard guard(device);
  cudaStream_t stream = current_cuda_stream(device);
  std::vector<DenseRun> runs;  // the tensors' dense views, alive until the write-back
  runs.reserve(params.size() * (2 + states.size()));
  OptimBatch batch;
  auto flush = [&] {
    if (batch.count > 0) launch(batch);
    batch.count = 0;
  };
  for (size_t i = 0; i < params.size(); ++i) {
    OptimTensors t;
    t.param = runs.emplace_back(params[i]).data();
    t.grad = runs.emplace_back(grads[i]).data();
    int k = 0;
    for (TensorList list : states) t.state[k++] = runs.emplace_back(entry(list, i)).data();
    t.step = steps.empty() ? nullptr : static_cast<const float*>(steps[i].data_ptr());
    t.numel = params[i].numel();
    t.dtype = int8_t(params[i].dtype());
    t.stream = stream;
    if (t.numel == 0) continue;
    if (batch.count == kOptimBatch || (batch.count > 0 && batch.t[0].dtype != t.dtype)) flush();
    batch.t[batch.count] = t;
    batch.first_block[batch.count + 1] = batch.first_block[batch.count] + optim_blocks(t.numel);
    ++batch.count;
  }
  flush();
  for (DenseRun& r : runs) r.write_back();
}

void fused_adam_cuda(TensorList params, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
                     TensorList max_exp_avg_sqs, TensorList state_steps, double lr, double beta1, double beta2,
                     double weight_decay, double eps, bool amsgrad, bool maximize) {
  const AdamRule r{lr, beta1, beta2, eps, weight_decay, amsgrad, maximize, /*decoupled=*/false};
  update_each("_fused_adam_", params, grads, {exp_avgs, exp_avg_sqs, max_exp_avg_sqs}, state_steps,
              [&](const OptimBatch& b) { launch_adam_update(b, r); });
}
void fused_adamw_cuda(TensorList params, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
                      TensorList max_exp_avg_sqs, TensorList state_steps, double lr, double beta1, double beta2,
                      double weight_decay, double eps, bool amsgrad, bool maximize) {
  const AdamRule r{lr, beta1, beta2, eps, weight_decay, amsgrad, maximize, /*decoupled=*/true};
  update_each("_fused_adamw_", params, grads, {exp_avgs, exp_avg_sqs, max_exp_avg_sqs}, state_steps,
              [&](const OptimBatch& b) { launch_adam_update(b, r); });
}
void fused_sgd_cuda(TensorList params, TensorList grads, TensorList momentum_buffer_list, double weight_decay,
                    double momentum, double lr, double dampening, bool nesterov, bool maximize, bool is_first_step) {
  const SGDRule r{lr, momentum, dampening, weight_decay, nesterov, maximize, is_first_step};
  TensorList buffers = momentum != 0 ? momentum_buffer_list : TensorList();
  update_each("_fused_sgd_", params, grads, {buffers}, {}, [&](const OptimBatch& b) { launch_sgd_update(b, r); });
}
void fused_adagrad_cuda(TensorList params, TensorList grads, TensorList state_sums, TensorList state_steps, double lr,
                        double lr_decay, double weight_decay, double eps, bool maximize) {
  const AdagradRule r{lr, lr_decay, weight_decay, eps, maximize};
  update_each("_fused_adagrad_", params, grads, {state_sums}, state_steps, [&](const OptimBatch& b) { launch_adagrad_update(b, r); });
}
void fused_rmsprop_cuda(TensorList params, TensorList grads, TensorList square_avgs, TensorList momentum_buffer_list,
                        TensorList grad_avgs, double lr, double alpha, double eps, double weight_decay, double momentum,
                        bool centered, bool maximize) {
  const RMSpropRule r{lr, alpha, eps, weight_decay, momentum, centered, maximize};
  TensorList buffers = momentum > 0 ? momentum_buffer_list : TensorList();
  TensorList averages = centered ? grad_avgs : TensorList();
  update_each("_fused_rmsprop_", params, grads, {square_avgs, buffers, averages}, {},
              [&](const OptimBatch& b) { launch_rmsprop_update(b, r); });
}

}  // namespace

EMBER_REGISTER_KERNEL(_fused_adam_, CUDA, fused_adam_cuda);
EMBER_REGISTER_KERNEL(_fused_adamw_, CUDA, fused_adamw_cuda);
EMBER_REGISTER_KERNEL(_fused_sgd_, CUDA, fused_sgd_cuda);
EMBER_REGISTER_KERNEL(_fused_adagrad_, CUDA, fused_adagrad_cuda);
EMBER_REGISTER_KERNEL(_fused_rmsprop_, CUDA, fused_rmsprop_cuda);

}  // namespace ember::cuda
