// Reductions and scans against float64 references computed naively here: every layout,
// dtype, dim set and keepdim; result dtypes; empty and 0-dim inputs; NaN; error messages.
#include <algorithm>
#include <limits>
#include <numeric>

#include "test_utils.h"

using namespace ember;
using namespace ember::testing;

namespace {

using Group = std::vector<double>;
using GroupFn = std::function<double(const Group&)>;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<int64_t> norm_dims(const std::vector<int64_t>& dims, int64_t nd) {
  std::vector<int64_t> out;
  if (nd == 0) return out;
  if (dims.empty()) {
    for (int64_t d = 0; d < nd; ++d) out.push_back(d);
    return out;
  }
  for (int64_t d : dims) out.push_back(d < 0 ? d + nd : d);
  return out;
}

// Groups the values of a by output position (row-major order inside each group) and applies f.
Ref ref_reduce(const Ref& a, const std::vector<int64_t>& dims, bool keepdim, const GroupFn& f) {
  int64_t nd = int64_t(a.shape.size());
  std::vector<bool> red(nd, false);
  for (int64_t d : norm_dims(dims, nd)) red[d] = true;
  Shape kshape, oshape;
  for (int64_t d = 0; d < nd; ++d) {
    kshape.push_back(red[d] ? 1 : a.shape[d]);
    if (!red[d]) oshape.push_back(a.shape[d]);
    else if (keepdim) oshape.push_back(1);
  }
  int64_t nout = shape_numel(kshape);
  std::vector<Group> groups(nout);
  for (int64_t flat = 0; flat < a.numel(); ++flat) {
    auto idx = unravel(flat, a.shape);
    int64_t o = 0;
    for (int64_t d = 0; d < nd; ++d) o = o * kshape[d] + (red[d] ? 0 : idx[d]);
    groups[o].push_back(a.v[flat]);
  }
  Ref r{oshape, {}};
  for (auto& g : groups) r.v.push_back(f(g));
  return r;
}

double g_sum(const Group& g) { return std::accumulate(g.begin(), g.end(), 0.0); }
double g_mean(const Group& g) { return g.empty() ? kNaN : g_sum(g) / double(g.size()); }
double g_prod(const Group& g) {
  double p = 1;
  for (double x : g) p *= x;
  return p;
}
double g_max(const Group& g) {
  double m = -kInf;
  for (double x : g) {
    if (std::isnan(x)) return x;
    m = std::max(m, x);
  }
  return m;
}
double g_min(const Group& g) {
  double m = kInf;
  for (double x : g) {
    if (std::isnan(x)) return x;
    m = std::min(m, x);
  }
  return m;
}
double g_argmax(const Group& g) {
  size_t best = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i])) return double(i);
    if (g[i] > g[best]) best = i;
  }
  return double(best);
}
double g_argmin(const Group& g) {
  size_t best = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i])) return double(i);
    if (g[i] < g[best]) best = i;
  }
  return double(best);
}
GroupFn g_var(int correction) {
  return [correction](const Group& g) {
    double m = g_mean(g), ss = 0;
    for (double x : g) ss += (x - m) * (x - m);
    return ss / std::max<double>(0, double(g.size()) - correction);
  };
}
GroupFn g_norm(double p) {
  return [p](const Group& g) {
    if (p == kInf) { double m = 0; for (double x : g) m = std::max(m, std::abs(x)); return m; }
    if (p == -kInf) { double m = kInf; for (double x : g) m = std::min(m, std::abs(x)); return m; }
    if (p == 0) { double c = 0; for (double x : g) c += x != 0; return c; }
    double s = 0;
    for (double x : g) s += std::pow(std::abs(x), p);
    return std::pow(s, 1.0 / p);
  };
}
double g_lse(const Group& g) {
  double m = g_max(g);
  if (g.empty()) return -kInf;
  if (std::isinf(m)) m = 0;
  double s = 0;
  for (double x : g) s += std::exp(x - m);
  return std::log(s) + m;
}
double g_any(const Group& g) { return std::any_of(g.begin(), g.end(), [](double x) { return x != 0; }); }
double g_all(const Group& g) { return std::all_of(g.begin(), g.end(), [](double x) { return x != 0; }); }
double g_count(const Group& g) { return double(std::count_if(g.begin(), g.end(), [](double x) { return x != 0; })); }

// Dim lists to try for an input: all dims, each single dim (also negative), several dims.
std::vector<std::vector<int64_t>> dim_sets(const Tensor& x) {
  if (x.dim() == 0) return {{}, {0}, {-1}};
  std::vector<std::vector<int64_t>> s{{}};
  for (int64_t d = 0; d < x.dim(); ++d) { s.push_back({d}); s.push_back({d - x.dim()}); }
  if (x.dim() >= 2) { s.push_back({0, 1}); s.push_back({-1, 0}); }
  if (x.dim() >= 3) s.push_back({0, 2});
  return s;
}

std::string desc(DType dt, Layout l, const std::vector<int64_t>& dims, bool keepdim) {
  std::string s = std::string(dtype_name(dt)) + " " + layout_name(l) + " dims=[";
  for (auto d : dims) s += std::to_string(d) + ",";
  return s + "] keepdim=" + (keepdim ? "1" : "0");
}

DType sum_result(DType t) { return is_integral(t, true) ? kInt64 : t; }

// A few bigger inputs hitting the kernels' other paths: vector mode (kept dim innermost),
// split reductions, 3-D permuted views, expanded (stride 0) inputs.
std::vector<Tensor> big_inputs(DType dt) {
  Generator g(7);
  auto r = [&](IntArrayRef s) { return host_rand(s, g).mul(4.0).sub(2.0).to(dt); };
  return {
      r({300, 70}),                          // sum over dim 0: vector mode with a tail block
      r({70, 300}).t(),                      // transposed: the kept dim is strided
      r({5, 6, 7}).permute({2, 0, 1}),       // 3-D permuted
      r({4, 33, 40}).slice(1, 1, std::nullopt, 2),
      r({1, 37}).expand({50, 37}),           // stride 0 along dim 0
      r({3, 80000}),                         // long rows: split across threads
      r({5000, 24}),                         // over dim 0: one narrow row of outputs, rows split across threads
  };
}

}  // namespace

// ------------------------------------------------------------------------------ sum / mean / prod
EMBER_DEVICE_TEST(Sum, AllDtypesLayoutsDims) {
  for (DType dt : all_dtypes())
    for (Layout l : all_layouts()) {
      Tensor x = make_input(dt, l);
      Ref rx = ref_of(x);
      for (auto& dims : dim_sets(x))
        for (bool keep : {false, true}) {
          SCOPED_TRACE(desc(dt, l, dims, keep));
          Tensor r = sum(x, dims, keep);
          EXPECT_EQ(r.dtype(), sum_result(dt));
          EXPECT_TRUE(close_to(r, ref_reduce(rx, dims, keep, g_sum), dt == kBool ? kInt64 : dt));
        }
      Tensor full = sum(x);
      EXPECT_EQ(full.dim(), 0);
      EXPECT_TRUE(close_to(full, ref_reduce(rx, {}, false, g_sum), dt));
    }
}

namespace {
// Long sums cancel, so a float result is judged against the sum of the magnitudes it adds: one
// unit of the accumulation's precision on that, on top of the dtype's usual tolerance (how the
// values are split into partial sums, which depends on the thread count, moves the last bits).
::testing::AssertionResult sum_close(const Tensor& got, const Ref& rx, const std::vector<int64_t>& dims, DType dt) {
  const Ref want = ref_reduce(rx, dims, false, g_sum);
  Ref magnitudes = rx;
  for (double& v : magnitudes.v) v = std::abs(v);
  const Ref mag = ref_reduce(magnitudes, dims, false, g_sum);
  const double eps = dt == kFloat64 ? 0x1p-52 : (is_floating(dt) ? 0x1p-23 : 0.0);
  const auto [rtol, atol] = tolerances(dt);
  if (!(IntArrayRef(got.sizes()) == IntArrayRef(want.shape))) return ::testing::AssertionFailure() << "shape";
  const auto g = got.tolist<double>();
  for (size_t i = 0; i < g.size(); ++i)
    if (!(std::abs(g[i] - want.v[i]) <= atol + rtol * std::abs(want.v[i]) + eps * mag.v[i]))
      return ::testing::AssertionFailure() << "element " << i << ": got " << g[i] << ", expected " << want.v[i]
                                           << " (sum of magnitudes " << mag.v[i] << ")";
  return ::testing::AssertionSuccess();
}
}  // namespace

EMBER_DEVICE_TEST(Sum, BigInputsAllPaths) {
  for (DType dt : {kFloat32, kFloat64, kInt32, kFloat16}) {
    for (const Tensor& x : big_inputs(dt)) {
      Ref rx = ref_of(x);
      for (auto& dims : dim_sets(x)) {
        SCOPED_TRACE(desc(dt, Layout::Contiguous, dims, false));
        EXPECT_TRUE(sum_close(sum(x, dims), rx, dims, dt));
      }
    }
  }
}

EMBER_DEVICE_TEST(Sum, LargeFloat32IsAccurate) {
  Generator g(3);
  Tensor x = host_rand({1 << 20}, g, kFloat32);
  double ref = 0;
  for (double v : x.tolist<double>()) ref += v;
  EXPECT_TRUE(close_to(sum(x), Ref{{}, {ref}}, kFloat32));
  EXPECT_TRUE(close_to(mean(x), Ref{{}, {ref / double(1 << 20)}}, kFloat32));
  Tensor m = x.view({1024, 1024});
  EXPECT_TRUE(close_to(sum(m, {0}), ref_reduce(ref_of(m), {0}, false, g_sum), kFloat32));
  EXPECT_TRUE(close_to(sum(m, {1}), ref_reduce(ref_of(m), {1}, false, g_sum), kFloat32));
}

EMBER_DEVICE_TEST(Sum, DtypeArgAndIntegerPromotion) {
  Tensor i8 = full({200}, 100, {.dtype = kInt8});
  Tensor s = sum(i8);
  EXPECT_EQ(s.dtype(), kInt64);
  EXPECT_EQ(s.item<int64_t>(), 20000);  // no int8 overflow
  Tensor b = tensor({true, false, true, true});
  EXPECT_EQ(sum(b).dtype(), kInt64);
  EXPECT_EQ(sum(b).item<int64_t>(), 3);
  Tensor i = tensor({1, 2, 3});
  Tensor f = sum(i, kFloat64);
  EXPECT_EQ(f.dtype(), kFloat64);
  EXPECT_EQ(f.item<double>(), 6.0);
  Tensor x = tensor({1.5, 2.5});
  EXPECT_EQ(sum(x, {0}, false, kInt32).dtype(), kInt32);  // input cast first: 1 + 2
  EXPECT_EQ(sum(x, {0}, false, kInt32).item<int64_t>(), 3);
  EXPECT_EQ(sum(x, kFloat16).dtype(), kFloat16);
  EXPECT_EQ(x.sum().item<double>(), 4.0);
  EXPECT_EQ(x.sum({0}, true).sizes(), Shape({1}));
}

EMBER_DEVICE_TEST(Sum, EmptyIsZero) {
  Tensor e = zeros({0, 4});
  EXPECT_EQ(sum(e).item<double>(), 0.0);
  Tensor s0 = sum(e, {0});
  EXPECT_EQ(s0.sizes(), Shape({4}));
  EXPECT_TRUE(close_to(s0, Ref{{4}, {0, 0, 0, 0}}));
  EXPECT_EQ(sum(e, {1}).sizes(), Shape({0}));
  EXPECT_EQ(sum(e, {1}, true).sizes(), Shape({0, 1}));
  EXPECT_EQ(sum(zeros({0}, {.dtype = kInt32})).dtype(), kInt64);
  EXPECT_EQ(prod(e).item<double>(), 1.0);
}

EMBER_DEVICE_TEST(Sum, DimErrors) {
  Tensor x = zeros({3, 4});
  EXPECT_THROW_MSG(sum(x, {2}), IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  EXPECT_THROW_MSG(sum(x, {-3}), IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got -3)");
  EXPECT_THROW_MSG(sum(x, {0, -2}), Error, "dim 0 appears multiple times in the list of dims");
  EXPECT_THROW_MSG(sum(scalar_tensor(1.0), {1}), IndexError, "expected to be in range of [-1, 0], but got 1");
  EXPECT_THROW_MSG(mean(x, {1, 1}), Error, "dim 1 appears multiple times in the list of dims");
  EXPECT_THROW_MSG(amax(x, {5}), IndexError, "Dimension out of range");
}

EMBER_DEVICE_TEST(Mean, FloatDtypesLayoutsDims) {
  for (DType dt : float_dtypes())
    for (Layout l : all_layouts()) {
      Tensor x = make_input(dt, l);
      Ref rx = ref_of(x);
      for (auto& dims : dim_sets(x))
        for (bool keep : {false, true}) {
          SCOPED_TRACE(desc(dt, l, dims, keep));
          Tensor r = mean(x, dims, keep);
          EXPECT_EQ(r.dtype(), dt);
          EXPECT_TRUE(close_to(r, ref_reduce(rx, dims, keep, g_mean), dt));
        }
    }
  for (const Tensor& x : big_inputs(kFloat32))
    for (auto& dims : dim_sets(x)) EXPECT_TRUE(close_to(mean(x, dims), ref_reduce(ref_of(x), dims, false, g_mean)));
}

EMBER_DEVICE_TEST(Mean, DtypeRules) {
  Tensor i = tensor({1, 2, 4});
  EXPECT_THROW_MSG(mean(i), Error,
                   "mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
                   "dtype. Got: Long");
  EXPECT_THROW_MSG(mean(i.to(kInt32), {0}), Error, "Got: Int");
  EXPECT_THROW_MSG(mean(tensor({1.0}), kInt64), Error, "Optional dtype must be either a floating point");
  Tensor m = mean(i, kFloat64);
  EXPECT_EQ(m.dtype(), kFloat64);
  EXPECT_DOUBLE_EQ(m.item<double>(), 7.0 / 3.0);
  EXPECT_EQ(mean(tensor({1.0f, 2.0f}), kFloat64).dtype(), kFloat64);
  EXPECT_TRUE(std::isnan(mean(zeros({0})).item<double>()));  // mean of nothing is nan
  EXPECT_EQ(mean(zeros({0, 3}), {0}).sizes(), Shape({3}));
}

EMBER_DEVICE_TEST(Prod, DtypesLayoutsDims) {
  for (DType dt : all_dtypes())
    for (Layout l : all_layouts()) {
      Tensor x = make_input(dt, l);
      Ref rx = ref_of(x);
      Tensor all_r = prod(x);
      EXPECT_EQ(all_r.dtype(), sum_result(dt));
      EXPECT_TRUE(close_to(all_r, ref_reduce(rx, {}, false, g_prod), dt == kBool ? kInt64 : dt));
      for (int64_t d = -std::max<int64_t>(x.dim(), 1); d < std::max<int64_t>(x.dim(), 1); ++d)
        for (bool keep : {false, true}) {
          SCOPED_TRACE(desc(dt, l, {d}, keep));
          EXPECT_TRUE(close_to(prod(x, d, keep), ref_reduce(rx, {d}, keep, g_prod), dt == kBool ? kInt64 : dt));
        }
    }
  EXPECT_EQ(prod(tensor({2.0, 3.0}), kFloat32).dtype(), kFloat32);
  EXPECT_EQ(prod(tensor({2, 3}), 0).item<int64_t>(), 6);
}

// ------------------------------------------------------------------------------ max / min
EMBER_DEVICE_TEST(MaxMin, FullReduction) {
  for (DType dt : all_dtypes())
    for (Layout l : {Layout::Contiguous, Layout::Transposed, Layout::Strided, Layout::ZeroDim}) {
      SCOPED_TRACE(desc(dt, l, {}, false));
      Tensor x = make_input(dt, l);
      Ref rx = ref_of(x);
      Tensor mx = max(x), mn = min(x);
      EXPECT_EQ(mx.dtype(), dt);
      EXPECT_EQ(mx.dim(), 0);
      EXPECT_TRUE(close_to(mx, ref_reduce(rx, {}, false, g_max), dt));
      EXPECT_TRUE(close_to(mn, ref_reduce(rx, {}, false, g_min), dt));
    }
  EXPECT_THROW_MSG(max(zeros({0, 3})), Error,
                   "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction "
                   "dim with the 'dim' argument.");
  EXPECT_THROW_MSG(min(zeros({0})), Error, "min(): Expected reduction dim to be specified");
}

EMBER_DEVICE_TEST(MaxMin, NaNPropagates) {
  Tensor x = tensor({1.0, kNaN, 3.0, -kInf});
  EXPECT_TRUE(std::isnan(max(x).item<double>()));
  EXPECT_TRUE(std::isnan(min(x).item<double>()));
  EXPECT_TRUE(std::isnan(amax(x.to(kFloat32)).item<double>()));
  EXPECT_TRUE(std::isnan(amin(x.to(kBFloat16)).item<double>()));
  auto [v, i] = max(x, 0);
  EXPECT_TRUE(std::isnan(v.item<double>()));
  EXPECT_EQ(i.item<int64_t>(), 1);
  EXPECT_EQ(argmin(x).item<int64_t>(), 1);
  // A long row (vectorised path): the NaN sits in the middle of a lane group.
  Tensor big = zeros({1000});
  big.select(0, 517).fill_(kNaN);
  EXPECT_TRUE(std::isnan(max(big).item<double>()));
  EXPECT_EQ(argmax(big).item<int64_t>(), 517);
  Tensor mat = zeros({50, 40});
  mat.select(0, 7).select(0, 3).fill_(kNaN);
  Tensor am = amax(mat, {0});
  EXPECT_TRUE(std::isnan(am.tolist<double>()[3]));
  EXPECT_EQ(am.tolist<double>()[4], 0.0);
  auto [mv, mi] = max(mat, 0);
  EXPECT_EQ(mi.tolist<int64_t>()[3], 7);
}

EMBER_DEVICE_TEST(MaxMin, DimValuesAndIndices) {
  for (DType dt : all_dtypes())
    for (Layout l : all_layouts()) {
      Tensor x = make_input(dt, l);
      Ref rx = ref_of(x);
      int64_t n = std::max<int64_t>(x.dim(), 1);
      for (int64_t d = -n; d < n; ++d)
        for (bool keep : {false, true}) {
          if (x.numel() == 0 && x.size(d) == 0) continue;
          SCOPED_TRACE(desc(dt, l, {d}, keep));
          auto [v, i] = max(x, d, keep);
          EXPECT_EQ(v.dtype(), dt);
          EXPECT_EQ(i.dtype(), kInt64);
          EXPECT_TRUE(close_to(v, ref_reduce(rx, {d}, keep, g_max), dt));
          EXPECT_TRUE(close_to(i, ref_reduce(rx, {d}, keep, g_argmax), kInt64));
          auto [v2, i2] = min(x, d, keep);
          EXPECT_TRUE(close_to(v2, ref_reduce(rx, {d}, keep, g_min), dt));
          EXPECT_TRUE(close_to(i2, ref_reduce(rx, {d}, keep, g_argmin), kInt64));
        }
    }
  // Ties resolve to the first index, along every path.
  Tensor t = tensor({{3, 1, 3}, {2, 2, 0}});
  auto [v, i] = max(t, 1);
  EXPECT_EQ(i.tolist<int64_t>(), std::vector<int64_t>({0, 0}));
  auto [v0, i0] = min(ones({40, 20}), 0);
  EXPECT_EQ(i0.tolist<int64_t>(), std::vector<int64_t>(20, 0));
  EXPECT_EQ(argmax(ones({1000})).item<int64_t>(), 0);
  // Empty: a zero-size reduced dim is an error, other dims are fine.
  EXPECT_THROW_MSG(max(zeros({0, 4}), 0), IndexError, "max(): Expected reduction dim 0 to have non-zero size.");
  EXPECT_THROW_MSG(min(zeros({0, 4}), -2), IndexError, "min(): Expected reduction dim 0 to have non-zero size.");
  EXPECT_EQ(std::get<0>(max(zeros({0, 4}), 1)).sizes(), Shape({0}));
  EXPECT_THROW_MSG(max(zeros({3, 4}), 2), IndexError, "Dimension out of range");
}

EMBER_DEVICE_TEST(MaxMin, BigInputs) {
  for (DType dt : {kFloat32, kInt64, kFloat64}) {
    for (const Tensor& x : big_inputs(dt)) {
      Ref rx = ref_of(x);
      for (auto& dims : dim_sets(x)) {
        EXPECT_TRUE(close_to(amax(x, dims), ref_reduce(rx, dims, false, g_max), dt));
        EXPECT_TRUE(close_to(amin(x, dims, true), ref_reduce(rx, dims, true, g_min), dt));
      }
      for (int64_t d = 0; d < x.dim(); ++d) {
        auto [v, i] = max(x, d);
        EXPECT_TRUE(close_to(i, ref_reduce(rx, {d}, false, g_argmax), kInt64));
        EXPECT_TRUE(close_to(argmin(x, d), ref_reduce(rx, {d}, false, g_argmin), kInt64));
      }
      EXPECT_TRUE(close_to(argmax(x), ref_reduce(rx, {}, false, g_argmax), kInt64));
    }
  }
}

EMBER_DEVICE_TEST(Amax, SeveralDimsLayouts) {
  for (DType dt : all_dtypes())
    for (Layout l : {Layout::Contiguous, Layout::Transposed, Layout::Strided, Layout::ZeroDim}) {
      Tensor x = make_input(dt, l);
      Ref rx = ref_of(x);
      for (auto& dims : dim_sets(x))
        for (bool keep : {false, true}) {
          SCOPED_TRACE(desc(dt, l, dims, keep));
          Tensor a = amax(x, dims, keep);
          EXPECT_EQ(a.dtype(), dt);
          EXPECT_TRUE(close_to(a, ref_reduce(rx, dims, keep, g_max), dt));
          EXPECT_TRUE(close_to(amin(x, dims, keep), ref_reduce(rx, dims, keep, g_min), dt));
        }
    }
  Tensor e = zeros({0, 4});
  EXPECT_THROW_MSG(amax(e), IndexError,
                   "amax(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction "
                   "dim with the 'dim' argument.");
  EXPECT_THROW_MSG(amin(e, {0}), IndexError, "amin(): Expected reduction dim 0 to have non-zero size.");
  EXPECT_EQ(amax(e, {1}).sizes(), Shape({0}));
  EXPECT_EQ(amax(e, {1}, true).sizes(), Shape({0, 1}));
}

EMBER_DEVICE_TEST(Argmax, FlattenedAndDim) {
  for (DType dt : all_dtypes()) {
    if (dt == kBool) continue;
    for (Layout l : {Layout::Contiguous, Layout::Transposed, Layout::Strided, Layout::ZeroDim}) {
      SCOPED_TRACE(desc(dt, l, {}, false));
      Tensor x = make_input(dt, l, -50, 50);
      Ref rx = ref_of(x);
      Tensor a = argmax(x);
      EXPECT_EQ(a.dtype(), kInt64);
      EXPECT_EQ(a.dim(), 0);
      EXPECT_TRUE(close_to(a, ref_reduce(rx, {}, false, g_argmax), kInt64));
      EXPECT_TRUE(close_to(argmin(x), ref_reduce(rx, {}, false, g_argmin), kInt64));
      Tensor k = argmax(x, std::nullopt, true);
      EXPECT_EQ(k.dim(), x.dim());
      EXPECT_EQ(k.numel(), 1);
      int64_t n = std::max<int64_t>(x.dim(), 1);
      for (int64_t d = -n; d < n; ++d)
        for (bool keep : {false, true}) {
          EXPECT_TRUE(close_to(argmax(x, d, keep), ref_reduce(rx, {d}, keep, g_argmax), kInt64));
          EXPECT_TRUE(close_to(argmin(x, d, keep), ref_reduce(rx, {d}, keep, g_argmin), kInt64));
        }
    }
  }
  EXPECT_THROW_MSG(argmax(zeros({0})), IndexError, "argmax(): Expected reduction dim to be specified");
  EXPECT_THROW_MSG(argmin(zeros({2, 0}), 1), IndexError, "argmin(): Expected reduction dim 1 to have non-zero size.");
  EXPECT_THROW_MSG(argmax(tensor({true, false})), Error, kernel_name(device(), "argmax_cpu", "argmax_cuda") + " not implemented for 'Bool'");
}

// ------------------------------------------------------------------------------ var / std / norm
EMBER_DEVICE_TEST(VarStd, FloatDtypesLayoutsDims) {
  for (DType dt : float_dtypes())
    for (Layout l : all_layouts()) {
      Tensor x = make_input(dt, l);
      Ref rx = ref_of(x);
      for (auto& dims : dim_sets(x))
        for (bool keep : {false, true})
          for (bool unbiased : {true, false}) {
            SCOPED_TRACE(desc(dt, l, dims, keep) + (unbiased ? " unbiased" : " biased"));
            Ref rv = ref_reduce(rx, dims, keep, g_var(unbiased ? 1 : 0));
            Tensor v = var(x, dims, unbiased, keep);
            EXPECT_EQ(v.dtype(), dt);
            EXPECT_TRUE(close_to(v, rv, dt));
            EXPECT_TRUE(close_to(ember::std(x, dims, unbiased, keep), ref_unary(rv, [](double y) { return std::sqrt(y); }), dt));
          }
      EXPECT_TRUE(close_to(var(x), ref_reduce(rx, {}, false, g_var(1)), dt));
      EXPECT_TRUE(close_to(x.std(false), ref_unary(ref_reduce(rx, {}, false, g_var(0)), [](double y) { return std::sqrt(y); }), dt));
    }
  for (const Tensor& x : big_inputs(kFloat64))
    for (auto& dims : dim_sets(x)) EXPECT_TRUE(close_to(var(x, dims), ref_reduce(ref_of(x), dims, false, g_var(1))));
}

EMBER_DEVICE_TEST(VarStd, EdgeCases) {
  EXPECT_TRUE(std::isnan(var(tensor({3.0})).item<double>()));  // one element, unbiased: 0/0
  EXPECT_EQ(var(tensor({3.0}), false).item<double>(), 0.0);
  EXPECT_TRUE(std::isnan(var(zeros({0})).item<double>()));
  // Large offset: the two-pass formula keeps the variance exact-ish.
  Tensor x = tensor({1e8 + 1, 1e8 + 2, 1e8 + 3}, {.dtype = kFloat64});
  EXPECT_NEAR(var(x).item<double>(), 1.0, 1e-6);
  EXPECT_THROW_MSG(var(tensor({1, 2})), Error, "std and var only support floating point and complex dtypes");
  EXPECT_THROW_MSG(ember::std(tensor({1, 2})), Error, "std and var only support floating point");
}

EMBER_DEVICE_TEST(Norm, OrdersDimsDtypes) {
  for (DType dt : float_dtypes())
    for (Layout l : all_layouts()) {
      Tensor x = make_input(dt, l);
      Ref rx = ref_of(x);
      for (double p : {2.0, 1.0, kInf, -kInf, 0.0, 3.0, 0.5}) {
        if (x.numel() == 0 && std::isinf(p)) continue;
        for (auto& dims : dim_sets(x))
          for (bool keep : {false, true}) {
            SCOPED_TRACE(desc(dt, l, dims, keep) + " p=" + std::to_string(p));
            Tensor n = norm(x, p, dims, keep);
            EXPECT_EQ(n.dtype(), dt);
            EXPECT_TRUE(close_to(n, ref_reduce(rx, dims, keep, g_norm(p)), dt));
          }
        EXPECT_TRUE(close_to(norm(x, p), ref_reduce(rx, {}, false, g_norm(p)), dt));
      }
    }
  EXPECT_DOUBLE_EQ(norm(tensor({3.0, 4.0})).item<double>(), 5.0);
  EXPECT_EQ(norm(zeros({0})).item<double>(), 0.0);
  EXPECT_THROW_MSG(norm(zeros({0}), kInf), Error, "cannot compute the inf norm on an empty tensor");
  EXPECT_THROW_MSG(norm(tensor({1, 2})), Error,
                   "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long");
  for (const Tensor& x : big_inputs(kFloat32))
    for (auto& dims : dim_sets(x)) EXPECT_TRUE(close_to(norm(x, 2, dims), ref_reduce(ref_of(x), dims, false, g_norm(2))));
}

// ------------------------------------------------------------------------------ logsumexp
EMBER_DEVICE_TEST(Logsumexp, ValuesAndStability) {
  for (DType dt : float_dtypes())
    for (Layout l : all_layouts()) {
      Tensor x = make_input(dt, l);
      Ref rx = ref_of(x);
      for (auto& dims : dim_sets(x))
        for (bool keep : {false, true}) {
          SCOPED_TRACE(desc(dt, l, dims, keep));
          Tensor r = logsumexp(x, dims, keep);
          EXPECT_EQ(r.dtype(), dt);
          EXPECT_TRUE(close_to(r, ref_reduce(rx, dims, keep, g_lse), dt));
        }
    }
  // Around 1e4 a naive exp overflows; the max-shifted form does not.
  Tensor big = tensor({{10000.0f, 10001.0f, 9999.0f}, {-10000.0f, -10002.0f, -10001.0f}});
  EXPECT_TRUE(close_to(logsumexp(big, {1}), ref_reduce(ref_of(big), {1}, false, g_lse)));
  // -inf rows give -inf, +inf gives +inf, NaN propagates.
  Tensor special = tensor({{-kInf, -kInf}, {kInf, 1.0}, {kNaN, 1.0}});
  auto v = logsumexp(special, {1}).tolist<double>();
  EXPECT_EQ(v[0], -kInf);
  EXPECT_EQ(v[1], kInf);
  EXPECT_TRUE(std::isnan(v[2]));
  EXPECT_EQ(logsumexp(zeros({0, 3}), {0}).tolist<double>(), std::vector<double>(3, -kInf));
  EXPECT_THROW_MSG(logsumexp(zeros({2}), {1}), IndexError, "Dimension out of range");
}

// ------------------------------------------------------------------------------ any / all / count_nonzero
EMBER_DEVICE_TEST(AnyAll, DtypesLayoutsDims) {
  for (DType dt : all_dtypes())
    for (Layout l : all_layouts()) {
      Tensor x = make_input(dt, l, -1.0, 1.0);
      Ref rx = ref_of(x);
      DType out_dt = dt == kUInt8 ? kUInt8 : kBool;
      EXPECT_EQ(any(x).dtype(), out_dt);
      EXPECT_TRUE(close_to(any(x), ref_reduce(rx, {}, false, g_any), kBool));
      EXPECT_TRUE(close_to(all(x), ref_reduce(rx, {}, false, g_all), kBool));
      int64_t n = std::max<int64_t>(x.dim(), 1);
      for (int64_t d = -n; d < n; ++d)
        for (bool keep : {false, true}) {
          SCOPED_TRACE(desc(dt, l, {d}, keep));
          EXPECT_TRUE(close_to(any(x, d, keep), ref_reduce(rx, {d}, keep, g_any), kBool));
          EXPECT_TRUE(close_to(all(x, d, keep), ref_reduce(rx, {d}, keep, g_all), kBool));
        }
    }
  EXPECT_FALSE(any(zeros({0})).item<bool>());
  EXPECT_TRUE(all(zeros({0})).item<bool>());
  EXPECT_TRUE(any(tensor({0.0, kNaN})).item<bool>());  // NaN is nonzero
  Tensor big = zeros({100, 300});
  big.select(0, 55).select(0, 299).fill_(1.0);
  EXPECT_EQ(any(big, 0).sum().item<int64_t>(), 1);
  EXPECT_EQ(any(big, 1).sum().item<int64_t>(), 1);
  EXPECT_FALSE(all(big).item<bool>());
}

EMBER_DEVICE_TEST(CountNonzero, Dims) {
  for (DType dt : all_dtypes())
    for (Layout l : all_layouts()) {
      Tensor x = make_input(dt, l, -1.0, 1.0);
      Ref rx = ref_of(x);
      for (auto& dims : dim_sets(x)) {
        SCOPED_TRACE(desc(dt, l, dims, false));
        Tensor c = count_nonzero(x, dims);
        EXPECT_EQ(c.dtype(), kInt64);
        EXPECT_TRUE(close_to(c, ref_reduce(rx, dims, false, g_count), kInt64));
      }
    }
}

// ------------------------------------------------------------------------------ cumsum / cumprod
namespace {
Ref ref_scan(const Ref& a, int64_t dim, bool is_sum) {
  Ref out = a;
  int64_t nd = int64_t(a.shape.size());
  if (nd == 0) return out;
  if (dim < 0) dim += nd;
  int64_t outer = 1, n = a.shape[dim], inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= a.shape[d];
  for (int64_t d = dim + 1; d < nd; ++d) inner *= a.shape[d];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      double acc = is_sum ? 0 : 1;
      for (int64_t i = 0; i < n; ++i) {
        int64_t k = (o * n + i) * inner + j;
        acc = is_sum ? acc + a.v[k] : acc * a.v[k];
        out.v[k] = acc;
      }
    }
  return out;
}
}  // namespace

EMBER_DEVICE_TEST(Cumsum, DtypesLayoutsDims) {
  for (DType dt : all_dtypes())
    for (Layout l : all_layouts()) {
      Tensor x = make_input(dt, l);
      Ref rx = ref_of(x);
      int64_t n = std::max<int64_t>(x.dim(), 1);
      for (int64_t d = -n; d < n; ++d) {
        SCOPED_TRACE(desc(dt, l, {d}, false));
        Tensor s = cumsum(x, d), p = cumprod(x, d);
        EXPECT_EQ(s.dtype(), sum_result(dt));
        EXPECT_EQ(p.dtype(), sum_result(dt));
        DType tol = dt == kBool ? kInt64 : dt;
        EXPECT_TRUE(close_to(s, ref_scan(rx, d, true), tol));
        EXPECT_TRUE(close_to(p, ref_scan(rx, d, false), tol));
      }
    }
  for (const Tensor& x : big_inputs(kFloat64))
    for (int64_t d = 0; d < x.dim(); ++d) {
      EXPECT_TRUE(close_to(cumsum(x, d), ref_scan(ref_of(x), d, true)));
      EXPECT_TRUE(close_to(x.cumprod(d), ref_scan(ref_of(x), d, false)));
    }
  Tensor i = tensor({1, 2, 3});
  EXPECT_EQ(cumsum(i, 0, kFloat32).dtype(), kFloat32);
  EXPECT_EQ(cumsum(i, 0).tolist<int64_t>(), std::vector<int64_t>({1, 3, 6}));
  EXPECT_EQ(cumprod(i.to(kInt8), 0).dtype(), kInt64);
  EXPECT_THROW_MSG(cumsum(i, 1), IndexError, "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
}

// The vector paths for dense float rows (cpu/vec16.h): every row length around the 16-float
// vector, the four-chain threshold (128) and the double flush (4096), with a NaN or a tie at
// every kind of place (first lane, a tail lane, past the chains), against a scalar reference.
TEST(Reduce, DenseFloatRowsAtEveryLength) {
  manual_seed(31);
  std::vector<int64_t> lengths;
  for (int64_t n = 1; n <= 70; ++n) lengths.push_back(n);
  for (int64_t n : {127, 128, 129, 191, 192, 255, 4095, 4096, 4097, 9000}) lengths.push_back(n);
  for (int64_t n : lengths) {
    for (int nan_at : {-1, 0, int(n) - 1, int(n) / 2}) {
      Tensor x = randint(0, 7, {3, n}).to(kFloat32) - 3.0;  // small integers: ties, exact sums
      if (nan_at >= 0) x.select(0, 1).narrow(0, nan_at, 1).fill_(std::numeric_limits<double>::quiet_NaN());
      const Tensor xd = x.to(kFloat64);
      for (int64_t r = 0; r < 3; ++r) {
        double mx = -kInf, mn = kInf, sum = 0;
        int64_t first_max = -1, first_min = -1, first_nan = -1;
        for (int64_t j = 0; j < n; ++j) {
          const double v = xd[r][j].item<double>();
          if (v != v) {
            if (first_nan < 0) first_nan = j;
            continue;
          }
          sum += v;
          if (v > mx) mx = v, first_max = j;
          if (v < mn) mn = v, first_min = j;
        }
        const bool has_nan = first_nan >= 0;
        const Tensor row = x[r];
        const double got_max = row.amax({-1}).item<double>(), got_min = row.amin({-1}).item<double>();
        EXPECT_TRUE(has_nan ? std::isnan(got_max) : got_max == mx) << n << " " << nan_at;
        EXPECT_TRUE(has_nan ? std::isnan(got_min) : got_min == mn) << n << " " << nan_at;
        const double got_sum = row.sum().item<double>();
        EXPECT_TRUE(has_nan ? std::isnan(got_sum) : got_sum == sum) << n << " " << nan_at;
        EXPECT_EQ(row.argmax().item<int64_t>(), has_nan ? first_nan : first_max) << n << " " << nan_at;
        EXPECT_EQ(row.argmin().item<int64_t>(), has_nan ? first_nan : first_min) << n << " " << nan_at;
      }
      // the same rows reduced together (the engine's rows path) agree with each one alone
      EXPECT_TRUE(x.amax({-1}).allclose(stack({x[0].amax({-1}), x[1].amax({-1}), x[2].amax({-1})}), 0, 0, true)) << n;
      const Tensor softmax_rows = x.softmax(-1);
      EXPECT_TRUE(softmax_rows[0].allclose(x[0].softmax(-1), 1e-6, 1e-7, true)) << n;
    }
  }
}
