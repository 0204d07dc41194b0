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

// ---- 3-d convolution, transposed convolutions, 1-d/3-d and adaptive pooling, fold/unfold

Conv3d::Conv3d(int64_t in, int64_t out, std::vector<int64_t> k, Conv3dOptions opts)
    : in_channels(in), out_channels(out), kernel_size(std::move(k)), options(std::move(opts)) {
  check_channels(in, out, options.groups);
  if (kernel_size.size() == 1) kernel_size.assign(3, kernel_size[0]);
  EMBER_CHECK_VALUE(kernel_size.size() == 3, "Conv3d: kernel_size must have 1 or 3 elements");
  weight = make_parameter(empty({out, in / options.groups, kernel_size[0], kernel_size[1], kernel_size[2]}));
  register_parameter("weight", &weight);
  if (options.bias) {
    bias = make_parameter(empty({out}));
    register_parameter("bias", &bias);
  }
  reset_conv(weight, bias);
}

Tensor Conv3d::forward(const Tensor& x) {
  return functional::conv3d(x, weight, bias.defined() ? std::optional<Tensor>(bias) : std::nullopt, options.stride,
                            options.padding, options.dilation, options.groups);
}

std::string Conv3d::extra_repr() const {
  std::string s = std::to_string(in_channels) + ", " + std::to_string(out_channels) +
                  ", kernel_size=" + py_tuple(kernel_size) + ", stride=" + py_tuple(options.stride);
  if (nonzero(options.padding)) s += ", " + padding_repr(options.padding);
  if (options.dilation != std::vector<int64_t>{1, 1, 1}) s += ", dilation=" + py_tuple(options.dilation);
  if (options.groups != 1) s += ", groups=" + std::to_string(options.groups);
  if (!options.bias) s += ", bias=False";
  return s;
}

namespace {
std::vector<int64_t> expand_to(std::vector<int64_t> v, int64_t n, const char* what) {
  if (v.size() == 1) v.assign(size_t(n), v[0]);
  EMBER_CHECK_VALUE(int64_t(v.size()) == n, "expected ", what, " to have 1 or ", n, " elements, but got ", v.size());
  return v;
}
bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  for (int64_t e : v)
    if (e != x) return false;
  return true;
}
}  // namespace

ConvTransposeNd::ConvTransposeNd(int64_t n, int64_t in, int64_t out, std::vector<int64_t> k, ConvTransposeOptions opts)
    : dims(n), in_channels(in), out_channels(out), kernel_size(expand_to(std::move(k), n, "kernel_size")),
      options(std::move(opts)) {
  check_channels(in, out, options.groups);
  options.stride = expand_to(options.stride, n, "stride");
  options.padding = expand_to(options.padding, n, "padding");
  options.output_padding = expand_to(options.output_padding, n, "output_padding");
  options.dilation = expand_to(options.dilation, n, "dilation");
  Shape w{in, out / options.groups};
  w.insert(w.end(), kernel_size.begin(), kernel_size.end());
  weight = make_parameter(ember::empty(w));
  register_parameter("weight", &weight);
  if (options.bias) {
    bias = make_parameter(empty({out}));
    register_parameter("bias", &bias);
  }
  reset_conv(weight, bias);
}

Tensor ConvTransposeNd::forward(const Tensor& x, IntArrayRef output_size) {
  std::vector<int64_t> op = options.output_padding;
  if (!output_size.empty())
    op = functional::conv_transpose_output_padding(x.sizes(), output_size, options.stride, options.padding,
                                                   kernel_size, options.dilation);
  std::optional<Tensor> b = bias.defined() ? std::optional<Tensor>(bias) : std::nullopt;
  auto f = dims == 1 ? functional::conv_transpose1d : dims == 2 ? functional::conv_transpose2d : functional::conv_transpose3d;
  return f(x, weight, b, options.stride, options.padding, op, options.groups, options.dilation);
}

std::string ConvTransposeNd::extra_repr() const {
  std::string s = std::to_string(in_channels) + ", " + std::to_string(out_channels) +
                  ", kernel_size=" + py_tuple(kernel_size) + ", stride=" + py_tuple(options.stride);
  if (!all_equal(options.padding, 0)) s += ", padding=" + py_tuple(options.padding);
  if (!all_equal(options.dilation, 1)) s += ", dilation=" + py_tuple(options.dilation);
  if (!all_equal(options.output_padding, 0)) s += ", output_padding=" + py_tuple(options.output_padding);
  if (options.groups != 1) s += ", groups=" + std::to_string(options.groups);
  if (!options.bias) s += ", bias=False";
  return s;
}

namespace {
// A size as the Python module prints what it was given: an int, or a tuple.
std::string size_repr(const std::vector<int64_t>& v) { return v.size() == 1 ? std::to_string(v[0]) : py_tuple(v); }
std::string max_pool_repr(const std::vector<int64_t>& k, const PoolOptions& o) {
  return "kernel_size=" + size_repr(k) + ", stride=" + size_repr(o.stride.empty() ? k : o.stride) +
         ", padding=" + size_repr(o.padding) + ", dilation=" + size_repr(o.dilation) +
         ", ceil_mode=" + (o.ceil_mode ? "True" : "False");
}
std::string avg_pool_repr(const std::vector<int64_t>& k, const PoolOptions& o) {
  return "kernel_size=" + size_repr(k) + ", stride=" + size_repr(o.stride.empty() ? k : o.stride) +
         ", padding=" + size_repr(o.padding);
}
}  // namespace

Tensor MaxPool1d::forward(const Tensor& x) {
  return functional::max_pool1d(x, kernel_size, options.stride, options.padding, options.dilation, options.ceil_mode);
}
std::tuple<Tensor, Tensor> MaxPool1d::forward_with_indices(const Tensor& x) {
  return functional::max_pool1d_with_indices(x, kernel_size, options.stride, options.padding, options.dilation,
                                             options.ceil_mode);
}
std::string MaxPool1d::extra_repr() const { return max_pool_repr(kernel_size, options); }

Tensor MaxPool3d::forward(const Tensor& x) {
  return functional::max_pool3d(x, kernel_size, options.stride, options.padding, options.dilation, options.ceil_mode);
}
std::tuple<Tensor, Tensor> MaxPool3d::forward_with_indices(const Tensor& x) {
  return functional::max_pool3d_with_indices(x, kernel_size, options.stride, options.padding, options.dilation,
                                             options.ceil_mode);
}
std::string MaxPool3d::extra_repr() const { return max_pool_repr(kernel_size, options); }

Tensor AvgPool1d::forward(const Tensor& x) {
  return functional::avg_pool1d(x, kernel_size, options.stride, options.padding, options.ceil_mode,
                                options.count_include_pad);
}
std::string AvgPool1d::extra_repr() const { return avg_pool_repr(kernel_size, options); }

Tensor AvgPool3d::forward(const Tensor& x) {
  return functional::avg_pool3d(x, kernel_size, options.stride, options.padding, options.ceil_mode,
                                options.count_include_pad, options.divisor_override);
}
std::string AvgPool3d::extra_repr() const { return avg_pool_repr(kernel_size, options); }

std::tuple<Tensor, Tensor> AdaptivePoolNd::forward_with_indices(const Tensor& x) {
  EMBER_CHECK(max, name(), " has no indices");
  if (dims == 1) return functional::adaptive_max_pool1d_with_indices(x, output_size);
  if (dims == 2) return functional::adaptive_max_pool2d_with_indices(x, output_size);
  return functional::adaptive_max_pool3d_with_indices(x, output_size);
}
Tensor AdaptivePoolNd::forward(const Tensor& x) {
  if (max) return std::get<0>(forward_with_indices(x));
  if (dims == 1) return functional::adaptive_avg_pool1d(x, output_size);
  if (dims == 2) return functional::adaptive_avg_pool2d(x, output_size);
  return functional::adaptive_avg_pool3d(x, output_size);
}
std::string AdaptivePoolNd::extra_repr() const { return "output_size=" + size_repr(output_size); }

std::string Unfold::extra_repr() const {
  return "kernel_size=" + size_repr(kernel_size) + ", dilation=" + size_repr(options.dilation) +
         ", padding=" + size_repr(options.padding) + ", stride=" + size_repr(options.stride);
}
std::string Fold::extra_repr() const {
  return "output_size=" + size_repr(output_size) + ", " + Unfold(kernel_size, options).extra_repr();
}

}  // namespace ember::nn
