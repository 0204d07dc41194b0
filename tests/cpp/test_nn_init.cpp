// ember::nn::init: gains, fans, statistics of the random initialisers with a seeded generator,
// orthogonality, truncation bounds, PyTorch's errors.
#include <cmath>

#include "ember/nn/functional.h"
#include "test_utils.h"

namespace init = ember::nn::init;
using namespace ember;
using namespace ember::testing;

namespace {
struct Stats {
  double mean, std, min, max;
};
Stats stats(const Tensor& t) {
  auto v = t.to(kFloat64).contiguous().tolist<double>();
  double s = 0, mn = INFINITY, mx = -INFINITY;
  for (double x : v) s += x, mn = std::min(mn, x), mx = std::max(mx, x);
  double m = s / v.size(), ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return {m, std::sqrt(ss / (v.size() - 1)), mn, mx};
}
// max |M - I| for M = A A^T (rows) or A^T A (cols), A row-major (r x c), computed in float64.
double ortho_error(const Tensor& a2d, bool rows) {
  Tensor a = a2d.to(kFloat64);
  Tensor m = rows ? a.matmul(a.t()) : a.t().matmul(a);
  return (m - eye(m.size(0), std::nullopt, {.dtype = kFloat64})).abs().max().item().to<double>();
}
double phi(double x) { return std::exp(-x * x / 2) / std::sqrt(2 * M_PI); }
double Phi(double x) { return 0.5 * (1 + std::erf(x / std::sqrt(2.0))); }
}  // namespace

EMBER_DEVICE_TEST(NNInit, CalculateGain) {
  // torch.nn.init.calculate_gain (torch 1.13)
  for (const char* nl : {"linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                         "conv_transpose3d", "sigmoid"})
    EXPECT_EQ(init::calculate_gain(nl), 1.0) << nl;
  EXPECT_DOUBLE_EQ(init::calculate_gain("tanh"), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(init::calculate_gain("relu"), 1.4142135623730951);
  EXPECT_DOUBLE_EQ(init::calculate_gain("leaky_relu"), 1.4141428569978354);      // slope 0.01
  EXPECT_DOUBLE_EQ(init::calculate_gain("leaky_relu", 0.2), 1.3867504905630728);
  EXPECT_DOUBLE_EQ(init::calculate_gain("selu"), 0.75);
  EXPECT_THROW_MSG(init::calculate_gain("foo"), ValueError, "Unsupported nonlinearity foo");
}

EMBER_DEVICE_TEST(NNInit, FanInFanOut) {
  EXPECT_EQ(init::calculate_fan_in_and_fan_out(empty({20, 10})), (std::pair<int64_t, int64_t>{10, 20}));  // Linear
  EXPECT_EQ(init::calculate_fan_in_and_fan_out(empty({16, 8, 3, 5})),
            (std::pair<int64_t, int64_t>{8 * 15, 16 * 15}));  // Conv2d
  EXPECT_EQ(init::calculate_fan_in_and_fan_out(empty({4, 2, 7})), (std::pair<int64_t, int64_t>{14, 28}));
  EXPECT_THROW_MSG(init::calculate_fan_in_and_fan_out(empty({5})), ValueError,
                   "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions");
  Tensor v = empty({5});
  EXPECT_THROW_MSG(init::xavier_uniform_(v), ValueError, "Fan in and fan out can not be computed");
  Tensor w = empty({4, 4});
  EXPECT_THROW_MSG(init::kaiming_uniform_(w, 0.0, "fan_avg"), ValueError,
                   "Mode fan_avg not supported, please use one of fan_in, fan_out");
}

EMBER_DEVICE_TEST(NNInit, ConstantsAndEye) {
  Tensor t = empty({3, 5});
  init::constant_(t, 2.5);
  EXPECT_EQ(stats(t).min, 2.5);
  EXPECT_EQ(stats(t).max, 2.5);
  init::zeros_(t);
  EXPECT_EQ(t.abs().sum().item().to<double>(), 0.0);
  init::ones_(t);
  EXPECT_EQ(t.sum().item().to<double>(), 15.0);
  init::eye_(t);
  EXPECT_TRUE(t.equal(eye(3, 5)));
  Tensor t3 = empty({2, 2, 2});
  EXPECT_THROW_MSG(init::eye_(t3), ValueError, "Only tensors with 2 dimensions are supported");
}

EMBER_DEVICE_TEST(NNInit, UniformNormalStats) {
  Generator g(device(), 42);
  Tensor t = empty({200, 200});
  init::uniform_(t, -0.5, 1.5, &g);
  Stats s = stats(t);
  EXPECT_GE(s.min, -0.5);
  EXPECT_LT(s.max, 1.5);
  EXPECT_NEAR(s.mean, 0.5, 0.02);
  EXPECT_NEAR(s.std, 2.0 / std::sqrt(12.0), 0.01);
  init::normal_(t, 3.0, 0.5, &g);
  s = stats(t);
  EXPECT_NEAR(s.mean, 3.0, 0.01);
  EXPECT_NEAR(s.std, 0.5, 0.01);
  // seeded: same generator state, same values
  Generator g1(device(), 7), g2(device(), 7);
  Tensor a = empty({10}), b = empty({10});
  init::normal_(a, 0, 1, &g1);
  init::normal_(b, 0, 1, &g2);
  EXPECT_TRUE(a.equal(b));
}

EMBER_DEVICE_TEST(NNInit, XavierKaiming) {
  Generator g(device(), 1);
  Tensor w = empty({300, 200});
  init::xavier_uniform_(w, 2.0, &g);
  double a = 2.0 * std::sqrt(6.0 / 500.0);
  Stats s = stats(w);
  EXPECT_GE(s.min, -a);
  EXPECT_LE(s.max, a);
  EXPECT_GT(s.max, 0.99 * a);
  EXPECT_NEAR(s.std, a / std::sqrt(3.0), 0.02 * a);
  init::xavier_normal_(w, 1.0, &g);
  EXPECT_NEAR(stats(w).std, std::sqrt(2.0 / 500.0), 0.02 * std::sqrt(2.0 / 500.0));
  // Linear's default: kaiming_uniform_(a = sqrt(5)) gives bound 1 / sqrt(fan_in)
  init::kaiming_uniform_(w, std::sqrt(5.0), "fan_in", "leaky_relu", &g);
  s = stats(w);
  EXPECT_LE(s.max, 1.0 / std::sqrt(200.0));
  EXPECT_GE(s.min, -1.0 / std::sqrt(200.0));
  EXPECT_GT(s.max, 0.99 / std::sqrt(200.0));
  // conv weight, fan_out, relu: std = sqrt(2) / sqrt(64 * 9)
  Tensor c = empty({64, 32, 3, 3});
  init::kaiming_normal_(c, 0.0, "fan_out", "relu", &g);
  double sd = std::sqrt(2.0) / std::sqrt(64.0 * 9.0);
  s = stats(c);
  EXPECT_NEAR(s.std, sd, 0.02 * sd);
  EXPECT_NEAR(s.mean, 0.0, 0.02 * sd);
  // zero-element tensors are a no-op, as PyTorch
  Tensor z = empty({0, 3});
  EXPECT_NO_THROW(init::kaiming_uniform_(z));
}

EMBER_DEVICE_TEST(NNInit, TruncNormal) {
  Generator g(device(), 9);
  Tensor t = empty({100000}, {.dtype = kFloat64});
  double mean = 1.0, sd = 2.0, a = -1.0, b = 2.0;
  init::trunc_normal_(t, mean, sd, a, b, &g);
  Stats s = stats(t);
  EXPECT_GE(s.min, a);
  EXPECT_LE(s.max, b);
  // moments of the truncated normal
  double al = (a - mean) / sd, be = (b - mean) / sd, Z = Phi(be) - Phi(al);
  double tm = mean + sd * (phi(al) - phi(be)) / Z;
  double tv = sd * sd * (1 + (al * phi(al) - be * phi(be)) / Z - std::pow((phi(al) - phi(be)) / Z, 2));
  EXPECT_NEAR(s.mean, tm, 0.01);
  EXPECT_NEAR(s.std, std::sqrt(tv), 0.01);
  // the default [-2, 2] standard case, float32
  Tensor f = empty({50000});
  init::trunc_normal_(f, 0.0, 1.0, -2.0, 2.0, &g);
  s = stats(f);
  EXPECT_GE(s.min, -2.0);
  EXPECT_LE(s.max, 2.0);
  EXPECT_NEAR(s.std, 0.8796, 0.01);
}

EMBER_DEVICE_TEST(NNInit, Orthogonal) {
  Generator g(device(), 3);
  for (Shape shape : {Shape{30, 10}, Shape{10, 30}, Shape{16, 16}, Shape{8, 2, 3, 3}}) {
    Tensor t = ember::empty(shape);
    init::orthogonal_(t, 1.0, &g);
    int64_t rows = shape[0], cols = t.numel() / rows;
    EXPECT_LT(ortho_error(t.reshape({rows, cols}), rows < cols), 1e-5) << shape[0] << "x" << cols;
  }
  // gain scales: Q^T Q = gain^2 I
  Tensor t = empty({12, 5}, {.dtype = kFloat64});
  init::orthogonal_(t, 2.0, &g);
  EXPECT_LT(ortho_error(t * 0.5, false), 1e-12);
  // It is the Q of the QR of the normal matrix drawn from the same generator state, with the
  // signs fixed so that R = Q^T A has a positive diagonal (as PyTorch's sign correction).
  Generator g1(device(), 11), g2(device(), 11);
  Tensor A = empty({12, 5}, {.dtype = kFloat64});
  ember::normal_(A, 0.0, 1.0, &g1);
  Tensor q = empty({12, 5}, {.dtype = kFloat64});
  init::orthogonal_(q, 1.0, &g2);
  Tensor R = q.t().matmul(A);
  auto rv = R.tolist<double>();
  for (int64_t i = 0; i < 5; ++i) {
    EXPECT_GT(rv[i * 5 + i], 0.0);
    for (int64_t j = 0; j < i; ++j) EXPECT_NEAR(rv[i * 5 + j], 0.0, 1e-12);
  }
  EXPECT_LT((q.matmul(R) - A).abs().max().item().to<double>(), 1e-12);
  Tensor v = empty({4});
  EXPECT_THROW_MSG(init::orthogonal_(v), ValueError, "Only tensors with 2 or more dimensions are supported");
}

EMBER_DEVICE_TEST(NNInit, InPlaceWithoutHistory) {
  Tensor w = zeros({4, 3}).requires_grad_();
  Tensor& r = init::kaiming_uniform_(w);
  EXPECT_EQ(&r, &w);
  EXPECT_TRUE(w.requires_grad());
  EXPECT_TRUE(w.is_leaf());
  EXPECT_GT(w.abs().sum().item().to<double>(), 0.0);
  init::orthogonal_(w);
  init::trunc_normal_(w);
  init::eye_(w);
  EXPECT_TRUE(w.is_leaf());
  EXPECT_TRUE(w.detach().equal(eye(4, 3)));
}
