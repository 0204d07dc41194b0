// The CUDA kernels of the pooling ops, registered with the dispatcher: max pooling with indices
// and its backward, average pooling and its backward, adaptive average pooling and its backward,
// adaptive max pooling, 2-d and 3-d. As the CPU kernels (src/cpu/pool_kernels.cpp): arguments
// arrive checked by src/nn/functional/pool.cpp and pool_nd.cpp, output sizes come from the same
// pool_out_size (src/ops/pool_geometry.h), indices are int64 flat positions in the plane (2-d) or
// volume (3-d), float16/bfloat16 compute in float (natively here: the kernels load and store
// them), other non-float dtypes are refused. The 2-d ops are the 3-d kernels on unit depth, which
// keeps one set of kernels and makes the 2-d indices the 3-d ones. Non-contiguous inputs are made
// contiguous here (spatial_host.h). Launchers: pool_kernels.cu.
#include "cuda/pool_launchers.h"
#include "cuda/spatial_host.h"
#include "ember/ops.h"
#include "ops/op_handles.h"
#include "ops/pool_geometry.h"

namespace ember::cuda {
namespace {

// The geometry of a (N, C, D, H, W) input x5 and its (N, C, OD, OH, OW) output; windowed
// pooling adds its window (no dilation: 1).
PoolGeometry geometry(IntArrayRef in5, IntArrayRef out5) {
  PoolGeometry g;
  g.planes = in5[0] * in5[1];
  for (int i = 0; i < 3; ++i) {
    g.in[i] = in5[size_t(2 + i)];
    g.out[i] = out5[size_t(2 + i)];
  }
  return g;
}
PoolGeometry geometry(IntArrayRef in5, IntArrayRef out5, IntArrayRef k, IntArrayRef s, IntArrayRef p,
                      IntArrayRef d) {
  PoolGeometry g = geometry(in5, out5);
  for (size_t i = 0; i < 3; ++i) {
    g.k[i] = k[i];
    g.s[i] = s[i];
    g.p[i] = p[i];
    g.d[i] = d.empty() ? 1 : d[i];
  }
  return g;
}

// The 5-d output size of windowed pooling of x5.
Shape windowed_out_size(const Tensor& x5, IntArrayRef k, IntArrayRef s, IntArrayRef p, IntArrayRef d,
                        bool ceil_mode) {
  Shape out_size{x5.sizes()[0], x5.sizes()[1]};
  for (size_t i = 0; i < 3; ++i)
    out_size.push_back(pool_out_size(x5.sizes()[2 + i], k[i], p[i], s[i], d.empty() ? 1 : d[i], ceil_mode));
  return out_size;
}

// ---------------------------------------------------------------- max pooling
// Max pooling (windowed or adaptive: L's geometry says which window) of x5 into a new output
// and int64 indices of out_size.
std::tuple<Tensor, Tensor> max_pool_5d(const Tensor& x5, const Shape& out_size, MaxPoolLaunch L, const char* op,
                                       void (*launcher)(const MaxPoolLaunch&)) {
  Tensor out = empty(out_size, x5.options());
  Tensor idx = empty(out_size, {.dtype = kInt64, .device = x5.device()});
  if (out.numel() == 0) return {out, idx};
  L.indices = static_cast<int64_t*>(idx.data_ptr());
  launch_on_device(L, x5, out, op, launcher);
  return {out, idx};
}

std::tuple<Tensor, Tensor> windowed_max_pool_5d(const Tensor& x5, IntArrayRef k, IntArrayRef s, IntArrayRef p,
                                                IntArrayRef d, bool ceil_mode, const char* op) {
  const Shape out_size = windowed_out_size(x5, k, s, p, d, ceil_mode);
  return max_pool_5d(x5, out_size, {.g = geometry(x5.sizes(), out_size, k, s, p, d)}, op, launch_max_pool);
}

std::tuple<Tensor, Tensor> max_pool2d_cuda(const Tensor& input, IntArrayRef k, IntArrayRef s, IntArrayRef p,
                                           IntArrayRef d, bool ceil_mode) {
  auto [o, i] = windowed_max_pool_5d(input.unsqueeze(2), {1, k[0], k[1]}, {1, s[0], s[1]}, {0, p[0], p[1]},
                                     {1, d[0], d[1]}, ceil_mode, "max_pool2d_cuda");
  return {o.squeeze(2), i.squeeze(2)};
}

std::tuple<Tensor, Tensor> max_pool3d_cuda(const Tensor& input, IntArrayRef k, IntArrayRef s, IntArrayRef p,
                                           IntArrayRef d, bool ceil_mode) {
  return windowed_max_pool_5d(input, k, s, p, d, ceil_mode, "max_pool3d_cuda");
}

std::tuple<Tensor, Tensor> adaptive_max_pool3d_cuda(const Tensor& input, IntArrayRef osize) {
  const Shape out_size{input.sizes()[0], input.sizes()[1], osize[0], osize[1], osize[2]};
  return max_pool_5d(input, out_size, {.g = geometry(input.sizes(), out_size)}, "adaptive_max_pool3d_cuda",
                     launch_adaptive_max_pool);
}

// Scatters grad_output into the input's planes (volumes) at the indices, any spatial rank.
Tensor max_pool_backward_cuda(const Tensor& grad_out, const Tensor& input, const Tensor& indices) {
  EMBER_CHECK(indices.dtype() == kInt64, "max_pool backward: expected int64 indices");
  const int64_t planes = input.sizes()[0] * input.sizes()[1];
  return scatter_backward(grad_out, input.sizes(), [&](const Tensor& dx) {
    Tensor gy = grad_out.contiguous(), ind = indices.contiguous();
    const int device = grad_out.device().index;
    GpuGuard guard(device);
    MaxPoolBackwardLaunch L;
    L.planes = planes;
    L.in_plane = dx.numel() / planes;
    L.out_plane = grad_out.numel() / planes;
    L.grad_out = gy.data_ptr();
    L.indices = static_cast<const int64_t*>(ind.data_ptr());
    L.grad_in = dx.data_ptr();
    L.code = int8_t(grad_out.dtype());
    L.op = "max_pool_backward_cuda";
    L.stream = current_cuda_stream(device);
    launch_max_pool_backward(L);
  });
}

// ---------------------------------------------------------------- average pooling
// Average pooling (windowed or adaptive, as L's launcher) of x5 into a new output of out_size.
Tensor avg_pool_5d(const Tensor& x5, const Shape& out_size, const AvgPoolLaunch& L, const char* op,
                   void (*launcher)(const AvgPoolLaunch&)) {
  Tensor out = empty(out_size, x5.options());
  if (out.numel() != 0) launch_on_device(L, x5, out, op, launcher);
  return out;
}

// Its backward into grad_input of x5's size. The backward kernels write every element (a
// gather), so only an empty grad_output needs the zeros.
Tensor avg_pool_backward_5d(const Tensor& gy5, const Tensor& x5, const AvgPoolLaunch& L, const char* op,
                            void (*launcher)(const AvgPoolLaunch&)) {
  if (gy5.numel() == 0 || x5.numel() == 0) return zeros(x5.sizes(), gy5.options());
  Tensor dx = empty(x5.sizes(), gy5.options());
  launch_on_device(L, gy5, dx, op, launcher);
  return dx;
}

Tensor windowed_avg_pool_5d(const Tensor& x5, IntArrayRef k, IntArrayRef s, IntArrayRef p, bool ceil_mode, bool cip,
                            int64_t divisor, const char* op) {
  const Shape out_size = windowed_out_size(x5, k, s, p, {}, ceil_mode);
  return avg_pool_5d(x5, out_size,
                     {.g = geometry(x5.sizes(), out_size, k, s, p, {}), .count_include_pad = cip, .divisor = divisor},
                     op, launch_avg_pool);
}

Tensor windowed_avg_pool_backward_5d(const Tensor& gy5, const Tensor& x5, IntArrayRef k, IntArrayRef s,
                                     IntArrayRef p, bool cip, int64_t divisor, const char* op) {
  return avg_pool_backward_5d(
      gy5, x5, {.g = geometry(x5.sizes(), gy5.sizes(), k, s, p, {}), .count_include_pad = cip, .divisor = divisor},
      op, launch_avg_pool_backward);
}

Tensor avg_pool3d_cuda(const Tensor& input, IntArrayRef k, IntArrayRef s, IntArrayRef p, bool ceil_mode,
                       bool count_include_pad, int64_t divisor) {
  return windowed_avg_pool_5d(input, k, s, p, ceil_mode, count_include_pad, divisor, "avg_pool3d_cuda");
}

Tensor avg_pool3d_backward_cuda(const Tensor& grad_out, const Tensor& input, IntArrayRef k, IntArrayRef s,
                                IntArrayRef p, bool ceil_mode, bool count_include_pad, int64_t divisor) {
  (void)ceil_mode;  // the output size is grad_out's
  return windowed_avg_pool_backward_5d(grad_out, input, k, s, p, count_include_pad, divisor,
                                       "avg_pool3d_backward_cuda");
}

Tensor avg_pool2d_cuda(const Tensor& input, IntArrayRef k, IntArrayRef s, IntArrayRef p, bool ceil_mode,
                       bool count_include_pad) {
  return windowed_avg_pool_5d(input.unsqueeze(2), {1, k[0], k[1]}, {1, s[0], s[1]}, {0, p[0], p[1]}, ceil_mode,
                              count_include_pad, 0, "avg_pool2d_cuda")
      .squeeze(2);
}

Tensor avg_pool2d_backward_cuda(const Tensor& grad_out, const Tensor& input, IntArrayRef k, IntArrayRef s,
                                IntArrayRef p, bool ceil_mode, bool count_include_pad) {
  (void)ceil_mode;
  return windowed_avg_pool_backward_5d(grad_out.unsqueeze(2), input.unsqueeze(2), {1, k[0], k[1]}, {1, s[0], s[1]},
                                       {0, p[0], p[1]}, count_include_pad, 0, "avg_pool2d_backward_cuda")
      .squeeze(2);
}

// ---------------------------------------------------------------- adaptive average pooling
Tensor adaptive_avg_pool_5d(const Tensor& x5, IntArrayRef osize, const char* op) {
  const Shape out_size{x5.sizes()[0], x5.sizes()[1], osize[0], osize[1], osize[2]};
  return avg_pool_5d(x5, out_size, {.g = geometry(x5.sizes(), out_size)}, op, launch_adaptive_avg_pool);
}

Tensor adaptive_avg_pool_backward_5d(const Tensor& gy5, const Tensor& x5, const char* op) {
  return avg_pool_backward_5d(gy5, x5, {.g = geometry(x5.sizes(), gy5.sizes())}, op,
                              launch_adaptive_avg_pool_backward);
}

Tensor adaptive_avg_pool3d_cuda(const Tensor& input, IntArrayRef osize) {
  return adaptive_avg_pool_5d(input, osize, "adaptive_avg_pool3d_cuda");
}
Tensor adaptive_avg_pool3d_backward_cuda(const Tensor& grad_out, const Tensor& input) {
  return adaptive_avg_pool_backward_5d(grad_out, input, "adaptive_avg_pool3d_backward_cuda");
}
Tensor adaptive_avg_pool2d_cuda(const Tensor& input, IntArrayRef osize) {
  return adaptive_avg_pool_5d(input.unsqueeze(2), {1, osize[0], osize[1]}, "adaptive_avg_pool2d_cuda").squeeze(2);
}
Tensor adaptive_avg_pool2d_backward_cuda(const Tensor& grad_out, const Tensor& input) {
  return adaptive_avg_pool_backward_5d(grad_out.unsqueeze(2), input.unsqueeze(2), "adaptive_avg_pool2d_backward_cuda")
      .squeeze(2);
}

EMBER_REGISTER_KERNEL(max_pool2d_with_indices, CUDA, max_pool2d_cuda);
EMBER_REGISTER_KERNEL(max_pool2d_backward, CUDA, max_pool_backward_cuda);
EMBER_REGISTER_KERNEL(avg_pool2d, CUDA, avg_pool2d_cuda);
EMBER_REGISTER_KERNEL(avg_pool2d_backward, CUDA, avg_pool2d_backward_cuda);
EMBER_REGISTER_KERNEL(adaptive_avg_pool2d, CUDA, adaptive_avg_pool2d_cuda);
EMBER_REGISTER_KERNEL(adaptive_avg_pool2d_backward, CUDA, adaptive_avg_pool2d_backward_cuda);
EMBER_REGISTER_KERNEL(max_pool3d_with_indices, CUDA, max_pool3d_cuda);
EMBER_REGISTER_KERNEL(max_pool3d_backward, CUDA, max_pool_backward_cuda);
EMBER_REGISTER_KERNEL(avg_pool3d, CUDA, avg_pool3d_cuda);
EMBER_REGISTER_KERNEL(avg_pool3d_backward, CUDA, avg_pool3d_backward_cuda);
EMBER_REGISTER_KERNEL(adaptive_avg_pool3d, CUDA, adaptive_avg_pool3d_cuda);
EMBER_REGISTER_KERNEL(adaptive_avg_pool3d_backward, CUDA, adaptive_avg_pool3d_backward_cuda);
EMBER_REGISTER_KERNEL(adaptive_max_pool3d, CUDA, adaptive_max_pool3d_cuda);

}  // namespace
}  // namespace ember::cuda
