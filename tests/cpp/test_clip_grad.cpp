// nn::utils gradient clipping and parameter vectors, against float64 references computed here.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "device_test.h"
#include "ember/ember.h"
#include "ember/nn/utils.h"

using namespace ember;
using namespace ember::nn::utils;

namespace {

Tensor param_with_grad(std::vector<double> values, std::vector<double> grad, Shape shape) {
  Tensor p = tensor(values, {.dtype = kFloat32}).reshape(shape).detach();
  p.requires_grad_(true);
  p.mutable_grad() = tensor(grad, {.dtype = kFloat32}).reshape(shape);
  return p;
}

struct GradSet {
  std::vector<std::vector<double>> grads = {{0.5, -1.5, 2.0, 3.0, -0.25, 1.0}, {4.0, -2.0, 0.125}, {-7.0}};
  std::vector<Tensor> params;
  GradSet(double scale = 1.0) {
    std::vector<Shape> shapes = {{2, 3}, {3}, {}};
    for (size_t i = 0; i < grads.size(); ++i) {
      for (double& g : grads[i]) g *= scale;
      params.push_back(param_with_grad(std::vector<double>(grads[i].size(), 1.0), grads[i], shapes[i]));
    }
  }
  double norm(double p) const {
    double acc = 0;
    for (auto& g : grads)
      for (double x : g) acc = std::isinf(p) ? std::max(acc, std::abs(x)) : acc + std::pow(std::abs(x), p);
    return std::isinf(p) ? acc : std::pow(acc, 1.0 / p);
  }
};

void expect_scaled(const GradSet& s, double coef) {
  for (size_t i = 0; i < s.params.size(); ++i) {
    auto got = s.params[i].grad().tolist<double>();
    ASSERT_EQ(got.size(), s.grads[i].size());
    for (size_t k = 0; k < got.size(); ++k)
      EXPECT_NEAR(got[k], s.grads[i][k] * coef, 1e-5 * std::max(1.0, std::abs(s.grads[i][k])))
          << "param " << i << " element " << k;
  }
}

}  // namespace

EMBER_DEVICE_TEST(ClipGrad, NormTwo) {
  GradSet s;
  const double total = s.norm(2.0);
  Tensor t = clip_grad_norm_(s.params, 1.0);
  EXPECT_EQ(t.dim(), 0);
  EXPECT_NEAR(t.item<double>(), total, 1e-5 * total);
  expect_scaled(s, 1.0 / (total + 1e-6));
  // After clipping, the norm is max_norm.
  double acc = 0;
  for (auto& p : s.params)
    for (double x : p.grad().tolist<double>()) acc += x * x;
  EXPECT_NEAR(std::sqrt(acc), 1.0, 1e-5);
}

EMBER_DEVICE_TEST(ClipGrad, NormInfAndOther) {
  GradSet s;
  const double total = s.norm(kInf);
  EXPECT_DOUBLE_EQ(total, 7.0);
  Tensor t = clip_grad_norm_(s.params, 2.0, kInf);
  EXPECT_NEAR(t.item<double>(), 7.0, 1e-6);
  expect_scaled(s, 2.0 / (7.0 + 1e-6));

  GradSet s3;
  const double total3 = s3.norm(3.0);
  Tensor t3 = clip_grad_norm_(s3.params, 0.5, 3.0);
  EXPECT_NEAR(t3.item<double>(), total3, 1e-5 * total3);
  expect_scaled(s3, 0.5 / (total3 + 1e-6));
}

EMBER_DEVICE_TEST(ClipGrad, SmallNormUntouched) {
  GradSet s(1e-3);
  const double total = s.norm(2.0);
  Tensor t = clip_grad_norm_(s.params, 1.0);
  EXPECT_NEAR(t.item<double>(), total, 1e-6);
  expect_scaled(s, 1.0);  // coefficient clamped to 1
}

EMBER_DEVICE_TEST(ClipGrad, ParamsWithoutGradAreSkipped) {
  GradSet s;
  Tensor no_grad = zeros({4}).requires_grad_(true);
  std::vector<Tensor> ps = s.params;
  ps.push_back(no_grad);
  Tensor t = clip_grad_norm_(ps, 1.0);
  EXPECT_NEAR(t.item<double>(), s.norm(2.0), 1e-4);
  EXPECT_FALSE(no_grad.grad().defined());
  EXPECT_EQ(clip_grad_norm_({}, 1.0).item<double>(), 0.0);
}

EMBER_DEVICE_TEST(ClipGrad, NonFiniteError) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<Tensor> ps = {param_with_grad({1, 1}, {1.0, nan}, {2}), param_with_grad({1}, {2.0}, {1})};
  try {
    clip_grad_norm_(ps, 1.0, 2.0, /*error_if_nonfinite=*/true);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("The total norm of order 2.0 for gradients from `parameters` is non-finite, "
                                         "so it cannot be clipped."),
              std::string::npos)
        << e.what();
  }
  // Nothing was scaled.
  EXPECT_DOUBLE_EQ(ps[1].grad().tolist<double>()[0], 2.0);
  std::vector<Tensor> inf_ps = {param_with_grad({1}, {std::numeric_limits<double>::infinity()}, {1})};
  EXPECT_THROW(clip_grad_norm_(inf_ps, 1.0, kInf, true), Error);
  // Without the flag, the non-finite norm is returned.
  Tensor t = clip_grad_norm_(ps, 1.0);
  EXPECT_TRUE(std::isnan(t.item<double>()));
}

EMBER_DEVICE_TEST(ClipGrad, Value) {
  GradSet s;
  clip_grad_value_(s.params, 1.25);
  for (size_t i = 0; i < s.params.size(); ++i) {
    auto got = s.params[i].grad().tolist<double>();
    for (size_t k = 0; k < got.size(); ++k)
      EXPECT_DOUBLE_EQ(got[k], std::clamp(s.grads[i][k], -1.25, 1.25));
  }
}

EMBER_DEVICE_TEST(ParamVector, RoundTrip) {
  GradSet s;
  Tensor v = parameters_to_vector(s.params);
  ASSERT_EQ(v.dim(), 1);
  EXPECT_EQ(v.numel(), 10);
  Tensor w = arange(0, 10, 1, {.dtype = kFloat32});
  vector_to_parameters(w, s.params);
  EXPECT_EQ(s.params[0].tolist<double>(), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(s.params[1].tolist<double>(), (std::vector<double>{6, 7, 8}));
  EXPECT_EQ(s.params[2].tolist<double>(), (std::vector<double>{9}));
  EXPECT_EQ(s.params[0].sizes(), (Shape{2, 3}));
  EXPECT_EQ(parameters_to_vector(s.params).tolist<double>(), w.tolist<double>());
  EXPECT_TRUE(s.params[0].requires_grad());
}

EMBER_DEVICE_TEST(ParamVector, SizeMismatch) {
  GradSet s;
  EXPECT_THROW(vector_to_parameters(zeros({9}), s.params), Error);
  EXPECT_THROW(vector_to_parameters(zeros({11}), s.params), Error);
  EXPECT_THROW(vector_to_parameters(zeros({2, 5}), s.params), Error);
}

// The multi-tensor norm and scale against float64 sums over the same values: more tensors than
// one CUDA batch holds (48), sizes from 1 to past a block's share, a transposed view and an
// empty tensor, in every floating dtype.
namespace {
double ref_norm(const std::vector<double>& v, double p) {
  double acc = 0;
  for (double x : v) {
    if (p == 0) acc += x != 0;
    else if (std::isinf(p)) acc = std::max(acc, std::abs(x));
    else acc += std::pow(std::abs(x), p);
  }
  return (p == 0 || std::isinf(p)) ? acc : std::pow(acc, 1.0 / p);
}
std::vector<Tensor> foreach_inputs(DType dt) {
  std::vector<Tensor> ts;
  for (int i = 0; i < 61; ++i) {
    const int64_t n = i == 7 ? 30001 : (i * 37) % 1500 + 1;  // 30001: float16 still holds its count (p=0)
    ts.push_back(randn({n}, {.dtype = dt}));
  }
  ts.push_back(randn({50, 70}, {.dtype = dt}).t());  // not contiguous
  ts.push_back(empty({0}, {.dtype = dt}));
  return ts;
}
}  // namespace

EMBER_DEVICE_TEST(Foreach, NormMatchesFloat64) {
  manual_seed(3);
  for (DType dt : {kFloat32, kFloat64, kBFloat16, kFloat16}) {
    std::vector<Tensor> ts = foreach_inputs(dt);
    for (double p : {2.0, 1.0, kInf, 3.0, 0.0}) {
      std::vector<Tensor> list(ts.begin(), ts.end() - (std::isinf(p) ? 1 : 0));  // max of nothing is an error
      Tensor stacked = _foreach_norm_stacked(list, p);
      ASSERT_EQ(stacked.dtype(), dt);
      ASSERT_EQ(stacked.sizes(), Shape({int64_t(list.size())}));
      std::vector<double> got = stacked.tolist<double>();
      std::vector<Tensor> each = _foreach_norm(list, p);
      ASSERT_EQ(each.size(), list.size());
      const double tol = dt == kFloat64 ? 1e-10 : dt == kFloat32 ? 1e-5 : 1e-2;
      for (size_t i = 0; i < list.size(); ++i) {
        const double want = ref_norm(list[i].tolist<double>(), p);
        EXPECT_NEAR(got[i], want, tol * std::max(1.0, want)) << dtype_name(dt) << " p=" << p << " tensor " << i;
        EXPECT_EQ(each[i].dim(), 0);
        EXPECT_EQ(each[i].item<double>(), got[i]);
      }
    }
  }
}

EMBER_DEVICE_TEST(Foreach, NormPropagatesNaN) {
  std::vector<Tensor> ts = {tensor({1.0, std::nan(""), 2.0}), tensor({3.0, 4.0})};
  for (double p : {1.0, 2.0, kInf}) {
    std::vector<double> got = _foreach_norm_stacked(ts, p).tolist<double>();
    EXPECT_TRUE(std::isnan(got[0])) << "p=" << p;
    EXPECT_NEAR(got[1], ref_norm({3.0, 4.0}, p), 1e-6) << "p=" << p;
  }
}

EMBER_DEVICE_TEST(Foreach, MulScalesInPlace) {
  manual_seed(4);
  for (DType dt : {kFloat32, kFloat64, kBFloat16}) {
    std::vector<Tensor> ts = foreach_inputs(dt);
    std::vector<std::vector<double>> before;
    for (const Tensor& t : ts) before.push_back(t.tolist<double>());
    _foreach_mul_(ts, tensor({0.25}, {.dtype = kFloat32}).reshape({}));
    _foreach_mul_(ts, Scalar(-3.0));
    for (size_t i = 0; i < ts.size(); ++i) {
      std::vector<double> got = ts[i].tolist<double>();
      ASSERT_EQ(got.size(), before[i].size());
      for (size_t k = 0; k < got.size(); k += 97)
        EXPECT_NEAR(got[k], before[i][k] * -0.75, (dt == kBFloat16 ? 2e-2 : 1e-6) * std::abs(before[i][k]))
            << dtype_name(dt) << " tensor " << i << " element " << k;
    }
  }
  std::vector<Tensor> ints = {tensor({1, 2, 3}, {.dtype = kInt64})};
  _foreach_mul_(ints, Scalar(int64_t(2)));
  EXPECT_EQ(ints[0].tolist<double>(), (std::vector<double>{2, 4, 6}));
}

EMBER_DEVICE_TEST(Foreach, Errors) {
  std::vector<Tensor> none;
  EXPECT_THROW(_foreach_norm(none), Error);
  std::vector<Tensor> mixed = {zeros({2}), zeros({2}, {.dtype = kFloat64})};
  EXPECT_THROW(_foreach_norm_stacked(mixed), Error);
  EXPECT_EQ(_foreach_norm(mixed).size(), 2u);  // the list form takes mixed dtypes
  std::vector<Tensor> ts = {zeros({2})};
  EXPECT_THROW(_foreach_mul_(ts, zeros({2})), Error);  // scale must be one element
}

EMBER_DEVICE_TEST(Foreach, GradientsFlowThroughTheLoop) {
  Tensor a = tensor({3.0, 4.0}).requires_grad_(true), b = tensor({-2.0}).requires_grad_(true);
  std::vector<Tensor> ts = {a, b};
  Tensor n = _foreach_norm_stacked(ts, 2.0);
  n.sum().backward();
  EXPECT_NEAR(a.grad().tolist<double>()[0], 0.6, 1e-6);
  EXPECT_NEAR(a.grad().tolist<double>()[1], 0.8, 1e-6);
  EXPECT_NEAR(b.grad().item<double>(), -1.0, 1e-6);
}
