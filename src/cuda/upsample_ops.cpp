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

#include "cuda/spatial_host.h"
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

// Runs `launcher` from x (the input, or grad_out; made contiguous) into y, both (N, C, spatial...):
// the taps map the spatial dims of in_size (the input's) to those of out_size (the output's).
// The taps are uploaded with x's device current, as the launch.
void run(const Tensor& x, const Tensor& y, IntArrayRef in_size, IntArrayRef out_size, ArrayRef<double> scales,
         int64_t mode, bool align_corners, const char* op, void (*launcher)(const UpsampleLaunch&)) {
  Tensor xc = x.contiguous();
  const int device = x.device().index;
  GpuGuard guard(device);
  UpsampleLaunch L;
  L.planes = in_size[0] * in_size[1];
  IntArrayRef in_sp(in_size.data() + 2, in_size.size() - 2);
  IntArrayRef out_sp(out_size.data() + 2, out_size.size() - 2);
  DeviceTaps taps = prepare(L, x.dtype(), in_sp, out_sp, scales, mode, align_corners, x.device());
  L.x = xc.data_ptr();
  L.y = y.data_ptr();
  L.code = int8_t(x.dtype());
  L.op = op;
  L.stream = current_cuda_stream(device);
  launcher(L);
}

Tensor upsample_cuda(const Tensor& input, IntArrayRef output_size, ArrayRef<double> scales, int64_t mode,
                     bool align_corners) {
  Shape out_shape{input.sizes()[0], input.sizes()[1]};
  for (int64_t s : output_size) out_shape.push_back(s);
  Tensor out = empty(out_shape, input.options());
  if (out.numel() != 0)
    run(input, out, input.sizes(), out_shape, scales, mode, align_corners, "upsample_cuda", launch_upsample);
  return out;
}

Tensor upsample_backward_cuda(const Tensor& grad_out, IntArrayRef input_size, ArrayRef<double> scales, int64_t mode,
                              bool align_corners) {
  return scatter_backward(grad_out, input_size, [&](const Tensor& dx) {
    run(grad_out, dx, input_size, grad_out.sizes(), scales, mode, align_corners, "upsample_backward_cuda",
        launch_upsample_backward);
  });
}

EMBER_REGISTER_KERNEL(upsample, CUDA, upsample_cuda);
EMBER_REGISTER_KERNEL(upsample_backward, CUDA, upsample_backward_cuda);

}  // namespace
}  // namespace ember::cuda
