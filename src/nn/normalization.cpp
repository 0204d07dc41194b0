#include "nn/repr.h"
#include "ember/nn/normalization.h"

#include <sstream>

namespace ember::nn {

namespace {
std::optional<Tensor> opt(const Tensor& t) { return t.defined() ? std::optional<Tensor>(t) : std::nullopt; }
}  // namespace

BatchNorm::BatchNorm(int64_t n, double eps, std::optional<double> momentum, bool affine, bool track)
    : num_features(n), eps(eps), momentum(momentum), affine(affine), track_running_stats(track) {
  if (affine) {
    weight = make_parameter(ones({n}));
    bias = make_parameter(zeros({n}));
    register_parameter("weight", &weight);
    register_parameter("bias", &bias);
  }
  if (track) {
    running_mean = zeros({n});
    running_var = ones({n});
    num_batches_tracked = zeros({}, {.dtype = kInt64});
    register_buffer("running_mean", &running_mean);
    register_buffer("running_var", &running_var);
    register_buffer("num_batches_tracked", &num_batches_tracked);
  }
}

Tensor BatchNorm::forward(const Tensor& x) {
  check_input(x);
  double factor = momentum.value_or(0.0);
  if (is_training() && track_running_stats) {
    {
      NoGradGuard no_grad;
      num_batches_tracked.add_(1);
    }
    if (!momentum) factor = 1.0 / double(num_batches_tracked.item<int64_t>());  // cumulative moving average
  }
  // Batch statistics in training, or whenever there are no running statistics.
  bool use_batch_stats = is_training() || !track_running_stats;
  return functional::batch_norm(x, (!is_training() || track_running_stats) ? opt(running_mean) : std::nullopt,
                                (!is_training() || track_running_stats) ? opt(running_var) : std::nullopt, opt(weight),
                                opt(bias), use_batch_stats, factor, eps);
}

std::string BatchNorm::extra_repr() const {
  return std::to_string(num_features) + ", eps=" + py_float(eps) +
         ", momentum=" + (momentum ? py_float(*momentum) : std::string("None")) +
         ", affine=" + (affine ? "True" : "False") + ", track_running_stats=" + (track_running_stats ? "True" : "False");
}

void BatchNorm1d::check_input(const Tensor& x) const {
  EMBER_CHECK_VALUE(x.dim() == 2 || x.dim() == 3, "expected 2D or 3D input (got ", x.dim(), "D input)");
}
void BatchNorm2d::check_input(const Tensor& x) const {
  EMBER_CHECK_VALUE(x.dim() == 4, "expected 4D input (got ", x.dim(), "D input)");
}

LayerNorm::LayerNorm(std::vector<int64_t> shape, double eps, bool affine, bool with_bias)
    : normalized_shape(std::move(shape)), eps(eps) {
  if (affine) {
    weight = make_parameter(ones(normalized_shape));
    register_parameter("weight", &weight);
    if (with_bias) {
      bias = make_parameter(zeros(normalized_shape));
      register_parameter("bias", &bias);
    }
  }
}
Tensor LayerNorm::forward(const Tensor& x) { return functional::layer_norm(x, normalized_shape, opt(weight), opt(bias), eps); }
std::string LayerNorm::extra_repr() const {
  return py_tuple(normalized_shape) + ", eps=" + py_float(eps) + ", elementwise_affine=" + (weight.defined() ? "True" : "False");
}

RMSNorm::RMSNorm(std::vector<int64_t> shape, std::optional<double> eps, bool affine) : normalized_shape(std::move(shape)), eps(eps) {
  if (affine) {
    weight = make_parameter(ones(normalized_shape));
    register_parameter("weight", &weight);
  }
}
Tensor RMSNorm::forward(const Tensor& x) { return functional::rms_norm(x, normalized_shape, opt(weight), eps); }
std::string RMSNorm::extra_repr() const {
  return py_tuple(normalized_shape) + ", eps=" + (eps ? py_float(*eps) : std::string("None")) +
         ", elementwise_affine=" + (weight.defined() ? "True" : "False");
}

GroupNorm::GroupNorm(int64_t groups, int64_t channels, double eps, bool affine)
    : num_groups(groups), num_channels(channels), eps(eps) {
  EMBER_CHECK_VALUE(groups > 0 && channels % groups == 0, "num_channels must be divisible by num_groups");
  if (affine) {
    weight = make_parameter(ones({channels}));
    bias = make_parameter(zeros({channels}));
    register_parameter("weight", &weight);
    register_parameter("bias", &bias);
  }
}
Tensor GroupNorm::forward(const Tensor& x) { return functional::group_norm(x, num_groups, opt(weight), opt(bias), eps); }
std::string GroupNorm::extra_repr() const {
  return std::to_string(num_groups) + ", " + std::to_string(num_channels) + ", eps=" + py_float(eps) +
         ", affine=" + (weight.defined() ? "True" : "False");
}

Embedding::Embedding(int64_t num, int64_t dim, std::optional<int64_t> padding_idx)
    : num_embeddings(num), embedding_dim(dim), padding_idx(padding_idx) {
  if (padding_idx) {
    EMBER_CHECK_VALUE(*padding_idx < num && *padding_idx >= -num, "Padding_idx must be within num_embeddings");
    if (*this->padding_idx < 0) *this->padding_idx += num;
  }
  Tensor w = randn({num, dim});
  if (this->padding_idx) w.select(0, *this->padding_idx).zero_();
  weight = make_parameter(w);
  register_parameter("weight", &weight);
}
Tensor Embedding::forward(const Tensor& indices) { return functional::embedding(indices, weight, padding_idx); }
std::string Embedding::extra_repr() const {
  std::string s = std::to_string(num_embeddings) + ", " + std::to_string(embedding_dim);
  if (padding_idx) s += ", padding_idx=" + std::to_string(*padding_idx);
  return s;
}

}  // namespace ember::nn
