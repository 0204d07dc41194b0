// The CUDA kernels of pad_nd and pad_nd_backward (F.pad's reflect, replicate and circular
// modes), registered with the dispatcher. As the CPU kernels (src/cpu/pad_kernels.cpp):
// arguments arrive checked by src/nn/functional/pad.cpp, the last pad.size() / 2 dims are padded
// (pairs from the last dim backwards) and the leading dims are planes; the forward takes every
// real dtype, the backward floating ones (float16/bfloat16 through a float32 buffer, as the CPU's
// float32 pass). Launchers: pad_kernels.cu.
#include <algorithm>

#include "cuda/spatial_host.h"
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
  if (out.numel() != 0) launch_on_device(L, input, out, "pad_cuda", launch_pad);
  return out;
}

Tensor pad_nd_backward_cuda(const Tensor& grad_out, IntArrayRef input_size, IntArrayRef pad, int64_t mode) {
  Shape out_shape;
  PadLaunch L = pad_geometry(input_size, pad, mode, out_shape);
  return scatter_backward(grad_out, input_size, [&](const Tensor& dx) {
    launch_on_device(L, grad_out, dx, "pad_backward_cuda", launch_pad_backward);
  });
}

EMBER_REGISTER_KERNEL(pad_nd, CUDA, pad_nd_cuda);
EMBER_REGISTER_KERNEL(pad_nd_backward, CUDA, pad_nd_backward_cuda);

}  // namespace
}  // namespace ember::cuda
