#pragma once
// When F::scaled_dot_product_attention takes the fused flash-attention kernels, and the call
// that does (flash_attention.cpp).
#include "ember/tensor.h"

namespace ember::nn::functional {

bool flash_attention_applies(const Tensor& q, const Tensor& k, const Tensor& v, bool has_mask, double dropout_p,
                             bool is_causal, double scale);
Tensor flash_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal, double scale);
// is_causal's mask on (..., L, S) scores (attention.cpp), shared by the math path and the flash
// path's differentiable backward.
Tensor mask_future_keys(const Tensor& scores);

}  // namespace ember::nn::functional
