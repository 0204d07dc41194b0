// linalg::eig / eigvals (LAPACK geev): A V = V diag(L) for real matrices (with their conjugate
// pairs) and complex ones, unit-norm eigenvectors, and the gradient of the eigenvalues' sum
// (the trace) being the identity.
#include <vector>

#include "ember/linalg.h"
#include "test_utils.h"

using namespace ember;
using namespace ember::testing;

namespace {
// max |A V - V diag(L)| over a (n, n) complex128 problem.
double residual(const Tensor& A, const Tensor& L, const Tensor& V) {
  Tensor Ac = A.to(kComplex128), Vc = V.to(kComplex128), Lc = L.to(kComplex128);
  return (matmul(Ac, Vc) - Vc * Lc.unsqueeze(-2)).abs().max().item<double>();
}
}  // namespace

TEST(LinalgEig, RealMatricesGiveConjugatePairs) {
  // A rotation by 90 degrees scaled by 2: eigenvalues +-2i, eigenvectors conjugate.
  Tensor rot = tensor({0.0, -2.0, 2.0, 0.0}, {.dtype = kFloat64}).reshape({2, 2});
  auto [L, V] = linalg::eig(rot);
  EXPECT_EQ(L.dtype(), kComplex128);
  std::vector<double> l = view_as_real(L).tolist<double>();  // re0, im0, re1, im1
  EXPECT_NEAR(l[0], 0.0, 1e-12);
  EXPECT_NEAR(std::abs(l[1]), 2.0, 1e-12);
  EXPECT_NEAR(l[1] + l[3], 0.0, 1e-12);  // a conjugate pair
  EXPECT_LT(residual(rot, L, V), 1e-12);

  Tensor A = seeded_randn({3, 6, 6}, 7, kFloat64);
  auto [L2, V2] = linalg::eig(A);
  EXPECT_EQ(V2.sizes(), (Shape{3, 6, 6}));
  EXPECT_LT(residual(A, L2, V2), 1e-10);
  Tensor norms = V2.abs().pow(2).sum(-2).sqrt();
  EXPECT_LT((norms - 1).abs().max().item<double>(), 1e-12);
  Tensor f32 = linalg::eigvals(A.to(kFloat32));
  EXPECT_EQ(f32.dtype(), kComplex64);
}

TEST(LinalgEig, ComplexMatricesAndTheTraceGradient) {
  Tensor A = complex(seeded_randn({4, 4}, 1, kFloat64), seeded_randn({4, 4}, 2, kFloat64));
  auto [L, V] = linalg::eig(A);
  EXPECT_LT(residual(A, L, V), 1e-10);
  // sum of eigenvalues = trace
  std::vector<double> sum = view_as_real(L.sum()).tolist<double>();
  std::vector<double> trace = view_as_real(diagonal(A, 0, -2, -1).sum()).tolist<double>();
  EXPECT_NEAR(sum[0], trace[0], 1e-10);
  EXPECT_NEAR(sum[1], trace[1], 1e-10);

  Tensor B = seeded_randn({5, 5}, 3, kFloat64).requires_grad_();
  real(linalg::eigvals(B)).sum().backward();
  EXPECT_LT((B.grad() - eye(5, std::nullopt, {.dtype = kFloat64})).abs().max().item<double>(), 1e-10);
  EXPECT_THROW(linalg::eig(zeros({2, 3})), Error);
}
