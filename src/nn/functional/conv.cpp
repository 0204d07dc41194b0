// linear, conv1d/2d/3d and conv_transpose1d/2d/3d (torch.nn.functional), with PyTorch's argument
// checks and messages.
//
// conv1d, conv2d and conv3d reduce to one dispatched op, conv2d_forward or conv3d_forward, on
// batched input with symmetric padding (CPU kernels: src/cpu/conv_kernels.cpp): unbatched input
// gains a batch dim, conv1d a unit height, and "same" padding whose total is odd pads the input
// by one extra on the right/bottom first (as PyTorch's _convolution_same). Their gradients are
// the two backward ops, which are convolutions themselves; each of the three ops has a formula
// in terms of the others, so double (and higher) backward works.
//
// A transposed convolution is the input gradient of the convolution with the same weight:
// conv_transpose(x, w) = conv{2,3}d_backward_input(x, w, output size), so it needs no op of its
// own and its gradients are that op's formulas (dx = conv(g, w), dw = backward_weight(x, g)).
#include <sstream>

#include "ember/dispatch/op_recording.h"
#include "amp/autocast.h"
#include "autograd/record.h"
#include "ember/nn/functional.h"
#include "ops/op_handles.h"

namespace ember::nn::functional {

Tensor linear(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  EMBER_RECORD_COMPOSITE("linear", input, weight, bias);
  EMBER_AUTOCAST(linear, input, weight, bias);
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

// Python's repr of a list ("[1, 2]") or tuple ("(1, 2)", "(1,)"), for torch's Python messages.
std::string py_sizes(const Shape& v, bool tuple) {
  std::ostringstream os;
  os << (tuple ? "(" : "[");
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << (tuple && v.size() == 1 ? ",)" : tuple ? ")" : "]");
  return os.str();
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

// Batched 4-d or 5-d conv with symmetric padding after the optional extra right padding.
Tensor conv_core(Tensor x, const Tensor& w, const std::optional<Tensor>& bias, const ConvArgs& a) {
  const size_t k = a.pad_extra.size();
  bool extra = false;
  for (int64_t e : a.pad_extra) extra = extra || e;
  if (extra) {
    Shape p;  // F.pad order: last dim first
    for (size_t i = k; i-- > 0;) {
      p.push_back(0);
      p.push_back(a.pad_extra[i]);
    }
    x = pad(x, p);
  }
  auto& op = k == 3 ? ops::conv3d_forward() : ops::conv2d_forward();
  return op(x, w, bias, a.stride, a.padding, a.dilation, x.sizes()[1] / w.sizes()[1]);
}

// Checks of a transposed convolution (torch's check_shape_forward with transposed=true and the
// CPU kernels' output_padding rule); returns the output's spatial sizes. `k` spatial dims.
Shape check_conv_transpose(const char* op, int64_t k, const Tensor& input, const Tensor& weight,
                           const std::optional<Tensor>& bias, const Shape& stride, const Shape& padding,
                           const Shape& output_padding, int64_t groups, const Shape& dilation) {
  EMBER_CHECK(input.dim() == k + 1 || input.dim() == k + 2, "Expected ", k + 1, "D (unbatched) or ", k + 2,
              "D (batched) input to ", op, ", but got input of size: ", input.sizes());
  const bool batched = input.dim() == k + 2;
  Shape in_shape = input.sizes();
  if (!batched) in_shape.insert(in_shape.begin(), 1);
  EMBER_CHECK(weight.dim() == k + 2, "Expected ", weight.dim(), "-dimensional input for ", weight.dim(),
              "-dimensional weight ", weight.sizes(), ", but got ", k + 2, "-dimensional input of size ", in_shape,
              " instead");
  for (int64_t p : padding) EMBER_CHECK(p >= 0, "negative padding is not supported");
  for (int64_t p : output_padding) EMBER_CHECK(p >= 0, "negative output_padding is not supported");
  for (int64_t s : stride) EMBER_CHECK(s > 0, "non-positive stride is not supported");
  // torch names the spatial dims in these messages (1-d runs as 2-d of unit height)
  static const char* const names[3] = {"depth", "height", "width"};
  auto named = [&](const char* what, const Shape& v, int64_t fill, const char* sep) {
    std::ostringstream os;
    const int64_t shown = std::max<int64_t>(k, 2);
    for (int64_t i = 0; i < shown; ++i) {
      const int64_t j = i - (shown - k);  // index into v, negative for the unit height of 1-d
      os << (i ? sep : "") << what << "_" << names[3 - shown + i] << ": " << (j < 0 ? fill : v[size_t(j)]);
    }
    return os.str();
  };
  for (int64_t d : dilation)
    EMBER_CHECK(d > 0, "dilation should be greater than zero, but got ", named("dilation", dilation, 1, ", "));
  EMBER_CHECK(groups > 0, "non-positive groups is not supported");
  const int64_t Cin = weight.sizes()[0];
  EMBER_CHECK(Cin >= groups, "Given groups=", groups, ", expected weight to be at least ", groups,
              " at dimension 0, but got weight of size ", weight.sizes(), " instead");
  EMBER_CHECK(Cin % groups == 0, "Given groups=", groups, ", expected weight to be divisible by ", groups,
              " at dimension 0, but got weight of size [", weight.sizes(), "] instead");
  EMBER_CHECK(in_shape[1] == Cin, "Given transposed=1, weight of size ", weight.sizes(), ", expected input", in_shape,
              " to have ", Cin, " channels, but got ", in_shape[1], " channels instead");
  const int64_t Cout = weight.sizes()[1] * groups;
  if (bias && bias->defined())
    EMBER_CHECK(bias->dim() == 1 && bias->sizes()[0] == Cout, "Given transposed=1, weight of size ", weight.sizes(),
                ", expected bias to be 1-dimensional with ", Cout, " elements, but got bias of size ", bias->sizes(),
                " instead");
  EMBER_CHECK(input.dtype() == weight.dtype(), "expected scalar type ", scalar_type_name(input.dtype()),
              " but found ", scalar_type_name(weight.dtype()));
  if (bias && bias->defined())
    EMBER_CHECK(bias->dtype() == input.dtype(), "expected scalar type ", scalar_type_name(input.dtype()),
                " but found ", scalar_type_name(bias->dtype()));
  EMBER_CHECK(is_floating(input.dtype()), "\"", op, "\" not implemented for '", scalar_type_name(input.dtype()), "'");
  bool op_ok = true;
  for (int64_t i = 0; i < k; ++i)
    op_ok = op_ok && (output_padding[i] < stride[i] || output_padding[i] < dilation[i]);
  EMBER_CHECK(op_ok, "output padding must be smaller than either stride or dilation, but got ",
              named("output_padding", output_padding, 0, " "), " ", named("stride", stride, 1, " "), " ",
              named("dilation", dilation, 1, " "));
  Shape out(size_t(k), 0);
  bool small = false;
  for (int64_t i = 0; i < k; ++i) {
    out[i] = (in_shape[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (weight.sizes()[2 + i] - 1) +
             output_padding[i] + 1;
    small = small || out[i] < 1;
  }
  if (small) {
    std::ostringstream os;
    os << "Given input size per channel: (";
    for (int64_t i = 0; i < k; ++i) os << (i ? " x " : "") << in_shape[2 + i];
    os << "). Calculated output size per channel: (";
    for (int64_t i = 0; i < k; ++i) os << (i ? " x " : "") << out[i];
    os << "). Output size is too small";
    throw Error(os.str());
  }
  return out;
}

Tensor conv_transpose_nd(const char* op, int64_t k, const Tensor& input, const Tensor& weight,
                         const std::optional<Tensor>& bias, IntArrayRef stride_, IntArrayRef padding_,
                         IntArrayRef output_padding_, int64_t groups, IntArrayRef dilation_) {
  Shape stride = expand_param("stride", stride_, k), padding = expand_param("padding", padding_, k);
  Shape output_padding = expand_param("output_padding", output_padding_, k);
  Shape dilation = expand_param("dilation", dilation_, k);
  Shape out = check_conv_transpose(op, k, input, weight, bias, stride, padding, output_padding, groups, dilation);
  const bool batched = input.dim() == k + 2;
  Tensor x = batched ? input : input.unsqueeze(0), w = weight;
  if (k == 1) {  // as 2-d of unit height
    x = x.unsqueeze(2);
    w = w.unsqueeze(2);
    stride.insert(stride.begin(), 1);
    padding.insert(padding.begin(), 0);
    dilation.insert(dilation.begin(), 1);
    out.insert(out.begin(), 1);
  }
  Shape out_size{x.sizes()[0], weight.sizes()[1] * groups};
  out_size.insert(out_size.end(), out.begin(), out.end());
  auto& bwd = k == 3 ? ops::conv3d_backward_input() : ops::conv2d_backward_input();
  Tensor y = bwd(x, w, out_size, stride, padding, dilation, groups);
  if (bias && bias->defined()) {
    Shape bshape(size_t(y.dim()), 1);
    bshape[1] = bias->sizes()[0];
    y = y + bias->view(bshape);
  }
  if (k == 1) y = y.squeeze(2);
  return batched ? y : y.squeeze(0);
}

}  // namespace

Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              Padding padding, IntArrayRef dilation, int64_t groups) {
  EMBER_RECORD_COMPOSITE("conv2d", input, weight, bias, stride, padding, dilation, groups);
  EMBER_AUTOCAST(conv2d, input, weight, bias, stride, padding, dilation, groups);
  ConvArgs a = check_conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups);
  if (input.dim() == 3) return conv_core(input.unsqueeze(0), weight, bias, a).squeeze(0);
  return conv_core(input, weight, bias, a);
}

Tensor conv3d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              Padding padding, IntArrayRef dilation, int64_t groups) {
  EMBER_RECORD_COMPOSITE("conv3d", input, weight, bias, stride, padding, dilation, groups);
  EMBER_AUTOCAST(conv3d, input, weight, bias, stride, padding, dilation, groups);
  ConvArgs a = check_conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups);
  if (input.dim() == 4) return conv_core(input.unsqueeze(0), weight, bias, a).squeeze(0);
  return conv_core(input, weight, bias, a);
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, int64_t stride,
              Padding padding, int64_t dilation, int64_t groups) {
  EMBER_RECORD_COMPOSITE("conv1d", input, weight, bias, stride, padding, dilation, groups);
  EMBER_AUTOCAST(conv1d, input, weight, bias, stride, padding, dilation, groups);
  ConvArgs a = check_conv("conv1d", 1, input, weight, bias, IntArrayRef(stride), padding, IntArrayRef(dilation),
                          groups);
  ConvArgs a2;
  a2.stride = {1, a.stride[0]};
  a2.padding = {0, a.padding[0]};
  a2.dilation = {1, a.dilation[0]};
  a2.pad_extra = {0, a.pad_extra[0]};
  const bool batched = input.dim() == 3;
  Tensor x = batched ? input.unsqueeze(2) : input.unsqueeze(0).unsqueeze(2);
  Tensor out = conv_core(x, weight.unsqueeze(2), bias, a2).squeeze(2);
  return batched ? out : out.squeeze(0);
}

Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                        IntArrayRef dilation) {
  EMBER_RECORD_COMPOSITE("conv_transpose1d", input, weight, bias, stride, padding, output_padding, groups, dilation);
  EMBER_AUTOCAST(conv_transpose1d, input, weight, bias, stride, padding, output_padding, groups, dilation);
  return conv_transpose_nd("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
                           dilation);
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                        IntArrayRef dilation) {
  EMBER_RECORD_COMPOSITE("conv_transpose2d", input, weight, bias, stride, padding, output_padding, groups, dilation);
  EMBER_AUTOCAST(conv_transpose2d, input, weight, bias, stride, padding, output_padding, groups, dilation);
  return conv_transpose_nd("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
                           dilation);
}

Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                        IntArrayRef dilation) {
  EMBER_RECORD_COMPOSITE("conv_transpose3d", input, weight, bias, stride, padding, output_padding, groups, dilation);
  EMBER_AUTOCAST(conv_transpose3d, input, weight, bias, stride, padding, output_padding, groups, dilation);
  return conv_transpose_nd("conv_transpose3d", 3, input, weight, bias, stride, padding, output_padding, groups,
                           dilation);
}

Shape conv_transpose_output_padding(IntArrayRef input_size, IntArrayRef output_size, IntArrayRef stride,
                                    IntArrayRef padding, IntArrayRef kernel_size, IntArrayRef dilation) {
  const int64_t k = int64_t(kernel_size.size());
  Shape os(output_size.begin(), output_size.end());
  const size_t off = input_size.size() - size_t(k);  // batch and channel dims, or channel only
  if (os.size() == off + size_t(k)) os.erase(os.begin(), os.begin() + int64_t(off));
  EMBER_CHECK_VALUE(int64_t(os.size()) == k, "ConvTranspose", k, "D: for ", input_size.size(),
                    "D input, output_size must have ", k, " or ", off + size_t(k), " elements (got ",
                    output_size.size(), ")");
  Shape mins(size_t(k), 0), maxs(size_t(k), 0), out(size_t(k), 0);
  for (int64_t d = 0; d < k; ++d) {
    mins[d] = (input_size[off + d] - 1) * stride[d] - 2 * padding[d] + dilation[d] * (kernel_size[d] - 1) + 1;
    maxs[d] = mins[d] + stride[d] - 1;
  }
  for (int64_t d = 0; d < k; ++d) {
    if (os[d] < mins[d] || os[d] > maxs[d]) {
      std::ostringstream os_str;
      os_str << "requested an output size of " << py_sizes(os, true) << ", but valid sizes range from "
             << py_sizes(mins, false) << " to " << py_sizes(maxs, false) << " (for an input of torch.Size("
             << py_sizes(Shape(input_size.begin() + std::min<size_t>(2, input_size.size()), input_size.end()), false)
             << "))";
      throw ValueError(os_str.str());
    }
    out[d] = os[d] - mins[d];
  }
  return out;
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

// The 2-d and 3-d op families share the formulas.
struct Conv2dOps {
  static auto& forward() { return ops::conv2d_forward(); }
  static auto& backward_input() { return ops::conv2d_backward_input(); }
  static auto& backward_weight() { return ops::conv2d_backward_weight(); }
};
struct Conv3dOps {
  static auto& forward() { return ops::conv3d_forward(); }
  static auto& backward_input() { return ops::conv3d_backward_input(); }
  static auto& backward_weight() { return ops::conv3d_backward_weight(); }
};

// A convolution of a transposed convolution's output (whose output_padding may reach past the
// last stride) can see more positions than the original grad_output had: the extra ones read
// only the padding, so the gradient is the leading part.
Tensor narrow_to(Tensor t, IntArrayRef sizes) {
  for (int64_t d = 2; d < t.dim(); ++d)
    if (t.sizes()[d] > sizes[d]) t = t.narrow(d, 0, sizes[d]);
  return t;
}

Shape spatial_dims(int64_t dim) {
  Shape d{0};
  for (int64_t i = 2; i < dim; ++i) d.push_back(i);
  return d;
}

template <class Ops>
Tensor conv_forward_ag(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                       IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  Tensor out = below_autograd([&] { return Ops::forward()(input, weight, bias, stride, padding, dilation, groups); });
  Tensor b = bias && bias->defined() ? *bias : Tensor();
  record("ConvolutionBackward0", {input, weight, b}, {out},
         {saved_input(saved_if(weight.requires_grad(), input)), saved_input(saved_if(input.requires_grad(), weight))},
         [s = Shape(stride.begin(), stride.end()), p = Shape(padding.begin(), padding.end()),
          d = Shape(dilation.begin(), dilation.end()), groups, in_size = input.sizes(),
          w_size = weight.sizes()](const variable_list& g, LambdaNode& n) -> variable_list {
           // the incoming gradient is often expanded (from sum()): lay it out once for both kernels
           Tensor go = (n.needs_input_grad(0) && n.needs_input_grad(1)) ? g[0].contiguous() : g[0];
           return {grad_for(n, 0, [&] { return Ops::backward_input()(go, n.unpack(1), in_size, s, p, d, groups); }),
                   grad_for(n, 1, [&] { return Ops::backward_weight()(go, n.unpack(0), w_size, s, p, d, groups); }),
                   grad_for(n, 2, [&] { return go.sum(spatial_dims(go.dim())); })};
         });
  return out;
}

template <class Ops>
Tensor conv_backward_input_ag(const Tensor& grad_out, const Tensor& weight, IntArrayRef input_size,
                              IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  Tensor out = below_autograd(
      [&] { return Ops::backward_input()(grad_out, weight, input_size, stride, padding, dilation, groups); });
  record("ConvolutionBackwardBackward0", {grad_out, weight}, {out},
         {saved_input(saved_if(weight.requires_grad(), grad_out)),
          saved_input(saved_if(grad_out.requires_grad(), weight))},
         [s = Shape(stride.begin(), stride.end()), p = Shape(padding.begin(), padding.end()),
          d = Shape(dilation.begin(), dilation.end()), groups, w_size = weight.sizes(),
          go_size = grad_out.sizes()](const variable_list& g, LambdaNode& n) -> variable_list {
           Tensor gg = g[0];
           return {grad_for(n, 0, [&] {
                     return narrow_to(Ops::forward()(gg, n.unpack(1), std::nullopt, s, p, d, groups), go_size);
                   }),
                   grad_for(n, 1, [&] { return Ops::backward_weight()(n.unpack(0), gg, w_size, s, p, d, groups); })};
         });
  return out;
}

template <class Ops>
Tensor conv_backward_weight_ag(const Tensor& grad_out, const Tensor& input, IntArrayRef weight_size,
                               IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  Tensor out = below_autograd(
      [&] { return Ops::backward_weight()(grad_out, input, weight_size, stride, padding, dilation, groups); });
  record("ConvolutionBackwardBackward1", {grad_out, input}, {out},
         {saved_input(saved_if(input.requires_grad(), grad_out)),
          saved_input(saved_if(grad_out.requires_grad(), input))},
         [s = Shape(stride.begin(), stride.end()), p = Shape(padding.begin(), padding.end()),
          d = Shape(dilation.begin(), dilation.end()), groups, in_size = input.sizes(),
          go_size = grad_out.sizes()](const variable_list& g, LambdaNode& n) -> variable_list {
           Tensor gg = g[0];
           return {grad_for(n, 0, [&] {
                     return narrow_to(Ops::forward()(n.unpack(1), gg, std::nullopt, s, p, d, groups), go_size);
                   }),
                   grad_for(n, 1, [&] { return Ops::backward_input()(n.unpack(0), gg, in_size, s, p, d, groups); })};
         });
  return out;
}

EMBER_REGISTER_KERNEL(conv2d_forward, Autograd, conv_forward_ag<Conv2dOps>);
EMBER_REGISTER_KERNEL(conv2d_backward_input, Autograd, conv_backward_input_ag<Conv2dOps>);
EMBER_REGISTER_KERNEL(conv2d_backward_weight, Autograd, conv_backward_weight_ag<Conv2dOps>);
EMBER_REGISTER_KERNEL(conv3d_forward, Autograd, conv_forward_ag<Conv3dOps>);
EMBER_REGISTER_KERNEL(conv3d_backward_input, Autograd, conv_backward_input_ag<Conv3dOps>);
EMBER_REGISTER_KERNEL(conv3d_backward_weight, Autograd, conv_backward_weight_ag<Conv3dOps>);

}  // namespace
}  // namespace ember
