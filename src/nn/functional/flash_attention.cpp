// Flash attention inside F::scaled_dot_product_attention: when the fused kernels apply
// (ops _flash_attention_forward / _flash_attention_backward; CUDA kernels in src/cuda/
// flash_attention_*), and their autograd formula. The forward keeps only the output and each
// query row's log-sum-exp, so neither direction stores the T x T probabilities. A backward that
// must itself be differentiable (create_graph) uses the math formula on ember ops instead, as
// torch's flash path has no double backward of its own.
#include "autograd/record.h"
#include "ember/nn/functional.h"
#include "ember/sdp_flags.h"
#include "nn/functional/flash_attention.h"
#include "ops/op_handles.h"
#include "ops/reduce_utils.h"

namespace ember::nn::functional {

using namespace autograd;

namespace {

// The attention gradient from the probabilities, with ember's differentiable ops:
//   P = softmax(q k^T s + mask), dv = P^T g, dP = g v^T, dS = P (dP - rowsum(dP P)),
//   dq = dS k s, dk = dS^T q s.
variable_list math_attention_backward(const Tensor& g, const Tensor& q, const Tensor& k, const Tensor& v,
                                      const std::optional<Tensor>& attn_mask, bool causal, double scale) {
  Tensor logits = q.matmul(k.transpose(-2, -1)) * scale;
  if (causal) logits = mask_future_keys(logits);
  if (attn_mask) logits = apply_attention_mask(logits, *attn_mask);
  const DType cdt = reduce::compute_dtype(q.dtype());  // half types in float32
  Tensor p = safe_softmax(logits.to(cdt), attn_mask ? fully_masked_rows(*attn_mask) : Tensor());
  Tensor gf = g.to(cdt);
  Tensor dp = gf.matmul(v.to(cdt).transpose(-2, -1));
  Tensor ds = p * (dp - (dp * p).sum({-1}, true));
  Tensor dq = (ds.matmul(k.to(cdt)) * scale).to(q.dtype());
  Tensor dk = (ds.transpose(-2, -1).matmul(q.to(cdt)) * scale).to(k.dtype());
  Tensor dv = p.transpose(-2, -1).matmul(gf).to(v.dtype());
  return {dq, dk, dv};
}

// The mask takes no gradient: flash_attention_applies sends masks that need one to the math path.
std::tuple<Tensor, Tensor> flash_attention_ag(const Tensor& q, const Tensor& k, const Tensor& v,
                                              const std::optional<Tensor>& attn_mask, bool causal, double scale) {
  auto [out, lse] = below_autograd([&] { return ops::_flash_attention_forward()(q, k, v, attn_mask, causal, scale); });
  record("ScaledDotProductFlashAttentionBackward0", {q, k, v}, {out},
         {saved_input(q), saved_input(k), saved_input(v), saved_output(out), saved_input(lse)},
         [attn_mask, causal, scale](const variable_list& g, LambdaNode& n) -> variable_list {
           Tensor q = n.unpack(0), k = n.unpack(1), v = n.unpack(2);
           if (GradMode::is_enabled()) return math_attention_backward(g[0], q, k, v, attn_mask, causal, scale);
           // (not a structured binding: clang 14, the fuzz build, cannot capture those in lambdas)
           const auto grads =
               ops::_flash_attention_backward()(g[0], q, k, v, attn_mask, n.unpack(3), n.unpack(4), causal, scale);
           return {grad_for(n, 0, [&] { return std::get<0>(grads); }), grad_for(n, 1, [&] { return std::get<1>(grads); }),
                   grad_for(n, 2, [&] { return std::get<2>(grads); })};
         });
  return {out, lse};
}

EMBER_REGISTER_KERNEL(_flash_attention_forward, Autograd, flash_attention_ag);

// When the CPU flash kernels beat the math path (bench/bench_sdpa_cpu.py: 2 threads of this
// machine's EPYC, 12 heads of 64, best of 10): from 128 x 128 scores on, causal, unmasked or
// masked alike, in float32 (at 128 x 128 flash takes 0.70-0.88x the math path's time, at
// 2048 x 2048 0.71-0.76x unmasked and 0.32x causal, which skips the hidden half; at 64 x 64 the
// math path's few big GEMMs still win without a mask, flash 1.12-1.21x). bfloat16 and float16
// without a mask or causality keep the math path, whose GEMMs run in the half type while the
// flash kernels compute in float32 (flash 1.15-1.33x at T=1024, even to 1.09x at 2048), until
// its T x T scores reach 32 MiB a head.
bool prefer_cpu_flash(int64_t tq, int64_t tk, DType dtype, bool causal, bool masked) {
  const bool half = dtype == kBFloat16 || dtype == kFloat16;
  if (sdp_choice_ignores_sizes()) return !(half && !causal && !masked);
  if (half && !causal && !masked) return tq * tk >= int64_t(4096) * 4096;
  return tq * tk >= 128 * 128;
}

// Whether the CPU kernels can take this attn_mask: q on the CPU, a bool or floating mask on
// the CPU of at most q's rank that broadcasts to the scores (..., Tq, Tk), and no gradient
// wanted for it.
bool cpu_flash_takes_mask(const Tensor& m, const Tensor& q, const Tensor& k) {
  if (!q.device().is_cpu() || !m.device().is_cpu()) return false;
  if (m.dtype() != kBool && !is_floating(m.dtype())) return false;
  if (m.requires_grad() && GradMode::is_enabled()) return false;
  if (m.dim() > q.dim()) return false;
  for (int64_t i = 1; i <= m.dim(); ++i) {
    const int64_t want = i == 1 ? k.sizes()[k.dim() - 2] : q.sizes()[q.dim() - i];
    if (m.sizes()[m.dim() - i] != 1 && m.sizes()[m.dim() - i] != want) return false;
  }
  return true;
}

}  // namespace

// Where the flash kernels apply (torch's flash conditions, less what ember's kernels lack): an
// attn_mask only on the CPU, bool or floating, broadcastable to the scores and needing no
// gradient; no dropout, a positive scale (the kernels scale after the row max), query, key
// and value of one floating dtype on one device with equal leading (batch, head) dims, one head
// dim, non-empty sequences shorter than 2^31; on CUDA float16/bfloat16 and head dim 64 or 128;
// on the CPU (src/cpu/flash_attention_kernels.cpp) any float dtype and head dim, but only when
// it beats the math path or the math path is off (see prefer_cpu_flash).
bool flash_attention_applies(const Tensor& q, const Tensor& k, const Tensor& v, const std::optional<Tensor>& attn_mask,
                             double dropout_p, bool is_causal, double scale) {
  if (!flash_sdp_enabled() || dropout_p > 0.0 || !(scale > 0.0)) return false;
  if (attn_mask && !cpu_flash_takes_mask(*attn_mask, q, k)) return false;
  if (k.device() != q.device() || v.device() != q.device()) return false;
  if (!is_floating(q.dtype()) || k.dtype() != q.dtype() || v.dtype() != q.dtype()) return false;
  const int64_t nd = q.dim();
  if (nd < 2 || k.dim() != nd || v.dim() != nd) return false;
  const int64_t d = q.sizes()[nd - 1];
  if (k.sizes()[nd - 1] != d || v.sizes()[nd - 1] != d) return false;
  for (int64_t i = 0; i < nd - 2; ++i)
    if (k.sizes()[i] != q.sizes()[i] || v.sizes()[i] != q.sizes()[i]) return false;
  const int64_t tq = q.sizes()[nd - 2], tk = k.sizes()[nd - 2];
  if (!(tq > 0 && tk > 0 && tq < (int64_t(1) << 31) && tk < (int64_t(1) << 31))) return false;
  if (q.device().is_cuda()) return (q.dtype() == kFloat16 || q.dtype() == kBFloat16) && (d == 64 || d == 128);
  if (q.device().is_cpu()) return !math_sdp_enabled() || prefer_cpu_flash(tq, tk, q.dtype(), is_causal, attn_mask.has_value());
  return false;
}

Tensor flash_attention(const Tensor& q, const Tensor& k, const Tensor& v, const std::optional<Tensor>& attn_mask,
                       bool is_causal, double scale) {
  return std::get<0>(ops::_flash_attention_forward()(q, k, v, attn_mask, is_causal, scale));
}

}  // namespace ember::nn::functional
