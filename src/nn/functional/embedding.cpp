// embedding (torch.nn.functional.embedding) with torch's options:
//   - padding_idx: that row is looked up as usual but never receives a gradient;
//   - max_norm: before the lookup, every row the indices name whose norm_type-norm exceeds
//     max_norm is scaled in place to max_norm / (norm + 1e-7) of itself, without autograd
//     (torch's embedding_renorm_, which also bumps weight's version);
//   - scale_grad_by_freq: each looked-up row's gradient is divided by how many times its index
//     occurs in this batch.
// The plain lookup is ember::embedding (src/ops/index.cpp); the frequency-scaled one records its
// own gradient here, written with differentiable ops (double backward).
#include "ember/dispatch/op_recording.h"
#include "autograd/record.h"
#include "ember/autograd/grad_mode.h"
#include "ember/nn/functional.h"

namespace ember::nn::functional {

namespace {

void embedding_renorm_(const Tensor& weight, const Tensor& indices, double max_norm, double norm_type) {
  NoGradGuard no_grad;
  Tensor rows_idx = std::get<0>(unique(indices.reshape({-1}).to(kInt64)));
  if (rows_idx.numel() == 0) return;
  Tensor rows = weight.index_select(0, rows_idx);
  Tensor norms = rows.norm(norm_type, {1}, true);
  Tensor scale = where(norms > max_norm, max_norm / (norms + 1e-7), Scalar(1.0));
  Tensor w = weight;
  w.index_put_({std::optional<Tensor>(rows_idx)}, rows * scale);
}

Tensor embedding_freq_scaled(const Tensor& weight, const Tensor& indices, std::optional<int64_t> pad) {
  Tensor out = ember::embedding(weight.detach(), indices, pad);  // the lookup without a history of its own
  autograd::record("EmbeddingBackward0", {weight}, {out}, {autograd::saved_input(indices)},
                   [ws = Shape(weight.sizes()), pad](const autograd::variable_list& g,
                                                       autograd::LambdaNode& n) -> autograd::variable_list {
                     Tensor idx = n.unpack(0).reshape({-1}).to(kInt64);
                     Tensor rows = g[0].reshape({-1, ws[1]});
                     if (pad) rows = rows.masked_fill((idx == *pad).unsqueeze(1), 0);
                     Tensor counts = bincount(idx, std::nullopt, ws[0]).index_select(0, idx);
                     rows = rows / counts.unsqueeze(1).to(rows.dtype());
                     Tensor r = zeros(ws, {.dtype = g[0].dtype(), .device = g[0].device()});
                     r.index_add_(0, idx, rows);
                     return {r};
                   });
  return out;
}

}  // namespace

Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx,
                 std::optional<double> max_norm, double norm_type, bool scale_grad_by_freq) {
  EMBER_RECORD_COMPOSITE("embedding", weight, indices, padding_idx, scale_grad_by_freq);
  if (padding_idx) {
    int64_t n = weight.sizes()[0];
    int64_t pi = *padding_idx;
    if (pi > 0) EMBER_CHECK_VALUE(pi < n, "Padding_idx must be within num_embeddings");
    else if (pi < 0) {
      EMBER_CHECK_VALUE(pi >= -n, "Padding_idx must be within num_embeddings");
      pi += n;
    }
    padding_idx = pi;
  }
  if (max_norm) {
    EMBER_CHECK(weight.dim() == 2, "'weight' must be 2-D");
    EMBER_CHECK(indices.dtype() == kInt64 || indices.dtype() == kInt32,
                "Expected tensor for argument #2 'indices' to have one of the following scalar types: Long, Int; "
                "but got ", dtype_name(indices.dtype()), " instead (while checking arguments for embedding_renorm_)");
    embedding_renorm_(weight, indices.contiguous(), *max_norm, norm_type);
  }
  if (scale_grad_by_freq && weight.requires_grad() && autograd::GradMode::is_enabled()) {
    EMBER_CHECK(weight.dim() == 2, "'weight' must be 2-D");
    EMBER_CHECK(indices.dtype() == kInt64 || indices.dtype() == kInt32,
                "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; "
                "but got ", dtype_name(indices.dtype()), " instead (while checking arguments for embedding)");
    return embedding_freq_scaled(weight, indices, padding_idx);
  }
  return ember::embedding(weight, indices, padding_idx);
}

}  // namespace ember::nn::functional
