#pragma once
// Special functions and the elementwise/scan/search ops PyTorch programs reach through torch.special
// and torch.* (issue 15): lgamma, digamma, polygamma, erfinv, erfc, i0, i1, sinc are dispatched
// ops with kernels and gradients; the rest are composites of dispatched ops (their gradients
// come through their parts). Included by ember/ops.h.
#include <optional>
#include <tuple>

#include "ember/tensor.h"

namespace ember {

#define EMBER_SPECIAL_DECL(name) Tensor name(const Tensor& a); Tensor& name##_(Tensor& a);
EMBER_SPECIAL_DECL(lgamma) EMBER_SPECIAL_DECL(digamma) EMBER_SPECIAL_DECL(erfinv) EMBER_SPECIAL_DECL(erfc)
EMBER_SPECIAL_DECL(i0) EMBER_SPECIAL_DECL(i1) EMBER_SPECIAL_DECL(sinc)
#undef EMBER_SPECIAL_DECL
Tensor polygamma(int64_t n, const Tensor& a);
// Regularised lower / upper incomplete gamma P(a, x), Q(a, x) (torch.igamma / special.gammainc).
// Differentiable in x (the gradient in a is not implemented, as in torch).
Tensor igamma(const Tensor& a, const Tensor& x);
Tensor igammac(const Tensor& a, const Tensor& x);
Tensor i0e(const Tensor& a);  // exp(-|x|) i0(x)
Tensor i1e(const Tensor& a);  // exp(-|x|) i1(x)

// Two operands (broadcast, promoted).
Tensor xlogy(const Tensor& x, const Tensor& y);      // x * log(y), 0 where x == 0 (unless y is NaN)
Tensor xlog1py(const Tensor& x, const Tensor& y);    // x * log1p(y), 0 where x == 0 (unless y is NaN)
Tensor logaddexp(const Tensor& a, const Tensor& b);  // log(exp(a) + exp(b))
Tensor logaddexp2(const Tensor& a, const Tensor& b); // log2(2^a + 2^b)
Tensor heaviside(const Tensor& x, const Tensor& values);  // 0 below 0, values at 0, 1 above

Tensor logit(const Tensor& a, std::optional<double> eps = std::nullopt);  // log(p / (1 - p)), p clamped to [eps, 1 - eps]
Tensor entr(const Tensor& a);     // -x log x (0 at 0, -inf below 0)
Tensor deg2rad(const Tensor& a);
Tensor rad2deg(const Tensor& a);

// Index of each value in the last dim of sorted_sequence (1-D, or with values' leading dims): the
// first position whose element is >= value (> value with right), as torch.searchsorted.
Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool out_int32 = false, bool right = false);
Tensor bucketize(const Tensor& values, const Tensor& boundaries, bool out_int32 = false, bool right = false);
// d x / d alpha of x ~ Gamma(alpha, 1) at fixed quantile: Gamma/Beta/Dirichlet rsample's gradient.
Tensor _standard_gamma_grad(const Tensor& alpha, const Tensor& x);

std::tuple<Tensor, Tensor> cummax(const Tensor& a, int64_t dim);
std::tuple<Tensor, Tensor> cummin(const Tensor& a, int64_t dim);
Tensor logcumsumexp(const Tensor& a, int64_t dim);

}  // namespace ember
