#include "ember/nn/transformer.h"

#include "ember/nn/functional.h"

namespace ember::nn {

namespace F = functional;

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
  // An undefined in_proj_bias / out_proj.bias (bias=false) reads as absent. The functional form
  // reads out_proj's weight, not its forward, so a LoRA adapter on out_proj joins as W + scaling B A
  // (its input dropout, if any, does not apply there).
  const Tensor out_weight = out_proj.lora_active() ? out_proj.weight + out_proj.lora_delta() : out_proj.weight;
  return F::multi_head_attention_forward(
      query, key, value, embed_dim, num_heads, in_proj_weight, in_proj_bias, std::nullopt, std::nullopt,
      /*add_zero_attn=*/false, dropout, out_weight, out_proj.bias, is_training(), key_padding_mask,
      need_weights, attn_mask, /*use_separate_proj_weight=*/false, std::nullopt, std::nullopt, std::nullopt,
      std::nullopt, std::nullopt, average_attn_weights, is_causal, batch_first);
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
