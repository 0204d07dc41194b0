// Gradients of the elementwise ops (unary.cpp, binary.cpp): float64 finite-difference checks of
// first and second order on contiguous, transposed and strided inputs, broadcasting (row vector,
// 0-dim tensor, wrapped Python scalar), in-place forms on non-leaves and views, node names.
#include "gradcheck.h"
#include "ops/op_handles.h"

using namespace ember;
using namespace ember::testing;
using autograd::variable_list;

namespace {

const std::vector<Layout> kLayouts = {Layout::Contiguous, Layout::Transposed, Layout::Strided};

// A float64 leaf of shape `shape` with values in [lo, hi).
Tensor leaf(IntArrayRef shape, double lo, double hi, uint64_t seed) {
  Generator g(seed + 99);
  Tensor t = host_uniform(shape, lo, hi, g);
  t.requires_grad_(true);
  return t;
}

using Unary = std::function<Tensor(const Tensor&)>;
struct UnaryCase {
  const char* node;
  Unary fn;
  double lo, hi;
  bool smooth;  // first derivative differentiable (gradgradcheck applies)
};

std::vector<std::pair<std::string, UnaryCase>> unary_cases() {
  return {
      {"exp", {"ExpBackward0", [](const Tensor& x) { return x.exp(); }, -2, 2, true}},
      {"exp2", {"Exp2Backward0", [](const Tensor& x) { return x.exp2(); }, -2, 2, true}},
      {"log", {"LogBackward0", [](const Tensor& x) { return x.log(); }, 0.5, 2, true}},
      {"log1p", {"Log1PBackward0", [](const Tensor& x) { return x.log1p(); }, -0.5, 2, true}},
      {"expm1", {"Expm1Backward0", [](const Tensor& x) { return x.expm1(); }, -2, 2, true}},
      {"log2", {"Log2Backward0", [](const Tensor& x) { return x.log2(); }, 0.5, 2, true}},
      {"log10", {"Log10Backward0", [](const Tensor& x) { return x.log10(); }, 0.5, 2, true}},
      {"sqrt", {"SqrtBackward0", [](const Tensor& x) { return x.sqrt(); }, 0.5, 2, true}},
      {"rsqrt", {"RsqrtBackward0", [](const Tensor& x) { return x.rsqrt(); }, 0.5, 2, true}},
      {"sin", {"SinBackward0", [](const Tensor& x) { return x.sin(); }, -2, 2, true}},
      {"cos", {"CosBackward0", [](const Tensor& x) { return x.cos(); }, -2, 2, true}},
      {"tan", {"TanBackward0", [](const Tensor& x) { return x.tan(); }, -1.2, 1.2, true}},
      {"asin", {"AsinBackward0", [](const Tensor& x) { return x.asin(); }, -0.9, 0.9, true}},
      {"acos", {"AcosBackward0", [](const Tensor& x) { return x.acos(); }, -0.9, 0.9, true}},
      {"atan", {"AtanBackward0", [](const Tensor& x) { return x.atan(); }, -2, 2, true}},
      {"sinh", {"SinhBackward0", [](const Tensor& x) { return x.sinh(); }, -2, 2, true}},
      {"cosh", {"CoshBackward0", [](const Tensor& x) { return x.cosh(); }, -2, 2, true}},
      {"tanh", {"TanhBackward0", [](const Tensor& x) { return x.tanh(); }, -2, 2, true}},
      {"sigmoid", {"SigmoidBackward0", [](const Tensor& x) { return x.sigmoid(); }, -3, 3, true}},
      {"silu", {"SiluBackward0", [](const Tensor& x) { return x.silu(); }, -3, 3, true}},
      {"erf", {"ErfBackward0", [](const Tensor& x) { return x.erf(); }, -2, 2, true}},
      {"reciprocal", {"ReciprocalBackward0", [](const Tensor& x) { return x.reciprocal(); }, 0.5, 2, true}},
      {"reciprocal_neg", {"ReciprocalBackward0", [](const Tensor& x) { return x.reciprocal(); }, -2, -0.5, true}},
      {"neg", {"NegBackward0", [](const Tensor& x) { return -x; }, -2, 2, false}},
      {"abs_pos", {"AbsBackward0", [](const Tensor& x) { return x.abs(); }, 0.2, 2, true}},
      {"abs_neg", {"AbsBackward0", [](const Tensor& x) { return x.abs(); }, -2, -0.2, true}},
      {"sign", {"SignBackward0", [](const Tensor& x) { return x.sign(); }, 0.2, 2, false}},
      {"square", {"PowBackward0", [](const Tensor& x) { return x.square(); }, -2, 2, true}},
      {"relu", {"ReluBackward0", [](const Tensor& x) { return x.relu(); }, -2, 2, false}},
      {"floor", {"FloorBackward0", [](const Tensor& x) { return x.floor(); }, 0.1, 0.9, false}},
      {"ceil", {"CeilBackward0", [](const Tensor& x) { return x.ceil(); }, 0.1, 0.9, false}},
      {"round", {"RoundBackward0", [](const Tensor& x) { return x.round(); }, 0.1, 0.4, false}},
      {"trunc", {"TruncBackward0", [](const Tensor& x) { return x.trunc(); }, 0.1, 0.9, false}},
      {"frac", {"FracBackward0", [](const Tensor& x) { return x.frac(); }, 0.1, 0.9, false}},
      {"gelu", {"GeluBackward0", [](const Tensor& x) { return x.gelu(); }, -3, 3, true}},
      {"gelu_tanh", {"GeluBackward0", [](const Tensor& x) { return x.gelu("tanh"); }, -3, 3, true}},
      {"leaky_relu", {"LeakyReluBackward0", [](const Tensor& x) { return leaky_relu(x, 0.2); }, -2, 2, false}},
      {"nan_to_num", {"NanToNumBackward0", [](const Tensor& x) { return x.nan_to_num(); }, -2, 2, false}},
      {"clamp", {"ClampBackward1", [](const Tensor& x) { return x.clamp(-0.5, 0.5); }, -2, 2, false}},
      {"clamp_min", {"ClampBackward1", [](const Tensor& x) { return x.clamp(0.3); }, -2, 2, false}},
      {"clamp_max", {"ClampBackward1", [](const Tensor& x) { return x.clamp(std::nullopt, 0.3); }, -2, 2, false}},
      {"pow_scalar", {"PowBackward0", [](const Tensor& x) { return x.pow(2.5); }, 0.5, 2, true}},
      {"pow_int_scalar", {"PowBackward0", [](const Tensor& x) { return x.pow(3); }, -2, 2, true}},
      {"pow_zero", {"PowBackward0", [](const Tensor& x) { return x.pow(0.0); }, -2, 2, false}},
      {"rpow", {"PowBackward2", [](const Tensor& x) { return pow(2.5, x); }, -2, 2, true}},
      {"div_scalar", {"DivBackward0", [](const Tensor& x) { return x / 4.0; }, -2, 2, false}},
      {"rdiv", {"DivBackward0", [](const Tensor& x) { return div(3.0, x); }, 0.5, 2, true}},
      {"remainder_scalar", {"RemainderBackward0", [](const Tensor& x) { return x.remainder(1.5); }, 0.1, 1.4, false}},
      {"fmod_scalar", {"FmodBackward0", [](const Tensor& x) { return x.fmod(-1.5); }, 0.1, 1.4, false}},
      {"lerp_scalar", {"LerpBackward0", [](const Tensor& x) { return x.lerp(x * x, 0.3); }, -2, 2, true}},
  };
}

void PrintTo(const std::pair<std::string, UnaryCase>& p, std::ostream* os) { *os << p.first; }
class UnaryGrad : public ::testing::TestWithParam<std::pair<std::string, UnaryCase>> {};

TEST_P(UnaryGrad, GradcheckEveryLayout) {
  const UnaryCase& c = GetParam().second;
  GradFn f = [&](const variable_list& x) { return c.fn(x[0]); };
  for (Layout l : kLayouts) {
    Tensor x = grad_input(l, c.lo, c.hi, 3);
    EXPECT_TRUE(gradcheck(f, {x})) << layout_name(l);
    if (c.smooth) EXPECT_TRUE(gradgradcheck(f, {x})) << layout_name(l);
  }
  Tensor z = leaf({}, c.lo, c.hi, 5);  // 0-dim
  EXPECT_TRUE(gradcheck(f, {z}));
  Tensor out = c.fn(grad_input(Layout::Contiguous, c.lo, c.hi));
  ASSERT_NE(out.grad_fn(), nullptr);
  EXPECT_EQ(out.grad_fn()->name(), c.node);
}

INSTANTIATE_TEST_SUITE_P(Ops, UnaryGrad, ::testing::ValuesIn(unary_cases()),
                         [](const auto& info) { return info.param.first; });

// ---------------------------------------------------------------- two tensor operands
using Binary = std::function<Tensor(const Tensor&, const Tensor&)>;
struct BinaryCase {
  const char* node;
  Binary fn;
  double alo, ahi, blo, bhi;
  bool smooth;
};

std::vector<std::pair<std::string, BinaryCase>> binary_cases() {
  return {
      {"mul", {"MulBackward0", [](const Tensor& a, const Tensor& b) { return a * b; }, -2, 2, -2, 2, true}},
      {"div", {"DivBackward0", [](const Tensor& a, const Tensor& b) { return a / b; }, -2, 2, 0.5, 2, true}},
      {"div_neg", {"DivBackward0", [](const Tensor& a, const Tensor& b) { return a / b; }, -2, 2, -2, -0.5, true}},
      {"div_trunc", {"DivBackward2", [](const Tensor& a, const Tensor& b) { return a.div(b, "trunc"); }, 0.1, 0.4, 1, 2, false}},
      {"div_floor", {"DivBackward2", [](const Tensor& a, const Tensor& b) { return a.div(b, "floor"); }, 0.1, 0.4, 1, 2, false}},
      {"pow", {"PowBackward1", [](const Tensor& a, const Tensor& b) { return a.pow(b); }, 0.5, 2, -2, 2, true}},
      {"atan2", {"Atan2Backward0", [](const Tensor& a, const Tensor& b) { return atan2(a, b); }, 0.2, 2, -2, 2, true}},
      {"maximum", {"MaximumBackward0", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }, -2, 2, -2, 2, false}},
      {"minimum", {"MinimumBackward0", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }, -2, 2, -2, 2, false}},
      {"remainder", {"RemainderBackward1", [](const Tensor& a, const Tensor& b) { return a.remainder(b); }, -2, 2, 0.7, 1.5, false}},
      {"fmod", {"FmodBackward1", [](const Tensor& a, const Tensor& b) { return a.fmod(b); }, -2, 2, 0.7, 1.5, false}},
      {"floor_divide", {"FloorDivideBackward0", [](const Tensor& a, const Tensor& b) { return a.floor_divide(b); }, 0.1, 0.4, 1, 2, false}},
      {"lerp_tensor", {"LerpBackward1", [](const Tensor& a, const Tensor& b) { return a.lerp(b, a * b); }, -1, 1, -1, 1, true}},
      {"where", {"WhereBackward0", [](const Tensor& a, const Tensor& b) { return where(a.gt(0), a * 3, b); }, -2, 2, -2, 2, false}},
      {"clamp_tensor", {"ClampBackward0", [](const Tensor& a, const Tensor& b) { return a.clamp(b, std::nullopt); }, -2, 2, -2, 2, false}},
      {"clamp_tensor_max", {"ClampBackward0", [](const Tensor& a, const Tensor& b) { return a.clamp(std::nullopt, b); }, -2, 2, -2, 2, false}},
  };
}

void PrintTo(const std::pair<std::string, BinaryCase>& p, std::ostream* os) { *os << p.first; }
class BinaryGrad : public ::testing::TestWithParam<std::pair<std::string, BinaryCase>> {};

TEST_P(BinaryGrad, SameShapeEveryLayout) {
  const BinaryCase& c = GetParam().second;
  GradFn f = [&](const variable_list& x) { return c.fn(x[0], x[1]); };
  for (Layout la : kLayouts)
    for (Layout lb : kLayouts) {
      Tensor a = grad_input(la, c.alo, c.ahi, 1), b = grad_input(lb, c.blo, c.bhi, 2);
      EXPECT_TRUE(gradcheck(f, {a, b})) << layout_name(la) << " / " << layout_name(lb);
      if (c.smooth && la == lb) EXPECT_TRUE(gradgradcheck(f, {a, b})) << layout_name(la);
    }
  Tensor out = c.fn(grad_input(Layout::Contiguous, c.alo, c.ahi, 1), grad_input(Layout::Contiguous, c.blo, c.bhi, 2));
  ASSERT_NE(out.grad_fn(), nullptr);
  EXPECT_EQ(out.grad_fn()->name(), c.node);
}

TEST_P(BinaryGrad, Broadcasting) {
  const BinaryCase& c = GetParam().second;
  GradFn f = [&](const variable_list& x) { return c.fn(x[0], x[1]); };
  for (Layout l : kLayouts) {
    Tensor a = grad_input(l, c.alo, c.ahi, 1), bt = grad_input(l, c.blo, c.bhi, 2);
    Tensor row = leaf({4}, c.blo, c.bhi, 3), col = leaf({3, 1}, c.blo, c.bhi, 4), zero_dim = leaf({}, c.blo, c.bhi, 5);
    Tensor arow = leaf({4}, c.alo, c.ahi, 6), azero = leaf({}, c.alo, c.ahi, 7);
    EXPECT_TRUE(gradcheck(f, {a, row})) << "row other, " << layout_name(l);
    EXPECT_TRUE(gradcheck(f, {a, col})) << "column other, " << layout_name(l);
    EXPECT_TRUE(gradcheck(f, {a, zero_dim})) << "0-dim other, " << layout_name(l);
    EXPECT_TRUE(gradcheck(f, {arow, bt})) << "row self, " << layout_name(l);
    EXPECT_TRUE(gradcheck(f, {azero, bt})) << "0-dim self, " << layout_name(l);
    if (c.smooth) {
      EXPECT_TRUE(gradgradcheck(f, {a, row})) << layout_name(l);
      EXPECT_TRUE(gradgradcheck(f, {azero, bt})) << layout_name(l);
    }
  }
  // One operand constant: only the other gets a gradient.
  Tensor a = grad_input(Layout::Transposed, c.alo, c.ahi, 1);
  Tensor b = grad_input(Layout::Strided, c.blo, c.bhi, 2).detach();
  EXPECT_TRUE(gradcheck(f, {a, b}));
  EXPECT_TRUE(gradcheck(f, {a.detach(), b.clone().requires_grad_()}));
}

INSTANTIATE_TEST_SUITE_P(Ops, BinaryGrad, ::testing::ValuesIn(binary_cases()),
                         [](const auto& info) { return info.param.first; });

// ---------------------------------------------------------------- three operands
EMBER_DEVICE_TEST(GradElementwise, ClampTensorBothBounds) {
  GradFn f = [](const variable_list& x) { return x[0].clamp(x[1], x[2]); };
  for (Layout l : kLayouts) {
    Tensor x = grad_input(l, -2, 2, 1);
    Tensor lo = leaf({4}, -1.5, -0.5, 2), hi = leaf({3, 1}, 0.5, 1.5, 3);
    EXPECT_TRUE(gradcheck(f, {x, lo, hi})) << layout_name(l);
    Tensor lo_full = grad_input(l, -1.5, -0.5, 4), hi0 = leaf({}, 0.2, 0.8, 5);
    EXPECT_TRUE(gradcheck(f, {x, lo_full, hi0})) << layout_name(l);
  }
  // min > max: the result is max everywhere; all the gradient goes to max (as PyTorch).
  Tensor x = tensor({-3.0, 0.0, 3.0}, {.requires_grad = true});
  Tensor lo = tensor({1.0, 1.0, 1.0}, {.requires_grad = true});
  Tensor hi = tensor({0.0, 0.0, 0.0}, {.requires_grad = true});
  x.clamp(lo, hi).backward(ones({3}, {.dtype = kFloat32}));
  EXPECT_EQ(x.grad().tolist<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(lo.grad().tolist<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(hi.grad().tolist<float>(), (std::vector<float>{1, 1, 1}));
  // Ties split evenly between x and the bound it meets; x meeting both keeps all (PyTorch 2.x).
  auto grads = [](std::vector<double> xs, std::vector<double> los, std::vector<double> his) {
    Tensor x = tensor(xs), lo = tensor(los), hi = tensor(his);
    for (Tensor* t : {&x, &lo, &hi}) t->requires_grad_();
    x.clamp(lo, hi).backward(ones({int64_t(xs.size())}, {.dtype = kFloat32}));
    return std::vector<std::vector<float>>{x.grad().tolist<float>(), lo.grad().tolist<float>(),
                                           hi.grad().tolist<float>()};
  };
  const double nan = std::nan("");
  auto r = grads({0, 1, 0, 1, -1, 1, nan, nan}, {0, 0, 0, 1, 0, 0, 0, 1}, {1, 1, 0, 1, 0, 0, 1, 0});
  EXPECT_EQ(r[0], (std::vector<float>{0.5, 0.5, 1, 1, 0, 0, 1, 1}));
  EXPECT_EQ(r[1], (std::vector<float>{0.5, 0, 0, 0, 1, 0, 0, 0}));
  EXPECT_EQ(r[2], (std::vector<float>{0, 0.5, 0, 0, 0, 1, 0, 1}));
  // One tensor bound: a tie halves; a NaN x passes its gradient to both.
  Tensor x1 = tensor({-1.0, 0.0, 1.0, nan}, {.requires_grad = true}), lo1 = tensor({0.0}, {.requires_grad = true});
  x1.clamp(lo1, std::nullopt).backward(ones({4}, {.dtype = kFloat32}));
  EXPECT_EQ(x1.grad().tolist<float>(), (std::vector<float>{0, 0.5, 1, 1}));
  EXPECT_EQ(lo1.grad().tolist<float>(), (std::vector<float>{2.5}));
}

EMBER_DEVICE_TEST(GradElementwise, LerpTensorWeight) {
  GradFn f = [](const variable_list& x) { return x[0].lerp(x[1], x[2]); };
  for (Layout l : kLayouts) {
    Tensor s = grad_input(l, -2, 2, 1), e = grad_input(l, -2, 2, 2), w = grad_input(l, 0, 1, 3);
    EXPECT_TRUE(gradcheck(f, {s, e, w})) << layout_name(l);
    EXPECT_TRUE(gradgradcheck(f, {s, e, w})) << layout_name(l);
    Tensor w0 = leaf({}, 0.6, 0.9, 4), wrow = leaf({4}, 0, 1, 5), erow = leaf({4}, -2, 2, 6);
    EXPECT_TRUE(gradcheck(f, {s, e, w0})) << "0-dim weight " << layout_name(l);
    EXPECT_TRUE(gradcheck(f, {s, erow, wrow})) << "row end and weight " << layout_name(l);
    EXPECT_TRUE(gradgradcheck(f, {s, erow, w0})) << layout_name(l);
  }
  Tensor s = grad_input(Layout::Contiguous), e = grad_input(Layout::Contiguous);
  EXPECT_EQ(s.lerp(e, 0.25).grad_fn()->name(), "LerpBackward0");
  EXPECT_EQ(s.lerp(e, tensor(0.25, {.dtype = kFloat64})).grad_fn()->name(), "LerpBackward1");
  // A Python-number weight: d/dstart = 1 - w, d/dend = w.
  s.lerp(e, 0.25).backward(ones({3, 4}, {.dtype = kFloat64}));
  EXPECT_DOUBLE_EQ(s.grad().tolist<double>()[5], 0.75);
  EXPECT_DOUBLE_EQ(e.grad().tolist<double>()[5], 0.25);
}

EMBER_DEVICE_TEST(GradElementwise, WhereEveryBroadcast) {
  Tensor cond = make_input(kFloat64, Layout::Contiguous, -1, 1, 9).gt(0.0);
  GradFn f = [&](const variable_list& x) { return where(cond, x[0], x[1]); };
  for (Layout l : kLayouts) {
    Tensor a = grad_input(l, -2, 2, 1), b = grad_input(l, -2, 2, 2);
    EXPECT_TRUE(gradcheck(f, {a, b})) << layout_name(l);
    EXPECT_TRUE(gradcheck(f, {a, leaf({4}, -2, 2, 3)})) << layout_name(l);
    EXPECT_TRUE(gradcheck(f, {leaf({}, -2, 2, 4), b})) << layout_name(l);
    // Smooth in each operand: the first-order gradient of a product through where.
    GradFn g = [&](const variable_list& x) { return where(cond, x[0] * x[0], x[1] * x[0]); };
    EXPECT_TRUE(gradgradcheck(g, {a, b})) << layout_name(l);
  }
  // A scalar operand and a condition that broadcasts.
  Tensor crow = tensor({true, false, true, false});
  Tensor a = grad_input(Layout::Transposed);
  Tensor r = where(crow, a, 7.0);
  EXPECT_EQ(r.grad_fn()->name(), "WhereBackward0");
  r.backward(ones({3, 4}, {.dtype = kFloat64}));
  EXPECT_EQ(a.grad().tolist<double>(), (std::vector<double>{1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0}));
  Tensor b = grad_input(Layout::Strided);
  where(crow, 2.0, b).backward(ones({3, 4}, {.dtype = kFloat64}));
  EXPECT_EQ(b.grad().tolist<double>(), (std::vector<double>{0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1}));
}

// ---------------------------------------------------------------- exact values and edge cases
EMBER_DEVICE_TEST(GradElementwise, MaximumMinimumSplitTies) {
  Tensor x = tensor({1.0, 2.0, 3.0}, {.requires_grad = true});
  Tensor y = tensor({1.0, 0.0, 5.0}, {.requires_grad = true});
  maximum(x, y).backward(ones({3}, {.dtype = kFloat32}));
  EXPECT_EQ(x.grad().tolist<float>(), (std::vector<float>{0.5, 1, 0}));
  EXPECT_EQ(y.grad().tolist<float>(), (std::vector<float>{0.5, 0, 1}));
  x.set_grad(Tensor());
  y.set_grad(Tensor());
  minimum(x, y).backward(ones({3}, {.dtype = kFloat32}));
  EXPECT_EQ(x.grad().tolist<float>(), (std::vector<float>{0.5, 0, 1}));
  EXPECT_EQ(y.grad().tolist<float>(), (std::vector<float>{0.5, 1, 0}));
}

EMBER_DEVICE_TEST(GradElementwise, KinksFollowPyTorch) {
  Tensor x = tensor({-1.0, 0.0, 2.0}, {.requires_grad = true});
  Tensor g = ones({3}, {.dtype = kFloat32});
  auto grad_of = [&](const Unary& f) {
    x.set_grad(Tensor());
    f(x).backward(g);
    return x.grad().tolist<float>();
  };
  EXPECT_EQ(grad_of([](const Tensor& t) { return t.relu(); }), (std::vector<float>{0, 0, 1}));
  EXPECT_EQ(grad_of([](const Tensor& t) { return t.abs(); }), (std::vector<float>{-1, 0, 1}));
  EXPECT_EQ(grad_of([](const Tensor& t) { return leaky_relu(t, 0.1); }), (std::vector<float>{0.1f, 0.1f, 1}));
  // clamp passes the gradient strictly inside its bounds (PyTorch 2.x; 1.13 included them).
  EXPECT_EQ(grad_of([](const Tensor& t) { return t.clamp(-1.0, 0.0); }), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(grad_of([](const Tensor& t) { return t.clamp(-2.0, 3.0); }), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(grad_of([](const Tensor& t) { return t.clamp(-1.0); }), (std::vector<float>{0, 1, 1}));
  EXPECT_EQ(grad_of([](const Tensor& t) { return t.clamp(std::nullopt, 2.0); }), (std::vector<float>{1, 1, 0}));
  EXPECT_EQ(grad_of([](const Tensor& t) { return t.clamp(0.5, 0.1); }), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(grad_of([](const Tensor& t) { return t.sqrt(); })[2], float(0.5 / std::sqrt(2.0)));
  // pow at 0 with exponent 0: zero gradient, not NaN.
  EXPECT_EQ(grad_of([](const Tensor& t) { return t.pow(0.0); }), (std::vector<float>{0, 0, 0}));
  Tensor e = tensor({0.0, 2.0, 0.5}, {.requires_grad = true});
  Tensor base = tensor({0.0, 0.0, 4.0}, {.requires_grad = true});
  base.pow(e).backward(g);
  EXPECT_EQ(e.grad().tolist<float>()[0], 0.0f);  // base 0, exponent >= 0
  EXPECT_EQ(e.grad().tolist<float>()[1], 0.0f);
  EXPECT_FLOAT_EQ(e.grad().tolist<float>()[2], float(2.0 * std::log(4.0)));
  EXPECT_EQ(base.grad().tolist<float>()[0], 0.0f);  // exponent 0
  EXPECT_FLOAT_EQ(base.grad().tolist<float>()[2], 0.25f);
  Tensor ez = tensor({1.0, 2.0}, {.requires_grad = true});
  pow(0.0, ez).backward(ones({2}, {.dtype = kFloat32}));
  EXPECT_EQ(ez.grad().tolist<float>(), (std::vector<float>{0, 0}));
}

EMBER_DEVICE_TEST(GradElementwise, NanToNumZeroesNonFinite) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  Tensor x = tensor({1.0, nan, inf, -inf, -2.0}, {.dtype = kFloat64, .requires_grad = true});
  Tensor y = x.nan_to_num(0.0, 5.0, -5.0);
  EXPECT_EQ(y.grad_fn()->name(), "NanToNumBackward0");
  y.backward(full({5}, 3.0, {.dtype = kFloat64}));
  EXPECT_EQ(x.grad().tolist<double>(), (std::vector<double>{3, 0, 0, 0, 3}));
}

EMBER_DEVICE_TEST(GradElementwise, GeluMatchesPyTorchValues) {
  // PyTorch's gelu_backward in closed form (erf and tanh forms) at x = -1.5, 0.3, 2.
  Tensor x = tensor({-1.5, 0.3, 2.0}, {.dtype = kFloat64, .requires_grad = true});
  Tensor g = ones({3}, {.dtype = kFloat64});
  variable_list none = autograd::grad({x.gelu()}, {x}, {g});
  variable_list tanh = autograd::grad({x.gelu("tanh")}, {x}, {g});
  auto exact = [](double v) {
    double cdf = 0.5 * (1 + std::erf(v / std::sqrt(2.0)));
    return cdf + v * std::exp(-0.5 * v * v) / std::sqrt(2 * M_PI);
  };
  auto approx = [](double v) {
    double k = std::sqrt(2 / M_PI), inner = k * (v + 0.044715 * v * v * v), t = std::tanh(inner);
    return 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * k * (1 + 3 * 0.044715 * v * v);
  };
  std::vector<double> xs{-1.5, 0.3, 2.0};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(none[0].tolist<double>()[i], exact(xs[i]), 1e-12);
    EXPECT_NEAR(tanh[0].tolist<double>()[i], approx(xs[i]), 1e-12);
  }
}

// The fused float32 backward (vectorised erf/exp/tanh) against the float64 gradient, over a
// range that reaches both tails; and the create_graph path (differentiable ops) agrees with it.
EMBER_DEVICE_TEST(GradElementwise, GeluFusedBackwardFloat32) {
  for (const char* form : {"none", "tanh"}) {
    SCOPED_TRACE(form);
    Tensor x64 = linspace(-8.0, 8.0, 1001, {.dtype = kFloat64}).requires_grad_(true);
    Tensor x32 = x64.detach().to(kFloat32).requires_grad_(true);
    Tensor g64 = linspace(-2.0, 2.0, 1001, {.dtype = kFloat64});
    Tensor d64 = autograd::grad({x64.gelu(form)}, {x64}, {g64})[0];
    Tensor d32 = autograd::grad({x32.gelu(form)}, {x32}, {g64.to(kFloat32)})[0];
    EXPECT_EQ(d32.dtype(), kFloat32);
    EXPECT_TRUE(allclose(d32.to(kFloat64), d64, 1e-5, 1e-6));
    Tensor d32g = autograd::grad({x32.gelu(form)}, {x32}, {g64.to(kFloat32)}, std::nullopt, /*create_graph=*/true)[0];
    EXPECT_TRUE(allclose(d32g.detach(), d32, 1e-5, 1e-6));
  }
}

EMBER_DEVICE_TEST(GradElementwise, ZeroGradientOps) {
  Tensor x = grad_input(Layout::Transposed, -3, 3);
  Tensor y = grad_input(Layout::Strided, 1, 2);
  Tensor zero = zeros({3, 4}, {.dtype = kFloat64});
  for (const Unary& f : std::vector<Unary>{[](const Tensor& t) { return t.sign(); }, [](const Tensor& t) { return t.floor(); },
                                           [](const Tensor& t) { return t.ceil(); }, [](const Tensor& t) { return t.round(); },
                                           [](const Tensor& t) { return t.trunc(); }}) {
    Tensor out = f(x);
    EXPECT_TRUE(out.requires_grad());
    variable_list gs = autograd::grad({out}, {x}, {ones({3, 4}, {.dtype = kFloat64})});
    EXPECT_TRUE(equal(gs[0], zero)) << out.grad_fn()->name();
  }
  for (auto mode : {"trunc", "floor"}) {
    variable_list gs = autograd::grad({x.div(y, std::string(mode))}, {x, y}, {ones({3, 4}, {.dtype = kFloat64})});
    EXPECT_TRUE(equal(gs[0], zero));
    EXPECT_TRUE(equal(gs[1], zero));
  }
  Tensor row = leaf({4}, 1, 2, 1);
  variable_list gs = autograd::grad({x.floor_divide(row)}, {x, row}, {ones({3, 4}, {.dtype = kFloat64})});
  EXPECT_EQ(gs[1].sizes(), (Shape{4}));
  EXPECT_TRUE(equal(gs[1], zeros({4}, {.dtype = kFloat64})));
}

EMBER_DEVICE_TEST(GradElementwise, MixedDtypesGiveEachInputItsDtype) {
  Tensor a = make_input(kFloat32, Layout::Contiguous).requires_grad_();
  Tensor b = leaf({4}, 0.5, 2, 1);  // float64
  Tensor out = a / b;
  EXPECT_EQ(out.dtype(), kFloat64);
  out.backward(ones({3, 4}, {.dtype = kFloat64}));
  EXPECT_EQ(a.grad().dtype(), kFloat32);
  EXPECT_EQ(b.grad().dtype(), kFloat64);
  EXPECT_EQ(b.grad().sizes(), (Shape{4}));
  // Integer inputs never require grad: exp(int) records nothing.
  EXPECT_FALSE(arange(3).exp().requires_grad());
  Tensor i = arange(3);
  Tensor f = ones({3}, {.requires_grad = true});
  EXPECT_FALSE(maximum(i, i).requires_grad());
  EXPECT_TRUE(maximum(i, f).requires_grad());
  EXPECT_THROW_MSG(i.pow_(f), Error, "result type Float can't be cast to the desired output type Long");
}

EMBER_DEVICE_TEST(GradElementwise, SecondDerivativeValues) {
  Tensor x = tensor(0.7, {.dtype = kFloat64, .requires_grad = true});
  auto d2 = [&](const Unary& f) {
    variable_list g = autograd::grad({f(x)}, {x}, {}, std::nullopt, /*create_graph=*/true);
    return autograd::grad({g[0]}, {x})[0].item<double>();
  };
  EXPECT_NEAR(d2([](const Tensor& t) { return t.exp(); }), std::exp(0.7), 1e-12);
  EXPECT_NEAR(d2([](const Tensor& t) { return t.log(); }), -1 / 0.49, 1e-12);
  EXPECT_NEAR(d2([](const Tensor& t) { return t.sin(); }), -std::sin(0.7), 1e-12);
  EXPECT_NEAR(d2([](const Tensor& t) { return t.tanh(); }),
              -2 * std::tanh(0.7) * (1 - std::tanh(0.7) * std::tanh(0.7)), 1e-12);
  EXPECT_NEAR(d2([](const Tensor& t) { return t.pow(3); }), 6 * 0.7, 1e-12);
  EXPECT_NEAR(d2([](const Tensor& t) { return t.sqrt(); }), -0.25 * std::pow(0.7, -1.5), 1e-12);
  // Third order through exp (each level records again).
  variable_list g1 = autograd::grad({x.exp()}, {x}, {}, std::nullopt, true);
  variable_list g2 = autograd::grad({g1[0]}, {x}, {}, std::nullopt, true);
  EXPECT_NEAR(autograd::grad({g2[0]}, {x})[0].item<double>(), std::exp(0.7), 1e-12);
}

// ---------------------------------------------------------------- in-place forms
struct InplaceCase {
  const char* name;
  const char* node;
  std::function<void(Tensor&)> apply;  // on a non-leaf
  double lo, hi;
  bool smooth;
};

std::vector<InplaceCase> inplace_cases() {
  Tensor row = leaf({4}, 0.5, 2, 42).detach();  // broadcasts over a 3x4 self and a 2x4 view
  return {
      {"exp_", "ExpBackward0", [](Tensor& y) { y.exp_(); }, -2, 2, true},
      {"exp2_", "Exp2Backward0", [](Tensor& y) { y.exp2_(); }, -2, 2, true},
      {"log_", "LogBackward0", [](Tensor& y) { y.log_(); }, 0.5, 2, true},
      {"log1p_", "Log1PBackward0", [](Tensor& y) { y.log1p_(); }, 0.5, 2, true},
      {"expm1_", "Expm1Backward0", [](Tensor& y) { y.expm1_(); }, -2, 2, true},
      {"log2_", "Log2Backward0", [](Tensor& y) { y.log2_(); }, 0.5, 2, true},
      {"log10_", "Log10Backward0", [](Tensor& y) { y.log10_(); }, 0.5, 2, true},
      {"sqrt_", "SqrtBackward0", [](Tensor& y) { y.sqrt_(); }, 0.5, 2, true},
      {"rsqrt_", "RsqrtBackward0", [](Tensor& y) { y.rsqrt_(); }, 0.5, 2, true},
      {"sin_", "SinBackward0", [](Tensor& y) { y.sin_(); }, -2, 2, true},
      {"cos_", "CosBackward0", [](Tensor& y) { y.cos_(); }, -2, 2, true},
      {"tan_", "TanBackward0", [](Tensor& y) { y.tan_(); }, -1.2, 1.2, true},
      {"asin_", "AsinBackward0", [](Tensor& y) { y.asin_(); }, -0.9, 0.9, true},
      {"acos_", "AcosBackward0", [](Tensor& y) { y.acos_(); }, -0.9, 0.9, true},
      {"atan_", "AtanBackward0", [](Tensor& y) { y.atan_(); }, -2, 2, true},
      {"sinh_", "SinhBackward0", [](Tensor& y) { y.sinh_(); }, -2, 2, true},
      {"cosh_", "CoshBackward0", [](Tensor& y) { y.cosh_(); }, -2, 2, true},
      {"tanh_", "TanhBackward0", [](Tensor& y) { y.tanh_(); }, -2, 2, true},
      {"sigmoid_", "SigmoidBackward0", [](Tensor& y) { y.sigmoid_(); }, -2, 2, true},
      {"silu_", "SiluBackward0", [](Tensor& y) { y.silu_(); }, -2, 2, true},
      {"erf_", "ErfBackward0", [](Tensor& y) { y.erf_(); }, -2, 2, true},
      {"reciprocal_", "ReciprocalBackward0", [](Tensor& y) { y.reciprocal_(); }, 0.5, 2, true},
      {"neg_", "NegBackward0", [](Tensor& y) { y.neg_(); }, -2, 2, false},
      {"abs_", "AbsBackward0", [](Tensor& y) { y.abs_(); }, 0.2, 2, false},
      {"sign_", "SignBackward0", [](Tensor& y) { y.sign_(); }, 0.2, 2, false},
      {"square_", "PowBackward0", [](Tensor& y) { y.square_(); }, -2, 2, true},
      {"relu_", "ReluBackward0", [](Tensor& y) { y.relu_(); }, -2, 2, false},
      {"floor_", "FloorBackward0", [](Tensor& y) { y.floor_(); }, 0.1, 0.9, false},
      {"ceil_", "CeilBackward0", [](Tensor& y) { y.ceil_(); }, 0.1, 0.9, false},
      {"round_", "RoundBackward0", [](Tensor& y) { y.round_(); }, 0.1, 0.4, false},
      {"trunc_", "TruncBackward0", [](Tensor& y) { y.trunc_(); }, 0.1, 0.9, false},
      {"frac_", "FracBackward0", [](Tensor& y) { y.frac_(); }, 0.1, 0.9, false},
      {"clamp_", "ClampBackward1", [](Tensor& y) { y.clamp_(-0.5, 0.5); }, -2, 2, false},
      {"div_", "DivBackward0", [row](Tensor& y) { y.div_(row); }, -2, 2, false},
      {"div_trunc_", "DivBackward2", [row](Tensor& y) { y.div_(row, "trunc"); }, 0.1, 0.4, false},
      {"pow_scalar_", "PowBackward0", [](Tensor& y) { y.pow_(2.5); }, 0.5, 2, true},
      {"pow_tensor_", "PowBackward1", [row](Tensor& y) { y.pow_(row); }, 0.5, 2, true},
      {"remainder_", "RemainderBackward1", [row](Tensor& y) { ops::remainder_()(y, row); }, 0.1, 0.4, false},
      {"fmod_", "FmodBackward1", [row](Tensor& y) { ops::fmod_()(y, row); }, 0.1, 0.4, false},
      {"maximum_", "MaximumBackward0", [row](Tensor& y) { ops::maximum_()(y, row); }, -2, 2, false},
      {"minimum_", "MinimumBackward0", [row](Tensor& y) { ops::minimum_()(y, row); }, -2, 2, false},
      {"atan2_", "Atan2Backward0", [row](Tensor& y) { ops::atan2_()(y, row); }, -2, 2, true},
      {"floor_divide_", "FloorDivideBackward0", [row](Tensor& y) { ops::floor_divide_()(y, row); }, 0.1, 0.4, false},
  };
}

EMBER_DEVICE_TEST(GradElementwise, InplaceOnNonLeaf) {
  for (const InplaceCase& c : inplace_cases()) {
    GradFn f = [&](const variable_list& x) {
      Tensor y = x[0] * 1;
      c.apply(y);
      return y;
    };
    for (Layout l : kLayouts) {
      Tensor x = grad_input(l, c.lo, c.hi, 8);
      EXPECT_TRUE(gradcheck(f, {x})) << c.name << " " << layout_name(l);
      if (c.smooth) EXPECT_TRUE(gradgradcheck(f, {x})) << c.name << " " << layout_name(l);
    }
    Tensor y = grad_input(Layout::Contiguous, c.lo, c.hi) * 1;
    c.apply(y);
    ASSERT_TRUE(y.requires_grad()) << c.name;
    EXPECT_EQ(y.grad_fn()->name(), c.node) << c.name;
  }
}

EMBER_DEVICE_TEST(GradElementwise, InplaceOnViewOfNonLeaf) {
  for (const InplaceCase& c : inplace_cases()) {
    GradFn f = [&](const variable_list& x) {
      Tensor y = x[0] * 1;
      Tensor v = y.slice(0, 1, 3);  // rows 1..2 of 3x4
      c.apply(v);
      return y;
    };
    Tensor x = grad_input(Layout::Transposed, c.lo, c.hi, 9);
    EXPECT_TRUE(gradcheck(f, {x})) << c.name;
  }
}

EMBER_DEVICE_TEST(GradElementwise, InplaceWithGradOnOther) {
  // y.op_(b): the gradient reaches b too, and old y is used where the formula needs it.
  struct Case { const char* name; std::function<void(Tensor&, const Tensor&)> apply; double lo, hi, blo, bhi; bool smooth; };
  std::vector<Case> cases = {
      {"div_", [](Tensor& y, const Tensor& b) { y.div_(b); }, -2, 2, 0.5, 2, true},
      {"pow_", [](Tensor& y, const Tensor& b) { y.pow_(b); }, 0.5, 2, -2, 2, true},
      {"remainder_", [](Tensor& y, const Tensor& b) { ops::remainder_()(y, b); }, 0.1, 0.4, 1, 2, false},
      {"fmod_", [](Tensor& y, const Tensor& b) { ops::fmod_()(y, b); }, 0.1, 0.4, 1, 2, false},
      {"atan2_", [](Tensor& y, const Tensor& b) { ops::atan2_()(y, b); }, -2, 2, 0.2, 2, true},
      {"maximum_", [](Tensor& y, const Tensor& b) { ops::maximum_()(y, b); }, -2, 2, -2, 2, false},
      {"minimum_", [](Tensor& y, const Tensor& b) { ops::minimum_()(y, b); }, -2, 2, -2, 2, false},
      {"mul_", [](Tensor& y, const Tensor& b) { y.mul_(b); }, -2, 2, -2, 2, true},
  };
  for (const Case& c : cases) {
    GradFn f = [&](const variable_list& x) {
      Tensor y = x[0] * 1;
      c.apply(y, x[1]);
      return y;
    };
    for (Layout l : kLayouts) {
      Tensor x = grad_input(l, c.lo, c.hi, 10), b = grad_input(Layout::Strided, c.blo, c.bhi, 11);
      EXPECT_TRUE(gradcheck(f, {x, b})) << c.name << " " << layout_name(l);
      EXPECT_TRUE(gradcheck(f, {x, leaf({4}, c.blo, c.bhi, 12)})) << c.name << " row other " << layout_name(l);
      if (c.smooth) EXPECT_TRUE(gradgradcheck(f, {x, b})) << c.name << " " << layout_name(l);
    }
  }
  // The in-place form refuses a result it cannot hold, as PyTorch.
  Tensor y = ones({3}, {.dtype = kFloat64}) * 1;
  Tensor big = ones({2, 3}, {.dtype = kFloat64, .requires_grad = true});
  EXPECT_THROW_MSG(y.div_(big), Error, "doesn't match the broadcast shape");
}

EMBER_DEVICE_TEST(GradElementwise, InplaceLeafAndSavedSelfErrors) {
  Tensor x = grad_input(Layout::Contiguous, 0.5, 2);
  EXPECT_THROW_MSG(x.exp_(), Error, "a leaf Variable that requires grad is being used in an in-place operation.");
  // log saves its input: changing it in place afterwards makes backward fail.
  Tensor y = x * 1;
  Tensor z = y.log();
  y.add_(1.0);
  EXPECT_THROW_MSG(z.backward(ones({3, 4}, {.dtype = kFloat64})), Error, "modified by an inplace operation");
  // exp saves its output: changing the input in place afterwards is fine.
  Tensor y2 = x * 1;
  Tensor e = y2.exp();
  y2.add_(1.0);
  e.backward(ones({3, 4}, {.dtype = kFloat64}));
  EXPECT_TRUE(allclose(x.grad(), x.detach().exp()));
}

}  // namespace
