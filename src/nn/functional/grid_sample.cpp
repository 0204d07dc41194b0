// torch.nn.functional.grid_sample for 4-D input (bilinear and nearest; Python's F.grid_sample
// keeps its composite for bicubic and for devices without a grid_sampler_2d kernel): PyTorch's
// checks and messages, then one dispatched op whose CPU kernel is cpu/grid_sample_kernels.cpp.
// The gradient is grid_sampler_2d_backward, which, as in PyTorch, has no derivative of its own.
#include "amp/autocast.h"
#include "autograd/no_derivative.h"
#include "ember/nn/functional.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::nn::functional {

Tensor grid_sample(const Tensor& input, const Tensor& grid, const std::string& mode, const std::string& padding_mode,
                   std::optional<bool> align_corners) {
  EMBER_AUTOCAST(grid_sample, input, grid, mode, padding_mode, align_corners);  // (float32 under autocast, as torch)
  EMBER_CHECK(mode == "bilinear" || mode == "nearest" || mode == "bicubic",
              "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: '", mode,
              "'");
  EMBER_CHECK(mode != "bicubic", "grid_sample: mode='bicubic' is not implemented in C++ (Python's F.grid_sample has it)");
  EMBER_CHECK(padding_mode == "zeros" || padding_mode == "border" || padding_mode == "reflection",
              "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', but got: '",
              padding_mode, "'");
  EMBER_CHECK(input.dim() == 4 && grid.dim() == 4 && grid.size(-1) == 2,
              "grid_sampler(): expected 4D input and grid with same number of dimensions and last dimension 2 "
              "(ember samples 2-D images), but got input with sizes ", input.sizes(), " and grid with sizes ",
              grid.sizes());
  EMBER_CHECK(input.size(0) == grid.size(0),
              "grid_sampler(): expected grid and input to have same batch size, but got input with sizes ",
              input.sizes(), " and grid with sizes ", grid.sizes());
  EMBER_CHECK(input.device() == grid.device(), "grid_sampler(): expected input and grid to be on same device, but "
              "input is on ", input.device().str(), " and grid is on ", grid.device().str());
  EMBER_CHECK(is_floating(input.dtype()) && input.dtype() == grid.dtype(),
              "grid_sampler(): expected input and grid to have the same floating dtype, but got input ",
              dtype_name(input.dtype()), " and grid ", dtype_name(grid.dtype()));
  const int64_t interpolation = mode == "bilinear" ? 0 : 1;
  const int64_t padding = padding_mode == "zeros" ? 0 : padding_mode == "border" ? 1 : 2;
  return ops::grid_sampler_2d()(input, grid, interpolation, padding, align_corners.value_or(false));
}

}  // namespace ember::nn::functional

namespace ember {
namespace {
using namespace autograd;

Tensor grid_sampler_2d_ag(const Tensor& input, const Tensor& grid, int64_t interpolation, int64_t padding,
                          bool align_corners) {
  Tensor out = below_autograd([&] { return ops::grid_sampler_2d()(input, grid, interpolation, padding, align_corners); });
  record("GridSampler2DBackward0", {input, grid}, {out}, {saved_input(input), saved_input(grid)},
         [interpolation, padding, align_corners](const variable_list& g, LambdaNode& n) -> variable_list {
           // (std::get, not a structured binding: clang refuses to capture those in the lambdas below)
           const auto grads = ops::grid_sampler_2d_backward()(g[0], n.unpack(0), n.unpack(1), interpolation, padding,
                                                               align_corners, n.needs_input_grad(0));
           return {grad_for(n, 0, [&] { return std::get<0>(grads); }), grad_for(n, 1, [&] { return std::get<1>(grads); })};
         });
  return out;
}

std::tuple<Tensor, Tensor> grid_sampler_2d_backward_ag(const Tensor& grad_out, const Tensor& input, const Tensor& grid,
                                                       int64_t interpolation, int64_t padding, bool align_corners,
                                                       bool input_requires_grad) {
  auto [gi, gg] = below_autograd([&] {
    return ops::grid_sampler_2d_backward()(grad_out, input, grid, interpolation, padding, align_corners,
                                           input_requires_grad);
  });
  record_no_derivative("GridSampler2DBackwardBackward0", "grid_sampler_2d_backward", {grad_out, input, grid}, {gi, gg});
  return {gi, gg};
}

EMBER_REGISTER_KERNEL(grid_sampler_2d, Autograd, grid_sampler_2d_ag);
EMBER_REGISTER_KERNEL(grid_sampler_2d_backward, Autograd, grid_sampler_2d_backward_ag);

}  // namespace
}  // namespace ember
