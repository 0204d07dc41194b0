// interpolate (the upsample op and its backward) against hand-computed values of PyTorch's
// coordinate formulas, the adjoint identity <up(x), g> = <x, up_backward(g)>, float64
// gradchecks; and embedding's scale_grad_by_freq / max_norm.
#include <cmath>

#include "ember/nn/functional.h"
#include "gradcheck.h"
#include "test_utils.h"

using namespace ember;
using namespace ember::testing;
namespace F = ember::nn::functional;

namespace {
using Sizes = std::optional<std::vector<int64_t>>;
using Scales = std::optional<std::vector<double>>;

void expect_values(const Tensor& t, const std::vector<double>& want, double tol = 1e-6) {
  auto got = t.to(kFloat64).reshape({-1}).tolist<double>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}
}  // namespace

EMBER_DEVICE_TEST(NNUpsample, NearestModes) {
  Tensor x = tensor({1.0f, 2.0f}).view({1, 1, 2});
  // scale 2: output o reads o >> 1
  expect_values(F::interpolate(x, Sizes{}, Scales{{2.0}}), {1, 1, 2, 2});
  // 2 -> 3: nearest floor(o * 2/3) = 0, 0, 1; nearest-exact floor((o + .5) * 2/3) = 0, 1, 1
  expect_values(F::interpolate(x, Sizes{{3}}), {1, 1, 2});
  expect_values(F::interpolate(x, Sizes{{3}}, std::nullopt, "nearest-exact"), {1, 2, 2});
  // integer input goes through the gather and keeps its dtype
  Tensor xi = tensor({1, 2, 3}).to(kUInt8).view({1, 1, 1, 3});
  Tensor yi = F::interpolate(xi, Sizes{{2, 6}});
  EXPECT_EQ(yi.dtype(), kUInt8);
  expect_values(yi, {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
}

EMBER_DEVICE_TEST(NNUpsample, LinearCoordinates) {
  Tensor x = tensor({1.0, 2.0}).view({1, 1, 2});
  // half-pixel: sources -0.25 (clamped to 0), 0.25, 0.75, 1.25 (last index stays 1)
  expect_values(F::interpolate(x, Sizes{{4}}, std::nullopt, "linear"), {1, 1.25, 1.75, 2});
  // align_corners: sources 0, 1/3, 2/3, 1
  expect_values(F::interpolate(x, Sizes{{4}}, std::nullopt, "linear", true), {1, 4.0 / 3, 5.0 / 3, 2});
  // a given scale_factor samples with 1/scale (here 1/1.5), not in/out (2/3 after flooring 3/2 -> 3)
  Tensor x3 = tensor({0.0, 1.0, 2.0, 3.0}).view({1, 1, 4});
  // out = floor(4 * 1.3) = 5; step 1/1.3: sources (o + .5)/1.3 - .5
  std::vector<double> want;
  for (int o = 0; o < 5; ++o) want.push_back(std::min(3.0, std::max(0.0, (o + 0.5) / 1.3 - 0.5)));
  expect_values(F::interpolate(x3, Sizes{}, Scales{{1.3}}, "linear"), want);
  // with recompute_scale_factor the step is in/out = 4/5
  want.clear();
  for (int o = 0; o < 5; ++o) want.push_back(std::min(3.0, std::max(0.0, (o + 0.5) * 0.8 - 0.5)));
  expect_values(F::interpolate(x3, Sizes{}, Scales{{1.3}}, "linear", std::nullopt, true), want);
}

EMBER_DEVICE_TEST(NNUpsample, BilinearAndBicubicValues) {
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0}).view({1, 1, 2, 2});
  Tensor y = F::interpolate(x, Sizes{{3, 3}}, std::nullopt, "bilinear", true);
  expect_values(y, {1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4});
  // bicubic reproduces a linear ramp exactly where all four taps are inside (the Keys kernel is
  // exact for linear data; at the border the clamped taps bend it: 0.40625 at o = 1, as torch)
  // and is the identity at equal sizes
  Tensor r = arange(6, {.dtype = kFloat64}).view({1, 1, 1, 6});
  auto rv = F::interpolate(r, Sizes{{1, 11}}, std::nullopt, "bicubic", true).reshape({-1}).tolist<double>();
  for (int o = 2; o <= 8; ++o) EXPECT_NEAR(rv[size_t(o)], o * 0.5, 1e-12) << o;
  EXPECT_NEAR(rv[1], 0.40625, 1e-12);
  Tensor z = seeded_randn({2, 3, 4, 5}, 3);
  EXPECT_TRUE(close_to(F::interpolate(z, Sizes{{4, 5}}, std::nullopt, "bicubic"), ref_of(z)));
  // trilinear of a constant is that constant
  Tensor c = full({1, 2, 2, 3, 2}, 1.5, {.dtype = kFloat32});
  expect_values(F::interpolate(c, Sizes{{3, 5, 4}}, std::nullopt, "trilinear"),
                std::vector<double>(2 * 3 * 5 * 4, 1.5));
}

EMBER_DEVICE_TEST(NNUpsample, BackwardIsTheAdjoint) {
  struct Case {
    Shape in;
    std::vector<int64_t> out;
    std::string mode;
    std::optional<bool> ac;
  };
  std::vector<Case> cases = {{{2, 3, 5}, {8}, "linear", false},        {{2, 3, 5}, {3}, "linear", true},
                             {{1, 2, 3, 4}, {7, 5}, "bilinear", false}, {{1, 2, 6, 5}, {4, 9}, "bicubic", false},
                             {{1, 2, 3, 4}, {5, 2}, "bicubic", true},   {{1, 1, 2, 3, 4}, {3, 5, 2}, "trilinear", true},
                             {{1, 2, 3, 4}, {5, 9}, "nearest", {}},     {{1, 1, 2, 3, 3}, {3, 4, 5}, "nearest-exact", {}}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.mode);
    Tensor x = seeded_randn(c.in, 1);
    x.requires_grad_(true);
    Tensor y = F::interpolate(x, Sizes{c.out}, std::nullopt, c.mode, c.ac);
    Tensor g = seeded_randn(y.sizes(), 2);
    Tensor gx = autograd::grad({y}, {x}, {g})[0];
    double lhs = (y * g).sum().item<double>(), rhs = (x * gx).sum().item<double>();
    EXPECT_NEAR(lhs, rhs, 1e-10);
    EXPECT_TRUE(gradcheck([&](const variable_list& v) { return F::interpolate(v[0], Sizes{c.out}, std::nullopt,
                                                                              c.mode, c.ac); },
                          {x}));
  }
}

EMBER_DEVICE_TEST(NNUpsample, Errors) {
  Tensor x = zeros({1, 2, 3, 4});
  EXPECT_THROW_MSG(F::interpolate(x, Sizes{{0, 3}}), Error, "Input and output sizes should be greater than 0");
  EXPECT_THROW_MSG(F::interpolate(x, Sizes{{3, 3}}, std::nullopt, "linear"), NotImplementedError,
                   "Got 4D input, but linear mode needs 3D input");
  EXPECT_THROW_MSG(F::interpolate(x, Sizes{{3, 3}}, std::nullopt, "nearest", true), ValueError,
                   "align_corners option can only be set with the interpolating modes");
  EXPECT_THROW_MSG(F::interpolate(x), ValueError, "either size or scale_factor should be defined");
  EXPECT_THROW_MSG(F::interpolate(x, Sizes{{3, 3, 3}}), ValueError,
                   "Input and output must have the same number of spatial dimensions");
}

EMBER_DEVICE_TEST(NNEmbedding, ScaleGradByFreqAndMaxNorm) {
  Tensor w = seeded_randn({5, 3}, 4);
  w.requires_grad_(true);
  Tensor idx = tensor({1, 1, 3, 4, 1});
  Tensor y = F::embedding(idx, w, 4, std::nullopt, 2.0, true);
  y.sum().backward();
  auto g = w.grad().tolist<double>();
  for (int j = 0; j < 3; ++j) {
    EXPECT_NEAR(g[3 + j], 1.0, 1e-12);   // row 1: three hits, each scaled by 1/3
    EXPECT_NEAR(g[9 + j], 1.0, 1e-12);   // row 3: one hit
    EXPECT_EQ(g[12 + j], 0.0);           // padding row 4
    EXPECT_EQ(g[0 + j], 0.0);            // row 0 not looked up
  }
  Tensor w2 = full({4, 2}, 3.0, {.dtype = kFloat64});
  F::embedding(tensor({0, 2}), w2, std::nullopt, 1.0);
  auto v = w2.tolist<double>();
  double scaled = 3.0 / (std::sqrt(18.0) + 1e-7);
  EXPECT_NEAR(v[0], scaled, 1e-12);
  EXPECT_NEAR(v[4], scaled, 1e-12);
  EXPECT_EQ(v[2], 3.0);  // row 1 not looked up: unchanged
}
