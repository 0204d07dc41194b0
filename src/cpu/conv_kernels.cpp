// CPU kernels for 2-d and 3-d convolution: conv{2,3}d_forward, conv{2,3}d_backward_input,
// conv{2,3}d_backward_weight (one kernel each; a 2-d convolution is a 3-d one of unit depth).
// Arguments arrive checked (and padding made symmetric) by src/nn/functional/conv.cpp; input
// is batched (N, C, [D,] H, W) and weight (O, C / groups, [KD,] KH, KW).
//
// float32 with at least 8 input channels, and bfloat16, go to oneDNN's convolution first
// (src/cpu/conv_dnnl.h); everything else, and everything without oneDNN, runs here (float16 and
// bfloat16 converted to float32 and back).
//
// Method: im2col + GEMM per sample and group. For sample n and group g the columns matrix
// col (Cg*KH*KW x OH*OW) holds, row by row, the input pixel each kernel tap sees at each output
// position (0 in the padding); then
//   forward:        Y[n, g]  = W[g] (Og x Cg*KH*KW) @ col (+ bias, pre-filled, beta = 1)
//   grad of input:  col      = W[g]^T @ dY[n, g],  then col2im adds the columns back into dX[n, g]
//   grad of weight: dW[g]   += dY[n, g] @ col^T
// A 1x1 kernel with stride 1 and no padding needs no columns: the input plane is col itself.
// Threads: the batch is split across threads, each with its own columns buffer and a
// single-threaded BLAS call per GEMM (OpenBLAS's OpenMP build runs single-threaded inside a
// parallel region); a batch of one runs inline and lets BLAS thread the GEMM. The weight
// gradient is accumulated per thread and summed at the end.

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/dtype_dispatch.h"
#include "cpu/conv_dnnl.h"
#include "cpu/gemm.h"
#include "cpu/im2col.h"
#include "core/parallel.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cpu {
namespace {

// A convolution's geometry: the window sweep of one group (im2col.h) plus batch, channels and
// groups. 2-d convolutions are 3-d ones with unit depth.
struct ConvGeom : WindowGeom {
  int64_t N = 0, C = 0, O = 0, G = 1;
  int64_t Cg() const { return C / G; }
  int64_t Og() const { return O / G; }
  int64_t Kg() const { return Cg() * taps(); }
  int64_t OHW() const { return out_spatial(); }
  bool pointwise() const {
    return taps() == 1 && sd == 1 && sh == 1 && sw == 1 && pd == 0 && ph == 0 && pw == 0;
  }
  // output spatial sizes from the grad_output of a backward op (which may exceed the formula's,
  // as a transposed convolution's output_padding makes them)
  void outputs_from(const Tensor& grad_out) {
    const int64_t r = grad_out.dim();
    OW = grad_out.sizes()[r - 1];
    OH = grad_out.sizes()[r - 2];
    OD = r == 5 ? grad_out.sizes()[2] : 1;
  }
};

// in: (N, C, [D,] H, W), wt: (O, C / G, [KD,] KH, KW); stride/padding/dilation one entry per spatial dim.
ConvGeom geom_of(IntArrayRef in, IntArrayRef wt, IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                 int64_t groups) {
  ConvGeom g;
  const size_t k = in.size() - 2, o = 3 - k;  // spatial dims given, offset into (D, H, W)
  int64_t* sizes[3] = {&g.D, &g.H, &g.W};
  int64_t* ks[3] = {&g.KD, &g.KH, &g.KW};
  int64_t* outs[3] = {&g.OD, &g.OH, &g.OW};
  int64_t* ss[3] = {&g.sd, &g.sh, &g.sw};
  int64_t* ps[3] = {&g.pd, &g.ph, &g.pw};
  int64_t* ds[3] = {&g.dd, &g.dh, &g.dw};
  g.N = in[0];
  g.C = in[1];
  g.O = wt[0];
  g.G = groups;
  for (size_t i = 0; i < k; ++i) {
    *sizes[o + i] = in[2 + i];
    *ks[o + i] = wt[2 + i];
    *ss[o + i] = stride[i];
    *ps[o + i] = padding[i];
    *ds[o + i] = dilation[i];
    *outs[o + i] = (in[2 + i] + 2 * padding[i] - dilation[i] * (wt[2 + i] - 1) - 1) / stride[i] + 1;
  }
  return g;
}

Shape output_shape(const ConvGeom& g, size_t rank) {
  return rank == 5 ? Shape{g.N, g.O, g.OD, g.OH, g.OW} : Shape{g.N, g.O, g.OH, g.OW};
}

// Runs fn(tid, n0, n1) over the batch split in contiguous chunks, one per thread.
template <class F> int split_batch(int64_t N, int64_t work_per_sample, const F& fn) {
  int nt = ember::detail::max_parallel_threads();
  // tiny problems: a thread hand-off costs more than the work
  if (work_per_sample * N < 32768) nt = 1;
  nt = int(std::min<int64_t>(nt, N));
  if (nt <= 1) {
    fn(0, int64_t(0), N);
    return 1;
  }
  const int64_t per = (N + nt - 1) / nt;
  parallel_chunks(nt, [&](int64_t tid, int64_t) {
    int64_t b = tid * per, e = std::min(N, b + per);
    if (b < e) fn(int(tid), b, e);
  });
  return nt;
}

bool reduced(const Tensor& t) { return is_reduced_float(t.dtype()); }

Tensor conv_forward_cpu(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                          IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  if (Tensor r = dnnl_conv::forward(input, weight, bias, stride, padding, dilation, groups); r.defined()) return r;
  if (reduced(input)) {
    std::optional<Tensor> b32;
    if (bias && bias->defined()) b32 = bias->to(kFloat32);
    return conv_forward_cpu(input.to(kFloat32), weight.to(kFloat32), b32, stride, padding, dilation, groups)
        .to(input.dtype());
  }
  const ConvGeom g = geom_of(input.sizes(), weight.sizes(), stride, padding, dilation, groups);
  Tensor out = empty(output_shape(g, input.dim()), input.options());
  if (out.numel() == 0) return out;
  Tensor x = input.contiguous(), w = weight.contiguous();
  Tensor b = bias && bias->defined() ? bias->contiguous() : Tensor();
  visit_dtype<kFloatTypes>(input.dtype(), "conv2d", [&]<class T>() {
    const T* X = static_cast<const T*>(x.data_ptr());
    const T* Wp = static_cast<const T*>(w.data_ptr());
    const T* B = b.defined() ? static_cast<const T*>(b.data_ptr()) : nullptr;
    T* Y = static_cast<T*>(out.data_ptr());
    const int64_t OHW = g.OHW(), Kg = g.Kg(), Og = g.Og(), Cg = g.Cg();
    split_batch(g.N, g.O * OHW * Kg, [&](int, int64_t n0, int64_t n1) {
      std::vector<T> col(g.pointwise() || Kg == 0 ? 0 : size_t(Kg * OHW));
      for (int64_t n = n0; n < n1; ++n) {
        T* Yn = Y + n * g.O * OHW;
        if (B)
          for (int64_t o = 0; o < g.O; ++o) std::fill(Yn + o * OHW, Yn + (o + 1) * OHW, B[o]);
        else if (Kg == 0)
          std::fill(Yn, Yn + g.O * OHW, T(0));
        if (Kg == 0) continue;
        for (int64_t gi = 0; gi < g.G; ++gi) {
          const T* xg = X + (n * g.C + gi * Cg) * g.spatial();
          const T* colp = xg;
          if (!g.pointwise()) {
            im2col(xg, col.data(), Cg, g);
            colp = col.data();
          }
          gemm(false, false, Og, OHW, Kg, T(1), Wp + gi * Og * Kg, Kg, colp, OHW, B ? T(1) : T(0),
               Yn + gi * Og * OHW, OHW);
        }
      }
    });
  });
  return out;
}

Tensor conv_backward_input_cpu(const Tensor& grad_out, const Tensor& weight, IntArrayRef input_size,
                                 IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  if (Tensor r = dnnl_conv::backward_input(grad_out, weight, input_size, stride, padding, dilation, groups);
      r.defined())
    return r;
  if (reduced(grad_out))
    return conv_backward_input_cpu(grad_out.to(kFloat32), weight.to(kFloat32), input_size, stride, padding,
                                     dilation, groups)
        .to(grad_out.dtype());
  ConvGeom g = geom_of(input_size, weight.sizes(), stride, padding, dilation, groups);
  g.outputs_from(grad_out);
  Tensor dx = zeros(input_size, grad_out.options());
  if (dx.numel() == 0 || grad_out.numel() == 0) return dx;
  Tensor gy = grad_out.contiguous(), w = weight.contiguous();
  visit_dtype<kFloatTypes>(grad_out.dtype(), "conv2d_backward_input", [&]<class T>() {
    const T* GY = static_cast<const T*>(gy.data_ptr());
    const T* Wp = static_cast<const T*>(w.data_ptr());
    T* DX = static_cast<T*>(dx.data_ptr());
    const int64_t OHW = g.OHW(), Kg = g.Kg(), Og = g.Og(), Cg = g.Cg();
    split_batch(g.N, g.O * OHW * Kg, [&](int, int64_t n0, int64_t n1) {
      std::vector<T> col(g.pointwise() ? 0 : size_t(Kg * OHW));
      for (int64_t n = n0; n < n1; ++n) {
        for (int64_t gi = 0; gi < g.G; ++gi) {
          T* dxg = DX + (n * g.C + gi * Cg) * g.spatial();
          const T* gyg = GY + (n * g.O + gi * Og) * OHW;
          const T* wg = Wp + gi * Og * Kg;
          if (g.pointwise()) {
            gemm(true, false, Kg, OHW, Og, T(1), wg, Kg, gyg, OHW, T(0), dxg, OHW);
          } else {
            gemm(true, false, Kg, OHW, Og, T(1), wg, Kg, gyg, OHW, T(0), col.data(), OHW);
            col2im(col.data(), dxg, Cg, g);
          }
        }
      }
    });
  });
  return dx;
}

Tensor conv_backward_weight_cpu(const Tensor& grad_out, const Tensor& input, IntArrayRef weight_size,
                                  IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  if (Tensor r = dnnl_conv::backward_weight(grad_out, input, weight_size, stride, padding, dilation, groups);
      r.defined())
    return r;
  if (reduced(grad_out))
    return conv_backward_weight_cpu(grad_out.to(kFloat32), input.to(kFloat32), weight_size, stride, padding,
                                      dilation, groups)
        .to(grad_out.dtype());
  ConvGeom g = geom_of(input.sizes(), weight_size, stride, padding, dilation, groups);
  g.outputs_from(grad_out);
  Tensor dw = zeros(weight_size, grad_out.options());
  if (dw.numel() == 0 || grad_out.numel() == 0) return dw;
  Tensor gy = grad_out.contiguous(), x = input.contiguous();
  visit_dtype<kFloatTypes>(grad_out.dtype(), "conv2d_backward_weight", [&]<class T>() {
    const T* GY = static_cast<const T*>(gy.data_ptr());
    const T* X = static_cast<const T*>(x.data_ptr());
    T* DW = static_cast<T*>(dw.data_ptr());
    const int64_t OHW = g.OHW(), Kg = g.Kg(), Og = g.Og(), Cg = g.Cg(), wnum = dw.numel();
    int max_t = std::max(1, ember::detail::max_parallel_threads());
    std::vector<std::vector<T>> partial(static_cast<size_t>(max_t));
    int used = split_batch(g.N, g.O * OHW * Kg, [&](int tid, int64_t n0, int64_t n1) {
      T* acc = DW;
      if (tid > 0) {
        partial[tid].assign(size_t(wnum), T(0));
        acc = partial[tid].data();
      }
      std::vector<T> col(g.pointwise() ? 0 : size_t(Kg * OHW));
      for (int64_t n = n0; n < n1; ++n) {
        for (int64_t gi = 0; gi < g.G; ++gi) {
          const T* xg = X + (n * g.C + gi * Cg) * g.spatial();
          const T* colp = xg;
          if (!g.pointwise()) {
            im2col(xg, col.data(), Cg, g);
            colp = col.data();
          }
          gemm(false, true, Og, Kg, OHW, T(1), GY + (n * g.O + gi * Og) * OHW, OHW, colp, OHW, T(1),
               acc + gi * Og * Kg, Kg);
        }
      }
    });
    for (int t = 1; t < used; ++t) {
      if (partial[t].empty()) continue;
      const T* p = partial[t].data();
      for (int64_t i = 0; i < wnum; ++i) DW[i] += p[i];
    }
  });
  return dw;
}

EMBER_REGISTER_KERNEL(conv2d_forward, CPU, conv_forward_cpu);
EMBER_REGISTER_KERNEL(conv2d_backward_input, CPU, conv_backward_input_cpu);
EMBER_REGISTER_KERNEL(conv2d_backward_weight, CPU, conv_backward_weight_cpu);
// The same kernels, over (N, C, D, H, W).
EMBER_REGISTER_KERNEL(conv3d_forward, CPU, conv_forward_cpu);
EMBER_REGISTER_KERNEL(conv3d_backward_input, CPU, conv_backward_input_cpu);
EMBER_REGISTER_KERNEL(conv3d_backward_weight, CPU, conv_backward_weight_cpu);

}  // namespace
}  // namespace ember::cpu
