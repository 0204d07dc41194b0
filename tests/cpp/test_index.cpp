// Indexing ops against naive references: index_select, gather, scatter(_add), index_add,
// index_fill, advanced indexing (index / index_put_), masked_fill, masked_select, nonzero,
// bincount, one_hot, embedding.
#include "test_utils.h"

using namespace ember;
using namespace ember::testing;

namespace {

// Deterministic values in [-range, range] (many repeats), halves for floats.
std::vector<double> vals(int64_t n, uint64_t seed = 1, int range = 5) {
  std::vector<double> v(n);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 12345;
  for (auto& e : v) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    e = double(int64_t((x >> 33) % uint64_t(2 * range + 1)) - range);
  }
  return v;
}
std::vector<double> cast_vals(std::vector<double> v, DType dt) {
  for (auto& e : v) {
    if (dt == kBool) e = e != 0 ? 1 : 0;
    if (dt == kUInt8) e = std::abs(e);
  }
  return v;
}

Tensor make(const std::vector<double>& v, const Shape& shape, DType dt = kFloat64) {
  return tensor(v, {.dtype = kFloat64}).reshape(shape).to(dt);
}
Tensor longs(const std::vector<int64_t>& v, const Shape& shape) {
  return tensor(v, {.dtype = kInt64}).reshape(shape);
}
Tensor longs(const std::vector<int64_t>& v) { return tensor(v, {.dtype = kInt64}); }

enum class L { Contig, Trans, Strided };
const char* lname(L l) { return l == L::Contig ? "contig" : l == L::Trans ? "transposed" : "strided"; }
// A tensor with the logical values v (row-major over shape) in the given memory layout.
Tensor laid(const std::vector<double>& v, const Shape& shape, DType dt, L l) {
  Tensor x = make(v, shape, dt);
  if (l == L::Contig || shape.size() < 2) return x;
  if (l == L::Trans) {
    Tensor t = x.transpose(-1, -2).contiguous().transpose(-1, -2);
    EXPECT_FALSE(t.is_contiguous());
    return t;
  }
  Shape big = shape;
  big.back() *= 2;
  Tensor z = zeros(big, {.dtype = dt});
  Tensor view = z.slice(-1, 0, std::nullopt, 2);
  view.copy_(x);
  EXPECT_FALSE(view.is_contiguous());
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

const std::vector<DType> kTestTypes = {kFloat32, kFloat64, kInt64, kInt32, kBool, kFloat16, kUInt8};
const std::vector<L> kLayouts = {L::Contig, L::Trans, L::Strided};

}  // namespace

// ------------------------------------------------------------------ index_select

EMBER_DEVICE_TEST(IndexSelect, MatchesReferenceAllDimsDtypesLayouts) {
  Shape shape{3, 4, 5};
  auto base = vals(60, 3);
  for (DType dt : kTestTypes)
    for (L l : kLayouts)
      for (int64_t dim : {0, 1, 2, -1, -3}) {
        auto v = cast_vals(base, dt);
        Tensor x = laid(v, shape, dt, l);
        int64_t d = dim < 0 ? dim + 3 : dim;
        std::vector<int64_t> iv = {2, 0, 2, 1};  // duplicates
        for (auto& i : iv) i = i % shape[d];
        for (DType idt : {kInt64, kInt32}) {
          Tensor idx = longs(iv).to(idt);
          Tensor out = index_select(x, dim, idx);
          Shape os = shape;
          os[d] = int64_t(iv.size());
          std::vector<double> e(shape_numel(os));
          for (int64_t f = 0; f < int64_t(e.size()); ++f) {
            auto p = unravel(f, os);
            p[d] = iv[p[d]];
            e[f] = v[flat(p, shape)];
          }
          EXPECT_EQ(out.dtype(), dt);
          EXPECT_TRUE(same(out, os, e)) << dtype_name(dt) << " " << lname(l) << " dim " << dim;
        }
      }
}

EMBER_DEVICE_TEST(IndexSelect, RowsOfLargeMatrixAndEdgeCases) {
  // Wide rows: the memcpy path.
  auto v = vals(1000 * 64, 7);
  Tensor w = make(v, {1000, 64}, kFloat32);
  std::vector<int64_t> iv;
  for (int i = 0; i < 300; ++i) iv.push_back((i * 37) % 1000);
  Tensor out = w.index_select(0, longs(iv));
  std::vector<double> e;
  for (auto i : iv) for (int j = 0; j < 64; ++j) e.push_back(v[i * 64 + j]);
  EXPECT_TRUE(same(out, {300, 64}, e));
  // Empty index, empty self, 0-dim self.
  EXPECT_EQ(index_select(w, 1, longs({})).sizes(), Shape({1000, 0}));
  Tensor em = zeros({0, 3});
  EXPECT_EQ(index_select(em, 1, longs({2, 2})).sizes(), Shape({0, 2}));
  Tensor s = make({7.0}, {}, kFloat64);
  Tensor so = index_select(s, 0, longs({0}));
  EXPECT_EQ(so.dim(), 0);
  EXPECT_EQ(so.item<double>(), 7.0);
  // 0-dim index.
  Tensor r = index_select(make({1, 2, 3}, {3}), 0, longs({2}, {}));
  EXPECT_TRUE(same(r, {1}, {3}));
}

EMBER_DEVICE_TEST(IndexSelect, Errors) {
  Tensor x = make(vals(12), {3, 4});
  EXPECT_INDEX_ERROR(index_select(x, 0, longs({0, 5})), IndexError, "index 5 is out of bounds for dimension 0 with size 3");
  EXPECT_INDEX_ERROR(index_select(x, 1, longs({-1})), IndexError, "index -1 is out of bounds for dimension 1 with size 4");
  EXPECT_THROW_MSG(index_select(x, 0, make({0, 1}, {2}, kFloat32)), Error, "Expected dtype int32 or int64 for index");
  EXPECT_THROW_MSG(index_select(x, 0, longs({0, 1}, {1, 2})), Error, "Index is supposed to be a vector");
  EXPECT_THROW_MSG(index_select(x, 2, longs({0})), IndexError, "Dimension out of range");
}

// ------------------------------------------------------------------ gather

EMBER_DEVICE_TEST(Gather, MatchesReference) {
  Shape shape{3, 4, 5};
  auto base = vals(60, 5);
  for (DType dt : kTestTypes)
    for (L l : kLayouts)
      for (int64_t dim : {0, 1, 2, -1}) {
        auto v = cast_vals(base, dt);
        Tensor x = laid(v, shape, dt, l);
        int64_t d = dim < 0 ? dim + 3 : dim;
        Shape is{2, 3, 4};  // smaller than self in every dim, larger along no dim
        is[d] = 6;          // may be larger along dim
        std::vector<double> ivd = vals(shape_numel(is), 11, 100);
        std::vector<int64_t> iv;
        for (double q : ivd) iv.push_back(int64_t(std::abs(q)) % shape[d]);
        for (L il : {L::Contig, L::Trans}) {
          std::vector<double> ivdbl(iv.begin(), iv.end());
          Tensor idx = laid(ivdbl, is, kInt64, il);
          Tensor out = gather(x, dim, idx);
          std::vector<double> e(iv.size());
          for (int64_t f = 0; f < int64_t(e.size()); ++f) {
            auto p = unravel(f, is);
            p[d] = iv[f];
            e[f] = v[flat(p, shape)];
          }
          EXPECT_TRUE(same(out, is, e)) << dtype_name(dt) << " " << lname(l) << " dim " << dim;
        }
      }
}

EMBER_DEVICE_TEST(Gather, ZeroDimEmptyAndErrors) {
  Tensor s = make({4.0}, {});
  EXPECT_EQ(gather(s, 0, longs({0}, {})).item<double>(), 4.0);
  Tensor x = make(vals(12), {3, 4});
  EXPECT_EQ(gather(x, 1, zeros({3, 0}, {.dtype = kInt64})).sizes(), Shape({3, 0}));
  EXPECT_INDEX_ERROR(gather(x, 1, longs({0, 4}, {1, 2})), IndexError, "index 4 is out of bounds for dimension 1 with size 4");
  EXPECT_INDEX_ERROR(gather(x, 0, longs({-1}, {1, 1})), IndexError, "index -1 is out of bounds for dimension 0 with size 3");
  EXPECT_THROW_MSG(gather(x, 1, longs({0, 1})), Error, "Index tensor must have the same number of dimensions as input tensor");
  EXPECT_THROW_MSG(gather(x, 1, zeros({4, 1}, {.dtype = kInt64})), Error, "Size does not match at dimension 0");
  EXPECT_THROW_MSG(gather(x, 1, zeros({1, 1}, {.dtype = kFloat32})), Error, "Expected dtype int64 for index");
}

// ------------------------------------------------------------------ scatter / scatter_add

namespace {
// Reference scatter: applies index/src in row-major order of index (last write wins / sums).
std::vector<double> ref_scatter(std::vector<double> self, const Shape& ss, int64_t d, const std::vector<int64_t>& iv,
                                const Shape& is, const std::vector<double>& src, const Shape& srcs, bool add) {
  for (int64_t f = 0; f < int64_t(iv.size()); ++f) {
    auto p = unravel(f, is);
    double val = src[flat(p, srcs)];
    auto t = p;
    t[d] = iv[f];
    double& dst = self[flat(t, ss)];
    dst = add ? dst + val : val;
  }
  return self;
}
}  // namespace

EMBER_DEVICE_TEST(Scatter, SrcValueAndAddMatchReference) {
  Shape ss{4, 5};
  for (DType dt : {kFloat32, kFloat64, kInt64, kInt32, kFloat16})
    for (L l : kLayouts)
      for (int64_t dim : {0, 1, -1}) {
        int64_t d = dim < 0 ? dim + 2 : dim;
        auto sv = vals(20, 2);
        Tensor self = laid(sv, ss, dt, l);
        Shape is{3, 4};
        Shape srcs{4, 5};
        auto srcv = vals(20, 9);
        Tensor src = laid(srcv, srcs, dt, L::Trans);
        // Distinct indices along dim for plain scatter (its duplicate order is unspecified).
        std::vector<int64_t> iv(12);
        for (int64_t r = 0; r < 3; ++r)
          for (int64_t c = 0; c < 4; ++c) iv[r * 4 + c] = d == 0 ? (r + c) % 4 : (r + c) % 5;
        Tensor idx = longs(iv, is);
        Tensor out = scatter(self, dim, idx, src);
        EXPECT_TRUE(same(out, ss, ref_scatter(sv, ss, d, iv, is, srcv, srcs, false)))
            << dtype_name(dt) << " " << lname(l) << " dim " << dim;
        EXPECT_TRUE(same(self, ss, sv));  // out of place leaves self alone
        Tensor outv = scatter(self, dim, idx, Scalar(7));
        EXPECT_TRUE(same(outv, ss, ref_scatter(sv, ss, d, iv, is, std::vector<double>(20, 7.0), srcs, false)));
        // scatter_add with duplicate indices.
        std::vector<int64_t> dup(12);
        for (int64_t f = 0; f < 12; ++f) dup[f] = f % 2;
        Tensor didx = longs(dup, is);
        Tensor outa = scatter_add(self, dim, didx, src);
        EXPECT_TRUE(same(outa, ss, ref_scatter(sv, ss, d, dup, is, srcv, srcs, true)))
            << "scatter_add " << dtype_name(dt) << " " << lname(l) << " dim " << dim;
        // In place into the (possibly non-contiguous) self, version bumped.
        Tensor t = laid(sv, ss, dt, l);
        uint32_t v0 = t._version();
        t.scatter_add_(dim, didx, src);
        EXPECT_GT(t._version(), v0);
        EXPECT_TRUE(same(t, ss, ref_scatter(sv, ss, d, dup, is, srcv, srcs, true)));
        Tensor t2 = laid(sv, ss, dt, l);
        t2.scatter_(dim, idx, src);
        EXPECT_TRUE(same(t2, ss, ref_scatter(sv, ss, d, iv, is, srcv, srcs, false)));
        t2.scatter_(dim, idx, Scalar(-3));
        EXPECT_TRUE(same(t2, ss, ref_scatter(ref_scatter(sv, ss, d, iv, is, srcv, srcs, false), ss, d, iv, is,
                                              std::vector<double>(20, -3.0), srcs, false)));
      }
}

EMBER_DEVICE_TEST(Scatter, BoolAndZeroDimAndErrorsLeaveSelfUntouched) {
  Tensor b = zeros({2, 3}, {.dtype = kBool});
  Tensor r = scatter(b, 1, longs({2, 0}, {2, 1}), Scalar(true));
  EXPECT_TRUE(same(r, {2, 3}, {0, 0, 1, 1, 0, 0}));
  Tensor s = make({1.0}, {});
  EXPECT_EQ(scatter(s, 0, longs({0}, {}), Scalar(5.0)).item<double>(), 5.0);

  Tensor x = zeros({3, 4});
  Tensor src = ones({3, 4});
  // An out-of-range index after valid ones: nothing may be written.
  EXPECT_INDEX_ERROR(x.scatter_(0, longs({0, 1, 3}, {1, 3}), src), IndexError,
                   "index 3 is out of bounds for dimension 0 with size 3");
  EXPECT_EQ(x.sum().item<double>(), 0.0);
  EXPECT_INDEX_ERROR(x.scatter_add_(1, longs({0, -1}, {1, 2}), src), IndexError,
                   "index -1 is out of bounds for dimension 1 with size 4");
  EXPECT_INDEX_ERROR(x.scatter_(1, longs({9}, {1, 1}), Scalar(1.0)), IndexError,
                   "index 9 is out of bounds for dimension 1 with size 4");
  EXPECT_EQ(x.sum().item<double>(), 0.0);
  EXPECT_THROW_MSG(scatter(x, 0, longs({0}), src), Error,
                   "Index tensor must have the same number of dimensions as input tensor");
  EXPECT_THROW_MSG(scatter(x, 0, longs({0}, {1, 1}), ones({3, 4}, {.dtype = kFloat64})), Error,
                   "Expected self.dtype to be equal to src.dtype");
  EXPECT_THROW_MSG(scatter_add(x, 0, zeros({1, 5}, {.dtype = kInt64}), ones({3, 5})), Error,
                   "Size does not match at dimension 1");
  EXPECT_THROW_MSG(scatter(x, 0, zeros({1, 1}, {.dtype = kFloat32}), src), Error, "Expected dtype int64 for index");
}

// ------------------------------------------------------------------ index_add / index_fill

EMBER_DEVICE_TEST(IndexAdd, DuplicatesAlphaLayouts) {
  Shape ss{4, 3, 5};
  auto sv = vals(60, 4);
  for (DType dt : {kFloat32, kFloat64, kInt64, kInt32, kFloat16})
    for (L l : kLayouts)
      for (int64_t dim : {0, 1, -1}) {
        int64_t d = dim < 0 ? dim + 3 : dim;
        std::vector<int64_t> iv = {1, 0, 1, 2, 1};
        Shape srcs = ss;
        srcs[d] = 5;
        auto srcv = vals(shape_numel(srcs), 8);
        Tensor self = laid(sv, ss, dt, l);
        Tensor src = laid(srcv, srcs, dt, l);
        int64_t alpha = 2;
        std::vector<double> e = sv;
        for (int64_t f = 0; f < int64_t(srcv.size()); ++f) {
          auto p = unravel(f, srcs);
          auto t = p;
          t[d] = iv[p[d]];
          e[flat(t, ss)] += alpha * srcv[f];
        }
        Tensor out = index_add(self, dim, longs(iv), src, alpha);
        EXPECT_TRUE(same(out, ss, e)) << dtype_name(dt) << " " << lname(l) << " dim " << dim;
        uint32_t v0 = self._version();
        self.index_add_(dim, longs(iv).to(kInt32), src, alpha);
        EXPECT_GT(self._version(), v0);
        EXPECT_TRUE(same(self, ss, e));
      }
}

EMBER_DEVICE_TEST(IndexAdd, Errors) {
  Tensor x = zeros({3, 4});
  EXPECT_INDEX_ERROR(x.index_add_(0, longs({0, 3}), ones({2, 4})), IndexError,
                   "index 3 is out of bounds for dimension 0 with size 3");
  EXPECT_EQ(x.sum().item<double>(), 0.0);
  EXPECT_THROW_MSG(x.index_add_(1, longs({0}), ones({3, 2})), Error, "must have the shape of self");
  EXPECT_THROW_MSG(x.index_add_(0, longs({0}), ones({1, 4}, {.dtype = kFloat64})), Error, "must have the same scalar type");
  EXPECT_THROW_MSG(x.index_add_(0, zeros({1}), ones({1, 4})), Error, "Expected dtype int32/int64 for index");
}

EMBER_DEVICE_TEST(IndexFill, DimsNegativeIndicesAndErrors) {
  Shape ss{3, 4};
  auto sv = vals(12, 6);
  for (DType dt : {kFloat32, kInt64, kBool})
    for (L l : kLayouts)
      for (int64_t dim : {0, 1, -1}) {
        int64_t d = dim < 0 ? dim + 2 : dim;
        auto v = cast_vals(sv, dt);
        Tensor x = laid(v, ss, dt, l);
        std::vector<int64_t> iv = {-1, 0};
        Tensor out = index_fill(x, dim, longs(iv), Scalar(1));
        std::vector<double> e = v;
        for (int64_t f = 0; f < 12; ++f) {
          auto p = unravel(f, ss);
          if (p[d] == 0 || p[d] == ss[d] - 1) e[f] = 1;
        }
        EXPECT_TRUE(same(out, ss, e)) << dtype_name(dt) << " " << lname(l) << " dim " << dim;
        EXPECT_TRUE(same(x, ss, v));
      }
  Tensor x = zeros({3, 4});
  EXPECT_INDEX_ERROR(index_fill(x, 1, longs({4}), Scalar(1.0)), IndexError,
                   "index 4 is out of bounds for dimension 1 with size 4");
  EXPECT_INDEX_ERROR(index_fill(x, 0, longs({-4}), Scalar(1.0)), IndexError,
                   "index -4 is out of bounds for dimension 0 with size 3");
  EXPECT_THROW_MSG(index_fill(x, 0, zeros({1}), Scalar(1.0)), Error, "Expected dtype int64 for index");
  EXPECT_EQ(index_fill(make({2.0}, {}), 0, longs({0}), Scalar(9.0)).item<double>(), 9.0);
}

// ------------------------------------------------------------------ advanced indexing

EMBER_DEVICE_TEST(Index, IntegerIndicesPlacement) {
  Shape ss{4, 5, 6};
  auto sv = vals(120, 12);
  std::vector<int64_t> i1 = {3, 0, -1, 2, 0, 1};  // shape (2, 3), negatives wrap
  std::vector<int64_t> j1 = {4, -5, 2};           // shape (3,), broadcasts against i1
  auto w = [](int64_t v, int64_t n) { return v < 0 ? v + n : v; };
  for (DType dt : {kFloat32, kInt64, kBool, kFloat64})
    for (L l : kLayouts) {
      auto v = cast_vals(sv, dt);
      Tensor x = laid(v, ss, dt, l);
      Tensor I = longs(i1, {2, 3});
      Tensor J = longs(j1, {3});
      // x[I]: (2, 3, 5, 6)
      {
        Tensor out = x.index({I});
        Shape os{2, 3, 5, 6};
        std::vector<double> e;
        for (int64_t b = 0; b < 6; ++b)
          for (int64_t q = 0; q < 30; ++q) e.push_back(v[w(i1[b], 4) * 30 + q]);
        EXPECT_TRUE(same(out, os, e)) << "x[I] " << dtype_name(dt) << " " << lname(l);
      }
      // x[:, J] adjacent in the middle: (4, 3, 6)
      {
        Tensor out = x.index({std::nullopt, J});
        std::vector<double> e;
        for (int64_t a = 0; a < 4; ++a)
          for (int64_t b = 0; b < 3; ++b)
            for (int64_t c = 0; c < 6; ++c) e.push_back(v[a * 30 + w(j1[b], 5) * 6 + c]);
        EXPECT_TRUE(same(out, {4, 3, 6}, e)) << "x[:, J]";
      }
      // x[I, J] adjacent, broadcast (2, 3): (2, 3, 6)
      {
        Tensor out = x.index({I, J});
        std::vector<double> e;
        for (int64_t b = 0; b < 6; ++b)
          for (int64_t c = 0; c < 6; ++c) e.push_back(v[w(i1[b], 4) * 30 + w(j1[b % 3], 5) * 6 + c]);
        EXPECT_TRUE(same(out, {2, 3, 6}, e)) << "x[I, J]";
      }
      // x[I, :, K] non-adjacent: broadcast dims first: (2, 3, 5)
      {
        std::vector<int64_t> k1 = {5, 0, -6};
        Tensor out = x.index({I, std::nullopt, longs(k1)});
        std::vector<double> e;
        for (int64_t b = 0; b < 6; ++b)
          for (int64_t m = 0; m < 5; ++m) e.push_back(v[w(i1[b], 4) * 30 + m * 6 + w(k1[b % 3], 6)]);
        EXPECT_TRUE(same(out, {2, 3, 5}, e)) << "x[I, :, K]";
      }
      // x[:, J(3,1), K(2)] adjacent at dim 1: (4, 3, 2)
      {
        std::vector<int64_t> j2 = {0, 4, 2}, k2 = {1, 5};
        Tensor out = x.index({std::nullopt, longs(j2, {3, 1}).to(kInt32), longs(k2)});
        std::vector<double> e;
        for (int64_t a = 0; a < 4; ++a)
          for (int64_t b = 0; b < 3; ++b)
            for (int64_t c = 0; c < 2; ++c) e.push_back(v[a * 30 + j2[b] * 6 + k2[c]]);
        EXPECT_TRUE(same(out, {4, 3, 2}, e)) << "x[:, J, K]";
      }
    }
  // Empty index tensor and 0-dim index.
  Tensor x = make(sv, ss);
  EXPECT_EQ(x.index({longs({})}).sizes(), Shape({0, 5, 6}));
  Tensor s = x.index({longs({2}, {}), std::nullopt, longs({1}, {})});
  EXPECT_TRUE(same(s, {5}, {sv[60 + 1], sv[66 + 1], sv[72 + 1], sv[78 + 1], sv[84 + 1]}));
}

EMBER_DEVICE_TEST(Index, BoolMasks) {
  Shape ss{3, 4};
  auto sv = vals(12, 13);
  for (L l : kLayouts) {
    Tensor x = laid(sv, ss, kFloat32, l);
    std::vector<double> mv = {1, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1, 0};
    Tensor m = make(mv, ss, kBool);
    std::vector<double> e;
    for (int i = 0; i < 12; ++i) if (mv[i]) e.push_back(sv[i]);
    EXPECT_TRUE(same(x.index({m}), {int64_t(e.size())}, e)) << lname(l);
    EXPECT_TRUE(same(masked_select(x, m), {int64_t(e.size())}, e));
    // uint8 masks act as bool masks.
    EXPECT_TRUE(same(x.index({m.to(kUInt8)}), {int64_t(e.size())}, e));
    // A row mask selects rows; with a column index after it.
    Tensor rm = make({1, 0, 1}, {3}, kBool);
    std::vector<double> er;
    for (int r : {0, 2}) for (int c = 0; c < 4; ++c) er.push_back(sv[r * 4 + c]);
    EXPECT_TRUE(same(x.index({rm}), {2, 4}, er));
    Tensor out = x.index({rm, longs({3, 1})});
    EXPECT_TRUE(same(out, {2}, {sv[3], sv[9]}));
    // Column mask after a slice: x[:, cm].
    Tensor cm = make({0, 1, 1, 0}, {4}, kBool);
    std::vector<double> ec;
    for (int r = 0; r < 3; ++r) for (int c : {1, 2}) ec.push_back(sv[r * 4 + c]);
    EXPECT_TRUE(same(x.index({std::nullopt, cm}), {3, 2}, ec));
  }
  // All-false mask, 0-dim masks.
  Tensor x = make(sv, ss);
  EXPECT_EQ(x.index({zeros({3, 4}, {.dtype = kBool})}).sizes(), Shape({0}));
  Tensor t = full({}, true, {.dtype = kBool});
  EXPECT_EQ(x.index({t}).sizes(), Shape({1, 3, 4}));
  EXPECT_EQ(x.index({full({}, false, {.dtype = kBool})}).sizes(), Shape({0, 3, 4}));
  Tensor z = make({5.0}, {});
  EXPECT_TRUE(same(z.index({t}), {1}, {5.0}));
}

EMBER_DEVICE_TEST(Index, Errors) {
  Tensor x = make(vals(12), {3, 4});
  EXPECT_INDEX_ERROR(x.index({longs({0, 3})}), IndexError, "index 3 is out of bounds for dimension 0 with size 3");
  EXPECT_INDEX_ERROR(x.index({longs({-4})}), IndexError, "index -4 is out of bounds for dimension 0 with size 3");
  EXPECT_INDEX_ERROR(x.index({std::nullopt, longs({4})}), IndexError, "index 4 is out of bounds for dimension 1 with size 4");
  EXPECT_THROW_MSG(x.index({make({0.0}, {1}, kFloat32)}), IndexError,
                   "tensors used as indices must be long, int, byte or bool tensors");
  EXPECT_THROW_MSG(x.index({longs({0}).to(kInt16)}), IndexError,
                   "tensors used as indices must be long, int, byte or bool tensors");
  EXPECT_THROW_MSG(x.index({longs({0}), longs({0}), longs({0})}), IndexError,
                   "too many indices for tensor of dimension 2 (got 3)");
  EXPECT_THROW_MSG(x.index({zeros({4}, {.dtype = kBool})}), IndexError,
                   "The shape of the mask [4] at index 0 does not match the shape of the indexed tensor [3, 4] at index 0");
  EXPECT_THROW_MSG(x.index({longs({0, 1}), longs({0, 1, 2})}), IndexError,
                   "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]");
}

EMBER_DEVICE_TEST(IndexPut, AssignAccumulateBroadcast) {
  Shape ss{4, 3};
  auto sv = vals(12, 21);
  for (DType dt : {kFloat32, kFloat64, kInt64, kInt32})
    for (L l : kLayouts) {
      // x[I] = rows (values broadcast over rows: shape (3,)).
      Tensor x = laid(sv, ss, dt, l);
      std::vector<int64_t> iv = {2, -4};
      Tensor row = make({7, 8, 9}, {3}, dt);
      uint32_t v0 = x._version();
      x.index_put_({longs(iv)}, row);
      EXPECT_GT(x._version(), v0);
      std::vector<double> e = sv;
      for (int64_t r : {2, 0}) for (int c = 0; c < 3; ++c) e[r * 3 + c] = 7 + c;
      EXPECT_TRUE(same(x, ss, e)) << dtype_name(dt) << " " << lname(l);
      // accumulate with duplicates: x[I, J] += v
      Tensor y = laid(sv, ss, dt, l);
      std::vector<int64_t> I = {1, 1, 3, 1}, J = {2, 2, 0, -1};
      std::vector<double> vv = {1, 2, 3, 4};
      Tensor out = index_put(y, {longs(I), longs(J)}, make(vv, {4}, dt), true);
      std::vector<double> ea = sv;
      for (int k = 0; k < 4; ++k) ea[I[k] * 3 + (J[k] + 3) % 3] += vv[k];
      EXPECT_TRUE(same(out, ss, ea)) << "accumulate " << dtype_name(dt) << " " << lname(l);
      EXPECT_TRUE(same(y, ss, sv));  // out-of-place
      // accumulate=false with a 0-dim value through a bool mask.
      Tensor z = laid(sv, ss, dt, l);
      Tensor m = make(cast_vals(vals(12, 5), kBool), ss, kBool);
      z.index_put_({m}, make({-9}, {}, dt));
      auto mv = cast_vals(vals(12, 5), kBool);
      std::vector<double> em = sv;
      for (int k = 0; k < 12; ++k) if (mv[k]) em[k] = -9;
      EXPECT_TRUE(same(z, ss, em));
      // Non-adjacent: values shaped as the result (broadcast dims first).
      Tensor q = zeros({2, 3, 4}, {.dtype = dt});
      q.index_put_({longs({1, 0}), std::nullopt, longs({3, 2})}, make({1, 2, 3, 4, 5, 6}, {2, 3}, dt));
      std::vector<double> eq(24, 0.0);
      for (int b = 0; b < 2; ++b) for (int m2 = 0; m2 < 3; ++m2) eq[(b == 0 ? 1 : 0) * 12 + m2 * 4 + (b == 0 ? 3 : 2)] = 1 + b * 3 + m2;
      EXPECT_TRUE(same(q, {2, 3, 4}, eq));
    }
}

EMBER_DEVICE_TEST(IndexPut, Errors) {
  Tensor x = zeros({3, 4});
  EXPECT_INDEX_ERROR(x.index_put_({longs({0, 1, 5})}, ones({4})), IndexError,
                   "index 5 is out of bounds for dimension 0 with size 3");
  EXPECT_EQ(x.sum().item<double>(), 0.0);  // nothing written
  EXPECT_INDEX_ERROR(x.index_put_({longs({0}), longs({-5})}, ones({}), true), IndexError,
                   "index -5 is out of bounds for dimension 1 with size 4");
  // Values with extra leading 1-dims broadcast (as x[i] = v does in PyTorch).
  Tensor y = zeros({3, 4});
  y.index_put_({longs({2, 0})}, make({1, 2, 3, 4}, {1, 1, 4}, kFloat32));
  EXPECT_TRUE(same(y, {3, 4}, {1, 2, 3, 4, 0, 0, 0, 0, 1, 2, 3, 4}));
  EXPECT_THROW_MSG(x.index_put_({longs({0, 1})}, ones({2, 2, 4})), Error, "cannot be broadcast to indexing result");
  EXPECT_THROW_MSG(x.index_put_({longs({0, 1})}, ones({3})), Error,
                   "shape mismatch: value tensor of shape [3] cannot be broadcast to indexing result of shape [2, 4]");
  EXPECT_THROW_MSG(x.index_put_({longs({0})}, ones({4}, {.dtype = kFloat64})), Error,
                   "Index put requires the source and destination dtypes match");
  EXPECT_THROW_MSG(x.index_put_({make({0.0}, {1})}, ones({4})), IndexError,
                   "tensors used as indices must be long, int, byte or bool tensors");
  EXPECT_EQ(x.sum().item<double>(), 0.0);
}

// ------------------------------------------------------------------ masked_fill / masked_select

EMBER_DEVICE_TEST(MaskedFill, ScalarTensorBroadcastLayouts) {
  Shape ss{3, 4};
  auto sv = vals(12, 31);
  auto mv = cast_vals(vals(12, 32), kBool);
  for (DType dt : {kFloat32, kFloat64, kInt64, kBool, kFloat16, kInt32})
    for (L l : kLayouts) {
      auto v = cast_vals(sv, dt);
      Tensor x = laid(v, ss, dt, l);
      Tensor m = laid(mv, ss, kBool, l);
      std::vector<double> e = v;
      for (int k = 0; k < 12; ++k) if (mv[k]) e[k] = 1;
      EXPECT_TRUE(same(masked_fill(x, m, Scalar(1)), ss, e)) << dtype_name(dt) << " " << lname(l);
      EXPECT_TRUE(same(x.masked_fill(m, make({1}, {}, kFloat64)), ss, e));
      EXPECT_TRUE(same(x, ss, v));
      // A row mask broadcast over rows, in place.
      Tensor rm = make({0, 1, 0, 1}, {4}, kBool);
      uint32_t v0 = x._version();
      x.masked_fill_(rm, Scalar(0));
      EXPECT_GT(x._version(), v0);
      std::vector<double> er = v;
      for (int k = 0; k < 12; ++k) if (k % 4 == 1 || k % 4 == 3) er[k] = 0;
      EXPECT_TRUE(same(x, ss, er));
    }
  // Out of place broadcasts self up to the mask's shape.
  Tensor r = masked_fill(make({1, 2, 3}, {3}), make({1, 0}, {2, 1}, kBool), Scalar(-1.0));
  EXPECT_TRUE(same(r, {2, 3}, {-1, -1, -1, 1, 2, 3}));
  // 0-dim and empty.
  EXPECT_EQ(masked_fill(make({2.0}, {}), full({}, true, {.dtype = kBool}), Scalar(5.0)).item<double>(), 5.0);
  EXPECT_EQ(masked_fill(zeros({0, 3}), zeros({3}, {.dtype = kBool}), Scalar(1.0)).sizes(), Shape({0, 3}));
}

EMBER_DEVICE_TEST(MaskedFill, Errors) {
  Tensor x = zeros({3, 4});
  EXPECT_THROW_MSG(x.masked_fill_(zeros({3, 4}), Scalar(1.0)), Error, "masked_fill_ only supports boolean masks");
  EXPECT_THROW_MSG(x.masked_fill(zeros({3, 4}, {.dtype = kBool}), ones({2})), Error,
                   "masked_fill_ only supports a 0-dimensional value tensor");
  EXPECT_THROW(x.masked_fill_(zeros({2, 3, 4}, {.dtype = kBool}), Scalar(1.0)), Error);
  EXPECT_THROW(x.masked_fill_(zeros({3}, {.dtype = kBool}), Scalar(1.0)), Error);
}

EMBER_DEVICE_TEST(MaskedSelect, BroadcastAndErrors) {
  Tensor x = make({1, 2, 3}, {3});
  Tensor m = make({1, 0, 1, 0, 1, 0}, {2, 3}, kBool);
  EXPECT_TRUE(same(masked_select(x, m), {3}, {1, 3, 2}));
  EXPECT_TRUE(same(x.masked_select(make({0, 1, 1}, {3}, kBool)), {2}, {2, 3}));
  EXPECT_TRUE(same(masked_select(make({4.0}, {}), full({}, true, {.dtype = kBool})), {1}, {4}));
  EXPECT_THROW_MSG(masked_select(x, make({0, 1, 1}, {3}, kInt64)), Error, "expected BoolTensor for mask");
  EXPECT_THROW(masked_select(x, make({0, 1}, {2}, kBool)), Error);
}

// ------------------------------------------------------------------ nonzero

EMBER_DEVICE_TEST(Nonzero, MatchesReference) {
  Shape ss{3, 4};
  for (DType dt : kTestTypes)
    for (L l : kLayouts) {
      auto v = cast_vals(vals(12, 41, 2), dt);
      Tensor x = laid(v, ss, dt, l);
      Tensor nz = nonzero(x);
      std::vector<double> e;
      int64_t n = 0;
      for (int k = 0; k < 12; ++k) if (v[k] != 0) { e.push_back(k / 4); e.push_back(k % 4); ++n; }
      EXPECT_EQ(nz.dtype(), kInt64);
      EXPECT_TRUE(same(nz, {n, 2}, e)) << dtype_name(dt) << " " << lname(l);
    }
  // Large (parallel chunks), strided, 3-D.
  Shape big{7, 100, 150};
  auto v = vals(shape_numel(big), 43, 3);
  Tensor x = laid(v, big, kFloat32, L::Strided);
  std::vector<double> e;
  int64_t n = 0;
  for (int64_t k = 0; k < int64_t(v.size()); ++k)
    if (v[k] != 0) { auto p = unravel(k, big); e.insert(e.end(), p.begin(), p.end()); ++n; }
  EXPECT_TRUE(same(nonzero(x), {n, 3}, e));
  // NaN is nonzero, -0.0 is zero.
  EXPECT_TRUE(same(nonzero(make({-0.0, NAN, 0.0, 2.0}, {4})), {2, 1}, {1, 3}));
  // 0-dim and empty.
  EXPECT_EQ(nonzero(make({3.0}, {})).sizes(), Shape({1, 0}));
  EXPECT_EQ(nonzero(make({0.0}, {})).sizes(), Shape({0, 0}));
  EXPECT_EQ(nonzero(zeros({0, 5})).sizes(), Shape({0, 2}));
}

// ------------------------------------------------------------------ bincount / one_hot / embedding

EMBER_DEVICE_TEST(Bincount, CountsWeightsMinlengthErrors) {
  std::vector<int64_t> xv = {1, 3, 1, 0, 5, 1};
  for (DType dt : {kInt64, kInt32, kUInt8}) {
    Tensor x = longs(xv).to(dt);
    Tensor c = bincount(x);
    EXPECT_EQ(c.dtype(), kInt64);
    EXPECT_TRUE(same(c, {6}, {1, 3, 0, 1, 0, 1}));
    EXPECT_TRUE(same(bincount(x, std::nullopt, 8), {8}, {1, 3, 0, 1, 0, 1, 0, 0}));
    Tensor w = make({0.5, 1, 2, 4, 8, 16}, {6}, kFloat32);
    Tensor cw = bincount(x, w);
    EXPECT_EQ(cw.dtype(), kFloat32);
    EXPECT_TRUE(same(cw, {6}, {4, 18.5, 0, 1, 0, 8}));
    EXPECT_EQ(bincount(x, w.to(kFloat64)).dtype(), kFloat64);
  }
  // Strided input.
  Tensor s = longs({2, 9, 2, 9, 0, 9}).slice(0, 0, std::nullopt, 2);
  EXPECT_TRUE(same(bincount(s), {3}, {1, 0, 2}));
  EXPECT_TRUE(same(bincount(longs({}), std::nullopt, 3), {3}, {0, 0, 0}));
  EXPECT_EQ(bincount(longs({})).sizes(), Shape({0}));
  EXPECT_THROW_MSG(bincount(longs({1, -1})), Error, "bincount only supports 1-d non-negative integral inputs.");
  EXPECT_THROW_MSG(bincount(longs({1, 1}, {1, 2})), Error, "bincount only supports 1-d non-negative integral inputs.");
  EXPECT_THROW_MSG(bincount(make({1.0}, {1})), Error, "bincount only supports 1-d non-negative integral inputs.");
  EXPECT_THROW_MSG(bincount(longs({1, 2}), make({1.0}, {1})), Error, "weights should be 1-d and have the same length as input");
  EXPECT_THROW_MSG(bincount(longs({1}), std::nullopt, -1), Error, "minlength should be >= 0");
}

EMBER_DEVICE_TEST(OneHot, InferGivenErrors) {
  Tensor x = longs({0, 2, 1, 2}, {2, 2});
  Tensor o = one_hot(x);
  EXPECT_EQ(o.dtype(), kInt64);
  EXPECT_TRUE(same(o, {2, 2, 3}, {1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1}));
  EXPECT_TRUE(same(one_hot(longs({1}), 4), {1, 4}, {0, 1, 0, 0}));
  EXPECT_TRUE(same(one_hot(longs({3}, {})), {4}, {0, 0, 0, 1}));
  EXPECT_EQ(one_hot(longs({}), 5).sizes(), Shape({0, 5}));
  EXPECT_THROW_MSG(one_hot(longs({})), Error, "Can not infer total number of classes from empty tensor.");
  EXPECT_THROW_MSG(one_hot(longs({-1, 0})), Error, "Class values must be non-negative.");
  EXPECT_THROW_MSG(one_hot(longs({3}), 3), Error, "Class values must be smaller than num_classes.");
  EXPECT_THROW_MSG(one_hot(longs({1}).to(kInt32)), Error, "one_hot is only applicable to index tensor of type LongTensor.");
}

EMBER_DEVICE_TEST(Embedding, LooksUpRows) {
  auto wv = vals(10 * 4, 51);
  Tensor w = make(wv, {10, 4}, kFloat32);
  std::vector<int64_t> iv = {9, 0, 3, 3, 7, 1};
  for (DType idt : {kInt64, kInt32}) {
    Tensor out = embedding(w, longs(iv, {2, 3}).to(idt), 0);
    std::vector<double> e;
    for (auto i : iv) for (int c = 0; c < 4; ++c) e.push_back(wv[i * 4 + c]);
    EXPECT_TRUE(same(out, {2, 3, 4}, e));
  }
  EXPECT_TRUE(same(embedding(w, longs({2}, {})), {4}, {wv[8], wv[9], wv[10], wv[11]}));
  EXPECT_INDEX_ERROR(embedding(w, longs({10})), IndexError, "index 10 is out of bounds for dimension 0 with size 10");
  EXPECT_INDEX_ERROR(embedding(w, longs({-1})), IndexError, "index -1 is out of bounds for dimension 0 with size 10");
  EXPECT_THROW_MSG(embedding(w, make({1.0}, {1})), Error, "'indices' to have one of the following scalar types: Long, Int");
  EXPECT_THROW_MSG(embedding(w.reshape({40}), longs({1})), Error, "'weight' must be 2-D");
  EXPECT_THROW_MSG(embedding(w, longs({1}), 10), Error, "Padding_idx must be within num_embeddings");
}

// Large enough for the threaded walk (walk_scatter): duplicates along every dim land in the
// same sums as the serial reference, and float32 results equal the one-thread run bit for bit
// (each element of self gets its contributions on one thread, in order).
TEST(Scatter, ThreadedScatterAddMatchesTheSerialWalk) {
  Shape ss{30, 40, 50};
  for (int64_t d = 0; d < 3; ++d) {
    Shape is = ss;
    is[size_t(d)] = 60;  // 60 index rows into 3 targets along d: ~20 adds per element of self
    const int64_t n = shape_numel(is);
    std::vector<int64_t> iv(static_cast<size_t>(n));
    for (int64_t f = 0; f < n; ++f) iv[size_t(f)] = (f * 7919 + f / 13) % 3;
    auto srcv = vals(n, 4, 9);
    auto sv = vals(shape_numel(ss), 5, 9);
    Tensor idx = longs(iv, is);
    Tensor exact = scatter_add(make(sv, ss), d, idx, make(srcv, is));  // small integers: exact in float64
    EXPECT_TRUE(same(exact, ss, ref_scatter(sv, ss, d, iv, is, srcv, is, true))) << "dim " << d;

    Tensor src32 = make(srcv, is, kFloat32) / 7.0;  // fractions: the order of the adds shows in the bits
    Tensor self32 = make(sv, ss, kFloat32) / 3.0;
    const int threads = get_num_threads();
    set_num_threads(1);
    Tensor serial = scatter_add(self32, d, idx, src32);
    set_num_threads(std::max(2, threads));
    Tensor threaded = scatter_add(self32, d, idx, src32);
    set_num_threads(threads);
    EXPECT_TRUE(equal(serial, threaded)) << "dim " << d;
  }
}
