// The CUDA kernels of upsample and upsample_backward (F.interpolate's nearest, nearest-exact,
// linear/bilinear/trilinear, bicubic and antialiased modes), registered with the dispatcher.
// Arguments arrive checked by src/nn/functional/upsample.cpp. Every mode is separable, so the
// taps of each spatial dim (input indices and weights) are computed here on the host with the
// CPU kernel's own code (src/ops/upsample_taps.h), uploaded, and the kernels (upsample_kernels.cu)
// only walk the tap grid. That keeps every coordinate rule (floorf rounding, the same-size shortcut, cubic
// border clamping, antialias supports) in one form, evaluated in the same precision as the CPU:
// float for float32/float16/bfloat16 data, double for float64. The backward of float16/bfloat16
// accumulates in float32 and converts, as the CPU's float32 pass.
#include <algorithm>
#include <cmath>
#include <vector>

#include "cuda/cuda_state.h"
#include "cuda/spatial_launchers.h"
#include "ember/ops.h"
#include "ops/op_handles.h"
#include "ops/upsample_taps.h"

namespace ember::cuda {
namespace {

using namespace ember::upsample;  // Mode, Taps, Grid, make_grid (ops/upsample_taps.h)

// ---------------------------------------------------------------- launch
// The taps on the device: one int64 and one weight tensor for all three dims, kept alive by the
// caller until the launch is queued (the allocator is stream-ordered, and the pinned staging
// memory is held until the stream has used it).
struct DeviceTaps {
  Tensor idx, w;
};

template <class T>
DeviceTaps upload(const Grid<T>& g, UpsampleLaunch& L, Device device) {
  std::vector<int64_t> idx;
  std::vector<T> w;
  int64_t off[3];
  for (int d = 0; d < 3; ++d) {
    off[d] = int64_t(idx.size());
    idx.insert(idx.end(), g.taps[d].idx.begin(), g.taps[d].idx.end());
    w.insert(w.end(), g.taps[d].w.begin(), g.taps[d].w.end());
    L.in[d] = g.in[d];
    L.out[d] = g.out[d];
    L.k[d] = g.taps[d].k;
  }
  // Through pinned memory, non-blocking: a pageable upload would synchronize the stream.
  auto up = [&](const Tensor& host) { return host.pin_memory().to(device, false, /*non_blocking=*/true); };
  const Device host(DeviceType::CPU);  // explicit: the default device may be this GPU
  DeviceTaps t{up(tensor(idx, {.device = host})), up(tensor(w, {.device = host}))};
  for (int d = 0; d < 3; ++d) {
    L.idx[d] = static_cast<const int64_t*>(t.idx.data_ptr()) + off[d];
    L.w[d] = static_cast<const T*>(t.w.data_ptr()) + off[d];
  }
  return t;
}

// Fills L's geometry and taps for data of `dtype` (taps in float, or double for float64).
DeviceTaps prepare(UpsampleLaunch& L, DType dtype, IntArrayRef in_sp, IntArrayRef out_sp, ArrayRef<double> scales,
                   int64_t mode, bool align_corners, Device device) {
  if (dtype == kFloat64) return upload(make_grid<double>(in_sp, out_sp, scales, mode, align_corners), L, device);
  return upload(make_grid<float>(in_sp, out_sp, scales, mode, align_corners), L, device);
}

Tensor upsample_cuda(const Tensor& input, IntArrayRef output_size, ArrayRef<double> scales, int64_t mode,
                     bool align_corners) {
  Shape out_shape{input.sizes()[0], input.sizes()[1]};
  for (int64_t s : output_size) out_shape.push_back(s);
  Tensor out = empty(out_shape, input.options());
  if (out.numel() == 0) return out;
  Tensor x = input.contiguous();
  const int device = input.device().index;
  GpuGuard guard(device);
  UpsampleLaunch L;
  L.planes = input.sizes()[0] * input.sizes()[1];
  IntArrayRef in_sp(input.sizes().data() + 2, input.sizes().size() - 2);
  DeviceTaps taps = prepare(L, input.dtype(), in_sp, output_size, scales, mode, align_corners, input.device());
  L.x = x.data_ptr();
  L.y = out.data_ptr();
  L.code = int8_t(input.dtype());
  L.op = "upsample_cuda";
  L.stream = current_cuda_stream(device);
  launch_upsample(L);
  return out;
}

Tensor upsample_backward_cuda(const Tensor& grad_out, IntArrayRef input_size, ArrayRef<double> scales, int64_t mode,
                              bool align_corners) {
  const bool reduced = is_reduced_float(grad_out.dtype());
  Tensor dx = zeros(input_size, reduced ? TensorOptions{.dtype = kFloat32, .device = grad_out.device()}
                                        : grad_out.options());
  if (dx.numel() != 0 && grad_out.numel() != 0) {
    Tensor gy = grad_out.contiguous();
    const int device = grad_out.device().index;
    GpuGuard guard(device);
    UpsampleLaunch L;
    L.planes = input_size[0] * input_size[1];
    IntArrayRef in_sp(input_size.data() + 2, input_size.size() - 2);
    IntArrayRef out_sp(grad_out.sizes().data() + 2, grad_out.sizes().size() - 2);
    DeviceTaps taps = prepare(L, grad_out.dtype(), in_sp, out_sp, scales, mode, align_corners, grad_out.device());
    L.x = gy.data_ptr();
    L.y = dx.data_ptr();
    L.code = int8_t(grad_out.dtype());
    L.op = "upsample_backward_cuda";
    L.stream = current_cuda_stream(device);
    launch_upsample_backward(L);
  }
  return reduced ? dx.to(grad_out.dtype()) : dx;
}

EMBER_REGISTER_KERNEL(upsample, CUDA, upsample_cuda);
EMBER_REGISTER_KERNEL(upsample_backward, CUDA, upsample_backward_cuda);

}  // namespace
}  // namespace ember::cuda
