// pad (torch.nn.functional.pad). pad = (left, right, top, bottom, front, back) applies from the
// last dim backwards; negative pads crop. Constant padding writes the input into a filled tensor
// through a slice (autograd records CopySlices). Reflect, replicate and circular are one
// dispatched op, pad_nd (CPU kernel: src/cpu/pad_kernels.cpp), a gather along one index map per
// padded dim; its backward op scatters along the same maps, and the gradient of the backward is
// the forward again (double backward).
#include "autograd/record.h"
#include "ember/nn/functional.h"
#include "ops/op_handles.h"

namespace ember::nn::functional {

Tensor pad(const Tensor& input, IntArrayRef pad, const std::string& mode, double value) {
  const int64_t np = int64_t(pad.size());
  EMBER_CHECK(np % 2 == 0, "Padding length must be divisible by 2");
  EMBER_CHECK(np / 2 <= input.dim(), "Padding length too large");
  const int64_t k = np / 2, nd = input.dim();
  if (mode == "constant") {
    Shape out_shape = input.sizes();
    for (int64_t i = 0; i < k; ++i) {
      int64_t d = nd - 1 - i;
      int64_t size = input.sizes()[d] + pad[2 * i] + pad[2 * i + 1];
      EMBER_CHECK(size >= 0, "The input size ", input.sizes()[d], ", plus negative padding ", pad[2 * i], " and ",
                  pad[2 * i + 1], " resulted in a negative output size, which is invalid. Check dimension ", d,
                  " of your input.");
      out_shape[size_t(d)] = size;
    }
    Tensor out = full(out_shape, value, input.options());
    Tensor src = input, dst = out;
    for (int64_t i = 0; i < k; ++i) {
      int64_t d = nd - 1 - i, lo = pad[2 * i], hi = pad[2 * i + 1], n = input.sizes()[d];
      // the part of the input that survives cropping, and where it lands in the output
      int64_t s0 = std::max<int64_t>(0, -lo), s1 = n - std::max<int64_t>(0, -hi);
      // nothing of the input survives: the result is the fill alone, still recorded as a
      // function of the input (zero gradient), as torch's
      if (s1 <= s0) return input.requires_grad() ? out + input.reshape({-1}).narrow(0, 0, 0).sum() : out;
      src = src.slice(d, s0, s1);
      int64_t o0 = std::max<int64_t>(0, lo);
      dst = dst.slice(d, o0, o0 + (s1 - s0));
    }
    dst.copy_(src);
    return out;
  }
  EMBER_CHECK_AS(NotImplementedError, mode == "reflect" || mode == "replicate" || mode == "circular",
                 "Unrecognised padding mode ", mode);
  EMBER_CHECK_AS(NotImplementedError, np == 2 || np == 4 || np == 6,
                 "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now");
  EMBER_CHECK_AS(NotImplementedError, nd == k + 1 || nd == k + 2,
                 "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now");
  for (int64_t i = 0; i < k; ++i) {
    int64_t d = nd - 1 - i, lo = pad[2 * i], hi = pad[2 * i + 1], n = input.sizes()[d];
    if (mode == "reflect") {
      EMBER_CHECK(lo < n && hi < n, "Argument #4: Padding size should be less than the corresponding input dimension, "
                  "but got: padding (", lo, ", ", hi, ") at dimension ", d, " of input ", input.sizes());
    } else if (mode == "circular") {
      EMBER_CHECK(lo <= n && hi <= n, "Padding value causes wrapping around more than once.");
    } else {
      EMBER_CHECK(n > 0 || (lo <= 0 && hi <= 0), "padding size is expected to be ", nd,
                  "D, but got input of size ", input.sizes(), " with dimension ", d, " being empty");
    }
    // circular wraps around what survives cropping: it must not be empty when something is
    // padded around it, nor narrower than a pad (torch checks against the uncropped size only and
    // then reads uninitialised or half-written memory)
    const int64_t core = n - std::max<int64_t>(-lo, 0) - std::max<int64_t>(-hi, 0);
    if (mode == "circular") {
      EMBER_CHECK(core > 0 || (lo <= 0 && hi <= 0), "pad: circular padding (", lo, ", ", hi, ") of dimension ", d,
                  " of input ", input.sizes(), " leaves no element to wrap around after cropping");
      EMBER_CHECK(lo <= core && hi <= core, "Padding value causes wrapping around more than once.");
    }
    EMBER_CHECK(n + lo + hi >= 0, "The input size ", n,
                ", plus negative padding ", lo, " and ", hi,
                " resulted in a negative output size, which is invalid. Check dimension ", d, " of your input.");
  }
  if (mode != "circular") {
    // reflect / replicate: every padded dim of the output must be non-empty (torch's messages)
    static const char* names[] = {"D", "H", "W"};
    bool ok = true;
    std::string out_s, in_s;
    for (int64_t i = k - 1; i >= 0; --i) {  // outermost padded dim first
      const int64_t d = nd - 1 - i, n = input.sizes()[size_t(d)], o = n + pad[2 * i] + pad[2 * i + 1];
      ok = ok && o >= 1;
      const std::string name = names[3 - 1 - i];
      out_s += (out_s.empty() ? "" : " ") + name + ": " + std::to_string(o);
      in_s += (in_s.empty() ? "" : ", ") + name + ": " + std::to_string(n);
    }
    if (k == 1) EMBER_CHECK(ok, "input (", in_s, ") is too small. Calculated output ", out_s);
    EMBER_CHECK(ok, "Calculated output ", out_s, " must be >= 1 in every dimension (input ", in_s, ")");
  }
  const int64_t op_mode = mode == "reflect" ? 0 : mode == "replicate" ? 1 : 2;
  return ops::pad_nd()(input, pad, op_mode);
}

}  // namespace ember::nn::functional

// ---------------------------------------------------------------- gradients
namespace ember {
namespace {
using namespace autograd;

Tensor pad_nd_ag(const Tensor& input, IntArrayRef pad, int64_t mode) {
  Tensor out = below_autograd([&] { return ops::pad_nd()(input, pad, mode); });
  record("PadBackward0", {input}, {out}, {},
         [in = Shape(input.sizes()), p = Shape(pad.begin(), pad.end()), mode](const variable_list& g,
                                                                               LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] { return ops::pad_nd_backward()(g[0], in, p, mode); })};
         });
  return out;
}

Tensor pad_nd_backward_ag(const Tensor& grad_out, IntArrayRef input_size, IntArrayRef pad, int64_t mode) {
  Tensor out = below_autograd([&] { return ops::pad_nd_backward()(grad_out, input_size, pad, mode); });
  record("PadBackwardBackward0", {grad_out}, {out}, {},
         [p = Shape(pad.begin(), pad.end()), mode](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] { return ops::pad_nd()(g[0], p, mode); })};
         });
  return out;
}

EMBER_REGISTER_KERNEL(pad_nd, Autograd, pad_nd_ag);
EMBER_REGISTER_KERNEL(pad_nd_backward, Autograd, pad_nd_backward_ag);

}  // namespace
}  // namespace ember
