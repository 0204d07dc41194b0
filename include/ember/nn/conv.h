#pragma once
// Convolution and pooling layers.
#include "ember/nn/functional.h"
#include "ember/nn/module.h"

namespace ember::nn {

struct Conv2dOptions {
  std::vector<int64_t> stride{1, 1};
  functional::Padding padding = std::vector<int64_t>{0, 0};  // or "same" / "valid"
  std::vector<int64_t> dilation{1, 1};
  int64_t groups = 1;
  bool bias = true;
};

// Conv2d(in, out, {3, 3}, {.padding = "same"}). Weight (out, in/groups, kH, kW), kaiming_uniform(a=sqrt(5)).
class Conv2d : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, std::vector<int64_t> kernel_size, Conv2dOptions opts = {});
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, Conv2dOptions opts = {})
      : Conv2d(in_channels, out_channels, std::vector<int64_t>{kernel_size, kernel_size}, std::move(opts)) {}
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Conv2d"; }
  std::string extra_repr() const override;
  int64_t in_channels, out_channels;
  std::vector<int64_t> kernel_size;
  Conv2dOptions options;
  Tensor weight, bias;
};

struct Conv1dOptions {
  int64_t stride = 1;
  functional::Padding padding = std::vector<int64_t>{0};
  int64_t dilation = 1;
  int64_t groups = 1;
  bool bias = true;
};

class Conv1d : public Module {
 public:
  Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, Conv1dOptions opts = {});
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Conv1d"; }
  std::string extra_repr() const override;
  int64_t in_channels, out_channels, kernel_size;
  Conv1dOptions options;
  Tensor weight, bias;
};

class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(std::vector<int64_t> kernel_size, std::vector<int64_t> stride = {},
                     std::vector<int64_t> padding = {0, 0}, std::vector<int64_t> dilation = {1, 1}, bool ceil_mode = false)
      : kernel_size(std::move(kernel_size)), stride(stride.empty() ? this->kernel_size : std::move(stride)),
        padding(std::move(padding)), dilation(std::move(dilation)), ceil_mode(ceil_mode) {}
  explicit MaxPool2d(int64_t k, std::optional<int64_t> s = std::nullopt, int64_t padding = 0, int64_t dilation = 1,
                     bool ceil_mode = false)
      : MaxPool2d(std::vector<int64_t>{k, k}, std::vector<int64_t>{s.value_or(k), s.value_or(k)},
                  std::vector<int64_t>{padding, padding}, std::vector<int64_t>{dilation, dilation}, ceil_mode) {}
  Tensor forward(const Tensor& x) override {
    return functional::max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode);
  }
  std::string name() const override { return "MaxPool2d"; }
  std::string extra_repr() const override;
  std::vector<int64_t> kernel_size, stride, padding, dilation;
  bool ceil_mode;
};

class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(std::vector<int64_t> kernel_size, std::vector<int64_t> stride = {},
                     std::vector<int64_t> padding = {0, 0}, bool ceil_mode = false, bool count_include_pad = true)
      : kernel_size(std::move(kernel_size)), stride(stride.empty() ? this->kernel_size : std::move(stride)),
        padding(std::move(padding)), ceil_mode(ceil_mode), count_include_pad(count_include_pad) {}
  explicit AvgPool2d(int64_t k, std::optional<int64_t> s = std::nullopt, int64_t padding = 0)
      : AvgPool2d(std::vector<int64_t>{k, k}, std::vector<int64_t>{s.value_or(k), s.value_or(k)},
                  std::vector<int64_t>{padding, padding}) {}
  Tensor forward(const Tensor& x) override {
    return functional::avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad);
  }
  std::string name() const override { return "AvgPool2d"; }
  std::string extra_repr() const override;
  std::vector<int64_t> kernel_size, stride, padding;
  bool ceil_mode, count_include_pad;
};

class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(std::vector<int64_t> output_size) : output_size(std::move(output_size)) {}
  explicit AdaptiveAvgPool2d(int64_t s) : output_size{s, s} {}
  Tensor forward(const Tensor& x) override { return functional::adaptive_avg_pool2d(x, output_size); }
  std::string name() const override { return "AdaptiveAvgPool2d"; }
  std::string extra_repr() const override;
  std::vector<int64_t> output_size;
};

}  // namespace ember::nn
