// nn::functional normalisation: layer_norm, rms_norm, group_norm, batch_norm against naive
// float64 references, gradients (gradcheck / gradgradcheck), running statistics and errors.
#include <cmath>

#include "ember/nn/functional.h"
#include "gradcheck.h"

namespace F = ember::nn::functional;
using namespace ember;
using namespace ember::testing;

namespace {

Tensor rnd(IntArrayRef shape, DType dt, uint64_t seed, double lo = -2.0, double hi = 2.0) {
  Generator g(seed);
  Tensor t = host_uniform(shape, lo, hi, g);
  return t.to(dt);
}

// Rows of `inner` elements: y = (x - mean) / sqrt(var + eps) * w + b (w, b per inner index),
// or x / sqrt(mean(x^2) + eps) * w for rms.
Ref ref_rownorm(const Ref& x, int64_t inner, const std::vector<double>* w, const std::vector<double>* b, double eps,
                bool rms = false) {
  Ref out = x;
  int64_t rows = inner ? x.numel() / inner : 0;
  for (int64_t r = 0; r < rows; ++r) {
    const double* p = x.v.data() + r * inner;
    double mu = 0, var = 0;
    for (int64_t j = 0; j < inner; ++j) mu += p[j];
    mu /= inner;
    if (rms) {
      for (int64_t j = 0; j < inner; ++j) var += p[j] * p[j];
      mu = 0;
    } else {
      for (int64_t j = 0; j < inner; ++j) var += (p[j] - mu) * (p[j] - mu);
    }
    var /= inner;
    for (int64_t j = 0; j < inner; ++j) {
      double y = (p[j] - mu) / std::sqrt(var + eps);
      if (w) y *= (*w)[j];
      if (b) y += (*b)[j];
      out.v[r * inner + j] = y;
    }
  }
  return out;
}

Tensor gin(IntArrayRef shape, uint64_t seed) { return rnd(shape, kFloat64, seed).requires_grad_(); }

}  // namespace

// ---------------------------------------------------------------- layer_norm
EMBER_DEVICE_TEST(NNNorm, LayerNormForward) {
  for (DType dt : {kFloat32, kFloat64}) {
    for (bool affine : {false, true}) {
      for (bool transposed : {false, true}) {
        for (int k : {1, 2}) {
          Tensor x = transposed ? rnd({4, 6, 5}, dt, 1).transpose(1, 2) : rnd({4, 5, 6}, dt, 1);
          ASSERT_EQ(x.sizes()[1], 5);
          Shape ns = k == 1 ? Shape{6} : Shape{5, 6};
          Tensor w = rnd(ns, dt, 2), b = rnd(ns, dt, 3);
          std::optional<Tensor> ow, ob;
          if (affine) ow = w, ob = b;
          Tensor y = F::layer_norm(x, ns, ow, ob, 1e-5);
          auto wv = w.tolist<double>(), bv = b.tolist<double>();
          Ref ref = ref_rownorm(ref_of(x), k == 1 ? 6 : 30, affine ? &wv : nullptr, affine ? &bv : nullptr, 1e-5);
          EXPECT_TRUE(close_to(y, ref, dt)) << dtype_name(dt) << " affine=" << affine << " T=" << transposed
                                            << " k=" << k;
          EXPECT_EQ(y.dtype(), dt);
        }
      }
    }
  }
}

EMBER_DEVICE_TEST(NNNorm, LayerNormOnlyWeightOrBiasAndLargeRows) {
  Tensor x = rnd({3, 4100}, kFloat32, 5);  // rows longer than one accumulation block
  Tensor w = rnd({4100}, kFloat32, 6);
  auto wv = w.tolist<double>();
  EXPECT_TRUE(close_to(F::layer_norm(x, {4100}, w), ref_rownorm(ref_of(x), 4100, &wv, nullptr, 1e-5), kFloat32));
  Tensor b = rnd({4100}, kFloat32, 7);
  auto bv = b.tolist<double>();
  EXPECT_TRUE(close_to(F::layer_norm(x, {4100}, std::nullopt, b, 1e-3),
                       ref_rownorm(ref_of(x), 4100, nullptr, &bv, 1e-3), kFloat32));
}

EMBER_DEVICE_TEST(NNNorm, LayerNormLargeMeanIsAccurate) {
  // Unit spread around a large mean: a naive E[x^2] - E[x]^2 in float32 loses the variance.
  Tensor x = (rnd({2, 512}, kFloat64, 8) * 0.5 + 1000.0).to(kFloat32);
  Tensor y = F::layer_norm(x, {512});
  Ref ref = ref_rownorm(ref_of(x), 512, nullptr, nullptr, 1e-5);
  auto got = y.tolist<double>();
  double maxerr = 0;
  for (size_t i = 0; i < got.size(); ++i) maxerr = std::max(maxerr, std::abs(got[i] - ref.v[i]));
  EXPECT_LT(maxerr, 1e-2);
}

EMBER_DEVICE_TEST(NNNorm, LayerNormReducedFloat) {
  Tensor x = rnd({3, 16}, kFloat32, 9);
  Tensor y = F::layer_norm(x.to(kBFloat16), {16});
  EXPECT_EQ(y.dtype(), kBFloat16);
  EXPECT_TRUE(close_to(y, ref_rownorm(ref_of(x.to(kBFloat16)), 16, nullptr, nullptr, 1e-5), kBFloat16));
}

EMBER_DEVICE_TEST(NNNorm, LayerNormEmptyRows) {
  Tensor y = F::layer_norm(zeros({0, 4}), {4});
  EXPECT_EQ(y.sizes(), (Shape{0, 4}));
}

EMBER_DEVICE_TEST(NNNorm, LayerNormErrors) {
  EXPECT_THROW_MSG(F::layer_norm(zeros({2, 3}), {4}), Error,
                   "Given normalized_shape=[4], expected input with shape [*, 4], but got input of size[2, 3]");
  EXPECT_THROW_MSG(F::layer_norm(zeros({3}), {2, 3}), Error,
                   "Given normalized_shape=[2, 3], expected input with shape [*, 2, 3], but got input of size[3]");
  EXPECT_THROW_MSG(F::layer_norm(zeros({2, 3}), {3}, zeros({4})), Error,
                   "Expected weight to be of same shape as normalized_shape, but got weight of shape [4] and "
                   "normalized_shape = [3]");
  EXPECT_THROW_MSG(F::layer_norm(zeros({2, 3}), {3}, std::nullopt, zeros({2})), Error,
                   "Expected bias to be of same shape as normalized_shape");
  EXPECT_THROW_MSG(F::layer_norm(zeros({2, 3}), {}), Error, "Expected normalized_shape to be at least 1-dimensional");
}

EMBER_DEVICE_TEST(NNNorm, LayerNormGrad) {
  Tensor x = gin({3, 2, 4}, 11), w = gin({2, 4}, 12), b = gin({2, 4}, 13);
  auto f = [](const variable_list& in) { return F::layer_norm(in[0], {2, 4}, in[1], in[2]); };
  EXPECT_TRUE(gradcheck(f, {x, w, b}));
  EXPECT_TRUE(gradgradcheck(f, {x, w, b}));
  auto f1 = [](const variable_list& in) { return F::layer_norm(in[0], {4}); };
  EXPECT_TRUE(gradcheck(f1, {x}));
  EXPECT_TRUE(gradgradcheck(f1, {x}));
  // non-contiguous input, weight only
  Tensor xt = rnd({4, 3}, kFloat64, 14).t().requires_grad_();
  Tensor w4 = gin({4}, 15);
  auto f2 = [](const variable_list& in) { return F::layer_norm(in[0], {4}, in[1]); };
  EXPECT_TRUE(gradcheck(f2, {xt, w4}));
  EXPECT_TRUE(gradgradcheck(f2, {xt, w4}));
}

EMBER_DEVICE_TEST(NNNorm, LayerNormGradFloat32MatchesFloat64) {
  Tensor x64 = gin({5, 7}, 16);
  Tensor x32 = x64.detach().to(kFloat32).requires_grad_();
  Tensor gout = rnd({5, 7}, kFloat64, 17);
  auto g64 = autograd::grad({F::layer_norm(x64, {7})}, {x64}, {gout})[0];
  auto g32 = autograd::grad({F::layer_norm(x32, {7})}, {x32}, {gout.to(kFloat32)})[0];
  EXPECT_EQ(g32.dtype(), kFloat32);
  EXPECT_TRUE(close_to(g32, ref_of(g64), kFloat32));
}

EMBER_DEVICE_TEST(NNNorm, LayerNormFusedBackwardMatchesOpFormula) {
  // Without create_graph the fused backward kernel runs; with it, the formula in ember ops.
  for (int variant = 0; variant < 3; ++variant) {
    Tensor x = gin({37, 3, 130}, 18), w = gin({3, 130}, 19), b = gin({3, 130}, 20);
    Tensor gout = rnd({37, 3, 130}, kFloat64, 21);
    std::optional<Tensor> ow = variant != 1 ? std::optional<Tensor>(w) : std::nullopt;
    std::optional<Tensor> ob = variant != 2 ? std::optional<Tensor>(b) : std::nullopt;
    variable_list in{x};
    if (ow) in.push_back(w);
    if (ob) in.push_back(b);
    auto fused = autograd::grad({F::layer_norm(x, {3, 130}, ow, ob)}, in, {gout}, true, false);
    auto ops_ = autograd::grad({F::layer_norm(x, {3, 130}, ow, ob)}, in, {gout}, true, true);
    ASSERT_EQ(fused.size(), ops_.size());
    for (size_t i = 0; i < fused.size(); ++i)
      EXPECT_TRUE(close_to(fused[i], ref_of(ops_[i]), kFloat64)) << "variant " << variant << " grad " << i;
  }
  // only the weight's gradient asked for
  Tensor x = rnd({5, 8}, kFloat64, 22), w = gin({8}, 23);
  Tensor gw = autograd::grad({F::layer_norm(x, {8}, w).sum()}, {w})[0];
  Ref xr = ref_rownorm(ref_of(x), 8, nullptr, nullptr, 1e-5);
  Ref expect{{8}, std::vector<double>(8, 0.0)};
  for (int64_t i = 0; i < 40; ++i) expect.v[i % 8] += xr.v[i];
  EXPECT_TRUE(close_to(gw, expect));
}

// ---------------------------------------------------------------- rms_norm
EMBER_DEVICE_TEST(NNNorm, RmsNormForward) {
  for (DType dt : {kFloat32, kFloat64}) {
    for (bool affine : {false, true}) {
      Tensor x = rnd({6, 4}, dt, 20).t();  // non-contiguous (4, 6)
      Tensor w = rnd({6}, dt, 21);
      auto wv = w.tolist<double>();
      Tensor y = affine ? F::rms_norm(x, {6}, w, 1e-6) : F::rms_norm(x, {6}, std::nullopt, 1e-6);
      EXPECT_TRUE(close_to(y, ref_rownorm(ref_of(x), 6, affine ? &wv : nullptr, nullptr, 1e-6, true), dt));
    }
  }
  // default eps: finfo(dtype).eps
  Tensor tiny = full({1, 2}, 1e-5, {.dtype = kFloat64});
  double eps = std::numeric_limits<double>::epsilon();
  EXPECT_NEAR(F::rms_norm(tiny, {2}).tolist<double>()[0], 1e-5 / std::sqrt(1e-10 + eps), 1e-9);
  EXPECT_THROW_MSG(F::rms_norm(zeros({2, 3}), {4}), Error,
                   "Given normalized_shape=[4], expected input with shape [*, 4], but got input of size[2, 3]");
}

EMBER_DEVICE_TEST(NNNorm, RmsNormGrad) {
  Tensor x = gin({3, 5}, 22), w = gin({5}, 23);
  auto f = [](const variable_list& in) { return F::rms_norm(in[0], {5}, in[1], 1e-6); };
  EXPECT_TRUE(gradcheck(f, {x, w}));
  EXPECT_TRUE(gradgradcheck(f, {x, w}));
}

// The fused backward (native_rms_norm_backward, without create_graph) against the differentiable
// composite (create_graph): 2-d and 3-d inputs, a 2-d normalized shape, a transposed input, with
// and without a weight, each gradient alone, and more rows than its 64 blocks.
TEST(NNNorm, RmsNormFusedBackwardMatchesTheComposite) {
  struct Case {
    Shape shape, normalized;
    bool weight, x_grad, w_grad, transposed;
  };
  for (const Case& c : {Case{{300, 24}, {24}, true, true, true, false}, Case{{4, 5, 6}, {5, 6}, true, true, true, false},
                        Case{{7, 9}, {9}, false, true, false, false}, Case{{9, 7}, {9}, true, true, true, true},
                        Case{{65, 3}, {3}, true, false, true, false}, Case{{3, 8}, {8}, true, true, false, false}}) {
    for (DType dt : {kFloat32, kFloat64}) {
      Tensor x = randn(c.shape, {.dtype = dt});
      if (c.transposed) x = x.t();
      x.requires_grad_(c.x_grad);
      Tensor w = c.weight ? randn(c.normalized, {.dtype = dt}).requires_grad_(c.w_grad) : Tensor();
      Tensor up = randn(x.sizes(), {.dtype = dt});
      std::optional<Tensor> wo = c.weight ? std::optional<Tensor>(w) : std::nullopt;
      variable_list wrt;
      if (c.x_grad) wrt.push_back(x);
      if (c.weight && c.w_grad) wrt.push_back(w);
      auto fused = autograd::grad({(F::rms_norm(x, c.normalized, wo, 1e-6) * up).sum()}, wrt);
      auto composite = autograd::grad({(F::rms_norm(x, c.normalized, wo, 1e-6) * up).sum()}, wrt, {}, true, true);
      ASSERT_EQ(fused.size(), composite.size());
      for (size_t i = 0; i < fused.size(); ++i)
        EXPECT_TRUE(fused[i].allclose(composite[i].detach(), dt == kFloat32 ? 1e-4 : 1e-10, dt == kFloat32 ? 1e-5 : 1e-12))
            << "shape " << c.shape[0] << " gradient " << i;
    }
  }
}

// ---------------------------------------------------------------- group_norm
EMBER_DEVICE_TEST(NNNorm, GroupNormForward) {
  for (DType dt : {kFloat32, kFloat64}) {
    for (bool affine : {false, true}) {
      Tensor x = rnd({2, 6, 3, 2}, dt, 30);
      Tensor w = rnd({6}, dt, 31), b = rnd({6}, dt, 32);
      Tensor y = affine ? F::group_norm(x, 3, w, b) : F::group_norm(x, 3);
      // reference: groups of 2 channels x 6 spatial = 12 elements, then per-channel affine
      Ref ref = ref_rownorm(ref_of(x), 12, nullptr, nullptr, 1e-5);
      if (affine) {
        auto wv = w.tolist<double>(), bv = b.tolist<double>();
        for (int64_t i = 0; i < ref.numel(); ++i) {
          int64_t c = (i / 6) % 6;
          ref.v[i] = ref.v[i] * wv[c] + bv[c];
        }
      }
      EXPECT_TRUE(close_to(y, ref, dt)) << dtype_name(dt) << " affine=" << affine;
    }
  }
  // non-contiguous input: same values as its contiguous copy
  Tensor xt = rnd({2, 4, 6}, kFloat64, 33).transpose(1, 2);  // (2, 6, 4)
  EXPECT_TRUE(close_to(F::group_norm(xt, 2), ref_of(F::group_norm(xt.contiguous(), 2))));
}

EMBER_DEVICE_TEST(NNNorm, GroupNormGradAndErrors) {
  Tensor x = gin({2, 4, 3}, 34), w = gin({4}, 35), b = gin({4}, 36);
  auto f = [](const variable_list& in) { return F::group_norm(in[0], 2, in[1], in[2]); };
  EXPECT_TRUE(gradcheck(f, {x, w, b}));
  EXPECT_TRUE(gradgradcheck(f, {x, w, b}));
  EXPECT_THROW_MSG(F::group_norm(zeros({2, 6, 4}), 4), Error,
                   "Expected number of channels in input to be divisible by num_groups, but got input of shape "
                   "[2, 6, 4] and num_groups=4");
  EXPECT_THROW_MSG(F::group_norm(zeros({2, 6, 4}), 3, zeros({5})), Error,
                   "Expected weight to be a vector of size equal to the number of channels in input, but got "
                   "weight of shape [5] and input of shape [2, 6, 4]");
}

// ---------------------------------------------------------------- batch_norm
namespace {
// Per-channel (mean, biased var) of an (N, C, L) tensor.
std::pair<std::vector<double>, std::vector<double>> channel_stats(const Tensor& x) {
  Ref r = ref_of(x);
  int64_t n = x.sizes()[0], c = x.sizes()[1], l = x.numel() / (n * c);
  std::vector<double> mu(c, 0), var(c, 0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t j = 0; j < l; ++j) mu[ch] += r.v[(i * c + ch) * l + j];
  for (auto& m : mu) m /= double(n * l);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t j = 0; j < l; ++j) var[ch] += std::pow(r.v[(i * c + ch) * l + j] - mu[ch], 2);
  for (auto& v : var) v /= double(n * l);
  return {mu, var};
}
Ref ref_bn(const Tensor& x, const std::vector<double>& mu, const std::vector<double>& var,
           const std::vector<double>& w, const std::vector<double>& b, double eps) {
  Ref r = ref_of(x);
  int64_t n = x.sizes()[0], c = x.sizes()[1], l = x.numel() / (n * c);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t j = 0; j < l; ++j) {
        double& v = r.v[(i * c + ch) * l + j];
        v = (v - mu[ch]) / std::sqrt(var[ch] + eps) * w[ch] + b[ch];
      }
  return r;
}
}  // namespace

EMBER_DEVICE_TEST(NNNorm, BatchNormTrainingUpdatesRunningStats) {
  for (DType dt : {kFloat32, kFloat64}) {
    Tensor rm = zeros({3}, {.dtype = dt}), rv = ones({3}, {.dtype = dt});
    Tensor w = rnd({3}, dt, 40), b = rnd({3}, dt, 41);
    std::vector<double> em(3, 0.0), ev(3, 1.0);
    const double momentum = 0.2;
    for (int step = 0; step < 3; ++step) {
      Tensor x = rnd({4, 3, 2, 3}, dt, 42 + step, -1.0, 3.0);
      Tensor y = F::batch_norm(x, rm, rv, w, b, /*training=*/true, momentum, 1e-5);
      auto [mu, var] = channel_stats(x.reshape({4, 3, 6}));
      EXPECT_TRUE(close_to(y.reshape({4, 3, 6}),
                           ref_bn(x.reshape({4, 3, 6}), mu, var, w.tolist<double>(), b.tolist<double>(), 1e-5), dt));
      const double cnt = 4 * 6;
      for (int c = 0; c < 3; ++c) {
        em[c] = (1 - momentum) * em[c] + momentum * mu[c];
        ev[c] = (1 - momentum) * ev[c] + momentum * var[c] * cnt / (cnt - 1);  // unbiased
      }
      EXPECT_TRUE(close_to(rm, Ref{{3}, em}, dt)) << "step " << step;
      EXPECT_TRUE(close_to(rv, Ref{{3}, ev}, dt)) << "step " << step;
    }
    // eval: running statistics, which stay unchanged
    Tensor x = rnd({2, 3, 4}, dt, 50);
    Tensor y = F::batch_norm(x, rm, rv, w, b, /*training=*/false, momentum, 1e-5);
    EXPECT_TRUE(close_to(y, ref_bn(x, em, ev, w.tolist<double>(), b.tolist<double>(), 1e-5), dt));
    EXPECT_TRUE(close_to(rm, Ref{{3}, em}, dt));
  }
}

EMBER_DEVICE_TEST(NNNorm, BatchNormWithoutRunningStatsAndNonContiguous) {
  Tensor x = rnd({3, 5, 2}, kFloat64, 60).transpose(0, 2);  // (2, 5, 3) non-contiguous
  auto [mu, var] = channel_stats(x);
  std::vector<double> one(5, 1.0), zero(5, 0.0);
  // None running stats: batch statistics in eval too
  EXPECT_TRUE(close_to(F::batch_norm(x, std::nullopt, std::nullopt, std::nullopt, std::nullopt, false),
                       ref_bn(x, mu, var, one, zero, 1e-5)));
  EXPECT_TRUE(close_to(F::batch_norm(x, std::nullopt, std::nullopt, std::nullopt, std::nullopt, true),
                       ref_bn(x, mu, var, one, zero, 1e-5)));
  // 2-D input (N, C)
  Tensor x2 = rnd({6, 4}, kFloat32, 61);
  auto [m2, v2] = channel_stats(x2.reshape({6, 4, 1}));
  EXPECT_TRUE(close_to(F::batch_norm(x2, std::nullopt, std::nullopt, std::nullopt, std::nullopt, true),
                       Ref{{6, 4}, ref_bn(x2.reshape({6, 4, 1}), m2, v2, std::vector<double>(4, 1.0),
                                          std::vector<double>(4, 0.0), 1e-5).v},
                       kFloat32));
}

// The fused kernel has two layouts ((N, C, S) planes and (N, C) rows) and output masks: both
// layouts, with and without weight/bias, against the numerical gradient; bfloat16 input
// computes in float32: the float32 result of the same (rounded) input, to bfloat16 precision.
EMBER_DEVICE_TEST(NNNorm, BatchNormFusedKernelLayouts) {
  for (Shape shape : {Shape{5, 3}, Shape{4, 3, 5}, Shape{2, 3, 2, 3}}) {
    SCOPED_TRACE(::testing::Message() << "rank " << shape.size());
    Tensor x = gin(shape, 80), w = gin({3}, 81), b = gin({3}, 82);
    auto affine = [](const variable_list& in) {
      return F::batch_norm(in[0], std::nullopt, std::nullopt, in[1], in[2], true);
    };
    auto plain = [](const variable_list& in) {
      return F::batch_norm(in[0], std::nullopt, std::nullopt, std::nullopt, std::nullopt, true);
    };
    EXPECT_TRUE(gradcheck(affine, {x, w, b}));
    EXPECT_TRUE(gradcheck(plain, {x}));
    auto [mu, var] = channel_stats(x.detach().reshape({shape[0], 3, -1}));
    Tensor y = F::batch_norm(x.detach(), std::nullopt, std::nullopt, w.detach(), b.detach(), true);
    EXPECT_TRUE(close_to(y.reshape({shape[0], 3, -1}), ref_bn(x.detach().reshape({shape[0], 3, -1}), mu, var,
                                                             w.tolist<double>(), b.tolist<double>(), 1e-5)));
    Tensor xb = x.detach().to(kBFloat16);
    Tensor yf = F::batch_norm(xb.to(kFloat32), std::nullopt, std::nullopt, std::nullopt, std::nullopt, true);
    Tensor yb = F::batch_norm(xb, std::nullopt, std::nullopt, std::nullopt, std::nullopt, true);
    EXPECT_EQ(yb.dtype(), kBFloat16);
    EXPECT_TRUE(close_to(yb, ref_of(yf.to(kFloat64)), kBFloat16));
  }
}

EMBER_DEVICE_TEST(NNNorm, BatchNormGradAndErrors) {
  Tensor x = gin({3, 2, 2}, 70), w = gin({2}, 71), b = gin({2}, 72);
  auto train = [](const variable_list& in) {
    return F::batch_norm(in[0], std::nullopt, std::nullopt, in[1], in[2], true);
  };
  EXPECT_TRUE(gradcheck(train, {x, w, b}));
  EXPECT_TRUE(gradgradcheck(train, {x, w, b}));
  Tensor rm = rnd({2}, kFloat64, 73), rv = rnd({2}, kFloat64, 74, 0.5, 2.0);
  auto eval = [rm, rv](const variable_list& in) { return F::batch_norm(in[0], rm, rv, in[1], in[2], false); };
  EXPECT_TRUE(gradcheck(eval, {x, w, b}));
  EXPECT_THROW_MSG(F::batch_norm(zeros({2, 3}), zeros({4}), ones({3}), std::nullopt, std::nullopt, true), Error,
                   "running_mean should contain 3 elements not 4");
  EXPECT_THROW_MSG(F::batch_norm(zeros({2, 3}), zeros({3}), ones({5}), std::nullopt, std::nullopt, true), Error,
                   "running_var should contain 3 elements not 5");
  EXPECT_THROW_MSG(F::batch_norm(zeros({2, 3}), zeros({3}), ones({3}), ones({2}), std::nullopt, false), Error,
                   "weight should contain 3 elements not 2");
  EXPECT_THROW_MSG(F::batch_norm(zeros({1, 3}), zeros({3}), ones({3}), std::nullopt, std::nullopt, true), Error,
                   "Expected more than 1 value per channel when training");
}
