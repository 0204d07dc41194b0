// torch.linalg's LU and Cholesky family: inv, solve, det, slogdet, cholesky (+ the *_ex forms
// and torch's top-level aliases), their argument checks and gradients. The factorisations are
// the dispatched ops of op_list.h's "linalg (LAPACK)" section; this file decides shapes and
// errors, so every backend shares them.
#include <cmath>

#include "autograd/record.h"
#include "ember/linalg.h"
#include "ember/ops.h"
#include "ops/linalg_checks.h"
#include "ops/linalg_internal.h"
#include "ops/op_handles.h"

namespace ember {

namespace linalg_checks {

void check_floating(const Tensor& A, const char* op) {
  DType t = A.dtype();
  EMBER_CHECK_AS(NotImplementedError, is_floating(t), op, ": Expected a floating point or complex tensor as input. Got ",
                 scalar_type_name(t));
  EMBER_CHECK(t == kFloat32 || t == kFloat64, op, ": Low precision dtypes not supported. Got ", scalar_type_name(t));
}

void check_matrices(const Tensor& A, const char* op, const char* name) {
  EMBER_CHECK(A.dim() >= 2, op, ": The input tensor ", name, " must have at least 2 dimensions.");
  check_floating(A, op);
}

void check_square(const Tensor& A, const char* op, const char* name) {
  check_matrices(A, op, name);
  EMBER_CHECK(A.size(-1) == A.size(-2), op, ": ", name, " must be batches of square matrices, but they are ",
              A.size(-2), " by ", A.size(-1), " matrices");
}

void check_info(const Tensor& info, const char* op, Failure kind) {
  if (info.numel() == 0 || info.is_meta()) return;  // meta: no values, so nothing failed (as torch)
  Tensor host = info.cpu().contiguous();
  const int32_t* p = host.data_ptr<int32_t>();
  for (int64_t i = 0; i < host.numel(); ++i) {
    if (p[i] == 0) continue;
    std::string batch = info.dim() > 0 ? detail::cat("(Batch element ", i, "): ") : std::string();
    switch (kind) {
      case Failure::Singular:
        throw Error(detail::cat(op, ": ", batch, "The diagonal element ", p[i],
                                " is zero, the inversion could not be completed because the input matrix is singular."));
      case Failure::SolveSingular:
        throw Error(detail::cat(op, ": ", batch, "The solver failed because the input matrix is singular."));
      case Failure::LuSingular:
        throw Error(detail::cat(op, ": ", batch, "U[", p[i], ",", p[i], "] is zero and using it on lu_solve would result "
                                "in a division by zero. If you still want to perform the factorization, consider calling "
                                "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)"));
      case Failure::NotPositiveDefinite:
        throw Error(detail::cat(op, ": ", batch,
                                "The factorization could not be completed because the input is not positive-definite "
                                "(the leading minor of order ",
                                p[i], " is not positive-definite)."));
    }
  }
}

}  // namespace linalg_checks

using namespace linalg_checks;

namespace linalg_internal {

Tensor solve_matrices(const Tensor& A, const Tensor& b, const char* op) {
  const int64_t n = A.size(-1);
  EMBER_CHECK(b.size(-2) == n, op, ": Incompatible shapes of A and B for the equation AX = B (", A.size(-2), "x",
              A.size(-1), " and ", b.size(-2), "x", b.size(-1), ")");
  Shape batch = broadcast_shapes(Shape(A.sizes().begin(), A.sizes().end() - 2), Shape(b.sizes().begin(), b.sizes().end() - 2));
  Shape sa = batch, sb = batch;
  sa.insert(sa.end(), {n, n});
  sb.insert(sb.end(), {n, b.size(-1)});
  auto [X, info] = ops::linalg_solve_ex()(A.expand(sa), b.expand(sb));
  check_info(info, "torch.linalg.solve", Failure::SolveSingular);
  return X;
}

}  // namespace linalg_internal

namespace linalg {

std::tuple<Tensor, Tensor> inv_ex(const Tensor& A, bool check_errors) {
  check_square(A, "linalg.inv");
  auto [X, info] = ops::linalg_inv_ex()(A);
  if (check_errors) check_info(info, "linalg.inv", Failure::Singular);
  return {X, info};
}

Tensor inv(const Tensor& A) { return std::get<0>(inv_ex(A, /*check_errors=*/true)); }

Tensor solve(const Tensor& A, const Tensor& B, bool left) {
  check_square(A, "linalg.solve");
  check_floating(B, "linalg.solve");
  EMBER_CHECK(A.dtype() == B.dtype(), "linalg.solve: Expected A and B to have the same dtype, but found A of type ",
              scalar_type_name(A.dtype()), " and B of type ", scalar_type_name(B.dtype()), " instead");
  // B is a (batch of) vector(s) when 1-D, or when it has A's shape without the last dim.
  Shape a_minus_last(A.sizes().begin(), A.sizes().end() - 1);
  const bool vector = B.dim() == 1 || (B.dim() == A.dim() - 1 && B.sizes() == a_minus_last);
  Tensor b = vector ? B.unsqueeze(-1) : B;
  EMBER_CHECK(b.dim() >= 2, "linalg.solve: Incompatible shapes of A and B for the equation AX = B (", A.size(-2), "x",
              A.size(-1), " and ", B.size(-1), ")");
  Tensor X = left ? linalg_internal::solve_matrices(A, b, "linalg.solve")
                  : linalg_internal::solve_matrices(A.mT(), b.mT(), "linalg.solve").mT();  // X A = B <=> A^T X^T = B^T
  return vector ? X.squeeze(-1) : X;
}

Tensor det(const Tensor& A) {
  check_square(A, "linalg.det");
  return ops::linalg_det()(A);
}

std::tuple<Tensor, Tensor> slogdet(const Tensor& A) {
  check_square(A, "linalg.slogdet");
  return ops::linalg_slogdet()(A);
}

std::tuple<Tensor, Tensor> cholesky_ex(const Tensor& A, bool upper, bool check_errors) {
  check_square(A, "linalg.cholesky");
  auto [L, info] = ops::linalg_cholesky_ex()(A, upper);
  if (check_errors) check_info(info, "linalg.cholesky", Failure::NotPositiveDefinite);
  return {L, info};
}

Tensor cholesky(const Tensor& A, bool upper) { return std::get<0>(cholesky_ex(A, upper, /*check_errors=*/true)); }

Tensor matmul(const Tensor& a, const Tensor& b) { return ember::matmul(a, b); }

}  // namespace linalg

Tensor det(const Tensor& A) { return linalg::det(A); }
std::tuple<Tensor, Tensor> slogdet(const Tensor& A) { return linalg::slogdet(A); }
Tensor inverse(const Tensor& A) { return linalg::inv(A); }
Tensor cholesky(const Tensor& A, bool upper) { return linalg::cholesky(A, upper); }

// log(det): nan where the determinant is negative, -inf where it is zero.
Tensor logdet(const Tensor& A) {
  check_square(A, "linalg.slogdet");
  auto [sign, logabs] = linalg::slogdet(A);
  return where(lt(sign, 0), std::nan(""), logabs);
}

// ---------------------------------------------------------------- gradients
namespace {
using namespace autograd;

// d(A^-1) = -A^-1 dA A^-1: grad_A = -X^T G X^T.
std::tuple<Tensor, Tensor> inv_ex_ag(const Tensor& A) {
  auto [X, info] = below_autograd([&] { return ops::linalg_inv_ex()(A); });
  record("LinalgInvExBackward0", {A}, {X}, {saved_output(X)}, [](const variable_list& g, LambdaNode& n) -> variable_list {
    Tensor Xt = n.unpack(0).mT();
    return {grad_for(n, 0, [&] { return -matmul(Xt, matmul(g[0], Xt)); })};
  });
  return {X, info};
}

// X = A^-1 B: grad_B = A^-T G, grad_A = -grad_B X^T.
std::tuple<Tensor, Tensor> solve_ex_ag(const Tensor& A, const Tensor& B) {
  auto [X, info] = below_autograd([&] { return ops::linalg_solve_ex()(A, B); });
  record("LinalgSolveExBackward0", {A, B}, {X}, {saved_input(A), saved_output(X)},
         [](const variable_list& g, LambdaNode& n) -> variable_list {
           Tensor gB = linalg::solve(n.unpack(0).mT(), g[0]);
           return {grad_for(n, 0, [&] { return -matmul(gB, n.unpack(1).mT()); }), grad_for(n, 1, [&] { return gB; })};
         });
  return {X, info};
}

// Products of all entries but one along the last dim, without division (zeros allowed).
Tensor products_but_one(const Tensor& s) {
  const int64_t k = s.size(-1);
  Tensor one = ones_like(s.narrow(-1, 0, 1));
  Tensor before = cumprod(cat({one, s.narrow(-1, 0, k - 1)}, -1), -1);
  Tensor after = flip(cumprod(flip(cat({s.narrow(-1, 1, k - 1), one}, -1), {-1}), -1), {-1});
  return before * after;
}

// d det(A) = det(A) tr(A^-1 dA): grad_A = g det A^-T. For a singular matrix (any info != 0),
// the cofactor matrix from the SVD A = U S V^T: det(U) det(V) U diag(prod_{j != i} s_j) V^T.
Tensor det_backward(const Tensor& g, const Tensor& A, const Tensor& det) {
  auto [Ainv, info] = linalg::inv_ex(A);
  Tensor gd = (g * det).unsqueeze(-1).unsqueeze(-1);
  if (A.size(-1) == 0) return zeros_like(A);
  if (!any(ne(info, 0)).item<bool>()) return gd * Ainv.mT();
  auto [U, S, Vh] = linalg::svd(A, /*full_matrices=*/false);
  Tensor orient = (linalg::det(U.detach()) * linalg::det(Vh.detach())).unsqueeze(-1).unsqueeze(-1);
  Tensor cof = matmul(U * products_but_one(S).unsqueeze(-2), Vh) * orient;
  return g.unsqueeze(-1).unsqueeze(-1) * cof;
}

Tensor det_ag(const Tensor& A) {
  Tensor d = below_autograd([&] { return ops::linalg_det()(A); });
  record("LinalgDetBackward0", {A}, {d}, {saved_input(A), saved_output(d)},
         [](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] { return det_backward(g[0], n.unpack(0), n.unpack(1)); })};
         });
  return d;
}

// d log|det A| = tr(A^-1 dA): grad_A = g A^-T (the sign is piecewise constant).
std::tuple<Tensor, Tensor> slogdet_ag(const Tensor& A) {
  auto [sign, logabs] = below_autograd([&] { return ops::linalg_slogdet()(A); });
  record("LinalgSlogdetBackward0", {A}, {logabs}, {saved_input(A)},
         [](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] { return g[0].unsqueeze(-1).unsqueeze(-1) * linalg::inv(n.unpack(0)).mT(); })};
         });
  return {sign, logabs};
}

// PyTorch's cholesky_backward: with L lower, gA = L^-T Phi(L^T gL) L^-1 symmetrised, where
// Phi takes the lower triangle and halves the diagonal.
std::tuple<Tensor, Tensor> cholesky_ex_ag(const Tensor& A, bool upper) {
  auto [L, info] = below_autograd([&] { return ops::linalg_cholesky_ex()(A, upper); });
  record("LinalgCholeskyExBackward0", {A}, {L}, {saved_output(L)},
         [upper](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] {
             Tensor Lo = upper ? n.unpack(0).mT() : n.unpack(0);
             Tensor gL = upper ? g[0].mT() : g[0];
             Tensor gA = matmul(Lo.mT(), gL).tril();
             gA = (gA + gA.tril(-1).mT()) * 0.5;
             Tensor Linv = linalg::inv(Lo);
             return matmul(Linv.mT(), matmul(gA, Linv));
           })};
         });
  return {L, info};
}

EMBER_REGISTER_KERNEL(linalg_inv_ex, Autograd, inv_ex_ag);
EMBER_REGISTER_KERNEL(linalg_solve_ex, Autograd, solve_ex_ag);
EMBER_REGISTER_KERNEL(linalg_det, Autograd, det_ag);
EMBER_REGISTER_KERNEL(linalg_slogdet, Autograd, slogdet_ag);
EMBER_REGISTER_KERNEL(linalg_cholesky_ex, Autograd, cholesky_ex_ag);

}  // namespace
}  // namespace ember
