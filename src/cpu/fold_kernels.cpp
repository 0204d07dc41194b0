// CPU kernels for im2col (F.unfold) and col2im (F.fold) on batched input, the window sweeps of
// src/cpu/im2col.h with one group of all channels. Arguments arrive checked by
// src/nn/functional/fold.cpp (two values each: kernel, dilation, padding, stride). Samples are
// independent: the batch is split across threads.
#include <algorithm>

#include "core/dtype_dispatch.h"
#include "core/parallel.h"
#include "cpu/im2col.h"
#include "ember/ops.h"
#include "ops/fold_geometry.h"
#include "ops/op_handles.h"

namespace ember::cpu {
namespace {

template <class F> void for_samples(int64_t N, int64_t per_sample, const F& fn) {
  parallel_for(0, N, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, per_sample)), [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) fn(n);
  });
}

// (N, C, H, W) -> (N, C*kH*kW, L)
Tensor im2col_cpu(const Tensor& input, IntArrayRef k, IntArrayRef d, IntArrayRef p, IntArrayRef s) {
  if (is_reduced_float(input.dtype())) return im2col_cpu(input.to(kFloat32), k, d, p, s).to(input.dtype());
  const int64_t N = input.sizes()[0], C = input.sizes()[1];
  const WindowGeom g = fold_geometry<WindowGeom>(input.sizes()[2], input.sizes()[3], k, d, p, s);
  Tensor out = empty({N, C * g.taps(), g.out_spatial()}, input.options());
  if (out.numel() == 0) return out;
  Tensor x = input.contiguous();
  visit_dtype<kFloatTypes>(input.dtype(), "im2col", [&]<class T>() {
    const T* X = static_cast<const T*>(x.data_ptr());
    T* Y = static_cast<T*>(out.data_ptr());
    const int64_t in_n = C * g.spatial(), out_n = C * g.taps() * g.out_spatial();
    for_samples(N, out_n, [&](int64_t n) { im2col(X + n * in_n, Y + n * out_n, C, g); });
  });
  return out;
}

// (N, C*kH*kW, L) -> (N, C, oH, oW), overlapping values summed
Tensor col2im_cpu(const Tensor& input, IntArrayRef output_size, IntArrayRef k, IntArrayRef d, IntArrayRef p,
                  IntArrayRef s) {
  if (is_reduced_float(input.dtype()))
    return col2im_cpu(input.to(kFloat32), output_size, k, d, p, s).to(input.dtype());
  const WindowGeom g = fold_geometry<WindowGeom>(output_size[0], output_size[1], k, d, p, s);
  const int64_t N = input.sizes()[0], C = input.sizes()[1] / g.taps();
  Tensor out = zeros({N, C, g.H, g.W}, input.options());
  if (out.numel() == 0 || input.numel() == 0) return out;
  Tensor x = input.contiguous();
  visit_dtype<kFloatTypes>(input.dtype(), "col2im", [&]<class T>() {
    const T* X = static_cast<const T*>(x.data_ptr());
    T* Y = static_cast<T*>(out.data_ptr());
    const int64_t in_n = C * g.taps() * g.out_spatial(), out_n = C * g.spatial();
    for_samples(N, in_n, [&](int64_t n) { col2im(X + n * in_n, Y + n * out_n, C, g); });
  });
  return out;
}

EMBER_REGISTER_KERNEL(im2col, CPU, im2col_cpu);
EMBER_REGISTER_KERNEL(col2im, CPU, col2im_cpu);

}  // namespace
}  // namespace ember::cpu
