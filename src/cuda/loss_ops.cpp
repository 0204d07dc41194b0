// The CUDA kernels of the fused cross entropy with class-index targets (op_list.h, nn-loss
// section), registered with the dispatcher; the checks and the composite (any input rank,
// probabilities as targets) are in src/nn/functional/loss.cpp. The kernels (loss_kernels.cu)
// leave a loss and a target weight per row; the reductions are ember ops on the device, so
// nothing is read back to the host (mean = sum of losses / sum of target weights; all rows
// ignored gives 0/0 = NaN, as torch).
#include "cuda/cuda_state.h"
#include "cuda/loss_launchers.h"
#include "ember/ops.h"
#include "ops/op_handles.h"
#include "ops/reduce_utils.h"

namespace ember::cuda {
namespace {

enum Reduction : int64_t { kNone = 0, kMean = 1, kSum = 2 };

// The common part of both directions: contiguous input, int64 targets, weight in the compute dtype.
struct CeInputs {
  Tensor x, target, weight;
  CrossEntropyLaunch L;
};
CeInputs ce_inputs(const char* op, const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight,
                   int64_t ignore_index, double ls) {
  EMBER_CHECK(input.dim() == 2 && target.dim() == 1 && input.size(0) == target.size(0), op,
              ": expected (M, C) input and (M) target, got ", input.sizes(), " and ", target.sizes());
  CeInputs in;
  const DType cdt = reduce::compute_dtype(input.dtype());
  in.x = input.contiguous();
  in.target = reduce::convert(target, kInt64, true);
  if (weight && weight->defined()) in.weight = reduce::convert(*weight, cdt, true);
  in.L.x = in.x.data_ptr();
  in.L.target = in.target.data_ptr<int64_t>();
  in.L.weight = in.weight.defined() ? in.weight.data_ptr() : nullptr;
  in.L.m = input.size(0);
  in.L.classes = input.size(1);
  in.L.ignore_index = ignore_index;
  in.L.label_smoothing = ls;
  in.L.code = int8_t(input.dtype());
  in.L.stream = current_cuda_stream(input.device().index);
  return in;
}

Tensor ce_forward_cuda(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight,
                       int64_t ignore_index, int64_t reduction, double ls) {
  GpuGuard guard(input.device().index);
  CeInputs in = ce_inputs("cross_entropy", input, target, weight, ignore_index, ls);
  const DType dt = input.dtype(), cdt = reduce::compute_dtype(dt);
  const Device dev = input.device();
  Tensor loss = empty({in.L.m}, {.dtype = cdt, .device = dev});
  Tensor wt = empty({in.L.m}, {.dtype = cdt, .device = dev});
  in.L.row_loss = loss.data_ptr();
  in.L.row_weight = wt.data_ptr();
  launch_cross_entropy(in.L);
  if (reduction == kNone) return reduce::convert(loss, dt);
  Tensor total = loss.sum();
  if (reduction == kMean) total = total / wt.sum();
  return reduce::convert(total, dt);
}

Tensor ce_backward_cuda(const Tensor& grad, const Tensor& input, const Tensor& target,
                        const std::optional<Tensor>& weight, int64_t ignore_index, int64_t reduction, double ls) {
  GpuGuard guard(input.device().index);
  CeInputs in = ce_inputs("cross_entropy_backward", input, target, weight, ignore_index, ls);
  const DType dt = input.dtype(), cdt = reduce::compute_dtype(dt);
  const Device dev = input.device();
  Tensor g = reduce::convert(grad, cdt, true);
  EMBER_CHECK(g.numel() == (reduction == kNone ? in.L.m : 1), "cross_entropy_backward: grad has ", g.numel(),
              " elements, expected ", reduction == kNone ? in.L.m : 1);
  Tensor wsum;
  if (reduction == kMean) {
    Tensor wt = empty({in.L.m}, {.dtype = cdt, .device = dev});
    in.L.row_weight = wt.data_ptr();
    launch_cross_entropy_target_weights(in.L);
    wsum = wt.sum();
  }
  Tensor dx = empty(input.sizes(), {.dtype = dt, .device = dev});
  in.L.dx = dx.data_ptr();
  in.L.grad = g.data_ptr();
  in.L.grad_per_row = reduction == kNone;
  in.L.weight_sum = wsum.defined() ? wsum.data_ptr() : nullptr;
  launch_cross_entropy_backward(in.L);
  return dx;
}

EMBER_REGISTER_KERNEL(cross_entropy_index, CUDA, ce_forward_cuda);
EMBER_REGISTER_KERNEL(cross_entropy_index_backward, CUDA, ce_backward_cuda);

}  // namespace
}  // namespace ember::cuda
