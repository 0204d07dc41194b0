// Gradients of linear algebra: mm, bmm, addmm, dot (dispatched), and the composites built on
// them (matmul in every rank combination with batch broadcasting, mv, outer, baddbmm, einsum),
// by finite-difference gradcheck on contiguous / transposed / strided float64 inputs, plus
// gradgradcheck, node names and what is saved for backward.
#include "gradcheck.h"

using namespace ember;
using namespace ember::testing;
using autograd::variable_list;

namespace {

const std::vector<Layout> kLayouts = {Layout::Contiguous, Layout::Transposed, Layout::Strided};

// A float64 leaf of any shape in a layout: transposed = all dims reversed in memory, strided =
// every other element of a wider last dim.
Tensor leaf(Shape shape, Layout layout = Layout::Contiguous, uint64_t seed = 0) {
  Generator g(seed + 321);
  Tensor t;
  if (layout == Layout::Transposed && shape.size() >= 2) {
    Shape rev(shape.rbegin(), shape.rend());
    std::vector<int64_t> perm;
    for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) perm.push_back(d);
    t = host_uniform(rev, -2.0, 2.0, g);
    t = t.permute(perm);
  } else if (layout == Layout::Strided && !shape.empty()) {
    Shape wide = shape;
    wide.back() *= 2;
    t = host_uniform(wide, -2.0, 2.0, g);
    t = t.slice(int64_t(shape.size()) - 1, 0, std::nullopt, 2);
  } else {
    t = host_uniform(shape, -2.0, 2.0, g);
  }
  t = t.detach();
  t.requires_grad_(true);
  return t;
}

std::string node_name(const Tensor& t) { return t.grad_fn() ? t.grad_fn()->name() : "<none>"; }

GradFn binary(Tensor (*op)(const Tensor&, const Tensor&)) {
  return [op](const variable_list& v) { return op(v[0], v[1]); };
}

}  // namespace

EMBER_DEVICE_TEST(GradLinalg, Mm) {
  for (Layout la : kLayouts)
    for (Layout lb : kLayouts) {
      SCOPED_TRACE(std::string(layout_name(la)) + " @ " + layout_name(lb));
      Tensor a = leaf({3, 4}, la, 1), b = leaf({4, 2}, lb, 2);
      EXPECT_TRUE(gradcheck(binary(mm), {a, b}));
      EXPECT_TRUE(gradgradcheck(binary(mm), {a, b}));
    }
  // Only one side requires grad.
  Tensor a = leaf({3, 4}), b = leaf({4, 2}).detach();
  EXPECT_TRUE(gradcheck(binary(mm), {a, b}));
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return mm(v[1], v[0]); }, {leaf({2, 3}), leaf({5, 2}).detach()}));
  // (M, 0) @ (0, N): the result is zeros, the gradients empty.
  Tensor e1 = leaf({3, 0}), e2 = leaf({0, 2});
  variable_list g = autograd::grad({mm(e1, e2).sum()}, {e1, e2});
  EXPECT_EQ(g[0].sizes(), (Shape{3, 0}));
  EXPECT_EQ(g[1].sizes(), (Shape{0, 2}));
}

EMBER_DEVICE_TEST(GradLinalg, MmSavesOnlyWhatItNeeds) {
  // y = w @ x with w constant: x's gradient needs only w, so changing x in place afterwards
  // is fine (PyTorch saves self only if mat2 requires grad and vice versa).
  Tensor w = leaf({2, 3}).detach();
  Tensor p = leaf({3, 2});
  Tensor x = p * 1.0;
  Tensor y = mm(w, x);
  x.mul_(tensor(2.0, {.dtype = kFloat64}));
  y.sum().backward();
  Tensor expect = w.sum({0}).unsqueeze(1).expand({3, 2});
  EXPECT_TRUE(close_to(p.grad(), ref_of(expect)));
  // ... but changing w in place does invalidate the graph.
  Tensor q = leaf({2, 3});
  Tensor w2 = q * 1.0;
  Tensor y2 = mm(w2, leaf({3, 2}));
  w2.mul_(tensor(2.0, {.dtype = kFloat64}));
  EXPECT_THROW(y2.sum().backward(), Error);
}

EMBER_DEVICE_TEST(GradLinalg, Bmm) {
  for (Layout la : kLayouts)
    for (Layout lb : kLayouts) {
      SCOPED_TRACE(std::string(layout_name(la)) + " @ " + layout_name(lb));
      Tensor a = leaf({2, 3, 4}, la, 1), b = leaf({2, 4, 2}, lb, 2);
      EXPECT_TRUE(gradcheck(binary(bmm), {a, b}));
      EXPECT_TRUE(gradgradcheck(binary(bmm), {a, b}));
    }
  Tensor a = leaf({2, 3, 4});
  Tensor b = leaf({2, 2, 4}).transpose(1, 2);  // a non-leaf view operand
  EXPECT_TRUE(gradcheck([b](const variable_list& v) { return bmm(v[0], b); }, {a}));
}

EMBER_DEVICE_TEST(GradLinalg, Addmm) {
  struct Case {
    Shape self;
    double beta, alpha;
  };
  for (const Case& c : std::vector<Case>{{{3, 2}, 1, 1}, {{3, 2}, 0.5, -2}, {{2}, 1, 3}, {{1, 2}, 2, 1},
                                         {{3, 1}, 1, 1}, {{}, -1, 0.5}, {{3, 2}, 0, 1}}) {
    for (Layout l : kLayouts) {
      SCOPED_TRACE(::testing::PrintToString(c.self) + " beta " + std::to_string(c.beta) + " alpha " +
                   std::to_string(c.alpha) + " " + layout_name(l));
      Tensor self = leaf(c.self, l, 3), m1 = leaf({3, 4}, l, 1), m2 = leaf({4, 2}, Layout::Transposed, 2);
      auto f = [c](const variable_list& v) { return addmm(v[0], v[1], v[2], c.beta, c.alpha); };
      EXPECT_TRUE(gradcheck(f, {self, m1, m2}));
      EXPECT_TRUE(gradgradcheck(f, {self, m1, m2}));
    }
  }
  // Integer scalars.
  Tensor self = leaf({3, 2}), m1 = leaf({3, 4}), m2 = leaf({4, 2});
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return addmm(v[0], v[1], v[2], 2, 3); }, {self, m1, m2}));
  // beta = 0: self gets a zero gradient.
  variable_list g = autograd::grad({addmm(self, m1, m2, 0.0, 1.0).sum()}, {self});
  EXPECT_EQ(g[0].tolist<double>(), std::vector<double>(6, 0.0));
}

EMBER_DEVICE_TEST(GradLinalg, Dot) {
  Tensor a = leaf({5}), b = leaf({5}, Layout::Strided);
  EXPECT_TRUE(gradcheck(binary(dot), {a, b}));
  EXPECT_TRUE(gradgradcheck(binary(dot), {a, b}));
  Tensor m = leaf({4, 5}, Layout::Transposed);
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return dot(v[0].select(0, 1), v[0].select(0, 2)); }, {m}));
  variable_list g = autograd::grad({dot(a, b)}, {a});
  EXPECT_TRUE(close_to(g[0], ref_of(b.detach())));
}

EMBER_DEVICE_TEST(GradLinalg, MvOuterBaddbmm) {
  for (Layout l : kLayouts) {
    SCOPED_TRACE(layout_name(l));
    Tensor m = leaf({3, 4}, l, 1), v = leaf({4}, l, 2), u = leaf({3}, l, 3);
    EXPECT_TRUE(gradcheck(binary(mv), {m, v}));
    EXPECT_TRUE(gradgradcheck(binary(mv), {m, v}));
    EXPECT_TRUE(gradcheck(binary(outer), {u, v}));
    EXPECT_TRUE(gradgradcheck(binary(outer), {u, v}));
    Tensor self = leaf({2, 3, 2}, l, 4), b1 = leaf({2, 3, 4}, l, 5), b2 = leaf({2, 4, 2}, l, 6);
    auto f = [](const variable_list& x) { return baddbmm(x[0], x[1], x[2], 0.5, 2.0); };
    EXPECT_TRUE(gradcheck(f, {self, b1, b2}));
    EXPECT_TRUE(gradgradcheck(f, {self, b1, b2}));
    Tensor row = leaf({1, 2}, l, 7);
    EXPECT_TRUE(gradcheck([](const variable_list& x) { return baddbmm(x[0], x[1], x[2]); }, {row, b1, b2}));
    EXPECT_TRUE(gradcheck([](const variable_list& x) { return baddbmm(x[0], x[1], x[2], 0.0, 1.0); }, {row, b1, b2}));
  }
}

EMBER_DEVICE_TEST(GradLinalg, MatmulEveryRankCombination) {
  struct Case {
    Shape a, b;
  };
  const std::vector<Case> cases = {
      {{4}, {4}},             {{3, 4}, {4}},       {{4}, {4, 2}},        {{3, 4}, {4, 2}},
      {{2, 3, 4}, {4, 2}},    {{2, 3, 4}, {4}},    {{4}, {2, 4, 3}},     {{3, 4}, {2, 4, 2}},
      {{2, 3, 4}, {2, 4, 2}}, {{2, 1, 3, 4}, {5, 4, 2}}, {{1, 3, 4}, {2, 4, 2}}, {{2, 2, 3, 4}, {4}},
      {{4}, {2, 1, 4, 3}},    {{2, 3, 4}, {1, 4, 2}},
  };
  for (const Case& c : cases)
    for (Layout l : kLayouts) {
      SCOPED_TRACE(::testing::PrintToString(c.a) + " @ " + ::testing::PrintToString(c.b) + " " + layout_name(l));
      Tensor a = leaf(c.a, l, 1), b = leaf(c.b, l == Layout::Strided ? Layout::Transposed : l, 2);
      EXPECT_TRUE(gradcheck(binary(matmul), {a, b}));
    }
  // Double backward on a few, including the batch-folded and broadcast paths.
  for (const Case& c : std::vector<Case>{{{3, 4}, {4, 2}}, {{2, 3, 4}, {4, 2}}, {{2, 1, 3, 4}, {5, 4, 2}}, {{4}, {2, 4, 3}}}) {
    SCOPED_TRACE(::testing::PrintToString(c.a) + " @ " + ::testing::PrintToString(c.b));
    Tensor a = leaf(c.a, Layout::Transposed, 1), b = leaf(c.b, Layout::Contiguous, 2);
    EXPECT_TRUE(gradgradcheck(binary(matmul), {a, b}));
  }
}

EMBER_DEVICE_TEST(GradLinalg, Einsum) {
  struct Case {
    std::string eq;
    std::vector<Shape> shapes;
  };
  const std::vector<Case> cases = {
      {"ij,jk->ik", {{3, 4}, {4, 2}}},
      {"ij,jk", {{3, 4}, {4, 2}}},
      {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 2}}},
      {"i,i->", {{4}, {4}}},
      {"i,j->ij", {{3}, {4}}},
      {"ij,ij->ij", {{3, 4}, {3, 4}}},
      {"ii->i", {{3, 3}}},
      {"ii", {{3, 3}}},
      {"ij->", {{3, 4}}},
      {"ijk->kji", {{2, 3, 4}}},
      {"ij->j", {{3, 4}}},
      {"...ij,...jk->...ik", {{2, 3, 4}, {4, 2}}},
      {"bn,anm,bm->ba", {{2, 3}, {4, 3, 2}, {2, 2}}},
      {"iij,jk->ik", {{2, 2, 3}, {3, 4}}},
  };
  for (const Case& c : cases)
    for (Layout l : kLayouts) {
      SCOPED_TRACE(c.eq + " " + layout_name(l));
      variable_list in;
      for (size_t i = 0; i < c.shapes.size(); ++i) in.push_back(leaf(c.shapes[i], l, i));
      auto f = [eq = c.eq](const variable_list& v) { return einsum(eq, v); };
      try {
        EXPECT_TRUE(gradcheck(f, in));
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
      }
    }
  for (const char* eq : {"ij,jk->ik", "bn,anm,bm->ba"}) {
    SCOPED_TRACE(eq);
    variable_list in = std::string(eq) == "ij,jk->ik" ? variable_list{leaf({3, 4}), leaf({4, 2}, Layout::Transposed)}
                                                      : variable_list{leaf({2, 3}), leaf({4, 3, 2}), leaf({2, 2})};
    EXPECT_TRUE(gradgradcheck([eq](const variable_list& v) { return einsum(eq, v); }, in));
  }
}

EMBER_DEVICE_TEST(GradLinalg, NodeNames) {
  Tensor a = leaf({3, 4}), b = leaf({4, 2}), c = leaf({3, 2});
  EXPECT_EQ(node_name(mm(a, b)), "MmBackward0");
  EXPECT_EQ(node_name(addmm(c, a, b)), "AddmmBackward0");
  EXPECT_EQ(node_name(bmm(a.unsqueeze(0), b.unsqueeze(0))), "BmmBackward0");
  EXPECT_EQ(node_name(dot(a.select(0, 0), a.select(0, 1))), "DotBackward0");
  EXPECT_EQ(node_name(matmul(a, b)), "MmBackward0");
  // Without grad mode or a requiring input, nothing is recorded.
  EXPECT_EQ(node_name(mm(a.detach(), b.detach())), "<none>");
  {
    NoGradGuard ng;
    EXPECT_EQ(node_name(mm(a, b)), "<none>");
  }
}
