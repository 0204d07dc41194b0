// The autograd engine: the seeds' examples with their printed numbers, graph rules, errors,
// hooks, custom functions, checkpointing, long chains.
#include "ember/nn/functional.h"
#include "gradcheck.h"

using namespace ember;
using namespace ember::testing;
using autograd::variable_list;

// The seeds' examples, with the numbers they print.
EMBER_DEVICE_TEST(Autograd, SeedExamples) {
  Tensor x = tensor(2.0, {.requires_grad = true});
  Tensor y = tensor(3.0, {.requires_grad = true});
  Tensor z = x.pow(2) + y.pow(3);
  z.backward();
  EXPECT_EQ(x.grad().item<double>(), 4.0);   // dz/dx = 2x
  EXPECT_EQ(y.grad().item<double>(), 27.0);  // dz/dy = 3y^2

  Tensor x2 = tensor(2.0, {.requires_grad = true});
  Tensor f = x2.pow(3) + 2 * x2.pow(2) + 3 * x2 + 4;
  f.backward();
  EXPECT_EQ(f.item<double>(), 26.0);
  EXPECT_EQ(x2.grad().item<double>(), 23.0);  // f'(2)

  Tensor v = tensor({1.0, 2.0, 3.0}, {.requires_grad = true});
  (v * v).sum().backward();
  EXPECT_EQ(v.grad().tolist<float>(), (std::vector<float>{2, 4, 6}));

  Tensor xx = tensor(2.0, {.requires_grad = true}), w = tensor(3.0, {.requires_grad = true}),
         b = tensor(1.0, {.requires_grad = true});
  Tensor yy = w * xx + b;
  EXPECT_EQ(yy.grad_fn()->name(), "AddBackward0");
  yy.backward();
  EXPECT_EQ(xx.grad().item<double>(), 3.0);
  EXPECT_EQ(w.grad().item<double>(), 2.0);
  EXPECT_EQ(b.grad().item<double>(), 1.0);

  // Accumulation across backward calls: 4 -> 8 -> 12, and with zero_ each time: 4, 4, 4.
  Tensor a = tensor({2.0}, {.requires_grad = true});
  for (double expected : {4.0, 8.0, 12.0}) {
    a.pow(2).backward(ones({1}));
    EXPECT_EQ(a.grad().item<double>(), expected);
  }
}

// The seeds' manual gradient descent for y = 2x + 1: PyTorch prints "y = 2.07 x + 0.79" after
// 100 epochs at lr 0.01 (w = 2.072226047515869, b = 0.7876465916633606 in torch 1.13).
EMBER_DEVICE_TEST(Autograd, SeedManualGradientDescent) {
  Tensor w = tensor({0.0}, {.requires_grad = true});
  Tensor b = tensor({0.0}, {.requires_grad = true});
  Tensor x_train = tensor({1.0, 2.0, 3.0, 4.0});
  Tensor y_train = tensor({3.0, 5.0, 7.0, 9.0});
  for (int epoch = 0; epoch < 100; ++epoch) {
    Tensor loss = (w * x_train + b - y_train).pow(2).mean();
    loss.backward();
    {
      NoGradGuard no_grad;
      w -= 0.01 * w.grad();
      b -= 0.01 * b.grad();
    }
    w.mutable_grad().zero_();
    b.mutable_grad().zero_();
  }
  EXPECT_NEAR(w.item<double>(), 2.072226047515869, 1e-5);
  EXPECT_NEAR(b.item<double>(), 0.7876465916633606, 1e-5);
}

EMBER_DEVICE_TEST(Autograd, AccumulatesUntilZeroed) {
  Tensor w = tensor(1.0, {.requires_grad = true});
  (w * 2).backward();
  EXPECT_EQ(w.grad().item<double>(), 2.0);
  (w * 3).backward();
  EXPECT_EQ(w.grad().item<double>(), 5.0);
  w.mutable_grad().zero_();
  (w * 4).backward();
  EXPECT_EQ(w.grad().item<double>(), 4.0);
  w.set_grad(Tensor());
  EXPECT_FALSE(w.grad().defined());
}

EMBER_DEVICE_TEST(Autograd, LeafAndGradFn) {
  Tensor x = ones({2, 2}, {.requires_grad = true});
  EXPECT_TRUE(x.is_leaf());
  EXPECT_EQ(x.grad_fn(), nullptr);
  Tensor y = x + 2;
  EXPECT_FALSE(y.is_leaf());
  EXPECT_EQ(y.grad_fn()->name(), "AddBackward0");
  EXPECT_EQ((y * y).grad_fn()->name(), "MulBackward0");
  EXPECT_THROW_MSG(zeros({2}, {.dtype = kInt64}).requires_grad_(), Error,
                   "only Tensors of floating point and complex dtype can require gradients");
  Tensor d = y.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_alias_of(y));
}

EMBER_DEVICE_TEST(Autograd, BackwardErrors) {
  Tensor x = ones({3}, {.requires_grad = true});
  Tensor y = x * 2;
  EXPECT_THROW_MSG(y.backward(), Error, "grad can be implicitly created only for scalar outputs");
  y.backward(ones({3}));
  EXPECT_EQ(x.grad().tolist<float>(), (std::vector<float>{2, 2, 2}));
  EXPECT_THROW_MSG(ones({1}).backward(), Error, "element 0 of tensors does not require grad and does not have a grad_fn");
  Tensor a = ones({2}, {.requires_grad = true});
  Tensor s = (a * a).sum();
  s.backward();
  EXPECT_THROW_MSG(s.backward(), Error, "Trying to backward through the graph a second time");
  Tensor b = ones({2}, {.requires_grad = true});
  Tensor t = (b * b).sum();
  t.backward({}, /*retain_graph=*/true);
  t.backward();
  EXPECT_EQ(b.grad().tolist<float>(), (std::vector<float>{4, 4}));
}

EMBER_DEVICE_TEST(Autograd, SecondDerivative) {
  Tensor x = tensor(3.0, {.requires_grad = true});
  Tensor y = x * x * x;
  variable_list g = autograd::grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true);
  EXPECT_EQ(g[0].item<double>(), 27.0);
  variable_list gg = autograd::grad({g[0]}, {x});
  EXPECT_EQ(gg[0].item<double>(), 18.0);
}

EMBER_DEVICE_TEST(Autograd, GradDoesNotTouchDotGrad) {
  Tensor x = ones({2}, {.requires_grad = true});
  Tensor unused = ones({2}, {.requires_grad = true});
  Tensor y = (x * 3).sum();
  variable_list g = autograd::grad({y}, {x}, {}, true);
  EXPECT_EQ(g[0].tolist<float>(), (std::vector<float>{3, 3}));
  EXPECT_FALSE(x.grad().defined());
  EXPECT_THROW_MSG(autograd::grad({y}, {unused}, {}, true), Error, "appears to not have been used in the graph");
  variable_list g2 = autograd::grad({y}, {x, unused}, {}, true, false, /*allow_unused=*/true);
  EXPECT_FALSE(g2[1].defined());
}

EMBER_DEVICE_TEST(Autograd, GradModes) {
  Tensor x = ones({2}, {.requires_grad = true});
  {
    NoGradGuard no_grad;
    Tensor y = x * 2;
    EXPECT_FALSE(y.requires_grad());
    {
      EnableGradGuard enable;
      EXPECT_TRUE((x * 2).requires_grad());
    }
    EXPECT_FALSE((x * 2).requires_grad());
  }
  EXPECT_TRUE((x * 2).requires_grad());
  {
    InferenceMode inference;
    EXPECT_FALSE((x * 2).requires_grad());
  }
  set_grad_enabled(false);
  EXPECT_FALSE((x * 2).requires_grad());
  set_grad_enabled(true);
  EXPECT_TRUE(is_grad_enabled());
}

EMBER_DEVICE_TEST(Autograd, BroadcastingReducesToInputShape) {
  Tensor a = ones({2, 3}, {.requires_grad = true});
  Tensor b = ones({3}, {.requires_grad = true});
  Tensor c = ones({2, 1}, {.requires_grad = true});
  ((a + b) * c).sum().backward();
  EXPECT_EQ(b.grad().sizes(), (Shape{3}));
  EXPECT_EQ(b.grad().tolist<float>(), (std::vector<float>{2, 2, 2}));
  EXPECT_EQ(c.grad().sizes(), (Shape{2, 1}));
  EXPECT_EQ(c.grad().tolist<float>(), (std::vector<float>{6, 6}));
}

EMBER_DEVICE_TEST(Autograd, ViewsRouteGradientsToBase) {
  Tensor x = arange(6, {.dtype = kFloat64}).requires_grad_();
  Tensor v = x.view({2, 3});
  Tensor s = v.t().select(0, 1) * 10 + v.slice(1, 0, std::nullopt, 2).sum();
  s.sum().backward();
  // select(0,1) of v.t() = column 1 of v: elements 1 and 4 get 10; columns 0 and 2 get 2 each
  // (two rows of sum, counted once per output element of s, which has 2 elements).
  EXPECT_EQ(x.grad().tolist<double>(), (std::vector<double>{2, 10, 2, 2, 10, 2}));
}

EMBER_DEVICE_TEST(Autograd, InPlaceVersionCheck) {
  Tensor a = ones({3}, {.requires_grad = true});
  Tensor b = a * 2;
  Tensor c = b * b;  // saves b
  b.add_(1);
  EXPECT_THROW_MSG(c.sum().backward(), Error,
                   "one of the variables needed for gradient computation has been modified by an inplace operation: "
                   "[ember.FloatTensor [3]], which is output 0 of MulBackward0, is at version 1; expected version 0 instead");
  Tensor leaf = ones({3}, {.requires_grad = true});
  EXPECT_THROW_MSG(leaf.add_(1), Error, "a leaf Variable that requires grad is being used in an in-place operation.");
  EXPECT_THROW_MSG(leaf.select(0, 0).mul_(2), Error,
                   "a view of a leaf Variable that requires grad is being used in an in-place operation.");
}

EMBER_DEVICE_TEST(Autograd, InPlaceOnNonLeafAndViews) {
  Tensor x = tensor({1.0, 2.0, 3.0}, {.requires_grad = true});
  Tensor y = x * 1;
  y.mul_(x);  // y = x^2
  y.sum().backward();
  EXPECT_EQ(x.grad().tolist<float>(), (std::vector<float>{2, 4, 6}));

  // In place on a view of a non-leaf: the base's history is updated.
  Tensor p = tensor({1.0, 2.0, 3.0, 4.0}, {.requires_grad = true});
  Tensor base = p * 1;
  Tensor view = base.slice(0, 1, 3);
  view.mul_(10);
  EXPECT_EQ(base.grad_fn()->name(), "CopySlices");
  (base * tensor({1.0, 2.0, 3.0, 4.0})).sum().backward();
  EXPECT_EQ(p.grad().tolist<float>(), (std::vector<float>{1, 20, 30, 4}));

  // Writing a tensor that requires grad into a buffer that does not.
  Tensor w = tensor({5.0, 6.0}, {.requires_grad = true});
  Tensor buf = zeros({4});
  buf.slice(0, 0, 2).copy_(w * 2);
  EXPECT_TRUE(buf.requires_grad());
  buf.sum().backward();
  EXPECT_EQ(w.grad().tolist<float>(), (std::vector<float>{2, 2}));
}

EMBER_DEVICE_TEST(Autograd, HooksAndRetainGrad) {
  Tensor x = ones({2}, {.requires_grad = true});
  Tensor y = x * 3;
  y.retain_grad();
  int calls = 0;
  auto h = y.register_hook([&](const Tensor& g) { ++calls; return g * 2; });  // replaces the gradient
  y.sum().backward();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(x.grad().tolist<float>(), (std::vector<float>{6, 6}));
  EXPECT_EQ(y.grad().tolist<float>(), (std::vector<float>{2, 2}));  // retain_grad sees the hooked grad
  h.remove();
  x.set_grad(Tensor());
  Tensor y2 = x * 3;
  auto h2 = y2.register_hook([&](const Tensor& g) { ++calls; return Tensor(); });
  h2.remove();
  y2.sum().backward();
  EXPECT_EQ(calls, 1);
  // Leaf hook runs before accumulation; post-accumulate hook after.
  Tensor w = ones({2}, {.requires_grad = true});
  std::vector<float> seen;
  w.register_hook([&](const Tensor& g) { return g + 1; });
  autograd::register_post_accumulate_grad_hook(w, [&](const Tensor& leaf) { seen = leaf.grad().tolist<float>(); });
  (w * 2).sum().backward();
  EXPECT_EQ(w.grad().tolist<float>(), (std::vector<float>{3, 3}));
  EXPECT_EQ(seen, (std::vector<float>{3, 3}));
}

struct MyCube : autograd::Function<MyCube> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return x * x * x;
  }
  static variable_list backward(autograd::AutogradContext* ctx, const variable_list& g) {
    Tensor x = ctx->get_saved_variables()[0];
    return {g[0] * 3 * x * x};
  }
};

EMBER_DEVICE_TEST(Autograd, CustomFunction) {
  Tensor x = tensor({2.0, -1.0}, {.requires_grad = true});
  Tensor y = MyCube::apply(x);
  EXPECT_EQ(y.grad_fn()->name(), "MyCubeBackward");
  y.sum().backward();
  EXPECT_EQ(x.grad().tolist<float>(), (std::vector<float>{12, 3}));
}

EMBER_DEVICE_TEST(Autograd, CheckpointGivesIdenticalGradients) {
  auto block = [](const variable_list& in) -> variable_list { return {(in[0] * in[1]).exp().sum({1})}; };
  Tensor a = randn({3, 4}, {.dtype = kFloat64}).requires_grad_();
  Tensor b = randn({3, 4}, {.dtype = kFloat64}).requires_grad_();
  block({a, b})[0].sum().backward();
  Tensor ga = a.grad().clone(), gb = b.grad().clone();
  a.set_grad(Tensor());
  b.set_grad(Tensor());
  autograd::checkpoint(block, {a, b})[0].sum().backward();
  EXPECT_TRUE(a.grad().equal(ga));
  EXPECT_TRUE(b.grad().equal(gb));
}

// The recomputation replays the random draws of the forward on the inputs' device (dropout
// masks match), whichever generator that device uses.
EMBER_DEVICE_TEST(Autograd, CheckpointReplaysTheRandomStreamOfTheInputsDevice) {
  auto block = [](const variable_list& in) -> variable_list {
    return {nn::functional::dropout(in[0].exp(), 0.5, /*training=*/true) * 3};
  };
  Tensor x = randn({64}, {.dtype = kFloat64}).requires_grad_();
  manual_seed(5);
  Tensor y = autograd::checkpoint(block, {x})[0];
  Tensor kept = y.ne(0).to(kFloat64);  // the forward's mask
  randn({16});                          // other draws between forward and backward
  y.sum().backward();
  // d/dx of dropout(exp(x)) * 3 with p = 0.5: exp(x) * 2 * 3 where kept, 0 elsewhere.
  Tensor want = x.detach().exp() * 6 * kept;
  EXPECT_TRUE(x.grad().allclose(want)) << "the recomputation drew a different dropout mask";
}

EMBER_DEVICE_TEST(Autograd, CheckpointGivesCapturedParametersTheirGradients) {
  Tensor w = randn({4}, {.dtype = kFloat64}).requires_grad_();
  auto block = [&w](const variable_list& in) -> variable_list { return {(in[0] * w).tanh()}; };
  Tensor x = randn({3, 4}, {.dtype = kFloat64}).requires_grad_();
  block({x})[0].sum().backward();
  Tensor gw = w.grad().clone(), gx = x.grad().clone();
  w.set_grad(Tensor());
  x.set_grad(Tensor());
  autograd::checkpoint(block, {x})[0].sum().backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_TRUE(w.grad().allclose(gw));
  EXPECT_TRUE(x.grad().allclose(gx));
}

EMBER_DEVICE_TEST(Autograd, LongChainDoesNotOverflowTheStack) {
  Tensor x = tensor(1.0, {.requires_grad = true});
  Tensor y = x;
  for (int i = 0; i < 100000; ++i) y = y * 1.0;
  y.backward();
  EXPECT_EQ(x.grad().item<double>(), 1.0);
  y = Tensor();  // frees 100,000 nodes without recursion
}

EMBER_DEVICE_TEST(Autograd, ManualGradientDescentLearnsLine) {
  // y = 2x + 1 learned by hand-written gradient descent, as in the seeds.
  manual_seed(0);
  Tensor xs = linspace(-1, 1, 20).unsqueeze(1);
  Tensor ys = xs * 2 + 1;
  Tensor w = zeros({1}, {.requires_grad = true});
  Tensor b = zeros({1}, {.requires_grad = true});
  for (int step = 0; step < 500; ++step) {
    Tensor loss = ((xs * w + b - ys) * (xs * w + b - ys)).mean();
    loss.backward();
    {
      NoGradGuard no_grad;
      w.sub_(w.grad() * 0.1);
      b.sub_(b.grad() * 0.1);
    }
    w.mutable_grad().zero_();
    b.mutable_grad().zero_();
  }
  EXPECT_NEAR(w.item<double>(), 2.0, 1e-3);
  EXPECT_NEAR(b.item<double>(), 1.0, 1e-3);
}

EMBER_DEVICE_TEST(Gradcheck, CoreOps) {
  for (Layout l : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
    Tensor a = grad_input(l, -2, 2, 1), b = grad_input(l, -2, 2, 2);
    Tensor row = grad_input(Layout::Contiguous, -2, 2, 3).select(0, 0).detach().requires_grad_();
    EXPECT_TRUE(gradcheck([](const variable_list& x) { return x[0] * x[1] + x[0] - x[1] * 2; }, {a, b})) << layout_name(l);
    EXPECT_TRUE(gradcheck([](const variable_list& x) { return x[0] * x[1]; }, {a, row})) << layout_name(l);
    EXPECT_TRUE(gradgradcheck([](const variable_list& x) { return x[0] * x[1] * x[0]; }, {a, b})) << layout_name(l);
    EXPECT_TRUE(gradcheck([](const variable_list& x) {
      return x[0].t().unsqueeze(0).expand({2, 4, 3}).select(1, 2).slice(1, 1) * 3;
    }, {a})) << layout_name(l);
    EXPECT_TRUE(gradcheck([](const variable_list& x) { return x[0].view({-1}).as_strided({2, 2}, {1, 1}); },
                          {grad_input(Layout::Contiguous)}));
    // Overlapping and 2-D windows: gradients accumulate where elements are reused.
    EXPECT_TRUE(gradcheck([](const variable_list& x) { return x[0].as_strided({3, 4}, {4, 1}) * 2; },
                          {grad_input(Layout::Contiguous)}));
    EXPECT_TRUE(gradcheck([](const variable_list& x) { return x[0].as_strided({3, 3}, {1, 1}, 1); },
                          {grad_input(Layout::Contiguous)}));
  }
}
