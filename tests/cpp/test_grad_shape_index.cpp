// Gradients of the shape, indexing and sorting ops (src/ops/shape.cpp, index.cpp, sort.cpp):
// finite-difference gradcheck on contiguous and non-contiguous float64 inputs, negative dims,
// duplicate indices (which must accumulate), empty and 0-dim inputs; gradgradcheck (every op
// here is linear in its differentiable inputs); in-place forms on non-leaf tensors and views;
// node names as PyTorch's.
#include "gradcheck.h"

using namespace ember;
using namespace ember::testing;
using autograd::variable_list;

namespace {

const Layout kLayouts[] = {Layout::Contiguous, Layout::Transposed, Layout::Strided};

Tensor longs(const std::vector<int64_t>& v, const Shape& shape) { return tensor(v, {.dtype = kInt64}).reshape(shape); }
Tensor longs(const std::vector<int64_t>& v) { return tensor(v, {.dtype = kInt64}); }
Tensor bools(const std::vector<int64_t>& v, const Shape& shape) { return longs(v, shape).to(kBool); }

// A float64 leaf of the given shape that requires grad.
Tensor leaf(const Shape& shape, uint64_t seed = 0) {
  Generator g(seed + 99);
  return host_randn(shape, g).requires_grad_();
}

// The gradient of sum(out * w) with respect to x, for a fixed grad_output w (no sum op needed).
std::vector<double> grad_of(const Tensor& out, const Tensor& x, const Tensor& w) {
  return autograd::grad({out}, {x}, {w})[0].tolist<double>();
}
std::vector<double> grad_of(const Tensor& out, const Tensor& x) { return grad_of(out, x, ones_like(out)); }

std::string name_of(const Tensor& t) { return t.grad_fn() ? t.grad_fn()->name() : std::string("<none>"); }

// Both checks at once, with the layout in the failure message.
#define EXPECT_GRADS(fn, inputs, what)                                  \
  do {                                                                  \
    EXPECT_TRUE(gradcheck(fn, inputs)) << what;                         \
    EXPECT_TRUE(gradgradcheck(fn, inputs)) << what << " (2nd)"; \
  } while (0)

}  // namespace

// ---------------------------------------------------------------- shape ops

EMBER_DEVICE_TEST(GradShape, Cat) {
  for (Layout l : kLayouts) {
    Tensor a = grad_input(l, -2, 2, 1), b = grad_input(l, -2, 2, 2);
    Tensor c = leaf({2, 4}, 3), d = leaf({3, 1}, 4);
    EXPECT_GRADS([](const variable_list& x) { return cat({x[0], x[1], x[2]}, 0); }, (variable_list{a, b, c}), layout_name(l));
    EXPECT_GRADS([](const variable_list& x) { return cat({x[0], x[1]}, -1); }, (variable_list{a, d}), layout_name(l));
    // The same tensor twice: both slices flow back into it.
    EXPECT_GRADS([](const variable_list& x) { return cat({x[0], x[0].t().t()}, 1); }, (variable_list{a}), layout_name(l));
  }
  Tensor a = leaf({2, 3}), b = leaf({1, 3}, 1);
  Tensor out = cat({a, b}, -2);
  EXPECT_EQ(name_of(out), "CatBackward0");
  Tensor w = arange(9, {.dtype = kFloat64}).reshape({3, 3});
  auto g = autograd::grad({out}, {a, b}, {w});
  EXPECT_EQ(g[0].tolist<double>(), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(g[1].tolist<double>(), (std::vector<double>{6, 7, 8}));
}

EMBER_DEVICE_TEST(GradShape, CatMixedDtypesAndSkippedEmpty) {
  // A float32 input concatenated with float64 gets its gradient back in float32; an int input
  // gets none; a 1-D empty input (skipped by cat) gets an empty gradient.
  Tensor f = ones({2, 2}, {.dtype = kFloat32}).requires_grad_();
  Tensor d = leaf({1, 2});
  Tensor i = ones({1, 2}, {.dtype = kInt64});
  Tensor e = zeros({0}, {.dtype = kFloat64}).requires_grad_();
  Tensor out = cat({f, d, i, e}, 0);
  EXPECT_EQ(out.dtype(), kFloat64);
  Tensor w = arange(8, {.dtype = kFloat64}).reshape({4, 2});
  auto g = autograd::grad({out}, {f, d, e}, {w});
  EXPECT_EQ(g[0].dtype(), kFloat32);
  EXPECT_EQ(g[0].tolist<float>(), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ(g[1].tolist<double>(), (std::vector<double>{4, 5}));
  EXPECT_EQ(g[2].sizes(), (Shape{0}));
  Tensor x = leaf({3, 2});
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return cat({v[0], v[1]}, 0); }, {x, e}));
}

EMBER_DEVICE_TEST(GradShape, Stack) {
  for (Layout l : kLayouts) {
    Tensor a = grad_input(l, -2, 2, 1), b = grad_input(l, -2, 2, 2);
    EXPECT_GRADS([](const variable_list& x) { return stack({x[0], x[1]}, 1); }, (variable_list{a, b}), layout_name(l));
    EXPECT_GRADS([](const variable_list& x) { return stack({x[0], x[1], x[0]}, -1); }, (variable_list{a, b}), layout_name(l));
  }
}

EMBER_DEVICE_TEST(GradShape, Repeat) {
  for (Layout l : kLayouts) {
    Tensor a = grad_input(l);
    EXPECT_GRADS([](const variable_list& x) { return x[0].repeat({2, 1, 3}); }, (variable_list{a}), layout_name(l));
    EXPECT_GRADS([](const variable_list& x) { return x[0].repeat({1, 2}); }, (variable_list{a}), layout_name(l));
    EXPECT_TRUE(gradcheck([](const variable_list& x) { return x[0].repeat({2, 0}); }, {a})) << layout_name(l);
  }
  Tensor s = grad_input(Layout::ZeroDim);
  EXPECT_GRADS([](const variable_list& x) { return x[0].repeat({2, 3}); }, (variable_list{s}), "0-dim");
  EXPECT_GRADS([](const variable_list& x) { return x[0].repeat({}); }, (variable_list{s}), "0-dim, no repeats");
  Tensor e = grad_input(Layout::Empty);
  EXPECT_TRUE(gradcheck([](const variable_list& x) { return x[0].repeat({2, 2}); }, {e}));
  // Each element of x appears 6 times in the output.
  Tensor x = leaf({2});
  Tensor out = x.repeat({3, 2});
  EXPECT_EQ(name_of(out), "RepeatBackward0");
  EXPECT_EQ(grad_of(out, x), (std::vector<double>{6, 6}));
}

EMBER_DEVICE_TEST(GradShape, FlipRollTrilTriu) {
  for (Layout l : kLayouts) {
    Tensor a = grad_input(l);
    EXPECT_GRADS([](const variable_list& x) { return x[0].flip({0, 1}); }, (variable_list{a}), layout_name(l));
    EXPECT_GRADS([](const variable_list& x) { return x[0].flip({-1}); }, (variable_list{a}), layout_name(l));
    EXPECT_GRADS([](const variable_list& x) { return x[0].roll({1, -2}, {0, -1}); }, (variable_list{a}), layout_name(l));
    EXPECT_GRADS([](const variable_list& x) { return x[0].roll({5}); }, (variable_list{a}), layout_name(l));
    for (int64_t k : {-1, 0, 2}) {
      EXPECT_GRADS([k](const variable_list& x) { return x[0].tril(k); }, (variable_list{a}), layout_name(l) << " k=" << k);
      EXPECT_GRADS([k](const variable_list& x) { return x[0].triu(k); }, (variable_list{a}), layout_name(l) << " k=" << k);
    }
  }
  Tensor b = leaf({2, 3, 3});
  EXPECT_GRADS([](const variable_list& x) { return x[0].tril(-1); }, (variable_list{b}), "batched tril");
  EXPECT_GRADS([](const variable_list& x) { return x[0].triu(1); }, (variable_list{b}), "batched triu");
  Tensor s = grad_input(Layout::ZeroDim), e = grad_input(Layout::Empty);
  EXPECT_TRUE(gradcheck([](const variable_list& x) { return x[0].flip({0}).roll({1}, {0}); }, {e}));
  EXPECT_TRUE(gradcheck([](const variable_list& x) { return x[0].roll({3}) * 2; }, {s}));

  Tensor x = leaf({2, 2});
  EXPECT_EQ(name_of(x.flip({0})), "FlipBackward0");
  EXPECT_EQ(name_of(x.roll({1}, {0})), "RollBackward0");
  EXPECT_EQ(name_of(x.tril()), "TrilBackward0");
  EXPECT_EQ(name_of(x.triu()), "TriuBackward0");
  EXPECT_EQ(grad_of(x.tril(), x), (std::vector<double>{1, 0, 1, 1}));
  EXPECT_EQ(grad_of(x.triu(1), x), (std::vector<double>{0, 1, 0, 0}));
  Tensor v = leaf({4});
  EXPECT_EQ(grad_of(v.roll({1}), v, arange(4, {.dtype = kFloat64})), (std::vector<double>{1, 2, 3, 0}));
  EXPECT_EQ(grad_of(v.flip({0}), v, arange(4, {.dtype = kFloat64})), (std::vector<double>{3, 2, 1, 0}));
}

// Composites: their gradients come through the ops they are made of.
EMBER_DEVICE_TEST(GradShape, Composites) {
  for (Layout l : kLayouts) {
    Tensor a = grad_input(l);
    std::string n = layout_name(l);
    EXPECT_GRADS([](const variable_list& x) { return x[0].reshape({4, 3}); }, (variable_list{a}), n + " reshape");
    EXPECT_GRADS([](const variable_list& x) { return x[0].reshape({-1}); }, (variable_list{a}), n + " reshape -1");
    EXPECT_GRADS([](const variable_list& x) { return x[0].flatten(); }, (variable_list{a}), n + " flatten");
    EXPECT_GRADS([](const variable_list& x) { return x[0].unflatten(-1, {2, 2}); }, (variable_list{a}), n + " unflatten");
    EXPECT_GRADS([](const variable_list& x) { return x[0].movedim(0, -1); }, (variable_list{a}), n + " movedim");
    EXPECT_GRADS([](const variable_list& x) { return x[0].narrow(-1, 1, 2); }, (variable_list{a}), n + " narrow");
    EXPECT_GRADS([](const variable_list& x) { return split(x[0], 3, 1)[1]; }, (variable_list{a}), n + " split");
    EXPECT_GRADS([](const variable_list& x) {
      auto p = split(x[0], {1, 2}, 0);
      return cat({p[1], p[0]}, 0);
    }, (variable_list{a}), n + " split sizes");
    EXPECT_GRADS([](const variable_list& x) {
      auto p = chunk(x[0], 3, -1);
      return cat({p[1], p[0], p[1]}, -1);
    }, (variable_list{a}), n + " chunk");
    EXPECT_GRADS([](const variable_list& x) {
      auto p = unbind(x[0], 1);
      return stack({p[3], p[0]}, 0);
    }, (variable_list{a}), n + " unbind");
    EXPECT_GRADS([](const variable_list& x) { return x[0].diag(); }, (variable_list{a}), n + " diag 2-D");
    EXPECT_GRADS([](const variable_list& x) { return x[0].diag(-1); }, (variable_list{a}), n + " diag 2-D offset");
    // diag of a 1-D tensor and repeat_interleave with tensor repeats copy into views of a new
    // tensor (CopySlices): their double backward is in DoubleBackwardThroughCopySlices.
    EXPECT_TRUE(gradcheck([](const variable_list& x) { return x[0].select(0, 1).diag(1); }, {a})) << n << " diag 1-D";
    EXPECT_GRADS([](const variable_list& x) { return x[0].repeat_interleave(2); }, (variable_list{a}), n + " repeat_interleave");
    EXPECT_GRADS([](const variable_list& x) { return x[0].repeat_interleave(3, -2); }, (variable_list{a}), n + " repeat_interleave dim");
    EXPECT_TRUE(gradcheck([](const variable_list& x) { return x[0].repeat_interleave(longs({2, 0, 1}), 0); }, {a}))
        << n << " repeat_interleave tensor";
  }
  // repeat_interleave with tensor repeats: row i's gradient is the sum of its copies.
  Tensor x = leaf({3});
  EXPECT_EQ(grad_of(x.repeat_interleave(longs({2, 0, 3}), 0), x), (std::vector<double>{2, 0, 3}));
  EXPECT_EQ(grad_of(x.diag(), x), (std::vector<double>{1, 1, 1}));
}

// ---------------------------------------------------------------- indexing

EMBER_DEVICE_TEST(GradIndex, IndexSelect) {
  for (Layout l : kLayouts) {
    Tensor a = grad_input(l);
    Tensor dup = longs({2, 0, 2, 2});
    EXPECT_GRADS([dup](const variable_list& x) { return x[0].index_select(0, dup); }, (variable_list{a}), layout_name(l));
    EXPECT_GRADS([dup](const variable_list& x) { return x[0].index_select(-1, dup); }, (variable_list{a}), layout_name(l));
    EXPECT_GRADS([](const variable_list& x) { return x[0].index_select(1, longs({}, {0})); }, (variable_list{a}), layout_name(l));
    EXPECT_GRADS([](const variable_list& x) { return x[0].index_select(1, longs({3}, {})); }, (variable_list{a}),
                 layout_name(l) << " 0-dim index");
    EXPECT_GRADS([](const variable_list& x) { return x[0].index_select(0, longs({1, 0}).to(kInt32)); }, (variable_list{a}),
                 layout_name(l) << " int32 index");
  }
  Tensor s = grad_input(Layout::ZeroDim);
  EXPECT_GRADS([](const variable_list& x) { return x[0].index_select(0, longs({0}, {})); }, (variable_list{s}), "0-dim self");
  Tensor e = grad_input(Layout::Empty);
  EXPECT_TRUE(gradcheck([](const variable_list& x) { return x[0].index_select(1, longs({1, 1})); }, {e}));
  // Duplicates accumulate.
  Tensor x = leaf({3});
  Tensor out = x.index_select(0, longs({0, 0, 2, 0}));
  EXPECT_EQ(name_of(out), "IndexSelectBackward0");
  EXPECT_EQ(grad_of(out, x), (std::vector<double>{3, 0, 1}));
}

EMBER_DEVICE_TEST(GradIndex, Gather) {
  for (Layout l : kLayouts) {
    Tensor a = grad_input(l);
    Tensor i0 = longs({2, 0, 1, 1, 2, 2, 0, 0}, {2, 4});  // duplicates along dim 0, fewer rows
    Tensor i1 = longs({3, 3, 0, 1, 2, 1}, {3, 2});         // along dim 1, fewer columns
    EXPECT_GRADS([i0](const variable_list& x) { return x[0].gather(0, i0); }, (variable_list{a}), layout_name(l));
    EXPECT_GRADS([i1](const variable_list& x) { return x[0].gather(-1, i1); }, (variable_list{a}), layout_name(l));
    EXPECT_GRADS([i1](const variable_list& x) { return x[0].gather(1, i1.t().contiguous().t()); }, (variable_list{a}),
                 layout_name(l) << " strided index");
  }
  Tensor s = grad_input(Layout::ZeroDim);
  EXPECT_GRADS([](const variable_list& x) { return x[0].gather(0, longs({0}, {})); }, (variable_list{s}), "0-dim");
  Tensor x = leaf({2, 2});
  Tensor out = x.gather(1, longs({1, 1, 1, 0, 0, 0}, {2, 3}));
  EXPECT_EQ(name_of(out), "GatherBackward0");
  EXPECT_EQ(grad_of(out, x), (std::vector<double>{0, 3, 3, 0}));
}

EMBER_DEVICE_TEST(GradIndex, Scatter) {
  // Indices distinct within each column (dim 0) / row (dim 1), so each written slot has one writer.
  Tensor i0 = longs({2, 0, 1, 0, 1, 2, 0, 2}, {2, 4});
  Tensor i1 = longs({3, 0, 1, 2, 0, 3}, {3, 2});
  for (Layout l : kLayouts) {
    Tensor a = grad_input(l, -2, 2, 1);
    Tensor src = grad_input(l, -2, 2, 2);  // 3x4: larger than both indices
    EXPECT_GRADS([i0](const variable_list& x) { return x[0].scatter(0, i0, x[1]); }, (variable_list{a, src}), layout_name(l));
    EXPECT_GRADS([i1](const variable_list& x) { return x[0].scatter(-1, i1, x[1]); }, (variable_list{a, src}), layout_name(l));
    EXPECT_GRADS([i1](const variable_list& x) { return x[0].scatter(1, i1, 2.5); }, (variable_list{a}), layout_name(l));
  }
  Tensor x = leaf({3}), src = leaf({3}, 1);
  Tensor out = x.scatter(0, longs({2, 0}), src);
  EXPECT_EQ(name_of(out), "ScatterBackward0");
  auto g = autograd::grad({out}, {x, src}, {arange(3, {.dtype = kFloat64}) + 1});
  EXPECT_EQ(g[0].tolist<double>(), (std::vector<double>{0, 2, 0}));
  EXPECT_EQ(g[1].tolist<double>(), (std::vector<double>{3, 1, 0}));  // src[2] was never read
  Tensor outv = x.scatter(0, longs({1}), 7.0);
  EXPECT_EQ(name_of(outv), "ScatterBackward1");
  EXPECT_EQ(grad_of(outv, x), (std::vector<double>{1, 0, 1}));
}

EMBER_DEVICE_TEST(GradIndex, ScatterAdd) {
  Tensor i0 = longs({2, 0, 2, 0, 2, 2, 0, 2}, {2, 4});  // duplicates accumulate
  for (Layout l : kLayouts) {
    Tensor a = grad_input(l, -2, 2, 1);
    Tensor src = grad_input(l, -2, 2, 2);
    EXPECT_GRADS([i0](const variable_list& x) { return x[0].scatter_add(0, i0, x[1]); }, (variable_list{a, src}), layout_name(l));
    EXPECT_GRADS([](const variable_list& x) { return x[0].scatter_add(-1, longs({1, 1, 1}, {3, 1}), x[1]); },
                 (variable_list{a, src}), layout_name(l));
  }
  Tensor x = leaf({2}), src = leaf({3}, 1);
  Tensor out = x.scatter_add(0, longs({1, 1, 0}), src);
  EXPECT_EQ(name_of(out), "ScatterAddBackward0");
  auto g = autograd::grad({out}, {x, src}, {tensor({5.0, 7.0}, {.dtype = kFloat64})});
  EXPECT_EQ(g[0].tolist<double>(), (std::vector<double>{5, 7}));
  EXPECT_EQ(g[1].tolist<double>(), (std::vector<double>{7, 7, 5}));
}

EMBER_DEVICE_TEST(GradIndex, IndexAdd) {
  for (Layout l : kLayouts) {
    Tensor a = grad_input(l, -2, 2, 1);
    Tensor rows = leaf({4, 4}, 2), cols = leaf({3, 2}, 3);
    Tensor ir = longs({2, 0, 2, 2}), ic = longs({3, 3});
    EXPECT_GRADS([ir](const variable_list& x) { return x[0].index_add(0, ir, x[1]); }, (variable_list{a, rows}), layout_name(l));
    EXPECT_GRADS([ic](const variable_list& x) { return x[0].index_add(-1, ic, x[1], 2.5); }, (variable_list{a, cols}),
                 layout_name(l));
    EXPECT_GRADS([ic](const variable_list& x) { return x[0].index_add(1, ic, x[1].t().contiguous().t(), -1); },
                 (variable_list{a, cols}), layout_name(l) << " strided source");
  }
  Tensor x = leaf({3}), src = leaf({2}, 1);
  Tensor out = x.index_add(0, longs({2, 2}), src, 3);
  EXPECT_EQ(name_of(out), "IndexAddBackward0");
  auto g = autograd::grad({out}, {x, src}, {tensor({1.0, 2.0, 4.0}, {.dtype = kFloat64})});
  EXPECT_EQ(g[0].tolist<double>(), (std::vector<double>{1, 2, 4}));
  EXPECT_EQ(g[1].tolist<double>(), (std::vector<double>{12, 12}));
}

EMBER_DEVICE_TEST(GradIndex, AdvancedIndex) {
  for (Layout l : kLayouts) {
    Tensor a = grad_input(l);
    std::string n = layout_name(l);
    EXPECT_GRADS([](const variable_list& x) { return x[0].index({longs({2, 0, 2, -1})}); }, (variable_list{a}), n + " dup rows");
    EXPECT_GRADS([](const variable_list& x) { return x[0].index({longs({0, 2, 2}), longs({1, 1, -1})}); }, (variable_list{a}),
                 n + " two indices");
    EXPECT_GRADS([](const variable_list& x) { return x[0].index({longs({0, 2}, {2, 1}), longs({1, 3, 3}, {1, 3})}); },
                 (variable_list{a}), n + " broadcast indices");
    EXPECT_GRADS([](const variable_list& x) { return x[0].index({std::nullopt, longs({3, 3, 0})}); }, (variable_list{a}),
                 n + " None + index");
    EXPECT_GRADS([](const variable_list& x) { return x[0].index({bools({1, 0, 1}, {3})}); }, (variable_list{a}), n + " bool rows");
    EXPECT_GRADS([](const variable_list& x) {
      return x[0].index({bools({1, 0, 0, 1, 1, 0, 1, 0, 0, 0, 0, 1}, {3, 4})});
    }, (variable_list{a}), n + " bool mask");
    EXPECT_GRADS([](const variable_list& x) { return x[0].index({longs({}, {0})}); }, (variable_list{a}), n + " empty index");
  }
  Tensor x = leaf({3});
  Tensor out = x.index({longs({1, 1, 1, 0})});
  EXPECT_EQ(name_of(out), "IndexBackward0");
  EXPECT_EQ(grad_of(out, x), (std::vector<double>{1, 3, 0}));
}

EMBER_DEVICE_TEST(GradIndex, IndexPut) {
  for (Layout l : kLayouts) {
    Tensor a = grad_input(l, -2, 2, 1);
    Tensor v4 = leaf({2, 4}, 2), row = leaf({4}, 3), s = leaf({}, 4), pts = leaf({3}, 5), r3 = leaf({1, 1, 4}, 6);
    std::string n = layout_name(l);
    // accumulate=false with distinct positions; accumulate=true with duplicates.
    EXPECT_GRADS([](const variable_list& x) { return index_put(x[0], {longs({2, 0})}, x[1], false); }, (variable_list{a, v4}),
                 n + " rows");
    EXPECT_GRADS([](const variable_list& x) { return index_put(x[0], {longs({2, 0, 2})}, x[1], true); }, (variable_list{a, row}),
                 n + " broadcast row, accumulate");
    EXPECT_GRADS([](const variable_list& x) { return index_put(x[0], {longs({2, 0})}, x[1], false); }, (variable_list{a, row}),
                 n + " broadcast row");
    EXPECT_GRADS([](const variable_list& x) { return index_put(x[0], {longs({2, 0})}, x[1], false); }, (variable_list{a, r3}),
                 n + " values with extra leading 1s");
    EXPECT_GRADS([](const variable_list& x) { return index_put(x[0], {longs({0, 1, 2}), longs({3, 0, -1})}, x[1], false); },
                 (variable_list{a, pts}), n + " points");
    EXPECT_GRADS([](const variable_list& x) { return index_put(x[0], {longs({1, 1, 1}), longs({2, 2, 0})}, x[1], true); },
                 (variable_list{a, pts}), n + " dup points, accumulate");
    EXPECT_GRADS([](const variable_list& x) { return index_put(x[0], {bools({1, 0, 1}, {3})}, x[1], false); },
                 (variable_list{a, s}), n + " bool mask, 0-dim value");
    EXPECT_GRADS([](const variable_list& x) { return index_put(x[0], {std::nullopt, longs({3, 1})}, x[1], true); },
                 (variable_list{a, s}), n + " None + index");
  }
  Tensor x = leaf({3}), v = leaf({2}, 1);
  Tensor out = index_put(x, {longs({0, 0})}, v, true);
  EXPECT_EQ(name_of(out), "IndexPutBackward0");
  auto g = autograd::grad({out}, {x, v}, {tensor({1.0, 2.0, 4.0}, {.dtype = kFloat64})});
  EXPECT_EQ(g[0].tolist<double>(), (std::vector<double>{1, 2, 4}));
  EXPECT_EQ(g[1].tolist<double>(), (std::vector<double>{1, 1}));
  Tensor out2 = index_put(x, {longs({2})}, leaf({}, 2), false);
  EXPECT_EQ(grad_of(out2, x), (std::vector<double>{1, 1, 0}));  // the overwritten slot gets nothing
}

EMBER_DEVICE_TEST(GradIndex, MaskedFill) {
  Tensor m = bools({1, 0, 0, 1, 0, 1, 1, 0, 0, 0, 1, 1}, {3, 4});
  Tensor mrow = bools({0, 1, 1, 0}, {4});
  for (Layout l : kLayouts) {
    Tensor a = grad_input(l);
    std::string n = layout_name(l);
    EXPECT_GRADS([m](const variable_list& x) { return x[0].masked_fill(m, 3.0); }, (variable_list{a}), n);
    EXPECT_GRADS([mrow](const variable_list& x) { return x[0].masked_fill(mrow, -1.0); }, (variable_list{a}), n + " row mask");
    // Self broadcast up to the mask's shape.
    EXPECT_GRADS([m](const variable_list& x) { return x[0].select(0, 1).masked_fill(m, 0.5); }, (variable_list{a}),
                 n + " broadcast self");
    Tensor val = leaf({}, 7);
    EXPECT_GRADS([m](const variable_list& x) { return x[0].masked_fill(m, x[1]); }, (variable_list{a, val}), n + " tensor value");
    EXPECT_GRADS([m](const variable_list& x) { return x[0].select(1, 0).unsqueeze(1).masked_fill(m, x[1]); },
                 (variable_list{a, val}), n + " tensor value, broadcast self");
  }
  Tensor x = leaf({3});
  Tensor out = x.masked_fill(bools({0, 1, 0}, {3}), 9.0);
  EXPECT_EQ(name_of(out), "MaskedFillBackward0");
  EXPECT_EQ(grad_of(out, x), (std::vector<double>{1, 0, 1}));
  Tensor v = leaf({}, 1);
  Tensor out1 = x.masked_fill(bools({1, 1, 0}, {3}), v);
  EXPECT_EQ(name_of(out1), "MaskedFillBackward1");
  auto g = autograd::grad({out1}, {x, v}, {tensor({1.0, 2.0, 4.0}, {.dtype = kFloat64})});
  EXPECT_EQ(g[0].tolist<double>(), (std::vector<double>{0, 0, 4}));
  EXPECT_EQ(g[1].item<double>(), 3.0);
}

EMBER_DEVICE_TEST(GradIndex, IndexComposites) {
  Tensor m = bools({1, 0, 0, 1, 0, 1, 1, 0, 0, 0, 1, 1}, {3, 4});
  for (Layout l : kLayouts) {
    Tensor a = grad_input(l);
    std::string n = layout_name(l);
    EXPECT_GRADS([m](const variable_list& x) { return x[0].masked_select(m); }, (variable_list{a}), n + " masked_select");
    EXPECT_GRADS([](const variable_list& x) { return x[0].masked_select(bools({1, 0, 1, 1}, {4})); }, (variable_list{a}),
                 n + " masked_select broadcast mask");
    EXPECT_GRADS([m](const variable_list& x) { return x[0].select(0, 2).masked_select(m); }, (variable_list{a}),
                 n + " masked_select broadcast self");
    EXPECT_GRADS([](const variable_list& x) { return x[0].index_fill(1, longs({3, 0, 3}), 2.0); }, (variable_list{a}),
                 n + " index_fill");
    EXPECT_GRADS([](const variable_list& x) { return x[0].index_fill(-2, longs({1}, {}), 2.0); }, (variable_list{a}),
                 n + " index_fill 0-dim index");
  }
  // one_hot is an integer result: not differentiable, nothing to record.
  Tensor oh = one_hot(longs({0, 2}), 3);
  EXPECT_FALSE(oh.requires_grad());
}

EMBER_DEVICE_TEST(GradIndex, Embedding) {
  Tensor idx = longs({3, 0, 3, 1, 3, 0}, {2, 3});
  for (Layout l : kLayouts) {
    Tensor w = grad_input(l);  // 3x4 -> but indices up to 3: use the transpose when rows < 4
    Tensor weight = w.dim() == 2 && w.size(0) < 4 ? w.t() : w;  // 4x3, still non-contiguous
    weight = weight.detach().requires_grad_();
    EXPECT_GRADS([idx](const variable_list& x) { return embedding(x[0], idx); }, (variable_list{weight}), layout_name(l));
    EXPECT_GRADS([idx](const variable_list& x) { return embedding(x[0], idx.select(0, 0)); }, (variable_list{weight}),
                 layout_name(l) << " 1-D indices");
    // With padding_idx the padding row's gradient is zero by definition (not the true derivative,
    // so only the values below and the double backward are checked).
    EXPECT_TRUE(gradgradcheck([idx](const variable_list& x) { return embedding(x[0], idx, 3); }, {weight}))
        << layout_name(l) << " padding_idx";
  }
  Tensor weight = leaf({4, 2});
  Tensor out = embedding(weight, idx);
  auto g = grad_of(out, weight);
  EXPECT_EQ(g, (std::vector<double>{2, 2, 1, 1, 0, 0, 3, 3}));  // repeated rows accumulate
  Tensor outp = embedding(weight, idx, -1);                      // padding row 3: no gradient
  EXPECT_EQ(grad_of(outp, weight), (std::vector<double>{2, 2, 1, 1, 0, 0, 0, 0}));
  EXPECT_EQ(outp.tolist<double>(), out.tolist<double>());  // the forward is unchanged by padding_idx
}

// ---------------------------------------------------------------- sorting

EMBER_DEVICE_TEST(GradSort, SortAndTopk) {
  for (Layout l : kLayouts) {
    Tensor a = grad_input(l);
    std::string n = layout_name(l);
    EXPECT_GRADS([](const variable_list& x) { return std::get<0>(x[0].sort(0)); }, (variable_list{a}), n + " sort 0");
    EXPECT_GRADS([](const variable_list& x) { return std::get<0>(x[0].sort(-1, true)); }, (variable_list{a}), n + " sort desc");
    EXPECT_GRADS([](const variable_list& x) { return std::get<0>(x[0].sort(1, false, true)); }, (variable_list{a}),
                 n + " sort stable");
    EXPECT_GRADS([](const variable_list& x) { return std::get<0>(x[0].topk(2)); }, (variable_list{a}), n + " topk");
    EXPECT_GRADS([](const variable_list& x) { return std::get<0>(x[0].topk(2, 0, false)); }, (variable_list{a}),
                 n + " topk smallest");
    EXPECT_GRADS([](const variable_list& x) { return std::get<0>(x[0].topk(3, -1, true, false)); }, (variable_list{a}),
                 n + " topk unsorted");
    EXPECT_TRUE(gradcheck([](const variable_list& x) { return std::get<0>(x[0].topk(0)); }, {a})) << n << " topk 0";
  }
  Tensor s = grad_input(Layout::ZeroDim);
  EXPECT_GRADS([](const variable_list& x) { return std::get<0>(x[0].sort()); }, (variable_list{s}), "0-dim sort");
  EXPECT_GRADS([](const variable_list& x) { return std::get<0>(x[0].topk(1, 0)); }, (variable_list{s}), "0-dim topk");
  Tensor e = grad_input(Layout::Empty);
  EXPECT_TRUE(gradcheck([](const variable_list& x) { return std::get<0>(x[0].sort(0)); }, {e}));

  Tensor x = tensor({3.0, 1.0, 2.0}, {.dtype = kFloat64}).requires_grad_();
  auto [v, i] = x.sort();
  EXPECT_EQ(name_of(v), "SortBackward0");
  EXPECT_FALSE(i.requires_grad());
  EXPECT_EQ(grad_of(v, x, tensor({10.0, 20.0, 30.0}, {.dtype = kFloat64})), (std::vector<double>{30, 10, 20}));
  auto [tv, ti] = x.topk(2);
  EXPECT_EQ(name_of(tv), "TopkBackward0");
  EXPECT_FALSE(ti.requires_grad());
  EXPECT_EQ(grad_of(tv, x, tensor({10.0, 20.0}, {.dtype = kFloat64})), (std::vector<double>{10, 0, 20}));
  EXPECT_FALSE(x.argsort().requires_grad());
}

// ---------------------------------------------------------------- in-place forms

static Tensor index_add_into_view(const variable_list& x) {
  Tensor y = x[0] * 2;
  y.select(1, 2).index_add_(0, longs({0, 0, 2}), x[1].select(0, 0).narrow(0, 0, 3));
  return y;
}
static Tensor masked_fill_into_view(const variable_list& x) {
  Tensor y = x[0] * 2;
  y.narrow(0, 1, 2).masked_fill_(bools({1, 0, 0, 1, 0, 1, 1, 0}, {2, 4}), 0.0);
  return y;
}

EMBER_DEVICE_TEST(GradInplace, OnNonLeafTensors) {
  Tensor i0 = longs({2, 0, 1, 0, 1, 2, 0, 2}, {2, 4});
  Tensor m = bools({1, 0, 0, 1, 0, 1, 1, 0, 0, 0, 1, 1}, {3, 4});
  for (Layout l : kLayouts) {
    Tensor a = grad_input(l, -2, 2, 1), src = grad_input(l, -2, 2, 2);
    Tensor rows = leaf({2, 4}, 3);
    std::string n = layout_name(l);
    // self is a non-leaf (x * 2) that the op overwrites; the formula sees only the new history.
    EXPECT_GRADS([i0](const variable_list& x) { Tensor y = x[0] * 2; y.scatter_(0, i0, x[1]); return y; },
                 (variable_list{a, src}), n + " scatter_");
    EXPECT_GRADS([i0](const variable_list& x) { Tensor y = x[0] * 2; y.scatter_(0, i0, 1.5); return y; }, (variable_list{a}),
                 n + " scatter_ value");
    EXPECT_GRADS([i0](const variable_list& x) { Tensor y = x[0] * 2; y.scatter_add_(0, i0, x[1]); return y; },
                 (variable_list{a, src}), n + " scatter_add_");
    EXPECT_GRADS([](const variable_list& x) { Tensor y = x[0] * 2; y.index_add_(0, longs({1, 1}), x[1], 0.5); return y; },
                 (variable_list{a, rows}), n + " index_add_");
    EXPECT_GRADS([](const variable_list& x) { Tensor y = x[0] * 2; y.index_put_({longs({2, 0})}, x[1]); return y; },
                 (variable_list{a, rows}), n + " index_put_");
    EXPECT_GRADS([](const variable_list& x) { Tensor y = x[0] * 2; y.index_put_({longs({2, 2})}, x[1], true); return y; },
                 (variable_list{a, rows}), n + " index_put_ accumulate");
    EXPECT_GRADS([m](const variable_list& x) { Tensor y = x[0] * 2; y.masked_fill_(m, 4.0); return y; }, (variable_list{a}),
                 n + " masked_fill_");
    // Into a view of a non-leaf: the base's history goes through CopySlices (double backward:
    // DoubleBackwardThroughCopySlices).
    EXPECT_TRUE(gradcheck(index_add_into_view, {a, rows})) << n << " index_add_ into a view";
    EXPECT_TRUE(gradcheck(masked_fill_into_view, {a})) << n << " masked_fill_ into a view";
  }
  // A buffer that does not require grad receives differentiable values.
  Tensor src = leaf({3});
  Tensor buf = zeros({4}, {.dtype = kFloat64});
  buf.scatter_(0, longs({3, 1, 0}), src);
  EXPECT_TRUE(buf.requires_grad());
  EXPECT_EQ(name_of(buf), "ScatterBackward0");
  EXPECT_EQ(grad_of(buf, src, arange(4, {.dtype = kFloat64})), (std::vector<double>{3, 1, 0}));

  Tensor x = leaf({3});
  Tensor y = x * 1;
  y.index_add_(0, longs({0}), leaf({1}, 1));
  EXPECT_EQ(name_of(y), "IndexAddBackward0");
  y.index_put_({longs({1})}, leaf({}, 2));
  EXPECT_EQ(name_of(y), "IndexPutBackward0");
  y.masked_fill_(bools({0, 0, 1}, {3}), 0.0);
  EXPECT_EQ(name_of(y), "MaskedFillBackward0");
  y.scatter_add_(0, longs({0}), leaf({1}, 3));
  EXPECT_EQ(name_of(y), "ScatterAddBackward0");
  y.scatter_(0, longs({0}), 1.0);
  EXPECT_EQ(name_of(y), "ScatterBackward1");
  EXPECT_EQ(grad_of(y, x), (std::vector<double>{0, 0, 0}));
}

EMBER_DEVICE_TEST(GradInplace, Errors) {
  Tensor x = leaf({3});
  EXPECT_THROW_MSG(x.scatter_(0, longs({0}), 1.0), Error, "a leaf Variable that requires grad is being used in an in-place operation.");
  EXPECT_THROW_MSG(x.index_put_({longs({0})}, zeros({}, {.dtype = kFloat64})), Error, "a leaf Variable that requires grad");
  EXPECT_THROW_MSG(x.masked_fill_(bools({1, 0, 0}, {3}), 0.0), Error, "a leaf Variable that requires grad");
  // A saved index modified in place after the forward: backward refuses, as PyTorch does.
  Tensor idx = longs({0, 2});
  Tensor out = x.index_select(0, idx);
  idx.add_(0);
  EXPECT_THROW_MSG(grad_of(out, x), Error, "modified by an inplace operation");
  Tensor ids = longs({1, 0});
  Tensor g = x.gather(0, ids);
  ids.zero_();
  EXPECT_THROW_MSG(grad_of(g, x), Error, "modified by an inplace operation");
  // No history without grad mode.
  NoGradGuard no_grad;
  EXPECT_FALSE(x.index_select(0, longs({1})).requires_grad());
  EXPECT_FALSE(std::get<0>(x.sort()).requires_grad());
  EXPECT_FALSE(cat({x, x}).requires_grad());
}

// Double backward through CopySlices (an in-place op on a view, or a composite that copies into
// views of a new tensor): CopySlices takes as_strided windows of a gradient that requires grad,
// so this runs as_strided's backward over 2-D windows.
EMBER_DEVICE_TEST(GradCore, DoubleBackwardThroughCopySlices) {
  for (Layout l : kLayouts) {
    Tensor a = grad_input(l, -2, 2, 1);
    Tensor rows = leaf({2, 4}, 3);
    std::string n = layout_name(l);
    EXPECT_TRUE(gradgradcheck([](const variable_list& x) { return x[0].select(0, 1).diag(1); }, {a})) << n;
    EXPECT_TRUE(gradgradcheck([](const variable_list& x) { return x[0].repeat_interleave(longs({2, 0, 1}), 0); }, {a}))
        << n;
    EXPECT_TRUE(gradgradcheck(index_add_into_view, {a, rows})) << n;
    EXPECT_TRUE(gradgradcheck(masked_fill_into_view, {a})) << n;
  }
}
