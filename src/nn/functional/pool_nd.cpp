// 1-d and 3-d pooling and adaptive max pooling (torch.nn.functional), with PyTorch 2's argument
// checks and messages. The 3-d ops work on batched (N, C, D, H, W) input (CPU kernels in
// src/cpu/pool_kernels.cpp, shared with the 2-d ops); 1-d pooling runs the 2-d ops on unit
// height as PyTorch does, adaptive max pooling of every rank the 3-d op on unit depth/height.
// Unbatched input gains a batch dim here. The backward ops are linear in grad_output and carry
// their own formulas, so double backward works.
#include <sstream>

#include "autograd/record.h"
#include "ember/nn/functional.h"
#include "ops/op_handles.h"
#include "ops/pool_geometry.h"

namespace ember::nn::functional {

namespace {

// Expands a 1-or-k entry argument to k entries.
Shape expand(IntArrayRef v, size_t k) { return v.size() == 1 ? Shape(k, v[0]) : Shape(v.begin(), v.end()); }

// torch's pooling_output_shape with its checks on stride and padding.
int64_t pool_out(int64_t in, int64_t k, int64_t pad, int64_t s, int64_t dil, bool ceil_mode) {
  EMBER_CHECK(s != 0, "stride should not be zero");
  EMBER_CHECK(pad >= 0, "pad must be non-negative, but got pad: ", pad);
  EMBER_CHECK(pad <= ((k - 1) * dil + 1) / 2, "pad should be at most half of effective kernel size, but got pad=", pad,
              ", kernel_size=", k, " and dilation=", dil);
  return pool_out_size(in, k, pad, s, dil, ceil_mode);
}

void check_floating(const Tensor& input, const char* op) {
  EMBER_CHECK_AS(NotImplementedError, is_floating(input.dtype()), "\"", op, "\" not implemented for '",
                 scalar_type_name(input.dtype()), "'");
}

// torch's pool3d_shape_check (after the output sizes were computed); check_input_size for avg.
void pool3d_shape_check(const Tensor& input, const Shape& k, const Shape& s, const Shape& p, const Shape& d,
                        const Shape& out, bool check_input_size) {
  const int64_t r = input.dim();
  const int64_t T = input.sizes()[r - 3], H = input.sizes()[r - 2], W = input.sizes()[r - 1],
                C = input.sizes()[r - 4];
  EMBER_CHECK(k[0] > 0 && k[1] > 0 && k[2] > 0, "kernel size should be greater than zero, but got kT: ", k[0],
              " kH: ", k[1], " kW: ", k[2]);
  EMBER_CHECK(s[0] > 0 && s[1] > 0 && s[2] > 0, "stride should be greater than zero, but got dT: ", s[0], " dH: ", s[1],
              " dW: ", s[2]);
  EMBER_CHECK(d[0] > 0 && d[1] > 0 && d[2] > 0, "dilation should be greater than zero, but got dilationT: ", d[0],
              " dilationH: ", d[1], " dilationW: ", d[2]);
  for (int64_t i = 1; i < r; ++i)
    EMBER_CHECK(input.sizes()[i] > 0,
                "Expected input's non-batch dimensions to have positive length, but input has a shape of ",
                input.sizes(), " and non-batch dimension ", input.sizes()[i], " has length zero!");
  if (check_input_size)
    EMBER_CHECK(T >= k[0] && H >= k[1] && W >= k[2], "input image (T: ", T, " H: ", H, " W: ", W,
                ") smaller than kernel size (kT: ", k[0], " kH: ", k[1], " kW: ", k[2], ")");
  EMBER_CHECK(k[0] / 2 >= p[0] && k[2] / 2 >= p[2] && k[1] / 2 >= p[1],
              "pad should be smaller than or equal to half of kernel size, but got kT: ", k[0], " kW: ", k[2],
              " kH: ", k[1], " padT: ", p[0], " padW: ", p[2], " padH: ", p[1]);
  EMBER_CHECK(out[0] >= 1 && out[1] >= 1 && out[2] >= 1, "Given input size: (", C, "x", T, "x", H, "x", W,
              "). Calculated output size: (", C, "x", out[0], "x", out[1], "x", out[2], "). Output size is too small");
}

// Unbatched input gains a batch dim for the op; its result loses it again.
Tensor batch_of(const Tensor& input, int64_t batched_rank) {
  return input.dim() == batched_rank ? input : input.unsqueeze(0);
}
Tensor unbatch(const Tensor& out, bool was_batched) { return was_batched ? out : out.squeeze(0); }

void check_1d_range(const Tensor& input, const char* op) {
  EMBER_CHECK(input.dim() == 2 || input.dim() == 3, "Expected 2 to 3 dimensions, but got ", input.dim(),
              "-dimensional tensor for argument #1 'self' (while checking arguments for ", op, ")");
}
void check_1d_arg(const char* op, const char* arg, IntArrayRef v) {
  EMBER_CHECK(v.size() == 1, op, "() argument '", arg, "' should contain one int (got ", v.size(), ")");
}

}  // namespace

// ---- max pooling

std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                                                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  EMBER_CHECK(kernel_size.size() == 1,
              "max_pool1d() kernel_size must be an int, list of ints or tuple of ints of size 1 but got size ",
              kernel_size.size());
  EMBER_CHECK(stride.size() <= 1,
              "max_pool1d() stride must be None, an int, list of ints, or tuple of ints of size 1 but got size ",
              stride.size());
  EMBER_CHECK(padding.size() == 1,
              "max_pool1d() padding must be an int, list of ints, or tuple of ints of size 1 but got size ",
              padding.size());
  EMBER_CHECK(dilation.size() == 1,
              "max_pool1d() dilation must be an int, list of ints or tuple of ints of size 1 but got size ",
              dilation.size());
  EMBER_CHECK(input.dim() == 2 || input.dim() == 3,
              "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, but got:",
              input.sizes());
  const int64_t k = kernel_size[0], s = stride.empty() ? k : stride[0], p = padding[0], d = dilation[0];
  EMBER_CHECK(k > 0, "max_pool1d() kernel_size must be greater than zero, but got ", k);
  EMBER_CHECK(s > 0, "max_pool1d() stride must be greater than zero, but got ", s);
  EMBER_CHECK(p >= 0, "max_pool1d() padding must be non-negative, but got ", p);
  EMBER_CHECK(p <= k / 2, "max_pool1d() padding should be at most half of kernel size, but got padding=", p,
              " and kernel_size=", k);
  EMBER_CHECK(d > 0, "max_pool1d() dilation must be greater than zero, but got ", d);
  const int64_t OW = pool_out(input.sizes().back(), k, p, s, d, ceil_mode);
  EMBER_CHECK(OW > 0, "max_pool1d() Invalid computed output size: ", OW);
  for (int64_t i = input.dim() - 2; i < input.dim(); ++i)
    EMBER_CHECK(input.sizes()[i] > 0, "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch "
                                      "size for input, but got:", input.sizes());
  check_floating(input, "max_pool1d");
  const bool was_batched = input.dim() == 3;
  Tensor x = (was_batched ? input : input.unsqueeze(0)).unsqueeze(2);
  auto [o, i] = ops::max_pool2d_with_indices()(x, {1, k}, {1, s}, {0, p}, {1, d}, ceil_mode);
  return {unbatch(o.squeeze(2), was_batched), unbatch(i.squeeze(2), was_batched)};
}

Tensor max_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
  return std::get<0>(max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode));
}

std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                                                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  EMBER_CHECK(kernel_size.size() == 1 || kernel_size.size() == 3,
              "max_pool3d: kernel_size must either be a single int, or a tuple of three ints");
  EMBER_CHECK(stride.empty() || stride.size() == 1 || stride.size() == 3,
              "max_pool3d: stride must either be omitted, a single int, or a tuple of three ints");
  EMBER_CHECK(padding.size() == 1 || padding.size() == 3,
              "max_pool3d: padding must either be a single int, or a tuple of three ints");
  EMBER_CHECK(dilation.size() == 1 || dilation.size() == 3,
              "max_pool3d: dilation must be either a single int, or a tuple of three ints");
  EMBER_CHECK(input.dim() == 4 || input.dim() == 5, "non-empty 4D or 5D (batch mode) tensor expected for input");
  const Shape k = expand(kernel_size, 3), s = stride.empty() ? k : expand(stride, 3), p = expand(padding, 3),
              d = expand(dilation, 3);
  Shape out(3);
  for (int i = 0; i < 3; ++i) out[i] = pool_out(input.sizes()[input.dim() - 3 + i], k[i], p[i], s[i], d[i], ceil_mode);
  pool3d_shape_check(input, k, s, p, d, out, false);
  check_floating(input, "max_pool3d_with_indices_cpu");
  auto [o, i] = ops::max_pool3d_with_indices()(batch_of(input, 5), k, s, p, d, ceil_mode);
  return {unbatch(o, input.dim() == 5), unbatch(i, input.dim() == 5)};
}

Tensor max_pool3d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
  return std::get<0>(max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode));
}

// ---- average pooling

Tensor avg_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  bool ceil_mode, bool count_include_pad) {
  check_1d_range(input, "avg_pool1d");
  check_1d_arg("avg_pool1d", "kernel_size", kernel_size);
  if (!stride.empty()) check_1d_arg("avg_pool1d", "stride", stride);
  check_1d_arg("avg_pool1d", "padding", padding);
  const int64_t s = stride.empty() ? kernel_size[0] : stride[0];
  return avg_pool2d(input.unsqueeze(-2), {1, kernel_size[0]}, {1, s}, {0, padding[0]}, ceil_mode, count_include_pad)
      .squeeze(-2);
}

Tensor avg_pool3d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  EMBER_CHECK(kernel_size.size() == 1 || kernel_size.size() == 3,
              "avg_pool3d: kernel_size must be a single int, or a tuple of three ints");
  EMBER_CHECK(stride.empty() || stride.size() == 1 || stride.size() == 3,
              "avg_pool3d: stride must be omitted, a single int, or a tuple of three ints");
  EMBER_CHECK(padding.size() == 1 || padding.size() == 3,
              "avg_pool3d: padding must be a single int, or a tuple of three ints");
  EMBER_CHECK(input.dim() == 4 || input.dim() == 5, "non-empty 4D or 5D (batch mode) tensor expected for input");
  EMBER_CHECK(!divisor_override || *divisor_override != 0, "divisor must be not zero");
  const Shape k = expand(kernel_size, 3), s = stride.empty() ? k : expand(stride, 3), p = expand(padding, 3),
              d{1, 1, 1};
  Shape out(3);
  for (int i = 0; i < 3; ++i) out[i] = pool_out(input.sizes()[input.dim() - 3 + i], k[i], p[i], s[i], 1, ceil_mode);
  pool3d_shape_check(input, k, s, p, d, out, true);
  check_floating(input, "avg_pool3d_out_frame");
  Tensor y = ops::avg_pool3d()(batch_of(input, 5), k, s, p, ceil_mode, count_include_pad, divisor_override.value_or(0));
  return unbatch(y, input.dim() == 5);
}

// ---- adaptive pooling

Tensor adaptive_avg_pool1d(const Tensor& input, IntArrayRef output_size) {
  check_1d_range(input, "adaptive_avg_pool1d");
  check_1d_arg("adaptive_avg_pool1d", "output_size", output_size);
  return adaptive_avg_pool2d(input.unsqueeze(-2), {1, output_size[0]}).squeeze(-2);
}

Tensor adaptive_avg_pool3d(const Tensor& input, IntArrayRef output_size) {
  EMBER_CHECK(output_size.size() == 1 || output_size.size() == 3, "adaptive_avg_pool3d: output_size must be 3");
  const Shape os = expand(output_size, 3);
  EMBER_CHECK(os[0] >= 0 && os[1] >= 0 && os[2] >= 0,
              "adaptive_avg_pool3d: elements of output_size must be greater than or equal to 0 but received {", os[0],
              ", ", os[1], ",", os[2], "}");
  EMBER_CHECK(input.dim() == 4 || input.dim() == 5, "adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got ",
              input.sizes());
  for (int64_t i = 1; i < input.dim(); ++i)
    EMBER_CHECK(input.sizes()[i] > 0,
                "adaptive_avg_pool3d(): Expected input to have non-zero size for non-batch dimensions, but input has "
                "sizes ", input.sizes(), " with dimension ", i, " being empty");
  check_floating(input, "adaptive_avg_pool3d_cpu");
  return unbatch(ops::adaptive_avg_pool3d()(batch_of(input, 5), os), input.dim() == 5);
}

namespace {
// adaptive max pooling over the last k dims of input (k = 1, 2, 3), on the 3-d op.
std::tuple<Tensor, Tensor> adaptive_max_nd(const Tensor& input, IntArrayRef output_size, int64_t k) {
  const std::string op = "adaptive_max_pool" + std::to_string(k) + "d";
  const Shape os = expand(output_size, size_t(k));
  for (int64_t v : os)
    EMBER_CHECK(v >= 0, op, ": elements of output_size must be greater than or equal to 0 but received ",
                os);
  check_floating(input, op.c_str());
  const bool was_batched = input.dim() == k + 2;
  Tensor x = was_batched ? input : input.unsqueeze(0);
  Shape os3 = os;
  for (int64_t i = k; i < 3; ++i) {
    x = x.unsqueeze(2);
    os3.insert(os3.begin(), 1);
  }
  auto [o, idx] = ops::adaptive_max_pool3d()(x, os3);
  for (int64_t i = k; i < 3; ++i) {
    o = o.squeeze(2);
    idx = idx.squeeze(2);
  }
  return {unbatch(o, was_batched), unbatch(idx, was_batched)};
}

void check_adaptive_max(const Tensor& input, IntArrayRef output_size, int64_t k) {
  const std::string op = "adaptive_max_pool" + std::to_string(k) + "d";
  EMBER_CHECK(input.dim() == k + 1 || input.dim() == k + 2, op, "(): Expected ", k + 1, "D or ", k + 2,
              "D tensor, but got: ", input.sizes());
  for (int64_t i = 1; i < input.dim(); ++i)
    EMBER_CHECK(input.sizes()[i] > 0, op,
                "(): Expected input to have non-zero size for non-batch dimensions, but input has sizes ",
                input.sizes(), " with dimension ", i, " being empty");
  EMBER_CHECK(output_size.size() == 1 || int64_t(output_size.size()) == k, op,
              "(): internal error: output_size.size() must be ", k);
}
}  // namespace

std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& input, IntArrayRef output_size) {
  check_1d_range(input, "adaptive_max_pool1d");
  check_1d_arg("adaptive_max_pool1d", "output_size", output_size);
  for (int64_t i = 1; i < input.dim(); ++i)
    EMBER_CHECK(input.sizes()[i] > 0,
                "adaptive_max_pool1d(): Expected input to have non-zero size for non-batch dimensions, but input has "
                "sizes ", input.sizes(), " with dimension ", i, " being empty");
  return adaptive_max_nd(input, output_size, 1);
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input, IntArrayRef output_size) {
  check_adaptive_max(input, output_size, 2);
  return adaptive_max_nd(input, output_size, 2);
}

std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& input, IntArrayRef output_size) {
  check_adaptive_max(input, output_size, 3);
  return adaptive_max_nd(input, output_size, 3);
}

Tensor adaptive_max_pool1d(const Tensor& input, IntArrayRef output_size) {
  return std::get<0>(adaptive_max_pool1d_with_indices(input, output_size));
}
Tensor adaptive_max_pool2d(const Tensor& input, IntArrayRef output_size) {
  return std::get<0>(adaptive_max_pool2d_with_indices(input, output_size));
}
Tensor adaptive_max_pool3d(const Tensor& input, IntArrayRef output_size) {
  return std::get<0>(adaptive_max_pool3d_with_indices(input, output_size));
}

}  // namespace ember::nn::functional

// ---------------------------------------------------------------- gradients
// As the 2-d pools (pool.cpp): each pool is linear in its input, its backward op linear in
// grad_output, and the gradient of a backward op with respect to grad_output is the forward
// pool again (max pools: a gather of the incoming gradient at the saved indices).
namespace ember {
namespace {
using namespace autograd;

Shape own(IntArrayRef v) { return Shape(v.begin(), v.end()); }

// max_pool3d and adaptive_max_pool3d: d input = scatter of g at the indices.
autograd::LambdaNode::Backward max_backward(const Tensor& idx) {
  return [idx](const variable_list& g, LambdaNode& n) -> variable_list {
    return {grad_for(n, 0, [&] { return ops::max_pool3d_backward()(g[0], n.unpack(0), idx); })};
  };
}

std::tuple<Tensor, Tensor> max_pool3d_ag(const Tensor& input, IntArrayRef k, IntArrayRef s, IntArrayRef p,
                                         IntArrayRef d, bool ceil_mode) {
  auto out_idx = below_autograd([&] { return ops::max_pool3d_with_indices()(input, k, s, p, d, ceil_mode); });
  Tensor out = std::get<0>(out_idx), idx = std::get<1>(out_idx);
  record("MaxPool3DWithIndicesBackward0", {input}, {out}, {saved_input(input)}, max_backward(idx));
  return {out, idx};
}

std::tuple<Tensor, Tensor> adaptive_max_pool3d_ag(const Tensor& input, IntArrayRef osize) {
  auto out_idx = below_autograd([&] { return ops::adaptive_max_pool3d()(input, osize); });
  Tensor out = std::get<0>(out_idx), idx = std::get<1>(out_idx);
  record("AdaptiveMaxPool3DBackward0", {input}, {out}, {saved_input(input)}, max_backward(idx));
  return {out, idx};
}

Tensor max_pool3d_backward_ag(const Tensor& grad_out, const Tensor& input, const Tensor& indices) {
  Tensor out = below_autograd([&] { return ops::max_pool3d_backward()(grad_out, input, indices); });
  record("MaxPool3DWithIndicesBackwardBackward0", {grad_out}, {out}, {},
         [indices](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] {
             return g[0].flatten(2).gather(2, indices.flatten(2)).view(indices.sizes());
           })};
         });
  return out;
}

Tensor avg_pool3d_ag(const Tensor& input, IntArrayRef k, IntArrayRef s, IntArrayRef p, bool ceil_mode, bool cip,
                     int64_t divisor) {
  Tensor out = below_autograd([&] { return ops::avg_pool3d()(input, k, s, p, ceil_mode, cip, divisor); });
  record("AvgPool3DBackward0", {input}, {out}, {saved_input(input)},
         [k = own(k), s = own(s), p = own(p), ceil_mode, cip, divisor](const variable_list& g,
                                                                        LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] {
             return ops::avg_pool3d_backward()(g[0], n.unpack(0), k, s, p, ceil_mode, cip, divisor);
           })};
         });
  return out;
}

Tensor avg_pool3d_backward_ag(const Tensor& grad_out, const Tensor& input, IntArrayRef k, IntArrayRef s,
                              IntArrayRef p, bool ceil_mode, bool cip, int64_t divisor) {
  Tensor out =
      below_autograd([&] { return ops::avg_pool3d_backward()(grad_out, input, k, s, p, ceil_mode, cip, divisor); });
  record("AvgPool3DBackwardBackward0", {grad_out}, {out}, {},
         [k = own(k), s = own(s), p = own(p), ceil_mode, cip, divisor](const variable_list& g,
                                                                        LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] { return ops::avg_pool3d()(g[0], k, s, p, ceil_mode, cip, divisor); })};
         });
  return out;
}

Tensor adaptive_avg_pool3d_ag(const Tensor& input, IntArrayRef osize) {
  Tensor out = below_autograd([&] { return ops::adaptive_avg_pool3d()(input, osize); });
  record("AdaptiveAvgPool3DBackward0", {input}, {out}, {saved_input(input)},
         [](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] { return ops::adaptive_avg_pool3d_backward()(g[0], n.unpack(0)); })};
         });
  return out;
}

Tensor adaptive_avg_pool3d_backward_ag(const Tensor& grad_out, const Tensor& input) {
  Tensor out = below_autograd([&] { return ops::adaptive_avg_pool3d_backward()(grad_out, input); });
  record("AdaptiveAvgPool3DBackwardBackward0", {grad_out}, {out}, {},
         [os = Shape(grad_out.sizes().begin() + 2, grad_out.sizes().end())](const variable_list& g,
                                                                             LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] { return ops::adaptive_avg_pool3d()(g[0], os); })};
         });
  return out;
}

EMBER_REGISTER_KERNEL(max_pool3d_with_indices, Autograd, max_pool3d_ag);
EMBER_REGISTER_KERNEL(max_pool3d_backward, Autograd, max_pool3d_backward_ag);
EMBER_REGISTER_KERNEL(adaptive_max_pool3d, Autograd, adaptive_max_pool3d_ag);
EMBER_REGISTER_KERNEL(avg_pool3d, Autograd, avg_pool3d_ag);
EMBER_REGISTER_KERNEL(avg_pool3d_backward, Autograd, avg_pool3d_backward_ag);
EMBER_REGISTER_KERNEL(adaptive_avg_pool3d, Autograd, adaptive_avg_pool3d_ag);
EMBER_REGISTER_KERNEL(adaptive_avg_pool3d_backward, Autograd, adaptive_avg_pool3d_backward_ag);

}  // namespace
}  // namespace ember
