// CPU kernels for 2-d convolution: conv2d_forward, conv2d_backward_input, conv2d_backward_weight.
// Arguments arrive checked (and padding made symmetric) by src/nn/functional/conv.cpp; input
// is batched (N, C, H, W) and weight (O, C / groups, KH, KW).
//
// float32 with at least 8 input channels goes to oneDNN's convolution first
// (src/cpu/conv_dnnl.h); everything else, and everything without oneDNN, runs here.
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
#include "core/parallel.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cpu {
namespace {

struct ConvGeom {
  int64_t N, C, H, W, O, KH, KW, OH, OW, sh, sw, ph, pw, dh, dw, G;
  int64_t Cg() const { return C / G; }
  int64_t Og() const { return O / G; }
  int64_t Kg() const { return Cg() * KH * KW; }
  int64_t OHW() const { return OH * OW; }
  bool pointwise() const { return KH == 1 && KW == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0; }
};

ConvGeom geom_of(IntArrayRef in, IntArrayRef wt, IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                 int64_t groups) {
  ConvGeom g{};
  g.N = in[0]; g.C = in[1]; g.H = in[2]; g.W = in[3];
  g.O = wt[0]; g.KH = wt[2]; g.KW = wt[3];
  g.sh = stride[0]; g.sw = stride[1]; g.ph = padding[0]; g.pw = padding[1];
  g.dh = dilation[0]; g.dw = dilation[1]; g.G = groups;
  g.OH = (g.H + 2 * g.ph - g.dh * (g.KH - 1) - 1) / g.sh + 1;
  g.OW = (g.W + 2 * g.pw - g.dw * (g.KW - 1) - 1) / g.sw + 1;
  return g;
}

// x: Cg planes of H x W; col: (Cg*KH*KW) x (OH*OW).
template <class T> void im2col(const T* x, T* col, const ConvGeom& g) {
  const int64_t OHW = g.OHW();
  for (int64_t c = 0; c < g.Cg(); ++c) {
    const T* xc = x + c * g.H * g.W;
    for (int64_t kh = 0; kh < g.KH; ++kh) {
      for (int64_t kw = 0; kw < g.KW; ++kw) {
        T* row = col + ((c * g.KH + kh) * g.KW + kw) * OHW;
        const int64_t iw0 = kw * g.dw - g.pw;
        // output columns whose input column is inside [0, W)
        int64_t lo = 0, hi = g.OW;
        if (g.sw == 1) {
          lo = std::clamp<int64_t>(-iw0, 0, g.OW);
          hi = std::clamp<int64_t>(g.W - iw0, lo, g.OW);
        }
        for (int64_t oh = 0; oh < g.OH; ++oh) {
          const int64_t ih = oh * g.sh - g.ph + kh * g.dh;
          T* r = row + oh * g.OW;
          if (ih < 0 || ih >= g.H) {
            std::fill(r, r + g.OW, T(0));
            continue;
          }
          const T* xr = xc + ih * g.W;
          if (g.sw == 1) {
            std::fill(r, r + lo, T(0));
            if (hi > lo) std::memcpy(r + lo, xr + iw0 + lo, size_t(hi - lo) * sizeof(T));
            std::fill(r + hi, r + g.OW, T(0));
          } else {
            for (int64_t ow = 0; ow < g.OW; ++ow) {
              const int64_t iw = ow * g.sw + iw0;
              r[ow] = (iw >= 0 && iw < g.W) ? xr[iw] : T(0);
            }
          }
        }
      }
    }
  }
}

// The adjoint of im2col: adds each column entry into the input pixel it came from (x pre-zeroed).
template <class T> void col2im(const T* col, T* x, const ConvGeom& g) {
  const int64_t OHW = g.OHW();
  for (int64_t c = 0; c < g.Cg(); ++c) {
    T* xc = x + c * g.H * g.W;
    for (int64_t kh = 0; kh < g.KH; ++kh) {
      for (int64_t kw = 0; kw < g.KW; ++kw) {
        const T* row = col + ((c * g.KH + kh) * g.KW + kw) * OHW;
        const int64_t iw0 = kw * g.dw - g.pw;
        int64_t lo = 0, hi = g.OW;
        if (g.sw == 1) {
          lo = std::clamp<int64_t>(-iw0, 0, g.OW);
          hi = std::clamp<int64_t>(g.W - iw0, lo, g.OW);
        }
        for (int64_t oh = 0; oh < g.OH; ++oh) {
          const int64_t ih = oh * g.sh - g.ph + kh * g.dh;
          if (ih < 0 || ih >= g.H) continue;
          const T* r = row + oh * g.OW;
          T* xr = xc + ih * g.W;
          if (g.sw == 1) {
            T* dst = xr + iw0;
            for (int64_t ow = lo; ow < hi; ++ow) dst[ow] += r[ow];
          } else {
            for (int64_t ow = 0; ow < g.OW; ++ow) {
              const int64_t iw = ow * g.sw + iw0;
              if (iw >= 0 && iw < g.W) xr[iw] += r[ow];
            }
          }
        }
      }
    }
  }
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

Tensor conv2d_forward_cpu(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                          IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  if (reduced(input)) {
    std::optional<Tensor> b32;
    if (bias && bias->defined()) b32 = bias->to(kFloat32);
    return conv2d_forward_cpu(input.to(kFloat32), weight.to(kFloat32), b32, stride, padding, dilation, groups)
        .to(input.dtype());
  }
  if (Tensor r = dnnl_conv::forward(input, weight, bias, stride, padding, dilation, groups); r.defined()) return r;
  const ConvGeom g = geom_of(input.sizes(), weight.sizes(), stride, padding, dilation, groups);
  Tensor out = empty({g.N, g.O, g.OH, g.OW}, input.options());
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
          const T* xg = X + (n * g.C + gi * Cg) * g.H * g.W;
          const T* colp = xg;
          if (!g.pointwise()) {
            im2col(xg, col.data(), g);
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

Tensor conv2d_backward_input_cpu(const Tensor& grad_out, const Tensor& weight, IntArrayRef input_size,
                                 IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  if (reduced(grad_out))
    return conv2d_backward_input_cpu(grad_out.to(kFloat32), weight.to(kFloat32), input_size, stride, padding,
                                     dilation, groups)
        .to(grad_out.dtype());
  if (Tensor r = dnnl_conv::backward_input(grad_out, weight, input_size, stride, padding, dilation, groups);
      r.defined())
    return r;
  ConvGeom g = geom_of(input_size, weight.sizes(), stride, padding, dilation, groups);
  g.OH = grad_out.sizes()[2];
  g.OW = grad_out.sizes()[3];
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
          T* dxg = DX + (n * g.C + gi * Cg) * g.H * g.W;
          const T* gyg = GY + (n * g.O + gi * Og) * OHW;
          const T* wg = Wp + gi * Og * Kg;
          if (g.pointwise()) {
            gemm(true, false, Kg, OHW, Og, T(1), wg, Kg, gyg, OHW, T(0), dxg, OHW);
          } else {
            gemm(true, false, Kg, OHW, Og, T(1), wg, Kg, gyg, OHW, T(0), col.data(), OHW);
            col2im(col.data(), dxg, g);
          }
        }
      }
    });
  });
  return dx;
}

Tensor conv2d_backward_weight_cpu(const Tensor& grad_out, const Tensor& input, IntArrayRef weight_size,
                                  IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  if (reduced(grad_out))
    return conv2d_backward_weight_cpu(grad_out.to(kFloat32), input.to(kFloat32), weight_size, stride, padding,
                                      dilation, groups)
        .to(grad_out.dtype());
  if (Tensor r = dnnl_conv::backward_weight(grad_out, input, weight_size, stride, padding, dilation, groups);
      r.defined())
    return r;
  ConvGeom g = geom_of(input.sizes(), weight_size, stride, padding, dilation, groups);
  g.OH = grad_out.sizes()[2];
  g.OW = grad_out.sizes()[3];
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
          const T* xg = X + (n * g.C + gi * Cg) * g.H * g.W;
          const T* colp = xg;
          if (!g.pointwise()) {
            im2col(xg, col.data(), g);
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

EMBER_REGISTER_KERNEL(conv2d_forward, CPU, conv2d_forward_cpu);
EMBER_REGISTER_KERNEL(conv2d_backward_input, CPU, conv2d_backward_input_cpu);
EMBER_REGISTER_KERNEL(conv2d_backward_weight, CPU, conv2d_backward_weight_cpu);

}  // namespace
}  // namespace ember::cpu
