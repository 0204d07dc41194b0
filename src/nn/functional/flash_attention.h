#pragma once
// When F::scaled_dot_product_attention takes the fused flash-attention kernels, and the call
// that does (flash_attention.cpp).
#include <optional>

#include "ember/tensor.h"

namespace ember::nn::functional {

bool flash_attention_applies(const Tensor& q, const Tensor& k, const Tensor& v, const std::optional<Tensor>& attn_mask,
                             double dropout_p, bool is_causal, double scale);
Tensor flash_attention(const Tensor& q, const Tensor& k, const Tensor& v, const std::optional<Tensor>& attn_mask,
                       bool is_causal, double scale);
// is_causal's mask on (..., L, S) scores (attention.cpp), shared by the math path and the flash
// path's differentiable backward.
Tensor mask_future_keys(const Tensor& scores);
// attn_mask on scores: a bool mask keeps where true (the rest -inf), a float mask is added.
Tensor apply_attention_mask(const Tensor& scores, const Tensor& attn_mask);
// (..., L, 1), true where a query row's every key is masked (undefined for a 0-dim mask).
Tensor fully_masked_rows(const Tensor& attn_mask);
// softmax over the last dim with the fully masked rows 0 (torch 2.x's _safe_softmax) instead of
// NaN; `dead` from fully_masked_rows (undefined: a plain softmax). The flash path's differentiable
// backward uses it; the math path's forward gets the same result more cheaply.
Tensor safe_softmax(const Tensor& scores, const Tensor& dead);

}  // namespace ember::nn::functional
