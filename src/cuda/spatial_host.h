#pragma once
// Host-side steps shared by the CUDA kernels of the spatial nn ops (pool_ops.cpp, pad_ops.cpp,
// fold_ops.cpp, upsample_ops.cpp): handing a launch struct of pool_launchers.h or
// spatial_launchers.h its data, device and stream and calling its launcher, and the zeroed
// accumulation buffer of the backwards that scatter with atomicAdd.
#include <cstdint>

#include "cuda/cuda_state.h"
#include "ember/ops.h"

namespace ember::cuda {

// Runs launcher(L) reading `in` (made contiguous) and writing `out`, with in's device current
// and on its current stream. L arrives with its geometry; this fills the fields the launch
// structs share: in, out, code (in's dtype), op (the name in errors) and stream.
template <class Launch>
void launch_on_device(Launch L, const Tensor& in, const Tensor& out, const char* op, void (*launcher)(const Launch&)) {
  Tensor x = in.contiguous();
  const int device = in.device().index;
  GpuGuard guard(device);
  L.in = x.data_ptr();
  L.out = out.data_ptr();
  L.code = int8_t(in.dtype());
  L.op = op;
  L.stream = current_cuda_stream(device);
  launcher(L);
}

// The input gradient of a backward whose kernel scatters grad_out with atomicAdd: zeros of
// input_size that fill(dx) adds into (not called when either tensor is empty). float16/bfloat16
// grads accumulate in float32 (atomics on the reduced types would round every partial sum) and
// are converted at the end, as the CPU's float32 pass.
template <class Fill> Tensor scatter_backward(const Tensor& grad_out, IntArrayRef input_size, const Fill& fill) {
  const bool reduced = is_reduced_float(grad_out.dtype());
  Tensor dx = zeros(input_size, reduced ? TensorOptions{.dtype = kFloat32, .device = grad_out.device()}
                                        : grad_out.options());
  if (dx.numel() != 0 && grad_out.numel() != 0) fill(dx);
  return reduced ? dx.to(grad_out.dtype()) : dx;
}

}  // namespace ember::cuda
