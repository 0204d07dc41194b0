// CPU kernels for the non-constant pads (reflect, replicate, circular) of F.pad and their
// backward, on input whose last k = pad.size() / 2 (1 to 3) dims are padded and whose leading
// dims are independent planes. Arguments arrive checked by src/nn/functional/pad.cpp.
//
// Each padded dim maps every output index to one input index (pad_index_map: PyTorch's rules,
// negative pads included), so the forward is a gather along three index maps and the backward a
// scatter-add along the same maps; planes are independent and split across threads.
#include <algorithm>
#include <vector>

#include "core/dtype_dispatch.h"
#include "core/parallel.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cpu {
namespace {

enum PadMode : int64_t { kReflect = 0, kReplicate = 1, kCircular = 2 };

// Output index -> input index for one dim of size n padded by (lo, hi), PyTorch's rules:
// reflect and replicate work in the coordinates of the whole input (j = o - lo reflected once
// about 0 / n - 1, or clamped to [0, n - 1]), so a negative pad on one side still lets the other
// side read the cropped elements; circular (torch's _pad_circular) crops first and wraps around
// what is left.
std::vector<int64_t> pad_index_map(int64_t n, int64_t lo, int64_t hi, int64_t mode) {
  std::vector<int64_t> map(static_cast<size_t>(std::max<int64_t>(n + lo + hi, 0)));
  const int64_t start = std::max<int64_t>(-lo, 0), left = std::max<int64_t>(lo, 0);
  const int64_t core = n - start - std::max<int64_t>(-hi, 0);  // circular: what survives cropping
  for (size_t o = 0; o < map.size(); ++o) {
    int64_t j = int64_t(o) - lo;
    if (mode == kReflect) {
      if (j < 0) j = -j;
      else if (j >= n) j = 2 * (n - 1) - j;
    } else if (mode == kReplicate) {
      j = std::clamp<int64_t>(j, 0, n - 1);
    } else {
      const int64_t c = int64_t(o) - left;
      j = start + ((c % core) + core) % core;
    }
    map[o] = j;
  }
  return map;
}

// The padded dims padded to three (leading unit dims) plus the plane count.
struct PadGeometry {
  int64_t planes = 1;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  std::vector<int64_t> map[3];
};

PadGeometry make_geometry(IntArrayRef in_sizes, IntArrayRef pad, int64_t mode) {
  PadGeometry g;
  const int64_t k = int64_t(pad.size()) / 2, nd = int64_t(in_sizes.size());
  for (int64_t d = 0; d < nd - k; ++d) g.planes *= in_sizes[size_t(d)];
  for (int64_t d = 0; d < 3; ++d) {
    const int64_t i = d - (3 - k);  // which padded dim (0 = first of the k), < 0: unit dim
    if (i < 0) {
      g.map[d] = {0};
      continue;
    }
    const int64_t dim = nd - k + i, p = k - 1 - i;  // pad pairs run from the last dim backwards
    g.in[d] = in_sizes[size_t(dim)];
    g.map[d] = pad_index_map(g.in[d], pad[size_t(2 * p)], pad[size_t(2 * p + 1)], mode);
    g.out[d] = int64_t(g.map[d].size());
  }
  return g;
}

Shape padded_shape(IntArrayRef in_sizes, const PadGeometry& g, int64_t k) {
  Shape s(in_sizes.begin(), in_sizes.end());
  for (int64_t i = 0; i < k; ++i) s[s.size() - size_t(k) + size_t(i)] = g.out[3 - k + i];
  return s;
}

Tensor pad_nd_cpu(const Tensor& input, IntArrayRef pad, int64_t mode) {
  const int64_t k = int64_t(pad.size()) / 2;
  const PadGeometry g = make_geometry(input.sizes(), pad, mode);
  Tensor out = empty(padded_shape(input.sizes(), g, k), input.options());
  if (out.numel() == 0) return out;
  Tensor x = input.contiguous();
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2], out_plane = g.out[0] * g.out[1] * g.out[2];
  visit_dtype<kAllTypes>(input.dtype(), "pad", [&]<class T>() {
    const T* X = static_cast<const T*>(x.data_ptr());
    T* Y = static_cast<T*>(out.data_ptr());
    parallel_for(0, g.planes, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, out_plane)),
                 [&](int64_t p0, int64_t p1) {
                   for (int64_t p = p0; p < p1; ++p) {
                     const T* xp = X + p * in_plane;
                     T* yp = Y + p * out_plane;
                     for (int64_t od = 0; od < g.out[0]; ++od)
                       for (int64_t oh = 0; oh < g.out[1]; ++oh) {
                         const T* row = xp + (g.map[0][size_t(od)] * g.in[1] + g.map[1][size_t(oh)]) * g.in[2];
                         T* orow = yp + (od * g.out[1] + oh) * g.out[2];
                         for (int64_t ow = 0; ow < g.out[2]; ++ow) orow[ow] = row[g.map[2][size_t(ow)]];
                       }
                   }
                 });
  });
  return out;
}

Tensor pad_nd_backward_cpu(const Tensor& grad_out, IntArrayRef input_size, IntArrayRef pad, int64_t mode) {
  if (is_reduced_float(grad_out.dtype()))
    return pad_nd_backward_cpu(grad_out.to(kFloat32), input_size, pad, mode).to(grad_out.dtype());
  const PadGeometry g = make_geometry(input_size, pad, mode);
  Tensor dx = zeros(input_size, grad_out.options());
  if (dx.numel() == 0 || grad_out.numel() == 0) return dx;
  Tensor gy = grad_out.contiguous();
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2], out_plane = g.out[0] * g.out[1] * g.out[2];
  visit_dtype<kFloatTypes>(grad_out.dtype(), "pad_backward", [&]<class T>() {
    const T* GY = static_cast<const T*>(gy.data_ptr());
    T* DX = static_cast<T*>(dx.data_ptr());
    parallel_for(0, g.planes, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, out_plane)),
                 [&](int64_t p0, int64_t p1) {
                   for (int64_t p = p0; p < p1; ++p) {
                     T* dp = DX + p * in_plane;
                     const T* gp = GY + p * out_plane;
                     for (int64_t od = 0; od < g.out[0]; ++od)
                       for (int64_t oh = 0; oh < g.out[1]; ++oh) {
                         T* row = dp + (g.map[0][size_t(od)] * g.in[1] + g.map[1][size_t(oh)]) * g.in[2];
                         const T* grow = gp + (od * g.out[1] + oh) * g.out[2];
                         for (int64_t ow = 0; ow < g.out[2]; ++ow) row[g.map[2][size_t(ow)]] += grow[ow];
                       }
                   }
                 });
  });
  return dx;
}

EMBER_REGISTER_KERNEL(pad_nd, CPU, pad_nd_cpu);
EMBER_REGISTER_KERNEL(pad_nd_backward, CPU, pad_nd_backward_cpu);

}  // namespace
}  // namespace ember::cpu
