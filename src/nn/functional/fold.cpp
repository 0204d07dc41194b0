// unfold and fold (torch.nn.functional): the sliding local blocks of a batch of images as columns
// (im2col) and back, summing overlaps (col2im), with PyTorch's checks and messages. Each is one
// dispatched op on batched input (CPU kernels: src/cpu/fold_kernels.cpp, the convolution's own
// im2col/col2im); unbatched input gains a batch dim here. The two are each other's adjoints, so
// each op's gradient is the other op, and double backward works.
#include <sstream>

#include "autograd/record.h"
#include "ember/nn/functional.h"
#include "ops/op_handles.h"

namespace ember::nn::functional {

namespace {

Shape pair_arg(const char* name, IntArrayRef v) {
  if (v.size() == 1) return {v[0], v[0]};
  EMBER_CHECK(v.size() == 2, "It is expected ", name, " equals to 2, but got size ", v.size());
  return {v[0], v[1]};
}

struct FoldArgs {
  Shape k, d, p, s;
};

// torch's checks on the window arguments (im2col_shape_check / col2im_shape_check).
FoldArgs check_window(IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding, IntArrayRef stride) {
  FoldArgs a{pair_arg("kernel_size", kernel_size), pair_arg("dilation", dilation), pair_arg("padding", padding),
             pair_arg("stride", stride)};
  EMBER_CHECK(a.k[0] > 0 && a.k[1] > 0, "kernel size should be greater than zero, but got kernel_height: ", a.k[0],
              " kernel_width: ", a.k[1]);
  EMBER_CHECK(a.d[0] > 0 && a.d[1] > 0, "dilation should be greater than zero, but got dilation_height: ", a.d[0],
              " dilation_width: ", a.d[1]);
  EMBER_CHECK(a.p[0] >= 0 && a.p[1] >= 0, "padding should be non-negative, but got pad_height: ", a.p[0],
              " pad_width: ", a.p[1]);
  EMBER_CHECK(a.s[0] > 0 && a.s[1] > 0, "stride should be greater than zero, but got stride_height: ", a.s[0],
              " stride_width: ", a.s[1]);
  return a;
}

// Number of block positions along one dim (floor division, as torch's div_rtn).
int64_t blocks(int64_t size, int64_t k, int64_t d, int64_t p, int64_t s) {
  const int64_t num = size + 2 * p - d * (k - 1) - 1;
  return (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
}

std::string window_repr(const FoldArgs& a) {
  std::ostringstream os;
  os << "kernel_size=(" << a.k[0] << ", " << a.k[1] << "), dilation=(" << a.d[0] << ", " << a.d[1] << "), padding=("
     << a.p[0] << ", " << a.p[1] << ")";
  return os.str();
}

void check_dtype(const Tensor& input, const char* op) {
  EMBER_CHECK_AS(NotImplementedError, is_floating(input.dtype()), "\"", op, "\" not implemented for '",
                 scalar_type_name(input.dtype()), "'");
}

}  // namespace

Tensor unfold(const Tensor& input, IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding,
              IntArrayRef stride) {
  const FoldArgs a = check_window(kernel_size, dilation, padding, stride);
  const int64_t r = input.dim();
  bool valid = r == 3 || r == 4;
  if (valid)
    for (int64_t i = r - 3; i < r; ++i) valid = valid && input.sizes()[i] != 0;
  EMBER_CHECK(valid,
              "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for "
              "input, but got: ", input.sizes());
  const int64_t H = input.sizes()[r - 2], W = input.sizes()[r - 1];
  const int64_t bh = blocks(H, a.k[0], a.d[0], a.p[0], a.s[0]), bw = blocks(W, a.k[1], a.d[1], a.p[1], a.s[1]);
  EMBER_CHECK(bh >= 1 && bw >= 1, "Given input with spatial size (", H, ", ", W, "), ", window_repr(a),
              ", calculated shape of the array of sliding blocks as (", bh, ", ", bw,
              "), but its components must be at least one.");
  check_dtype(input, "im2col_out_cpu");
  if (r == 3) return ops::im2col()(input.unsqueeze(0), a.k, a.d, a.p, a.s).squeeze(0);
  return ops::im2col()(input, a.k, a.d, a.p, a.s);
}

Tensor fold(const Tensor& input, IntArrayRef output_size, IntArrayRef kernel_size, IntArrayRef dilation,
            IntArrayRef padding, IntArrayRef stride) {
  const Shape os = pair_arg("output_size", output_size);
  const FoldArgs a = check_window(kernel_size, dilation, padding, stride);
  const int64_t r = input.dim();
  EMBER_CHECK((r == 2 && input.sizes()[0] != 0 && input.sizes()[1] != 0) ||
                  (r == 3 && input.sizes()[1] != 0 && input.sizes()[2] != 0),
              "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions "
              "for input, but got: ", input.sizes());
  const int64_t planes = input.sizes()[r - 2], length = input.sizes()[r - 1];
  EMBER_CHECK(planes % (a.k[0] * a.k[1]) == 0,
              "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got "
              "input.size(1)=", planes, " and kernel_size=(", a.k[0], ", ", a.k[1], ").");
  const int64_t bh = blocks(os[0], a.k[0], a.d[0], a.p[0], a.s[0]), bw = blocks(os[1], a.k[1], a.d[1], a.p[1], a.s[1]);
  std::ostringstream given;
  given << "Given output_size=(" << os[0] << ", " << os[1] << "), " << window_repr(a) << ", stride=(" << a.s[0]
        << ", " << a.s[1] << "), ";
  EMBER_CHECK(length == bh * bw, given.str(),
              "expected size of input's dimension 2 to match the calculated number of sliding blocks ", bh, " * ", bw,
              " = ", bh * bw, ", but got input.size(2)=", length, ".");
  EMBER_CHECK(bh >= 1 && bw >= 1, given.str(), "calculated shape of the array of sliding blocks as (", bh, ", ", bw,
              "), which is too small (non-positive)");
  EMBER_CHECK(os[0] >= 1 && os[1] >= 1, "Expected output spatial size to be positive, but got: output_size=(", os[0],
              ", ", os[1], ").");
  check_dtype(input, "col2im_out_cpu");
  if (r == 2) return ops::col2im()(input.unsqueeze(0), os, a.k, a.d, a.p, a.s).squeeze(0);
  return ops::col2im()(input, os, a.k, a.d, a.p, a.s);
}

}  // namespace ember::nn::functional

// ---------------------------------------------------------------- gradients
// im2col and col2im are linear and adjoint: the gradient of each is the other.
namespace ember {
namespace {
using namespace autograd;

Shape own(IntArrayRef v) { return Shape(v.begin(), v.end()); }

Tensor im2col_ag(const Tensor& input, IntArrayRef k, IntArrayRef d, IntArrayRef p, IntArrayRef s) {
  Tensor out = below_autograd([&] { return ops::im2col()(input, k, d, p, s); });
  record("Im2ColBackward0", {input}, {out}, {},
         [size = Shape{input.sizes()[2], input.sizes()[3]}, k = own(k), d = own(d), p = own(p),
          s = own(s)](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] { return ops::col2im()(g[0], size, k, d, p, s); })};
         });
  return out;
}

Tensor col2im_ag(const Tensor& input, IntArrayRef output_size, IntArrayRef k, IntArrayRef d, IntArrayRef p,
                 IntArrayRef s) {
  Tensor out = below_autograd([&] { return ops::col2im()(input, output_size, k, d, p, s); });
  record("Col2ImBackward0", {input}, {out}, {},
         [k = own(k), d = own(d), p = own(p), s = own(s)](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] { return ops::im2col()(g[0], k, d, p, s); })};
         });
  return out;
}

EMBER_REGISTER_KERNEL(im2col, Autograd, im2col_ag);
EMBER_REGISTER_KERNEL(col2im, Autograd, col2im_ag);

}  // namespace
}  // namespace ember
