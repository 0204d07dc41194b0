// softmax / log_softmax against float64 references: layouts, dims (last and inner), dtypes,
// the dtype argument, stability for large inputs, -inf/NaN rows, errors.
#include <limits>

#include "test_utils.h"

using namespace ember;
using namespace ember::testing;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// softmax along dim of a row-major reference.
Ref ref_softmax(const Ref& a, int64_t dim, bool log) {
  Ref out = a;
  int64_t nd = int64_t(a.shape.size());
  if (dim < 0) dim += std::max<int64_t>(nd, 1);
  int64_t outer = 1, n = nd == 0 ? 1 : a.shape[dim], inner = 1;
  for (int64_t d = 0; d < dim && d < nd; ++d) outer *= a.shape[d];
  for (int64_t d = dim + 1; d < nd; ++d) inner *= a.shape[d];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t i) { return (o * n + i) * inner + j; };
      double m = -kInf;
      for (int64_t i = 0; i < n; ++i) m = std::max(m, a.v[at(i)]);
      double s = 0;
      for (int64_t i = 0; i < n; ++i) s += std::exp(a.v[at(i)] - m);
      for (int64_t i = 0; i < n; ++i) {
        double x = a.v[at(i)] - m;
        out.v[at(i)] = log ? x - std::log(s) : std::exp(x) / s;
      }
    }
  return out;
}

void check_both(const Tensor& x, int64_t dim, DType tol) {
  Ref rx = ref_of(x);
  Tensor s = softmax(x, dim), l = log_softmax(x, dim);
  EXPECT_EQ(s.dtype(), x.dtype());
  EXPECT_EQ(l.dtype(), x.dtype());
  EXPECT_EQ(s.sizes(), x.sizes());
  EXPECT_TRUE(close_to(s, ref_softmax(rx, dim, false), tol));
  EXPECT_TRUE(close_to(l, ref_softmax(rx, dim, true), tol));
}
}  // namespace

EMBER_DEVICE_TEST(Softmax, DtypesLayoutsDims) {
  for (DType dt : float_dtypes())
    for (Layout l : all_layouts()) {
      Tensor x = make_input(dt, l, -5, 5);
      int64_t n = std::max<int64_t>(x.dim(), 1);
      for (int64_t d = -n; d < n; ++d) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " " + layout_name(l) + " dim=" + std::to_string(d));
        check_both(x, d, dt);
      }
    }
}

EMBER_DEVICE_TEST(Softmax, BiggerShapesEveryPath) {
  Generator g(11);
  for (DType dt : {kFloat32, kFloat64}) {
    auto r = [&](IntArrayRef s) { return host_randn(s, g).mul(3.0).to(dt); };
    std::vector<Tensor> xs = {
        r({7, 1000}),                     // long rows with a tail after the vector lanes
        r({3, 33}),                       // short rows
        r({4, 5, 300}),                   // inner dim > one 256-column block
        r({2, 50, 3}).permute({2, 1, 0}),  // non-contiguous
        r({1, 1}),
    };
    for (const Tensor& x : xs)
      for (int64_t d = 0; d < x.dim(); ++d) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " dim=" + std::to_string(d));
        check_both(x, d, dt);
      }
  }
}

EMBER_DEVICE_TEST(Softmax, SumsToOne) {
  Tensor x = randn({64, 513});
  for (int64_t d : {0, 1}) {
    Tensor s = softmax(x, d).sum({d});
    for (double v : s.tolist<double>()) EXPECT_NEAR(v, 1.0, 1e-5);
  }
}

EMBER_DEVICE_TEST(Softmax, StableForLargeInputs) {
  Tensor x = tensor({1000.0f, 1001.0f});
  auto s = softmax(x, 0).tolist<double>();
  EXPECT_NEAR(s[0], 0.2689414213699951, 1e-6);
  EXPECT_NEAR(s[1], 0.7310585786300049, 1e-6);
  auto ls = log_softmax(x, 0).tolist<double>();
  EXPECT_NEAR(ls[0], -1.3132616875182228, 1e-5);
  EXPECT_NEAR(ls[1], -0.3132616875182228, 1e-5);
  // Values around 1e4 (and -1e4), along the last and the first dim.
  Tensor big = randn({6, 40}).add(1e4);
  Tensor neg = randn({6, 40}).sub(1e4);
  for (const Tensor& t : {big, neg})
    for (int64_t d : {0, 1}) {
      Ref rt = ref_of(t);
      EXPECT_TRUE(close_to(softmax(t, d), ref_softmax(rt, d, false)));
      EXPECT_TRUE(close_to(log_softmax(t, d), ref_softmax(rt, d, true)));
      // logsumexp = x - log_softmax(x), at the first element of each slice
      Ref l = ref_softmax(rt, d, true);
      Tensor lse = logsumexp(t, {d});
      Tensor first = t.select(d, 0);
      Ref expect{first.sizes(), {}};
      auto fv = first.tolist<double>();
      for (size_t k = 0; k < fv.size(); ++k) {
        size_t flat = d == 0 ? k : k * 40;
        expect.v.push_back(fv[k] - l.v[flat]);
      }
      EXPECT_TRUE(close_to(lse, expect));
    }
}

EMBER_DEVICE_TEST(Softmax, InfAndNaNRows) {
  Tensor x = tensor({{-kInf, 0.0, -kInf}, {-kInf, -kInf, -kInf}, {1.0, kNaN, 2.0}, {kInf, 1.0, 2.0}});
  auto s = softmax(x, 1).tolist<double>();
  EXPECT_EQ(s[0], 0.0);
  EXPECT_EQ(s[1], 1.0);
  EXPECT_EQ(s[2], 0.0);
  for (int i = 3; i < 12; ++i) EXPECT_TRUE(std::isnan(s[i])) << i;  // all -inf, NaN and +inf rows: nan
  auto l = log_softmax(x, 1).tolist<double>();
  EXPECT_EQ(l[0], -kInf);
  EXPECT_EQ(l[1], 0.0);
  // The same along a non-last dim.
  auto st = softmax(x.t().contiguous(), 0).t().tolist<double>();
  EXPECT_EQ(st[0], 0.0);
  EXPECT_EQ(st[1], 1.0);
  EXPECT_TRUE(std::isnan(st[4]));
}

EMBER_DEVICE_TEST(Softmax, DtypeArgument) {
  Tensor i = tensor({{1, 2, 3}, {4, 5, 6}});
  Tensor s = softmax(i, 1, kFloat32);
  EXPECT_EQ(s.dtype(), kFloat32);
  EXPECT_TRUE(close_to(s, ref_softmax(ref_of(i), 1, false)));
  Tensor f = tensor({0.5f, 1.5f});
  EXPECT_EQ(softmax(f, 0, kFloat64).dtype(), kFloat64);
  EXPECT_TRUE(close_to(log_softmax(f, 0, kFloat64), ref_softmax(ref_of(f), 0, true)));
  EXPECT_EQ(log_softmax(f, 0, kBFloat16).dtype(), kBFloat16);
  EXPECT_EQ(f.softmax(-1).dtype(), kFloat32);
}

EMBER_DEVICE_TEST(Softmax, EmptyAndZeroDim) {
  Tensor e = zeros({0, 4});
  EXPECT_EQ(softmax(e, 1).sizes(), Shape({0, 4}));
  EXPECT_EQ(log_softmax(e, 0).sizes(), Shape({0, 4}));
  Tensor z = scalar_tensor(3.5);
  EXPECT_EQ(softmax(z, 0).dim(), 0);
  EXPECT_EQ(softmax(z, 0).item<double>(), 1.0);
  EXPECT_EQ(log_softmax(z, -1).item<double>(), 0.0);
}

EMBER_DEVICE_TEST(Softmax, Errors) {
  Tensor i = tensor({{1, 2}, {3, 4}});
  EXPECT_THROW_MSG(softmax(i, 1), Error, "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'");
  EXPECT_THROW_MSG(softmax(i, 0), Error, "\"softmax_kernel_impl\" not implemented for 'Long'");
  EXPECT_THROW_MSG(log_softmax(i.to(kInt32), -1), Error, "\"log_softmax_lastdim_kernel_impl\" not implemented for 'Int'");
  EXPECT_THROW_MSG(softmax(tensor({true}), 0), Error, "not implemented for 'Bool'");
  EXPECT_THROW_MSG(softmax(zeros({2, 3}), 2), IndexError,
                   "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  EXPECT_THROW_MSG(log_softmax(zeros({2, 3}), -3), IndexError, "but got -3");
}
