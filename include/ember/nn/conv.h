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

// ---- 3-d convolution, transposed convolutions, 1-d/3-d and adaptive max pooling, fold/unfold

struct Conv3dOptions {
  std::vector<int64_t> stride{1, 1, 1};
  functional::Padding padding = std::vector<int64_t>{0, 0, 0};  // or "same" / "valid"
  std::vector<int64_t> dilation{1, 1, 1};
  int64_t groups = 1;
  bool bias = true;
};

// Weight (out, in/groups, kD, kH, kW).
class Conv3d : public Module {
 public:
  Conv3d(int64_t in_channels, int64_t out_channels, std::vector<int64_t> kernel_size, Conv3dOptions opts = {});
  Conv3d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, Conv3dOptions opts = {})
      : Conv3d(in_channels, out_channels, std::vector<int64_t>(3, kernel_size), std::move(opts)) {}
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Conv3d"; }
  std::string extra_repr() const override;
  int64_t in_channels, out_channels;
  std::vector<int64_t> kernel_size;
  Conv3dOptions options;
  Tensor weight, bias;
};

// One value (used for every spatial dim) or one per spatial dim, as the Python module's ints or tuples.
struct ConvTransposeOptions {
  std::vector<int64_t> stride{1};
  std::vector<int64_t> padding{0};
  std::vector<int64_t> output_padding{0};
  int64_t groups = 1;
  bool bias = true;
  std::vector<int64_t> dilation{1};
};

// ConvTranspose1d/2d/3d: weight (in, out/groups, k...), kaiming_uniform(a=sqrt(5)) as torch's.
// forward(x, output_size) picks the output_padding that gives output_size (its spatial sizes,
// or all of them), as torch's forward(input, output_size).
class ConvTransposeNd : public Module {
 public:
  ConvTransposeNd(int64_t dims, int64_t in_channels, int64_t out_channels, std::vector<int64_t> kernel_size,
                  ConvTransposeOptions opts);
  Tensor forward(const Tensor& x) override { return forward(x, {}); }
  Tensor forward(const Tensor& x, IntArrayRef output_size);
  std::string name() const override { return "ConvTranspose" + std::to_string(dims) + "d"; }
  std::string extra_repr() const override;
  int64_t dims, in_channels, out_channels;
  std::vector<int64_t> kernel_size;
  ConvTransposeOptions options;  // each list expanded to `dims` entries
  Tensor weight, bias;
};

class ConvTranspose1d : public ConvTransposeNd {
 public:
  ConvTranspose1d(int64_t in, int64_t out, int64_t kernel_size, ConvTransposeOptions opts = {})
      : ConvTransposeNd(1, in, out, {kernel_size}, std::move(opts)) {}
};
class ConvTranspose2d : public ConvTransposeNd {
 public:
  ConvTranspose2d(int64_t in, int64_t out, std::vector<int64_t> kernel_size, ConvTransposeOptions opts = {})
      : ConvTransposeNd(2, in, out, std::move(kernel_size), std::move(opts)) {}
  ConvTranspose2d(int64_t in, int64_t out, int64_t kernel_size, ConvTransposeOptions opts = {})
      : ConvTransposeNd(2, in, out, {kernel_size}, std::move(opts)) {}
};
class ConvTranspose3d : public ConvTransposeNd {
 public:
  ConvTranspose3d(int64_t in, int64_t out, std::vector<int64_t> kernel_size, ConvTransposeOptions opts = {})
      : ConvTransposeNd(3, in, out, std::move(kernel_size), std::move(opts)) {}
  ConvTranspose3d(int64_t in, int64_t out, int64_t kernel_size, ConvTransposeOptions opts = {})
      : ConvTransposeNd(3, in, out, {kernel_size}, std::move(opts)) {}
};

// Max / average pooling over 1 or 3 spatial dims: sizes are one value or one per dim; stride
// empty = kernel_size. forward returns the pooled values; forward_with_indices also the indices.
struct PoolOptions {
  std::vector<int64_t> stride{};
  std::vector<int64_t> padding{0};
  std::vector<int64_t> dilation{1};  // max pooling only
  bool ceil_mode = false;
  bool count_include_pad = true;  // average pooling only
  std::optional<int64_t> divisor_override;  // AvgPool3d only
};

class MaxPool1d : public Module {
 public:
  explicit MaxPool1d(int64_t kernel_size, PoolOptions opts = {}) : kernel_size{kernel_size}, options(std::move(opts)) {}
  Tensor forward(const Tensor& x) override;
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& x);
  std::string name() const override { return "MaxPool1d"; }
  std::string extra_repr() const override;
  std::vector<int64_t> kernel_size;
  PoolOptions options;
};

class MaxPool3d : public Module {
 public:
  explicit MaxPool3d(std::vector<int64_t> kernel_size, PoolOptions opts = {})
      : kernel_size(std::move(kernel_size)), options(std::move(opts)) {}
  explicit MaxPool3d(int64_t kernel_size, PoolOptions opts = {}) : MaxPool3d(std::vector<int64_t>{kernel_size}, std::move(opts)) {}
  Tensor forward(const Tensor& x) override;
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& x);
  std::string name() const override { return "MaxPool3d"; }
  std::string extra_repr() const override;
  std::vector<int64_t> kernel_size;
  PoolOptions options;
};

class AvgPool1d : public Module {
 public:
  explicit AvgPool1d(int64_t kernel_size, PoolOptions opts = {}) : kernel_size{kernel_size}, options(std::move(opts)) {}
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "AvgPool1d"; }
  std::string extra_repr() const override;
  std::vector<int64_t> kernel_size;
  PoolOptions options;
};

class AvgPool3d : public Module {
 public:
  explicit AvgPool3d(std::vector<int64_t> kernel_size, PoolOptions opts = {})
      : kernel_size(std::move(kernel_size)), options(std::move(opts)) {}
  explicit AvgPool3d(int64_t kernel_size, PoolOptions opts = {}) : AvgPool3d(std::vector<int64_t>{kernel_size}, std::move(opts)) {}
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "AvgPool3d"; }
  std::string extra_repr() const override;
  std::vector<int64_t> kernel_size;
  PoolOptions options;
};

// AdaptiveAvgPool1d/3d and AdaptiveMaxPool1d/2d/3d: output_size one value or one per dim.
class AdaptivePoolNd : public Module {
 public:
  AdaptivePoolNd(bool max, int64_t dims, std::vector<int64_t> output_size)
      : max(max), dims(dims), output_size(std::move(output_size)) {}
  Tensor forward(const Tensor& x) override;
  // max pooling only: the values and their indices
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& x);
  std::string name() const override {
    return std::string(max ? "AdaptiveMaxPool" : "AdaptiveAvgPool") + std::to_string(dims) + "d";
  }
  std::string extra_repr() const override;
  bool max;
  int64_t dims;
  std::vector<int64_t> output_size;
};
struct AdaptiveAvgPool1d : AdaptivePoolNd {
  explicit AdaptiveAvgPool1d(int64_t s) : AdaptivePoolNd(false, 1, {s}) {}
};
struct AdaptiveAvgPool3d : AdaptivePoolNd {
  explicit AdaptiveAvgPool3d(std::vector<int64_t> s) : AdaptivePoolNd(false, 3, std::move(s)) {}
  explicit AdaptiveAvgPool3d(int64_t s) : AdaptivePoolNd(false, 3, {s, s, s}) {}
};
struct AdaptiveMaxPool1d : AdaptivePoolNd {
  explicit AdaptiveMaxPool1d(int64_t s) : AdaptivePoolNd(true, 1, {s}) {}
};
struct AdaptiveMaxPool2d : AdaptivePoolNd {
  explicit AdaptiveMaxPool2d(std::vector<int64_t> s) : AdaptivePoolNd(true, 2, std::move(s)) {}
  explicit AdaptiveMaxPool2d(int64_t s) : AdaptivePoolNd(true, 2, {s, s}) {}
};
struct AdaptiveMaxPool3d : AdaptivePoolNd {
  explicit AdaptiveMaxPool3d(std::vector<int64_t> s) : AdaptivePoolNd(true, 3, std::move(s)) {}
  explicit AdaptiveMaxPool3d(int64_t s) : AdaptivePoolNd(true, 3, {s, s, s}) {}
};

// Fold / Unfold: sizes one value or two.
struct FoldOptions {
  std::vector<int64_t> dilation{1};
  std::vector<int64_t> padding{0};
  std::vector<int64_t> stride{1};
};

class Unfold : public Module {
 public:
  explicit Unfold(std::vector<int64_t> kernel_size, FoldOptions opts = {})
      : kernel_size(std::move(kernel_size)), options(std::move(opts)) {}
  Tensor forward(const Tensor& x) override {
    return functional::unfold(x, kernel_size, options.dilation, options.padding, options.stride);
  }
  std::string name() const override { return "Unfold"; }
  std::string extra_repr() const override;
  std::vector<int64_t> kernel_size;
  FoldOptions options;
};

class Fold : public Module {
 public:
  Fold(std::vector<int64_t> output_size, std::vector<int64_t> kernel_size, FoldOptions opts = {})
      : output_size(std::move(output_size)), kernel_size(std::move(kernel_size)), options(std::move(opts)) {}
  Tensor forward(const Tensor& x) override {
    return functional::fold(x, output_size, kernel_size, options.dilation, options.padding, options.stride);
  }
  std::string name() const override { return "Fold"; }
  std::string extra_repr() const override;
  std::vector<int64_t> output_size, kernel_size;
  FoldOptions options;
};

}  // namespace ember::nn
