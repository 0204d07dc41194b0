// pad (torch.nn.functional.pad): constant, reflect, replicate and circular, as composites of
// differentiable ops (slice, flip, expand, cat; constant pad writes into a filled tensor through
// a slice, which autograd records as CopySlices). pad = (left, right, top, bottom, front, back)
// applies from the last dim backwards.
#include "ember/nn/functional.h"

namespace ember::nn::functional {

namespace {

// One dim of a non-constant pad: returns x with `lo` / `hi` elements added on either side of dim d.
Tensor pad_dim(const Tensor& x, int64_t d, int64_t lo, int64_t hi, const std::string& mode) {
  const int64_t n = x.sizes()[d];
  std::vector<Tensor> parts;
  // negative pads crop first (PyTorch allows them for every mode)
  Tensor core = x;
  if (lo < 0 || hi < 0) {
    int64_t start = lo < 0 ? -lo : 0, end = hi < 0 ? n + hi : n;
    core = x.slice(d, start, end);
    lo = std::max<int64_t>(lo, 0);
    hi = std::max<int64_t>(hi, 0);
  }
  const int64_t m = core.sizes()[d];
  if (lo == 0 && hi == 0) return core;
  if (mode == "reflect") {
    if (lo > 0) parts.push_back(core.slice(d, 1, lo + 1).flip({d}));
    parts.push_back(core);
    if (hi > 0) parts.push_back(core.slice(d, m - 1 - hi, m - 1).flip({d}));
  } else if (mode == "replicate") {
    auto edge = [&](int64_t i, int64_t count) {
      Shape s = core.sizes();
      s[size_t(d)] = count;
      return core.slice(d, i, i + 1).expand(s);
    };
    if (lo > 0) parts.push_back(edge(0, lo));
    parts.push_back(core);
    if (hi > 0) parts.push_back(edge(m - 1, hi));
  } else {  // circular
    if (lo > 0) parts.push_back(core.slice(d, m - lo, m));
    parts.push_back(core);
    if (hi > 0) parts.push_back(core.slice(d, 0, hi));
  }
  return cat(parts, d);
}

}  // namespace

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
      if (s1 <= s0) return out;  // nothing of the input survives
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
  Tensor out = input;
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
    out = pad_dim(out, d, lo, hi, mode);
  }
  return out;
}

}  // namespace ember::nn::functional
