#include "ember/nn/linear.h"

#include <cmath>

#include "ember/autograd/grad_mode.h"
#include "ember/nn/functional.h"

namespace ember::nn {

Linear::Linear(int64_t in, int64_t out, bool with_bias, TensorOptions opts) : in_features(in), out_features(out) {
  EMBER_CHECK_VALUE(in >= 0 && out >= 0, "Linear: in_features and out_features must be non-negative, got ", in,
                    " and ", out);
  opts.requires_grad = false;
  register_parameter("weight", &weight);
  weight = make_parameter(empty({out, in}, opts));
  if (with_bias) {
    bias = make_parameter(empty({out}, opts));
    register_parameter("bias", &bias);
  }
  reset_parameters();
}

void Linear::reset_parameters() {
  // kaiming_uniform_(a=sqrt(5)) on (out, in) is U(-1/sqrt(in), 1/sqrt(in)); bias the same.
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    double bound = in_features > 0 ? 1.0 / std::sqrt(double(in_features)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Linear::forward(const Tensor& x) {
  Tensor y = functional::linear(x, weight, bias.defined() ? std::optional<Tensor>(bias) : std::nullopt);
  if (lora_active()) y = y + lora_output(x, is_training());
  return y;
}

void Linear::merge_lora(bool on) {
  if (!has_lora() || lora_merged == on) return;
  autograd::NoGradGuard no_grad;
  if (on) weight.add_(lora_delta());
  else weight.sub_(lora_delta());
  lora_merged = on;
}

std::string Linear::extra_repr() const {
  return "in_features=" + std::to_string(in_features) + ", out_features=" + std::to_string(out_features) +
         ", bias=" + (bias.defined() ? "True" : "False");
}

std::string Flatten::extra_repr() const {
  return "start_dim=" + std::to_string(start_dim) + ", end_dim=" + std::to_string(end_dim);
}

std::string Unflatten::extra_repr() const {
  std::string s = "dim=" + std::to_string(dim) + ", unflattened_size=(";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + (sizes.size() == 1 ? ",)" : ")");
}

}  // namespace ember::nn
