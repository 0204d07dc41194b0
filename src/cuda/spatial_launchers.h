#pragma once
// Plain launch data for the CUDA kernels of the other spatial nn ops: the non-constant pads
// (pad_kernels.cu), interpolation (upsample_kernels.cu) and im2col/col2im (fold_kernels.cu). The
// .cu files include this and CUDA headers only; the host sides (pad_ops.cpp, upsample_ops.cpp,
// fold_ops.cpp) check arguments, allocate with ember ops, make inputs contiguous and fill these.
// Each works on `planes` independent contiguous volumes whose spatial dims are padded to three
// (leading unit dims).
#include <cuda_runtime_api.h>

#include <cstdint>

namespace ember::cuda {

// ---------------------------------------------------------------- pad (reflect, replicate, circular)
// Per padded dim: input size n and the pads (lo, hi), possibly negative; output size n + lo + hi.
// Forward: every output element gathers the one input element its index maps to (any real
// storage type: moved by element size). Backward: grad_out scattered (atomicAdd) into grad_in,
// a zeroed float32 (float32/float16/bfloat16 grads) or float64 buffer.
struct PadLaunch {
  int64_t planes = 0;
  int64_t n[3] = {1, 1, 1}, lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
  int64_t mode = 0;  // 0 reflect, 1 replicate, 2 circular
  const void* in = nullptr;  // backward: grad_out
  void* out = nullptr;       // backward: the accumulation buffer
  int8_t code = 0;           // DTypeCode of in (and of out in the forward)
  const char* op = "";
  cudaStream_t stream = nullptr;
};
void launch_pad(const PadLaunch&);
void launch_pad_backward(const PadLaunch&);

// ---------------------------------------------------------------- upsample
// Separable taps computed by the host (the CPU's formulas): along dim d, output o reads input
// idx[d][o * k[d] + j] with weight w[d][o * k[d] + j], j < k[d]. Weights are float (float32,
// float16, bfloat16 data) or double (float64). Forward: out = the weighted sum over the tap
// grid, (d, h, w) nested as the CPU; backward: grad_out scattered with the same weights
// (atomicAdd) into a zeroed float32 / float64 buffer.
struct UpsampleLaunch {
  int64_t planes = 0;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t k[3] = {1, 1, 1};
  const int64_t* idx[3] = {};  // device
  const void* w[3] = {};       // device
  const void* x = nullptr;     // backward: grad_out
  void* y = nullptr;           // backward: the accumulation buffer
  int8_t code = 0;             // DTypeCode of x (and of y in the forward)
  const char* op = "";
  cudaStream_t stream = nullptr;
};
void launch_upsample(const UpsampleLaunch&);
void launch_upsample_backward(const UpsampleLaunch&);

// ---------------------------------------------------------------- im2col / col2im
// Batched (N, C, H, W) images and (N, C*KH*KW, OH*OW) columns, rows in (c, kh, kw) order.
// im2col gathers each column entry (0 in the padding); col2im gathers, for every image pixel,
// the column entries that came from it in the CPU's (kh, kw) order (no atomics).
struct FoldLaunch {
  int64_t N = 0, C = 0, H = 0, W = 0, OH = 0, OW = 0;
  int64_t KH = 1, KW = 1, dh = 1, dw = 1, ph = 0, pw = 0, sh = 1, sw = 1;  // named as the CPU's WindowGeom
  const void* in = nullptr;
  void* out = nullptr;
  int8_t code = 0;
  const char* op = "";
  cudaStream_t stream = nullptr;
};
void launch_im2col(const FoldLaunch&);
void launch_col2im(const FoldLaunch&);

}  // namespace ember::cuda
