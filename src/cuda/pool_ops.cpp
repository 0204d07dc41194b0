// The CUDA kernels of the pooling ops, registered with the dispatcher: max pooling with indices
// and its backward, average pooling and its backward, adaptive average pooling and its backward,
// adaptive max pooling, 2-d and 3-d. As the CPU kernels (src/cpu/pool_kernels.cpp): arguments
// arrive checked by src/nn/functional/pool.cpp and pool_nd.cpp, output sizes follow the same
// rules (ceil_mode, padding, dilation), indices are int64 flat positions in the plane (2-d) or
// volume (3-d), float16/bfloat16 compute in float (natively here: the kernels load and store
// them), other non-float dtypes are refused. The 2-d ops are the 3-d kernels on unit depth, which
// keeps one set of kernels and makes the 2-d indices the 3-d ones. Non-contiguous inputs are made
// contiguous here. Launchers: pool_kernels.cu.
#include "cuda/cuda_state.h"
#include "cuda/pool_launchers.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cuda {
namespace {

// The CPU's pool_out_size (PyTorch's pooling_output_shape).
int64_t pool_out_size(int64_t in, int64_t k, int64_t pad, int64_t s, int64_t dil, bool ceil_mode) {
  int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil_mode && (out - 1) * s >= in + pad) --out;
  return out;
}

// The geometry of a (N, C, D, H, W) input x5 and its (N, C, OD, OH, OW) output.
PoolGeometry geometry(IntArrayRef in5, IntArrayRef out5) {
  PoolGeometry g;
  g.planes = in5[0] * in5[1];
  for (int i = 0; i < 3; ++i) {
    g.in[i] = in5[size_t(2 + i)];
    g.out[i] = out5[size_t(2 + i)];
  }
  return g;
}
void set_window(PoolGeometry& g, IntArrayRef k, IntArrayRef s, IntArrayRef p, IntArrayRef d) {
  for (size_t i = 0; i < 3; ++i) {
    g.k[i] = k[i];
    g.s[i] = s[i];
    g.p[i] = p[i];
    g.d[i] = d.empty() ? 1 : d[i];
  }
}

// The op's device: current for the launches, and its current stream.
struct OnDevice {
  explicit OnDevice(const Tensor& t) : index(t.device().index), guard(index), stream(current_cuda_stream(index)) {}
  int index;
  GpuGuard guard;
  cudaStream_t stream;
};

// ---------------------------------------------------------------- max pooling
// x5: (N, C, D, H, W). Returns the 5-d output and indices.
std::tuple<Tensor, Tensor> max_pool_5d(const Tensor& x5, IntArrayRef k, IntArrayRef s, IntArrayRef p, IntArrayRef d,
                                       bool ceil_mode, const char* op) {
  Shape out_size{x5.sizes()[0], x5.sizes()[1]};
  for (size_t i = 0; i < 3; ++i) out_size.push_back(pool_out_size(x5.sizes()[2 + i], k[i], p[i], s[i], d[i], ceil_mode));
  Tensor out = empty(out_size, x5.options());
  Tensor idx = empty(out_size, {.dtype = kInt64, .device = x5.device()});
  if (out.numel() == 0) return {out, idx};
  Tensor x = x5.contiguous();
  OnDevice dev(x5);
  MaxPoolLaunch L;
  L.g = geometry(x5.sizes(), out_size);
  set_window(L.g, k, s, p, d);
  L.in = x.data_ptr();
  L.out = out.data_ptr();
  L.indices = static_cast<int64_t*>(idx.data_ptr());
  L.code = int8_t(x5.dtype());
  L.op = op;
  L.stream = dev.stream;
  launch_max_pool(L);
  return {out, idx};
}

std::tuple<Tensor, Tensor> max_pool2d_cuda(const Tensor& input, IntArrayRef k, IntArrayRef s, IntArrayRef p,
                                           IntArrayRef d, bool ceil_mode) {
  auto [o, i] = max_pool_5d(input.unsqueeze(2), {1, k[0], k[1]}, {1, s[0], s[1]}, {0, p[0], p[1]}, {1, d[0], d[1]},
                            ceil_mode, "max_pool2d_cuda");
  return {o.squeeze(2), i.squeeze(2)};
}

std::tuple<Tensor, Tensor> max_pool3d_cuda(const Tensor& input, IntArrayRef k, IntArrayRef s, IntArrayRef p,
                                           IntArrayRef d, bool ceil_mode) {
  return max_pool_5d(input, k, s, p, d, ceil_mode, "max_pool3d_cuda");
}

std::tuple<Tensor, Tensor> adaptive_max_pool3d_cuda(const Tensor& input, IntArrayRef osize) {
  const Shape out_size{input.sizes()[0], input.sizes()[1], osize[0], osize[1], osize[2]};
  Tensor out = empty(out_size, input.options());
  Tensor idx = empty(out_size, {.dtype = kInt64, .device = input.device()});
  if (out.numel() == 0) return {out, idx};
  Tensor x = input.contiguous();
  OnDevice dev(input);
  MaxPoolLaunch L;
  L.g = geometry(input.sizes(), out_size);
  L.in = x.data_ptr();
  L.out = out.data_ptr();
  L.indices = static_cast<int64_t*>(idx.data_ptr());
  L.code = int8_t(input.dtype());
  L.op = "adaptive_max_pool3d_cuda";
  L.stream = dev.stream;
  launch_adaptive_max_pool(L);
  return {out, idx};
}

// Scatters grad_output into the input's planes (volumes) at the indices, any spatial rank.
// float16/bfloat16 gradients accumulate in a float32 buffer (atomics on the reduced types would
// round every partial sum), converted at the end as the CPU's float32 pass.
Tensor max_pool_backward_cuda(const Tensor& grad_out, const Tensor& input, const Tensor& indices) {
  EMBER_CHECK(indices.dtype() == kInt64, "max_pool backward: expected int64 indices");
  const bool reduced = is_reduced_float(grad_out.dtype());
  Tensor dx = zeros(input.sizes(), reduced ? TensorOptions{.dtype = kFloat32, .device = grad_out.device()}
                                           : grad_out.options());
  const int64_t planes = input.sizes()[0] * input.sizes()[1];
  if (dx.numel() != 0 && grad_out.numel() != 0) {
    Tensor gy = grad_out.contiguous(), ind = indices.contiguous();
    OnDevice dev(grad_out);
    MaxPoolBackwardLaunch L;
    L.planes = planes;
    L.in_plane = dx.numel() / planes;
    L.out_plane = grad_out.numel() / planes;
    L.grad_out = gy.data_ptr();
    L.indices = static_cast<const int64_t*>(ind.data_ptr());
    L.grad_in = dx.data_ptr();
    L.code = int8_t(grad_out.dtype());
    L.op = "max_pool_backward_cuda";
    L.stream = dev.stream;
    launch_max_pool_backward(L);
  }
  return reduced ? dx.to(grad_out.dtype()) : dx;
}

// ---------------------------------------------------------------- average pooling
Tensor avg_pool_5d(const Tensor& x5, IntArrayRef k, IntArrayRef s, IntArrayRef p, bool ceil_mode, bool cip,
                   int64_t divisor, const char* op) {
  Shape out_size{x5.sizes()[0], x5.sizes()[1]};
  for (size_t i = 0; i < 3; ++i) out_size.push_back(pool_out_size(x5.sizes()[2 + i], k[i], p[i], s[i], 1, ceil_mode));
  Tensor out = empty(out_size, x5.options());
  if (out.numel() == 0) return out;
  Tensor x = x5.contiguous();
  OnDevice dev(x5);
  AvgPoolLaunch L;
  L.g = geometry(x5.sizes(), out_size);
  set_window(L.g, k, s, p, {});
  L.in = x.data_ptr();
  L.out = out.data_ptr();
  L.code = int8_t(x5.dtype());
  L.count_include_pad = cip;
  L.divisor = divisor;
  L.op = op;
  L.stream = dev.stream;
  launch_avg_pool(L);
  return out;
}

// The backward kernel writes every element of grad_input (a gather), so only an empty
// grad_output needs the zeros.
Tensor avg_pool_backward_5d(const Tensor& gy5, const Tensor& x5, IntArrayRef k, IntArrayRef s, IntArrayRef p,
                            bool cip, int64_t divisor, const char* op) {
  if (gy5.numel() == 0 || x5.numel() == 0) return zeros(x5.sizes(), gy5.options());
  Tensor dx = empty(x5.sizes(), gy5.options());
  Tensor gy = gy5.contiguous();
  OnDevice dev(gy5);
  AvgPoolLaunch L;
  L.g = geometry(x5.sizes(), gy5.sizes());
  set_window(L.g, k, s, p, {});
  L.in = gy.data_ptr();
  L.out = dx.data_ptr();
  L.code = int8_t(gy5.dtype());
  L.count_include_pad = cip;
  L.divisor = divisor;
  L.op = op;
  L.stream = dev.stream;
  launch_avg_pool_backward(L);
  return dx;
}

Tensor avg_pool3d_cuda(const Tensor& input, IntArrayRef k, IntArrayRef s, IntArrayRef p, bool ceil_mode,
                       bool count_include_pad, int64_t divisor) {
  return avg_pool_5d(input, k, s, p, ceil_mode, count_include_pad, divisor, "avg_pool3d_cuda");
}

Tensor avg_pool3d_backward_cuda(const Tensor& grad_out, const Tensor& input, IntArrayRef k, IntArrayRef s,
                                IntArrayRef p, bool ceil_mode, bool count_include_pad, int64_t divisor) {
  (void)ceil_mode;  // the output size is grad_out's
  return avg_pool_backward_5d(grad_out, input, k, s, p, count_include_pad, divisor, "avg_pool3d_backward_cuda");
}

Tensor avg_pool2d_cuda(const Tensor& input, IntArrayRef k, IntArrayRef s, IntArrayRef p, bool ceil_mode,
                       bool count_include_pad) {
  return avg_pool_5d(input.unsqueeze(2), {1, k[0], k[1]}, {1, s[0], s[1]}, {0, p[0], p[1]}, ceil_mode,
                     count_include_pad, 0, "avg_pool2d_cuda")
      .squeeze(2);
}

Tensor avg_pool2d_backward_cuda(const Tensor& grad_out, const Tensor& input, IntArrayRef k, IntArrayRef s,
                                IntArrayRef p, bool ceil_mode, bool count_include_pad) {
  (void)ceil_mode;
  return avg_pool_backward_5d(grad_out.unsqueeze(2), input.unsqueeze(2), {1, k[0], k[1]}, {1, s[0], s[1]},
                              {0, p[0], p[1]}, count_include_pad, 0, "avg_pool2d_backward_cuda")
      .squeeze(2);
}

// ---------------------------------------------------------------- adaptive average pooling
Tensor adaptive_avg_pool_5d(const Tensor& x5, IntArrayRef osize, const char* op) {
  const Shape out_size{x5.sizes()[0], x5.sizes()[1], osize[0], osize[1], osize[2]};
  Tensor out = empty(out_size, x5.options());
  if (out.numel() == 0) return out;
  Tensor x = x5.contiguous();
  OnDevice dev(x5);
  AvgPoolLaunch L;
  L.g = geometry(x5.sizes(), out_size);
  L.in = x.data_ptr();
  L.out = out.data_ptr();
  L.code = int8_t(x5.dtype());
  L.op = op;
  L.stream = dev.stream;
  launch_adaptive_avg_pool(L);
  return out;
}

Tensor adaptive_avg_pool_backward_5d(const Tensor& gy5, const Tensor& x5, const char* op) {
  if (gy5.numel() == 0 || x5.numel() == 0) return zeros(x5.sizes(), gy5.options());
  Tensor dx = empty(x5.sizes(), gy5.options());
  Tensor gy = gy5.contiguous();
  OnDevice dev(gy5);
  AvgPoolLaunch L;
  L.g = geometry(x5.sizes(), gy5.sizes());
  L.in = gy.data_ptr();
  L.out = dx.data_ptr();
  L.code = int8_t(gy5.dtype());
  L.op = op;
  L.stream = dev.stream;
  launch_adaptive_avg_pool_backward(L);
  return dx;
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
