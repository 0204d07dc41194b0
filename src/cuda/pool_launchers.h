#pragma once
// Plain launch data for the CUDA pooling kernels (pool_kernels.cu includes this and CUDA headers
// only) and the launchers it exports. The host side (pool_ops.cpp) checks arguments, allocates
// outputs with ember ops, makes inputs contiguous and fills these structs; the launchers pick the
// kernel for the dtype and 32- or 64-bit index arithmetic.
//
// Every op works on `planes` = N * C independent volumes of D x H x W (2-d ops pass D = 1 with
// unit depth kernel/stride/dilation and no depth padding, so their flat indices in the volume are
// the flat indices in the H x W plane).
#include <cuda_runtime_api.h>

#include <cstdint>

namespace ember::cuda {

// The geometry of one pooling: input (D, H, W), output (OD, OH, OW), and for windowed pooling
// the kernel, stride, padding and dilation per dim (depth, height, width).
struct PoolGeometry {
  int64_t planes = 0;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, p[3] = {0, 0, 0}, d[3] = {1, 1, 1};
};

// Max pooling (windowed or adaptive): out and indices (int64, flat in the volume) per output.
struct MaxPoolLaunch {
  PoolGeometry g;
  const void* in = nullptr;
  void* out = nullptr;
  int64_t* indices = nullptr;
  int8_t code = 0;  // DTypeCode of in and out
  const char* op = "";
  cudaStream_t stream = nullptr;
};
void launch_max_pool(const MaxPoolLaunch&);
void launch_adaptive_max_pool(const MaxPoolLaunch&);

// Max pooling's backward: grad_in[plane][indices[o]] += grad_out[o], into an accumulation buffer
// of float32 (float32/float16/bfloat16 grad_out) or float64 (float64), zeroed by the host.
struct MaxPoolBackwardLaunch {
  int64_t planes = 0, in_plane = 0, out_plane = 0;
  const void* grad_out = nullptr;
  const int64_t* indices = nullptr;
  void* grad_in = nullptr;
  int8_t code = 0;  // DTypeCode of grad_out
  const char* op = "";
  cudaStream_t stream = nullptr;
};
void launch_max_pool_backward(const MaxPoolBackwardLaunch&);

// Average pooling (forward: in -> out; backward: grad_out -> grad_in, every element written)
// with count_include_pad and divisor (0: none).
struct AvgPoolLaunch {
  PoolGeometry g;
  const void* in = nullptr;  // backward: grad_out
  void* out = nullptr;       // backward: grad_in
  int8_t code = 0;
  bool count_include_pad = true;
  int64_t divisor = 0;
  const char* op = "";
  cudaStream_t stream = nullptr;
};
void launch_avg_pool(const AvgPoolLaunch&);
void launch_avg_pool_backward(const AvgPoolLaunch&);

// Adaptive average pooling (only g.planes, g.in, g.out are used); backward as above.
void launch_adaptive_avg_pool(const AvgPoolLaunch&);
void launch_adaptive_avg_pool_backward(const AvgPoolLaunch&);

}  // namespace ember::cuda
