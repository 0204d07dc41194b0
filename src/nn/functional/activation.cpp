// Activations, dropout and one_hot (embedding: embedding.cpp) (torch.nn.functional). Most activations are
// dispatched ops already (src/ops/unary.cpp, softmax.cpp) with their own gradients; elu,
// softplus and relu6 are composites of differentiable ops, written so that the branch not
// taken never produces inf/NaN (its gradient would otherwise poison the taken one).
#include <sstream>

#include "ember/dispatch/op_recording.h"
#include "amp/autocast.h"
#include "ember/autograd/grad_mode.h"
#include "ember/nn/functional.h"

namespace ember::nn::functional {

Tensor relu(const Tensor& x) { return ember::relu(x); }
// PyTorch's relu6 is hardtanh(x, 0, 6): gradient 1 strictly inside (0, 6), 0 outside.
Tensor relu6(const Tensor& x) { return ember::clamp(x, Scalar(0.0), Scalar(6.0)); }
Tensor leaky_relu(const Tensor& x, double negative_slope) { return ember::leaky_relu(x, negative_slope); }
Tensor gelu(const Tensor& x, const std::string& approximate) { return ember::gelu(x, approximate); }
Tensor silu(const Tensor& x) { return ember::silu(x); }
Tensor sigmoid(const Tensor& x) { return ember::sigmoid(x); }
Tensor tanh(const Tensor& x) { return ember::tanh(x); }
Tensor softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype) { return ember::softmax(x, dim, dtype); }
Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  return ember::log_softmax(x, dim, dtype);
}

// elu(x) = x for x > 0, alpha * (exp(x) - 1) otherwise. The negative branch reads
// where(x > 0, 0, x), not clamp: clamp passes no gradient at its bound, and at x = 0 torch's
// gradient is the negative branch's, alpha.
Tensor elu(const Tensor& x, double alpha) {
  Tensor pos = x.gt(0.0);
  Tensor neg = ember::expm1(ember::where(pos, ember::zeros_like(x), x));
  return ember::where(pos, x, neg * alpha);
}

// softplus(x) = log(1 + exp(beta x)) / beta, and x itself where beta x > threshold.
Tensor softplus(const Tensor& x, double beta, double threshold) {
  EMBER_RECORD_COMPOSITE("softplus", x, beta, threshold);
  EMBER_AUTOCAST(softplus, x, beta, threshold);
  Tensor bx = beta == 1.0 ? x : x * beta;
  Tensor above = bx.gt(threshold);  // where, not clamp: at bx == threshold the soft branch's gradient
  Tensor soft = ember::log1p(ember::exp(ember::where(above, ember::full_like(bx, threshold), bx)));
  if (beta != 1.0) soft = soft / beta;
  return ember::where(above, x, soft);
}

namespace {
void check_p(double p) {
  if (!(p >= 0.0 && p <= 1.0)) {
    std::ostringstream os;
    os << "dropout probability has to be between 0 and 1, but got " << p;
    EMBER_CHECK_VALUE(false, os.str());
  }
}
// x * (mask / (1 - p)) with a Bernoulli(1 - p) mask of shape mask_shape (broadcast over x), as
// torch's _dropout_impl: the mask takes x's layout when it has x's shape (the draws follow
// memory order), and is divided by 1 - p in x's dtype before the product.
Tensor apply_dropout(const Tensor& x, double p, IntArrayRef mask_shape, Generator* gen) {
  DType dt = is_floating(x.dtype()) ? x.dtype() : kFloat32;
  if (p == 1.0) return x * zeros({}, {.dtype = dt, .device = x.device()});
  Tensor mask;
  {
    NoGradGuard no_grad;
    mask = mask_shape == x.sizes() ? empty_like_layout(x, {.dtype = dt})
                                        : empty(mask_shape, {.dtype = dt, .device = x.device()});
    bernoulli_(mask, 1.0 - p, gen);
    mask.div_(Scalar(1.0 - p));
  }
  return x * mask;
}
}  // namespace

Tensor dropout(const Tensor& x, double p, bool training, Generator* gen) {
  EMBER_RECORD_COMPOSITE("dropout", x, p, training);
  check_p(p);
  if (!training || p == 0.0) return x;
  return apply_dropout(x, p, x.sizes(), gen);
}

// PyTorch's feature_dropout: one draw per (dim 0, dim 1) slice. A 3-D input is treated as
// (N, C, L), as torch.nn.functional.dropout2d does (it warns about it).
Tensor dropout2d(const Tensor& x, double p, bool training, Generator* gen) {
  check_p(p);
  if (!training || p == 0.0) return x;
  EMBER_CHECK(x.dim() >= 2, "Feature dropout requires at least 2 dimensions in the input");
  Shape ms(x.dim(), 1);
  ms[0] = x.sizes()[0];
  ms[1] = x.sizes()[1];
  return apply_dropout(x, p, ms, gen);
}

Tensor one_hot(const Tensor& indices, int64_t num_classes) { return ember::one_hot(indices, num_classes); }

}  // namespace ember::nn::functional

namespace ember::nn::functional {

// Gated linear unit: the first half of input along dim times the sigmoid of the second half.
Tensor glu(const Tensor& input, int64_t dim) {
  EMBER_CHECK(input.dim() > 0, "glu does not support scalars because halving size must be even");
  const int64_t d = dim < 0 ? dim + input.dim() : dim;
  EMBER_CHECK(d >= 0 && d < input.dim(), "Dimension out of range (expected to be in range of [", -input.dim(), ", ",
              input.dim() - 1, "], but got ", dim, ")");
  const int64_t n = input.sizes()[size_t(d)];
  EMBER_CHECK(n % 2 == 0, "Halving dimension must be even, but dimension ", d, " is size ", n);
  return input.narrow(d, 0, n / 2) * input.narrow(d, n / 2, n / 2).sigmoid();
}

}  // namespace ember::nn::functional
