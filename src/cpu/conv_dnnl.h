#pragma once
// 2-d and 3-d convolution through oneDNN's convolution primitives (its AVX-512 direct kernels on blocked
// layouts), for the cases where they beat ember's im2col + GEMM: float32, at least 8 input
// channels, any groups (depthwise 32x64x32x32 3x3: forward 2.25 -> 1.07 ms, PyTorch 1.30). On the CNN's 32 -> 64 channel 3x3 layer (batch 64, 14x14) forward 2.7 ->
// 1.65 ms, backward 5.5 -> 3.6 ms, reorders to and from the blocked layouts included; with one
// input channel oneDNN is no faster (its backward-data is slower), so ember's kernel stays there.
//
// bfloat16 (input, weight, bias and every result, the weight gradient included, as PyTorch)
// runs on oneDNN's AMX kernels from 2 input channels on, accumulating in float32 with one
// rounding at the end; ember's own kernel for it converts everything to float32 and back. The
// CNN's 32 -> 64 layer: forward 0.31 ms, backward-data 0.39, backward-weights 0.58 against
// 2.26, 2.31 and 1.74 ms through float32 (1.41, 1.65, 1.37 for float32 tensors); 2 -> 32 on
// 28x28: 0.43, 0.40, 0.51 against 0.56, 0.49, 0.69. With 1 input channel ember's kernel stays
// (the 1 -> 32 layer: 0.46, 0.38, 0.39 ms; oneDNN 0.46, 0.38, 0.49).
//
// Each function returns an undefined Tensor when oneDNN is absent (EMBER_HAVE_DNNL 0), the case
// is not covered, or oneDNN declines the shapes; the caller then runs its own kernel. Arguments
// arrive checked, as for the kernels in conv_kernels.cpp (symmetric padding, batched input).
#include "ember/tensor.h"

namespace ember::cpu::dnnl_conv {

Tensor forward(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
               IntArrayRef padding, IntArrayRef dilation, int64_t groups);
Tensor backward_input(const Tensor& grad_out, const Tensor& weight, IntArrayRef input_size, IntArrayRef stride,
                      IntArrayRef padding, IntArrayRef dilation, int64_t groups);
Tensor backward_weight(const Tensor& grad_out, const Tensor& input, IntArrayRef weight_size, IntArrayRef stride,
                       IntArrayRef padding, IntArrayRef dilation, int64_t groups);

}  // namespace ember::cpu::dnnl_conv
