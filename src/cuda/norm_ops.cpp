// The CUDA kernels of the fused normalisations, registered with the dispatcher: layer norm and
// RMS norm (forward, and layer norm's backward), batch norm with batch statistics (forward and
// backward) and channel_affine. Argument checks live in src/nn/functional/norm.cpp and the
// batch-norm composites, as for the CPU kernels (src/cpu/norm_kernels.cpp), whose results and
// statistics dtypes these follow: the statistics and the parameters are in the compute dtype
// (float32 for float16/bfloat16 input), the outputs in the input's. Kernels: norm_kernels.cu.
#include "cuda/cuda_state.h"
#include "cuda/norm_launchers.h"
#include "cuda/reduce_launchers.h"
#include "ember/ops.h"
#include "ops/op_handles.h"
#include "ops/norm_geometry.h"
#include "ops/reduce_utils.h"

namespace ember::cuda {
namespace {

using reduce::compute_dtype;
using norm_rows::param_in;
using norm_rows::split_rows;
using norm_rows::stat_shape;

const void* ptr_or_null(const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

// Layer norm (with mean) or RMS norm (without): (y, mean or undefined, rstd).
std::tuple<Tensor, Tensor, Tensor> row_norm(const Tensor& input, IntArrayRef normalized_shape,
                                            const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                                            double eps, bool center) {
  const DType dt = input.dtype(), cdt = compute_dtype(dt);
  const Device dev = input.device();
  Tensor x = input.contiguous();
  Tensor w = param_in(weight, cdt), b = param_in(bias, cdt);
  const auto [m, n] = split_rows(x, normalized_shape);
  Tensor y = empty(x.sizes(), {.dtype = dt, .device = dev});
  const Shape ss = stat_shape(x, normalized_shape);
  Tensor mean = center ? empty(ss, {.dtype = cdt, .device = dev}) : Tensor();
  Tensor rstd = empty(ss, {.dtype = cdt, .device = dev});
  if (n == 0) {  // no values per row: NaN statistics, as the CPU kernel's 0/0
    if (center) mean.fill_(Scalar(std::nan("")));
    rstd.fill_(Scalar(std::nan("")));
    return {y, mean, rstd};
  }
  GpuGuard guard(dev.index);
  RowNormLaunch L;
  L.x = x.data_ptr();
  L.y = y.data_ptr();
  L.mean = center ? mean.data_ptr() : nullptr;
  L.rstd = rstd.data_ptr();
  L.weight = ptr_or_null(w);
  L.bias = ptr_or_null(b);
  L.m = m;
  L.n = n;
  L.eps = eps;
  L.code = int8_t(dt);
  L.stream = current_cuda_stream(dev.index);
  launch_row_norm(L);
  return {y, mean, rstd};
}

std::tuple<Tensor, Tensor, Tensor> layer_norm_cuda(const Tensor& input, IntArrayRef normalized_shape,
                                                   const std::optional<Tensor>& weight,
                                                   const std::optional<Tensor>& bias, double eps) {
  return row_norm(input, normalized_shape, weight, bias, eps, /*center=*/true);
}

std::tuple<Tensor, Tensor> rms_norm_cuda(const Tensor& input, IntArrayRef normalized_shape,
                                         const std::optional<Tensor>& weight, double eps) {
  auto [y, mean, rstd] = row_norm(input, normalized_shape, weight, std::nullopt, eps, /*center=*/false);
  return {y, rstd};
}

std::tuple<Tensor, Tensor, Tensor> layer_norm_backward_cuda(const Tensor& grad_out, const Tensor& input,
                                                            IntArrayRef normalized_shape, const Tensor& mean,
                                                            const Tensor& rstd, const std::optional<Tensor>& weight,
                                                            int64_t mask) {
  const DType dt = input.dtype(), cdt = compute_dtype(dt);
  const Device dev = input.device();
  Tensor x = input.contiguous(), g = reduce::convert(grad_out, dt, true);
  Tensor mu = reduce::convert(mean, cdt, true), rs = reduce::convert(rstd, cdt, true);
  Tensor w = param_in(weight, cdt);
  const auto [m, n] = split_rows(x, normalized_shape);
  const bool need_dx = mask & 1, need_dw = mask & 2, need_db = mask & 4;
  const Shape ns(normalized_shape.begin(), normalized_shape.end());
  Tensor dx = need_dx ? empty(x.sizes(), {.dtype = dt, .device = dev}) : Tensor();
  if (m == 0 || n == 0)  // nothing to sum: zero gradients for the parameters
    return {dx, need_dw ? zeros(ns, {.dtype = dt, .device = dev}) : Tensor(),
            need_db ? zeros(ns, {.dtype = dt, .device = dev}) : Tensor()};
  GpuGuard guard(dev.index);
  const int64_t chunks = layer_norm_backward_chunks(m, n, gpu_shape(dev.index).sms);
  Tensor wpart = need_dw ? empty({chunks, n}, {.dtype = cdt, .device = dev}) : Tensor();
  Tensor bpart = need_db ? empty({chunks, n}, {.dtype = cdt, .device = dev}) : Tensor();
  RowNormBackwardLaunch L;
  L.g = g.data_ptr();
  L.x = x.data_ptr();
  L.mean = mu.data_ptr();
  L.rstd = rs.data_ptr();
  L.weight = ptr_or_null(w);
  L.dx = need_dx ? dx.data_ptr() : nullptr;
  L.dw_partial = need_dw ? wpart.data_ptr() : nullptr;
  L.db_partial = need_db ? bpart.data_ptr() : nullptr;
  L.m = m;
  L.n = n;
  L.chunks = chunks;
  L.code = int8_t(dt);
  L.stream = current_cuda_stream(dev.index);
  launch_layer_norm_backward(L);
  Tensor dw = need_dw ? reduce::convert(wpart.sum({0}).reshape(ns), dt) : Tensor();
  Tensor db = need_db ? reduce::convert(bpart.sum({0}).reshape(ns), dt) : Tensor();
  return {dx, dw, db};
}

// (N, C, ...) viewed as [planes = N, c = C, s = the rest].
ChannelLaunch channel_geometry(const Tensor& x) {
  ChannelLaunch L;
  L.planes = x.sizes()[0];
  L.c = x.sizes()[1];
  L.s = 1;
  for (int64_t d = 2; d < x.dim(); ++d) L.s *= x.sizes()[d];
  L.code = int8_t(x.dtype());
  L.stream = current_cuda_stream(x.device().index);
  return L;
}

// Batch norm's launch over x with its scratch: the (split, channel) partials and the
// per-channel coefficients, in the compute dtype; the tensors live as long as the struct.
struct BatchNormPass {
  ChannelLaunch L;
  Tensor partial, coef;
  BatchNormPass(const Tensor& x, DType cdt) : L(channel_geometry(x)) {
    L.splits = batch_norm_splits(L.planes, L.c, L.s, gpu_shape(x.device().index).sms);
    partial = empty({L.splits * L.c * 2}, {.dtype = cdt, .device = x.device()});
    coef = empty({3 * L.c}, {.dtype = cdt, .device = x.device()});
    L.x = x.data_ptr();
    L.partial = partial.data_ptr();
    L.coef = coef.data_ptr();
  }
};

std::tuple<Tensor, Tensor, Tensor> batch_norm_cuda(const Tensor& input, const std::optional<Tensor>& weight,
                                                   const std::optional<Tensor>& bias, double eps) {
  const DType dt = input.dtype(), cdt = compute_dtype(dt);
  const Device dev = input.device();
  GpuGuard guard(dev.index);
  Tensor x = input.contiguous();
  Tensor w = param_in(weight, cdt), b = param_in(bias, cdt);
  BatchNormPass pass(x, cdt);
  ChannelLaunch& L = pass.L;
  Tensor y = empty(x.sizes(), {.dtype = dt, .device = dev});
  Tensor mean = empty({L.c}, {.dtype = cdt, .device = dev});
  Tensor invstd = empty({L.c}, {.dtype = cdt, .device = dev});
  L.y = y.data_ptr();
  L.mean = mean.data_ptr();
  L.invstd = invstd.data_ptr();
  L.weight = ptr_or_null(w);
  L.bias = ptr_or_null(b);
  L.eps = eps;
  launch_batch_norm(L);
  return {y, mean, invstd};
}

std::tuple<Tensor, Tensor, Tensor> batch_norm_backward_cuda(const Tensor& grad_out, const Tensor& input,
                                                            const std::optional<Tensor>& weight, const Tensor& save_mean,
                                                            const Tensor& save_invstd, int64_t mask) {
  const DType dt = input.dtype(), cdt = compute_dtype(dt);
  const Device dev = input.device();
  GpuGuard guard(dev.index);
  Tensor x = input.contiguous(), g = reduce::convert(grad_out, dt, true);
  Tensor mu = reduce::convert(save_mean, cdt, true), rs = reduce::convert(save_invstd, cdt, true);
  Tensor w = param_in(weight, cdt);
  const bool need_dx = mask & 1, need_dw = mask & 2, need_db = mask & 4;
  BatchNormPass pass(x, cdt);
  ChannelLaunch& L = pass.L;
  Tensor dx = need_dx ? empty(x.sizes(), {.dtype = dt, .device = dev}) : Tensor();
  Tensor dw = empty({L.c}, {.dtype = cdt, .device = dev});
  Tensor db = empty({L.c}, {.dtype = cdt, .device = dev});
  L.g = g.data_ptr();
  L.y = need_dx ? dx.data_ptr() : nullptr;
  L.mean = mu.data_ptr();
  L.invstd = rs.data_ptr();
  L.weight = ptr_or_null(w);
  L.dweight = dw.data_ptr();
  L.dbias = db.data_ptr();
  launch_batch_norm_backward(L);
  const DType pdt = weight && weight->defined() ? weight->dtype() : dt;
  return {dx, need_dw ? reduce::convert(dw, pdt) : Tensor(), need_db ? reduce::convert(db, pdt) : Tensor()};
}

Tensor channel_affine_cuda(const Tensor& input, const Tensor& scale, const Tensor& shift) {
  const DType dt = input.dtype(), cdt = compute_dtype(dt);
  const Device dev = input.device();
  GpuGuard guard(dev.index);
  Tensor x = input.contiguous();
  Tensor s = reduce::convert(scale, cdt, true), t = reduce::convert(shift, cdt, true);
  ChannelLaunch L = channel_geometry(x);
  Tensor y = empty(x.sizes(), {.dtype = dt, .device = dev});
  L.x = x.data_ptr();
  L.y = y.data_ptr();
  L.weight = s.data_ptr();
  L.bias = t.data_ptr();
  launch_channel_affine(L);
  return y;
}

EMBER_REGISTER_KERNEL(native_layer_norm, CUDA, layer_norm_cuda);
EMBER_REGISTER_KERNEL(native_layer_norm_backward, CUDA, layer_norm_backward_cuda);
EMBER_REGISTER_KERNEL(native_rms_norm, CUDA, rms_norm_cuda);
EMBER_REGISTER_KERNEL(native_batch_norm, CUDA, batch_norm_cuda);
EMBER_REGISTER_KERNEL(native_batch_norm_backward, CUDA, batch_norm_backward_cuda);
EMBER_REGISTER_KERNEL(channel_affine, CUDA, channel_affine_cuda);

}  // namespace
}  // namespace ember::cuda
