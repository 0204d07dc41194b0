// pixel_shuffle / pixel_unshuffle / channel_shuffle, instance_norm, pairwise_distance,
// cosine_similarity and glu (nn::functional): values by hand or from their definitions,
// gradchecks, and PyTorch's error messages.
#include <cmath>

#include "ember/nn/functional.h"
#include "gradcheck.h"
#include "test_utils.h"

using namespace ember;
using namespace ember::testing;
namespace F = ember::nn::functional;

namespace {
Tensor rnd(IntArrayRef shape, uint64_t seed) {
  Generator g(seed);
  return host_randn(shape, g);
}
}  // namespace

EMBER_DEVICE_TEST(NNShuffle, PixelAndChannelShuffle) {
  // (1, 4, 1, 1) with r = 2: channel k lands at (k / 2, k % 2)
  Tensor x = arange(4.0).view({1, 4, 1, 1});
  Tensor y = F::pixel_shuffle(x, 2);
  EXPECT_EQ(y.sizes(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(y.reshape({-1}).tolist<double>(), (std::vector<double>{0, 1, 2, 3}));
  Tensor z = rnd({2, 3, 2, 4, 6}, 1);
  EXPECT_EQ(F::pixel_shuffle(F::pixel_unshuffle(z, 2), 2).tolist<double>(), z.tolist<double>());
  EXPECT_EQ(F::pixel_unshuffle(z, 2).sizes(), (Shape{2, 3, 8, 2, 3}));
  Tensor c = arange(6.0).view({1, 6, 1});
  EXPECT_EQ(F::channel_shuffle(c, 2).reshape({-1}).tolist<double>(), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  EXPECT_THROW_MSG(F::pixel_shuffle(zeros({1, 3, 2, 2}), 2), Error,
                   "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                   "upscale_factor, but input.size(-3)=3 is not divisible by 4");
  EXPECT_THROW_MSG(F::pixel_unshuffle(zeros({1, 3, 3, 2}), 2), Error,
                   "pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)=3 is not "
                   "divisible by 2");
  EXPECT_THROW_MSG(F::channel_shuffle(zeros({1, 3, 2}), 2), Error,
                   "Number of channels must be divisible by groups. Got 3 channels and 2 groups.");
  Tensor g = rnd({1, 8, 2, 3}, 2).requires_grad_();
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return F::pixel_shuffle(v[0], 2); }, {g}));
}

EMBER_DEVICE_TEST(NNInstanceNorm, MatchesPerPlaneNormalisation) {
  Tensor x = rnd({2, 3, 5}, 3) * 2 + 1;
  Tensor w = rnd({3}, 4), b = rnd({3}, 5);
  Tensor rm = zeros({3}, {.dtype = kFloat64}), rv = ones({3}, {.dtype = kFloat64});
  Tensor y = F::instance_norm(x, rm, rv, w, b, true, 0.5, 1e-5);
  Tensor mean = x.mean({2}, true), var = (x - mean).pow(2).mean({2}, true);
  Tensor want = (x - mean) / (var + 1e-5).sqrt() * w.view({1, 3, 1}) + b.view({1, 3, 1});
  EXPECT_TRUE(close_to(y, ref_of(want)));
  // running stats: momentum 0.5 of the batch mean of per-plane means / unbiased variances
  Tensor uvar = (x - mean).pow(2).sum({2}) / 4.0;
  EXPECT_TRUE(close_to(rm, ref_of(mean.squeeze(2).mean({0}) * 0.5)));
  EXPECT_TRUE(close_to(rv, ref_of(uvar.mean({0}) * 0.5 + 0.5)));
  // eval with running stats
  Tensor e = F::instance_norm(x, rm, rv, std::nullopt, std::nullopt, false);
  EXPECT_TRUE(close_to(e, ref_of((x - rm.view({1, 3, 1})) / (rv.view({1, 3, 1}) + 1e-5).sqrt())));
  Tensor xg = rnd({2, 2, 4}, 6).requires_grad_();
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return F::instance_norm(v[0]); }, {xg}));
}

EMBER_DEVICE_TEST(NNDistance, PairwiseCosineGlu) {
  Tensor a = tensor({1.0, 2.0, 3.0}).view({1, 3}), b = tensor({1.0, 0.0, 3.0}).view({1, 3});
  EXPECT_NEAR(F::pairwise_distance(a, b, 2.0, 0.0).item<double>(), 2.0, 1e-12);
  EXPECT_NEAR(F::pairwise_distance(a, b, 1.0, 1e-6).item<double>(), 2.0 + 3e-6, 1e-6);  // eps added to every entry
  EXPECT_NEAR(F::cosine_similarity(a, b).item<double>(), 10.0 / (std::sqrt(14.0) * std::sqrt(10.0)), 1e-6);
  // a zero vector: its norm clamps to eps, the similarity is 0 and finite
  EXPECT_EQ(F::cosine_similarity(zeros({1, 3}, {.dtype = kFloat64}), b).item<double>(), 0.0);
  Tensor g = tensor({1.0, 2.0, 0.0, 3.0}).view({1, 4});
  auto v = F::glu(g).tolist<double>();
  EXPECT_NEAR(v[0], 0.5, 1e-12);
  EXPECT_NEAR(v[1], 2.0 / (1.0 + std::exp(-3.0)), 1e-6);  // float32 values
  EXPECT_THROW_MSG(F::glu(zeros({2, 3})), Error, "Halving dimension must be even, but dimension 1 is size 3");
  Tensor x1 = rnd({3, 4}, 7).requires_grad_(), x2 = rnd({3, 4}, 8).requires_grad_();
  EXPECT_TRUE(gradcheck([](const variable_list& t) { return F::cosine_similarity(t[0], t[1]); }, {x1, x2}));
  EXPECT_TRUE(gradcheck([](const variable_list& t) { return F::pairwise_distance(t[0], t[1], 3.0); }, {x1, x2}));
  EXPECT_TRUE(gradcheck([](const variable_list& t) { return F::glu(t[0], 1); }, {x1}));
}
