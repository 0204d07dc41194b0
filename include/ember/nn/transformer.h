#pragma once
// MultiheadAttention, TransformerEncoderLayer, TransformerEncoder: torch.nn's, with the same
// parameter names, initialisation, mask conventions and state_dict keys.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include "ember/nn/activation.h"
#include "ember/nn/containers.h"
#include "ember/nn/linear.h"
#include "ember/nn/module.h"
#include "ember/nn/normalization.h"

namespace ember::nn {

// torch's out_proj class: a plain Linear under the name PyTorch prints.
class NonDynamicallyQuantizableLinear : public Linear {
 public:
  using Linear::Linear;
  std::string name() const override { return "NonDynamicallyQuantizableLinear"; }
};

// Multi-head attention (query, key, value all of width embed_dim).
//   in_proj_weight (3E, E) xavier_uniform, in_proj_bias (3E) zeros, out_proj Linear(E, E) with zero bias.
// Inputs (L, N, E) (batch_first: (N, L, E)) or unbatched (L, E).
// key_padding_mask: (N, S) (unbatched: (S)), bool true = ignore that key, or float added.
// attn_mask: (L, S) or (N*num_heads, L, S), bool true = NOT allowed to attend, or float added.
// is_causal without attn_mask masks the future (j > i); with attn_mask it is only a hint.
// Returns (attn_output, attn_weights): weights (N, L, S) averaged over heads, or (N, H, L, S);
// (unbatched: no N dim); undefined when need_weights is false. Dropout acts on the attention
// weights in training mode only. The computation is nn::functional::multi_head_attention_forward
// (functional.h), on this module's parameters; ember.nn.MultiheadAttention calls it too.
class MultiheadAttention : public Module {
 public:
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, double dropout = 0.0, bool bias = true,
                     bool batch_first = false);
  std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                     const std::optional<Tensor>& key_padding_mask = std::nullopt,
                                     bool need_weights = true, const std::optional<Tensor>& attn_mask = std::nullopt,
                                     bool average_attn_weights = true, bool is_causal = false);
  // Self-attention, output only.
  Tensor forward(const Tensor& x) override { return std::get<0>(forward(x, x, x, std::nullopt, false)); }
  std::string name() const override { return "MultiheadAttention"; }
  void reset_parameters();

  int64_t embed_dim, num_heads, head_dim;
  double dropout;
  bool batch_first;
  Tensor in_proj_weight, in_proj_bias;  // in_proj_bias undefined when bias=false
  NonDynamicallyQuantizableLinear out_proj;
};

// One encoder block: self-attention and a feed-forward net, each with a residual and LayerNorm
// (norm_first: pre-LN, x + f(norm(x)); else post-LN, norm(x + f(x))). activation "relu" or "gelu".
// A composition of its submodules, as torch's is; ember.nn.TransformerEncoderLayer composes the
// same submodules in Python (so hooks and replaced submodules take part there, as in torch).
class TransformerEncoderLayer : public Module {
 public:
  TransformerEncoderLayer(int64_t d_model, int64_t nhead, int64_t dim_feedforward = 2048, double dropout = 0.1,
                          std::string activation = "relu", double layer_norm_eps = 1e-5, bool batch_first = false,
                          bool norm_first = false);
  Tensor forward(const Tensor& src, const std::optional<Tensor>& src_mask,
                 const std::optional<Tensor>& src_key_padding_mask = std::nullopt, bool is_causal = false);
  Tensor forward(const Tensor& src) override { return forward(src, std::nullopt); }
  std::string name() const override { return "TransformerEncoderLayer"; }
  // A new layer with the same configuration and a copy of this one's weights (copy.deepcopy).
  std::shared_ptr<TransformerEncoderLayer> clone() const;

  int64_t d_model, nhead, dim_feedforward;
  double dropout_p;
  std::string activation;
  double layer_norm_eps;
  bool batch_first, norm_first;

  MultiheadAttention self_attn;
  Linear linear1;
  Dropout dropout;
  Linear linear2;
  LayerNorm norm1, norm2;
  Dropout dropout1, dropout2;

 private:
  Tensor sa_block(const Tensor& x, const std::optional<Tensor>& mask, const std::optional<Tensor>& kpm, bool is_causal);
  Tensor ff_block(const Tensor& x);
};

// A stack of encoder layers ("layers.0", ...) and an optional final norm ("norm").
class TransformerEncoder : public Module {
 public:
  using LayerFactory = std::function<std::shared_ptr<TransformerEncoderLayer>()>;
  // Each layer made by the factory (independent initialisation).
  TransformerEncoder(const LayerFactory& factory, int64_t num_layers, std::shared_ptr<Module> norm = nullptr);
  // num_layers copies of the prototype's configuration and weights, as PyTorch's deepcopy.
  TransformerEncoder(const TransformerEncoderLayer& encoder_layer, int64_t num_layers,
                     std::shared_ptr<Module> norm = nullptr);
  Tensor forward(const Tensor& src, const std::optional<Tensor>& mask,
                 const std::optional<Tensor>& src_key_padding_mask = std::nullopt, bool is_causal = false);
  Tensor forward(const Tensor& src) override { return forward(src, std::nullopt); }
  std::string name() const override { return "TransformerEncoder"; }
  TransformerEncoderLayer& layer(int64_t i) const { return layers.at<TransformerEncoderLayer>(i); }

  int64_t num_layers;
  ModuleList layers;
  std::shared_ptr<Module> norm;  // null when none
};

}  // namespace ember::nn
