#pragma once
// The multi-tensor update ops behind the built-in optimizers (torch._fused_adam_ and family):
// one call updates every parameter of a list in place, on the parameters' device.
//   ember::_fused_sgd_(params, grads, bufs, /*weight_decay=*/0, /*momentum=*/0.9, /*lr=*/0.1,
//                      /*dampening=*/0, /*nesterov=*/false, /*maximize=*/false, /*is_first_step=*/false);
// Every list holds one tensor per parameter, of its shape, dtype and device (a list whose
// option is off is empty); state_steps are one-element float32 tensors holding each parameter's
// step count for this update (the caller increments them first, as torch's optimizers do).
// A list that breaks these rules raises an Error naming the op, the list and the values.
#include "ember/tensor.h"

namespace ember {

// Adam (L2 weight decay added to the gradient) and AdamW (decoupled: p *= 1 - lr * weight_decay).
void _fused_adam_(TensorList params, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
                  TensorList max_exp_avg_sqs, TensorList state_steps, double lr, double beta1, double beta2,
                  double weight_decay, double eps, bool amsgrad, bool maximize);
void _fused_adamw_(TensorList params, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
                   TensorList max_exp_avg_sqs, TensorList state_steps, double lr, double beta1, double beta2,
                   double weight_decay, double eps, bool amsgrad, bool maximize);
// momentum_buffer_list is empty when momentum == 0; with is_first_step the buffers are
// overwritten with this step's gradient (torch's first-step rule).
void _fused_sgd_(TensorList params, TensorList grads, TensorList momentum_buffer_list, double weight_decay,
                 double momentum, double lr, double dampening, bool nesterov, bool maximize, bool is_first_step);
void _fused_adagrad_(TensorList params, TensorList grads, TensorList state_sums, TensorList state_steps, double lr,
                     double lr_decay, double weight_decay, double eps, bool maximize);
// momentum_buffer_list is empty unless momentum > 0, grad_avgs empty unless centered.
void _fused_rmsprop_(TensorList params, TensorList grads, TensorList square_avgs, TensorList momentum_buffer_list,
                     TensorList grad_avgs, double lr, double alpha, double eps, double weight_decay, double momentum,
                     bool centered, bool maximize);

}  // namespace ember
