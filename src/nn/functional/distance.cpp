// pairwise_distance and cosine_similarity (torch.nn.functional), as ATen computes them.
#include "ember/dispatch/op_recording.h"
#include "amp/autocast.h"
#include "ember/nn/functional.h"

namespace ember::nn::functional {

// ||x1 - x2 + eps||_p over the last dim of the broadcast inputs (the norm of one element for
// two scalars).
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p, double eps, bool keepdim) {
  const int64_t out_dim = std::max(x1.dim(), x2.dim());
  Tensor diff = x1 - x2 + eps;
  if (out_dim == 0) return diff.abs();
  return diff.norm(p, {out_dim - 1}, keepdim);
}

// Each input divided by its own norm first (so the result stays within [-1, 1]), then the dot
// product over dim. The norms are clamped to eps invisibly to autograd: torch clamps them in
// place under no_grad, so the gradient is that of the unclamped norm.
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim, double eps) {
  EMBER_RECORD_COMPOSITE("cosine_similarity", x1, x2, dim, eps);
  EMBER_AUTOCAST(cosine_similarity, x1, x2, dim, eps);
  auto b = broadcast_tensors({x1, x2});
  auto clamped_norm = [&](const Tensor& x) {
    Tensor n = x.norm(2, {dim}, true);
    Tensor nd = n.detach();
    return n + (nd.clamp_min(eps) - nd);
  };
  return ((b[0] / clamped_norm(b[0])) * (b[1] / clamped_norm(b[1]))).sum({dim});
}

}  // namespace ember::nn::functional
