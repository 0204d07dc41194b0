// The CUDA kernels of pad_nd and pad_nd_backward (F.pad's reflect, replicate and circular
// modes), registered with the dispatcher. As the CPU kernels (src/cpu/pad_kernels.cpp):
// arguments arrive checked by src/nn/functional/pad.cpp, the last pad.size() / 2 dims are padded
// (pairs from the last dim backwards) and the leading dims are planes; the forward takes every
// real dtype, the backward floating ones (float16/bfloat16 through a float32 buffer, as the CPU's
// float32 pass). Launchers: pad_kernels.cu.
#include <algorithm>

#include "cuda/cuda_state.h"
#include "cuda/spatial_launchers.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cuda {
namespace {

// The padded dims padded to three (leading unit dims) and the plane count; the output shape.
PadLaunch pad_geometry(IntArrayRef in_sizes, IntArrayRef pad, int64_t mode, Shape& out_shape) {
  PadLaunch L;
  L.mode = mode;
  L.planes = 1;
  const int64_t k = int64_t(pad.size()) / 2, nd = int64_t(in_sizes.size());
  for (int64_t d = 0; d < nd - k; ++d) L.planes *= in_sizes[size_t(d)];
  out_shape.assign(in_sizes.begin(), in_sizes.end());
  for (int64_t d = 0; d < 3; ++d) {
    const int64_t i = d - (3 - k);  // which padded dim (0 = first of the k), < 0: unit dim
    if (i < 0) continue;
    const int64_t dim = nd - k + i, p = k - 1 - i;
    L.n[d] = in_sizes[size_t(dim)];
    L.lo[d] = pad[size_t(2 * p)];
    L.hi[d] = pad[size_t(2 * p + 1)];
    out_shape[size_t(dim)] = std::max<int64_t>(L.n[d] + L.lo[d] + L.hi[d], 0);
  }
  return L;
}

Tensor pad_nd_cuda(const Tensor& input, IntArrayRef pad, int64_t mode) {
  Shape out_shape;
  PadLaunch L = pad_geometry(input.sizes(), pad, mode, out_shape);
  Tensor out = empty(out_shape, input.options());
  if (out.numel() == 0) return out;
  Tensor x = input.contiguous();
  const int device = input.device().index;
  GpuGuard guard(device);
  L.in = x.data_ptr();
  L.out = out.data_ptr();
  L.code = int8_t(input.dtype());
  L.op = "pad_cuda";
  L.stream = current_cuda_stream(device);
  launch_pad(L);
  return out;
}

Tensor pad_nd_backward_cuda(const Tensor& grad_out, IntArrayRef input_size, IntArrayRef pad, int64_t mode) {
  Shape out_shape;
  PadLaunch L = pad_geometry(input_size, pad, mode, out_shape);
  const bool reduced = is_reduced_float(grad_out.dtype());
  Tensor dx = zeros(input_size, reduced ? TensorOptions{.dtype = kFloat32, .device = grad_out.device()}
                                        : grad_out.options());
  if (dx.numel() != 0 && grad_out.numel() != 0) {
    Tensor gy = grad_out.contiguous();
    const int device = grad_out.device().index;
    GpuGuard guard(device);
    L.in = gy.data_ptr();
    L.out = dx.data_ptr();
    L.code = int8_t(grad_out.dtype());
    L.op = "pad_backward_cuda";
    L.stream = current_cuda_stream(device);
    launch_pad_backward(L);
  }
  return reduced ? dx.to(grad_out.dtype()) : dx;
}

EMBER_REGISTER_KERNEL(pad_nd, CUDA, pad_nd_cuda);
EMBER_REGISTER_KERNEL(pad_nd_backward, CUDA, pad_nd_backward_cuda);

}  // namespace
}  // namespace ember::cuda
