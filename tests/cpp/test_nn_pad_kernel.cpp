// The pad_nd op behind F.pad's reflect / replicate / circular modes: negative pads (crop, then
// pad from the cropped core, reading cropped elements where PyTorch's formula does), all dtypes,
// every padded rank, gradients and double backward. Values are PyTorch 2.x's.
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

EMBER_DEVICE_TEST(NNPadKernel, NegativePadsMatchTorch) {
  struct Case {
    const char* mode;
    std::vector<int64_t> pad;
    std::vector<double> want;
  };
  std::vector<Case> cases = {
      {"reflect", {-1, 3}, {1, 2, 3, 4, 3, 2, 1}},   {"reflect", {2, -1}, {2, 1, 0, 1, 2, 3}},
      {"reflect", {3, -2}, {3, 2, 1, 0, 1, 2}},      {"reflect", {-2, -1}, {2, 3}},
      {"replicate", {-1, 3}, {1, 2, 3, 4, 4, 4, 4}}, {"replicate", {2, -1}, {0, 0, 0, 1, 2, 3}},
      {"replicate", {3, -2}, {0, 0, 0, 0, 1, 2}},    {"circular", {-1, 3}, {1, 2, 3, 4, 1, 2, 3}},
      {"circular", {2, -1}, {2, 3, 0, 1, 2, 3}},     {"circular", {3, -2}, {0, 1, 2, 0, 1, 2}},
  };
  Tensor x = arange(5.0).view({1, 1, 5});
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.mode << " " << c.pad[0] << "," << c.pad[1]);
    EXPECT_EQ(F::pad(x, c.pad, c.mode).tolist<double>(), c.want);
    // the same map on every plane and along the height of a 2-d pad
    Tensor x2 = arange(5.0).view({1, 5}).expand({3, 5}).contiguous().view({1, 3, 5}) + arange(3.0).view({1, 3, 1}) * 10;
    Tensor y2 = F::pad(x2.view({1, 1, 3, 5}).transpose(2, 3).contiguous().transpose(2, 3), {c.pad[0], c.pad[1], 0, 0},
                       c.mode);
    for (int64_t r = 0; r < 3; ++r) {
      std::vector<double> want;
      for (double v : c.want) want.push_back(v + 10.0 * double(r));
      EXPECT_EQ(y2.select(2, r).reshape({-1}).tolist<double>(), want);
    }
  }
}

EMBER_DEVICE_TEST(NNPadKernel, DtypesAndRanks) {
  Tensor xi = arange(6, {.dtype = kInt64}).view({1, 2, 3});
  Tensor yi = F::pad(xi, {1, 1}, "reflect");
  EXPECT_EQ(yi.dtype(), kInt64);
  EXPECT_EQ(yi.tolist<int64_t>(), (std::vector<int64_t>{1, 0, 1, 2, 1, 4, 3, 4, 5, 4}));
  Tensor xh = arange(4.0).view({1, 1, 2, 2}).to(kFloat16);
  Tensor yh = F::pad(xh, {1, 0, 0, 1}, "replicate");
  EXPECT_EQ(yh.dtype(), kFloat16);
  EXPECT_EQ(yh.to(kFloat64).tolist<double>(), (std::vector<double>{0, 0, 1, 2, 2, 3, 2, 2, 3}));
  // 3-d circular on unbatched (C, D, H, W) input
  Tensor x5 = rnd({2, 2, 3, 2}, 1);
  Tensor y5 = F::pad(x5, {1, 0, 0, 1, 1, 1}, "circular");
  EXPECT_EQ(y5.sizes(), (Shape{2, 4, 4, 3}));
  // front pad wraps D to index 1, left pad wraps W to index 1, H keeps its first three rows
  EXPECT_EQ(y5.select(1, 0).narrow(1, 0, 3).select(2, 0).tolist<double>(),
            x5.select(1, 1).select(2, 1).tolist<double>());
  // bottom pad wraps H to row 0
  EXPECT_EQ(y5.select(2, 3).select(2, 1).narrow(1, 1, 2).tolist<double>(),
            x5.select(2, 0).select(2, 0).tolist<double>());
}

EMBER_DEVICE_TEST(NNPadKernel, GradientsAndDoubleBackward) {
  for (std::string mode : {"reflect", "replicate", "circular"}) {
    SCOPED_TRACE(mode);
    Tensor x = rnd({2, 3, 4}, 2).requires_grad_();
    auto f = [&](const variable_list& v) { return F::pad(v[0], {2, -1}, mode); };
    EXPECT_TRUE(gradcheck(f, {x}));
    EXPECT_TRUE(gradgradcheck(f, {x}));
    Tensor x3 = rnd({1, 2, 3, 3, 4}, 3).requires_grad_();
    EXPECT_TRUE(gradcheck([&](const variable_list& v) { return F::pad(v[0], {1, 2, 2, 0, -1, 1}, mode); }, {x3}));
  }
}

EMBER_DEVICE_TEST(NNPadKernel, CropLeavingNothing) {
  Tensor x = arange(3.0).view({1, 1, 3});
  // replicate and reflect index the whole input: a crop on one side does not empty the other
  EXPECT_EQ(F::pad(x, {2, -3}, "replicate").tolist<double>(), (std::vector<double>{0, 0}));
  EXPECT_EQ(F::pad(x, {2, -3}, "reflect").tolist<double>(), (std::vector<double>{2, 1}));
  EXPECT_THROW_MSG(F::pad(x, {3, -3}, "circular"), Error, "leaves no element to wrap around after cropping");
  EXPECT_THROW_MSG(F::pad(x, {-1, -2}, "replicate"), Error, "input (W: 3) is too small. Calculated output W: 0");
  EXPECT_THROW_MSG(F::pad(zeros({2, 3, 5, 1}), {-1, 0, -2, -1}, "reflect"), Error,
                   "Calculated output H: 2 W: 0 must be >= 1 in every dimension (input H: 5, W: 1)");
}
