// mm, bmm, addmm, baddbmm, dot, mv, outer and matmul against naive float64 references.
// Inputs are small with values in [-1, 1], so float32 GEMM error (about K * 6e-8) stays far
// inside assert_close's float32 tolerance.
#include <cmath>
#include <limits>
#include <random>

#include "test_utils.h"

using namespace ember;
using namespace ember::testing;

namespace {

// torch's CUDA has no integer matrix products ("addmm_cuda" not implemented for 'Long', which
// Mm.Errors checks there): on CUDA the dtype loops keep the floating and complex types.
std::vector<DType> products_on(Device d, std::vector<DType> dts) {
  if (d.is_cuda()) std::erase_if(dts, [](DType t) { return !is_floating(t) && !is_complex(t); });
  return dts;
}


// Random values of the given dtype: uniform in [-1, 1] for floats, integers in [-4, 4]
// ([0, 4] for uint8) otherwise.
Tensor rnd(IntArrayRef shape, DType dt, uint64_t seed) {
  std::mt19937_64 g(seed * 7919 + 17);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(size_t(shape_numel(shape)));
  for (auto& x : v) {
    x = u(g);
    if (!is_floating(dt)) x = dt == kUInt8 ? std::round(std::abs(x) * 4) : std::round(x * 4);
  }
  return tensor(v, {.dtype = kFloat64}).view(shape).to(dt);
}

// The same logical rows x cols matrix in several memory layouts.
enum class MatLayout { Contiguous, Transposed, ColSliced, RowSliced, Expanded };
std::vector<MatLayout> mat_layouts() {
  return {MatLayout::Contiguous, MatLayout::Transposed, MatLayout::ColSliced, MatLayout::RowSliced,
          MatLayout::Expanded};
}
const char* mat_layout_name(MatLayout l) {
  switch (l) {
    case MatLayout::Contiguous: return "contiguous";
    case MatLayout::Transposed: return "transposed";
    case MatLayout::ColSliced: return "col-sliced";
    case MatLayout::RowSliced: return "row-sliced";
    case MatLayout::Expanded: return "expanded";
  }
  return "?";
}
Tensor make_mat(int64_t r, int64_t c, DType dt, MatLayout l, uint64_t seed) {
  switch (l) {
    case MatLayout::Contiguous: return rnd({r, c}, dt, seed);
    case MatLayout::Transposed: return rnd({c, r}, dt, seed).t();                       // column-major
    case MatLayout::ColSliced: return rnd({r, 2 * c}, dt, seed).slice(1, 0, std::nullopt, 2);  // cs = 2
    case MatLayout::RowSliced: return rnd({2 * r, c}, dt, seed).slice(0, 1, std::nullopt, 2);  // ld = c, offset
    case MatLayout::Expanded: return rnd({1, c}, dt, seed).expand({r, c});              // rs = 0
  }
  return {};
}

// out = a @ b for a (M x K), b (K x N), both as Refs.
Ref ref_mm(const Ref& a, const Ref& b) {
  int64_t M = a.shape[0], K = a.shape[1], N = b.shape[1];
  Ref out{{M, N}, std::vector<double>(size_t(M * N), 0.0)};
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += a.v[size_t(i * K + k)] * b.v[size_t(k * N + j)];
      out.v[size_t(i * N + j)] = s;
    }
  return out;
}

// torch.matmul semantics, written out independently: 1-D operands become a row / column,
// batch dims broadcast, and the added dims are removed.
Ref ref_matmul(const Ref& a, const Ref& b) {
  const bool a1 = a.shape.size() == 1, b1 = b.shape.size() == 1;
  Shape as = a1 ? Shape{1, a.shape[0]} : a.shape;
  Shape bs = b1 ? Shape{b.shape[0], 1} : b.shape;
  Shape ba(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  Shape batch = broadcast_shapes(ba, bb);
  int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  int64_t nb = shape_numel(batch);
  Shape full = batch;
  full.push_back(M);
  full.push_back(N);
  Ref out{full, std::vector<double>(size_t(nb * M * N), 0.0)};
  // flat index of element (batch idx, r, c) of an operand with batch shape `own`.
  auto at = [&](const Ref& x, const Shape& own_batch, const std::vector<int64_t>& bidx, int64_t rows, int64_t cols,
                int64_t r, int64_t c) {
    int64_t flat = 0, off = int64_t(bidx.size()) - int64_t(own_batch.size());
    for (size_t d = 0; d < own_batch.size(); ++d)
      flat = flat * own_batch[d] + (own_batch[d] == 1 ? 0 : bidx[d + size_t(off)]);
    return x.v[size_t((flat * rows + r) * cols + c)];
  };
  for (int64_t bi = 0; bi < nb; ++bi) {
    auto bidx = unravel(bi, batch);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += at(a, ba, bidx, M, K, i, k) * at(b, bb, bidx, K, N, k, j);
        out.v[size_t((bi * M + i) * N + j)] = s;
      }
  }
  Shape final_shape = batch;
  if (!a1) final_shape.push_back(M);
  if (!b1) final_shape.push_back(N);
  out.shape = final_shape;
  return out;
}

// Tolerance dtype for a result: integer results must be exact.
::testing::AssertionResult matches(const Tensor& got, const Ref& want) { return close_to(got, want); }

std::vector<DType> mm_dtypes() { return {kFloat32, kFloat64, kInt64, kInt32, kInt16, kInt8, kUInt8, kFloat16, kBFloat16}; }

}  // namespace

// ---------------------------------------------------------------- mm

EMBER_DEVICE_TEST(Mm, AllDtypesAndLayouts) {
  for (DType dt : products_on(device(), mm_dtypes()))
    for (MatLayout la : mat_layouts())
      for (MatLayout lb : mat_layouts()) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " " + mat_layout_name(la) + " @ " + mat_layout_name(lb));
        Tensor a = make_mat(5, 7, dt, la, 1), b = make_mat(7, 3, dt, lb, 2);
        Tensor c = mm(a, b);
        EXPECT_EQ(c.dtype(), dt);
        EXPECT_TRUE(c.is_contiguous());
        EXPECT_TRUE(matches(c, ref_mm(ref_of(a), ref_of(b))));
        EXPECT_TRUE(matches(a.mm(b), ref_mm(ref_of(a), ref_of(b))));
      }
}

EMBER_DEVICE_TEST(Mm, LargerThanBlasBlocksFloat64) {
  // Big enough for OpenBLAS to use its threaded, blocked path.
  Tensor a = rnd({150, 130}, kFloat64, 3), b = rnd({130, 170}, kFloat64, 4);
  EXPECT_TRUE(matches(mm(a, b), ref_mm(ref_of(a), ref_of(b))));
  EXPECT_TRUE(matches(mm(b.t(), a.t()), ref_mm(ref_of(b.t()), ref_of(a.t()))));
}

EMBER_DEVICE_TEST(Mm, LargerFloat32WithLooserTolerance) {
  // K = 300: float32 rounding grows like sqrt(K) * eps * |sum of products|; compare with a
  // tolerance scaled to the sum length (the default one assumes short sums).
  Tensor a = rnd({64, 300}, kFloat32, 5), b = rnd({300, 48}, kFloat32, 6);
  Ref want = ref_mm(ref_of(a), ref_of(b));
  auto got = mm(a, b).tolist<double>();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want.v[i], 300 * 6e-8 * 4) << i;
}

EMBER_DEVICE_TEST(Mm, Int64WrapsAndIsExact) {
  EMBER_SKIP_ON_CUDA("torch's CUDA has no int64 matmul (\"addmm_cuda\" not implemented for 'Long')");
  Tensor a = tensor({{int64_t(1) << 40, 3}, {-5, 7}});
  Tensor b = tensor({{int64_t(1) << 30, 2}, {11, -13}});
  auto v = mm(a, b).tolist<int64_t>();
  // 2^40 * 2^30 overflows: it wraps modulo 2^64, like PyTorch's int64 arithmetic.
  EXPECT_EQ(v[0], 33);  // 2^70 + 33 wraps to 33 modulo 2^64
  EXPECT_EQ(v[1], (int64_t(1) << 41) - 39);
  EXPECT_EQ(v[2], -5 * (int64_t(1) << 30) + 77);
  EXPECT_EQ(v[3], -10 - 91);
}

EMBER_DEVICE_TEST(Mm, EmptyDims) {
  for (DType dt : {kFloat32, kFloat64, kInt64, kFloat16}) {
    Tensor r = mm(rnd({0, 3}, dt, 1), rnd({3, 4}, dt, 2));
    EXPECT_EQ(r.sizes(), (Shape{0, 4}));
    r = mm(rnd({2, 3}, dt, 1), rnd({3, 0}, dt, 2));
    EXPECT_EQ(r.sizes(), (Shape{2, 0}));
    // K = 0: an empty sum, so zeros (the output buffer's old contents must not leak).
    r = mm(rnd({2, 0}, dt, 1), rnd({0, 3}, dt, 2));
    EXPECT_EQ(r.sizes(), (Shape{2, 3}));
    EXPECT_TRUE(matches(r, Ref{{2, 3}, std::vector<double>(6, 0.0)}));
  }
}

EMBER_DEVICE_TEST(Mm, Errors) {
  Tensor f = rnd({2, 3}, kFloat32, 1);
  EXPECT_THROW_MSG(mm(rnd({3}, kFloat32, 1), f), Error, "self must be a matrix");
  EXPECT_THROW_MSG(mm(f, rnd({3}, kFloat32, 1)), Error, "mat2 must be a matrix");
  EXPECT_THROW_MSG(mm(f, rnd({4, 5}, kFloat32, 1)), Error, "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
  EXPECT_THROW_MSG(mm(f, rnd({3, 5}, kFloat64, 1)), Error,
                   "expected m1 and m2 to have the same dtype, but got: float != double");
  EXPECT_THROW_MSG(mm(rnd({2, 2}, kInt64, 1), rnd({2, 2}, kInt32, 1)), Error,
                   "expected m1 and m2 to have the same dtype, but got: long int != int");
  Tensor bo = zeros({2, 2}, {.dtype = kBool});
  EXPECT_THROW_MSG(mm(bo, bo), Error, kernel_name(device(), "addmm_impl_cpu_", "addmm_cuda") + " not implemented for");
}

// ---------------------------------------------------------------- addmm

EMBER_DEVICE_TEST(Addmm, BetaAlphaAndSelfBroadcast) {
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16})
    for (Shape self_shape : {Shape{4, 3}, Shape{3}, Shape{1, 3}, Shape{4, 1}, Shape{}})
      for (auto [beta, alpha] : {std::pair{1.0, 1.0}, std::pair{0.5, -2.0}, std::pair{0.0, 1.5}}) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " beta " + std::to_string(beta) + " alpha " + std::to_string(alpha));
        Tensor self = rnd(self_shape, dt, 9), m1 = make_mat(4, 5, dt, MatLayout::Transposed, 1),
               m2 = make_mat(5, 3, dt, MatLayout::ColSliced, 2);
        Tensor r = addmm(self, m1, m2, beta, alpha);
        Ref p = ref_mm(ref_of(m1), ref_of(m2));
        Ref want = ref_binary(ref_of(self), p, [&](double s, double x) { return beta * s + alpha * x; });
        EXPECT_EQ(r.dtype(), dt);
        EXPECT_TRUE(matches(r, want));
      }
}

EMBER_DEVICE_TEST(Addmm, BetaZeroIgnoresNaNInSelf) {
  for (DType dt : {kFloat32, kFloat64, kFloat16}) {
    Tensor self = full({2, 3}, std::numeric_limits<double>::quiet_NaN(), {.dtype = dt});
    Tensor m1 = rnd({2, 4}, dt, 1), m2 = rnd({4, 3}, dt, 2);
    Tensor r = addmm(self, m1, m2, 0, 1);
    EXPECT_TRUE(matches(r, ref_mm(ref_of(m1), ref_of(m2))));
    // With beta != 0 the NaN propagates.
    auto v = addmm(self, m1, m2, 1, 1).tolist<double>();
    for (double x : v) EXPECT_TRUE(std::isnan(x));
  }
}

EMBER_DEVICE_TEST(Addmm, IntegerAndEmptyK) {
  EMBER_SKIP_ON_CUDA("torch's CUDA has no int64 addmm (\"addmm_cuda\" not implemented for 'Long')");
  Tensor self = rnd({3, 2}, kInt64, 3), m1 = rnd({3, 4}, kInt64, 4), m2 = rnd({4, 2}, kInt64, 5);
  Ref want = ref_binary(ref_of(self), ref_mm(ref_of(m1), ref_of(m2)), [](double s, double x) { return 2 * s + 3 * x; });
  EXPECT_TRUE(matches(addmm(self, m1, m2, 2, 3), want));
  EXPECT_TRUE(matches(self.addmm(m1, m2, 2, 3), want));
  // K = 0: result is beta * self.
  Tensor s = rnd({2, 3}, kFloat64, 6);
  Tensor r = addmm(s, rnd({2, 0}, kFloat64, 1), rnd({0, 3}, kFloat64, 2), 0.5, 2.0);
  EXPECT_TRUE(matches(r, ref_unary(ref_of(s), [](double x) { return 0.5 * x; })));
}

EMBER_DEVICE_TEST(Addmm, Errors) {
  Tensor m1 = rnd({2, 3}, kFloat32, 1), m2 = rnd({3, 5}, kFloat32, 2);
  EXPECT_THROW_MSG(addmm(rnd({2, 5}, kFloat64, 1), m1, m2), Error, "self and mat2 must have the same dtype");
  EXPECT_THROW_MSG(addmm(rnd({3, 5}, kFloat32, 1), m1, m2), Error,
                   "The expanded size of the tensor (2) must match the existing size (3) at non-singleton dimension 0.  "
                   "Target sizes: [2, 5].  Tensor sizes: [3, 5]");
  EXPECT_THROW_MSG(addmm(rnd({2, 5}, kFloat32, 1), rnd({2, 3, 1}, kFloat32, 1), m2), Error,
                   "mat1 must be a matrix, got 3-D tensor");
  EXPECT_THROW_MSG(addmm(rnd({2, 5}, kFloat32, 1), m1, rnd({4, 5}, kFloat32, 1)), Error,
                   "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
  EXPECT_THROW_MSG(addmm(rnd({2, 2}, kInt64, 1), rnd({2, 2}, kInt64, 1), rnd({2, 2}, kInt64, 1), 1, 1.5), Error,
                   "For integral input tensors, argument alpha must not be a floating point number.");
}

// ---------------------------------------------------------------- bmm, baddbmm

namespace {
Ref ref_bmm(const Ref& a, const Ref& b) { return ref_matmul(a, b); }
}  // namespace

EMBER_DEVICE_TEST(Bmm, LayoutsAndDtypes) {
  for (DType dt : products_on(device(), {kFloat32, kFloat64, kInt64, kFloat16, kBFloat16})) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor a = rnd({4, 3, 5}, dt, 1), b = rnd({4, 5, 2}, dt, 2);
    std::vector<std::pair<Tensor, Tensor>> cases = {
        {a, b},
        {rnd({4, 5, 3}, dt, 3).transpose(1, 2), rnd({4, 2, 5}, dt, 4).transpose(1, 2)},  // per-matrix transposes
        {rnd({8, 3, 5}, dt, 5).slice(0, 0, std::nullopt, 2), b},                         // strided batch
        {rnd({3, 4, 5}, dt, 6).permute({1, 0, 2}), b},                                   // batch not outermost
        {rnd({1, 3, 5}, dt, 7).expand({4, 3, 5}), rnd({4, 5, 4}, dt, 8).slice(2, 0, std::nullopt, 2)},  // stride-0 batch, cs 2
    };
    for (auto& [x, y] : cases) {
      Tensor r = bmm(x, y);
      EXPECT_EQ(r.dtype(), dt);
      EXPECT_TRUE(matches(r, ref_bmm(ref_of(x), ref_of(y))));
    }
    EXPECT_TRUE(matches(a.bmm(b), ref_bmm(ref_of(a), ref_of(b))));
  }
}

EMBER_DEVICE_TEST(Bmm, ManySmallAndFewLargeMatrices) {
  // Many small matrices: split across threads by batch. Few large ones: BLAS threads each.
  Tensor a = rnd({64, 6, 7}, kFloat32, 1), b = rnd({64, 7, 5}, kFloat32, 2);
  EXPECT_TRUE(matches(bmm(a, b), ref_bmm(ref_of(a), ref_of(b))));
  Tensor c = rnd({2, 70, 80}, kFloat64, 3), d = rnd({2, 80, 66}, kFloat64, 4);
  EXPECT_TRUE(matches(bmm(c, d), ref_bmm(ref_of(c), ref_of(d))));
  if (device().is_cuda()) return;  // no integer bmm on torch's CUDA ("baddbmm_cuda" not implemented for 'Int')
  Tensor e = rnd({33, 9, 4}, kInt32, 5), f = rnd({33, 4, 11}, kInt32, 6);
  EXPECT_TRUE(matches(bmm(e, f), ref_bmm(ref_of(e), ref_of(f))));
}

EMBER_DEVICE_TEST(Bmm, EmptyDims) {
  EXPECT_EQ(bmm(rnd({0, 2, 3}, kFloat32, 1), rnd({0, 3, 4}, kFloat32, 2)).sizes(), (Shape{0, 2, 4}));
  Tensor r = bmm(rnd({2, 2, 0}, kFloat32, 1), rnd({2, 0, 4}, kFloat32, 2));
  EXPECT_TRUE(matches(r, Ref{{2, 2, 4}, std::vector<double>(16, 0.0)}));
}

EMBER_DEVICE_TEST(Bmm, Errors) {
  Tensor a = rnd({2, 2, 3}, kFloat32, 1);
  EXPECT_THROW_MSG(bmm(rnd({2, 3}, kFloat32, 1), a), Error, "batch1 must be a 3D tensor");
  EXPECT_THROW_MSG(bmm(a, rnd({3, 4}, kFloat32, 1)), Error, "batch2 must be a 3D tensor");
  EXPECT_THROW_MSG(bmm(a, rnd({2, 4, 5}, kFloat32, 1)), Error,
                   "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4].");
  EXPECT_THROW_MSG(bmm(a, rnd({3, 3, 5}, kFloat32, 1)), Error,
                   "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [3, 3].");
  EXPECT_THROW_MSG(bmm(a, rnd({2, 3, 5}, kFloat64, 1)), Error, "expected scalar type Float but found Double");
}

EMBER_DEVICE_TEST(Baddbmm, Values) {
  for (DType dt : products_on(device(), {kFloat32, kFloat64, kInt64})) {
    Tensor self = rnd({3, 1, 4}, dt, 1), b1 = rnd({3, 2, 5}, dt, 2), b2 = rnd({3, 5, 4}, dt, 3);
    Ref p = ref_bmm(ref_of(b1), ref_of(b2));
    double beta = is_floating(dt) ? 0.5 : 2, alpha = is_floating(dt) ? -1.5 : 3;
    Tensor r = is_floating(dt) ? baddbmm(self, b1, b2, 0.5, -1.5) : baddbmm(self, b1, b2, 2, 3);
    EXPECT_TRUE(matches(r, ref_binary(ref_of(self), p, [&](double s, double x) { return beta * s + alpha * x; })));
    EXPECT_TRUE(matches(baddbmm(self, b1, b2), ref_binary(ref_of(self), p, [](double s, double x) { return s + x; })));
  }
  Tensor nan_self = full({2, 2, 2}, std::numeric_limits<double>::quiet_NaN());
  Tensor b1 = rnd({2, 2, 3}, kFloat32, 4), b2 = rnd({2, 3, 2}, kFloat32, 5);
  EXPECT_TRUE(matches(baddbmm(nan_self, b1, b2, 0, 1), ref_bmm(ref_of(b1), ref_of(b2))));
  EXPECT_THROW_MSG(baddbmm(rnd({3, 2, 2}, kFloat32, 1), b1, b2), Error,
                   "The expanded size of the tensor (2) must match the existing size (3) at non-singleton dimension 0.");
  EXPECT_THROW_MSG(baddbmm(rnd({2, 2, 2}, kFloat64, 1), b1, b2), Error,
                   "Input dtypes must be the same, got: input double, batch1: float, batch2: float");
}

// ---------------------------------------------------------------- dot, mv, outer

namespace {
double ref_dot(const Ref& a, const Ref& b) {
  double s = 0;
  for (size_t i = 0; i < a.v.size(); ++i) s += a.v[i] * b.v[i];
  return s;
}
}  // namespace

EMBER_DEVICE_TEST(Dot, DtypesAndStrides) {
  for (DType dt : products_on(device(), {kFloat32, kFloat64, kInt64, kInt32, kUInt8, kFloat16, kBFloat16})) {
    SCOPED_TRACE(dtype_name(dt));
    std::vector<std::pair<Tensor, Tensor>> cases = {
        {rnd({7}, dt, 1), rnd({7}, dt, 2)},
        {rnd({14}, dt, 3).slice(0, 1, std::nullopt, 2), rnd({3, 7}, dt, 4).select(0, 1)},
        {rnd({7, 3}, dt, 5).select(1, 2), rnd({1}, dt, 6).expand({7})},  // stride 3, stride 0
        {rnd({1}, dt, 7), rnd({1}, dt, 8)},
    };
    for (auto& [x, y] : cases) {
      Tensor r = dot(x, y);
      EXPECT_EQ(r.dim(), 0);
      EXPECT_EQ(r.dtype(), dt);
      EXPECT_TRUE(matches(r, Ref{{}, {ref_dot(ref_of(x), ref_of(y))}}));
      EXPECT_TRUE(matches(x.dot(y), Ref{{}, {ref_dot(ref_of(x), ref_of(y))}}));
    }
    EXPECT_TRUE(matches(dot(rnd({0}, dt, 1), rnd({0}, dt, 2)), Ref{{}, {0.0}}));
  }
}

EMBER_DEVICE_TEST(Dot, Errors) {
  EXPECT_THROW_MSG(dot(rnd({2, 2}, kFloat32, 1), rnd({2}, kFloat32, 1)), Error,
                   "1D tensors expected, but got 2D and 1D tensors");
  EXPECT_THROW_MSG(dot(rnd({3}, kFloat32, 1), rnd({4}, kFloat32, 1)), Error,
                   "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements, but "
                   "got 3 and 4 elements respectively");
  EXPECT_THROW_MSG(dot(rnd({3}, kFloat32, 1), rnd({3}, kFloat64, 1)), Error,
                   "dot : expected both vectors to have same dtype, but found Float and Double");
}

EMBER_DEVICE_TEST(Mv, LayoutsAndDtypes) {
  for (DType dt : products_on(device(), {kFloat32, kFloat64, kInt64, kFloat16}))
    for (MatLayout l : mat_layouts()) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + mat_layout_name(l));
      Tensor m = make_mat(4, 6, dt, l, 1);
      for (Tensor v : {rnd({6}, dt, 2), rnd({12}, dt, 3).slice(0, 0, std::nullopt, 2)}) {
        Tensor r = mv(m, v);
        EXPECT_EQ(r.sizes(), (Shape{4}));
        EXPECT_TRUE(matches(r, ref_matmul(ref_of(m), ref_of(v))));
      }
    }
  EXPECT_EQ(mv(rnd({0, 3}, kFloat32, 1), rnd({3}, kFloat32, 2)).sizes(), (Shape{0}));
  EXPECT_TRUE(matches(mv(rnd({2, 0}, kFloat32, 1), rnd({0}, kFloat32, 2)), Ref{{2}, {0.0, 0.0}}));
  EXPECT_THROW_MSG(mv(rnd({3}, kFloat32, 1), rnd({3}, kFloat32, 1)), Error,
                   "vector + matrix @ vector expected, got 1, 1, 1");
  EXPECT_THROW_MSG(mv(rnd({2, 3}, kFloat32, 1), rnd({2}, kFloat32, 1)), Error, "size mismatch, got 2, 2x3,2");
  EXPECT_THROW_MSG(mv(rnd({2, 3}, kFloat32, 1), rnd({3}, kFloat64, 1)), Error,
                   "expected scalar type Float but found Double");
}

EMBER_DEVICE_TEST(Outer, ValuesAndPromotion) {
  Tensor a = rnd({8}, kFloat32, 1).slice(0, 0, std::nullopt, 2), b = rnd({3}, kFloat32, 2);
  Tensor r = outer(a, b);
  Ref want = ref_matmul(Ref{{4, 1}, ref_of(a).v}, Ref{{1, 3}, ref_of(b).v});
  EXPECT_TRUE(matches(r, want));
  EXPECT_TRUE(matches(a.outer(b), want));
  Tensor i = rnd({4}, kInt64, 3);
  Tensor ri = outer(i, b);  // int64 x float32 -> float32, as torch.outer
  EXPECT_EQ(ri.dtype(), kFloat32);
  EXPECT_TRUE(matches(ri, ref_matmul(Ref{{4, 1}, ref_of(i).v}, Ref{{1, 3}, ref_of(b).v})));
  EXPECT_EQ(outer(rnd({0}, kFloat32, 1), b).sizes(), (Shape{0, 3}));
  EXPECT_THROW_MSG(outer(rnd({2, 2}, kFloat32, 1), b), Error, "outer: Expected 1-D argument self, but got 2-D");
  EXPECT_THROW_MSG(outer(b, rnd({2, 2}, kFloat32, 1)), Error, "outer: Expected 1-D argument vec2, but got 2-D");
}

// ---------------------------------------------------------------- matmul

EMBER_DEVICE_TEST(Matmul, EveryRankCombination) {
  // Shapes by rank for a contraction of length 4: left (..., n=3, 4), right (..., 4, p=2).
  auto left = [](int r) -> Shape {
    switch (r) { case 1: return {4}; case 2: return {3, 4}; case 3: return {5, 3, 4}; default: return {2, 1, 3, 4}; }
  };
  auto right = [](int r) -> Shape {
    switch (r) { case 1: return {4}; case 2: return {4, 2}; case 3: return {5, 4, 2}; default: return {2, 1, 4, 2}; }
  };
  for (DType dt : products_on(device(), {kFloat32, kFloat64, kInt64}))
    for (int r1 = 1; r1 <= 4; ++r1)
      for (int r2 = 1; r2 <= 4; ++r2) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " rank " + std::to_string(r1) + " @ rank " + std::to_string(r2));
        Tensor a = rnd(left(r1), dt, 10 + r1), b = rnd(right(r2), dt, 20 + r2);
        Tensor r = matmul(a, b);
        EXPECT_EQ(r.dtype(), dt);
        EXPECT_TRUE(matches(r, ref_matmul(ref_of(a), ref_of(b))));
        EXPECT_TRUE(matches(a.matmul(b), ref_matmul(ref_of(a), ref_of(b))));
      }
}

EMBER_DEVICE_TEST(Matmul, ShapesAsPyTorch) {
  auto shape = [](Shape x, Shape y) { return matmul(rnd(x, kFloat32, 1), rnd(y, kFloat32, 2)).sizes(); };
  EXPECT_EQ(shape({4}, {4}), (Shape{}));
  EXPECT_EQ(shape({3, 4}, {4}), (Shape{3}));
  EXPECT_EQ(shape({4}, {4, 2}), (Shape{2}));
  EXPECT_EQ(shape({2, 1, 3, 4}, {5, 4, 2}), (Shape{2, 5, 3, 2}));
  EXPECT_EQ(shape({10, 3, 4}, {4}), (Shape{10, 3}));
  EXPECT_EQ(shape({4}, {10, 4, 5}), (Shape{10, 5}));
  EXPECT_EQ(shape({10, 3, 4}, {4, 5}), (Shape{10, 3, 5}));
  EXPECT_EQ(shape({3, 4}, {10, 4, 5}), (Shape{10, 3, 5}));
  EXPECT_EQ(shape({0, 3, 4}, {4, 5}), (Shape{0, 3, 5}));
  EXPECT_EQ(shape({2, 3, 0}, {0, 5}), (Shape{2, 3, 5}));
  EXPECT_EQ(shape({3, 0}, {2, 0, 5}), (Shape{2, 3, 5}));
}

EMBER_DEVICE_TEST(Matmul, NonContiguousAndBroadcastBatches) {
  for (DType dt : {kFloat32, kFloat64}) {
    std::vector<std::pair<Tensor, Tensor>> cases = {
        // (2,1,3,4) @ (5,4,2) -> (2,5,3,2), the documented broadcast example.
        {rnd({2, 1, 3, 4}, dt, 1), rnd({5, 4, 2}, dt, 2)},
        // batch operand that cannot be folded without a copy (transposed batch dims).
        {rnd({3, 2, 4}, dt, 3).transpose(0, 1), rnd({4, 5}, dt, 4)},
        // foldable but with transposed matrices on the right
        {rnd({2, 3, 4}, dt, 5), rnd({5, 4}, dt, 6).t()},
        // 1-D @ batch whose transposed view folds (t2 made from a transpose)
        {rnd({4}, dt, 7), rnd({3, 2, 4}, dt, 8).transpose(1, 2)},
        // strided 1-D and batched 1-D right
        {rnd({2, 3, 8}, dt, 9).slice(2, 0, std::nullopt, 2), rnd({8}, dt, 10).slice(0, 1, std::nullopt, 2)},
        // expanded batch on both sides
        {rnd({1, 3, 4}, dt, 11).expand({6, 3, 4}), rnd({6, 1, 4, 2}, dt, 12)},
        // zero-size batch
        {rnd({0, 3, 4}, dt, 13), rnd({1, 4, 2}, dt, 14)},
    };
    for (auto& [x, y] : cases) {
      SCOPED_TRACE(::testing::PrintToString(x.sizes()) + " @ " + ::testing::PrintToString(y.sizes()));
      EXPECT_TRUE(matches(matmul(x, y), ref_matmul(ref_of(x), ref_of(y))));
    }
  }
  // Half precision through the float32 path.
  Tensor h1 = rnd({2, 3, 4}, kFloat16, 1), h2 = rnd({2, 4, 5}, kFloat16, 2);
  Tensor r = matmul(h1, h2);
  EXPECT_EQ(r.dtype(), kFloat16);
  EXPECT_TRUE(matches(r, ref_matmul(ref_of(h1), ref_of(h2))));
}

EMBER_DEVICE_TEST(Matmul, Errors) {
  EXPECT_THROW_MSG(matmul(scalar_tensor(1.0), rnd({2, 2}, kFloat32, 1)), Error,
                   "both arguments to matmul need to be at least 1D, but they are 0D and 2D");
  EXPECT_THROW_MSG(matmul(rnd({2}, kFloat32, 1), scalar_tensor(1.0)), Error,
                   "both arguments to matmul need to be at least 1D, but they are 1D and 0D");
  EXPECT_THROW_MSG(matmul(rnd({2, 3, 4}, kFloat32, 1), rnd({5, 4, 2}, kFloat32, 1)), Error,
                   "The size of tensor a (2) must match the size of tensor b (5) at non-singleton dimension 0");
  EXPECT_THROW_MSG(matmul(rnd({3}, kFloat32, 1), rnd({4, 5}, kFloat32, 1)), Error,
                   "mat1 and mat2 shapes cannot be multiplied (1x3 and 4x5)");
  EXPECT_THROW_MSG(matmul(rnd({3, 4}, kFloat32, 1), rnd({3}, kFloat32, 1)), Error, "size mismatch, got 3, 3x4,3");
  EXPECT_THROW_MSG(matmul(rnd({2, 3, 4}, kFloat32, 1), rnd({3}, kFloat32, 1)), Error, "size mismatch, got 6, 6x4,3");
  EXPECT_THROW_MSG(matmul(rnd({2, 3, 4}, kFloat32, 1), rnd({5, 6}, kFloat32, 1)), Error,
                   "mat1 and mat2 shapes cannot be multiplied (6x4 and 5x6)");
  EXPECT_THROW_MSG(matmul(rnd({2, 3, 4}, kFloat32, 1), rnd({2, 5, 6}, kFloat32, 1)), Error,
                   "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 5].");
  EXPECT_THROW_MSG(matmul(rnd({3, 4}, kFloat32, 1), rnd({4, 2}, kFloat64, 1)), Error,
                   "expected m1 and m2 to have the same dtype, but got: float != double");
  EXPECT_THROW_MSG(matmul(rnd({2, 3, 4}, kFloat32, 1), rnd({2, 4, 6}, kFloat64, 1)), Error,
                   "expected scalar type Float but found Double");
}
