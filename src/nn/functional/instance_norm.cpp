// instance_norm (torch.nn.functional): each (sample, channel) plane normalised by its own
// statistics. As ATen's instance_norm: batch norm over the input viewed as (1, N*C, *), weight,
// bias and running statistics repeated N times; the running statistics are then the mean over
// the batch of the N per-plane updates.
#include "ember/autograd/grad_mode.h"
#include "ember/nn/functional.h"

namespace ember::nn::functional {

Tensor instance_norm(const Tensor& input, const std::optional<Tensor>& running_mean,
                     const std::optional<Tensor>& running_var, const std::optional<Tensor>& weight,
                     const std::optional<Tensor>& bias, bool use_input_stats, double momentum, double eps) {
  EMBER_CHECK(input.dim() >= 2, "instance_norm: expected input with at least 2 dims (N, C, ...), got ", input.sizes());
  EMBER_CHECK(use_input_stats || (running_mean && running_var),
              "Expected running_mean and running_var to be defined when use_input_stats is false");
  const int64_t b = input.sizes()[0], c = input.sizes()[1];
  Shape shape = input.sizes();
  shape[0] = 1;
  shape[1] = b * c;
  auto repeated = [&](const std::optional<Tensor>& t) -> std::optional<Tensor> {
    if (!t) return std::nullopt;
    return t->repeat({b});
  };
  std::optional<Tensor> rm = repeated(running_mean), rv = repeated(running_var);
  Tensor out = batch_norm(input.contiguous().view(shape), rm, rv, repeated(weight), repeated(bias), use_input_stats,
                          momentum, eps);
  if (use_input_stats) {
    NoGradGuard no_grad;
    if (running_mean) Tensor(*running_mean).copy_(rm->view({b, c}).mean({0}));
    if (running_var) Tensor(*running_var).copy_(rv->view({b, c}).mean({0}));
  }
  return out.view(input.sizes());
}

}  // namespace ember::nn::functional
