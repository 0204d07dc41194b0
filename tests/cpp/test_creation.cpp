// Factories, random generation, from_blob and views.
#include <cmath>

#include "test_utils.h"

using namespace ember;
using namespace ember::testing;

EMBER_DEVICE_TEST(Creation, TensorFromNestedBraces) {
  Tensor a = tensor({{1.0, 2.0}, {3.0, 4.0}});
  EXPECT_EQ(a.sizes(), (Shape{2, 2}));
  EXPECT_EQ(a.dtype(), kFloat32);
  EXPECT_EQ(a.tolist<double>(), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(tensor({1, 2, 3}).dtype(), kInt64);
  EXPECT_EQ(tensor({true, false}).dtype(), kBool);
  EXPECT_EQ(tensor({1, 2}, {.dtype = kFloat64}).dtype(), kFloat64);
  EXPECT_EQ(tensor(3.5).dim(), 0);
  EXPECT_EQ(tensor({1, 2.5}).dtype(), kFloat32);  // mixed ints and floats: default float
  Tensor e = tensor({});
  EXPECT_EQ(e.sizes(), (Shape{0}));
  EXPECT_THROW_MSG(tensor({{1, 2}, {3}}), ValueError, "expected sequence of length 2 at dim 1 (got 1)");
  EXPECT_EQ(tensor(std::vector<float>{1.5f, 2.5f}).tolist<float>(), (std::vector<float>{1.5f, 2.5f}));
}

EMBER_DEVICE_TEST(Creation, Fills) {
  EXPECT_EQ(zeros({2, 3}).tolist<float>(), std::vector<float>(6, 0.f));
  EXPECT_EQ(ones({4}, {.dtype = kInt32}).tolist<int32_t>(), std::vector<int32_t>(4, 1));
  EXPECT_EQ(full({2}, 7).dtype(), kInt64);
  EXPECT_EQ(full({2}, 7.5).dtype(), kFloat32);
  EXPECT_EQ(full({2}, true).dtype(), kBool);
  EXPECT_EQ(full({2}, 1.5, {.dtype = kFloat16}).tolist<float>(), (std::vector<float>{1.5f, 1.5f}));
  Tensor like = zeros({3}, {.dtype = kFloat64});
  EXPECT_EQ(ones_like(like).dtype(), kFloat64);
  EXPECT_EQ(full_like(like, 2).tolist<double>(), (std::vector<double>{2, 2, 2}));
  EXPECT_EQ(zeros_like(like, {.dtype = kInt8}).dtype(), kInt8);
  EXPECT_THROW_MSG(empty({2, -1}), Error, "negative dimension -1");
}

EMBER_DEVICE_TEST(Creation, Ranges) {
  EXPECT_EQ(arange(5).tolist<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(arange(5).dtype(), kInt64);
  EXPECT_EQ(arange(0, 1, 0.25).tolist<float>(), (std::vector<float>{0, 0.25f, 0.5f, 0.75f}));
  EXPECT_EQ(arange(0, 1, 0.25).dtype(), kFloat32);
  EXPECT_EQ(arange(10, 0, -3).tolist<int64_t>(), (std::vector<int64_t>{10, 7, 4, 1}));
  EXPECT_EQ(arange(1, 2, 0.3).numel(), 4);
  EXPECT_THROW_MSG(arange(0, 5, 0), Error, "step must be nonzero");
  EXPECT_THROW_MSG(arange(5, 0, 1), Error, "upper bound and larger bound inconsistent with step sign");
  Tensor l = linspace(0, 1, 5);
  EXPECT_EQ(l.tolist<float>(), (std::vector<float>{0, 0.25f, 0.5f, 0.75f, 1}));
  EXPECT_EQ(linspace(-1, 1, 1).tolist<float>(), (std::vector<float>{-1}));
  EXPECT_EQ(linspace(0, 1, 0).numel(), 0);
  EXPECT_THROW_MSG(linspace(0, 1, -1), Error, "number of steps must be non-negative");
  Tensor i = eye(2, 3);
  EXPECT_EQ(i.tolist<float>(), (std::vector<float>{1, 0, 0, 0, 1, 0}));
}

EMBER_DEVICE_TEST(Random, SameSeedSameNumbers) {
  manual_seed(42);
  Tensor a = rand({100});
  Tensor n1 = randn({7});
  manual_seed(42);
  Tensor b = rand({100});
  Tensor n2 = randn({7});
  EXPECT_EQ(a.tolist<float>(), b.tolist<float>());
  EXPECT_EQ(n1.tolist<float>(), n2.tolist<float>());
  Generator g1(7), g2(7);
  EXPECT_EQ(randn({5}, {}, &g1).tolist<float>(), randn({5}, {}, &g2).tolist<float>());
  EXPECT_NE(rand({5}).tolist<float>(), rand({5}).tolist<float>());
  Generator g3(1);
  std::string state = g3.get_state();
  Tensor x = rand({4}, {}, &g3);
  g3.set_state(state);
  EXPECT_EQ(rand({4}, {}, &g3).tolist<float>(), x.tolist<float>());
}

EMBER_DEVICE_TEST(Random, Distributions) {
  manual_seed(0);
  std::vector<double> u = rand({20000}, {.dtype = kFloat64}).tolist<double>();
  double mean = 0, mn = 1, mx = 0;
  for (double v : u) { mean += v; mn = std::min(mn, v); mx = std::max(mx, v); }
  mean /= double(u.size());
  EXPECT_NEAR(mean, 0.5, 0.01);
  EXPECT_GE(mn, 0.0);
  EXPECT_LT(mx, 1.0);
  std::vector<double> n = randn({20000}, {.dtype = kFloat64}).tolist<double>();
  double m = 0, v2 = 0;
  for (double v : n) m += v;
  m /= double(n.size());
  for (double v : n) v2 += (v - m) * (v - m);
  v2 /= double(n.size() - 1);
  EXPECT_NEAR(m, 0.0, 0.03);
  EXPECT_NEAR(v2, 1.0, 0.03);
  std::vector<int64_t> r = randint(3, 7, {1000}).tolist<int64_t>();
  for (auto x : r) { EXPECT_GE(x, 3); EXPECT_LT(x, 7); }
  std::vector<int64_t> p = randperm(50).tolist<int64_t>();
  std::vector<int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 50; ++i) EXPECT_EQ(sorted[i], i);
  EXPECT_NE(p, sorted);
  Tensor t = empty({2, 3}).t();  // non-contiguous target
  t.uniform_(5, 6);
  for (float x : t.tolist<float>()) { EXPECT_GE(x, 5.f); EXPECT_LT(x, 6.f); }
  t.normal_(10, 0);
  EXPECT_EQ(t.tolist<float>(), std::vector<float>(6, 10.f));
  EXPECT_THROW_MSG(rand({2}, {.dtype = kInt64}), Error, "\"rand\" not implemented for 'Long'");
  EXPECT_THROW_MSG(randint(5, 5, {2}), Error, "random_ expects 'from' to be less than 'to'");
}

// float32 normal_ transforms the same draws as float64 in float arithmetic, over threads: the
// same values to float precision (tails from u1 near 0 and near 1 included, odd lengths, a
// non-contiguous target, mean and std), and the same numbers for any thread count.
EMBER_DEVICE_TEST(Random, Float32NormalMatchesFloat64Draws) {
  for (int64_t n : {1, 2, 7, 100001}) {
    SCOPED_TRACE(n);
    Generator g32(11), g64(11);
    Tensor a = randn({n}, {}, &g32), b = randn({n}, {.dtype = kFloat64}, &g64);
    EXPECT_TRUE(allclose(a.to(kFloat64), b, 0.0, 2e-6)) << (a.to(kFloat64) - b).abs().max().item<double>();
  }
  Generator g32(5), g64(5);
  Tensor t = empty({300, 200}).t();
  t.normal_(3.0, 0.5, &g32);
  Tensor ref = empty({300, 200}, {.dtype = kFloat64}).t();
  ref.normal_(3.0, 0.5, &g64);
  EXPECT_TRUE(allclose(t.to(kFloat64), ref, 0.0, 4e-6));
  const int saved = get_num_threads();
  set_num_threads(1);
  Generator s1(7);
  Tensor one = randn({50001}, {}, &s1);
  set_num_threads(2);
  Generator s2(7);
  EXPECT_TRUE(equal(one, randn({50001}, {}, &s2)));
  set_num_threads(saved);
}

EMBER_DEVICE_TEST(Creation, FromBlobSharesMemory) {
  std::vector<float> buf = {1, 2, 3, 4, 5, 6};
  Tensor t = from_blob(buf.data(), {2, 3});
  EXPECT_EQ(t.data_ptr(), buf.data());
  t.fill_(9);
  EXPECT_EQ(buf[4], 9.f);
  bool deleted = false;
  {
    Tensor d = from_blob(buf.data(), {3}, [&](void*) { deleted = true; });
    Tensor view = d.slice(0, 1);
    d = Tensor();
    EXPECT_FALSE(deleted);  // the view keeps the storage alive
  }
  EXPECT_TRUE(deleted);
  Tensor strided = from_blob(buf.data(), {3}, {2}, {.dtype = kFloat32});
  EXPECT_EQ(strided.tolist<float>(), (std::vector<float>{9, 9, 9}));
}

EMBER_DEVICE_TEST(Views, ShareStorageAndVersion) {
  Tensor base = arange(12, {.dtype = kFloat32});
  Tensor v = base.view({3, 4});
  Tensor t = v.t();
  Tensor s = v.select(1, 2);
  Tensor sl = v.slice(1, 0, std::nullopt, 2);
  for (const Tensor& x : {v, t, s, sl}) {
    EXPECT_TRUE(x.is_alias_of(base));
    EXPECT_EQ(x.impl()->version_counter(), base.impl()->version_counter());
  }
  EXPECT_EQ(s.tolist<float>(), (std::vector<float>{2, 6, 10}));
  EXPECT_EQ(sl.tolist<float>(), (std::vector<float>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(t.tolist<float>(), (std::vector<float>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  EXPECT_FALSE(t.is_contiguous());
  s.fill_(-1);
  EXPECT_EQ(base.tolist<float>()[6], -1.f);
  EXPECT_GT(base._version(), 0u);
}

EMBER_DEVICE_TEST(Views, ViewRulesAndErrors) {
  Tensor a = arange(6, {.dtype = kFloat32});
  EXPECT_EQ(a.view({2, -1}).sizes(), (Shape{2, 3}));
  EXPECT_EQ(a.view({-1}).sizes(), (Shape{6}));
  EXPECT_THROW_MSG(a.view({4, -1}), Error, "shape '[4, -1]' is invalid for input of size 6");
  EXPECT_THROW_MSG(a.view({-1, -1}), Error, "only one dimension can be inferred");
  Tensor t = a.view({2, 3}).t();
  EXPECT_THROW_MSG(t.view({6}), Error, "view size is not compatible with input tensor's size and stride");
  EXPECT_EQ(t.view({3, 2, 1}).sizes(), (Shape{3, 2, 1}));  // splitting a dim keeps a view
  Tensor e = a.view({1, 2, 3}).expand({4, 2, 3});
  EXPECT_EQ(e.strides(), (Shape{0, 3, 1}));
  EXPECT_THROW_MSG(a.view({2, 3}).expand({2, 4}), Error, "The expanded size of the tensor (4) must match the existing size (3) at non-singleton dimension 1");
  EXPECT_EQ(a.view({2, 3}).expand({-1, 3}).sizes(), (Shape{2, 3}));
  EXPECT_EQ(a.view({1, 6, 1}).squeeze().sizes(), (Shape{6}));
  EXPECT_EQ(a.view({1, 6, 1}).squeeze(0).sizes(), (Shape{6, 1}));
  EXPECT_EQ(a.view({1, 6, 1}).squeeze(1).sizes(), (Shape{1, 6, 1}));
  EXPECT_EQ(a.unsqueeze(-1).sizes(), (Shape{6, 1}));
  EXPECT_EQ(a.unsqueeze(0).sizes(), (Shape{1, 6}));
  EXPECT_THROW_MSG(a.unsqueeze(3), IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 3)");
  EXPECT_THROW_MSG(a.view({2, 3}).permute({0, 0}), Error, "duplicate dims");
  EXPECT_THROW_MSG(a.view({2, 3}).permute({0}), Error, "input.dim() = 2 is not equal to len(dims) = 1");
  EXPECT_THROW_MSG(a.view({2, 3}).select(0, 2), IndexError, "select(): index 2 out of range for tensor of size [2, 3] at dimension 0");
  EXPECT_EQ(a.view({2, 3}).select(0, -1).tolist<float>(), (std::vector<float>{3, 4, 5}));
  EXPECT_THROW_MSG(a.slice(0, 0, 3, 0), ValueError, "slice step must be positive");
  EXPECT_EQ(a.slice(0, -2).tolist<float>(), (std::vector<float>{4, 5}));
  EXPECT_EQ(a.slice(0, 4, 100).tolist<float>(), (std::vector<float>{4, 5}));
  EXPECT_EQ(a.slice(0, 5, 2).numel(), 0);
  EXPECT_EQ(a.narrow(0, 1, 2).tolist<float>(), (std::vector<float>{1, 2}));
  EXPECT_THROW_MSG(a.narrow(0, 5, 2), Error, "start (5) + length (2) exceeds dimension size (6).");
  EXPECT_THROW_MSG(a.view({1, 2, 3}).t(), Error, "t() expects a tensor with <= 2 dimensions, but self is 3D");
  EXPECT_EQ(a.view({2, 3}).T().sizes(), (Shape{3, 2}));
  EXPECT_EQ(a.view({2, 3}).mT().sizes(), (Shape{3, 2}));
  Tensor m = arange(9, {.dtype = kFloat32}).view({3, 3});
  EXPECT_EQ(diagonal(m).tolist<float>(), (std::vector<float>{0, 4, 8}));
  EXPECT_EQ(diagonal(m, 1).tolist<float>(), (std::vector<float>{1, 5}));
  EXPECT_EQ(diagonal(m, -2).tolist<float>(), (std::vector<float>{6}));
  EXPECT_THROW_MSG(a.as_strided({4}, {2}), Error, "out of bounds for storage of 6 elements");
  EXPECT_EQ(a.as_strided({2, 2}, {1, 2}, 1).tolist<float>(), (std::vector<float>{1, 3, 2, 4}));
  EXPECT_EQ(a.size(-1), 6);
  EXPECT_THROW_MSG(a.size(1), IndexError, "Dimension out of range");
}
