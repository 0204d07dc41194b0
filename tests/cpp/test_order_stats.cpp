// median, nanmedian and kthvalue against a float64 reference that sorts each slice (NaN the
// largest, ties by position): values and indices on contiguous, transposed, strided, 0-dim and
// empty inputs, every numeric dtype, NaN handling, ties, PyTorch's errors, gradients.
#include <algorithm>
#include <limits>

#include "gradcheck.h"

using namespace ember;
using namespace ember::testing;
using autograd::variable_list;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool lt_nan(double a, double b) { return std::isnan(b) ? !std::isnan(a) : a < b; }

enum class Pick { Kth, Median, NanMedian };

// Reference along `dim` of x (any layout): (values, indices), shaped as keepdim=false.
std::pair<Ref, std::vector<int64_t>> reference(const Tensor& x, int64_t dim, Pick pick, int64_t k = 1) {
  Ref in = ref_of(x);
  Shape shape = in.shape.empty() ? Shape{1} : in.shape;
  int64_t d = dim < 0 ? dim + int64_t(shape.size()) : dim;
  int64_t n = shape[size_t(d)], outer = 1, inner = 1;
  for (int64_t i = 0; i < d; ++i) outer *= shape[size_t(i)];
  for (size_t i = size_t(d) + 1; i < shape.size(); ++i) inner *= shape[i];
  Ref out;
  for (size_t i = 0; i < in.shape.size(); ++i)
    if (int64_t(i) != d) out.shape.push_back(in.shape[i]);
  std::vector<int64_t> idx;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      std::vector<std::pair<double, int64_t>> row;
      for (int64_t j = 0; j < n; ++j) row.push_back({in.v[size_t((o * n + j) * inner + i)], j});
      std::stable_sort(row.begin(), row.end(), [](auto& a, auto& b) { return lt_nan(a.first, b.first); });
      int64_t nans = 0;
      for (auto& [v, j] : row) nans += std::isnan(v);
      int64_t rank = k - 1;
      if (pick == Pick::Median) rank = nans ? n - nans : (n - 1) / 2;  // the first NaN in position order
      if (pick == Pick::NanMedian) rank = nans == n ? 0 : (n - nans - 1) / 2;
      out.v.push_back(row[size_t(rank)].first);
      idx.push_back(row[size_t(rank)].second);
    }
  return {out, idx};
}

// x's values (3x5 unless given) with the requested layout.
Tensor laid(const std::vector<double>& v, Shape shape, Layout layout, DType dt = kFloat64) {
  Tensor base = tensor(v, {.dtype = kFloat64}).reshape(shape).to(dt);
  if (layout == Layout::Transposed) {
    Shape rev(shape.rbegin(), shape.rend());
    std::vector<int64_t> perm;
    for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) perm.push_back(d);
    return base.permute(perm).contiguous().permute(perm);
  }
  if (layout == Layout::Strided) {
    Shape wide = shape;
    wide.back() *= 2;
    Tensor z = zeros(wide, {.dtype = dt});
    Tensor view = z.slice(-1, 0, std::nullopt, 2);
    view.copy_(base);
    return view;
  }
  return base;
}

// Values with many ties (integers in [-3, 3]).
std::vector<double> tied(int64_t n, uint64_t seed = 3) {
  std::vector<double> v(static_cast<size_t>(n));
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 17;
  for (auto& e : v) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    e = double(int64_t((x >> 33) % 7) - 3);
  }
  return v;
}

void expect_matches(const std::tuple<Tensor, Tensor>& got, const std::pair<Ref, std::vector<int64_t>>& want,
                    bool keepdim, int64_t dim, int64_t in_dim) {
  auto [values, indices] = got;
  Ref expect = want.first;
  if (keepdim && in_dim > 0) {
    int64_t d = dim < 0 ? dim + in_dim : dim;
    expect.shape.insert(expect.shape.begin() + d, 1);
  }
  EXPECT_TRUE(close_to(values, expect, kFloat64));
  EXPECT_EQ(indices.dtype(), kInt64);
  EXPECT_EQ(indices.tolist<int64_t>(), want.second);
  EXPECT_EQ(IntArrayRef(indices.sizes()), IntArrayRef(values.sizes()));
}

const std::vector<Layout> kLaidOut = {Layout::Contiguous, Layout::Transposed, Layout::Strided};

}  // namespace

EMBER_DEVICE_TEST(OrderStats, KthvalueMatchesReferenceEveryLayoutDimAndK) {
  auto v = tied(3 * 5);
  for (Layout layout : kLaidOut)
    for (int64_t dim : {0, 1, -1, -2})
      for (bool keepdim : {false, true}) {
        Tensor x = laid(v, {3, 5}, layout);
        int64_t n = x.size(dim);
        for (int64_t k = 1; k <= n; ++k) {
          SCOPED_TRACE(std::string(layout_name(layout)) + " dim " + std::to_string(dim) + " k " + std::to_string(k));
          expect_matches(kthvalue(x, k, dim, keepdim), reference(x, dim, Pick::Kth, k), keepdim, dim, 2);
        }
      }
}

EMBER_DEVICE_TEST(OrderStats, MedianIsTheLowerMiddleValueWithTheTiedIndexInPositionOrder) {
  for (int64_t n : {1, 2, 3, 4, 7, 8, 33}) {
    auto v = tied(2 * n, uint64_t(n));
    for (Layout layout : kLaidOut)
      for (int64_t dim : {0, 1})
        for (bool keepdim : {false, true}) {
          SCOPED_TRACE(std::string(layout_name(layout)) + " n " + std::to_string(n) + " dim " + std::to_string(dim));
          Tensor x = laid(v, {2, n}, layout);
          expect_matches(median(x, dim, keepdim), reference(x, dim, Pick::Median), keepdim, dim, 2);
          expect_matches(nanmedian(x, dim, keepdim), reference(x, dim, Pick::NanMedian), keepdim, dim, 2);
        }
  }
  // Explicit: [3, 1, 2, 1] in (value, position) order is 1@1, 1@3, 2@2, 3@0; the lower median
  // is rank 1: the 1 at index 3, as PyTorch's CPU median. [5, 5] -> index 0.
  auto [v1, i1] = median(tensor({3.0, 1.0, 2.0, 1.0}), 0);
  EXPECT_EQ(v1.item<double>(), 1.0);
  EXPECT_EQ(i1.item<int64_t>(), 3);
  EXPECT_EQ(std::get<1>(median(tensor({5.0, 5.0}), 0)).item<int64_t>(), 0);
  EXPECT_EQ(median(tensor({4.0, 1.0, 3.0, 2.0})).item<double>(), 2.0);
}

EMBER_DEVICE_TEST(OrderStats, MedianPropagatesNaNAndNanmedianSkipsIt) {
  Tensor x = tensor({{1.0, kNaN, 3.0, kNaN, 0.0}, {2.0, 4.0, 1.0, 3.0, 5.0}, {kNaN, kNaN, kNaN, kNaN, kNaN}});
  for (Layout layout : kLaidOut) {
    Tensor xl = laid(x.reshape({-1}).tolist<double>(), {3, 5}, layout);
    expect_matches(median(xl, 1), reference(xl, 1, Pick::Median), false, 1, 2);
    expect_matches(nanmedian(xl, 1), reference(xl, 1, Pick::NanMedian), false, 1, 2);
    expect_matches(kthvalue(xl, 5, 1), reference(xl, 1, Pick::Kth, 5), false, 1, 2);
  }
  auto [mv, mi] = median(x, 1);
  EXPECT_TRUE(std::isnan(mv.tolist<double>()[0]));
  EXPECT_EQ(mi.tolist<int64_t>(), (std::vector<int64_t>{1, 3, 0}));  // the first NaN of rows 0 and 2
  auto [nv, ni] = nanmedian(x, 1);
  EXPECT_EQ(nv.tolist<double>()[0], 1.0);  // median of {1, 3, 0}
  EXPECT_EQ(ni.tolist<int64_t>()[0], 0);
  EXPECT_TRUE(std::isnan(nv.tolist<double>()[2]));
  EXPECT_TRUE(std::isnan(median(x).item<double>()));
  EXPECT_EQ(nanmedian(x).item<double>(), 2.0);  // {1, 3, 0, 2, 4, 1, 3, 5}: lower middle
  EXPECT_TRUE(std::isnan(nanmedian(tensor({kNaN, kNaN})).item<double>()));
}

EMBER_DEVICE_TEST(OrderStats, EveryNumericDtypeKeepsItsDtype) {
  auto v = tied(12);
  for (DType dt : {kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64}) {
    SCOPED_TRACE(dtype_name(dt));
    std::vector<double> w = v;
    if (dt == kUInt8) for (auto& e : w) e += 3;
    Tensor x = laid(w, {3, 4}, Layout::Transposed, dt);
    auto got = median(x, 1);
    EXPECT_EQ(std::get<0>(got).dtype(), dt);
    expect_matches(got, reference(x, 1, Pick::Median), false, 1, 2);
    expect_matches(kthvalue(x, 2, 0, true), reference(x, 0, Pick::Kth, 2), true, 0, 2);
    Tensor m = median(x);
    EXPECT_EQ(m.dtype(), dt);
    EXPECT_EQ(m.dim(), 0);
    auto sorted = x.reshape({-1}).tolist<double>();
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(m.item<double>(), sorted[(sorted.size() - 1) / 2]);
  }
  EXPECT_THROW_MSG(median(tensor({true, false})), Error, kernel_name(device(), "median_out", "median_out_impl") + " not implemented for 'Bool'");
  EXPECT_THROW_MSG(kthvalue(tensor({true, false}), 1), Error, kernel_name(device(), "kthvalue_cpu", "kthvalue_cuda") + " not implemented for 'Bool'");
}

EMBER_DEVICE_TEST(OrderStats, ZeroDimAndEmptyInputs) {
  Tensor s = tensor({7.5}).reshape({});
  for (int64_t dim : {0, -1})
    for (bool keepdim : {false, true}) {
      auto [v, i] = median(s, dim, keepdim);
      EXPECT_EQ(v.dim(), 0);  // keepdim has no dim to keep on a 0-dim input
      EXPECT_EQ(v.item<double>(), 7.5);
      EXPECT_EQ(i.item<int64_t>(), 0);
      auto [kv, ki] = kthvalue(s, 1, dim, keepdim);
      EXPECT_EQ(kv.dim(), 0);
      EXPECT_EQ(kv.item<double>(), 7.5);
    }
  EXPECT_EQ(median(s).item<double>(), 7.5);
  // An empty reduced dim has no median; other empty dims give empty results.
  Tensor e = zeros({0, 3});
  auto [ev, ei] = median(e, 1);
  EXPECT_EQ(ev.sizes(), (Shape{0}));
  EXPECT_EQ(std::get<0>(kthvalue(e, 2, 1, true)).sizes(), (Shape{0, 1}));
  EXPECT_THROW_MSG(median(e, 0), IndexError, "median(): Expected reduction dim 0 to have non-zero size.");
  EXPECT_THROW_MSG(nanmedian(e, -2), IndexError, "median(): Expected reduction dim 0 to have non-zero size.");
  EXPECT_THROW_MSG(kthvalue(e, 1, 0), Error, "kthvalue(): selected number k out of range for dimension 0");
  // median() of nothing is NaN (PyTorch 2.x).
  Tensor m = median(zeros({0}));
  EXPECT_EQ(m.dim(), 0);
  EXPECT_TRUE(std::isnan(m.item<double>()));
  EXPECT_TRUE(std::isnan(nanmedian(zeros({2, 0}, {.dtype = kFloat64})).item<double>()));
}

EMBER_DEVICE_TEST(OrderStats, ArgumentErrorsAsPyTorch) {
  Tensor x = zeros({2, 3});
  EXPECT_THROW_MSG(kthvalue(x, 4, 1), Error, "kthvalue(): selected number k out of range for dimension 1");
  EXPECT_THROW_MSG(kthvalue(x, 0), Error, "kthvalue(): selected number k out of range for dimension 1");
  EXPECT_THROW_MSG(kthvalue(x, 1, 2), IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  EXPECT_THROW_MSG(median(x, -3), IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got -3)");
  EXPECT_THROW_MSG(median(tensor({1.0}).reshape({}), 1), IndexError,
                   "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
}

EMBER_DEVICE_TEST(OrderStats, LongRowsAndManyRowsInParallel) {
  // Rows long enough for nth_element's partitioning, and enough rows to be split over threads.
  Generator g(5);
  Tensor x = host_randn({64, 1001}, g);
  expect_matches(median(x, 1), reference(x, 1, Pick::Median), false, 1, 2);
  expect_matches(kthvalue(x.t(), 17, 0), reference(x.t(), 0, Pick::Kth, 17), false, 0, 2);
  Tensor f = x.to(kFloat32);
  auto [fv, fi] = median(f, 1);
  EXPECT_TRUE(fv.equal(std::get<0>(median(x, 1)).to(kFloat32)));
  EXPECT_TRUE(fi.equal(std::get<1>(median(x, 1))));
}

EMBER_DEVICE_TEST(OrderStats, TensorMethodsForward) {
  Tensor x = tensor({{3.0, 1.0, 2.0}, {6.0, 5.0, 4.0}});
  EXPECT_TRUE(x.median().equal(median(x)));
  EXPECT_TRUE(std::get<1>(x.median(1, true)).equal(std::get<1>(median(x, 1, true))));
  EXPECT_TRUE(std::get<0>(x.nanmedian(0)).equal(std::get<0>(nanmedian(x, 0))));
  EXPECT_TRUE(x.nanmedian().equal(nanmedian(x)));
  EXPECT_TRUE(std::get<0>(x.kthvalue(3)).equal(tensor({3.0, 6.0})));
  EXPECT_TRUE(std::get<1>(x.kthvalue(2, 0, true)).equal(tensor({{1, 1, 1}}, {.dtype = kInt64})));
}

// ---------------------------------------------------------------- gradients
EMBER_DEVICE_TEST(OrderStats, GradientsGoToTheSelectedIndex) {
  for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Strided})
    for (int64_t dim : {0, 1, -1})
      for (bool keepdim : {false, true}) {
        SCOPED_TRACE(std::string(layout_name(layout)) + " dim " + std::to_string(dim));
        Tensor x = grad_input(layout);
        EXPECT_TRUE(gradcheck([=](const variable_list& v) { return std::get<0>(median(v[0], dim, keepdim)); }, {x}));
        EXPECT_TRUE(gradcheck([=](const variable_list& v) { return std::get<0>(nanmedian(v[0], dim, keepdim)); }, {x}));
        EXPECT_TRUE(gradcheck([=](const variable_list& v) { return std::get<0>(kthvalue(v[0], 2, dim, keepdim)); }, {x}));
      }
  Tensor z = grad_input(Layout::ZeroDim);
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return std::get<0>(median(v[0], 0)); }, {z}));
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return median(v[0]); }, {grad_input(Layout::Transposed)}));
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return nanmedian(v[0]); }, {grad_input(Layout::Strided)}));
  Tensor x = grad_input(Layout::Contiguous);
  EXPECT_TRUE(gradgradcheck([](const variable_list& v) {
    Tensor m = std::get<0>(kthvalue(v[0], 3, 1));
    return m * m;
  }, {x}));
  EXPECT_TRUE(gradgradcheck([](const variable_list& v) { return median(v[0]) * median(v[0]); }, {x}));
}

EMBER_DEVICE_TEST(OrderStats, GradientTiesAndNaNAsPyTorch) {
  // The dim form: all of it to the returned index.
  Tensor a = tensor({{2.0, 1.0, 2.0, 2.0}}, {.dtype = kFloat64}).requires_grad_();
  auto [v, i] = median(a, 1);
  EXPECT_FALSE(i.requires_grad());
  v.sum().backward();
  EXPECT_EQ(i.item<int64_t>(), 0);
  EXPECT_EQ(a.grad().tolist<double>(), (std::vector<double>{1, 0, 0, 0}));
  // The all-elements form: shared evenly among the equal values ...
  Tensor b = tensor({2.0, 1.0, 2.0, 3.0, 2.0}, {.dtype = kFloat64}).requires_grad_();
  median(b).backward();
  EXPECT_EQ(b.grad().tolist<double>(), (std::vector<double>{1.0 / 3, 0, 1.0 / 3, 0, 1.0 / 3}));
  // ... and among the NaNs when the median is NaN.
  Tensor c = tensor({kNaN, 1.0, kNaN}, {.dtype = kFloat64}).requires_grad_();
  median(c).backward();
  EXPECT_EQ(c.grad().tolist<double>(), (std::vector<double>{0.5, 0, 0.5}));
  Tensor d = tensor({kNaN, 1.0, 4.0}, {.dtype = kFloat64}).requires_grad_();
  nanmedian(d).backward();
  EXPECT_EQ(d.grad().tolist<double>(), (std::vector<double>{0, 1, 0}));
  // max() shares the same formula: NaN positions get the gradient.
  Tensor e = tensor({kNaN, 1.0}, {.dtype = kFloat64}).requires_grad_();
  e.max().backward();
  EXPECT_EQ(e.grad().tolist<double>(), (std::vector<double>{1, 0}));
}

EMBER_DEVICE_TEST(OrderStats, NodeNames) {
  Tensor x = grad_input(Layout::Contiguous);
  EXPECT_EQ(median(x).grad_fn()->name(), "MedianBackward0");
  EXPECT_EQ(std::get<0>(median(x, 1)).grad_fn()->name(), "MedianBackward1");
  EXPECT_EQ(nanmedian(x).grad_fn()->name(), "NanmedianBackward0");
  EXPECT_EQ(std::get<0>(nanmedian(x, 0)).grad_fn()->name(), "NanmedianBackward1");
  EXPECT_EQ(std::get<0>(kthvalue(x, 1)).grad_fn()->name(), "KthvalueBackward0");
}
