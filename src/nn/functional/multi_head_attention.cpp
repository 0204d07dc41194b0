// multi_head_attention_forward: torch.nn.functional's, the computation of nn::MultiheadAttention
// in C++ and of ember.nn.MultiheadAttention in Python (both pass their own parameters), as a
// composite of differentiable ops: project q, k, v, split the heads, softmax(q k^T / sqrt(d) +
// mask) v, merge the heads, project out. All masks become one additive float mask of shape
// (1 or N*num_heads, L or 1, S) before the scores are formed.
#include <cmath>
#include <limits>

#include "ember/nn/functional.h"

namespace ember::nn::functional {

namespace {

bool present(const std::optional<Tensor>& t) { return t && t->defined(); }

// bool (true = masked out) -> 0 / -inf in dtype; float masks are cast and added as they are.
Tensor additive_mask(const Tensor& m, DType dtype) {
  if (m.dtype() == kBool)
    return zeros(m.sizes(), {.dtype = dtype, .device = m.device()})
        .masked_fill(m, -std::numeric_limits<double>::infinity());
  EMBER_CHECK(m.is_floating_point(), "only bool and floating types of masks are supported");
  return m.to(dtype);
}

// One more key position that every query may attend to (bias_k / add_zero_attn).
Tensor allow_one_more_key(const Tensor& additive) { return additive.defined() ? pad(additive, {0, 1}) : additive; }

}  // namespace

std::tuple<Tensor, Tensor> multi_head_attention_forward(
    const Tensor& query, const Tensor& key, const Tensor& value, int64_t embed_dim_to_check, int64_t num_heads,
    const std::optional<Tensor>& in_proj_weight, const std::optional<Tensor>& in_proj_bias,
    const std::optional<Tensor>& bias_k, const std::optional<Tensor>& bias_v, bool add_zero_attn, double dropout_p,
    const Tensor& out_proj_weight, const std::optional<Tensor>& out_proj_bias, bool training,
    const std::optional<Tensor>& key_padding_mask, bool need_weights, const std::optional<Tensor>& attn_mask,
    bool use_separate_proj_weight, const std::optional<Tensor>& q_proj_weight,
    const std::optional<Tensor>& k_proj_weight, const std::optional<Tensor>& v_proj_weight,
    const std::optional<Tensor>& static_k, const std::optional<Tensor>& static_v, bool average_attn_weights,
    bool is_causal, bool batch_first) {
  EMBER_CHECK_VALUE(query.dim() == 3 || query.dim() == 2,
                    "MultiheadAttention: query should be unbatched 2D or batched 3D tensor but received ",
                    query.dim(), "-D query tensor");
  const bool batched = query.dim() == 3;
  EMBER_CHECK_VALUE(key.dim() == query.dim() && value.dim() == query.dim(),
                    "MultiheadAttention: query, key and value must have the same number of dims, got query ",
                    query.sizes(), ", key ", key.sizes(), ", value ", value.sizes());
  Tensor q_in = query, k_in = key, v_in = value;
  Tensor kpm = present(key_padding_mask) ? *key_padding_mask : Tensor();
  if (!batched) {
    q_in = q_in.unsqueeze(1);
    k_in = k_in.unsqueeze(1);
    v_in = v_in.unsqueeze(1);
    if (kpm.defined()) {
      EMBER_CHECK_VALUE(kpm.dim() == 1, "For unbatched (2-D) query, expected key_padding_mask to be 1-D, got ",
                        kpm.dim(), "-D");
      kpm = kpm.unsqueeze(0);
    }
  } else if (batch_first) {
    q_in = q_in.transpose(0, 1);
    k_in = k_in.transpose(0, 1);
    v_in = v_in.transpose(0, 1);
  }
  const int64_t L = q_in.size(0), N = q_in.size(1), E = q_in.size(2), S = k_in.size(0), H = num_heads;
  EMBER_CHECK_VALUE(E == embed_dim_to_check, "was expecting embedding dimension of ", embed_dim_to_check,
                    ", but got ", E);
  EMBER_CHECK_VALUE(H > 0 && E % H == 0, "embed_dim ", E, " not divisible by num_heads ", H);
  const int64_t head_dim = E / H;
  // Separate projection weights may take keys and values of other widths (kdim, vdim).
  const bool widths_match = use_separate_proj_weight || (k_in.size(2) == E && v_in.size(2) == E);
  EMBER_CHECK_VALUE(k_in.size(1) == N && v_in.size(1) == N && v_in.size(0) == S && widths_match,
                    "MultiheadAttention: key ", key.sizes(), " and value ", value.sizes(), " do not match query ",
                    query.sizes());

  // Input projections: the three row blocks of in_proj_weight, or the three separate weights.
  std::vector<std::optional<Tensor>> b(3);
  if (present(in_proj_bias)) {
    auto bs = in_proj_bias->chunk(3, 0);
    for (int i = 0; i < 3; ++i) b[i] = bs[i];
  }
  Tensor q, k, v;
  if (use_separate_proj_weight) {
    EMBER_CHECK(present(q_proj_weight), "use_separate_proj_weight is True but q_proj_weight is None");
    EMBER_CHECK(present(k_proj_weight), "use_separate_proj_weight is True but k_proj_weight is None");
    EMBER_CHECK(present(v_proj_weight), "use_separate_proj_weight is True but v_proj_weight is None");
    q = linear(q_in, *q_proj_weight, b[0]);
    k = linear(k_in, *k_proj_weight, b[1]);
    v = linear(v_in, *v_proj_weight, b[2]);
  } else {
    EMBER_CHECK(present(in_proj_weight), "use_separate_proj_weight is False but in_proj_weight is None");
    auto w = in_proj_weight->chunk(3, 0);
    q = linear(q_in, w[0], b[0]);
    k = linear(k_in, w[1], b[1]);
    v = linear(v_in, w[2], b[2]);
  }

  // attn_mask (or the causal mask) as an additive (1 or N*H, L, S) mask; key_padding_mask (N, S).
  const DType dt = q.dtype();
  Tensor mask;
  if (present(attn_mask)) {
    Tensor m = *attn_mask;
    if (m.dim() == 2) {
      EMBER_CHECK_VALUE(m.size(0) == L && m.size(1) == S, "The shape of the 2D attn_mask is ", m.sizes(),
                        ", but should be [", L, ", ", S, "].");
      m = m.unsqueeze(0);
    } else {
      EMBER_CHECK_VALUE(m.dim() == 3 && m.size(0) == N * H && m.size(1) == L && m.size(2) == S,
                        "The shape of the 3D attn_mask is ", m.sizes(), ", but should be [", N * H, ", ", L, ", ",
                        S, "].");
    }
    mask = additive_mask(m, dt);
  } else if (is_causal) {
    mask = additive_mask(ones({L, S}, {.dtype = kBool, .device = q.device()}).triu(1), dt).unsqueeze(0);
  }
  Tensor kpad = kpm.defined() ? additive_mask(kpm, dt) : Tensor();

  if (present(bias_k) || present(bias_v)) {
    EMBER_CHECK(present(bias_k) && present(bias_v), "bias_k and bias_v must be given together");
    EMBER_CHECK(!present(static_k), "bias cannot be added to static key.");
    EMBER_CHECK(!present(static_v), "bias cannot be added to static value.");
    k = cat({k, bias_k->repeat({1, N, 1})}, 0);
    v = cat({v, bias_v->repeat({1, N, 1})}, 0);
    mask = allow_one_more_key(mask);
    kpad = allow_one_more_key(kpad);
  }

  // (T, N, E) -> (N*H, T, head_dim)
  q = q.reshape({L, N * H, head_dim}).transpose(0, 1);
  auto heads = [&](const Tensor& projected, const std::optional<Tensor>& given, const char* name) {
    if (!present(given)) return projected.reshape({projected.size(0), N * H, head_dim}).transpose(0, 1);
    EMBER_CHECK(given->dim() == 3 && given->size(0) == N * H && given->size(2) == head_dim, "expecting ", name,
                " of size [", N * H, ", *, ", head_dim, "], but got ", given->sizes());
    return *given;
  };
  k = heads(k, static_k, "static_k");
  v = heads(v, static_v, "static_v");
  if (add_zero_attn) {
    const Tensor z = zeros({N * H, 1, head_dim}, {.dtype = k.dtype(), .device = k.device()});
    k = cat({k, z}, 1);
    v = cat({v, z.to(v.dtype())}, 1);
    mask = allow_one_more_key(mask);
    kpad = allow_one_more_key(kpad);
  }
  const int64_t src_len = k.size(1);
  if (kpad.defined()) {
    EMBER_CHECK_VALUE(kpad.dim() == 2 && kpad.size(0) == N && kpad.size(1) == src_len,
                      "expecting key_padding_mask shape of [", N, ", ", src_len, "], but got ", kpad.sizes());
    Tensor km = kpad.view({N, 1, 1, src_len}).expand({N, H, 1, src_len}).reshape({N * H, 1, src_len});
    mask = mask.defined() ? mask + km : km;
  }

  Tensor scores = (q * (1.0 / std::sqrt(double(head_dim)))).bmm(k.transpose(1, 2));  // (N*H, L, S)
  if (mask.defined()) scores = scores + mask;
  Tensor attn = ember::softmax(scores, -1);
  if (training && dropout_p > 0.0) attn = dropout(attn, dropout_p, true);
  Tensor out = attn.bmm(v);  // (N*H, L, head_dim)
  out = out.transpose(0, 1).contiguous().view({L * N, E});
  out = linear(out, out_proj_weight, out_proj_bias).view({L, N, E});
  if (!batched)
    out = out.select(1, 0);
  else if (batch_first)
    out = out.transpose(0, 1);

  Tensor weights;
  if (need_weights) {
    weights = attn.view({N, H, L, src_len});
    if (average_attn_weights) weights = weights.mean({1});
    if (!batched) weights = weights.select(0, 0);
  }
  return {out, weights};
}

}  // namespace ember::nn::functional
