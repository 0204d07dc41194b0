// The CUDA kernels of im2col (F.unfold) and col2im (F.fold), registered with the dispatcher. As
// the CPU kernels (src/cpu/fold_kernels.cpp): arguments arrive checked by
// src/nn/functional/fold.cpp (two values each of kernel, dilation, padding, stride), the
// output-position counts follow the same formula, floating dtypes only (float16/bfloat16 summed
// in float). Launchers: fold_kernels.cu.
#include "cuda/cuda_state.h"
#include "cuda/spatial_launchers.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cuda {
namespace {

// The CPU's fold_geom: image (H, W), window arguments, output positions (OH, OW).
FoldLaunch fold_geom(int64_t H, int64_t W, IntArrayRef k, IntArrayRef d, IntArrayRef p, IntArrayRef s) {
  FoldLaunch L;
  L.H = H;
  L.W = W;
  L.kh = k[0];
  L.kw = k[1];
  L.dh = d[0];
  L.dw = d[1];
  L.ph = p[0];
  L.pw = p[1];
  L.sh = s[0];
  L.sw = s[1];
  L.OH = (H + 2 * L.ph - L.dh * (L.kh - 1) - 1) / L.sh + 1;
  L.OW = (W + 2 * L.pw - L.dw * (L.kw - 1) - 1) / L.sw + 1;
  return L;
}

// (N, C, H, W) -> (N, C*kH*kW, L)
Tensor im2col_cuda(const Tensor& input, IntArrayRef k, IntArrayRef d, IntArrayRef p, IntArrayRef s) {
  FoldLaunch L = fold_geom(input.sizes()[2], input.sizes()[3], k, d, p, s);
  L.N = input.sizes()[0];
  L.C = input.sizes()[1];
  Tensor out = empty({L.N, L.C * L.kh * L.kw, L.OH * L.OW}, input.options());
  if (out.numel() == 0) return out;
  Tensor x = input.contiguous();
  const int device = input.device().index;
  GpuGuard guard(device);
  L.in = x.data_ptr();
  L.out = out.data_ptr();
  L.code = int8_t(input.dtype());
  L.op = "im2col_cuda";
  L.stream = current_cuda_stream(device);
  launch_im2col(L);
  return out;
}

// (N, C*kH*kW, L) -> (N, C, oH, oW), overlapping values summed. The kernel writes every pixel,
// so only an empty input needs the zeros.
Tensor col2im_cuda(const Tensor& input, IntArrayRef output_size, IntArrayRef k, IntArrayRef d, IntArrayRef p,
                   IntArrayRef s) {
  FoldLaunch L = fold_geom(output_size[0], output_size[1], k, d, p, s);
  L.N = input.sizes()[0];
  L.C = input.sizes()[1] / (L.kh * L.kw);
  if (input.numel() == 0) return zeros({L.N, L.C, L.H, L.W}, input.options());
  Tensor out = empty({L.N, L.C, L.H, L.W}, input.options());
  if (out.numel() == 0) return out;
  Tensor x = input.contiguous();
  const int device = input.device().index;
  GpuGuard guard(device);
  L.in = x.data_ptr();
  L.out = out.data_ptr();
  L.code = int8_t(input.dtype());
  L.op = "col2im_cuda";
  L.stream = current_cuda_stream(device);
  launch_col2im(L);
  return out;
}

EMBER_REGISTER_KERNEL(im2col, CUDA, im2col_cuda);
EMBER_REGISTER_KERNEL(col2im, CUDA, col2im_cuda);

}  // namespace
}  // namespace ember::cuda
