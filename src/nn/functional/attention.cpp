// scaled_dot_product_attention: the fused flash-attention kernels where they apply
// (flash_attention.cpp), else a composite of differentiable ops (matmul, masked_fill, softmax,
// dropout): softmax(q k^T * scale + mask) v over batched (..., L, E) inputs.
// A bool mask keeps the positions where it is true (the others get -inf); a float mask is
// added. is_causal keeps the lower triangle (query i attends to keys j <= i). A row with every
// position masked gives 0, as PyTorch 2.x's math path (its _safe_softmax; 1.13 gave NaN).
#include <cmath>
#include <limits>

#include "ember/dispatch/op_recording.h"
#include "amp/autocast.h"
#include "ember/nn/functional.h"
#include "ember/sdp_flags.h"
#include "nn/functional/flash_attention.h"

namespace ember::nn::functional {

// is_causal's mask on (..., L, S) scores: query i keeps keys j <= i, the others become -inf.
Tensor mask_future_keys(const Tensor& scores) {
  const int64_t l = scores.sizes()[scores.dim() - 2], sl = scores.sizes()[scores.dim() - 1];
  Tensor keep = ones({l, sl}, {.dtype = kBool, .device = scores.device()}).tril();
  return scores.masked_fill(keep.logical_not(), -std::numeric_limits<double>::infinity());
}

Tensor apply_attention_mask(const Tensor& scores, const Tensor& m) {
  if (m.dtype() == kBool) return scores.masked_fill(m.logical_not(), -std::numeric_limits<double>::infinity());
  return scores + m;
}

Tensor fully_masked_rows(const Tensor& m) {
  if (m.dim() == 0) return {};
  Tensor dead = m.dtype() == kBool ? m.logical_not().all(-1, true)
                                   : m.eq(-std::numeric_limits<double>::infinity()).all(-1, true);
  return dead;  // (never skipped by testing whether any row is dead: a read back, a GPU sync per
                // call and a break in ember.compile)
}

Tensor safe_softmax(const Tensor& scores, const Tensor& dead) {
  if (!dead.defined()) return ember::softmax(scores, -1);
  // the dead rows get finite scores first, so neither direction meets exp(-inf - -inf)
  return ember::softmax(scores.masked_fill(dead, 0.0), -1).masked_fill(dead, 0.0);
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const std::optional<Tensor>& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale, Generator* gen) {
  EMBER_RECORD_COMPOSITE("scaled_dot_product_attention", q, k, v, attn_mask, dropout_p, is_causal, scale, gen);
  EMBER_AUTOCAST(scaled_dot_product_attention, q, k, v, attn_mask, dropout_p, is_causal, scale, gen);
  EMBER_CHECK(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2,
              "scaled_dot_product_attention: expected query, key and value with at least 2 dimensions, but got "
              "query of size", q.sizes(), ", key of size", k.sizes(), " and value of size", v.sizes());
  const bool has_mask = attn_mask && attn_mask->defined();
  EMBER_CHECK(!(has_mask && is_causal),
              "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True");
  const int64_t e = q.sizes()[q.dim() - 1];
  EMBER_CHECK(k.sizes()[k.dim() - 1] == e, "scaled_dot_product_attention: expected key with embedding size ", e,
              " (the query's last dimension), but got key of size", k.sizes());
  EMBER_CHECK(v.sizes()[v.dim() - 2] == k.sizes()[k.dim() - 2],
              "scaled_dot_product_attention: expected value with the same sequence length as key, but got key of "
              "size", k.sizes(), " and value of size", v.sizes());
  const double s = scale ? *scale : 1.0 / std::sqrt(double(e));
  const std::optional<Tensor> mask = has_mask ? attn_mask : std::nullopt;
  if (flash_attention_applies(q, k, v, mask, dropout_p, is_causal, s)) return flash_attention(q, k, v, mask, is_causal, s);
  EMBER_CHECK(math_sdp_enabled(), "scaled_dot_product_attention: No available kernel. The math path is disabled "
              "(torch.backends.cuda.enable_math_sdp(False)) and the flash kernel does not apply (it needs no dropout, "
              "one dtype and equal batch dims; on CUDA float16/bfloat16 with head dim 64 or 128 and no attn_mask; on "
              "the CPU an attn_mask that needs no gradient)");
  Tensor attn = q.matmul(k.transpose(-2, -1)) * s;
  // A fully masked row gives 0: its mask row is lifted (mask-sized work, so softmax sees finite
  // scores) and its output row zeroed (output-sized), instead of two passes over the T x T
  // probabilities, and nothing is read back to test whether any row is dead.
  Tensor dead;
  if (is_causal) {
    attn = mask_future_keys(attn);
  } else if (has_mask) {
    const Tensor& m = *attn_mask;
    dead = fully_masked_rows(m);
    const Tensor lifted = !dead.defined() ? m : m.dtype() == kBool ? m.logical_or(dead) : m.masked_fill(dead, 0.0);
    attn = apply_attention_mask(attn, lifted);
  }
  attn = ember::softmax(attn, -1);
  if (dropout_p > 0.0) attn = dropout(attn, dropout_p, true, gen);
  Tensor out = attn.matmul(v);
  return dead.defined() ? out.masked_fill(dead, 0.0) : out;
}

}  // namespace ember::nn::functional
