// Layer modules: defaults, initialisation bounds, train/eval behaviour, loss modules.
#include <cmath>

#include "ember/nn.h"
#include "test_utils.h"

using namespace ember;
using namespace ember::testing;
namespace F = ember::nn::functional;

EMBER_DEVICE_TEST(Layers, ConvInitAndForward) {
  nn::Conv2d conv(4, 6, 3, {.padding = std::string("same"), .groups = 2});
  EXPECT_EQ(conv.weight.sizes(), (Shape{6, 2, 3, 3}));
  double bound = 1.0 / std::sqrt(2.0 * 9.0);  // fan_in = in/groups * kH * kW
  EXPECT_LE(conv.weight.abs().max().item<double>(), bound + 1e-6);
  EXPECT_LE(conv.bias.abs().max().item<double>(), bound + 1e-6);
  Tensor x = randn({2, 4, 5, 5});
  EXPECT_EQ(conv(x).sizes(), (Shape{2, 6, 5, 5}));
  EXPECT_TRUE(conv(x).allclose(F::conv2d(x, conv.weight, conv.bias, {1, 1}, std::string("same"), {1, 1}, 2)));
  EXPECT_EQ(conv.repr(), "Conv2d(4, 6, kernel_size=(3, 3), stride=(1, 1), padding=same, groups=2)");
  nn::Conv1d c1(3, 2, 5);
  EXPECT_EQ(c1(randn({1, 3, 10})).sizes(), (Shape{1, 2, 6}));
  EXPECT_THROW_MSG(nn::Conv2d(3, 4, 3, {.groups = 2}), ValueError, "in_channels must be divisible by groups");
}

EMBER_DEVICE_TEST(Layers, BatchNormTrainEvalAndCumulativeMomentum) {
  manual_seed(1);
  nn::BatchNorm2d bn(3);
  Tensor x = randn({4, 3, 2, 2}) * 2 + 1;
  Tensor y = bn(x);
  // Training: normalised with the batch statistics (biased variance).
  Tensor mean = x.mean({0, 2, 3}, true), var = x.var({0, 2, 3}, false, true);
  EXPECT_TRUE(y.allclose((x - mean) / (var + 1e-5).sqrt(), 1e-4, 1e-5));
  // Running stats: momentum 0.1 towards the batch mean and the unbiased variance.
  EXPECT_TRUE(bn.running_mean.allclose(x.mean({0, 2, 3}) * 0.1, 1e-5, 1e-6));
  EXPECT_TRUE(bn.running_var.allclose(ones({3}) * 0.9 + x.var({0, 2, 3}, true) * 0.1, 1e-5, 1e-6));
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 1);
  bn.eval();
  Tensor e = bn(x);
  EXPECT_TRUE(e.allclose((x - bn.running_mean.view({1, 3, 1, 1})) / (bn.running_var.view({1, 3, 1, 1}) + 1e-5).sqrt(),
                         1e-4, 1e-5));
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 1);  // eval does not count

  nn::BatchNorm1d cumulative(2, 1e-5, std::nullopt);
  Tensor a = tensor({{1.0, 2.0}, {3.0, 4.0}}), b = tensor({{5.0, 6.0}, {7.0, 8.0}});
  cumulative(a);
  cumulative(b);
  EXPECT_TRUE(cumulative.running_mean.allclose(tensor({4.0, 5.0})));  // plain average of the batch means
  EXPECT_THROW_MSG(bn(randn({3, 3})), ValueError, "expected 4D input (got 2D input)");
}

EMBER_DEVICE_TEST(Layers, NormsEmbeddingDropout) {
  nn::LayerNorm ln(4);
  Tensor x = randn({2, 3, 4});
  EXPECT_TRUE(ln(x).allclose(F::layer_norm(x, {4}, ln.weight, ln.bias)));
  EXPECT_EQ(ln.repr(), "LayerNorm((4,), eps=1e-05, elementwise_affine=True)");
  nn::GroupNorm gn(2, 4);
  EXPECT_EQ(gn(randn({2, 4, 3})).sizes(), (Shape{2, 4, 3}));
  nn::RMSNorm rms(4);
  EXPECT_EQ(rms(x).sizes(), (Shape{2, 3, 4}));

  nn::Embedding emb(10, 3, 0);
  EXPECT_EQ(emb.weight.select(0, 0).abs().sum().item<double>(), 0.0);
  Tensor idx = tensor({{0, 2}, {2, 5}});
  Tensor out = emb(idx);
  EXPECT_EQ(out.sizes(), (Shape{2, 2, 3}));
  out.sum().backward();
  EXPECT_EQ(emb.weight.grad().select(0, 0).abs().sum().item<double>(), 0.0);  // padding row gets no gradient
  EXPECT_TRUE(emb.weight.grad().select(0, 2).allclose(full({3}, 2.0)));       // repeated index accumulates
  EXPECT_EQ(emb.repr(), "Embedding(10, 3, padding_idx=0)");

  nn::Dropout drop(0.5);
  Tensor ones_in = ones({1000});
  Tensor d = drop(ones_in);
  double kept = (d != 0).sum().item<double>();
  EXPECT_GT(kept, 400);
  EXPECT_LT(kept, 600);
  EXPECT_TRUE(d.masked_select(d != 0).allclose(full({int64_t(kept)}, 2.0)));
  drop.eval();
  EXPECT_TRUE(drop(ones_in).equal(ones_in));
}

EMBER_DEVICE_TEST(Layers, LossModules) {
  Tensor logits = tensor({{2.0, 0.5, -1.0}, {0.1, 0.2, 3.0}});
  Tensor target = tensor({0, 2});
  nn::CrossEntropyLoss ce;
  EXPECT_TRUE(ce(logits, target).allclose(F::cross_entropy(logits, target)));
  nn::CrossEntropyLoss smooth({.label_smoothing = 0.1});
  EXPECT_TRUE(smooth(logits, target).allclose(F::cross_entropy(logits, target, std::nullopt, -100, "mean", 0.1)));
  nn::MSELoss mse;
  EXPECT_EQ(mse(tensor({1.0, 2.0}), tensor({3.0, 2.0})).item<double>(), 2.0);
  nn::MSELoss mse_sum("sum");
  EXPECT_EQ(mse_sum(tensor({1.0, 2.0}), tensor({3.0, 2.0})).item<double>(), 4.0);
  nn::BCEWithLogitsLoss bce;
  EXPECT_NEAR(bce(tensor({0.0}), tensor({1.0})).item<double>(), std::log(2.0), 1e-6);
  nn::L1Loss l1;
  EXPECT_EQ(l1(tensor({1.0, -2.0}), tensor({0.0, 0.0})).item<double>(), 1.5);
}
