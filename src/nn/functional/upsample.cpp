// interpolate (torch.nn.functional.interpolate): size / scale_factor handling, mode and dim
// checks with PyTorch's messages, then one dispatched op, `upsample`, for the nearest,
// nearest-exact, linear (1-3 spatial dims) and bicubic (2 spatial dims) modes (CPU kernels in
// src/cpu/upsample_kernels.cpp); "area" is adaptive average pooling, as in torch. Integer
// tensors take the nearest modes through index_select (a gather per dim), as torch allows them
// there only.
//
// Scales reach the op only when the caller gave scale_factor without recompute_scale_factor:
// then torch samples with 1/scale instead of in/out (the two differ when in*scale is not an
// integer), which the op needs to reproduce.
#include <cmath>

#include "autograd/record.h"
#include "ember/nn/functional.h"
#include "ops/op_handles.h"

namespace ember::nn::functional {

namespace {

// 4 and 5: kLinear / kCubic antialiased (the op's modes, cpu/upsample_kernels.cpp)
enum UpsampleMode : int64_t { kNearest = 0, kNearestExact = 1, kLinear = 2, kCubic = 3 };

std::string join_sizes(IntArrayRef s) {
  static const char* names3[] = {"D", "H", "W"};
  std::string r;
  const size_t off = 3 - s.size();
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ", ";
    r += std::string(names3[i + off]) + ": " + std::to_string(s[i]);
  }
  return r;
}

// Nearest modes for dtypes the kernel does not compute in (integers, bool): gather per dim with
// the kernel's index rule (cpu/upsample_kernels.cpp) in float, evaluated here on the host.
Tensor nearest_by_gather(const Tensor& input, IntArrayRef out_sp, ArrayRef<double> scales, bool exact) {
  Tensor out = input;
  const int64_t nd = int64_t(out_sp.size());
  for (int64_t d = 0; d < nd; ++d) {
    const int64_t in = input.sizes()[size_t(d + 2)], o_n = out_sp[size_t(d)];
    const double sc = scales.size() == size_t(nd) ? scales[size_t(d)] : -1.0;
    const float s = sc > 0 ? float(1.0 / sc) : float(in) / float(o_n);
    std::vector<int64_t> idx(static_cast<size_t>(o_n));
    for (int64_t o = 0; o < o_n; ++o) {
      const float real = exact ? (float(o) + 0.5f) * s : float(o) * s;
      int64_t i = int64_t(std::floor(real));
      if (!exact && nd == 2) i = o_n == in ? o : o_n == 2 * in ? (o >> 1) : i;  // nearest_idx's shortcuts
      idx[size_t(o)] = std::min(i, in - 1);
    }
    Tensor it = tensor(idx).to(input.device());
    out = out.index_select(d + 2, it);
  }
  return out;
}

}  // namespace

Tensor interpolate(const Tensor& input, std::optional<std::vector<int64_t>> size,
                   std::optional<std::vector<double>> scale_factor, const std::string& mode,
                   std::optional<bool> align_corners, std::optional<bool> recompute_scale_factor, bool antialias) {
  const bool nearest_like = mode == "nearest" || mode == "area" || mode == "nearest-exact";
  if (nearest_like) {
    EMBER_CHECK_VALUE(!align_corners.has_value(),
                      "align_corners option can only be set with the interpolating modes: linear | bilinear | "
                      "bicubic | trilinear");
  } else if (!align_corners) {
    align_corners = false;
  }
  const int64_t dim = input.dim() - 2;
  Shape in_sp;
  for (int64_t i = 2; i < input.dim(); ++i) in_sp.push_back(input.sizes()[size_t(i)]);
  EMBER_CHECK_VALUE(!(size && scale_factor), "only one of size or scale_factor should be defined");
  EMBER_CHECK_VALUE(size || scale_factor, "either size or scale_factor should be defined");
  std::vector<int64_t> output_size;
  std::vector<double> scales;
  if (size) {
    if (size->size() == 1 && dim != 1 && dim >= 1) size = std::vector<int64_t>(size_t(dim), (*size)[0]);
    EMBER_CHECK_VALUE(int64_t(size->size()) == dim,
                      "Input and output must have the same number of spatial dimensions, but got input with spatial "
                      "dimensions of ", in_sp, " and output size of ", IntArrayRef(*size),
                      ". Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, "
                      "...,oK) format.");
    output_size = *size;
  } else {
    if (scale_factor->size() == 1 && dim != 1 && dim >= 1)
      scale_factor = std::vector<double>(size_t(dim), (*scale_factor)[0]);
    if (int64_t(scale_factor->size()) != dim) {
      std::string s = "(";
      for (size_t i = 0; i < scale_factor->size(); ++i) s += (i ? ", " : "") + std::to_string((*scale_factor)[i]);
      EMBER_CHECK_VALUE(false, "Input and scale_factor must have the same number of spatial dimensions, but got "
                        "input with spatial dimensions of ", in_sp, " and scale_factor of shape ", s,
                        "). Please provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, "
                        "s2, ...,sK) format.");
    }
    scales = *scale_factor;
  }
  EMBER_CHECK_VALUE(!(recompute_scale_factor.value_or(false) && size),
                    "recompute_scale_factor is not meaningful with an explicit size.");
  if (mode == "area" && !size) recompute_scale_factor = true;
  if (!size) {
    // floor(in * scale) in double, what both torch's Python (recompute) and C++ (op) compute
    for (int64_t i = 0; i < dim; ++i) output_size.push_back(int64_t(std::floor(double(in_sp[size_t(i)]) * scales[size_t(i)])));
    if (recompute_scale_factor.value_or(false)) scales.clear();
  }
  EMBER_CHECK_VALUE(!antialias || ((mode == "bilinear" || mode == "bicubic") && input.dim() == 4),
                    "Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D tensor as input");

  int64_t op_mode = -1;
  if (mode == "nearest" && dim >= 1 && dim <= 3) op_mode = kNearest;
  else if (mode == "nearest-exact" && dim >= 1 && dim <= 3) op_mode = kNearestExact;
  else if ((mode == "linear" && dim == 1) || (mode == "bilinear" && dim == 2) || (mode == "trilinear" && dim == 3))
    op_mode = kLinear;
  else if (mode == "bicubic" && dim == 2) op_mode = kCubic;
  else if (mode == "area" && dim >= 1 && dim <= 3) {
    if (dim == 1) return adaptive_avg_pool2d(input.unsqueeze(-2), {1, output_size[0]}).squeeze(-2);
    if (dim == 2) return adaptive_avg_pool2d(input, output_size);
    // adaptive average pooling is separable (each window is a box with equal weights): pool
    // (H, W) per depth slice, then D with the pooled plane flattened into the last dim, where an
    // adaptive window of size 1 per position leaves it as is
    const int64_t N = input.sizes()[0], C = input.sizes()[1], D = input.sizes()[2];
    const int64_t OD = output_size[0], OH = output_size[1], OW = output_size[2];
    Tensor hw = adaptive_avg_pool2d(input.reshape({N, C * D, in_sp[1], in_sp[2]}), {OH, OW});
    Tensor d = adaptive_avg_pool2d(hw.reshape({N, C, D, OH * OW}), {OD, OH * OW});
    return d.reshape({N, C, OD, OH, OW});
  }
  if (op_mode < 0) {
    const char* need[] = {"", "3D", "4D", "5D"};
    for (auto [m, d] : {std::pair<const char*, int>{"linear", 1}, {"bilinear", 2}, {"trilinear", 3}})
      EMBER_CHECK_AS(NotImplementedError, !(mode == m && dim >= 1 && dim <= 3),
                     "Got ", input.dim(), "D input, but ", m, " mode needs ", need[d], " input");
    EMBER_CHECK_AS(NotImplementedError, false, "Input Error: Only 3D, 4D and 5D input Tensors supported (got ",
                   input.dim(), "D) for the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                   "nearest-exact (got ", mode, ")");
  }
  bool ok = true;
  for (int64_t i = 0; i < dim; ++i) ok = ok && in_sp[size_t(i)] > 0 && output_size[size_t(i)] > 0;
  EMBER_CHECK(ok, "Input and output sizes should be greater than 0, but got input (", join_sizes(in_sp),
              ") and output (", join_sizes(output_size), ")");
  if (!is_floating(input.dtype())) {
    EMBER_CHECK(op_mode == kNearest || op_mode == kNearestExact, "\"upsample_", mode, "\" not implemented for '",
                scalar_type_name(input.dtype()), "'");
    return nearest_by_gather(input, output_size, scales, op_mode == kNearestExact);
  }
  if (antialias) op_mode += 2;  // kLinearAA / kCubicAA
  return ops::upsample()(input, output_size, scales, op_mode, *align_corners);
}

}  // namespace ember::nn::functional

// ---------------------------------------------------------------- gradients
// upsample is linear in its input; its backward op is linear in grad_output, and the gradient of
// the backward op with respect to grad_output is the forward op again (double backward).
namespace ember {
namespace {
using namespace autograd;

Tensor upsample_ag(const Tensor& input, IntArrayRef output_size, ArrayRef<double> scales, int64_t mode,
                   bool align_corners) {
  Tensor out = below_autograd([&] { return ops::upsample()(input, output_size, scales, mode, align_corners); });
  record("UpsampleBackward0", {input}, {out}, {},
         [in = Shape(input.sizes()), sc = std::vector<double>(scales.begin(), scales.end()), mode,
          align_corners](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] { return ops::upsample_backward()(g[0], in, sc, mode, align_corners); })};
         });
  return out;
}

Tensor upsample_backward_ag(const Tensor& grad_out, IntArrayRef input_size, ArrayRef<double> scales, int64_t mode,
                            bool align_corners) {
  Tensor out =
      below_autograd([&] { return ops::upsample_backward()(grad_out, input_size, scales, mode, align_corners); });
  Shape os(grad_out.sizes().begin() + 2, grad_out.sizes().end());
  record("UpsampleBackwardBackward0", {grad_out}, {out}, {},
         [os, sc = std::vector<double>(scales.begin(), scales.end()), mode, align_corners](
             const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] { return ops::upsample()(g[0], os, sc, mode, align_corners); })};
         });
  return out;
}

EMBER_REGISTER_KERNEL(upsample, Autograd, upsample_ag);
EMBER_REGISTER_KERNEL(upsample_backward, Autograd, upsample_backward_ag);

}  // namespace
}  // namespace ember
