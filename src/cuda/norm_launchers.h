#pragma once
// Plain launch data for the CUDA normalisation kernels (norm_kernels.cu) and the launchers they
// export; norm_ops.cpp checks, converts and allocates with ember ops and fills these. Every
// tensor here is contiguous. `code` is the DTypeCode of x / y / dx (the storage type);
// "C" below is the compute type: float for float32/float16/bfloat16, double for float64. The
// statistics and the parameter vectors (weight, bias, scale, shift) are always in C.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace ember::cuda {

// Layer / RMS norm over rows: x is [m, n]. Writes y (x's dtype), mean (layer norm only) and
// rstd (m entries each, in C). weight and bias are n entries in C, or null.
struct RowNormLaunch {
  const void* x = nullptr;
  void* y = nullptr;
  void* mean = nullptr;  // null: RMS norm (no centring)
  void* rstd = nullptr;
  const void* weight = nullptr;
  const void* bias = nullptr;
  int64_t m = 0, n = 0;
  double eps = 0;
  int8_t code = 0;
  cudaStream_t stream = nullptr;
};
void launch_row_norm(const RowNormLaunch&);

// Layer norm's backward. dx (may be null) per row from g, x, mean, rstd and weight (null: 1);
// dweight / dbias (null when not asked) are column sums over the rows: the kernel leaves
// `chunks` partial rows of n in dw_partial / db_partial (C), which the host sums over dim 0.
struct RowNormBackwardLaunch {
  const void* g = nullptr;
  const void* x = nullptr;
  const void* mean = nullptr;
  const void* rstd = nullptr;
  const void* weight = nullptr;
  void* dx = nullptr;
  void* dw_partial = nullptr;
  void* db_partial = nullptr;
  int64_t m = 0, n = 0;
  int64_t chunks = 1;  // row chunks of the column sums (the partials' leading size)
  int8_t code = 0;
  cudaStream_t stream = nullptr;
};
void launch_layer_norm_backward(const RowNormBackwardLaunch&);
// How many row chunks launch_layer_norm_backward wants for its column sums.
int64_t layer_norm_backward_chunks(int64_t m, int64_t n, int sms);

// Batch norm over x viewed as [planes, c, s] (planes = N; s = product of the dims after 1).
// The statistics pass leaves Welford partials per (split, channel) in `partial`
// (splits * c * 3 values of C: count, mean, M2), the finishing pass combines them into mean and
// invstd (c entries of C) and the affine coefficients scale/shift (y = x * scale + shift).
struct ChannelLaunch {
  const void* x = nullptr;
  const void* g = nullptr;  // backward: grad_out
  void* y = nullptr;        // forward: y; backward: dx
  int64_t planes = 0, c = 0, s = 0;
  int64_t splits = 1;
  void* partial = nullptr;
  void* mean = nullptr;    // forward: written; backward: read (save_mean)
  void* invstd = nullptr;  // forward: written; backward: read (save_invstd)
  const void* weight = nullptr;
  const void* bias = nullptr;
  void* coef = nullptr;  // 3 * c of C: the pass's per-channel coefficients
  void* dweight = nullptr;  // backward: c entries of C, or null
  void* dbias = nullptr;
  double eps = 0;
  int8_t code = 0;
  cudaStream_t stream = nullptr;
};
// splits * c blocks: enough to fill `sms` multiprocessors, each with a fair share of planes * s.
int64_t batch_norm_splits(int64_t planes, int64_t c, int64_t s, int sms);
void launch_batch_norm(const ChannelLaunch&);
void launch_batch_norm_backward(const ChannelLaunch&);
// y = x * scale[c] + shift[c] (scale in weight, shift in bias; C entries).
void launch_channel_affine(const ChannelLaunch&);

}  // namespace ember::cuda
