#pragma once
// ember::nn::functional (torch.nn.functional): stateless layers, activations and losses.
// Every function is differentiable through ember's autograd; names, arguments, defaults and
// error messages follow PyTorch. `namespace F = ember::nn::functional;` reads like Python.
#include <optional>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "ember/core/generator.h"
#include "ember/ops.h"
#include "ember/tensor.h"

namespace ember::nn::functional {

// ---- linear and convolution (src/nn/functional/conv.cpp)
Tensor linear(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt);
// padding: explicit per-dim sizes, or "valid" / "same" (stride 1 only, as PyTorch).
using Padding = std::variant<std::vector<int64_t>, std::string>;
Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt,
              int64_t stride = 1, Padding padding = std::vector<int64_t>{0}, int64_t dilation = 1, int64_t groups = 1);
Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt,
              IntArrayRef stride = {1, 1}, Padding padding = std::vector<int64_t>{0, 0}, IntArrayRef dilation = {1, 1},
              int64_t groups = 1);
Tensor conv3d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt,
              IntArrayRef stride = {1, 1, 1}, Padding padding = std::vector<int64_t>{0, 0, 0},
              IntArrayRef dilation = {1, 1, 1}, int64_t groups = 1);
// Transposed convolutions, torch's argument order (groups before dilation). weight is
// (in_channels, out_channels / groups, k...); each of stride, padding, output_padding, dilation
// is one value or one per spatial dim.
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt,
                        IntArrayRef stride = {1}, IntArrayRef padding = {0}, IntArrayRef output_padding = {0},
                        int64_t groups = 1, IntArrayRef dilation = {1});
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt,
                        IntArrayRef stride = {1}, IntArrayRef padding = {0}, IntArrayRef output_padding = {0},
                        int64_t groups = 1, IntArrayRef dilation = {1});
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt,
                        IntArrayRef stride = {1}, IntArrayRef padding = {0}, IntArrayRef output_padding = {0},
                        int64_t groups = 1, IntArrayRef dilation = {1});
// The output_padding that makes a transposed convolution of an input of `input_size` produce
// `output_size` (its spatial sizes, or all k + 2 sizes), as torch's _ConvTransposeNd._output_padding;
// ValueError when no output_padding in [0, stride) reaches it. stride, padding, kernel_size and
// dilation have one entry per spatial dim.
std::vector<int64_t> conv_transpose_output_padding(IntArrayRef input_size, IntArrayRef output_size, IntArrayRef stride,
                                                   IntArrayRef padding, IntArrayRef kernel_size, IntArrayRef dilation);

// ---- pooling (src/nn/functional/pool.cpp). stride empty = kernel_size.
Tensor max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = {0, 0},
                  IntArrayRef dilation = {1, 1}, bool ceil_mode = false);
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                                                   IntArrayRef padding = {0, 0}, IntArrayRef dilation = {1, 1},
                                                   bool ceil_mode = false);
// divisor_override: the divisor of every window instead of its size (runs the 3-d op on unit depth).
Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = {0, 0},
                  bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
Tensor adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size);
// 1-d and 3-d pooling and adaptive max pooling (src/nn/functional/pool_nd.cpp); 1-d runs the 2-d
// ops on unit height, adaptive max 1-d/2-d the 3-d op on unit depth. Indices are flat positions
// in each plane / volume. divisor_override: the divisor of every window instead of its size.
Tensor max_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = {0},
                  IntArrayRef dilation = {1}, bool ceil_mode = false);
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                                                   IntArrayRef padding = {0}, IntArrayRef dilation = {1},
                                                   bool ceil_mode = false);
Tensor max_pool3d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = {0},
                  IntArrayRef dilation = {1}, bool ceil_mode = false);
std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                                                   IntArrayRef padding = {0}, IntArrayRef dilation = {1},
                                                   bool ceil_mode = false);
Tensor avg_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = {0},
                  bool ceil_mode = false, bool count_include_pad = true);
Tensor avg_pool3d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = {0},
                  bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
Tensor adaptive_avg_pool1d(const Tensor& input, IntArrayRef output_size);
Tensor adaptive_avg_pool3d(const Tensor& input, IntArrayRef output_size);
std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& input, IntArrayRef output_size);
std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input, IntArrayRef output_size);
std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& input, IntArrayRef output_size);
Tensor adaptive_max_pool1d(const Tensor& input, IntArrayRef output_size);
Tensor adaptive_max_pool2d(const Tensor& input, IntArrayRef output_size);
Tensor adaptive_max_pool3d(const Tensor& input, IntArrayRef output_size);

// ---- fold / unfold (src/nn/functional/fold.cpp): sliding local blocks of (N, C, H, W) images.
// unfold: (N, C, H, W) or (C, H, W) -> (N, C*kH*kW, L); fold, its adjoint: (N, C*kH*kW, L) or
// (C*kH*kW, L) -> (N, C, oH, oW), summing overlapping values. Each size is one value or two.
Tensor unfold(const Tensor& input, IntArrayRef kernel_size, IntArrayRef dilation = {1}, IntArrayRef padding = {0},
              IntArrayRef stride = {1});
Tensor fold(const Tensor& input, IntArrayRef output_size, IntArrayRef kernel_size, IntArrayRef dilation = {1},
            IntArrayRef padding = {0}, IntArrayRef stride = {1});
// pad: (left, right, top, bottom, ...) from the last dim backwards; mode "constant", "reflect",
// "replicate" or "circular".
Tensor pad(const Tensor& input, IntArrayRef pad, const std::string& mode = "constant", double value = 0.0);

// ---- interpolation (src/nn/functional/upsample.cpp) [issue 15 layers]
// torch.nn.functional.interpolate: exactly one of size / scale_factor (one entry per spatial dim,
// or one for all); mode "nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear"
// or "area"; align_corners only for the interpolating modes (default false); with
// recompute_scale_factor the output size alone sets the sampling step. antialias: bilinear and
// bicubic on 4-D input filter every input pixel under the (scaled) kernel when shrinking.
Tensor interpolate(const Tensor& input, std::optional<std::vector<int64_t>> size = std::nullopt,
                   std::optional<std::vector<double>> scale_factor = std::nullopt,
                   const std::string& mode = "nearest", std::optional<bool> align_corners = std::nullopt,
                   std::optional<bool> recompute_scale_factor = std::nullopt, bool antialias = false);

// torch.nn.functional.embedding_bag: sums, means or maxes of bags of weight rows. A 2-D input is
// one bag per row; a 1-D input is cut at offsets (the last offset ends a bag only with
// include_last_offset). per_sample_weights scale each entry (mode "sum"); padding_idx entries are
// skipped (src/nn/functional/embedding_bag.cpp).
Tensor embedding_bag(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& offsets = std::nullopt,
                     const std::string& mode = "mean", const std::optional<Tensor>& per_sample_weights = std::nullopt,
                     bool include_last_offset = false, std::optional<int64_t> padding_idx = std::nullopt);

// torch.nn.functional.ctc_loss: log_probs (T, N, C) or unbatched (T, C) log-probabilities,
// targets padded (N, S) or concatenated 1-D, input_lengths / target_lengths (N) integer tensors;
// reduction "mean" (each loss over its target length, then the batch mean), "sum" or "none";
// zero_infinity turns the infinite losses of impossible alignments (and their gradients) into 0
// (src/nn/functional/ctc_loss.cpp).
Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, int64_t blank = 0, const std::string& reduction = "mean",
                bool zero_infinity = false);

// torch.nn.functional.grid_sample of 4-D input at grid (N, Ho, Wo, 2) in [-1, 1]: mode "bilinear" or
// "nearest" ("bicubic" is Python's only), padding_mode "zeros", "border" or "reflection",
// align_corners false by default (src/nn/functional/grid_sample.cpp).
Tensor grid_sample(const Tensor& input, const Tensor& grid, const std::string& mode = "bilinear",
                   const std::string& padding_mode = "zeros", std::optional<bool> align_corners = std::nullopt);

// ---- rearrangements, instance norm, distances, glu [issue 15 layers]
// (src/nn/functional/pixel_shuffle.cpp, instance_norm.cpp, distance.cpp, activation.cpp)
// (*, C*r*r, H, W) -> (*, C, H*r, W*r) and back; channel_shuffle: (N, g*k, *) channel order
// (g, k) -> (k, g).
Tensor pixel_shuffle(const Tensor& input, int64_t upscale_factor);
Tensor pixel_unshuffle(const Tensor& input, int64_t downscale_factor);
Tensor channel_shuffle(const Tensor& input, int64_t groups);
// Per-(sample, channel) normalisation of (N, C, *) input; running statistics, when given, are
// updated in place (training) or used (use_input_stats = false).
Tensor instance_norm(const Tensor& input, const std::optional<Tensor>& running_mean = std::nullopt,
                     const std::optional<Tensor>& running_var = std::nullopt,
                     const std::optional<Tensor>& weight = std::nullopt,
                     const std::optional<Tensor>& bias = std::nullopt, bool use_input_stats = true,
                     double momentum = 0.1, double eps = 1e-5);
// ||x1 - x2 + eps||_p over the last dim; cosine similarity over dim (norms clamped to eps).
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p = 2.0, double eps = 1e-6, bool keepdim = false);
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim = 1, double eps = 1e-8);
// first half of input along dim * sigmoid(second half)
Tensor glu(const Tensor& input, int64_t dim = -1);

// ---- normalisation (src/nn/functional/norm.cpp)
Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight = std::nullopt,
                  const std::optional<Tensor>& bias = std::nullopt, double eps = 1e-5);
Tensor rms_norm(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight = std::nullopt,
                std::optional<double> eps = std::nullopt);
Tensor group_norm(const Tensor& input, int64_t num_groups, const std::optional<Tensor>& weight = std::nullopt,
                  const std::optional<Tensor>& bias = std::nullopt, double eps = 1e-5);
// In training, normalises with batch statistics and updates running_mean/var in place
// (momentum, unbiased variance); in eval, uses the running statistics.
Tensor batch_norm(const Tensor& input, const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
                  const std::optional<Tensor>& weight = std::nullopt, const std::optional<Tensor>& bias = std::nullopt,
                  bool training = false, double momentum = 0.1, double eps = 1e-5);

// ---- activations, dropout, embedding, attention (src/nn/functional/activation.cpp)
Tensor relu(const Tensor& x);
Tensor relu6(const Tensor& x);
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
Tensor silu(const Tensor& x);
Tensor elu(const Tensor& x, double alpha = 1.0);
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor dropout(const Tensor& x, double p = 0.5, bool training = true, Generator* gen = nullptr);
// Zeroes whole channels (dim 1) of (N, C, H, W) input; 3-D input is taken as (N, C, L), as torch 1.13 does.
Tensor dropout2d(const Tensor& x, double p = 0.5, bool training = true, Generator* gen = nullptr);
// padding_idx's row gets no gradient; max_norm renormalises the looked-up rows of weight in place
// (norm_type-norm at most max_norm) before the lookup; scale_grad_by_freq divides each row's
// gradient by how often its index occurs in the batch (src/nn/functional/embedding.cpp).
Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx = std::nullopt,
                 std::optional<double> max_norm = std::nullopt, double norm_type = 2.0,
                 bool scale_grad_by_freq = false);
Tensor one_hot(const Tensor& indices, int64_t num_classes = -1);
// softmax(q k^T / sqrt(d) + mask) v. attn_mask: bool (true = attend) or float (added);
// is_causal masks the future. scale defaults to 1/sqrt(E).
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const std::optional<Tensor>& attn_mask = std::nullopt, double dropout_p = 0.0,
                                    bool is_causal = false, std::optional<double> scale = std::nullopt,
                                    Generator* gen = nullptr);

// ---- recurrent layers (src/nn/functional/rnn.cpp): torch's _VF.rnn_tanh / rnn_relu / gru / lstm,
// what nn::RNN / GRU / LSTM (C++ and Python) run. params: per layer k and direction, weight_ih_l{k}
// (G*H, in), weight_hh_l{k} (G*H, H) and, if has_biases, bias_ih_l{k}, bias_hh_l{k} (G*H), the
// "_reverse" direction after the forward one (RNNBase._flat_weights); G = 1, 4 (LSTM: i, f, g, o)
// or 3 (GRU: r, z, n). input (L, N, in), (N, L, in) with batch_first, or unbatched (L, in).
// hx (D*num_layers, N, H), unbatched (D*num_layers, H); absent = zeros (torch's modules create
// them; here the functional does). LSTM's hx is {h_0, c_0} or empty. dropout acts on the outputs
// of every layer but the last when train is true. Returns (output, h_n) or (output, h_n, c_n).
std::tuple<Tensor, Tensor> rnn_tanh(const Tensor& input, const std::optional<Tensor>& hx, TensorList params,
                                    bool has_biases, int64_t num_layers, double dropout, bool train,
                                    bool bidirectional, bool batch_first);
std::tuple<Tensor, Tensor> rnn_relu(const Tensor& input, const std::optional<Tensor>& hx, TensorList params,
                                    bool has_biases, int64_t num_layers, double dropout, bool train,
                                    bool bidirectional, bool batch_first);
std::tuple<Tensor, Tensor> gru(const Tensor& input, const std::optional<Tensor>& hx, TensorList params,
                               bool has_biases, int64_t num_layers, double dropout, bool train, bool bidirectional,
                               bool batch_first);
std::tuple<Tensor, Tensor, Tensor> lstm(const Tensor& input, TensorList hx, TensorList params, bool has_biases,
                                        int64_t num_layers, double dropout, bool train, bool bidirectional,
                                        bool batch_first);

// ---- multi-head attention (src/nn/functional/multi_head_attention.cpp): torch.nn.functional's,
// what nn::MultiheadAttention (C++ and Python) runs. query (L, N, E), key/value (S, N, E(k/v)), or
// unbatched (L, E) / (S, E). In-projection by in_proj_weight (3E, E) (row blocks q, k, v) or, with
// use_separate_proj_weight, q/k/v_proj_weight (E, E), (E, kdim), (E, vdim); in_proj_bias (3E).
// bias_k/bias_v (1, 1, E) append one key/value position; add_zero_attn appends a zero one;
// static_k/static_v (N*num_heads, S, E/num_heads) replace the projected keys/values.
// key_padding_mask (N, S) (unbatched (S)): bool true = ignore that key, or float added.
// attn_mask (L, S) or (N*num_heads, L, S): bool true = NOT allowed to attend, or float added.
// is_causal without attn_mask masks the future (j > i); with attn_mask it is only a hint.
// Dropout acts on the attention weights when training. Returns (attn_output, attn_weights):
// weights (N, L, S) averaged over heads or (N, num_heads, L, S) (unbatched: no N), undefined
// unless need_weights. batch_first (an ember addition, keyword-only in Python): batched inputs
// and output are (N, L, E), as nn.MultiheadAttention(batch_first=True) takes them.
std::tuple<Tensor, Tensor> multi_head_attention_forward(
    const Tensor& query, const Tensor& key, const Tensor& value, int64_t embed_dim_to_check, int64_t num_heads,
    const std::optional<Tensor>& in_proj_weight, const std::optional<Tensor>& in_proj_bias,
    const std::optional<Tensor>& bias_k, const std::optional<Tensor>& bias_v, bool add_zero_attn, double dropout_p,
    const Tensor& out_proj_weight, const std::optional<Tensor>& out_proj_bias, bool training = true,
    const std::optional<Tensor>& key_padding_mask = std::nullopt, bool need_weights = true,
    const std::optional<Tensor>& attn_mask = std::nullopt, bool use_separate_proj_weight = false,
    const std::optional<Tensor>& q_proj_weight = std::nullopt, const std::optional<Tensor>& k_proj_weight = std::nullopt,
    const std::optional<Tensor>& v_proj_weight = std::nullopt, const std::optional<Tensor>& static_k = std::nullopt,
    const std::optional<Tensor>& static_v = std::nullopt, bool average_attn_weights = true, bool is_causal = false,
    bool batch_first = false);

// ---- losses (src/nn/functional/loss.cpp). reduction: "mean", "sum" or "none".
// target: class indices (int64, shape (N) or (N, d1, ...)) or class probabilities (same shape as input).
Tensor cross_entropy(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight = std::nullopt,
                     int64_t ignore_index = -100, const std::string& reduction = "mean", double label_smoothing = 0.0);
Tensor nll_loss(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight = std::nullopt,
                int64_t ignore_index = -100, const std::string& reduction = "mean");
Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean");
Tensor l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean");
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean", double beta = 1.0);
Tensor huber_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean", double delta = 1.0);
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight = std::nullopt,
                            const std::string& reduction = "mean");
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const std::optional<Tensor>& weight = std::nullopt,
                                        const std::string& reduction = "mean",
                                        const std::optional<Tensor>& pos_weight = std::nullopt);
// input holds log-probabilities; log_target says whether target does too. "batchmean" divides by N.
Tensor kl_div(const Tensor& input, const Tensor& target, const std::string& reduction = "mean", bool log_target = false);

}  // namespace ember::nn::functional

namespace ember::nn::init {
// torch.nn.init: in-place, under no_grad, return the tensor. gen: optional Generator.
double calculate_gain(const std::string& nonlinearity, std::optional<double> param = std::nullopt);
Tensor& uniform_(Tensor& t, double a = 0.0, double b = 1.0, Generator* gen = nullptr);
Tensor& normal_(Tensor& t, double mean = 0.0, double std = 1.0, Generator* gen = nullptr);
Tensor& constant_(Tensor& t, double value);
Tensor& zeros_(Tensor& t);
Tensor& ones_(Tensor& t);
Tensor& eye_(Tensor& t);
Tensor& xavier_uniform_(Tensor& t, double gain = 1.0, Generator* gen = nullptr);
Tensor& xavier_normal_(Tensor& t, double gain = 1.0, Generator* gen = nullptr);
// mode "fan_in" or "fan_out"; nonlinearity "leaky_relu" (with a) or "relu", ...
Tensor& kaiming_uniform_(Tensor& t, double a = 0.0, const std::string& mode = "fan_in",
                         const std::string& nonlinearity = "leaky_relu", Generator* gen = nullptr);
Tensor& kaiming_normal_(Tensor& t, double a = 0.0, const std::string& mode = "fan_in",
                        const std::string& nonlinearity = "leaky_relu", Generator* gen = nullptr);
Tensor& trunc_normal_(Tensor& t, double mean = 0.0, double std = 1.0, double a = -2.0, double b = 2.0,
                      Generator* gen = nullptr);
Tensor& orthogonal_(Tensor& t, double gain = 1.0, Generator* gen = nullptr);
// (fan_in, fan_out) as torch.nn.init._calculate_fan_in_and_fan_out.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t);
}  // namespace ember::nn::init
