// searchsorted and bucketize: argument checks with torch's messages (kernels: cpu/search_kernels.cpp).
// The results are indices, so there is no gradient (as in torch).
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember {

Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool out_int32, bool right) {
  const bool leading_match = [&] {
    if (sorted_sequence.dim() == 1) return true;
    if (sorted_sequence.dim() != values.dim()) return false;
    for (int64_t d = 0; d + 1 < values.dim(); ++d)
      if (sorted_sequence.sizes()[d] != values.sizes()[d]) return false;
    return true;
  }();
  EMBER_CHECK(sorted_sequence.dim() >= 1 && leading_match,
              "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries "
              "tensor and input value tensor must match, but we got boundaries tensor ", sorted_sequence.sizes(),
              " and input value tensor ", values.sizes());
  EMBER_CHECK(sorted_sequence.dtype() != kBool && values.dtype() != kBool,
              "torch.searchsorted(): bool tensors are not supported");
  return ops::searchsorted()(sorted_sequence, values, out_int32, right);
}

Tensor bucketize(const Tensor& values, const Tensor& boundaries, bool out_int32, bool right) {
  EMBER_CHECK(boundaries.dim() == 1, "boundaries tensor must be 1 dimension, but got dim(", boundaries.dim(), ")");
  return searchsorted(boundaries, values, out_int32, right);
}

Tensor _standard_gamma_grad(const Tensor& alpha, const Tensor& x) { return ops::_standard_gamma_grad()(alpha, x); }

}  // namespace ember
