// torch.linalg's composites over solve and matmul: solve_triangular, cholesky_solve,
// cholesky_inverse, matrix_power, matrix_exp, multi_dot, vecdot, diagonal. Their gradients come from their
// parts: solve_triangular reads only A's triangle (through tril/triu), so A's gradient is that
// triangle's, as torch's.
#include <cmath>

#include "amp/autocast.h"
#include "ember/linalg.h"
#include "ember/ops.h"
#include "ops/linalg_checks.h"
#include "ops/linalg_internal.h"

namespace ember {
using namespace linalg_checks;

namespace linalg {

Tensor solve_triangular(const Tensor& A, const Tensor& B, bool upper, bool left, bool unitriangular) {
  check_square(A, "linalg.solve_triangular");
  EMBER_CHECK(B.dim() >= 2, "linalg.solve_triangular: The input tensor B must have at least 2 dimensions.");
  check_floating(B, "linalg.solve_triangular");
  EMBER_CHECK(A.dtype() == B.dtype(), "linalg.solve_triangular: Expected A and B to have the same dtype, but found A of type ",
              scalar_type_name(A.dtype()), " and B of type ", scalar_type_name(B.dtype()), " instead");
  Tensor T = upper ? A.triu(unitriangular ? 1 : 0) : A.tril(unitriangular ? -1 : 0);
  if (unitriangular) T = T + eye(A.size(-1), std::nullopt, A.options());
  if (left) return linalg_internal::solve_matrices(T, B, "linalg.solve_triangular");
  return linalg_internal::solve_matrices(T.mT(), B.mT(), "linalg.solve_triangular").mT();
}

Tensor matrix_power(const Tensor& A, int64_t n) {
  EMBER_CHECK(A.dim() >= 2, "linalg.matrix_power: The input tensor A must have at least 2 dimensions.");
  EMBER_CHECK(A.size(-1) == A.size(-2), "linalg.matrix_power: A must be batches of square matrices, but they are ",
              A.size(-2), " by ", A.size(-1), " matrices");
  if (n == 0) return eye(A.size(-1), std::nullopt, A.options()).expand(A.sizes()).clone();
  Tensor base = n < 0 ? inv(A) : A;
  uint64_t k = n < 0 ? uint64_t(-(n + 1)) + 1 : uint64_t(n);
  // Binary powering: about log2(n) squarings.
  Tensor result;
  while (true) {
    if (k & 1) result = result.defined() ? ember::matmul(result, base) : base;
    k >>= 1;
    if (!k) break;
    base = ember::matmul(base, base);
  }
  return result;
}

Tensor multi_dot(TensorList tensors) {
  EMBER_AUTOCAST(multi_dot, tensors);
  const size_t n = tensors.size();
  EMBER_CHECK(n >= 2, "multi_dot(): expected at least 2 tensors but got ", n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t d = tensors[i].dim();
    if (i == 0) {
      EMBER_CHECK(d == 1 || d == 2, "multi_dot(): the first tensor must be 1D or 2D but got ", d, "D");
    } else if (i == n - 1) {
      EMBER_CHECK(d == 1 || d == 2, "multi_dot(): the last tensor must be 1D or 2D but got ", d, "D");
    } else {
      EMBER_CHECK(d == 2, "multi_dot(): tensor ", i, " must be 2D but got ", d, "D");
    }
  }
  Tensor out = tensors[0];
  for (size_t i = 1; i < n; ++i) out = ember::matmul(out, tensors[i]);
  return out;
}

Tensor vecdot(const Tensor& x, const Tensor& y, int64_t dim) {
  EMBER_AUTOCAST(vecdot, x, y, dim);
  return sum(x * y, {dim});
}

// Scaling and squaring with the degree-13 Pade approximant (Higham 2005): exp(A) =
// r13(A / 2^s)^(2^s), s chosen from the largest 1-norm in the batch so that ||A / 2^s||_1 <=
// theta_13. r13 = (V - U)^-1 (V + U) with U, V its odd and even parts. Differentiable through
// its parts (matmul, solve); s is a constant of the input's values.
Tensor matrix_exp(const Tensor& A) {
  check_square(A, "linalg.matrix_exp");
  const int64_t n = A.size(-1);
  if (A.numel() == 0) return A.clone();
  constexpr double kTheta13 = 5.371920351148152;
  constexpr double b[] = {64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
                          129060195264000.0,   10559470521600.0,    670442572800.0,     33522128640.0,
                          1323241920.0,        40840800.0,          960960.0,           16380.0,
                          182.0,               1.0};
  double norm1 = amax(sum(abs(A.detach()), {-2})).item<double>();
  int64_t s = norm1 > kTheta13 ? int64_t(std::ceil(std::log2(norm1 / kTheta13))) : 0;
  Tensor X = s > 0 ? A / std::ldexp(1.0, int(s)) : A;
  Tensor I = eye(n, std::nullopt, A.options());
  Tensor X2 = ember::matmul(X, X), X4 = ember::matmul(X2, X2), X6 = ember::matmul(X4, X2);
  Tensor U = ember::matmul(X, ember::matmul(X6, X6 * b[13] + X4 * b[11] + X2 * b[9]) + X6 * b[7] + X4 * b[5] +
                                  X2 * b[3] + I * b[1]);
  Tensor V = ember::matmul(X6, X6 * b[12] + X4 * b[10] + X2 * b[8]) + X6 * b[6] + X4 * b[4] + X2 * b[2] + I * b[0];
  Tensor R = linalg_internal::solve_matrices(V - U, V + U, "linalg.matrix_exp");
  for (int64_t i = 0; i < s; ++i) R = ember::matmul(R, R);
  return R;
}

// p 2 / -2 (or none): the ratio of extreme singular values; otherwise ||A||_p ||A^-1||_p, inf
// for a singular matrix (as torch).
Tensor cond(const Tensor& A, std::optional<double> p) {
  check_matrices(A, "linalg.cond");
  if (!p || std::abs(*p) == 2) {
    Tensor s = svdvals(A);
    Tensor hi = amax(s, {-1}), lo = amin(s, {-1});
    return p && *p < 0 ? lo / hi : hi / lo;
  }
  check_square(A, "linalg.cond");
  auto [Ainv, info] = inv_ex(A);
  Tensor c = matrix_norm(A, *p) * matrix_norm(Ainv, *p);
  return where(ne(info, 0), INFINITY, c);
}

Tensor cond(const Tensor& A, const std::string& p) {
  check_square(A, "linalg.cond");
  auto [Ainv, info] = inv_ex(A);
  Tensor c = matrix_norm(A, p) * matrix_norm(Ainv, p);
  return where(ne(info, 0), INFINITY, c);
}

Tensor diagonal(const Tensor& A, int64_t offset, int64_t dim1, int64_t dim2) {
  return ember::diagonal(A, offset, dim1, dim2);
}

}  // namespace linalg

// A = L L^T (or U^T U): X = A^-1 B by two triangular solves.
Tensor cholesky_solve(const Tensor& B, const Tensor& L, bool upper) {
  EMBER_CHECK(B.dim() >= 2, "b should have at least 2 dimensions, but has ", B.dim(), " dimensions instead");
  EMBER_CHECK(L.dim() >= 2, "u should have at least 2 dimensions, but has ", L.dim(), " dimensions instead");
  Tensor lower = upper ? L.mT() : L;
  Tensor y = linalg::solve_triangular(lower, B, /*upper=*/false);
  return linalg::solve_triangular(lower.mT(), y, /*upper=*/true);
}

std::tuple<Tensor, Tensor> triangular_solve(const Tensor& b, const Tensor& A, bool upper, bool transpose,
                                            bool unitriangular) {
  Tensor T = transpose ? A.mT() : A;
  return {linalg::solve_triangular(T, b, transpose ? !upper : upper, /*left=*/true, unitriangular), A.clone()};
}

Tensor chain_matmul(TensorList matrices) {
  EMBER_AUTOCAST(chain_matmul, matrices);
  if (matrices.size() == 1) return matrices[0].clone();
  return linalg::multi_dot(matrices);
}

// The upper triangle (i < j, row by row) of cdist(x, x): the exact difference form, so a
// repeated row gives 0 with subgradient 0.
Tensor pdist(const Tensor& x, double p) {
  EMBER_AUTOCAST(pdist, x, p);
  EMBER_CHECK(x.dim() == 2, "pdist only supports 2D tensors, got: ", x.dim(), "D");
  EMBER_CHECK(is_floating(x.dtype()), "pdist only supports floating-point dtypes");
  EMBER_CHECK(p >= 0, "pdist only supports non-negative p values");
  const int64_t n = x.size(0);
  if (n < 2) return empty({0}, x.options());
  Tensor upper = ones({n, n}, {.dtype = kBool, .device = x.device()}).triu(1);
  return masked_select(cdist(x, x, p, /*compute_mode=*/2), upper);
}

Tensor cholesky_inverse(const Tensor& L, bool upper) {
  check_square(L, "cholesky_inverse");
  return cholesky_solve(eye(L.size(-1), std::nullopt, L.options()).expand(L.sizes()), L, upper);
}

}  // namespace ember
