#include "ember/nn/transformer.h"

#include <cmath>
#include <limits>

#include "ember/nn/functional.h"

namespace ember::nn {

namespace F = functional;

namespace {
std::string shape_str(const Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}
// bool (true = masked out) -> 0 / -inf in dtype; float masks are cast and added as they are.
Tensor additive_mask(const Tensor& m, DType dtype) {
  if (m.dtype() == kBool)
    return zeros(m.sizes(), {.dtype = dtype, .device = m.device()})
        .masked_fill(m, -std::numeric_limits<double>::infinity());
  EMBER_CHECK(m.is_floating_point(), "only bool and floating types of masks are supported");
  return m.to(dtype);
}
}  // namespace

// ---------------------------------------------------------------- MultiheadAttention

MultiheadAttention::MultiheadAttention(int64_t embed_dim, int64_t num_heads, double dropout, bool bias,
                                       bool batch_first)
    : embed_dim(embed_dim),
      num_heads(num_heads),
      head_dim(num_heads > 0 ? embed_dim / num_heads : 0),
      dropout(dropout),
      batch_first(batch_first),
      out_proj(embed_dim, embed_dim, bias) {
  EMBER_CHECK_VALUE(embed_dim > 0 && num_heads > 0, "MultiheadAttention: embed_dim and num_heads must be positive, got ",
                    embed_dim, " and ", num_heads);
  EMBER_CHECK_VALUE(head_dim * num_heads == embed_dim, "embed_dim must be divisible by num_heads");
  EMBER_CHECK_VALUE(dropout >= 0.0 && dropout <= 1.0, "dropout probability has to be between 0 and 1, but got ",
                    dropout);
  in_proj_weight = make_parameter(empty({3 * embed_dim, embed_dim}));
  register_parameter("in_proj_weight", &in_proj_weight);
  if (bias) {
    in_proj_bias = make_parameter(empty({3 * embed_dim}));
    register_parameter("in_proj_bias", &in_proj_bias);
  }
  register_module("out_proj", &out_proj);
  reset_parameters();
}

void MultiheadAttention::reset_parameters() {
  init::xavier_uniform_(in_proj_weight);
  if (in_proj_bias.defined()) init::zeros_(in_proj_bias);
  if (out_proj.bias.defined()) init::zeros_(out_proj.bias);
}

std::tuple<Tensor, Tensor> MultiheadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                                       const std::optional<Tensor>& key_padding_mask,
                                                       bool need_weights, const std::optional<Tensor>& attn_mask,
                                                       bool average_attn_weights, bool is_causal) {
  EMBER_CHECK_VALUE(query.dim() == 3 || query.dim() == 2,
                    "MultiheadAttention: query should be unbatched 2D or batched 3D tensor but received ",
                    query.dim(), "-D query tensor");
  const bool batched = query.dim() == 3;
  EMBER_CHECK_VALUE(key.dim() == query.dim() && value.dim() == query.dim(),
                    "MultiheadAttention: query, key and value must have the same number of dims, got query ",
                    shape_str(query), ", key ", shape_str(key), ", value ", shape_str(value));
  Tensor q_in = query, k_in = key, v_in = value;
  std::optional<Tensor> kpm = key_padding_mask;
  if (!batched) {
    q_in = q_in.unsqueeze(1);
    k_in = k_in.unsqueeze(1);
    v_in = v_in.unsqueeze(1);
    if (kpm) {
      EMBER_CHECK_VALUE(kpm->dim() == 1, "For unbatched (2-D) query, expected key_padding_mask to be 1-D, got ",
                        kpm->dim(), "-D");
      kpm = kpm->unsqueeze(0);
    }
  } else if (batch_first) {
    q_in = q_in.transpose(0, 1);
    k_in = k_in.transpose(0, 1);
    v_in = v_in.transpose(0, 1);
  }
  const int64_t L = q_in.size(0), N = q_in.size(1), E = q_in.size(2), S = k_in.size(0), H = num_heads;
  EMBER_CHECK_VALUE(E == embed_dim, "was expecting embedding dimension of ", embed_dim, ", but got ", E);
  EMBER_CHECK_VALUE(k_in.size(1) == N && v_in.size(1) == N && k_in.size(2) == E && v_in.size(2) == E &&
                        v_in.size(0) == S,
                    "MultiheadAttention: key ", shape_str(key), " and value ", shape_str(value),
                    " do not match query ", shape_str(query));

  // Input projections with the three row blocks of in_proj_weight.
  auto w = in_proj_weight.chunk(3, 0);
  std::vector<std::optional<Tensor>> b(3);
  if (in_proj_bias.defined()) {
    auto bs = in_proj_bias.chunk(3, 0);
    for (int i = 0; i < 3; ++i) b[i] = bs[i];
  }
  Tensor q = F::linear(q_in, w[0], b[0]);
  Tensor k = F::linear(k_in, w[1], b[1]);
  Tensor v = F::linear(v_in, w[2], b[2]);
  // (L, N, E) -> (N*H, L, head_dim)
  q = q.reshape({L, N * H, head_dim}).transpose(0, 1);
  k = k.reshape({S, N * H, head_dim}).transpose(0, 1);
  v = v.reshape({S, N * H, head_dim}).transpose(0, 1);

  // One additive mask of shape (1 or N*H, L or 1, S).
  Tensor mask;
  const DType dt = q.dtype();
  if (attn_mask) {
    Tensor m = *attn_mask;
    if (m.dim() == 2) {
      EMBER_CHECK_VALUE(m.size(0) == L && m.size(1) == S, "The shape of the 2D attn_mask is ", shape_str(m),
                        ", but should be [", L, ", ", S, "].");
      m = m.unsqueeze(0);
    } else {
      EMBER_CHECK_VALUE(m.dim() == 3 && m.size(0) == N * H && m.size(1) == L && m.size(2) == S,
                        "The shape of the 3D attn_mask is ", shape_str(m), ", but should be [", N * H, ", ", L,
                        ", ", S, "].");
    }
    mask = additive_mask(m, dt);
  } else if (is_causal) {
    mask = additive_mask(ones({L, S}, {.dtype = kBool, .device = q.device()}).triu(1), dt).unsqueeze(0);
  }
  if (kpm) {
    EMBER_CHECK_VALUE(kpm->dim() == 2 && kpm->size(0) == N && kpm->size(1) == S,
                      "expecting key_padding_mask shape of [", N, ", ", S, "], but got ", shape_str(*kpm));
    Tensor km = additive_mask(*kpm, dt).view({N, 1, 1, S}).expand({N, H, 1, S}).reshape({N * H, 1, S});
    mask = mask.defined() ? mask + km : km;
  }

  Tensor scores = (q * (1.0 / std::sqrt(double(head_dim)))).bmm(k.transpose(1, 2));  // (N*H, L, S)
  if (mask.defined()) scores = scores + mask;
  Tensor attn = F::softmax(scores, -1);
  if (is_training() && dropout > 0.0) attn = F::dropout(attn, dropout, true);
  Tensor out = attn.bmm(v);  // (N*H, L, head_dim)
  out = out.transpose(0, 1).contiguous().view({L * N, E});
  out = out_proj(out).view({L, N, E});
  if (!batched)
    out = out.select(1, 0);
  else if (batch_first)
    out = out.transpose(0, 1);

  Tensor weights;
  if (need_weights) {
    weights = attn.view({N, H, L, S});
    if (average_attn_weights) weights = weights.mean({1});
    if (!batched) weights = weights.select(0, 0);
  }
  return {out, weights};
}

// ---------------------------------------------------------------- TransformerEncoderLayer

TransformerEncoderLayer::TransformerEncoderLayer(int64_t d_model, int64_t nhead, int64_t dim_feedforward,
                                                 double dropout_, std::string activation_, double layer_norm_eps,
                                                 bool batch_first, bool norm_first)
    : d_model(d_model),
      nhead(nhead),
      dim_feedforward(dim_feedforward),
      dropout_p(dropout_),
      activation(std::move(activation_)),
      layer_norm_eps(layer_norm_eps),
      batch_first(batch_first),
      norm_first(norm_first),
      self_attn(d_model, nhead, dropout_, true, batch_first),
      linear1(d_model, dim_feedforward),
      dropout(dropout_),
      linear2(dim_feedforward, d_model),
      norm1(d_model, layer_norm_eps),
      norm2(d_model, layer_norm_eps),
      dropout1(dropout_),
      dropout2(dropout_) {
  EMBER_CHECK_VALUE(activation == "relu" || activation == "gelu", "activation should be relu/gelu, not ",
                    activation);
  register_module("self_attn", &self_attn);
  register_module("linear1", &linear1);
  register_module("dropout", &dropout);
  register_module("linear2", &linear2);
  register_module("norm1", &norm1);
  register_module("norm2", &norm2);
  register_module("dropout1", &dropout1);
  register_module("dropout2", &dropout2);
}

Tensor TransformerEncoderLayer::sa_block(const Tensor& x, const std::optional<Tensor>& mask,
                                         const std::optional<Tensor>& kpm, bool is_causal) {
  Tensor y = std::get<0>(self_attn.forward(x, x, x, kpm, /*need_weights=*/false, mask, true, is_causal));
  return dropout1(y);
}

Tensor TransformerEncoderLayer::ff_block(const Tensor& x) {
  Tensor h = linear1(x);
  h = activation == "gelu" ? F::gelu(h) : F::relu(h);
  return dropout2(linear2(dropout(h)));
}

Tensor TransformerEncoderLayer::forward(const Tensor& src, const std::optional<Tensor>& src_mask,
                                        const std::optional<Tensor>& src_key_padding_mask, bool is_causal) {
  Tensor x = src;
  if (norm_first) {
    x = x + sa_block(norm1(x), src_mask, src_key_padding_mask, is_causal);
    x = x + ff_block(norm2(x));
  } else {
    x = norm1(x + sa_block(x, src_mask, src_key_padding_mask, is_causal));
    x = norm2(x + ff_block(x));
  }
  return x;
}

std::shared_ptr<TransformerEncoderLayer> TransformerEncoderLayer::clone() const {
  auto c = std::make_shared<TransformerEncoderLayer>(d_model, nhead, dim_feedforward, dropout_p, activation,
                                                     layer_norm_eps, batch_first, norm_first);
  c->to(self_attn.in_proj_weight.dtype());
  c->to(self_attn.in_proj_weight.device());
  c->load_state_dict(state_dict());
  c->train(is_training());
  return c;
}

// ---------------------------------------------------------------- TransformerEncoder

TransformerEncoder::TransformerEncoder(const LayerFactory& factory, int64_t num_layers, std::shared_ptr<Module> norm)
    : num_layers(num_layers), norm(std::move(norm)) {
  EMBER_CHECK_VALUE(num_layers >= 0, "TransformerEncoder: num_layers must be non-negative, got ", num_layers);
  for (int64_t i = 0; i < num_layers; ++i) {
    auto l = factory();
    EMBER_CHECK_VALUE(l != nullptr, "TransformerEncoder: the layer factory returned null");
    layers.push_back(l);
  }
  register_module("layers", &layers);
  if (this->norm) register_module("norm", this->norm);
}

TransformerEncoder::TransformerEncoder(const TransformerEncoderLayer& encoder_layer, int64_t num_layers,
                                       std::shared_ptr<Module> norm)
    : TransformerEncoder([&encoder_layer] { return encoder_layer.clone(); }, num_layers, std::move(norm)) {}

Tensor TransformerEncoder::forward(const Tensor& src, const std::optional<Tensor>& mask,
                                   const std::optional<Tensor>& src_key_padding_mask, bool is_causal) {
  Tensor x = src;
  for (size_t i = 0; i < layers.size(); ++i) x = layer(int64_t(i)).forward(x, mask, src_key_padding_mask, is_causal);
  if (norm) x = norm->forward(x);
  return x;
}

}  // namespace ember::nn
