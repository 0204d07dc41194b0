// linear, conv1d and conv2d (torch.nn.functional), with PyTorch's argument checks and messages.
//
// conv2d and conv1d reduce to one dispatched op, conv2d_forward, on batched 4-d input with
// symmetric padding (CPU kernel: src/cpu/conv_kernels.cpp): unbatched input gains a batch dim,
// conv1d a unit height, and "same" padding whose total is odd pads the input by one extra on
// the right/bottom first (as PyTorch's _convolution_same). Its gradients are the two backward
// ops, which are convolutions themselves; each of the three ops has a formula in terms of the
// others, so double (and higher) backward works.
#include "autograd/record.h"
#include "ember/nn/functional.h"
#include "ops/op_handles.h"

namespace ember::nn::functional {

Tensor linear(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  const bool has_bias = bias && bias->defined();
  if (input.dim() == 2 && has_bias) return addmm(*bias, input, weight.t());
  if (input.dim() > 2 && has_bias && weight.dim() == 2 && input.sizes().back() > 0) {
    // (..., in) folds to rows, as PyTorch: the bias rides in the GEMM (beta = 1) instead of a
    // second pass over the output.
    Shape out_shape(input.sizes().begin(), input.sizes().end());
    out_shape.back() = weight.sizes()[0];
    return addmm(*bias, input.reshape({-1, input.sizes().back()}), weight.t()).view(out_shape);
  }
  Tensor out = matmul(input, weight.t());
  return has_bias ? out + *bias : out;
}

namespace {

Shape expand_param(const char* name, IntArrayRef v, int64_t n) {
  if (v.size() == 1) return Shape(size_t(n), v[0]);
  EMBER_CHECK(int64_t(v.size()) == n, "expected ", name, " to be a single integer value or a list of ", n,
              " values to match the convolution dimensions, but got ", name, "=", Shape(v.begin(), v.end()));
  return Shape(v.begin(), v.end());
}

// Checks as torch's conv (ConvUtils.h, Convolution.cpp); `k` spatial dims, `op` "conv1d"/"conv2d".
// Returns explicit padding; `pad_extra` receives the extra right-side padding of "same".
struct ConvArgs {
  Shape stride, padding, dilation, pad_extra;
};

ConvArgs check_conv(const char* op, int64_t k, const Tensor& input, const Tensor& weight,
                    const std::optional<Tensor>& bias, IntArrayRef stride, const Padding& padding,
                    IntArrayRef dilation, int64_t groups) {
  EMBER_CHECK(input.dim() == k + 1 || input.dim() == k + 2, "Expected ", k + 1, "D (unbatched) or ", k + 2,
              "D (batched) input to ", op, ", but got input of size: ", input.sizes());
  EMBER_CHECK(weight.dim() == k + 2, "Expected ", k + 2, "-dimensional weight for ", k + 2,
              "-dimensional input, but got weight of size ", weight.sizes());
  ConvArgs a;
  a.stride = expand_param("stride", stride, k);
  a.dilation = expand_param("dilation", dilation, k);
  a.pad_extra = Shape(size_t(k), 0);
  for (int64_t s : a.stride) EMBER_CHECK(s > 0, "non-positive stride is not supported");
  for (int64_t d : a.dilation) EMBER_CHECK(d > 0, "dilation should be greater than zero, but got ", a.dilation);
  EMBER_CHECK(groups > 0, "non-positive groups is not supported");
  if (auto* s = std::get_if<std::string>(&padding)) {
    if (*s == "valid") {
      a.padding = Shape(size_t(k), 0);
    } else if (*s == "same") {
      for (int64_t st : a.stride) EMBER_CHECK(st == 1, "padding='same' is not supported for strided convolutions");
      a.padding.resize(size_t(k));
      for (int64_t i = 0; i < k; ++i) {
        int64_t total = a.dilation[i] * (weight.sizes()[2 + i] - 1);
        a.padding[i] = total / 2;
        a.pad_extra[i] = total - 2 * (total / 2);
      }
    } else {
      EMBER_CHECK(false, "Invalid padding string: '", *s, "'");
    }
  } else {
    a.padding = expand_param("padding", std::get<std::vector<int64_t>>(padding), k);
    for (int64_t p : a.padding) EMBER_CHECK(p >= 0, "negative padding is not supported");
  }
  const bool batched = input.dim() == k + 2;
  const int64_t C = input.sizes()[batched ? 1 : 0];
  Shape in_shape = batched ? input.sizes() : Shape{};
  if (!batched) {
    in_shape = {1};
    in_shape.insert(in_shape.end(), input.sizes().begin(), input.sizes().end());
  }
  const int64_t O = weight.sizes()[0];
  EMBER_CHECK(O >= groups && O % groups == 0, "Given groups=", groups,
              ", expected weight to be divisible by ", groups, " at dimension 0, but got weight of size [",
              weight.sizes(), "] instead");
  EMBER_CHECK(C == weight.sizes()[1] * groups, "Given groups=", groups, ", weight of size ", weight.sizes(),
              ", expected input", in_shape, " to have ", weight.sizes()[1] * groups, " channels, but got ", C,
              " channels instead");
  if (bias && bias->defined())
    EMBER_CHECK(bias->dim() == 1 && bias->sizes()[0] == O, "Given weight of size ", weight.sizes(),
                ", expected bias to be 1-dimensional with ", O, " elements, but got bias of size ", bias->sizes(),
                " instead");
  EMBER_CHECK(input.dtype() == weight.dtype(), "expected scalar type ", scalar_type_name(input.dtype()),
              " but found ", scalar_type_name(weight.dtype()));
  if (bias && bias->defined())
    EMBER_CHECK(bias->dtype() == input.dtype(), "expected scalar type ", scalar_type_name(input.dtype()),
                " but found ", scalar_type_name(bias->dtype()));
  EMBER_CHECK(is_floating(input.dtype()), "\"conv\" not implemented for '", scalar_type_name(input.dtype()), "'");
  // kernel vs padded input
  bool too_big = false;
  for (int64_t i = 0; i < k; ++i) {
    int64_t padded = in_shape[2 + i] + 2 * a.padding[i] + a.pad_extra[i];
    int64_t ker = a.dilation[i] * (weight.sizes()[2 + i] - 1) + 1;
    if (padded < ker) too_big = true;
  }
  if (too_big) {
    std::ostringstream os;
    os << "Calculated padded input size per channel: (";
    for (int64_t i = 0; i < k; ++i)
      os << (i ? " x " : "") << in_shape[2 + i] + 2 * a.padding[i] + a.pad_extra[i];
    os << "). Kernel size: (";
    for (int64_t i = 0; i < k; ++i) os << (i ? " x " : "") << a.dilation[i] * (weight.sizes()[2 + i] - 1) + 1;
    os << "). Kernel size can't be greater than actual input size";
    throw Error(os.str());
  }
  return a;
}

// Batched 4-d conv with symmetric padding after the optional extra right padding.
Tensor conv2d_core(Tensor x, const Tensor& w, const std::optional<Tensor>& bias, const ConvArgs& a) {
  if (a.pad_extra[0] || a.pad_extra[1]) x = pad(x, {0, a.pad_extra[1], 0, a.pad_extra[0]});
  return ops::conv2d_forward()(x, w, bias, a.stride, a.padding, a.dilation, x.sizes()[1] / w.sizes()[1]);
}

}  // namespace

Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              Padding padding, IntArrayRef dilation, int64_t groups) {
  ConvArgs a = check_conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups);
  if (input.dim() == 3) return conv2d_core(input.unsqueeze(0), weight, bias, a).squeeze(0);
  return conv2d_core(input, weight, bias, a);
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, int64_t stride,
              Padding padding, int64_t dilation, int64_t groups) {
  ConvArgs a = check_conv("conv1d", 1, input, weight, bias, IntArrayRef(stride), padding, IntArrayRef(dilation),
                          groups);
  ConvArgs a2;
  a2.stride = {1, a.stride[0]};
  a2.padding = {0, a.padding[0]};
  a2.dilation = {1, a.dilation[0]};
  a2.pad_extra = {0, a.pad_extra[0]};
  const bool batched = input.dim() == 3;
  Tensor x = batched ? input.unsqueeze(2) : input.unsqueeze(0).unsqueeze(2);
  Tensor out = conv2d_core(x, weight.unsqueeze(2), bias, a2).squeeze(2);
  return batched ? out : out.squeeze(0);
}

}  // namespace ember::nn::functional

// ---------------------------------------------------------------- gradients
// y = conv(x, w) + b is bilinear in (x, w):
//   dx = conv2d_backward_input(g, w),  dw = conv2d_backward_weight(g, x),  db = sum of g over N, H, W.
// backward_input(g, w) is linear in g and in w: for a grad gg of its result,
//   d/dg = conv(gg, w),  d/dw = conv2d_backward_weight(g, gg);
// backward_weight(g, x) likewise: d/dg = conv(x, gg),  d/dx = conv2d_backward_input(g, gg).
// The formulas call the dispatched ops, so with create_graph they record history in turn.
namespace ember {
namespace {
using namespace autograd;

Tensor saved_if(bool needed, const Tensor& t) { return needed ? t : Tensor(); }

Tensor conv2d_forward_ag(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                         IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  Tensor out = below_autograd([&] { return ops::conv2d_forward()(input, weight, bias, stride, padding, dilation, groups); });
  Tensor b = bias && bias->defined() ? *bias : Tensor();
  record("ConvolutionBackward0", {input, weight, b}, {out},
         {saved_input(saved_if(weight.requires_grad(), input)), saved_input(saved_if(input.requires_grad(), weight))},
         [s = Shape(stride.begin(), stride.end()), p = Shape(padding.begin(), padding.end()),
          d = Shape(dilation.begin(), dilation.end()), groups, in_size = input.sizes(),
          w_size = weight.sizes()](const variable_list& g, LambdaNode& n) -> variable_list {
           // the incoming gradient is often expanded (from sum()): lay it out once for both kernels
           Tensor go = (n.needs_input_grad(0) && n.needs_input_grad(1)) ? g[0].contiguous() : g[0];
           return {grad_for(n, 0, [&] { return ops::conv2d_backward_input()(go, n.unpack(1), in_size, s, p, d, groups); }),
                   grad_for(n, 1, [&] { return ops::conv2d_backward_weight()(go, n.unpack(0), w_size, s, p, d, groups); }),
                   grad_for(n, 2, [&] { return go.sum({0, 2, 3}); })};
         });
  return out;
}

Tensor conv2d_backward_input_ag(const Tensor& grad_out, const Tensor& weight, IntArrayRef input_size,
                                IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  Tensor out = below_autograd(
      [&] { return ops::conv2d_backward_input()(grad_out, weight, input_size, stride, padding, dilation, groups); });
  record("ConvolutionBackwardBackward0", {grad_out, weight}, {out},
         {saved_input(saved_if(weight.requires_grad(), grad_out)),
          saved_input(saved_if(grad_out.requires_grad(), weight))},
         [s = Shape(stride.begin(), stride.end()), p = Shape(padding.begin(), padding.end()),
          d = Shape(dilation.begin(), dilation.end()), groups,
          w_size = weight.sizes()](const variable_list& g, LambdaNode& n) -> variable_list {
           Tensor gg = g[0];
           return {grad_for(n, 0, [&] { return ops::conv2d_forward()(gg, n.unpack(1), std::nullopt, s, p, d, groups); }),
                   grad_for(n, 1, [&] { return ops::conv2d_backward_weight()(n.unpack(0), gg, w_size, s, p, d, groups); })};
         });
  return out;
}

Tensor conv2d_backward_weight_ag(const Tensor& grad_out, const Tensor& input, IntArrayRef weight_size,
                                 IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  Tensor out = below_autograd(
      [&] { return ops::conv2d_backward_weight()(grad_out, input, weight_size, stride, padding, dilation, groups); });
  record("ConvolutionBackwardBackward1", {grad_out, input}, {out},
         {saved_input(saved_if(input.requires_grad(), grad_out)),
          saved_input(saved_if(grad_out.requires_grad(), input))},
         [s = Shape(stride.begin(), stride.end()), p = Shape(padding.begin(), padding.end()),
          d = Shape(dilation.begin(), dilation.end()), groups,
          in_size = input.sizes()](const variable_list& g, LambdaNode& n) -> variable_list {
           Tensor gg = g[0];
           return {grad_for(n, 0, [&] { return ops::conv2d_forward()(n.unpack(1), gg, std::nullopt, s, p, d, groups); }),
                   grad_for(n, 1, [&] { return ops::conv2d_backward_input()(n.unpack(0), gg, in_size, s, p, d, groups); })};
         });
  return out;
}

EMBER_REGISTER_KERNEL(conv2d_forward, Autograd, conv2d_forward_ag);
EMBER_REGISTER_KERNEL(conv2d_backward_input, Autograd, conv2d_backward_input_ag);
EMBER_REGISTER_KERNEL(conv2d_backward_weight, Autograd, conv2d_backward_weight_ag);

}  // namespace
}  // namespace ember
