// Gradients of reductions, scans and softmax: finite-difference gradcheck on contiguous,
// transposed and strided float64 inputs over dims / negative dims / keepdim / all dims / 0-dim,
// gradgradcheck for the smooth ones, ties and zeros handled as PyTorch, node names.
#include "gradcheck.h"

using namespace ember;
using namespace ember::testing;
using autograd::variable_list;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const std::vector<Layout> kLayouts = {Layout::Contiguous, Layout::Transposed, Layout::Strided};

// A float64 leaf of any shape in a given layout (values uniform in [lo, hi)).
Tensor leaf(Shape shape, Layout layout = Layout::Contiguous, double lo = -2.0, double hi = 2.0, uint64_t seed = 0) {
  Generator g(seed + 99);
  Tensor t;
  if (layout == Layout::Transposed && shape.size() >= 2) {
    Shape rev(shape.rbegin(), shape.rend());
    std::vector<int64_t> perm;
    for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) perm.push_back(d);
    t = host_uniform(rev, lo, hi, g);
    t = t.permute(perm);
  } else if (layout == Layout::Strided && !shape.empty()) {
    Shape wide = shape;
    wide.back() *= 2;
    t = host_uniform(wide, lo, hi, g);
    t = t.slice(int64_t(shape.size()) - 1, 0, std::nullopt, 2);
  } else {
    t = host_uniform(shape, lo, hi, g);
  }
  t = t.detach();
  t.requires_grad_(true);
  return t;
}

Tensor values(const TensorInit& v) {
  Tensor t = tensor(v, {.dtype = kFloat64});
  t.requires_grad_(true);
  return t;
}

// grad_fn's name, or "<none>" (so a missing formula fails the test instead of crashing it).
std::string node_name(const Tensor& t) { return t.grad_fn() ? t.grad_fn()->name() : "<none>"; }

GradFn squared(GradFn f) {
  return [f](const variable_list& v) {
    Tensor y = f(v);
    return y * y;
  };
}

std::vector<double> grad_of(const Tensor& out, const Tensor& x) {
  variable_list g = autograd::grad({out.sum()}, {x});
  return g[0].tolist<double>();
}

struct DimCase {
  std::vector<int64_t> dims;
  bool keepdim;
};
const std::vector<DimCase> kDimCases = {{{}, false}, {{}, true},     {{0}, false},   {{1}, true},
                                        {{-1}, false}, {{-2}, true}, {{0, 1}, false}, {{1, 0}, true}};

#define FOR_LAYOUTS_AND_DIMS(...)                                                              \
  for (Layout layout : kLayouts)                                                                \
    for (const auto& c : kDimCases) {                                                           \
      SCOPED_TRACE(std::string(layout_name(layout)) + " dims " + ::testing::PrintToString(c.dims) + \
                   (c.keepdim ? " keepdim" : ""));                                              \
      __VA_ARGS__                                                                               \
    }

}  // namespace

// ---------------------------------------------------------------- sum / mean
EMBER_DEVICE_TEST(GradReduce, Sum) {
  FOR_LAYOUTS_AND_DIMS({
    Tensor x = grad_input(layout);
    auto f = [c](const variable_list& v) { return v[0].sum(c.dims, c.keepdim); };
    EXPECT_TRUE(gradcheck(f, {x}));
    EXPECT_TRUE(gradgradcheck(squared(f), {x}));
  })
  Tensor z = grad_input(Layout::ZeroDim);
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return v[0].sum(); }, {z}));
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return v[0].sum({0}, true); }, {z}));
  Tensor e = grad_input(Layout::Empty);
  Tensor s = e.sum({0});
  EXPECT_EQ(grad_of(s * 1.0, e).size(), 0u);
  Tensor x3 = leaf({2, 3, 4}, Layout::Transposed);
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return v[0].sum({0, 2}, false); }, {x3}));
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return v[0].sum({-1, 1}, true); }, {x3}));
}

EMBER_DEVICE_TEST(GradReduce, SumAndMeanDtypeArgumentCastsGradBack) {
  Tensor x = ones({2, 3});
  x.requires_grad_(true);
  Tensor s = x.sum({1}, false, kFloat64);
  EXPECT_EQ(s.dtype(), kFloat64);
  s.sum().backward();
  EXPECT_EQ(x.grad().dtype(), kFloat32);
  EXPECT_EQ(x.grad().tolist<double>(), std::vector<double>(6, 1.0));
  Tensor y = ones({2, 3});
  y.requires_grad_(true);
  y.mean({}, false, kFloat64).backward();
  EXPECT_EQ(y.grad().dtype(), kFloat32);
  for (double v : y.grad().tolist<double>()) EXPECT_NEAR(v, 1.0 / 6, 1e-7);
}

EMBER_DEVICE_TEST(GradReduce, Mean) {
  FOR_LAYOUTS_AND_DIMS({
    Tensor x = grad_input(layout);
    auto f = [c](const variable_list& v) { return v[0].mean(c.dims, c.keepdim); };
    EXPECT_TRUE(gradcheck(f, {x}));
    EXPECT_TRUE(gradgradcheck(squared(f), {x}));
  })
  Tensor z = grad_input(Layout::ZeroDim);
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return v[0].mean(); }, {z}));
  Tensor x = values({{1.0, 2.0}, {3.0, 4.0}});
  EXPECT_EQ(grad_of(x.mean({0}), x), (std::vector<double>{0.5, 0.5, 0.5, 0.5}));
}

// ---------------------------------------------------------------- prod
EMBER_DEVICE_TEST(GradReduce, ProdWithoutZeros) {
  for (Layout layout : kLayouts) {
    SCOPED_TRACE(layout_name(layout));
    Tensor x = grad_input(layout, 0.5, 1.5);
    for (auto f : std::vector<GradFn>{
             [](const variable_list& v) { return v[0].prod(); },
             [](const variable_list& v) { return v[0].prod(0); },
             [](const variable_list& v) { return v[0].prod(-1, true); },
             [](const variable_list& v) { return (v[0] - 1.0).prod(1); },  // mixed signs
         }) {
      EXPECT_TRUE(gradcheck(f, {x}));
      EXPECT_TRUE(gradgradcheck(f, {x}));
    }
  }
  Tensor z = grad_input(Layout::ZeroDim);
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return v[0].prod(); }, {z}));
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return v[0].prod(0); }, {z}));
}

EMBER_DEVICE_TEST(GradReduce, ProdWithZeros) {
  // One zero: its gradient is the product of the others; the rest get 0.
  Tensor a = values({2.0, 0.0, 3.0, 4.0});
  EXPECT_EQ(grad_of(a.prod(), a), (std::vector<double>{0, 24, 0, 0}));
  // Two zeros: every gradient is 0.
  Tensor b = values({2.0, 0.0, 3.0, 0.0});
  EXPECT_EQ(grad_of(b.prod(), b), (std::vector<double>{0, 0, 0, 0}));
  // Along a dim: a row with one zero, a row with two, a row with none.
  Tensor c = values({{2.0, 0.0, 3.0}, {0.0, 5.0, 0.0}, {1.0, 2.0, 3.0}});
  EXPECT_EQ(grad_of(c.prod(1), c), (std::vector<double>{0, 6, 0, 0, 0, 0, 6, 3, 2}));
  EXPECT_EQ(grad_of(c.prod(0, true), c), (std::vector<double>{0, 10, 0, 2, 0, 9, 0, 0, 0}));
  // Finite differences agree (prod is a polynomial), on strided and transposed views too.
  for (Layout layout : kLayouts) {
    SCOPED_TRACE(layout_name(layout));
    Tensor x = grad_input(layout, 0.5, 1.5);
    {
      NoGradGuard ng;
      x.select(0, 1).select(0, 2).fill_(0.0);
      x.select(0, 2).select(0, 0).fill_(0.0);
      x.select(0, 2).select(0, 3).fill_(0.0);
    }
    EXPECT_TRUE(gradcheck([](const variable_list& v) { return v[0].prod(1); }, {x}));
    EXPECT_TRUE(gradcheck([](const variable_list& v) { return v[0].prod(0); }, {x}));
    EXPECT_TRUE(gradcheck([](const variable_list& v) { return v[0].prod(-1, true); }, {x}));
    EXPECT_TRUE(gradcheck([](const variable_list& v) { return v[0].prod(); }, {x}));
    // Double backward through the zero-safe formula (cumprod/cat/flip) also agrees.
    EXPECT_TRUE(gradgradcheck([](const variable_list& v) { return v[0].prod(1); }, {x}));
  }
  Tensor one = leaf({3, 4});
  {
    NoGradGuard ng;
    one.select(0, 1).select(0, 1).fill_(0.0);
  }
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return v[0].prod(); }, {one}));
  EXPECT_TRUE(gradgradcheck([](const variable_list& v) { return v[0].prod(); }, {one}));
}

// ---------------------------------------------------------------- amax / amin / max / min
EMBER_DEVICE_TEST(GradReduce, AmaxAmin) {
  FOR_LAYOUTS_AND_DIMS({
    Tensor x = grad_input(layout);  // continuous random values: no ties
    EXPECT_TRUE(gradcheck([c](const variable_list& v) { return v[0].amax(c.dims, c.keepdim); }, {x}));
    EXPECT_TRUE(gradcheck([c](const variable_list& v) { return v[0].amin(c.dims, c.keepdim); }, {x}));
  })
  Tensor z = grad_input(Layout::ZeroDim);
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return v[0].amax(); }, {z}));
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return v[0].max(); }, {z}));
  Tensor x = grad_input(Layout::Strided);
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return v[0].max(); }, {x}));
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return v[0].min(); }, {x}));
}

EMBER_DEVICE_TEST(GradReduce, AmaxTiesSplitEvenly) {
  Tensor a = values({1.0, 3.0, 3.0, 2.0});
  EXPECT_EQ(grad_of(a.amax(), a), (std::vector<double>{0, 0.5, 0.5, 0}));
  Tensor b = values({{1.0, 1.0, 1.0}, {5.0, 2.0, 5.0}});
  EXPECT_EQ(grad_of(b.amax({1}), b), (std::vector<double>{1.0 / 3, 1.0 / 3, 1.0 / 3, 0.5, 0, 0.5}));
  EXPECT_EQ(grad_of(b.amin({0}, true), b), (std::vector<double>{1, 1, 1, 0, 0, 0}));
  EXPECT_EQ(grad_of(b.amin({1}), b), (std::vector<double>{1.0 / 3, 1.0 / 3, 1.0 / 3, 0, 1, 0}));
  // max()/min() over everything split evenly too (PyTorch's evenly_distribute_backward).
  EXPECT_EQ(grad_of(b.max(), b), (std::vector<double>{0, 0, 0, 0.5, 0, 0.5}));
  EXPECT_EQ(grad_of(b.min(), b), (std::vector<double>{1.0 / 3, 1.0 / 3, 1.0 / 3, 0, 0, 0}));
}

EMBER_DEVICE_TEST(GradReduce, MaxMinDim) {
  for (Layout layout : kLayouts)
    for (int64_t dim : {0, 1, -1, -2})
      for (bool keepdim : {false, true}) {
        SCOPED_TRACE(std::string(layout_name(layout)) + " dim " + std::to_string(dim));
        Tensor x = grad_input(layout);
        EXPECT_TRUE(gradcheck([=](const variable_list& v) { return std::get<0>(v[0].max(dim, keepdim)); }, {x}));
        EXPECT_TRUE(gradcheck([=](const variable_list& v) { return std::get<0>(v[0].min(dim, keepdim)); }, {x}));
      }
  Tensor z = grad_input(Layout::ZeroDim);
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return std::get<0>(v[0].max(0)); }, {z}));
  Tensor x3 = leaf({2, 3, 4}, Layout::Transposed);
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return std::get<0>(v[0].max(1)); }, {x3}));
  // The second derivative of a selection is 0 and flows (where/eq formula).
  Tensor x = grad_input(Layout::Contiguous);
  EXPECT_TRUE(gradgradcheck([](const variable_list& v) { return std::get<0>(v[0].max(1)) * std::get<0>(v[0].max(1)); }, {x}));
}

EMBER_DEVICE_TEST(GradReduce, MaxDimTiesGoToTheReturnedIndex) {
  Tensor b = values({{5.0, 2.0, 5.0}, {1.0, 1.0, 1.0}});
  auto [v, idx] = b.max(1);
  EXPECT_FALSE(idx.requires_grad());
  EXPECT_EQ(idx.grad_fn(), nullptr);
  auto g = grad_of(v, b);
  auto ix = idx.tolist<int64_t>();
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t c = 0; c < 3; ++c) EXPECT_EQ(g[size_t(r * 3 + c)], c == ix[size_t(r)] ? 1.0 : 0.0);
  auto [mv, midx] = b.min(0, true);
  auto gm = grad_of(mv * 2.0, b);
  auto mix = midx.tolist<int64_t>();
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t c = 0; c < 3; ++c) EXPECT_EQ(gm[size_t(r * 3 + c)], r == mix[size_t(c)] ? 2.0 : 0.0);
}

EMBER_DEVICE_TEST(GradReduce, NonDifferentiableReductions) {
  Tensor x = grad_input(Layout::Contiguous);
  EXPECT_FALSE(x.argmax().requires_grad());
  EXPECT_FALSE(x.argmin(1).requires_grad());
  EXPECT_FALSE(x.gt(0.0).any().requires_grad());
  Tensor n = x.count_nonzero({1});
  EXPECT_FALSE(n.requires_grad());
  EXPECT_EQ(n.dtype(), kInt64);
}

// ---------------------------------------------------------------- var / std
EMBER_DEVICE_TEST(GradReduce, VarStd) {
  FOR_LAYOUTS_AND_DIMS({
    Tensor x = grad_input(layout);
    for (bool unbiased : {true, false}) {
      auto fv = [c, unbiased](const variable_list& v) { return v[0].var(c.dims, unbiased, c.keepdim); };
      auto fs = [c, unbiased](const variable_list& v) { return v[0].std(c.dims, unbiased, c.keepdim); };
      EXPECT_TRUE(gradcheck(fv, {x}));
      EXPECT_TRUE(gradgradcheck(fv, {x}));
      EXPECT_TRUE(gradcheck(fs, {x}));
    }
  })
  Tensor x = values({1.0, 2.0, 4.0});
  // var = sum((x - 7/3)^2) / 2: d/dx = (x - mean)
  auto g = grad_of(x.var(), x);
  EXPECT_NEAR(g[0], 1.0 - 7.0 / 3, 1e-12);
  EXPECT_NEAR(g[2], 4.0 - 7.0 / 3, 1e-12);
  EXPECT_EQ(node_name(x.var()), "VarBackward0");
}

// ---------------------------------------------------------------- norm
EMBER_DEVICE_TEST(GradReduce, Norm) {
  for (double p : {2.0, 1.0, 3.0, 1.5, 0.5, kInf, -kInf}) {
    FOR_LAYOUTS_AND_DIMS({
      SCOPED_TRACE("p = " + std::to_string(p));
      Tensor x = grad_input(layout);
      EXPECT_TRUE(gradcheck([c, p](const variable_list& v) { return v[0].norm(p, c.dims, c.keepdim); }, {x}));
    })
  }
  for (double p : {2.0, 3.0, 1.5}) {
    SCOPED_TRACE("p = " + std::to_string(p));
    Tensor x = grad_input(Layout::Strided, 0.5, 2.0);
    EXPECT_TRUE(gradgradcheck([p](const variable_list& v) { return v[0].norm(p, {1}, false); }, {x}));
    EXPECT_TRUE(gradgradcheck([p](const variable_list& v) { return v[0].norm(p); }, {x}));
  }
  Tensor z = grad_input(Layout::ZeroDim);
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return v[0].norm(2); }, {z}));
  // p = 0 counts non-zeros: gradient 0.
  Tensor x = grad_input(Layout::Contiguous);
  EXPECT_EQ(grad_of(x.norm(0), x), std::vector<double>(12, 0.0));
}

EMBER_DEVICE_TEST(GradReduce, NormAtZeroIsZeroSubgradient) {
  Tensor x = values({{0.0, 0.0}, {3.0, 4.0}});
  EXPECT_EQ(grad_of(x.norm(2, {1}), x), (std::vector<double>{0, 0, 0.6, 0.8}));
  Tensor y = values({0.0, 0.0, 0.0});
  EXPECT_EQ(grad_of(y.norm(2), y), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(grad_of(y.norm(3), y), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(grad_of(y.norm(1.5), y), (std::vector<double>{0, 0, 0}));
  // inf-norm ties split evenly, signs kept.
  Tensor w = values({-2.0, 1.0, 2.0});
  EXPECT_EQ(grad_of(w.norm(kInf), w), (std::vector<double>{-0.5, 0, 0.5}));
  EXPECT_EQ(grad_of(w.norm(1), w), (std::vector<double>{-1, 1, 1}));
  EXPECT_EQ(node_name(w.norm(2)), "NormBackward0");
  EXPECT_EQ(node_name(w.norm(2, {0})), "NormBackward1");
}

// ---------------------------------------------------------------- cumsum / cumprod
EMBER_DEVICE_TEST(GradReduce, Cumsum) {
  for (Layout layout : kLayouts)
    for (int64_t dim : {0, 1, -1}) {
      SCOPED_TRACE(std::string(layout_name(layout)) + " dim " + std::to_string(dim));
      Tensor x = grad_input(layout);
      auto f = [dim](const variable_list& v) { return v[0].cumsum(dim); };
      EXPECT_TRUE(gradcheck(f, {x}));
      EXPECT_TRUE(gradgradcheck(squared(f), {x}));
    }
  Tensor z = grad_input(Layout::ZeroDim);
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return v[0].cumsum(0); }, {z}));
  Tensor a = values({1.0, 2.0, 3.0});
  EXPECT_EQ(grad_of(a.cumsum(0), a), (std::vector<double>{3, 2, 1}));
  Tensor f32 = ones({3});
  f32.requires_grad_(true);
  Tensor c = f32.cumsum(0, kFloat64);
  EXPECT_EQ(c.dtype(), kFloat64);
  c.sum().backward();
  EXPECT_EQ(f32.grad().dtype(), kFloat32);
  EXPECT_EQ(f32.grad().tolist<double>(), (std::vector<double>{3, 2, 1}));
}

EMBER_DEVICE_TEST(GradReduce, Cumprod) {
  for (Layout layout : kLayouts)
    for (int64_t dim : {0, 1, -1}) {
      SCOPED_TRACE(std::string(layout_name(layout)) + " dim " + std::to_string(dim));
      Tensor x = grad_input(layout, 0.5, 1.5);
      auto f = [dim](const variable_list& v) { return v[0].cumprod(dim); };
      EXPECT_TRUE(gradcheck(f, {x}));
      EXPECT_TRUE(gradgradcheck(f, {x}));
      auto g = [dim](const variable_list& v) { return (v[0] - 1.0).cumprod(dim); };  // mixed signs
      EXPECT_TRUE(gradcheck(g, {x}));
    }
  Tensor z = grad_input(Layout::ZeroDim);
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return v[0].cumprod(0); }, {z}));
}

EMBER_DEVICE_TEST(GradReduce, CumprodWithZeros) {
  // x = [2, 0, 3]: out = [2, 0, 0]; d sum(out)/dx = [1 + 0 + 0, 2 + 2*3, 0] = [1, 8, 0]
  Tensor a = values({2.0, 0.0, 3.0});
  EXPECT_EQ(grad_of(a.cumprod(0), a), (std::vector<double>{1, 8, 0}));
  Tensor b = values({2.0, 0.0, 3.0, 0.0, 5.0});
  // out = [2, 0, 0, 0, 0]: d/dx0 = 1; d/dx1 = 2 + 6; d/dx2 = 0; d/dx3 = 0 (x1 = 0); d/dx4 = 0
  EXPECT_EQ(grad_of(b.cumprod(0), b), (std::vector<double>{1, 8, 0, 0, 0}));
  for (Layout layout : kLayouts) {
    SCOPED_TRACE(layout_name(layout));
    Tensor x = grad_input(layout, 0.5, 1.5);
    {
      NoGradGuard ng;
      x.select(0, 1).select(0, 1).fill_(0.0);
      x.select(0, 2).select(0, 0).fill_(0.0);
      x.select(0, 2).select(0, 2).fill_(0.0);
    }
    for (int64_t dim : {0, 1}) {
      auto f = [dim](const variable_list& v) { return v[0].cumprod(dim); };
      EXPECT_TRUE(gradcheck(f, {x}));
      EXPECT_TRUE(gradgradcheck(f, {x}));
    }
  }
}

// ---------------------------------------------------------------- softmax / log_softmax / logsumexp
EMBER_DEVICE_TEST(GradReduce, SoftmaxLogSoftmax) {
  for (Layout layout : kLayouts)
    for (int64_t dim : {0, 1, -1}) {
      SCOPED_TRACE(std::string(layout_name(layout)) + " dim " + std::to_string(dim));
      Tensor x = grad_input(layout);
      auto s = [dim](const variable_list& v) { return softmax(v[0], dim); };
      auto l = [dim](const variable_list& v) { return log_softmax(v[0], dim); };
      EXPECT_TRUE(gradcheck(s, {x}));
      EXPECT_TRUE(gradgradcheck(s, {x}));
      EXPECT_TRUE(gradcheck(l, {x}));
      EXPECT_TRUE(gradgradcheck(l, {x}));
    }
  Tensor x3 = leaf({2, 3, 4}, Layout::Transposed);
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return softmax(v[0], 1); }, {x3}));
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return log_softmax(v[0], -3); }, {x3}));
  Tensor z = grad_input(Layout::ZeroDim);
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return softmax(v[0], 0); }, {z}));
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return log_softmax(v[0], -1); }, {z}));
  Tensor w = grad_input(Layout::Contiguous);
  EXPECT_EQ(node_name(softmax(w, 1)), "SoftmaxBackward0");
  EXPECT_EQ(node_name(log_softmax(w, 1)), "LogSoftmaxBackward0");
}

EMBER_DEVICE_TEST(GradReduce, SoftmaxDtypeArgumentCastsGradBack) {
  Tensor x = tensor({{1.0, 2.0, 3.0}});
  x.requires_grad_(true);
  Tensor y = softmax(x, 1, kFloat64);
  EXPECT_EQ(y.dtype(), kFloat64);
  Tensor w = tensor({{1.0, 0.0, -1.0}}, {.dtype = kFloat64});
  (y * w).sum().backward();
  EXPECT_EQ(x.grad().dtype(), kFloat32);
  // Reference in float64: y * (w - sum(w * y)).
  Tensor y64 = softmax(x.detach().to(kFloat64), 1);
  Tensor expect = y64 * (w - (w * y64).sum({1}, true));
  EXPECT_TRUE(close_to(x.grad(), ref_of(expect)));
  Tensor x2 = tensor({{1.0, 2.0, 3.0}});
  x2.requires_grad_(true);
  log_softmax(x2, 1, kFloat64).sum().backward();
  EXPECT_EQ(x2.grad().dtype(), kFloat32);
  Tensor expect2 = 1.0 - 3.0 * y64;
  EXPECT_TRUE(close_to(x2.grad(), ref_of(expect2)));
}

EMBER_DEVICE_TEST(GradReduce, Logsumexp) {
  for (Layout layout : kLayouts) {
    SCOPED_TRACE(layout_name(layout));
    Tensor x = grad_input(layout);
    auto f = [](const variable_list& v) { return v[0].logsumexp({1}); };
    auto g = [](const variable_list& v) { return v[0].logsumexp({0, 1}, true); };
    EXPECT_TRUE(gradcheck(f, {x}));
    EXPECT_TRUE(gradgradcheck(f, {x}));
    EXPECT_TRUE(gradcheck(g, {x}));
  }
  // The gradient is softmax, ties in the max included.
  Tensor t = values({1.0, 1.0});
  EXPECT_EQ(grad_of(t.logsumexp({0}), t), (std::vector<double>{0.5, 0.5}));
}

// ---------------------------------------------------------------- names
EMBER_DEVICE_TEST(GradReduce, NodeNames) {
  Tensor x = grad_input(Layout::Contiguous, 0.5, 1.5);
  EXPECT_EQ(node_name(x.sum()), "SumBackward0");
  EXPECT_EQ(node_name(x.sum({1})), "SumBackward1");
  EXPECT_EQ(node_name(x.mean()), "MeanBackward0");
  EXPECT_EQ(node_name(x.mean({0})), "MeanBackward1");
  EXPECT_EQ(node_name(x.prod()), "ProdBackward0");
  EXPECT_EQ(node_name(x.prod(1)), "ProdBackward1");
  EXPECT_EQ(node_name(x.amax({1})), "AmaxBackward0");
  EXPECT_EQ(node_name(x.amin()), "AminBackward0");
  EXPECT_EQ(node_name(std::get<0>(x.max(1))), "MaxBackward0");
  EXPECT_EQ(node_name(std::get<0>(x.min(1))), "MinBackward0");
  EXPECT_EQ(node_name(x.max()), "MaxBackward1");
  EXPECT_EQ(node_name(x.min()), "MinBackward1");
  EXPECT_EQ(node_name(x.cumsum(0)), "CumsumBackward0");
  EXPECT_EQ(node_name(x.cumprod(0)), "CumprodBackward0");
  EXPECT_EQ(node_name(x.std()), "SqrtBackward0");
}
