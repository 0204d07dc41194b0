// Meta kernels of the nn layers' ops, so a model's forward and backward run on shapes alone:
// embedding (index_select), convolution, pooling, layer/RMS/batch norm, attention and cross
// entropy. Output
// sizes come from the geometry the CPU kernels use (ops/pool_geometry.h, ops/norm_geometry.h);
// statistics are in the compute dtype (float32 for float16/bfloat16), as the CPU returns them.
#include <algorithm>

#include "ember/ops.h"
#include "meta/meta_utils.h"
#include "ops/norm_geometry.h"
#include "ops/op_handles.h"
#include "ops/pool_geometry.h"
#include "ops/reduce_utils.h"

namespace ember::meta {
namespace {

Tensor index_select_meta(const Tensor& a, int64_t dim, const Tensor& index) {
  check_on_meta(a);
  check_on_meta(index);
  EMBER_CHECK(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  EMBER_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32,
              "index_select(): Expected dtype int32 or int64 for index");
  if (a.dim() == 0) return new_meta({}, a.dtype());
  Shape out = a.sizes();
  out[wrap_dim(dim, a.dim())] = index.numel();
  return new_meta(out, a.dtype());
}

// (N, C, *spatial) input and (O, C / groups, *kernel) weight, 2 or 3 spatial dims (kSpatial);
// the checks ran in nn/functional/conv.cpp.
template <int kSpatial>
Tensor conv_forward_meta(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, IntArrayRef stride,
                         IntArrayRef padding, IntArrayRef dilation, int64_t) {
  check_on_meta(x);
  check_on_meta(w);
  check_on_meta(bias);
  EMBER_CHECK(x.dim() == 2 + kSpatial && w.dim() == 2 + kSpatial, "conv", kSpatial, "d: expected ", 2 + kSpatial,
              "-d input and weight, got ", x.dim(), "-d and ", w.dim(), "-d");
  Shape out{x.sizes()[0], w.sizes()[0]};
  for (int i = 0; i < kSpatial; ++i) {
    out.push_back(pool_out_size(x.sizes()[2 + i], w.sizes()[2 + i], padding[i], stride[i], dilation[i], false));
    EMBER_CHECK(out.back() > 0, "conv", kSpatial, "d: the output size is too small (", out.back(), ") for input ",
                x.sizes(), " and kernel ", w.sizes());
  }
  return new_meta(out, x.dtype());
}

template <int kSpatial>
Shape pooled(const Tensor& x, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
             bool ceil_mode) {
  EMBER_CHECK(x.dim() == 2 + kSpatial, "pooling: expected a ", 2 + kSpatial, "-d (N, C, ...) input, got ", x.dim(), "-d");
  Shape out = x.sizes();
  for (int i = 0; i < kSpatial; ++i) {
    out[2 + i] = pool_out_size(x.sizes()[2 + i], kernel[i], padding[i], stride[i], dilation.empty() ? 1 : dilation[i],
                               ceil_mode);
    EMBER_CHECK(out[2 + i] > 0, "pooling: Output size is too small for input ", x.sizes());
  }
  return out;
}
template <int kSpatial>
std::tuple<Tensor, Tensor> max_pool_meta(const Tensor& x, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding,
                                         IntArrayRef dilation, bool ceil_mode) {
  check_on_meta(x);
  Shape out = pooled<kSpatial>(x, kernel, stride, padding, dilation, ceil_mode);
  return {new_meta(out, x.dtype()), new_meta(out, kInt64)};
}
Tensor avg_pool2d_meta(const Tensor& x, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding, bool ceil_mode, bool) {
  check_on_meta(x);
  return new_meta(pooled<2>(x, kernel, stride, padding, {}, ceil_mode), x.dtype());
}
Tensor avg_pool3d_meta(const Tensor& x, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding, bool ceil_mode, bool,
                       int64_t) {
  check_on_meta(x);
  return new_meta(pooled<3>(x, kernel, stride, padding, {}, ceil_mode), x.dtype());
}
// The trailing output_size.size() dims take the given sizes (adaptive pools, upsample).
Tensor resized(const Tensor& x, IntArrayRef output_size, const char* op) {
  check_on_meta(x);
  EMBER_CHECK(x.dim() >= int64_t(output_size.size()), op, ": expected an input with at least ", output_size.size(),
              " dims, got ", x.dim(), "-d");
  Shape out = x.sizes();
  std::copy(output_size.begin(), output_size.end(), out.end() - int64_t(output_size.size()));
  return new_meta(out, x.dtype());
}
Tensor adaptive_avg_pool_meta(const Tensor& x, IntArrayRef output_size) { return resized(x, output_size, "adaptive_avg_pool"); }
Tensor upsample_meta(const Tensor& x, IntArrayRef output_size, ArrayRef<double>, int64_t, bool) {
  return resized(x, output_size, "upsample");
}
// pad: (left, right) pairs from the last dim backwards; negative pads crop.
Tensor pad_nd_meta(const Tensor& x, IntArrayRef pad, int64_t) {
  check_on_meta(x);
  EMBER_CHECK(pad.size() % 2 == 0 && int64_t(pad.size() / 2) <= x.dim(), "pad: expected an even number of pads for at "
              "most ", x.dim(), " dims, got ", pad.size());
  Shape out = x.sizes();
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    int64_t& s = out[out.size() - 1 - i];
    s += pad[2 * i] + pad[2 * i + 1];
    EMBER_CHECK(s >= 0, "pad: the padded size of dim ", out.size() - 1 - i, " would be negative (", s, ")");
  }
  return new_meta(out, x.dtype());
}

std::tuple<Tensor, Tensor, Tensor> layer_norm_meta(const Tensor& x, IntArrayRef normalized_shape, const std::optional<Tensor>& w,
                                                   const std::optional<Tensor>& b, double) {
  check_on_meta(x);
  check_on_meta(w);
  check_on_meta(b);
  const Shape stats = norm_rows::stat_shape(x, normalized_shape);
  const DType cdt = reduce::compute_dtype(x.dtype());
  return {new_meta(x.sizes(), x.dtype()), new_meta(stats, cdt), new_meta(stats, cdt)};
}
std::tuple<Tensor, Tensor> rms_norm_meta(const Tensor& x, IntArrayRef normalized_shape, const std::optional<Tensor>& w, double) {
  check_on_meta(x);
  check_on_meta(w);
  return {new_meta(x.sizes(), x.dtype()), new_meta(norm_rows::stat_shape(x, normalized_shape), reduce::compute_dtype(x.dtype()))};
}
std::tuple<Tensor, Tensor, Tensor> batch_norm_meta(const Tensor& x, const std::optional<Tensor>& w, const std::optional<Tensor>& b,
                                                   double) {
  check_on_meta(x);
  check_on_meta(w);
  check_on_meta(b);
  EMBER_CHECK(x.dim() >= 2, "batch_norm: expected an (N, C, ...) input, got ", x.dim(), "-d");
  const DType cdt = reduce::compute_dtype(x.dtype());
  return {new_meta(x.sizes(), x.dtype()), new_meta({x.sizes()[1]}, cdt), new_meta({x.sizes()[1]}, cdt)};
}

// The affine step of batch norm in eval mode (and group norm): x's shape.
Tensor channel_affine_meta(const Tensor& x, const Tensor& scale, const Tensor& shift) {
  check_on_meta(x);
  check_on_meta(scale);
  check_on_meta(shift);
  return new_meta(x.sizes(), x.dtype());
}

// Attention: q (..., Tq, D), v (..., Tk, Dv) -> out (..., Tq, Dv) and lse float32 (..., Tq).
std::tuple<Tensor, Tensor> flash_attention_meta(const Tensor& q, const Tensor& k, const Tensor& v,
                                                const std::optional<Tensor>& mask, bool, double) {
  for (const Tensor* t : {&q, &k, &v}) check_on_meta(*t);
  check_on_meta(mask);
  EMBER_CHECK(q.dim() >= 2 && k.dim() == q.dim() && v.dim() == q.dim(), "scaled_dot_product_attention: q, k and v must "
              "have the same number of dimensions (at least 2), got ", q.dim(), ", ", k.dim(), " and ", v.dim());
  Shape out = q.sizes();
  out.back() = v.sizes().back();
  Shape lse(q.sizes().begin(), q.sizes().end() - 1);
  return {new_meta(out, q.dtype()), new_meta(lse, kFloat32)};
}

// (M, C) logits and (M) targets; reduction 0 keeps one loss per row.
Tensor cross_entropy_meta(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight, int64_t,
                          int64_t reduction, double) {
  check_on_meta(input);
  check_on_meta(target);
  check_on_meta(weight);
  EMBER_CHECK(input.dim() == 2 && target.dim() == 1 && target.sizes()[0] == input.sizes()[0],
              "cross_entropy: expected (M, C) input and (M) target, got ", input.sizes(), " and ", target.sizes());
  return reduction == 0 ? new_meta({input.sizes()[0]}, input.dtype()) : new_meta({}, input.dtype());
}

// ---------------------------------------------------------------- backward
// Each gradient has the shape of what it is the gradient of; nothing else is computed.
Tensor like(const Tensor& t, DType dt) { return new_meta(t.sizes(), dt); }
Tensor& index_add_meta(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, const Scalar&) {
  check_on_meta(self);
  check_on_meta(index);
  check_on_meta(src);
  (void)wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  return self;
}
// (grad, other operand, the size of what this is the gradient of, ...): conv's input and weight
// gradients, upsample's and pad's input gradients.
Tensor sized_grad(const Tensor& grad, const Tensor& other, IntArrayRef size) {
  check_on_meta(grad);
  check_on_meta(other);
  return new_meta(size, grad.dtype());
}
Tensor conv_backward_meta(const Tensor& grad, const Tensor& other, IntArrayRef size, IntArrayRef, IntArrayRef, IntArrayRef,
                          int64_t) {
  return sized_grad(grad, other, size);
}
Tensor upsample_backward_meta(const Tensor& grad, IntArrayRef input_size, ArrayRef<double>, int64_t, bool) {
  return sized_grad(grad, Tensor(), input_size);
}
Tensor pad_nd_backward_meta(const Tensor& grad, IntArrayRef input_size, IntArrayRef, int64_t) {
  return sized_grad(grad, Tensor(), input_size);
}
// The pools' input gradients: the input's shape.
Tensor input_grad(const Tensor& grad, const Tensor& input) { return sized_grad(grad, input, input.sizes()); }
Tensor max_pool_backward_meta(const Tensor& grad, const Tensor& input, const Tensor& indices) {
  check_on_meta(indices);
  return input_grad(grad, input);
}
Tensor avg_pool2d_backward_meta(const Tensor& grad, const Tensor& input, IntArrayRef, IntArrayRef, IntArrayRef, bool, bool) {
  return input_grad(grad, input);
}
Tensor avg_pool3d_backward_meta(const Tensor& grad, const Tensor& input, IntArrayRef, IntArrayRef, IntArrayRef, bool, bool,
                                int64_t) {
  return input_grad(grad, input);
}
// output_mask: 1 dx | 2 dweight | 4 dbias; the parameters' gradients have the weight's shape.
std::tuple<Tensor, Tensor, Tensor> norm_grads(const Tensor& grad, const Tensor& input, const std::optional<Tensor>& weight,
                                              Shape param_shape, int64_t mask) {
  check_on_meta(grad);
  check_on_meta(input);
  check_on_meta(weight);
  const DType pdt = weight && weight->defined() ? weight->dtype() : input.dtype();
  return {mask & 1 ? like(input, input.dtype()) : Tensor(), mask & 2 ? new_meta(param_shape, pdt) : Tensor(),
          mask & 4 ? new_meta(param_shape, pdt) : Tensor()};
}
std::tuple<Tensor, Tensor, Tensor> layer_norm_backward_meta(const Tensor& grad, const Tensor& input, IntArrayRef normalized_shape,
                                                            const Tensor&, const Tensor&, const std::optional<Tensor>& weight,
                                                            int64_t mask) {
  return norm_grads(grad, input, weight, normalized_shape.vec(), mask);
}
std::tuple<Tensor, Tensor> rms_norm_backward_meta(const Tensor& grad, const Tensor& input, IntArrayRef normalized_shape,
                                                  const Tensor&, const std::optional<Tensor>& weight, int64_t mask) {
  auto [dx, dw, unused] = norm_grads(grad, input, weight, normalized_shape.vec(), mask & 3);
  return {dx, dw};
}
std::tuple<Tensor, Tensor, Tensor> batch_norm_backward_meta(const Tensor& grad, const Tensor& input,
                                                            const std::optional<Tensor>& weight, const Tensor&,
                                                            const Tensor&, int64_t mask) {
  return norm_grads(grad, input, weight, {input.sizes()[1]}, mask);
}
Tensor cross_entropy_backward_meta(const Tensor& grad, const Tensor& input, const Tensor& target,
                                   const std::optional<Tensor>& weight, int64_t, int64_t, double) {
  for (const Tensor* t : {&grad, &input, &target}) check_on_meta(*t);
  check_on_meta(weight);
  return like(input, input.dtype());
}
std::tuple<Tensor, Tensor, Tensor> flash_attention_backward_meta(const Tensor& grad, const Tensor& q, const Tensor& k,
                                                                 const Tensor& v, const std::optional<Tensor>& mask,
                                                                 const Tensor&, const Tensor&, bool, double) {
  for (const Tensor* t : {&grad, &q, &k, &v}) check_on_meta(*t);
  check_on_meta(mask);
  return {like(q, q.dtype()), like(k, k.dtype()), like(v, v.dtype())};
}

// embedding_bag: (B, D) and its aux (per-bag counts (B), or argmax rows (B, D) for max), B =
// bounds - 1, as cpu/embedding_bag_kernels.cpp; and its backward, the weight's and the weights'.
std::tuple<Tensor, Tensor> embedding_bag_meta(const Tensor& weight, const Tensor& indices, const Tensor& bounds,
                                              int64_t mode, const std::optional<Tensor>& psw, int64_t) {
  for (const Tensor* t : {&weight, &indices, &bounds}) check_on_meta(*t);
  check_on_meta(psw);
  const int64_t B = std::max<int64_t>(bounds.numel() - 1, 0), D = weight.sizes()[1];
  return {new_meta({B, D}, weight.dtype()), mode == 2 ? new_meta({B, D}, kInt64) : new_meta({B}, kInt64)};
}
std::tuple<Tensor, Tensor> embedding_bag_backward_meta(const Tensor& grad, const Tensor& weight, const Tensor& indices,
                                                       const Tensor& bounds, const Tensor& aux, int64_t,
                                                       const std::optional<Tensor>& psw, int64_t) {
  for (const Tensor* t : {&grad, &weight, &indices, &bounds, &aux}) check_on_meta(*t);
  check_on_meta(psw);
  return {new_meta(weight.sizes(), weight.dtype()), psw ? new_meta(psw->sizes(), psw->dtype()) : Tensor()};
}
// grid_sample: (N, C) of the input over the grid's (Ho, Wo); backward: the input's gradient when
// asked and the grid's (in the input's dtype), as cpu/grid_sample_kernels.cpp.
Tensor grid_sampler_meta(const Tensor& input, const Tensor& grid, int64_t, int64_t, bool) {
  check_on_meta(input);
  check_on_meta(grid);
  EMBER_CHECK(input.dim() == 4 && grid.dim() == 4, "grid_sampler_2d: expected 4-d input and grid, got ", input.dim(),
              "-d and ", grid.dim(), "-d");
  return new_meta({input.sizes()[0], input.sizes()[1], grid.sizes()[1], grid.sizes()[2]}, input.dtype());
}
std::tuple<Tensor, Tensor> grid_sampler_backward_meta(const Tensor& grad, const Tensor& input, const Tensor& grid, int64_t,
                                                      int64_t, bool, bool input_requires_grad) {
  for (const Tensor* t : {&grad, &input, &grid}) check_on_meta(*t);
  return {input_requires_grad ? new_meta(input.sizes(), input.dtype()) : Tensor(), new_meta(grid.sizes(), input.dtype())};
}

EMBER_REGISTER_KERNEL(_embedding_bag, Meta, embedding_bag_meta);
EMBER_REGISTER_KERNEL(_embedding_bag_backward, Meta, embedding_bag_backward_meta);
EMBER_REGISTER_KERNEL(grid_sampler_2d, Meta, grid_sampler_meta);
EMBER_REGISTER_KERNEL(grid_sampler_2d_backward, Meta, grid_sampler_backward_meta);
EMBER_REGISTER_KERNEL(index_add_, Meta, index_add_meta);
EMBER_REGISTER_KERNEL(conv2d_backward_input, Meta, conv_backward_meta);
EMBER_REGISTER_KERNEL(conv2d_backward_weight, Meta, conv_backward_meta);
EMBER_REGISTER_KERNEL(conv3d_backward_input, Meta, conv_backward_meta);
EMBER_REGISTER_KERNEL(conv3d_backward_weight, Meta, conv_backward_meta);
EMBER_REGISTER_KERNEL(max_pool2d_backward, Meta, max_pool_backward_meta);
EMBER_REGISTER_KERNEL(max_pool3d_backward, Meta, max_pool_backward_meta);
EMBER_REGISTER_KERNEL(avg_pool2d_backward, Meta, avg_pool2d_backward_meta);
EMBER_REGISTER_KERNEL(avg_pool3d_backward, Meta, avg_pool3d_backward_meta);
EMBER_REGISTER_KERNEL(adaptive_avg_pool2d_backward, Meta, input_grad);
EMBER_REGISTER_KERNEL(adaptive_avg_pool3d_backward, Meta, input_grad);
EMBER_REGISTER_KERNEL(upsample_backward, Meta, upsample_backward_meta);
EMBER_REGISTER_KERNEL(pad_nd_backward, Meta, pad_nd_backward_meta);
EMBER_REGISTER_KERNEL(native_layer_norm_backward, Meta, layer_norm_backward_meta);
EMBER_REGISTER_KERNEL(native_rms_norm_backward, Meta, rms_norm_backward_meta);
EMBER_REGISTER_KERNEL(native_batch_norm_backward, Meta, batch_norm_backward_meta);
EMBER_REGISTER_KERNEL(cross_entropy_index_backward, Meta, cross_entropy_backward_meta);
EMBER_REGISTER_KERNEL(_flash_attention_backward, Meta, flash_attention_backward_meta);

EMBER_REGISTER_KERNEL(index_select, Meta, index_select_meta);
EMBER_REGISTER_KERNEL(conv2d_forward, Meta, conv_forward_meta<2>);
EMBER_REGISTER_KERNEL(conv3d_forward, Meta, conv_forward_meta<3>);
EMBER_REGISTER_KERNEL(max_pool2d_with_indices, Meta, max_pool_meta<2>);
EMBER_REGISTER_KERNEL(max_pool3d_with_indices, Meta, max_pool_meta<3>);
EMBER_REGISTER_KERNEL(avg_pool2d, Meta, avg_pool2d_meta);
EMBER_REGISTER_KERNEL(avg_pool3d, Meta, avg_pool3d_meta);
EMBER_REGISTER_KERNEL(adaptive_avg_pool2d, Meta, adaptive_avg_pool_meta);
EMBER_REGISTER_KERNEL(adaptive_avg_pool3d, Meta, adaptive_avg_pool_meta);
EMBER_REGISTER_KERNEL(upsample, Meta, upsample_meta);
EMBER_REGISTER_KERNEL(pad_nd, Meta, pad_nd_meta);
EMBER_REGISTER_KERNEL(native_layer_norm, Meta, layer_norm_meta);
EMBER_REGISTER_KERNEL(native_rms_norm, Meta, rms_norm_meta);
EMBER_REGISTER_KERNEL(native_batch_norm, Meta, batch_norm_meta);
EMBER_REGISTER_KERNEL(cross_entropy_index, Meta, cross_entropy_meta);
EMBER_REGISTER_KERNEL(channel_affine, Meta, channel_affine_meta);
EMBER_REGISTER_KERNEL(_flash_attention_forward, Meta, flash_attention_meta);

}  // namespace
}  // namespace ember::meta
