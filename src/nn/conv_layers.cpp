#include <cmath>

#include "nn/repr.h"
#include "ember/nn/conv.h"

namespace ember::nn {

namespace {
std::string padding_repr(const functional::Padding& p) {
  if (auto* s = std::get_if<std::string>(&p)) return "padding=" + *s;
  return "padding=" + py_tuple(std::get<std::vector<int64_t>>(p));
}
bool nonzero(const functional::Padding& p) {
  if (std::holds_alternative<std::string>(p)) return true;
  for (auto v : std::get<std::vector<int64_t>>(p)) if (v) return true;
  return false;
}
// PyTorch's _ConvNd.reset_parameters: kaiming_uniform_(a=sqrt(5)), bias U(-1/sqrt(fan_in), ..).
void reset_conv(Tensor& weight, Tensor& bias) {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    auto [fan_in, fan_out] = init::calculate_fan_in_and_fan_out(weight);
    double bound = fan_in > 0 ? 1.0 / std::sqrt(double(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}
void check_channels(int64_t in, int64_t out, int64_t groups) {
  EMBER_CHECK_VALUE(groups > 0, "groups must be a positive integer");
  EMBER_CHECK_VALUE(in % groups == 0, "in_channels must be divisible by groups");
  EMBER_CHECK_VALUE(out % groups == 0, "out_channels must be divisible by groups");
}
}  // namespace

Conv2d::Conv2d(int64_t in, int64_t out, std::vector<int64_t> k, Conv2dOptions opts)
    : in_channels(in), out_channels(out), kernel_size(std::move(k)), options(std::move(opts)) {
  check_channels(in, out, options.groups);
  EMBER_CHECK_VALUE(kernel_size.size() == 2, "Conv2d: kernel_size must have 2 elements");
  weight = make_parameter(empty({out, in / options.groups, kernel_size[0], kernel_size[1]}));
  register_parameter("weight", &weight);
  if (options.bias) {
    bias = make_parameter(empty({out}));
    register_parameter("bias", &bias);
  }
  reset_conv(weight, bias);
}

Tensor Conv2d::forward(const Tensor& x) {
  return functional::conv2d(x, weight, bias.defined() ? std::optional<Tensor>(bias) : std::nullopt, options.stride,
                            options.padding, options.dilation, options.groups);
}

std::string Conv2d::extra_repr() const {
  std::string s = std::to_string(in_channels) + ", " + std::to_string(out_channels) +
                  ", kernel_size=" + py_tuple(kernel_size) + ", stride=" + py_tuple(options.stride);
  if (nonzero(options.padding)) s += ", " + padding_repr(options.padding);
  if (options.dilation != std::vector<int64_t>{1, 1}) s += ", dilation=" + py_tuple(options.dilation);
  if (options.groups != 1) s += ", groups=" + std::to_string(options.groups);
  if (!options.bias) s += ", bias=False";
  return s;
}

Conv1d::Conv1d(int64_t in, int64_t out, int64_t k, Conv1dOptions opts)
    : in_channels(in), out_channels(out), kernel_size(k), options(std::move(opts)) {
  check_channels(in, out, options.groups);
  weight = make_parameter(empty({out, in / options.groups, k}));
  register_parameter("weight", &weight);
  if (options.bias) {
    bias = make_parameter(empty({out}));
    register_parameter("bias", &bias);
  }
  reset_conv(weight, bias);
}

Tensor Conv1d::forward(const Tensor& x) {
  return functional::conv1d(x, weight, bias.defined() ? std::optional<Tensor>(bias) : std::nullopt, options.stride,
                            options.padding, options.dilation, options.groups);
}

std::string Conv1d::extra_repr() const {
  std::string s = std::to_string(in_channels) + ", " + std::to_string(out_channels) +
                  ", kernel_size=" + py_tuple({kernel_size}) + ", stride=" + py_tuple({options.stride});
  if (nonzero(options.padding)) s += ", " + padding_repr(options.padding);
  if (options.dilation != 1) s += ", dilation=" + py_tuple({options.dilation});
  if (options.groups != 1) s += ", groups=" + std::to_string(options.groups);
  if (!options.bias) s += ", bias=False";
  return s;
}

// Pooling sizes print as one int when both are equal, as PyTorch prints sizes given as ints.
std::string int_or_tuple(const std::vector<int64_t>& v) {
  return v.size() == 2 && v[0] == v[1] ? std::to_string(v[0]) : py_tuple(v);
}
std::string MaxPool2d::extra_repr() const {
  return "kernel_size=" + int_or_tuple(kernel_size) + ", stride=" + int_or_tuple(stride) + ", padding=" +
         int_or_tuple(padding) + ", dilation=" + int_or_tuple(dilation) + ", ceil_mode=" + (ceil_mode ? "True" : "False");
}
std::string AvgPool2d::extra_repr() const {
  return "kernel_size=" + int_or_tuple(kernel_size) + ", stride=" + int_or_tuple(stride) + ", padding=" +
         int_or_tuple(padding);
}
std::string AdaptiveAvgPool2d::extra_repr() const { return "output_size=" + py_tuple(output_size); }

}  // namespace ember::nn
