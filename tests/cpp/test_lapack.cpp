// The LAPACK-backed linalg ops (op_list.h "linalg (LAPACK)") checked by their defining
// identities on every test device: A inv(A) = I, A X = B, L L^T = A, Q R = A with orthonormal Q,
// U S V^T = A, A V = V diag(L), det against a cofactor expansion, lstsq against the normal
// equations; plus float64 gradchecks of each gradient formula and torch's error messages.
// (Values against PyTorch itself: tests/python/test_linalg15.py.)
#include <omp.h>

#include <random>

#include "cpu/lapack.h"
#include "gradcheck.h"
#include "test_utils.h"

using namespace ember;
using namespace ember::testing;

namespace {

Tensor rnd(IntArrayRef shape, DType dt, uint64_t seed) {
  std::mt19937_64 g(seed * 7919 + 3);
  std::normal_distribution<double> n(0.0, 1.0);
  std::vector<double> v(size_t(shape_numel(shape)));
  for (auto& x : v) x = n(g);
  return tensor(v, {.dtype = kFloat64}).view(shape).to(dt);
}

// Well conditioned: a random matrix plus n on the diagonal.
Tensor well_conditioned(IntArrayRef shape, DType dt, uint64_t seed) {
  int64_t n = shape.back();
  return rnd(shape, dt, seed) + eye(n, std::nullopt, {.dtype = dt}) * double(n);
}

Tensor spd(IntArrayRef shape, DType dt, uint64_t seed) {
  Tensor x = rnd(shape, dt, seed);
  return matmul(x, x.mT()) + eye(shape.back(), std::nullopt, {.dtype = dt}) * double(shape.back());
}

Tensor identity_like(const Tensor& a) {
  return eye(a.size(-1), std::nullopt, {.dtype = a.dtype()}).expand(a.sizes());
}

::testing::AssertionResult near(const Tensor& a, const Tensor& b, double tol) {
  Tensor d = abs(a - b).amax().cpu();
  double m = d.item<double>();
  if (m <= tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "max difference " << m << " > " << tol;
}

double tol_of(DType dt) { return dt == kFloat64 ? 1e-10 : 2e-4; }

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

EMBER_DEVICE_TEST(Lapack, InverseSolveDet) {
  for (DType dt : {kFloat32, kFloat64}) {
    Tensor a = well_conditioned({2, 3, 4, 4}, dt, 1);
    EXPECT_TRUE(near(matmul(a, linalg::inv(a)), identity_like(a), tol_of(dt) * 10));
    Tensor b = rnd({2, 3, 4, 2}, dt, 2);
    EXPECT_TRUE(near(matmul(a, linalg::solve(a, b)), b, tol_of(dt) * 10));
    Tensor v = rnd({4}, dt, 3);  // a vector right-hand side broadcast over A's batch
    Tensor x = linalg::solve(a, v);
    EXPECT_EQ(x.sizes(), (Shape{2, 3, 4}));
    EXPECT_TRUE(near(matmul(a, x.unsqueeze(-1)).squeeze(-1), v.expand({2, 3, 4}), tol_of(dt) * 10));
  }
  Tensor m = tensor({{2.0, -1.0, 0.0}, {1.0, 3.0, 2.0}, {0.0, 1.0, 4.0}}, {.dtype = kFloat64});
  // 2 (12 - 2) + 1 (4 - 0) = 24
  EXPECT_NEAR(linalg::det(m).item<double>(), 24.0, 1e-12);
  auto [sign, logabs] = linalg::slogdet(-m);
  EXPECT_EQ(sign.item<double>(), -1.0);
  EXPECT_NEAR(logabs.item<double>(), std::log(24.0), 1e-12);
  EXPECT_TRUE(std::isnan(logdet(-m).item<double>()));
}

EMBER_DEVICE_TEST(Lapack, CholeskyQrSvdEigh) {
  for (DType dt : {kFloat32, kFloat64}) {
    double tol = tol_of(dt) * 10;
    Tensor s = spd({2, 5, 5}, dt, 4);
    Tensor L = linalg::cholesky(s);
    EXPECT_TRUE(near(matmul(L, L.mT()), s, tol * 10));
    EXPECT_TRUE(near(L, L.tril(), 0.0));
    Tensor U = linalg::cholesky(s, /*upper=*/true);
    EXPECT_TRUE(near(U, L.mT(), tol));

    for (Shape shape : {Shape{2, 6, 3}, Shape{3, 6}, Shape{4, 4}}) {
      Tensor a = rnd(shape, dt, 5);
      for (const char* mode : {"reduced", "complete"}) {
        auto [Q, R] = linalg::qr(a, mode);
        EXPECT_TRUE(near(matmul(Q, R), a, tol));
        EXPECT_TRUE(near(matmul(Q.mT(), Q), identity_like(matmul(Q.mT(), Q)), tol));
        EXPECT_TRUE(near(R, R.triu(), 0.0));
      }
      for (bool full : {false, true}) {
        auto [u, sv, vh] = linalg::svd(a, full);
        int64_t k = sv.size(-1);
        Tensor rec = matmul(u.narrow(-1, 0, k) * sv.unsqueeze(-2), vh.narrow(-2, 0, k));
        EXPECT_TRUE(near(rec, a, tol));
        EXPECT_TRUE(near(linalg::svdvals(a), sv, tol));
      }
    }
    auto [w, V] = linalg::eigh(s);
    EXPECT_TRUE(near(matmul(s, V), V * w.unsqueeze(-2), tol * 10));
    EXPECT_TRUE(near(linalg::eigvalsh(s), w, tol * 10));
    // UPLO="U" reads only the upper triangle: garbage below it changes nothing.
    Tensor junk = s.triu() + rnd({2, 5, 5}, dt, 9).tril(-1);
    EXPECT_TRUE(near(linalg::eigvalsh(junk, "U"), w, tol * 10));
  }
}

EMBER_DEVICE_TEST(Lapack, LstsqPinvRank) {
  Tensor a = rnd({2, 7, 3}, kFloat64, 6), b = rnd({2, 7, 2}, kFloat64, 7);
  auto r = linalg::lstsq(a, b);
  // Normal equations: A^T A x = A^T b.
  EXPECT_TRUE(near(matmul(matmul(a.mT(), a), r.solution), matmul(a.mT(), b), 1e-10));
  EXPECT_EQ(r.rank.tolist<int64_t>(), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(r.residuals.numel(), 0);
  Tensor p = linalg::pinv(a);
  EXPECT_TRUE(near(matmul(p, b), r.solution, 1e-10));
  Tensor low = matmul(rnd({6, 2}, kFloat64, 8), rnd({2, 5}, kFloat64, 9));
  EXPECT_EQ(linalg::matrix_rank(low).item<int64_t>(), 2);
  EXPECT_EQ(linalg::lstsq(low, rnd({6, 1}, kFloat64, 10)).rank.item<int64_t>(), 2);
}

EMBER_DEVICE_TEST(Lapack, LuAndMatrixFunctions) {
  for (Shape shape : {Shape{2, 4, 4}, Shape{5, 3}, Shape{3, 5}}) {
    Tensor a = rnd(shape, kFloat64, 16);
    auto [P, L, U] = linalg::lu(a);
    EXPECT_TRUE(near(matmul(P, matmul(L, U)), a, 1e-12));
    EXPECT_TRUE(near(L, L.tril(), 0.0));
    EXPECT_TRUE(near(U, U.triu(), 0.0));
  }
  Tensor a = well_conditioned({2, 4, 4}, kFloat64, 17), b = rnd({2, 4, 3}, kFloat64, 18);
  auto [LU, piv] = linalg::lu_factor(a);
  EXPECT_TRUE(near(matmul(a, linalg::lu_solve(LU, piv, b)), b, 1e-10));
  EXPECT_TRUE(near(matmul(a.mT(), linalg::lu_solve(LU, piv, b, true, /*adjoint=*/true)), b, 1e-10));
  EXPECT_TRUE(near(matmul(a.triu(), linalg::solve_triangular(a, b, /*upper=*/true)), b, 1e-10));
  EXPECT_TRUE(near(matmul(linalg::solve_triangular(a, b.mT(), /*upper=*/false, /*left=*/false), a.tril()), b.mT(), 1e-10));
  EXPECT_TRUE(near(linalg::matrix_power(a, 3), matmul(a, matmul(a, a)), 1e-9));
  EXPECT_TRUE(near(linalg::matrix_power(a, -2), linalg::inv(matmul(a, a)), 1e-10));
  // exp of a diagonal matrix is the exp of its entries; exp(A) exp(-A) = I.
  Tensor d = tensor({1.0, -2.0, 3.0}, {.dtype = kFloat64});
  EXPECT_TRUE(near(linalg::matrix_exp(diag(d)), diag(exp(d)), 1e-12));
  Tensor big = rnd({3, 3}, kFloat64, 19) * 3.0;  // norm above theta_13: the squaring path
  EXPECT_TRUE(near(matmul(linalg::matrix_exp(big), linalg::matrix_exp(-big)), eye(3, std::nullopt, {.dtype = kFloat64}), 1e-9));
  Tensor g = well_conditioned({3, 3}, kFloat64, 20).requires_grad_();
  EXPECT_TRUE(gradcheck([](const variable_list& x) { return std::get<0>(linalg::lu_factor(x[0])); }, {g}));
  EXPECT_TRUE(gradcheck([](const variable_list& x) { return linalg::matrix_exp(x[0]); }, {g}));
}

EMBER_DEVICE_TEST(Lapack, NormsCrossCdist) {
  Tensor a = tensor({{1.0, -2.0}, {3.0, 4.0}}, {.dtype = kFloat64});
  EXPECT_NEAR(linalg::matrix_norm(a, 1.0).item<double>(), 6.0, 1e-12);     // largest column sum
  EXPECT_NEAR(linalg::matrix_norm(a, INFINITY).item<double>(), 7.0, 1e-12);  // largest row sum
  EXPECT_NEAR(linalg::matrix_norm(a, "fro").item<double>(), std::sqrt(30.0), 1e-12);
  Tensor s = linalg::svdvals(a);
  EXPECT_NEAR(linalg::matrix_norm(a, "nuc").item<double>(), s.sum().item<double>(), 1e-12);
  EXPECT_NEAR(linalg::matrix_norm(a, -2.0).item<double>(), s.min().item<double>(), 1e-12);
  EXPECT_NEAR(linalg::vector_norm(a, 3.0).item<double>(), std::cbrt(1 + 8 + 27 + 64.0), 1e-12);
  Tensor x = tensor({1.0, 0.0, 0.0}, {.dtype = kFloat64}), y = tensor({0.0, 1.0, 0.0}, {.dtype = kFloat64});
  EXPECT_EQ(linalg::cross(x, y).tolist<double>(), (std::vector<double>{0.0, 0.0, 1.0}));
  Tensor p = tensor({{0.0, 0.0}, {3.0, 4.0}}, {.dtype = kFloat64});
  EXPECT_EQ(cdist(p, p).tolist<double>(), (std::vector<double>{0.0, 5.0, 5.0, 0.0}));
  EXPECT_EQ(cdist(p, p, 1.0).tolist<double>(), (std::vector<double>{0.0, 7.0, 7.0, 0.0}));
  EXPECT_EQ(cdist(p, p, INFINITY).tolist<double>(), (std::vector<double>{0.0, 4.0, 4.0, 0.0}));
}

EMBER_DEVICE_TEST(Lapack, Gradients) {
  Tensor a = well_conditioned({2, 3, 3}, kFloat64, 11).requires_grad_();
  EXPECT_TRUE(gradcheck([](const variable_list& x) { return linalg::inv(x[0]); }, {a}));
  EXPECT_TRUE(gradcheck([](const variable_list& x) { return linalg::det(x[0]); }, {a}));
  EXPECT_TRUE(gradcheck([](const variable_list& x) { return std::get<1>(linalg::slogdet(x[0])); }, {a}));
  Tensor b = rnd({2, 3, 2}, kFloat64, 12).requires_grad_();
  EXPECT_TRUE(gradcheck([](const variable_list& x) { return linalg::solve(x[0], x[1]); }, {a, b}));
  EXPECT_TRUE(gradcheck(
      [](const variable_list& x) { return linalg::cholesky(matmul(x[0], x[0].mT()) + eye(3, std::nullopt, {.dtype = kFloat64})); },
      {a}));
  Tensor tall = rnd({5, 3}, kFloat64, 13).requires_grad_();
  EXPECT_TRUE(gradcheck([](const variable_list& x) { auto [q, r] = linalg::qr(x[0]); return cat({q.flatten(), r.flatten()}); }, {tall}));
  EXPECT_TRUE(gradcheck([](const variable_list& x) {
    auto [u, s, vh] = linalg::svd(x[0], false);  // squares: invariant to the singular vectors' signs
    return cat({(u * u).flatten(), s, (vh * vh).flatten()});
  }, {tall}));
  EXPECT_TRUE(gradcheck([](const variable_list& x) {
    auto [w, v] = linalg::eigh(x[0] + x[0].mT());
    return cat({w.flatten(), (v * v).flatten()});
  }, {a}));
  EXPECT_TRUE(gradcheck([](const variable_list& x) { return linalg::pinv(x[0]); }, {tall}));
  Tensor p = rnd({4, 3}, kFloat64, 14).requires_grad_(), q = rnd({5, 3}, kFloat64, 15).requires_grad_();
  EXPECT_TRUE(gradcheck([](const variable_list& x) { return cdist(x[0], x[1], 2.0); }, {p, q}));
  EXPECT_TRUE(gradcheck([](const variable_list& x) { return cdist(x[0], x[1], 3.0); }, {p, q}));
}

EMBER_DEVICE_TEST(Lapack, Errors) {
  EMBER_SKIP_ON_CUDA("no CUDA kernel yet for the linalg decompositions (cuSOLVER): linalg_inv_ex, linalg_cholesky_ex");
  Tensor s = tensor({{1.0, 2.0}, {2.0, 4.0}}, {.dtype = kFloat64});
  EXPECT_EQ(message_of([&] { linalg::inv(s); }),
            "linalg.inv: The diagonal element 2 is zero, the inversion could not be completed because the input "
            "matrix is singular.");
  EXPECT_EQ(message_of([&] { linalg::cholesky(s); }),
            "linalg.cholesky: The factorization could not be completed because the input is not positive-definite "
            "(the leading minor of order 2 is not positive-definite).");
  EXPECT_EQ(message_of([&] { linalg::inv(zeros({2, 3})); }),
            "linalg.inv: A must be batches of square matrices, but they are 2 by 3 matrices");
  EXPECT_EQ(message_of([&] { linalg::svd(zeros({3})); }),
            "linalg.svd: The input tensor A must have at least 2 dimensions.");
  auto [inv, info] = linalg::inv_ex(stack({eye(2, std::nullopt, {.dtype = kFloat64}), s}));
  EXPECT_EQ(info.tolist<int64_t>(), (std::vector<int64_t>{0, 2}));
}

// Every LAPACK call runs inside a CallScope: below 512 rows and columns on one OpenMP thread (the
// team's fork/join per inner BLAS call cost more than it saved), from 512 on with the threads the
// user set; the thread count comes back afterwards. Results are the same either way: cholesky of
// a 300 x 300 matrix (one thread) and of 600 x 600 (threaded) against L L^T = A.
TEST(Lapack, CallsPickTheirThreadCountAndRestoreIt) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(2);
  {
    cpu::lapack::CallScope small(256);
    EXPECT_EQ(omp_get_max_threads(), 1);
  }
  EXPECT_EQ(omp_get_max_threads(), 2);
  {
    cpu::lapack::CallScope large(cpu::lapack::CallScope::kThreadedFrom);
    EXPECT_EQ(omp_get_max_threads(), 2);
  }
  for (int64_t n : {300, 600}) {
    Tensor a = spd({n, n}, kFloat64, uint64_t(n));
    Tensor l = linalg::cholesky(a);
    EXPECT_TRUE(allclose(matmul(l, l.t()), a, 1e-10, 1e-8)) << n;
    EXPECT_EQ(omp_get_max_threads(), 2) << n;
  }
  omp_set_num_threads(before);
}
