// Losses of ember::nn::functional: values against torch 1.13 constants and naive float64
// references, gradients by finite differences, PyTorch's errors.
#include <cmath>
#include <limits>

#include "ember/nn/functional.h"
#include "gradcheck.h"
#include "test_utils.h"

namespace F = ember::nn::functional;
using namespace ember;
using namespace ember::testing;

namespace {

const std::vector<double> kX = {0.5, -1.2, 2.0, 0.1, 1.5, 0.3, -0.7, -2.0, -0.4, 0.9, 0.0, 1.1};
Tensor X(DType dt = kFloat64) { return tensor(kX, {.dtype = kFloat64}).reshape({3, 4}).to(dt); }
Tensor T() { return tensor(std::vector<int64_t>{2, 0, 3}); }
Tensor TI() { return tensor(std::vector<int64_t>{2, -100, 3}); }
Tensor W() { return tensor(std::vector<double>{0.5, 1.0, 2.0, 1.5}); }
Tensor PT() {  // softmax(3 * [[.1,.2,.3,.4],[1,0,0,0],[.2,.2,.5,.1]], 1)
  return ember::softmax(tensor({{0.1, 0.2, 0.3, 0.4}, {1., 0., 0., 0.}, {0.2, 0.2, 0.5, 0.1}}, {.dtype = kFloat64}) * 3.0,
                        1);
}
Ref R(std::vector<double> v, Shape s = {}) { return Ref{s, std::move(v)}; }

// Naive float64 cross entropy with class indices (PyTorch's label-smoothing formula), rows of (M, C).
std::vector<double> ce_ref_rows(const Tensor& x, const std::vector<int64_t>& t, const std::vector<double>& w,
                                int64_t ignore, double ls, double* wsum) {
  auto v = x.to(kFloat64).contiguous().tolist<double>();
  int64_t M = x.size(0), C = x.size(1);
  std::vector<double> out(M, 0.0);
  *wsum = 0;
  for (int64_t i = 0; i < M; ++i) {
    if (t[i] == ignore) continue;
    double mx = -INFINITY;
    for (int64_t c = 0; c < C; ++c) mx = std::max(mx, v[i * C + c]);
    double s = 0;
    for (int64_t c = 0; c < C; ++c) s += std::exp(v[i * C + c] - mx);
    double lse = mx + std::log(s);
    auto wc = [&](int64_t c) { return w.empty() ? 1.0 : w[c]; };
    double l = -(1 - ls) * wc(t[i]) * (v[i * C + t[i]] - lse);
    for (int64_t c = 0; c < C; ++c) l -= ls / C * wc(c) * (v[i * C + c] - lse);
    out[i] = l;
    *wsum += wc(t[i]);
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------- cross_entropy values (torch 1.13)
EMBER_DEVICE_TEST(NNLoss, CrossEntropyTorchValues) {
  // Expected values below came from torch 1.13 (float64 inputs, same numbers).
  EXPECT_TRUE(close_to(F::cross_entropy(X(), T()), R({0.52569732347})));
  EXPECT_TRUE(close_to(F::cross_entropy(X(), T(), std::nullopt, -100, "none"),
                       R({0.346041294905, 0.366166087785, 0.864884587719}, {3})));
  EXPECT_TRUE(close_to(F::cross_entropy(X(), T(), W(), -100, "sum"), R({2.172492515281})));
  EXPECT_TRUE(close_to(F::cross_entropy(X(), T(), W()), R({0.54312312882})));
  EXPECT_TRUE(close_to(F::cross_entropy(X(), T(), W(), -100, "mean", 0.2), R({0.793066751207})));
  EXPECT_TRUE(close_to(F::cross_entropy(X(), T(), W(), -100, "none", 0.2),
                       R({0.980176395574, 0.780507957061, 1.411582652193}, {3})));
  EXPECT_TRUE(close_to(F::cross_entropy(X(), TI(), W(), -100, "mean", 0.1), R({0.625881217022})));
  EXPECT_TRUE(close_to(F::cross_entropy(X(), TI()), R({0.605462941312})));
  // float32 through the vectorised kernel
  EXPECT_TRUE(close_to(F::cross_entropy(X(kFloat32), T(), W().to(kFloat32), -100, "mean", 0.2), R({0.793066751207})));
  // probability targets
  EXPECT_TRUE(close_to(F::cross_entropy(X(), PT(), W(), -100, "mean", 0.3), R({1.995090134147})));
  EXPECT_TRUE(close_to(F::cross_entropy(X(), PT(), std::nullopt, -100, "none"),
                       R({1.928287600855, 0.665054522694, 1.71203968173}, {3})));
  // (N, C, d) input with (N, d) targets
  Tensor x3 = arange(24, {.dtype = kFloat64}).reshape({2, 3, 4}).sin();
  Tensor t3 = tensor({{0, 2, 1, 1}, {2, 2, 0, 1}});
  EXPECT_TRUE(close_to(F::cross_entropy(x3, t3, std::nullopt, -100, "none"),
                       R({1.425195817423, 1.02607908471, 1.619459883259, 0.580928595077, 0.428935559765,
                          0.601568504983, 0.433935538024, 1.104831667692},
                         {2, 4})));
  EXPECT_TRUE(close_to(F::cross_entropy(x3, t3, tensor({1., 2., 3.}, {.dtype = kFloat64})), R({0.861136535052})));
  // unbatched (C) input, 0-dim target
  EXPECT_TRUE(close_to(F::cross_entropy(X()[0], scalar_tensor(int64_t(1))), R({3.546041294905})));
}

EMBER_DEVICE_TEST(NNLoss, CrossEntropyGradTorchValues) {
  // Gradient of cross_entropy(x, [2, -100, 3], weight, label_smoothing=0.1) from torch 1.13.
  for (DType dt : {kFloat64, kFloat32}) {
    Tensor x = X(dt).requires_grad_();
    F::cross_entropy(x, TI(), W().to(dt), -100, "mean", 0.1).backward();
    EXPECT_TRUE(close_to(x.grad(),
                         R({0.083252041993, 0.00871836043, -0.139455629495, 0.047485227071, 0.0, 0.0, 0.0, 0.0,
                            0.036026060642, 0.138152078076, 0.044786798088, -0.218964936806},
                           {3, 4})));
  }
}

EMBER_DEVICE_TEST(NNLoss, CrossEntropyMatchesNaiveReference) {
  Generator g(3);
  for (int64_t C : {1, 5, 37, 300}) {
    for (double ls : {0.0, 0.25}) {
      Tensor x = host_randn({19, C}, g) * 4.0;
      Tensor t = randint(0, C, {19}, {.device = Device(DeviceType::CPU)}, &g).to(device());
      t.index_put_({tensor(std::vector<int64_t>{1, 7})}, scalar_tensor(int64_t(-1)));
      Tensor w = host_rand({C}, g) + 0.5;
      auto tv = t.tolist<int64_t>();
      auto wv = w.tolist<double>();
      double wsum;
      auto rows = ce_ref_rows(x, tv, wv, -1, ls, &wsum);
      double total = 0;
      for (double r : rows) total += r;
      for (DType dt : {kFloat64, kFloat32}) {
        EXPECT_TRUE(close_to(F::cross_entropy(x.to(dt), t, w.to(dt), -1, "none", ls), R(rows, {19})))
            << "C " << C << " ls " << ls;
        EXPECT_TRUE(close_to(F::cross_entropy(x.to(dt), t, w.to(dt), -1, "sum", ls), R({total})));
        EXPECT_TRUE(close_to(F::cross_entropy(x.to(dt), t, w.to(dt), -1, "mean", ls), R({total / wsum})));
      }
    }
  }
}

EMBER_DEVICE_TEST(NNLoss, CrossEntropyStableForLargeLogits) {
  Tensor x = tensor({{1000.f, 0.f, -1000.f}, {-5000.f, -5000.f, -4990.f}});
  Tensor t = tensor(std::vector<int64_t>{1, 2});
  Tensor l = F::cross_entropy(x, t, std::nullopt, -100, "none");
  EXPECT_TRUE(close_to(l, R({1000.0, std::log1p(2 * std::exp(-10.0))}, {2}), kFloat32));
  Tensor xr = x.clone().requires_grad_();
  F::cross_entropy(xr, t).backward();
  auto gv = xr.grad().tolist<double>();
  for (double v : gv) EXPECT_TRUE(std::isfinite(v));
  EXPECT_NEAR(gv[0], 0.5, 1e-6);
  EXPECT_NEAR(gv[1], -0.5, 1e-6);
}

EMBER_DEVICE_TEST(NNLoss, CrossEntropyIgnoreIndex) {
  Tensor t = tensor(std::vector<int64_t>{-100, -100, -100});
  Tensor m = F::cross_entropy(X(), t);
  EXPECT_TRUE(std::isnan(m.item().to<double>()));  // all ignored, mean: nan as PyTorch
  EXPECT_EQ(F::cross_entropy(X(), t, std::nullopt, -100, "sum").item().to<double>(), 0.0);
  EXPECT_TRUE(close_to(F::cross_entropy(X(), t, std::nullopt, -100, "none"), R({0, 0, 0}, {3})));
  // ignore_index that is a valid class
  EXPECT_TRUE(close_to(F::cross_entropy(X(), T(), std::nullopt, 0, "none"),
                       R({0.346041294905, 0.0, 0.864884587719}, {3})));
}

EMBER_DEVICE_TEST(NNLoss, CrossEntropyGradcheck) {
  Generator g(5);
  for (std::string red : {"mean", "sum", "none"})
    for (double ls : {0.0, 0.3})
      for (bool weighted : {false, true}) {
        Tensor x = host_randn({4, 5}, g).requires_grad_();
        Tensor t = tensor(std::vector<int64_t>{1, -100, 4, 0});
        std::optional<Tensor> w;
        if (weighted) w = host_rand({5}, g) + 0.5;
        EXPECT_TRUE(gradcheck([&](const variable_list& v) { return F::cross_entropy(v[0], t, w, -100, red, ls); },
                              {x}))
            << red << " ls " << ls << " w " << weighted;
        EXPECT_TRUE(
            gradgradcheck([&](const variable_list& v) { return F::cross_entropy(v[0], t, w, -100, red, ls); }, {x}))
            << red << " ls " << ls << " w " << weighted;
      }
  // (N, C, d1, d2), non-contiguous input
  Tensor x4 = host_randn({2, 3, 2, 5}, g).transpose(2, 3).requires_grad_();
  Tensor t4 = randint(0, 3, {2, 5, 2}, {.device = Device(DeviceType::CPU)}, &g).to(device());
  EXPECT_TRUE(gradcheck([&](const variable_list& v) { return F::cross_entropy(v[0], t4, std::nullopt, -100, "mean", 0.1); },
                        {x4}));
  // probability targets: input and target
  Tensor xp = host_randn({3, 4}, g).requires_grad_();
  Tensor tp = PT().detach().requires_grad_();
  EXPECT_TRUE(gradcheck([&](const variable_list& v) { return F::cross_entropy(v[0], v[1], W(), -100, "mean", 0.2); },
                        {xp, tp}));
}

EMBER_DEVICE_TEST(NNLoss, CrossEntropyErrors) {
  EXPECT_INDEX_ERROR(F::cross_entropy(X(), tensor(std::vector<int64_t>{2, 5, 0})), IndexError, "Target 5 is out of bounds.");
  EXPECT_INDEX_ERROR(F::cross_entropy(X(), tensor(std::vector<int64_t>{2, -1, 0})), IndexError, "Target -1 is out of bounds.");
  EXPECT_THROW_MSG(F::cross_entropy(X(), tensor(std::vector<int64_t>{2, 1, 0, 1})), Error,
                   "Expected input batch_size (3) to match target batch_size (4).");
  EXPECT_THROW_MSG(F::cross_entropy(X(), T(), std::nullopt, -100, "avg"), ValueError,
                   "avg is not a valid value for reduction");
  EXPECT_THROW_MSG(F::cross_entropy(X(), T(), std::nullopt, -100, "mean", 1.5), Error,
                   "label_smoothing must be between 0.0 and 1.0");
  EXPECT_THROW_MSG(F::cross_entropy(X(), T(), tensor({1.0, 2.0})), Error,
                   "weight tensor should be defined either for all 4 classes or no classes");
  EXPECT_THROW_MSG(F::cross_entropy(randn({2, 3, 4}), tensor({{0, 1, 2}, {0, 1, 2}})), Error,
                   "Expected target size [2, 4], got [2, 3]");
  EXPECT_INDEX_ERROR(F::nll_loss(X(), tensor(std::vector<int64_t>{2, 4, 0})), IndexError, "Target 4 is out of bounds.");
  EXPECT_THROW_MSG(F::mse_loss(X(), X(), "batchmean"), ValueError, "batchmean is not a valid value for reduction");
  EXPECT_THROW_MSG(F::kl_div(X(), X(), "avg"), ValueError, "avg is not a valid value for reduction");
}

// ---------------------------------------------------------------- nll_loss
EMBER_DEVICE_TEST(NNLoss, NllLoss) {
  Tensor lp = ember::log_softmax(X(), 1);
  EXPECT_TRUE(close_to(F::nll_loss(lp, TI(), W()), R({0.568402706111})));  // torch 1.13
  EXPECT_TRUE(close_to(F::nll_loss(lp, T(), std::nullopt, -100, "none"),
                       R({0.346041294905, 0.366166087785, 0.864884587719}, {3})));
  // naive: weighted mean divides by the weights of the kept targets
  auto lv = lp.tolist<double>();
  double num = -(0.5 * 0 + 2.0 * lv[2] + 1.5 * lv[11]) , den = 2.0 + 1.5;
  EXPECT_TRUE(close_to(F::nll_loss(lp, TI(), W()), R({num / den})));
  EXPECT_TRUE(std::isnan(F::nll_loss(lp, tensor(std::vector<int64_t>{-100, -100, -100})).item().to<double>()));
  Tensor x = randn({4, 3}, {.dtype = kFloat64}).requires_grad_();
  Tensor t = tensor(std::vector<int64_t>{1, -100, 2, 0});
  for (std::string red : {"mean", "sum", "none"})
    EXPECT_TRUE(gradcheck([&](const variable_list& v) { return F::nll_loss(v[0], t, tensor({1., 2., 0.5}), -100, red); },
                          {x}));
}

// ---------------------------------------------------------------- regression losses
namespace {
const std::vector<double> kA = {0.2, -1.5, 3.0, 0.7, -0.1, 2.2}, kB = {0.0, -0.5, 1.0, 1.5, 0.3, -0.4};
Tensor A() { return tensor(kA, {.dtype = kFloat64}); }
Tensor B() { return tensor(kB, {.dtype = kFloat64}); }
Tensor rg(Tensor t) { return t.detach().requires_grad_(); }
}  // namespace

EMBER_DEVICE_TEST(NNLoss, RegressionTorchValues) {
  // from torch 1.13
  EXPECT_TRUE(close_to(F::mse_loss(A(), B()), R({2.1})));
  EXPECT_TRUE(close_to(F::l1_loss(A(), B(), "sum"), R({7.0})));
  EXPECT_TRUE(close_to(F::smooth_l1_loss(A(), B(), "none", 0.5), R({0.04, 0.75, 1.75, 0.55, 0.16, 2.35}, {6})));
  EXPECT_TRUE(close_to(F::smooth_l1_loss(A(), B()), R({0.753333333333})));
  EXPECT_TRUE(close_to(F::huber_loss(A(), B(), "none", 1.5), R({0.02, 0.5, 1.875, 0.32, 0.08, 2.775}, {6})));
  // naive references; beta = 0 is l1
  Ref d = ref_binary(ref_of(A()), ref_of(B()), [](double a, double b) { return std::abs(a - b); });
  EXPECT_TRUE(close_to(F::smooth_l1_loss(A(), B(), "none", 0.0), d));
  Ref sq = ref_binary(ref_of(A()), ref_of(B()), [](double a, double b) { return (a - b) * (a - b); });
  EXPECT_TRUE(close_to(F::mse_loss(A().to(kFloat32), B().to(kFloat32), "none"), sq, kFloat32));
  // broadcasting as PyTorch
  EXPECT_EQ(F::mse_loss(randn({3, 4}), randn({4}), "none").sizes(), (Shape{3, 4}));
}

EMBER_DEVICE_TEST(NNLoss, RegressionGradcheck) {
  for (std::string red : {"mean", "sum", "none"}) {
    Tensor a = rg(A()), b = rg(B());
    EXPECT_TRUE(gradcheck([&](const variable_list& v) { return F::mse_loss(v[0], v[1], red); }, {a, b}));
    EXPECT_TRUE(gradcheck([&](const variable_list& v) { return F::l1_loss(v[0], v[1], red); }, {a, b}));
    EXPECT_TRUE(gradcheck([&](const variable_list& v) { return F::smooth_l1_loss(v[0], v[1], red, 0.7); }, {a, b}));
    EXPECT_TRUE(gradcheck([&](const variable_list& v) { return F::huber_loss(v[0], v[1], red, 0.8); }, {a, b}));
  }
  EXPECT_TRUE(gradgradcheck([&](const variable_list& v) { return F::mse_loss(v[0], v[1]); }, {rg(A()), rg(B())}));
  EXPECT_THROW_MSG(F::smooth_l1_loss(A(), B(), "mean", -1.0), Error, "smooth_l1_loss does not support negative values for beta.");
}

// ---------------------------------------------------------------- binary cross entropy
EMBER_DEVICE_TEST(NNLoss, BinaryCrossEntropy) {
  Tensor p = tensor({0.1, 0.9, 0.5, 0.0, 1.0, 0.3}, {.dtype = kFloat64});
  Tensor t = tensor({0., 1., 0.3, 1., 0., 0.7}, {.dtype = kFloat64});
  Tensor w = tensor({0.5, 1., 2., 1., 1., 3.}, {.dtype = kFloat64});
  // torch 1.13 (log clamped at -100)
  EXPECT_TRUE(close_to(F::binary_cross_entropy(p, t, std::nullopt, "none"),
                       R({0.105360515658, 0.105360515658, 0.69314718056, 100.0, 100.0, 0.94978344621}, {6})));
  EXPECT_TRUE(close_to(F::binary_cross_entropy(p, t, w), R({34.065614245539})));
  EXPECT_TRUE(close_to(F::binary_cross_entropy(p.to(kFloat32), t.to(kFloat32), std::nullopt, "none"),
                       R({0.105360515658, 0.105360515658, 0.69314718056, 100.0, 100.0, 0.94978344621}, {6})));
  Tensor pi = rg(tensor({0.1, 0.8, 0.5, 0.35}, {.dtype = kFloat64}));
  Tensor ti = rg(tensor({0.2, 1., 0.3, 0.0}, {.dtype = kFloat64}));
  for (std::string red : {"mean", "sum", "none"})
    EXPECT_TRUE(gradcheck(
        [&](const variable_list& v) { return F::binary_cross_entropy(v[0], v[1], tensor({1., 2., .5, 1.5}), red); },
        {pi, ti}));
  // gradient at the clamp stays finite (PyTorch: (x - t) / max(x (1 - x), 1e-12))
  Tensor z = rg(tensor({0.0, 1.0}, {.dtype = kFloat64}));
  F::binary_cross_entropy(z, tensor({0.0, 1.0}, {.dtype = kFloat64})).backward();
  EXPECT_TRUE(close_to(z.grad(), R({0.0, 0.0}, {2})));
  EXPECT_THROW_MSG(F::binary_cross_entropy(tensor({0.5, 1.5}), tensor({0., 1.})), Error,
                   "all elements of input should be between 0 and 1");
  EXPECT_THROW_MSG(F::binary_cross_entropy(tensor({0.5, -0.1}), tensor({0., 1.})), Error,
                   "all elements of input should be between 0 and 1");
  EXPECT_THROW_MSG(F::binary_cross_entropy(tensor({0.5, 0.1}), tensor({0., 1., 1.})), ValueError,
                   "Using a target size ([3]) that is different to the input size ([2]) is deprecated");
}

EMBER_DEVICE_TEST(NNLoss, BinaryCrossEntropyWithLogits) {
  Tensor t = tensor({0., 1., 0.3, 1., 0., 0.7}, {.dtype = kFloat64});
  // torch 1.13
  EXPECT_TRUE(close_to(F::binary_cross_entropy_with_logits(A() * 10.0, t, std::nullopt, "none"),
                       R({2.126928011043, 15.000000305902, 21.0, 0.000911466454, 0.313261687518, 6.600000000279}, {6})));
  EXPECT_TRUE(close_to(F::binary_cross_entropy_with_logits(A().reshape({2, 3}), t.reshape({2, 3}), std::nullopt, "none",
                                                           tensor({1., 2., 0.5}, {.dtype = kFloat64})),
                       R({0.798138869382, 3.402826555966, 2.141299248838, 0.403186048885, 0.644396660074,
                          0.72830415785},
                         {2, 3})));
  // stable for huge logits
  Tensor big = tensor({1000.f, -1000.f});
  EXPECT_TRUE(close_to(F::binary_cross_entropy_with_logits(big, tensor({0.f, 1.f}), std::nullopt, "none"),
                       R({1000.0, 1000.0}, {2})));
  // gradient at x = 0 is sigmoid(0) - t
  Tensor z = rg(tensor({0.0}, {.dtype = kFloat64}));
  F::binary_cross_entropy_with_logits(z, tensor({0.25}, {.dtype = kFloat64}), std::nullopt, "sum").backward();
  EXPECT_NEAR(z.grad().item().to<double>(), 0.25, 1e-12);
  Tensor x = rg(A().reshape({2, 3})), tt = rg(t.reshape({2, 3}));
  Tensor pw = rg(tensor({1., 2., 0.5}, {.dtype = kFloat64}));
  for (std::string red : {"mean", "sum", "none"}) {
    EXPECT_TRUE(gradcheck(
        [&](const variable_list& v) {
          return F::binary_cross_entropy_with_logits(v[0], v[1], tensor({{1., 2., 3.}}, {.dtype = kFloat64}), red, v[2]);
        },
        {x, tt, pw}));
    EXPECT_TRUE(gradcheck(
        [&](const variable_list& v) { return F::binary_cross_entropy_with_logits(v[0], v[1], std::nullopt, red); },
        {x, tt}));
  }
  EXPECT_TRUE(gradgradcheck(
      [&](const variable_list& v) { return F::binary_cross_entropy_with_logits(v[0], v[1], std::nullopt, "mean", pw); },
      {x, tt}));
}

// ---------------------------------------------------------------- kl_div
EMBER_DEVICE_TEST(NNLoss, KlDiv) {
  Tensor lq = ember::log_softmax(X(), 1), tq = PT();
  // torch 1.13
  EXPECT_TRUE(close_to(F::kl_div(lq, tq, "batchmean"), R({0.392798235203})));
  EXPECT_TRUE(close_to(F::kl_div(lq, tq, "mean"), R({0.098199558801})));
  EXPECT_TRUE(close_to(F::kl_div(lq, tq.log(), "sum", true), R({1.178394705609})));
  Tensor tz = tq.clone();
  tz.select(0, 0).select(0, 1).fill_(0.0);
  EXPECT_TRUE(close_to(F::kl_div(lq, tz, "none"),
                       R({-0.006906633877, 0.0, -0.259872192848, 0.465172585436, 0.197466012041, -0.068139642221,
                          -0.024822477742, 0.031489836082, 0.137709022859, -0.112270722444, 0.575190679239,
                          -0.154398946883},
                         {3, 4})));
  // negative target: xlogy gives nan (torch 1.13)
  auto neg = F::kl_div(tensor({0.1, 0.2}), tensor({-0.5, 0.5}), "none").tolist<double>();
  EXPECT_TRUE(std::isnan(neg[0]));
  EXPECT_NEAR(neg[1], 0.5 * std::log(0.5) - 0.1, 1e-6);
  Tensor a = rg(lq), b = rg(tq), c = rg(tq.log());  // t > 0: xlogy is not differentiable at 0
  for (std::string red : {"batchmean", "mean", "sum", "none"}) {
    EXPECT_TRUE(gradcheck([&](const variable_list& v) { return F::kl_div(v[0], v[1], red); }, {a, b})) << red;
    EXPECT_TRUE(gradcheck([&](const variable_list& v) { return F::kl_div(v[0], v[1], red, true); }, {a, c})) << red;
  }
}

EMBER_DEVICE_TEST(NNLoss, CrossEntropyCreateGraphMatchesFusedBackward) {
  // backward with create_graph uses the differentiable formula; it must equal the fused kernel.
  Generator g(21);
  Tensor t = tensor(std::vector<int64_t>{3, -100, 0, 2, 2});
  Tensor w = host_rand({4}, g) + 0.5;
  for (std::string red : {"mean", "sum", "none"})
    for (double ls : {0.0, 0.4}) {
      Tensor x = host_randn({5, 4}, g).requires_grad_();
      Tensor out = F::cross_entropy(x, t, w, -100, red, ls);
      Tensor go = host_randn(out.sizes(), g);
      Tensor fused = autograd::grad({out}, {x}, {go}, true, false)[0];
      Tensor composite = autograd::grad({out}, {x}, {go}, true, true)[0];
      EXPECT_TRUE(close_to(composite, ref_of(fused))) << red << " ls " << ls;
    }
}

EMBER_DEVICE_TEST(NNLoss, CrossEntropyReducedPrecision) {
  Tensor t = T();
  for (DType dt : {kFloat16, kBFloat16}) {
    Tensor l = F::cross_entropy(X(dt), t, std::nullopt, -100, "none");
    EXPECT_EQ(l.dtype(), dt);
    Ref expect = ref_of(F::cross_entropy(X(dt).to(kFloat64), t, std::nullopt, -100, "none"));
    EXPECT_TRUE(close_to(l, expect, dt));
  }
}

EMBER_DEVICE_TEST(NNLoss, EmptyBatch) {
  // torch 1.13: mean over an empty batch is nan, sum is 0, none is empty
  Tensor x = zeros({0, 5}), t = zeros({0}, {.dtype = kInt64});
  EXPECT_TRUE(std::isnan(F::cross_entropy(x, t).item().to<double>()));
  EXPECT_EQ(F::cross_entropy(x, t, std::nullopt, -100, "sum").item().to<double>(), 0.0);
  EXPECT_EQ(F::cross_entropy(x, t, std::nullopt, -100, "none").sizes(), (Shape{0}));
  EXPECT_TRUE(std::isnan(F::nll_loss(x, t).item().to<double>()));
  EXPECT_TRUE(std::isnan(F::cross_entropy(x, zeros({0, 5})).item().to<double>()));
}
