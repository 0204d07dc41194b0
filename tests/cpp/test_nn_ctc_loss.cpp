// F::ctc_loss against alignments counted by hand: with two steps and one label l the paths are
// (l, l), (blank, l), (l, blank), so the loss is -log(p0(l) p1(l) + p0(b) p1(l) + p0(l) p1(b)).
// The gradient through log_softmax against central differences.
#include <cmath>

#include "ember/nn/functional.h"
#include "test_utils.h"

using namespace ember;
using namespace ember::testing;
namespace F = ember::nn::functional;

TEST(CtcLoss, TwoStepsOneLabelCountsThreePaths) {
  // probabilities per step over (blank, label 1, label 2)
  const double p[2][3] = {{0.5, 0.3, 0.2}, {0.1, 0.6, 0.3}};
  Tensor lp = tensor({std::log(p[0][0]), std::log(p[0][1]), std::log(p[0][2]), std::log(p[1][0]),
                      std::log(p[1][1]), std::log(p[1][2])},
                     {.dtype = kFloat64})
                  .reshape({2, 1, 3});
  Tensor targets = tensor(std::vector<int64_t>{1}, {.dtype = kInt64}).reshape({1, 1});
  Tensor il = tensor(std::vector<int64_t>{2}, {.dtype = kInt64}), tl = tensor(std::vector<int64_t>{1}, {.dtype = kInt64});
  const double want = -std::log(p[0][1] * p[1][1] + p[0][0] * p[1][1] + p[0][1] * p[1][0]);
  EXPECT_NEAR(F::ctc_loss(lp, targets, il, tl, 0, "sum").item<double>(), want, 1e-12);
  EXPECT_NEAR(F::ctc_loss(lp, targets, il, tl, 0, "mean").item<double>(), want, 1e-12);  // target length 1
  // a target longer than the input cannot be aligned: inf, or 0 with zero_infinity
  Tensor two = tensor(std::vector<int64_t>{1, 1}, {.dtype = kInt64}).reshape({1, 2});
  Tensor tl2 = tensor(std::vector<int64_t>{2}, {.dtype = kInt64});
  EXPECT_TRUE(std::isinf(F::ctc_loss(lp, two, il, tl2, 0, "sum").item<double>()));  // l, l needs a blank between
  EXPECT_EQ(F::ctc_loss(lp, two, il, tl2, 0, "sum", true).item<double>(), 0.0);
  EXPECT_THROW(F::ctc_loss(lp, targets, il, tl, 3), Error);  // blank out of range
}

TEST(CtcLoss, GradientThroughLogSoftmaxMatchesCentralDifferences) {
  Tensor x = seeded_randn({6, 2, 4}, 11, kFloat64);
  Tensor targets = tensor(std::vector<int64_t>{1, 2, 2, 3, 1, 0}, {.dtype = kInt64}).reshape({2, 3});
  Tensor il = tensor(std::vector<int64_t>{6, 5}, {.dtype = kInt64});
  Tensor tl = tensor(std::vector<int64_t>{3, 2}, {.dtype = kInt64});
  auto loss = [&](const Tensor& v) { return F::ctc_loss(log_softmax(v, 2), targets, il, tl, 0, "sum"); };
  Tensor xv = x.clone().requires_grad_();
  loss(xv).backward();
  std::vector<double> g = xv.grad().reshape({-1}).tolist<double>();
  std::vector<double> base = x.reshape({-1}).tolist<double>();
  const double h = 1e-6;
  for (size_t i = 0; i < base.size(); i += 5) {
    std::vector<double> up = base, down = base;
    up[i] += h;
    down[i] -= h;
    const double fd = (loss(tensor(up, {.dtype = kFloat64}).reshape({6, 2, 4})).item<double>() -
                       loss(tensor(down, {.dtype = kFloat64}).reshape({6, 2, 4})).item<double>()) /
                      (2 * h);
    EXPECT_NEAR(g[i], fd, 1e-6) << "element " << i;
  }
}
