// max_pool2d, avg_pool2d and adaptive_avg_pool2d (torch.nn.functional), with PyTorch's argument
// checks and messages. Each is one dispatched op on batched (N, C, H, W) input (CPU kernels in
// src/cpu/pool_kernels.cpp); unbatched (C, H, W) input gains a batch dim here. The backward
// ops are linear in grad_output and carry their own formulas, so double backward works.
#include "autograd/record.h"
#include "ember/nn/functional.h"
#include "ops/op_handles.h"
#include "ops/pool_geometry.h"

namespace ember::nn::functional {

namespace {

Shape two(IntArrayRef v) { return v.size() == 1 ? Shape{v[0], v[0]} : Shape{v[0], v[1]}; }

struct PoolArgs {
  Shape k, s, p, d;
};

void check_pool_input(const Tensor& input) {
  bool ok = input.dim() == 3 || input.dim() == 4;
  if (ok)
    for (int64_t i = input.dim() - 3; i < input.dim(); ++i) ok = ok && input.sizes()[i] != 0;
  EMBER_CHECK(ok, "non-empty 3D or 4D (batch mode) tensor expected for input");
}

void check_output_size(const Tensor& input, int64_t OH, int64_t OW) {
  const int64_t C = input.sizes()[input.dim() - 3], H = input.sizes()[input.dim() - 2],
                W = input.sizes()[input.dim() - 1];
  EMBER_CHECK(OH >= 1 && OW >= 1, "Given input size: (", C, "x", H, "x", W, "). Calculated output size: (", C, "x",
              OH, "x", OW, "). Output size is too small");
}

}  // namespace

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                                                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  EMBER_CHECK(kernel_size.size() == 1 || kernel_size.size() == 2,
              "max_pool2d: kernel_size must either be a single int, or a tuple of two ints");
  EMBER_CHECK(stride.size() <= 2, "max_pool2d: stride must either be omitted, a single int, or a tuple of two ints");
  EMBER_CHECK(padding.size() == 1 || padding.size() == 2,
              "max_pool2d: padding must either be a single int, or a tuple of two ints");
  EMBER_CHECK(dilation.size() == 1 || dilation.size() == 2,
              "max_pool2d: dilation must be either a single int, or a tuple of two ints");
  PoolArgs a{two(kernel_size), stride.empty() ? two(kernel_size) : two(stride), two(padding), two(dilation)};
  EMBER_CHECK(a.s[0] != 0 && a.s[1] != 0, "stride should not be zero");
  EMBER_CHECK(a.k[0] > 0 && a.k[1] > 0, "kernel size should be greater than zero, but got kH: ", a.k[0],
              " kW: ", a.k[1]);
  EMBER_CHECK(a.s[0] > 0 && a.s[1] > 0, "stride should be greater than zero, but got dH: ", a.s[0], " dW: ", a.s[1]);
  EMBER_CHECK(a.d[0] > 0 && a.d[1] > 0, "dilation should be greater than zero, but got dilationH: ", a.d[0],
              " dilationW: ", a.d[1]);
  check_pool_input(input);
  for (int i = 0; i < 2; ++i) {
    EMBER_CHECK(a.p[i] >= 0, "pad must be non-negative, but got pad: ", a.p[i]);
    EMBER_CHECK(a.p[i] <= ((a.k[i] - 1) * a.d[i] + 1) / 2, "pad should be at most half of effective kernel size, but got pad=",
                a.p[i], ", kernel_size=", a.k[i], " and dilation=", a.d[i]);
  }
  EMBER_CHECK(is_floating(input.dtype()), "\"max_pool2d\" not implemented for '", scalar_type_name(input.dtype()), "'");
  const int64_t H = input.sizes()[input.dim() - 2], W = input.sizes()[input.dim() - 1];
  check_output_size(input, pool_out_size(H, a.k[0], a.p[0], a.s[0], a.d[0], ceil_mode),
                    pool_out_size(W, a.k[1], a.p[1], a.s[1], a.d[1], ceil_mode));
  if (input.dim() == 3) {
    auto [o, i] = ops::max_pool2d_with_indices()(input.unsqueeze(0), a.k, a.s, a.p, a.d, ceil_mode);
    return {o.squeeze(0), i.squeeze(0)};
  }
  return ops::max_pool2d_with_indices()(input, a.k, a.s, a.p, a.d, ceil_mode);
}

Tensor max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
  return std::get<0>(max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode));
}

Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  EMBER_CHECK(kernel_size.size() == 1 || kernel_size.size() == 2,
              "avg_pool2d: kernel_size must either be a single int, or a tuple of two ints");
  EMBER_CHECK(stride.size() <= 2, "avg_pool2d: stride must either be omitted, a single int, or a tuple of two ints");
  EMBER_CHECK(padding.size() == 1 || padding.size() == 2,
              "avg_pool2d: padding must either be a single int, or a tuple of two ints");
  PoolArgs a{two(kernel_size), stride.empty() ? two(kernel_size) : two(stride), two(padding), {1, 1}};
  EMBER_CHECK(a.s[0] != 0 && a.s[1] != 0, "stride should not be zero");
  EMBER_CHECK(a.k[0] > 0 && a.k[1] > 0, "kernel size should be greater than zero, but got kH: ", a.k[0],
              " kW: ", a.k[1]);
  EMBER_CHECK(a.s[0] > 0 && a.s[1] > 0, "stride should be greater than zero, but got dH: ", a.s[0], " dW: ", a.s[1]);
  check_pool_input(input);
  for (int i = 0; i < 2; ++i) {
    EMBER_CHECK(a.p[i] >= 0, "pad must be non-negative, but got pad: ", a.p[i]);
    EMBER_CHECK(a.p[i] <= a.k[i] / 2, "pad should be at most half of kernel size, but got pad=", a.p[i],
                " and kernel_size=", a.k[i]);
  }
  EMBER_CHECK(is_floating(input.dtype()), "\"avg_pool2d\" not implemented for '", scalar_type_name(input.dtype()), "'");
  const int64_t H = input.sizes()[input.dim() - 2], W = input.sizes()[input.dim() - 1];
  check_output_size(input, pool_out_size(H, a.k[0], a.p[0], a.s[0], 1, ceil_mode),
                    pool_out_size(W, a.k[1], a.p[1], a.s[1], 1, ceil_mode));
  EMBER_CHECK(!divisor_override || *divisor_override != 0, "divisor must be not zero");
  Tensor x = input.dim() == 3 ? input.unsqueeze(0) : input, y;
  if (divisor_override)  // the 3-d op takes a divisor; the 2-d one does not
    y = ops::avg_pool3d()(x.unsqueeze(2), {1, a.k[0], a.k[1]}, {1, a.s[0], a.s[1]}, {0, a.p[0], a.p[1]}, ceil_mode,
                          count_include_pad, *divisor_override)
            .squeeze(2);
  else
    y = ops::avg_pool2d()(x, a.k, a.s, a.p, ceil_mode, count_include_pad);
  return input.dim() == 3 ? y.squeeze(0) : y;
}

Tensor adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size) {
  EMBER_CHECK(output_size.size() == 1 || output_size.size() == 2, "adaptive_avg_pool2d: output_size must be 2");
  EMBER_CHECK(input.dim() == 3 || input.dim() == 4, "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got ",
              input.sizes());
  for (int64_t i = 1; i < input.dim(); ++i)
    EMBER_CHECK(input.sizes()[i] > 0 || (input.dim() == 3 && i == 0),
                "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has sizes ",
                input.sizes(), " with dimension ", i, " being empty");
  Shape os = two(output_size);
  EMBER_CHECK(os[0] >= 0 && os[1] >= 0, "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but received {",
              os[0], ", ", os[1], "}");
  EMBER_CHECK(is_floating(input.dtype()), "\"adaptive_avg_pool2d\" not implemented for '", scalar_type_name(input.dtype()),
              "'");
  // Global average pooling (a classifier head's) is a mean over H and W, as torch computes it: the
  // reduction kernels read each plane once in vectors, where the pooling kernel walks windows.
  if (os[0] == 1 && os[1] == 1 && input.is_contiguous()) return input.mean({-2, -1}, /*keepdim=*/true);
  if (input.dim() == 3) return ops::adaptive_avg_pool2d()(input.unsqueeze(0), os).squeeze(0);
  return ops::adaptive_avg_pool2d()(input, os);
}

}  // namespace ember::nn::functional

// ---------------------------------------------------------------- gradients
// Each pool is linear in its input; its backward op is linear in grad_output, and the gradient
// of a backward op with respect to grad_output is the forward pool again (max pool: a gather of
// the incoming gradient at the saved indices).
namespace ember {
namespace {
using namespace autograd;

Shape own(IntArrayRef v) { return Shape(v.begin(), v.end()); }

std::tuple<Tensor, Tensor> max_pool2d_ag(const Tensor& input, IntArrayRef k, IntArrayRef s, IntArrayRef p,
                                         IntArrayRef d, bool ceil_mode) {
  auto out_idx = below_autograd([&] { return ops::max_pool2d_with_indices()(input, k, s, p, d, ceil_mode); });
  Tensor out = std::get<0>(out_idx), idx = std::get<1>(out_idx);  // captured below: no structured binding (clang 14)
  record("MaxPool2DWithIndicesBackward0", {input}, {out}, {saved_input(input)},
         [idx](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] { return ops::max_pool2d_backward()(g[0], n.unpack(0), idx); })};
         });
  return {out, idx};
}

Tensor max_pool2d_backward_ag(const Tensor& grad_out, const Tensor& input, const Tensor& indices) {
  Tensor out = below_autograd([&] { return ops::max_pool2d_backward()(grad_out, input, indices); });
  record("MaxPool2DWithIndicesBackwardBackward0", {grad_out}, {out}, {},
         [indices](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] {
             return g[0].flatten(2).gather(2, indices.flatten(2)).view(indices.sizes());
           })};
         });
  return out;
}

Tensor avg_pool2d_ag(const Tensor& input, IntArrayRef k, IntArrayRef s, IntArrayRef p, bool ceil_mode, bool cip) {
  Tensor out = below_autograd([&] { return ops::avg_pool2d()(input, k, s, p, ceil_mode, cip); });
  record("AvgPool2DBackward0", {input}, {out}, {saved_input(input)},
         [k = own(k), s = own(s), p = own(p), ceil_mode, cip](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] { return ops::avg_pool2d_backward()(g[0], n.unpack(0), k, s, p, ceil_mode, cip); })};
         });
  return out;
}

Tensor avg_pool2d_backward_ag(const Tensor& grad_out, const Tensor& input, IntArrayRef k, IntArrayRef s,
                              IntArrayRef p, bool ceil_mode, bool cip) {
  Tensor out = below_autograd([&] { return ops::avg_pool2d_backward()(grad_out, input, k, s, p, ceil_mode, cip); });
  record("AvgPool2DBackwardBackward0", {grad_out}, {out}, {},
         [k = own(k), s = own(s), p = own(p), ceil_mode, cip](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] { return ops::avg_pool2d()(g[0], k, s, p, ceil_mode, cip); })};
         });
  return out;
}

Tensor adaptive_avg_pool2d_ag(const Tensor& input, IntArrayRef osize) {
  Tensor out = below_autograd([&] { return ops::adaptive_avg_pool2d()(input, osize); });
  record("AdaptiveAvgPool2DBackward0", {input}, {out}, {saved_input(input)},
         [](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] { return ops::adaptive_avg_pool2d_backward()(g[0], n.unpack(0)); })};
         });
  return out;
}

Tensor adaptive_avg_pool2d_backward_ag(const Tensor& grad_out, const Tensor& input) {
  Tensor out = below_autograd([&] { return ops::adaptive_avg_pool2d_backward()(grad_out, input); });
  record("AdaptiveAvgPool2DBackwardBackward0", {grad_out}, {out}, {},
         [os = Shape{grad_out.sizes()[2], grad_out.sizes()[3]}](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] { return ops::adaptive_avg_pool2d()(g[0], os); })};
         });
  return out;
}

EMBER_REGISTER_KERNEL(max_pool2d_with_indices, Autograd, max_pool2d_ag);
EMBER_REGISTER_KERNEL(max_pool2d_backward, Autograd, max_pool2d_backward_ag);
EMBER_REGISTER_KERNEL(avg_pool2d, Autograd, avg_pool2d_ag);
EMBER_REGISTER_KERNEL(avg_pool2d_backward, Autograd, avg_pool2d_backward_ag);
EMBER_REGISTER_KERNEL(adaptive_avg_pool2d, Autograd, adaptive_avg_pool2d_ag);
EMBER_REGISTER_KERNEL(adaptive_avg_pool2d_backward, Autograd, adaptive_avg_pool2d_backward_ag);

}  // namespace
}  // namespace ember
