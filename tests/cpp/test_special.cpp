// Special functions and scans (include/ember/special.h): values against PyTorch 2.x's (float64,
// printed to 17 digits; polygamma against mpmath), float32 and integer inputs, in-place forms, gradients (float64 finite
// differences), on every test device.
#include <cmath>

#include "device_test.h"
#include "gradcheck.h"

using namespace ember;
using namespace ember::testing;
using autograd::variable_list;

namespace {

void expect_near_all(const Tensor& got, const std::vector<double>& want, double rtol) {
  auto g = got.to(kFloat64).cpu().tolist<double>();
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(g[i], want[i], rtol * std::max(1.0, std::fabs(want[i]))) << "element " << i;
}

Tensor points() { return tensor({-2.5, 0.5, 1.0, 3.7, 12.0}, {.dtype = kFloat64}); }

}  // namespace

EMBER_DEVICE_TEST(Special, MatchesTorchFloat64) {
  Tensor x = points();
  expect_near_all(lgamma(x), {-0.05624371649767405, 0.5723649429247001, 0.0, 1.428072326665388, 17.502307845873887}, 1e-14);
  expect_near_all(digamma(x), {1.1031566406452433, -1.9635100260214229, -0.5772156649015328, 1.1671535393615111,
                               2.4426616799758123}, 1e-14);
  expect_near_all(erfc(x), {1.999593047982555, 0.4795001221869535, 0.15729920705028513, 1.6715105790914599e-07,
                            1.3562611692059042e-64}, 1e-14);
  expect_near_all(i0(x), {3.289839144050123, 1.0634833707413236, 1.2660658777520082, 8.738617524169396,
                          18948.92534929631}, 1e-14);
  expect_near_all(i1(x), {-2.5167162452886984, 0.25789430539089636, 0.5651591039924851, 7.435745796535337,
                          18141.348781638833}, 1e-14);
  expect_near_all(sinc(x), {0.12732395447351627, 0.6366197723675814, 3.8981718325193755e-17, -0.0695994884865519,
                            -3.8981718325193755e-17}, 1e-14);
  // polygamma from mpmath (30 digits): PyTorch's own trigamma is off by up to 5e-10 here
  // (pi^2 / 6 at 1 reads 1.6449340676383375 there).
  expect_near_all(polygamma(1, x), {9.539246644989124, 4.934802200544679, 1.6449340668482264, 0.3100378576700383,
                                    0.08690187287176838}, 1e-13);
  expect_near_all(polygamma(3, x), {194.74787621918762, 97.40909103400244, 6.493939402266829, 0.058279217956563614,
                                    0.001310093231070826}, 1e-13);
  expect_near_all(erfinv(tensor({-0.9, 0.0, 0.3, 0.999}, {.dtype = kFloat64})),
                  {-1.1630871536766743, 0.0, 0.2724627147267543, 2.3267537655135246}, 1e-14);
}

EMBER_DEVICE_TEST(Special, EdgeCases) {
  Tensor z = tensor({0.0, -0.0, -1.0, -2.0}, {.dtype = kFloat64});
  auto d = digamma(z).cpu().tolist<double>();
  EXPECT_EQ(d[0], -INFINITY);  // +-0 -> -+inf, as C++'s gamma functions and PyTorch
  EXPECT_EQ(d[1], INFINITY);
  EXPECT_TRUE(std::isnan(d[2]) && std::isnan(d[3]));
  auto e = erfinv(tensor({1.0, -1.0, 1.5}, {.dtype = kFloat64})).cpu().tolist<double>();
  EXPECT_EQ(e[0], INFINITY);
  EXPECT_EQ(e[1], -INFINITY);
  EXPECT_TRUE(std::isnan(e[2]));
  EXPECT_EQ(sinc(tensor({0.0})).item<float>(), 1.0f);
  EXPECT_EQ(polygamma(1, tensor({0.0}, {.dtype = kFloat64})).item<double>(), INFINITY);
  EXPECT_THROW(polygamma(-1, points()), Error);
}

EMBER_DEVICE_TEST(Special, DtypesAndInPlace) {
  Tensor i = tensor({1, 2, 3});
  Tensor r = lgamma(i);
  EXPECT_EQ(r.dtype(), kFloat32);  // integers compute in the default float dtype
  expect_near_all(r, {0.0, 0.0, std::log(2.0)}, 1e-6);
  Tensor f = tensor({0.5f, 1.5f});
  EXPECT_EQ(digamma(f).dtype(), kFloat32);
  expect_near_all(digamma(f), {-1.9635100260214229, 0.03648997397857652}, 1e-6);
  Tensor g = tensor({0.25, 0.5}, {.dtype = kFloat64});
  Tensor expected = erfinv(g);
  erfinv_(g);
  EXPECT_TRUE(equal(g, expected));
  Tensor h = tensor({1.0f, 2.0f}, {.dtype = kFloat16});
  EXPECT_EQ(i0(h).dtype(), kFloat16);
}

EMBER_DEVICE_TEST(Special, Composites) {
  Tensor a = tensor({0.0, 0.0, 2.0, -INFINITY}, {.dtype = kFloat64});
  Tensor b = tensor({0.0, NAN, 3.0, -INFINITY}, {.dtype = kFloat64});
  auto xl = xlogy(a, b).cpu().tolist<double>();
  EXPECT_EQ(xl[0], 0.0);
  EXPECT_TRUE(std::isnan(xl[1]));
  EXPECT_NEAR(xl[2], 2 * std::log(3.0), 1e-15);
  auto la = logaddexp(a, b).cpu().tolist<double>();
  EXPECT_NEAR(la[0], std::log(2.0), 1e-15);
  EXPECT_EQ(la[3], -INFINITY);
  expect_near_all(logaddexp2(tensor({1.0, 1000.0}, {.dtype = kFloat64}), tensor({1.0, 1000.0}, {.dtype = kFloat64})),
                  {2.0, 1001.0}, 1e-15);
  expect_near_all(heaviside(tensor({-1.0, 0.0, 2.0}), tensor({0.5f})), {0.0, 0.5, 1.0}, 0);
  EXPECT_THROW(heaviside(tensor({1.0}), tensor({1})), Error);
  expect_near_all(logit(tensor({0.25, 0.0}, {.dtype = kFloat64}), 0.1), {std::log(1.0 / 3.0), std::log(0.1 / 0.9)}, 1e-15);
  expect_near_all(entr(tensor({0.5, 0.0}, {.dtype = kFloat64})), {0.5 * std::log(2.0), 0.0}, 1e-15);
  EXPECT_EQ(entr(tensor({-1.0})).item<float>(), -INFINITY);
  expect_near_all(deg2rad(tensor({180})), {M_PI}, 1e-7);
}

EMBER_DEVICE_TEST(Special, Scans) {
  Tensor y = tensor({1., 3., 2., 5., -1., -4., 0., -9.}, {.dtype = kFloat64}).view({2, 4});
  auto [v, i] = cummax(y, 1);
  expect_near_all(v.flatten(), {1, 3, 3, 5, -1, -1, 0, 0}, 0);
  EXPECT_EQ(i.cpu().flatten().tolist<int64_t>(), (std::vector<int64_t>{0, 1, 1, 3, 0, 0, 2, 2}));
  auto [v0, i0_] = cummin(y, 0);
  expect_near_all(v0.flatten(), {1, 3, 2, 5, -1, -4, 0, -9}, 0);
  EXPECT_EQ(i0_.cpu().flatten().tolist<int64_t>(), (std::vector<int64_t>{0, 0, 0, 0, 1, 1, 1, 1}));
  expect_near_all(logcumsumexp(y, 1).flatten(), {1.0, 3.1269280110429727, 3.4076059644443806, 5.185182452603812, -1.0,
                                                 -0.951412648426258, 0.3265626412674705, 0.3266516650367367}, 1e-14);
  // no underflow where log(cumsum(exp)) would give log(0)
  expect_near_all(logcumsumexp(tensor({-1000.0, 0.0}, {.dtype = kFloat64}), 0), {-1000.0, 0.0}, 1e-15);
  EXPECT_THROW(logcumsumexp(tensor({1, 2}), 0), Error);
}

EMBER_DEVICE_TEST(Special, Gradients) {
  Tensor x = tensor({0.3, 1.7, 4.2, 11.0}, {.dtype = kFloat64, .requires_grad = true});
  for (auto f : std::vector<Tensor (*)(const Tensor&)>{&lgamma, &digamma, &erfc, &i0, &i1, &sinc}) {
    EXPECT_TRUE(gradcheck([f](const variable_list& v) { return f(v[0]); }, {x}));
    EXPECT_TRUE(gradgradcheck([f](const variable_list& v) { return f(v[0]); }, {x}));
  }
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return polygamma(2, v[0]); }, {x}));
  Tensor p = tensor({-0.9, -0.2, 0.1, 0.7}, {.dtype = kFloat64, .requires_grad = true});
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return erfinv(v[0]); }, {p}));
  Tensor s = tensor({0.0, -0.4, 2.5}, {.dtype = kFloat64, .requires_grad = true});
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return sinc(v[0]); }, {s}));
  Tensor m = tensor({0.5, -1.0, 2.0, 3.0, 0.1, -0.7}, {.dtype = kFloat64}).view({2, 3}).detach().requires_grad_(true);
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return logcumsumexp(v[0], 1); }, {m}));
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return std::get<0>(cummax(v[0], 1)); }, {m}));
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return std::get<0>(cummin(v[0], 0)); }, {m}));
  EXPECT_EQ(lgamma(x).grad_fn()->name(), "LgammaBackward0");
}

EMBER_DEVICE_TEST(Special, SearchSorted) {
  Tensor seq = tensor({1.0, 3.0, 5.0, 7.0});
  Tensor v = tensor({0.0, 3.0, 6.0, 9.0, NAN});
  EXPECT_EQ(searchsorted(seq, v).cpu().tolist<int64_t>(), (std::vector<int64_t>{0, 1, 3, 4, 4}));
  EXPECT_EQ(searchsorted(seq, v, false, true).cpu().tolist<int64_t>(), (std::vector<int64_t>{0, 2, 3, 4, 4}));
  Tensor i32 = searchsorted(seq, v, true);
  EXPECT_EQ(i32.dtype(), kInt32);
  // per-row sequences; an integer sequence with float values compares in the common dtype
  Tensor rows = tensor({1, 2, 3, 10, 20, 30}).view({2, 3});
  Tensor q = tensor({2.5, 0.5, 25.0, 30.0}).view({2, 2});
  EXPECT_EQ(searchsorted(rows, q).cpu().flatten().tolist<int64_t>(), (std::vector<int64_t>{2, 0, 2, 2}));
  EXPECT_EQ(bucketize(tensor({4.0, 1.0}), seq, false, true).cpu().tolist<int64_t>(), (std::vector<int64_t>{2, 1}));
  EXPECT_THROW(searchsorted(rows, tensor({1.0, 2.0})), Error);
  EXPECT_THROW(bucketize(tensor({1.0}), rows), Error);
}

EMBER_DEVICE_TEST(Special, StandardGammaGrad) {
  // d x / d alpha at fixed quantile, against mpmath (30 digits)
  Tensor a = tensor({0.5, 2.0, 30.0}, {.dtype = kFloat64});
  Tensor x = tensor({0.1, 1.5, 45.0}, {.dtype = kFloat64});
  expect_near_all(_standard_gamma_grad(a, x), {0.5097655670826973, 0.9366390678772174, 1.223142506370333}, 1e-8);
  EXPECT_EQ(_standard_gamma_grad(tensor({1.0f}), tensor({0.0f})).item<float>(), 0.0f);
}

EMBER_DEVICE_TEST(Special, IncompleteGamma) {
  // values and edge cases as PyTorch 2.x's
  Tensor a = tensor({0.5, 2.0, 7.5, 30.0, 0.0, 1.0, -1.0, INFINITY, 3.0}, {.dtype = kFloat64});
  Tensor x = tensor({0.1, 3.0, 4.0, 45.0, 1.0, 0.0, 1.0, 2.0, INFINITY}, {.dtype = kFloat64});
  auto p = igamma(a, x).cpu().tolist<double>();
  auto q = igammac(a, x).cpu().tolist<double>();
  const std::vector<double> want_p = {0.345279153981423, 0.8008517265285442, 0.07621729668453238, 0.9926628007022036,
                                      1.0, 0.0, NAN, 0.0, 1.0};
  for (size_t i = 0; i < want_p.size(); ++i) {
    if (std::isnan(want_p[i])) {
      EXPECT_TRUE(std::isnan(p[i]) && std::isnan(q[i])) << i;
      continue;
    }
    EXPECT_NEAR(p[i], want_p[i], 1e-13) << i;
    EXPECT_NEAR(q[i], 1 - want_p[i], 1e-13) << i;
  }
  Tensor xg = tensor({0.3, 2.0, 9.0}, {.dtype = kFloat64, .requires_grad = true});
  Tensor ag = tensor({0.7, 2.0, 8.0}, {.dtype = kFloat64});
  EXPECT_TRUE(gradcheck([&](const variable_list& v) { return igamma(ag, v[0]); }, {xg}));
  EXPECT_TRUE(gradcheck([&](const variable_list& v) { return igammac(ag, v[0]); }, {xg}));
}
