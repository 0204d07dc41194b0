// sort, argsort, topk and unique against std::stable_sort references.
#include <algorithm>
#include <map>
#include <random>

#include "test_utils.h"

using namespace ember;
using namespace ember::testing;

namespace {

std::vector<double> vals(int64_t n, uint64_t seed = 1, int range = 5) {
  std::vector<double> v(n);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 777;
  for (auto& e : v) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    e = double(int64_t((x >> 33) % uint64_t(2 * range + 1)) - range);
  }
  return v;
}
std::vector<double> cast_vals(std::vector<double> v, DType dt) {
  for (auto& e : v) {
    if (dt == kBool) e = e > 0 ? 1 : 0;
    if (dt == kUInt8) e = std::abs(e);
  }
  return v;
}
Tensor make(const std::vector<double>& v, const Shape& shape, DType dt = kFloat64) {
  return tensor(v, {.dtype = kFloat64}).reshape(shape).to(dt);
}
Tensor longs(const std::vector<int64_t>& v) { return tensor(v, {.dtype = kInt64}); }

enum class L { Contig, Trans, Strided };
const char* lname(L l) { return l == L::Contig ? "contig" : l == L::Trans ? "transposed" : "strided"; }
Tensor laid(const std::vector<double>& v, const Shape& shape, DType dt, L l) {
  Tensor x = make(v, shape, dt);
  if (l == L::Contig || shape.size() < 2) return x;
  if (l == L::Trans) return x.transpose(-1, -2).contiguous().transpose(-1, -2);
  Shape big = shape;
  big.back() *= 2;
  Tensor z = zeros(big, {.dtype = dt});
  Tensor view = z.slice(-1, 0, std::nullopt, 2);
  view.copy_(x);
  return view;
}
::testing::AssertionResult same(const Tensor& actual, const Shape& shape, const std::vector<double>& expected) {
  return close_to(actual, Ref{shape, expected});
}
int64_t flat(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t f = 0;
  for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + idx[d];
  return f;
}
// a < b with NaN the largest.
bool lt_nan(double a, double b) { return std::isnan(b) ? !std::isnan(a) : a < b; }

// Stable sort reference along dim: (values, indices) in row-major order.
std::pair<std::vector<double>, std::vector<double>> ref_sort(const std::vector<double>& v, const Shape& shape,
                                                             int64_t d, bool desc, int64_t k = -1) {
  int64_t n = shape[d];
  if (k < 0) k = n;
  Shape os = shape;
  os[d] = k;
  std::vector<double> ov(shape_numel(os)), oi(shape_numel(os));
  Shape rs = shape;
  rs[d] = 1;
  for (int64_t r = 0; r < shape_numel(rs); ++r) {
    auto p = unravel(r, rs);
    std::vector<int64_t> perm(n);
    for (int64_t j = 0; j < n; ++j) perm[j] = j;
    auto at = [&](int64_t j) { auto q = p; q[d] = j; return v[flat(q, shape)]; };
    std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
      return desc ? lt_nan(at(b), at(a)) : lt_nan(at(a), at(b));
    });
    for (int64_t j = 0; j < k; ++j) {
      auto q = p;
      q[d] = j;
      ov[flat(q, os)] = at(perm[j]);
      oi[flat(q, os)] = double(perm[j]);
    }
  }
  return {ov, oi};
}

const std::vector<DType> kTypes = {kFloat32, kFloat64, kInt64, kInt32, kBool, kFloat16, kBFloat16, kUInt8, kInt8};

}  // namespace

EMBER_DEVICE_TEST(Sort, MatchesStableReference) {
  Shape shape{3, 5, 4};
  auto base = vals(60, 3, 3);  // many ties
  for (DType dt : kTypes)
    for (L l : {L::Contig, L::Trans, L::Strided})
      for (int64_t dim : {0, 1, 2, -1})
        for (bool desc : {false, true}) {
          auto v = cast_vals(base, dt);
          Tensor x = laid(v, shape, dt, l);
          int64_t d = dim < 0 ? dim + 3 : dim;
          auto [ev, ei] = ref_sort(v, shape, d, desc);
          auto [sv, si] = sort(x, dim, desc, /*stable=*/true);
          EXPECT_EQ(sv.dtype(), dt);
          EXPECT_EQ(si.dtype(), kInt64);
          EXPECT_TRUE(same(sv, shape, ev)) << dtype_name(dt) << " " << lname(l) << " dim " << dim << " desc " << desc;
          EXPECT_TRUE(same(si, shape, ei)) << dtype_name(dt) << " " << lname(l) << " dim " << dim << " desc " << desc;
          // Unstable: values equal; indices point at the values.
          auto [uv, ui] = x.sort(dim, desc);
          EXPECT_TRUE(same(uv, shape, ev));
          EXPECT_TRUE(same(gather(x, dim, ui), shape, ev));
          EXPECT_TRUE(same(argsort(x, dim, desc, true), shape, ei));
          EXPECT_TRUE(same(x.argsort(dim, desc, true), shape, ei));
        }
}

EMBER_DEVICE_TEST(Sort, NaNIsLargestAndEdgeCases) {
  std::vector<double> v = {3, NAN, -1, INFINITY, NAN, -INFINITY, 0};
  for (DType dt : {kFloat32, kFloat64, kFloat16}) {
    Tensor x = make(v, {7}, dt);
    auto [a, ai] = sort(x, 0, false, true);
    EXPECT_TRUE(same(a, {7}, {-INFINITY, -1, 0, 3, INFINITY, NAN, NAN}));
    EXPECT_TRUE(same(ai, {7}, {5, 2, 6, 0, 3, 1, 4}));
    auto [b, bi] = sort(x, 0, true, true);
    EXPECT_TRUE(same(b, {7}, {NAN, NAN, INFINITY, 3, 0, -1, -INFINITY}));
    EXPECT_TRUE(same(bi, {7}, {1, 4, 3, 0, 6, 2, 5}));
  }
  // 0-dim, empty, single element.
  auto [s, si] = sort(make({2.0}, {}));
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item<double>(), 2.0);
  EXPECT_EQ(si.item<int64_t>(), 0);
  auto [e, ei] = sort(zeros({0, 3}), 0);
  EXPECT_EQ(e.sizes(), Shape({0, 3}));
  EXPECT_EQ(ei.sizes(), Shape({0, 3}));
  // Many rows (parallel) and one long row.
  Shape big{500, 300};
  auto bv = vals(150000, 9, 1000);
  Tensor bx = make(bv, big, kFloat32);
  for (int64_t dim : {0, 1}) {
    auto [ev, ei2] = ref_sort(bv, big, dim, dim == 1);
    auto [sv, sidx] = sort(bx, dim, dim == 1, true);
    EXPECT_TRUE(same(sv, big, ev));
    EXPECT_TRUE(same(sidx, big, ei2));
  }
  EXPECT_THROW_MSG(sort(zeros({2, 3}), 2), IndexError, "Dimension out of range");
}

EMBER_DEVICE_TEST(Topk, LargestSmallestSorted) {
  Shape shape{4, 7};
  auto base = vals(28, 5, 4);
  base[3] = NAN;
  for (DType dt : {kFloat32, kFloat64, kInt64, kInt32, kFloat16})
    for (L l : {L::Contig, L::Trans, L::Strided})
      for (int64_t dim : {0, 1, -1})
        for (bool largest : {true, false}) {
          auto v = base;
          if (!is_floating(dt)) v[3] = 2;
          Tensor x = laid(v, shape, dt, l);
          int64_t d = dim < 0 ? dim + 2 : dim;
          for (int64_t k : {int64_t(0), int64_t(1), int64_t(3), shape[d]}) {
            auto [ev, ei] = ref_sort(v, shape, d, largest, k);
            Shape os = shape;
            os[d] = k;
            auto [tv, ti] = topk(x, k, dim, largest, true);
            EXPECT_TRUE(same(tv, os, ev)) << dtype_name(dt) << " " << lname(l) << " dim " << dim << " k " << k
                                          << " largest " << largest;
            EXPECT_TRUE(same(gather(x, dim, ti), os, ev));
            // Unsorted: the same multiset per row; check by sorting the result.
            auto [uv, ui] = x.topk(k, dim, largest, false);
            EXPECT_TRUE(same(std::get<0>(sort(uv, dim, largest)), os, ev));
            EXPECT_TRUE(same(gather(x, dim, ui), os, uv.tolist<double>()));
          }
        }
  // Long rows with many ties and NaNs, k on both sides of the small-k path's limit (64):
  // values and indices (ties keep position order) match the stable-sort reference.
  {
    Shape ls{3, 200};
    auto lv = vals(600, 9, 4);
    for (int64_t i : {7, 250, 251, 420, 599}) lv[size_t(i)] = NAN;
    Tensor x = make(lv, ls);
    for (int64_t k : {5, 64, 65, 150})
      for (bool largest : {true, false}) {
        auto [ev, ei] = ref_sort(lv, ls, 1, largest, k);
        auto [tv, ti] = topk(x, k, 1, largest, true);
        EXPECT_TRUE(same(tv, {3, k}, ev)) << "k " << k << " largest " << largest;
        EXPECT_TRUE(same(ti, {3, k}, ei)) << "k " << k << " largest " << largest;
      }
  }
  // NaN counts as the largest.
  auto [nv, ni] = topk(make({1, NAN, 3}, {3}), 2);
  EXPECT_TRUE(same(nv, {2}, {NAN, 3}));
  EXPECT_TRUE(same(ni, {2}, {1, 2}));
  auto [zv, zi] = topk(make({5.0}, {}), 1);
  EXPECT_EQ(zv.item<double>(), 5.0);
  EXPECT_THROW_MSG(topk(zeros({2, 3}), 4), Error, "selected index k out of range");
  EXPECT_THROW_MSG(topk(zeros({2, 3}), -1), Error, "selected index k out of range");
}

EMBER_DEVICE_TEST(Unique, FlatSortedInverseCounts) {
  for (DType dt : kTypes)
    for (L l : {L::Contig, L::Trans, L::Strided}) {
      Shape shape{3, 5};
      auto v = cast_vals(vals(15, 17, 3), dt);
      Tensor x = laid(v, shape, dt, l);
      std::map<double, int64_t> cnt;
      for (double e : v) cnt[e]++;
      std::vector<double> ev, ec;
      for (auto& [k, c] : cnt) { ev.push_back(k); ec.push_back(double(c)); }
      std::vector<double> einv;
      for (double e : v) einv.push_back(double(std::distance(cnt.begin(), cnt.find(e))));
      auto [u, inv, c] = unique(x, true, true, true);
      EXPECT_EQ(u.dtype(), dt);
      EXPECT_TRUE(same(u, {int64_t(ev.size())}, ev)) << dtype_name(dt) << " " << lname(l);
      EXPECT_TRUE(same(inv, shape, einv));
      EXPECT_TRUE(same(c, {int64_t(ec.size())}, ec));
      auto [u2, inv2, c2] = unique(x);
      EXPECT_TRUE(same(u2, {int64_t(ev.size())}, ev));
      EXPECT_FALSE(inv2.defined());
      EXPECT_FALSE(c2.defined());
    }
  // NaNs stay apart; 0-dim; empty.
  auto [n, ninv, nc] = unique(make({NAN, 1, NAN}, {3}), true, true, true);
  EXPECT_TRUE(same(n, {3}, {1, NAN, NAN}));
  EXPECT_TRUE(same(nc, {3}, {1, 1, 1}));
  auto [z, zinv, zc] = unique(make({4.0}, {}), true, true, true);
  EXPECT_TRUE(same(z, {1}, {4}));
  EXPECT_EQ(zinv.dim(), 0);
  auto [e, einv, ec] = unique(zeros({0}), true, true, true);
  EXPECT_EQ(e.sizes(), Shape({0}));
  EXPECT_EQ(einv.sizes(), Shape({0}));
}

// The paths of unique over all elements: integers within twice their count of each other are
// counted (no sort), wider integer ranges and floats go through the radix sort from 32 elements
// (NaNs apart, -0.0 one with 0.0), shorter inputs through std::sort. Each against a std::map.
EMBER_DEVICE_TEST(Unique, CountingRadixAndComparisonPaths) {
  std::mt19937_64 g(11);
  auto check = [&](const std::vector<double>& v, DType dt, const char* what) {
    Tensor x = tensor(v, {.dtype = kFloat64}).to(dt).to(device());
    std::map<double, int64_t> cnt;
    for (double e : v) cnt[e]++;
    std::vector<double> ev, ec, einv;
    for (auto& [k, c] : cnt) ev.push_back(k), ec.push_back(double(c));
    for (double e : v) einv.push_back(double(std::distance(cnt.begin(), cnt.find(e))));
    auto [u, inv, c] = unique(x, true, true, true);
    EXPECT_TRUE(same(u, {int64_t(ev.size())}, ev)) << what << " " << dtype_name(dt);
    EXPECT_TRUE(same(inv, {int64_t(v.size())}, einv)) << what << " " << dtype_name(dt);
    EXPECT_TRUE(same(c, {int64_t(ec.size())}, ec)) << what << " " << dtype_name(dt);
  };
  for (int64_t n : {20, 3000}) {
    std::vector<double> labels(n), wide(n), floats(n);
    for (int64_t i = 0; i < n; ++i) {
      labels[i] = double(int64_t(g() % 37) - 5);                  // a narrow range: counted
      wide[i] = double(int64_t(g() % 7) * 1000003 - 2000000);      // a wide one: sorted
      floats[i] = double(int64_t(g() % 50)) / 4.0 - 3.0;          // repeats, -0.0 below
    }
    floats[1] = -0.0;
    for (DType dt : {kInt64, kInt32, kInt16}) check(labels, dt, "labels");
    std::vector<double> bytes(labels);
    for (double& b : bytes) b += 5;  // (non-negative for uint8)
    check(bytes, kUInt8, "labels (uint8)");
    for (DType dt : {kInt64, kInt32}) check(wide, dt, "wide");
    for (DType dt : {kFloat32, kFloat64}) check(floats, dt, "floats");
  }
  std::vector<double> flags(100);
  for (size_t i = 0; i < flags.size(); ++i) flags[i] = double(g() % 2);
  check(flags, kBool, "bool");
  // int64's whole range: the distance overflows a signed subtraction
  Tensor extremes = tensor(std::vector<int64_t>{INT64_MAX, INT64_MIN, 0, INT64_MAX}).to(device());
  auto [xu, xinv, xc] = unique(extremes, true, true, true);
  EXPECT_EQ(xu.tolist<int64_t>(), (std::vector<int64_t>{INT64_MIN, 0, INT64_MAX}));
  EXPECT_EQ(xinv.tolist<int64_t>(), (std::vector<int64_t>{2, 0, 1, 2}));
  EXPECT_EQ(xc.tolist<int64_t>(), (std::vector<int64_t>{1, 1, 2}));
  // NaNs stay apart past the radix cut too
  std::vector<double> with_nan(40, 1.0);
  with_nan[3] = with_nan[30] = NAN;
  auto [nu, ninv, nc] = unique(tensor(with_nan).to(device()), true, true, true);
  EXPECT_TRUE(same(nu, {3}, {1, NAN, NAN}));
  EXPECT_TRUE(same(nc, {3}, {38, 1, 1}));
}

EMBER_DEVICE_TEST(Unique, AlongDim) {
  // Rows: [1 2] [0 5] [1 2] [0 3]  -> unique rows [0 3] [0 5] [1 2]
  Tensor x = make({1, 2, 0, 5, 1, 2, 0, 3}, {4, 2});
  for (L l : {L::Contig, L::Trans, L::Strided}) {
    Tensor xl = laid(x.tolist<double>(), {4, 2}, kInt64, l);
    auto [u, inv, c] = unique(xl, true, true, true, 0);
    EXPECT_TRUE(same(u, {3, 2}, {0, 3, 0, 5, 1, 2})) << lname(l);
    EXPECT_TRUE(same(inv, {4}, {2, 1, 2, 0}));
    EXPECT_TRUE(same(c, {3}, {1, 1, 2}));
    // Along dim 1 of the transpose: the same columns.
    auto [ut, invt, ct] = unique(xl.t(), true, true, true, -1);
    EXPECT_TRUE(same(ut, {2, 3}, {0, 0, 1, 3, 5, 2}));
    EXPECT_TRUE(same(invt, {4}, {2, 1, 2, 0}));
    EXPECT_TRUE(same(ct, {3}, {1, 1, 2}));
  }
  // 3-D along the middle dim.
  auto v = vals(2 * 4 * 3, 23, 1);
  Tensor y = make(v, {2, 4, 3});
  auto [u, inv, c] = unique(y, true, true, true, 1);
  int64_t nu = u.size(1);
  EXPECT_EQ(c.sum().item<int64_t>(), 4);
  for (int64_t s = 0; s < 4; ++s) {  // each slice equals the unique slice its inverse names
    int64_t g = inv.tolist<int64_t>()[s];
    ASSERT_LT(g, nu);
    EXPECT_TRUE(y.select(1, s).equal(u.select(1, g)));
  }
  auto [e, einv, ec] = unique(zeros({0, 3}), true, true, true, 0);
  EXPECT_EQ(e.sizes(), Shape({0, 3}));
  EXPECT_THROW_MSG(unique(zeros({3, 0}), true, false, false, 0), Error,
                   "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied");
  EXPECT_THROW_MSG(unique(zeros({2, 3}), true, false, false, 2), IndexError, "Dimension out of range");
}
