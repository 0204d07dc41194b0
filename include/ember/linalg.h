#pragma once
// torch.linalg (ember::linalg) and its top-level aliases (torch.det, torch.svd, ...), plus
// torch.cdist. float32/float64 inputs with any leading batch dims; results and errors as
// PyTorch 2.x. Factorisations run on LAPACK (op_list.h "linalg (LAPACK)"); norms, pinv, rank,
// lstsq's extras, cross and cdist are composites. Gradients: docs/issue15-linalg-fft.md.
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "ember/tensor.h"

namespace ember::linalg {

Tensor inv(const Tensor& A);
// (inverse, info): info (int32, batch shape) is LAPACK's; raises only when check_errors.
std::tuple<Tensor, Tensor> inv_ex(const Tensor& A, bool check_errors = false);
// X with A X = B (left) or X A = B (!left). B may be a vector (..., n) when it is not a batch
// of matrices matching A; batch dims broadcast.
Tensor solve(const Tensor& A, const Tensor& B, bool left = true);
// LU with partial pivoting, A = P L U: (LU, pivots) as LAPACK's getrf (pivots int32, 1-based).
// lu_factor raises for an exactly singular U (as torch); lu_factor_ex returns info instead.
std::tuple<Tensor, Tensor> lu_factor(const Tensor& A);
std::tuple<Tensor, Tensor, Tensor> lu_factor_ex(const Tensor& A, bool check_errors = false);
std::tuple<Tensor, Tensor, Tensor> lu(const Tensor& A);  // (P, L, U)
// X with A X = B (left) / X A = B, from lu_factor's output; adjoint: A^T instead of A.
Tensor lu_solve(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left = true, bool adjoint = false);
Tensor det(const Tensor& A);
std::tuple<Tensor, Tensor> slogdet(const Tensor& A);  // (sign, logabsdet)
Tensor cholesky(const Tensor& A, bool upper = false);
std::tuple<Tensor, Tensor> cholesky_ex(const Tensor& A, bool upper = false, bool check_errors = false);
// mode: "reduced", "complete" or "r" (Q is then an empty tensor)
std::tuple<Tensor, Tensor> qr(const Tensor& A, const std::string& mode = "reduced");
std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& A, bool full_matrices = true);  // (U, S, Vh)
Tensor svdvals(const Tensor& A);
std::tuple<Tensor, Tensor> eigh(const Tensor& A, const std::string& UPLO = "L");  // (eigenvalues, eigenvectors)
// A general square matrix: complex eigenvalues and (unit-norm) eigenvectors, complex for real A too.
std::tuple<Tensor, Tensor> eig(const Tensor& A);
Tensor eigvals(const Tensor& A);
Tensor eigvalsh(const Tensor& A, const std::string& UPLO = "L");

// torch.linalg.lstsq with the "gelsy" driver (torch's CPU default; "gelsd", "gelss" and
// "gels" are accepted and give the same solution): residuals and singular_values are empty,
// as torch's for gelsy; rank is int64 of the batch shape.
struct LstsqResult {
  Tensor solution, residuals, rank, singular_values;
};
LstsqResult lstsq(const Tensor& A, const Tensor& B, std::optional<double> rcond = std::nullopt,
                  std::optional<std::string> driver = std::nullopt);

// Singular values (eigenvalues' magnitudes when hermitian) at most max(atol, rtol * largest)
// count as zero; with neither given rtol = eps * max(m, n).
Tensor pinv(const Tensor& A, std::optional<double> atol = std::nullopt, std::optional<double> rtol = std::nullopt,
            bool hermitian = false);
Tensor matrix_rank(const Tensor& A, std::optional<double> atol = std::nullopt,
                   std::optional<double> rtol = std::nullopt, bool hermitian = false);

// dim nullopt: every dim (the flattened input).
Tensor vector_norm(const Tensor& x, double ord = 2, std::optional<std::vector<int64_t>> dim = std::nullopt,
                   bool keepdim = false, std::optional<DType> dtype = std::nullopt);
// ord: "fro" or "nuc", or one of 1, -1, 2, -2, inf, -inf; dim: the two matrix dims.
Tensor matrix_norm(const Tensor& A, const std::string& ord = "fro", std::vector<int64_t> dim = {-2, -1},
                   bool keepdim = false, std::optional<DType> dtype = std::nullopt);
Tensor matrix_norm(const Tensor& A, double ord, std::vector<int64_t> dim = {-2, -1}, bool keepdim = false,
                   std::optional<DType> dtype = std::nullopt);
// torch.linalg.norm: a vector norm over one dim, a matrix norm over two; ord (a number, or
// "fro"/"nuc" as str_ord) with dim nullopt needs a 1-D or 2-D input; neither: the 2-norm of
// the flattened input.
Tensor norm(const Tensor& A, std::optional<double> ord = std::nullopt,
            std::optional<std::vector<int64_t>> dim = std::nullopt, bool keepdim = false,
            std::optional<DType> dtype = std::nullopt);
Tensor norm(const Tensor& A, const std::string& ord, std::optional<std::vector<int64_t>> dim = std::nullopt,
            bool keepdim = false, std::optional<DType> dtype = std::nullopt);
Tensor cross(const Tensor& a, const Tensor& b, int64_t dim = -1);
Tensor matmul(const Tensor& a, const Tensor& b);
// X with T X = B (left) or X T = B, T the upper/lower triangle of A (unit diagonal when
// unitriangular); B has at least 2 dims.
Tensor solve_triangular(const Tensor& A, const Tensor& B, bool upper, bool left = true, bool unitriangular = false);
Tensor matrix_power(const Tensor& A, int64_t n);  // n < 0: powers of the inverse
Tensor matrix_exp(const Tensor& A);
// Condition number: p nullopt / 2 / -2 from the singular values, else ||A||_p ||A^-1||_p with p
// a matrix_norm order ("fro", "nuc", 1, -1, inf, -inf); inf for a singular matrix.
Tensor cond(const Tensor& A, std::optional<double> p = std::nullopt);
Tensor cond(const Tensor& A, const std::string& p);
Tensor multi_dot(TensorList tensors);             // first / last may be 1-D
Tensor vecdot(const Tensor& x, const Tensor& y, int64_t dim = -1);
Tensor diagonal(const Tensor& A, int64_t offset = 0, int64_t dim1 = -2, int64_t dim2 = -1);

}  // namespace ember::linalg

namespace ember {

Tensor det(const Tensor& A);
Tensor logdet(const Tensor& A);  // nan for a negative determinant
std::tuple<Tensor, Tensor> slogdet(const Tensor& A);
Tensor inverse(const Tensor& A);
Tensor cholesky(const Tensor& A, bool upper = false);
std::tuple<Tensor, Tensor> qr(const Tensor& A, bool some = true);
// torch.svd: (U, S, V) with V (not Vh); some = reduced; without compute_uv U and V are zeros.
std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& A, bool some = true, bool compute_uv = true);
Tensor pinverse(const Tensor& A, double rcond = 1e-15);
// A^-1 B for A = L L^T (U^T U when upper), and A^-1 itself, from the Cholesky factor.
Tensor cholesky_solve(const Tensor& B, const Tensor& L, bool upper = false);
Tensor cholesky_inverse(const Tensor& L, bool upper = false);
std::tuple<Tensor, Tensor, Tensor> lu_unpack(const Tensor& LU, const Tensor& pivots);  // (P, L, U)
// torch.triangular_solve (deprecated in torch, still used): (solution, A cloned).
std::tuple<Tensor, Tensor> triangular_solve(const Tensor& b, const Tensor& A, bool upper = true,
                                            bool transpose = false, bool unitriangular = false);
Tensor chain_matmul(TensorList matrices);
// Distances between the rows of x (N, M), i < j in row order: N (N - 1) / 2 values.
Tensor pdist(const Tensor& x, double p = 2.0);
// torch.cross: dim nullopt is the first dim of size 3.
Tensor cross(const Tensor& a, const Tensor& b, std::optional<int64_t> dim = std::nullopt);
// Distances between the rows of x1 (..., P, M) and x2 (..., R, M): (..., P, R). compute_mode as
// torch's: 0 use_mm_for_euclid_dist_if_necessary, 1 use_mm_for_euclid_dist,
// 2 donot_use_mm_for_euclid_dist.
Tensor cdist(const Tensor& x1, const Tensor& x2, double p = 2.0, int64_t compute_mode = 0);

}  // namespace ember
