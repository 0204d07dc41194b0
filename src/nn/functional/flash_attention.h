#pragma once
// When F::scaled_dot_product_attention takes the fused flash-attention kernels, and the call
// that does (flash_attention.cpp).
#include "ember/tensor.h"

namespace ember::nn::functional {

bool flash_attention_applies(const Tensor& q, const Tensor& k, const Tensor& v, bool has_mask, double dropout_p,
                             bool is_causal, double scale);
Tensor flash_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal, double scale);

}  // namespace ember::nn::functional
