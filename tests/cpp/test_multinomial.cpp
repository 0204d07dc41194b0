// multinomial: shapes, seeding, zero weights, empirical frequencies with and without
// replacement, independent rows, and torch's error messages. Statistical checks use fixed
// seeds and 5-standard-deviation tolerances, so they cannot flake.
#include <algorithm>
#include <cmath>
#include <set>

#include "test_utils.h"

using namespace ember;
using ember::testing::host_rand;

namespace {

// Each count against n * p within 5 binomial standard deviations.
void expect_frequencies(const std::vector<int64_t>& counts, const std::vector<double>& p, int64_t n) {
  ASSERT_EQ(counts.size(), p.size());
  for (size_t k = 0; k < p.size(); ++k) {
    double mean = double(n) * p[k], sd = std::sqrt(double(n) * p[k] * (1 - p[k]));
    EXPECT_NEAR(double(counts[k]), mean, 5 * sd + 1e-9) << "category " << k;
  }
}

std::vector<double> normalised(std::vector<double> w) {
  double t = 0;
  for (double x : w) t += x;
  for (double& x : w) x /= t;
  return w;
}

}  // namespace

EMBER_DEVICE_TEST(Multinomial, ShapesAndDtype) {
  Generator g(device(), 1), h(1);
  Tensor w1 = tensor({1., 2., 3., 4.});
  Tensor a = multinomial(w1, 3, false, &g);
  EXPECT_EQ(a.dtype(), kInt64);
  EXPECT_EQ(a.sizes(), (Shape{3}));
  Tensor b = multinomial(w1, 10, true, &g);  // with replacement num_samples may exceed n
  EXPECT_EQ(b.sizes(), (Shape{10}));
  for (int64_t v : b.tolist<int64_t>()) { EXPECT_GE(v, 0); EXPECT_LT(v, 4); }
  Tensor w2 = host_rand({5, 7}, h).add(0.1);
  Tensor c = multinomial(w2, 4, false, &g);
  EXPECT_EQ(c.dtype(), kInt64);
  EXPECT_EQ(c.sizes(), (Shape{5, 4}));
  EXPECT_EQ(multinomial(w2, 9, true, &g).sizes(), (Shape{5, 9}));
  EXPECT_EQ(multinomial(w2.t(), 2, true, &g).sizes(), (Shape{7, 2}));  // non-contiguous input
  EXPECT_EQ(multinomial(w2.to(kFloat16), 2, false, &g).sizes(), (Shape{5, 2}));
  EXPECT_EQ(multinomial(zeros({0, 3}), 2, true, &g).sizes(), (Shape{0, 2}));
  // The method and the function draw the same from the same seed.
  Generator g1(device(), 7), g2(device(), 7);
  EXPECT_EQ(w2.multinomial(3, true, &g1).tolist<int64_t>(), multinomial(w2, 3, true, &g2).tolist<int64_t>());
  EXPECT_EQ(w2.multinomial(3, false, &g1).tolist<int64_t>(), multinomial(w2, 3, false, &g2).tolist<int64_t>());
  // Not differentiable: an input that requires grad gives an int64 result without history.
  Tensor r = w1.clone().requires_grad_(true);
  Tensor s = multinomial(r, 2, false, &g);
  EXPECT_FALSE(s.requires_grad());
}

EMBER_DEVICE_TEST(Multinomial, SameSeedSameDraws) {
  Tensor w = tensor({{1., 2., 3., 0.5, 7.}, {4., 0., 1., 1., 2.}}, {.dtype = kFloat32});
  for (bool replacement : {true, false}) {
    Generator g1(device(), 123), g2(device(), 123), g3(device(), 124);
    std::vector<int64_t> x = multinomial(w, 4, replacement, &g1).tolist<int64_t>();
    std::vector<int64_t> y = multinomial(w, 4, replacement, &g2).tolist<int64_t>();
    EXPECT_EQ(x, y);
    // the stream moves on: the next call differs (with overwhelming probability for this seed)
    std::vector<int64_t> x2 = multinomial(w.repeat({25, 1}), 4, replacement, &g1).tolist<int64_t>();
    std::vector<int64_t> z = multinomial(w.repeat({25, 1}), 4, replacement, &g3).tolist<int64_t>();
    EXPECT_NE(x2, z);
  }
  manual_seed(99);
  std::vector<int64_t> d1 = multinomial(w, 3, true).tolist<int64_t>();
  manual_seed(99);
  EXPECT_EQ(multinomial(w, 3, true).tolist<int64_t>(), d1);
}

EMBER_DEVICE_TEST(Multinomial, ZeroWeightsNeverDrawn) {
  Generator g(device(), 5);
  // zeros at both ends and in between, and a tiny positive weight next to a large one
  Tensor w = tensor({0., 1., 0., 0., 2., 1e-300, 0.}, {.dtype = kFloat64});
  std::vector<int64_t> d = multinomial(w, 200000, true, &g).tolist<int64_t>();
  for (int64_t v : d) EXPECT_TRUE(v == 1 || v == 4 || v == 5) << v;
  for (int it = 0; it < 2000; ++it) {
    std::vector<int64_t> s = multinomial(w, 3, false, &g).tolist<int64_t>();
    std::sort(s.begin(), s.end());
    ASSERT_EQ(s, (std::vector<int64_t>{1, 4, 5}));
  }
  // float32 rows that are mostly zeros
  Tensor w2 = zeros({3, 100});
  w2.select(0, 0).select(0, 0).fill_(1);
  w2.select(0, 1).select(0, 99).fill_(3);
  w2.select(0, 2).select(0, 50).fill_(0.25);
  w2.select(0, 2).select(0, 51).fill_(0.25);
  std::vector<int64_t> e = multinomial(w2, 10000, true, &g).tolist<int64_t>();
  for (int64_t i = 0; i < 10000; ++i) {
    EXPECT_EQ(e[size_t(i)], 0);
    EXPECT_EQ(e[size_t(10000 + i)], 99);
    EXPECT_TRUE(e[size_t(20000 + i)] == 50 || e[size_t(20000 + i)] == 51);
  }
}

EMBER_DEVICE_TEST(Multinomial, FrequenciesWithReplacement) {
  std::vector<double> w = {1., 2., 3., 4., 0.5, 0., 9.5};  // need not sum to 1
  for (DType dt : {kFloat32, kFloat64}) {
    Generator g(device(), 2024);
    const int64_t n = 200000;
    std::vector<int64_t> d = multinomial(tensor(w, {.dtype = dt}), n, true, &g).tolist<int64_t>();
    std::vector<int64_t> counts(w.size(), 0);
    for (int64_t v : d) counts[size_t(v)]++;
    EXPECT_EQ(counts[5], 0);
    expect_frequencies(counts, normalised(w), n);
  }
}

EMBER_DEVICE_TEST(Multinomial, WithoutReplacementDistinctAndComplete) {
  Generator g(device(), 11), h(11);
  Tensor w = host_rand({40, 12}, h).add(1e-3);
  std::vector<int64_t> d = multinomial(w, 8, false, &g).tolist<int64_t>();
  for (int64_t r = 0; r < 40; ++r) {
    std::set<int64_t> row(d.begin() + r * 8, d.begin() + (r + 1) * 8);
    EXPECT_EQ(row.size(), 8u) << "row " << r;
    for (int64_t v : row) { EXPECT_GE(v, 0); EXPECT_LT(v, 12); }
  }
  // num_samples == n: every category exactly once, in some order
  std::vector<int64_t> all = multinomial(w, 12, false, &g).tolist<int64_t>();
  for (int64_t r = 0; r < 40; ++r) {
    std::vector<int64_t> row(all.begin() + r * 12, all.begin() + (r + 1) * 12);
    std::sort(row.begin(), row.end());
    for (int64_t k = 0; k < 12; ++k) EXPECT_EQ(row[size_t(k)], k);
  }
  std::vector<int64_t> one = multinomial(tensor({5.}), 1, false, &g).tolist<int64_t>();
  EXPECT_EQ(one, (std::vector<int64_t>{0}));
}

EMBER_DEVICE_TEST(Multinomial, WithoutReplacementFollowsSuccessiveDraws) {
  // Many identical rows, two draws each: the first draw follows the weights, the second
  // the weights with the first category removed: P(j second) = sum_{i != j} p_i p_j / (1 - p_i).
  std::vector<double> w = {1., 2., 3., 4., 0.};
  std::vector<double> p = normalised(w);
  const int64_t rows = 200000;
  Generator g(device(), 77);
  std::vector<int64_t> d = multinomial(tensor(w).expand({rows, 5}), 2, false, &g).tolist<int64_t>();
  std::vector<int64_t> first(5, 0), second(5, 0);
  for (int64_t r = 0; r < rows; ++r) {
    first[size_t(d[size_t(2 * r)])]++;
    second[size_t(d[size_t(2 * r + 1)])]++;
    ASSERT_NE(d[size_t(2 * r)], d[size_t(2 * r + 1)]);
  }
  expect_frequencies(first, p, rows);
  std::vector<double> p2(5, 0);
  for (size_t j = 0; j < 5; ++j)
    for (size_t i = 0; i < 5; ++i)
      if (i != j) p2[j] += p[i] * p[j] / (1 - p[i]);
  expect_frequencies(second, p2, rows);
  EXPECT_EQ(first[4] + second[4], 0);
}

EMBER_DEVICE_TEST(Multinomial, RowsAreIndependent) {
  Generator g(device(), 31);
  // Each row draws from its own weights only.
  Tensor w = tensor({{0., 0., 1., 0.}, {1., 0., 0., 0.}, {0., 2., 0., 2.}});
  for (bool replacement : {true, false}) {
    std::vector<int64_t> d = multinomial(w, replacement ? 500 : 1, replacement, &g).tolist<int64_t>();
    int64_t k = replacement ? 500 : 1;
    for (int64_t i = 0; i < k; ++i) {
      EXPECT_EQ(d[size_t(i)], 2);
      EXPECT_EQ(d[size_t(k + i)], 0);
      EXPECT_TRUE(d[size_t(2 * k + i)] == 1 || d[size_t(2 * k + i)] == 3);
    }
  }
  // Identical rows: row r's first draw and row r+1's first draw are independent, so the pair
  // (a, b) has frequency p_a * p_b.
  std::vector<double> wv = {1., 3.};
  std::vector<double> p = normalised(wv);
  const int64_t rows = 200000;
  for (bool replacement : {true, false}) {
    std::vector<int64_t> d = multinomial(tensor(wv).expand({rows, 2}), 1, replacement, &g).tolist<int64_t>();
    std::vector<int64_t> pairs(4, 0);
    for (int64_t r = 0; r + 1 < rows; r += 2) pairs[size_t(2 * d[size_t(r)] + d[size_t(r + 1)])]++;
    expect_frequencies(pairs, {p[0] * p[0], p[0] * p[1], p[1] * p[0], p[1] * p[1]}, rows / 2);
  }
}

EMBER_DEVICE_TEST(Multinomial, Errors) {
  Tensor w = tensor({1., 2., 3.});
  EXPECT_THROW_MSG(multinomial(tensor(1.), 1), Error, "prob_dist must be 1 or 2 dim");
  EXPECT_THROW_MSG(multinomial(ones({2, 2, 2}), 1), Error, "prob_dist must be 1 or 2 dim");
  EXPECT_THROW_MSG(multinomial(tensor({1, 2, 3}), 1), Error,
                   "multinomial only supports floating-point dtypes for input, got: Long");
  EXPECT_THROW_MSG(multinomial(w, 0), Error, "cannot sample n_sample <= 0 samples");
  EXPECT_THROW_MSG(multinomial(w, -2, true), Error, "cannot sample n_sample <= 0 samples");
  EXPECT_THROW_MSG(multinomial(w, 4, false), Error,
                   "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  EXPECT_THROW_MSG(w.multinomial(4), Error, "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  for (bool replacement : {true, false}) {
    const char* bad = "probability tensor contains either `inf`, `nan` or element < 0";
    EXPECT_THROW_MSG(multinomial(tensor({1., -1., 2.}), 1, replacement), Error, bad);
    EXPECT_THROW_MSG(multinomial(tensor({1., INFINITY, 2.}), 1, replacement), Error, bad);
    EXPECT_THROW_MSG(multinomial(tensor({1., NAN, 2.}), 1, replacement), Error, bad);
    EXPECT_THROW_MSG(multinomial(tensor({{1., 1.}, {NAN, 1.}}, {.dtype = kFloat32}), 1, replacement), Error, bad);
    const char* zero = "invalid multinomial distribution (sum of probabilities <= 0)";
    EXPECT_THROW_MSG(multinomial(zeros({3}), 1, replacement), Error, zero);
    EXPECT_THROW_MSG(multinomial(tensor({{1., 2.}, {0., 0.}}), 1, replacement), Error, zero);
  }
  // Fewer positive weights than samples without replacement: torch (1.13 and 2.x) does not
  // object; the positive categories come first, then zero-weight ones.
  std::vector<int64_t> few = multinomial(tensor({0., 1., 0., 2.}), 3, false).tolist<int64_t>();
  std::sort(few.begin(), few.begin() + 2);
  EXPECT_EQ(few[0], 1);
  EXPECT_EQ(few[1], 3);
  EXPECT_TRUE(few[2] == 0 || few[2] == 2);
  EXPECT_NO_THROW(multinomial(tensor({0., 1., 0., 2.}), 3, true));
  EXPECT_NO_THROW(multinomial(tensor({0., 1., 0., 2.}), 2, false));
}
