// The CUDA kernels of the flash attention ops (op_list.h, nn-norm section), registered with the
// dispatcher; F::scaled_dot_product_attention decides when they apply (nn/functional/
// flash_attention.cpp). Inputs are [..., T, head_dim] with the same leading dims, viewed as
// [heads, T, head_dim]; the kernels (flash_attention_kernels.cu) read 16-byte pieces of strided
// heads in place (a GPT's q, k, v split out of one projection and transposed: no copies), and
// copy only inputs whose layout they cannot follow (head dim not contiguous, leading dims not
// one [outer, H] grid, strides not multiples of 8 elements, data not 16-byte aligned).
#include <optional>
#include <utility>

#include "cuda/cuda_state.h"
#include "cuda/elementwise_args.h"
#include "cuda/flash_attention_launchers.h"
#include "ember/ops.h"
#include "ops/flash_attention_geometry.h"
#include "ops/op_handles.h"

namespace ember::cuda {
namespace {

// Where t's heads and rows lie, when the kernels can read it in place.
std::optional<HeadLayout> head_layout(const Tensor& t) {
  const int64_t nd = t.dim();
  const auto& size = t.sizes();
  const auto& stride = t.strides();
  if (reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 != 0 || stride[nd - 1] != 1) return std::nullopt;
  HeadLayout at;
  at.row = size[nd - 2] > 1 ? stride[nd - 2] : 0;
  at.inner = nd >= 3 && size[nd - 3] > 1 ? stride[nd - 3] : 0;
  // the dims before H must merge into one
  int64_t last = -1;
  for (int64_t i = 0; i + 3 < nd; ++i) {
    if (size[i] == 1) continue;
    if (last >= 0 && stride[last] != stride[i] * size[i]) return std::nullopt;
    last = i;
  }
  at.outer = last >= 0 ? stride[last] : 0;
  for (int64_t s : {at.row, at.inner, at.outer})
    if (s < 0 || s % 8 != 0) return std::nullopt;
  return at;
}

// t as the kernels read it: itself where its layout allows, else a contiguous aligned copy.
std::pair<Tensor, HeadLayout> readable(const Tensor& t) {
  if (auto at = head_layout(t)) return {t, *at};
  Tensor c = t.contiguous();
  if (reinterpret_cast<uintptr_t>(c.data_ptr()) % 16 != 0) c = c.clone();
  auto at = head_layout(c);
  EMBER_CHECK(at.has_value(), "_flash_attention: internal error: a contiguous copy of ", t.sizes(), " is not readable");
  return {c, *at};
}

FlashAttentionLaunch geometry(const char* op, const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                              double scale) {
  const FlashAttentionGeometry g = flash_attention_geometry(op, q, k, v);
  const int64_t d = g.d;
  EMBER_CHECK(d == 64 || d == 128, op, ": head dim ", d, " is not supported (64 or 128)");
  if (!flash_attention_supports(int(d), int8_t(q.dtype()))) throw_dtype_not_implemented(op, int8_t(q.dtype()));
  EMBER_CHECK(g.tq < (int64_t(1) << 31) && g.tk < (int64_t(1) << 31), op, ": sequence lengths must be below 2^31, got ",
              g.tq, " and ", g.tk);
  EMBER_CHECK(scale > 0, op, ": the scale must be positive, got ", scale);
  FlashAttentionLaunch L;
  L.tq = g.tq;
  L.tk = g.tk;
  L.head_dim = int(d);
  L.heads = g.heads;
  L.scale = float(scale);
  L.causal = causal;
  L.code = int8_t(q.dtype());
  L.inner_heads = q.dim() >= 3 ? q.sizes()[q.dim() - 3] : 1;
  L.stream = current_cuda_stream(q.device().index);
  return L;
}

Shape lse_shape(const Tensor& q) { return Shape(q.sizes().begin(), q.sizes().end() - 1); }

// The CUDA kernels take no attn_mask (F::scaled_dot_product_attention never sends them one).
void check_no_mask(const char* op, const std::optional<Tensor>& attn_mask) {
  EMBER_CHECK(!attn_mask || !attn_mask->defined(), op,
              ": the CUDA kernels take no attn_mask (scaled_dot_product_attention uses the math path for masks)");
}

std::tuple<Tensor, Tensor> flash_forward_cuda(const Tensor& query, const Tensor& key, const Tensor& value,
                                              const std::optional<Tensor>& attn_mask, bool causal, double scale) {
  GpuGuard guard(query.device().index);
  check_no_mask("_flash_attention_forward", attn_mask);
  FlashAttentionLaunch L = geometry("_flash_attention_forward", query, key, value, causal, scale);
  auto [q, q_at] = readable(query);
  auto [k, k_at] = readable(key);
  auto [v, v_at] = readable(value);
  L.q_at = q_at;
  L.k_at = k_at;
  L.v_at = v_at;
  Tensor out = empty(q.sizes(), {.dtype = q.dtype(), .device = q.device()});
  Tensor lse = empty(lse_shape(q), {.dtype = kFloat32, .device = q.device()});
  L.q = q.data_ptr();
  L.k = k.data_ptr();
  L.v = v.data_ptr();
  L.out = out.data_ptr();
  L.lse = lse.data_ptr<float>();
  launch_flash_attention_forward(L);
  return {out, lse};
}

std::tuple<Tensor, Tensor, Tensor> flash_backward_cuda(const Tensor& grad_out, const Tensor& query, const Tensor& key,
                                                       const Tensor& value, const std::optional<Tensor>& attn_mask,
                                                       const Tensor& out, const Tensor& lse, bool causal, double scale) {
  GpuGuard guard(query.device().index);
  check_no_mask("_flash_attention_backward", attn_mask);
  FlashAttentionLaunch L = geometry("_flash_attention_backward", query, key, value, causal, scale);
  EMBER_CHECK(grad_out.sizes() == query.sizes() && out.sizes() == query.sizes(),
              "_flash_attention_backward: expected grad_out and out of the query's size ", query.sizes());
  auto [q, q_at] = readable(query);
  auto [k, k_at] = readable(key);
  auto [v, v_at] = readable(value);
  auto [go, go_at] = readable(grad_out.to(query.dtype()));
  auto [o, o_at] = readable(out);
  L.q_at = q_at;
  L.k_at = k_at;
  L.v_at = v_at;
  L.grad_out_at = go_at;
  L.out_at = o_at;
  Tensor l = lse.to(kFloat32).contiguous();
  const Device dev = q.device();
  Tensor dq = empty(q.sizes(), {.dtype = q.dtype(), .device = dev});
  Tensor dk = empty(k.sizes(), {.dtype = q.dtype(), .device = dev});
  Tensor dv = empty(v.sizes(), {.dtype = q.dtype(), .device = dev});
  Tensor dq_acc = zeros(q.sizes(), {.dtype = kFloat32, .device = dev});
  Tensor row_dot = empty(lse_shape(q), {.dtype = kFloat32, .device = dev});
  L.q = q.data_ptr();
  L.k = k.data_ptr();
  L.v = v.data_ptr();
  L.out = o.data_ptr();
  L.lse = l.data_ptr<float>();
  L.grad_out = go.data_ptr();
  L.grad_q = dq.data_ptr();
  L.grad_k = dk.data_ptr();
  L.grad_v = dv.data_ptr();
  L.row_dot = row_dot.data_ptr<float>();
  L.grad_q_acc = dq_acc.data_ptr<float>();
  launch_flash_attention_backward(L);
  return {dq, dk, dv};
}

EMBER_REGISTER_KERNEL(_flash_attention_forward, CUDA, flash_forward_cuda);
EMBER_REGISTER_KERNEL(_flash_attention_backward, CUDA, flash_backward_cuda);

}  // namespace
}  // namespace ember::cuda
