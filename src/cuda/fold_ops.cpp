// The CUDA kernels of im2col (F.unfold) and col2im (F.fold), registered with the dispatcher. As
// the CPU kernels (src/cpu/fold_kernels.cpp): arguments arrive checked by
// src/nn/functional/fold.cpp (two values each of kernel, dilation, padding, stride), the
// geometry is the CPU's (src/ops/fold_geometry.h), floating dtypes only (float16/bfloat16 summed
// in float). Launchers: fold_kernels.cu.
#include "cuda/spatial_host.h"
#include "cuda/spatial_launchers.h"
#include "ember/ops.h"
#include "ops/fold_geometry.h"
#include "ops/op_handles.h"

namespace ember::cuda {
namespace {

// (N, C, H, W) -> (N, C*kH*kW, L)
Tensor im2col_cuda(const Tensor& input, IntArrayRef k, IntArrayRef d, IntArrayRef p, IntArrayRef s) {
  FoldLaunch L = fold_geometry<FoldLaunch>(input.sizes()[2], input.sizes()[3], k, d, p, s);
  L.N = input.sizes()[0];
  L.C = input.sizes()[1];
  Tensor out = empty({L.N, L.C * L.KH * L.KW, L.OH * L.OW}, input.options());
  if (out.numel() != 0) launch_on_device(L, input, out, "im2col_cuda", launch_im2col);
  return out;
}

// (N, C*kH*kW, L) -> (N, C, oH, oW), overlapping values summed. The kernel writes every pixel,
// so only an empty input needs the zeros.
Tensor col2im_cuda(const Tensor& input, IntArrayRef output_size, IntArrayRef k, IntArrayRef d, IntArrayRef p,
                   IntArrayRef s) {
  FoldLaunch L = fold_geometry<FoldLaunch>(output_size[0], output_size[1], k, d, p, s);
  L.N = input.sizes()[0];
  L.C = input.sizes()[1] / (L.KH * L.KW);
  if (input.numel() == 0) return zeros({L.N, L.C, L.H, L.W}, input.options());
  Tensor out = empty({L.N, L.C, L.H, L.W}, input.options());
  if (out.numel() != 0) launch_on_device(L, input, out, "col2im_cuda", launch_col2im);
  return out;
}

EMBER_REGISTER_KERNEL(im2col, CUDA, im2col_cuda);
EMBER_REGISTER_KERNEL(col2im, CUDA, col2im_cuda);

}  // namespace
}  // namespace ember::cuda
