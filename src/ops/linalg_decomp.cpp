// torch.linalg's decompositions: qr, svd/svdvals, eigh/eigvalsh, and what builds on them (lstsq,
// pinv, matrix_rank), with torch's top-level svd/qr/pinverse. The factorisations are dispatched
// ops (op_list.h "linalg (LAPACK)"); their gradients are PyTorch's formulas (FunctionsManual's
// linalg_qr_backward, svd_backward, linalg_eig_backward for the hermitian case) written with
// differentiable ember ops, so double backward works too.
#include <cmath>
#include <limits>

#include "autograd/record.h"
#include "ember/autograd/autograd.h"
#include "ember/linalg.h"
#include "ember/ops.h"
#include "ops/linalg_checks.h"
#include "ops/op_handles.h"

namespace ember {
using namespace linalg_checks;

namespace {

bool needs_grad(const Tensor& t) { return autograd::GradMode::is_enabled() && t.requires_grad(); }

double eps_of(DType t) {
  return t == kFloat64 ? std::numeric_limits<double>::epsilon() : double(std::numeric_limits<float>::epsilon());
}

// A diagonal matrix per vector of the batch (torch.diag_embed on the last dim).
Tensor diag_embed_last(const Tensor& v) {
  const int64_t k = v.size(-1);
  return v.unsqueeze(-1) * eye(k, std::nullopt, v.options());
}

// x with its main diagonal replaced by ones (the eigen/singular value gaps' safe divisor); a
// tensor of ones, not the number 1, so complex gaps (eig's) stay complex.
Tensor ones_on_diagonal(const Tensor& x) {
  Tensor I = eye(x.size(-1), std::nullopt, {.dtype = kBool, .device = x.device()});
  return where(I, ones_like(x), x);
}

}  // namespace

namespace linalg {

std::tuple<Tensor, Tensor> qr(const Tensor& A, const std::string& mode) {
  int64_t m = mode == "reduced" ? 0 : mode == "complete" ? 1 : mode == "r" ? 2 : -1;
  EMBER_CHECK(m >= 0, "qr received unrecognized mode '", mode,
              "' but expected one of 'reduced' (default), 'r', or 'complete'");
  check_matrices(A, "linalg.qr");
  return ops::linalg_qr()(A, m);
}

std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& A, bool full_matrices) {
  check_matrices(A, "linalg.svd");
  return ops::linalg_svd()(A, full_matrices, /*compute_uv=*/true);
}

// Without a gradient to compute, the singular values alone (no U, V); with one, the reduced SVD,
// whose backward needs U and V.
Tensor svdvals(const Tensor& A) {
  check_matrices(A, "linalg.svdvals");
  return std::get<1>(ops::linalg_svd()(A, false, /*compute_uv=*/needs_grad(A)));
}

namespace {
bool upper_of(const std::string& uplo) {
  EMBER_CHECK(uplo == "L" || uplo == "U" || uplo == "l" || uplo == "u",
              "Expected UPLO argument to be 'L' or 'U', but got ", uplo);
  return uplo == "U" || uplo == "u";
}
}  // namespace

std::tuple<Tensor, Tensor> eigh(const Tensor& A, const std::string& UPLO) {
  bool upper = upper_of(UPLO);
  check_square(A, "linalg.eigh");
  return ops::linalg_eigh()(A, upper, /*compute_v=*/true);
}

namespace {
// eig takes complex matrices too (the other decompositions here are real-only).
void check_eig_input(const Tensor& A, const char* op) {
  if (!is_complex(A.dtype())) return check_square(A, op);
  EMBER_CHECK(A.dim() >= 2, op, ": The input tensor A must have at least 2 dimensions.");
  EMBER_CHECK(A.size(-1) == A.size(-2), op, ": A must be batches of square matrices, but they are ", A.size(-2),
              " by ", A.size(-1), " matrices");
}
}  // namespace

std::tuple<Tensor, Tensor> eig(const Tensor& A) {
  check_eig_input(A, "linalg.eig");
  return ops::linalg_eig()(A, /*compute_v=*/true);
}

Tensor eigvals(const Tensor& A) {
  check_eig_input(A, "linalg.eigvals");
  return std::get<0>(ops::linalg_eig()(A, /*compute_v=*/needs_grad(A)));
}

Tensor eigvalsh(const Tensor& A, const std::string& UPLO) {
  bool upper = upper_of(UPLO);
  check_square(A, "linalg.eigvalsh");
  return std::get<0>(ops::linalg_eigh()(A, upper, /*compute_v=*/needs_grad(A)));
}

namespace {

// torch's tolerance rule for pinv and matrix_rank: atol and rtol default to 0 and
// eps * max(m, n); rtol is 0 when only a positive atol is given.
Tensor tolerance(const Tensor& A, const Tensor& smax, std::optional<double> atol, std::optional<double> rtol) {
  double a = atol.value_or(0.0);
  double r = rtol ? *rtol : (atol && *atol > 0 ? 0.0 : eps_of(A.dtype()) * double(std::max(A.size(-1), A.size(-2))));
  return clamp(smax * r, Scalar(a));
}

}  // namespace

Tensor pinv(const Tensor& A, std::optional<double> atol, std::optional<double> rtol, bool hermitian) {
  check_matrices(A, "linalg.pinv");
  if (hermitian) {
    auto [L, V] = linalg::eigh(A);
    Tensor absL = abs(L);
    Tensor tol = tolerance(A, amax(absL, {-1}, true), atol, rtol);
    Tensor keep = gt(absL, tol);
    Tensor Linv = where(keep, reciprocal(where(keep, L, 1.0)), 0.0);
    return ember::matmul(V * Linv.unsqueeze(-2), V.mT());
  }
  auto [U, S, Vh] = linalg::svd(A, /*full_matrices=*/false);
  if (S.size(-1) == 0) return zeros_like(A.mT()).contiguous();
  Tensor tol = tolerance(A, S.narrow(-1, 0, 1), atol, rtol);
  Tensor keep = gt(S, tol);
  // 1 / S only where kept, so a zero singular value sends no inf/nan back through the gradient.
  Tensor Sinv = where(keep, reciprocal(where(keep, S, 1.0)), 0.0);
  return ember::matmul(Vh.mT() * Sinv.unsqueeze(-2), U.mT());
}

Tensor matrix_rank(const Tensor& A, std::optional<double> atol, std::optional<double> rtol, bool hermitian) {
  check_matrices(A, "linalg.matrix_rank");
  NoGradGuard no_grad;
  Tensor s = hermitian ? abs(eigvalsh(A)) : svdvals(A);
  if (s.size(-1) == 0) return zeros(s.narrow(-1, 0, 0).squeeze(-1).sizes(), {.dtype = kInt64, .device = A.device()});
  Tensor tol = tolerance(A, amax(s, {-1}, true), atol, rtol);
  return sum(gt(s, tol), {-1});
}

LstsqResult lstsq(const Tensor& A, const Tensor& B, std::optional<double> rcond, std::optional<std::string> driver) {
  check_matrices(A, "torch.linalg.lstsq");
  check_floating(B, "torch.linalg.lstsq");
  EMBER_CHECK(B.dim() >= 1, "torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and (input.dim() - other.dim()) <= 1");
  EMBER_CHECK(A.dtype() == B.dtype(), "torch.linalg.lstsq: Expected input and other to have the same dtype, but got input's dtype ",
              scalar_type_name(A.dtype()), " and other's dtype ", scalar_type_name(B.dtype()));
  if (driver) {
    EMBER_CHECK(*driver == "gels" || *driver == "gelsy" || *driver == "gelsd" || *driver == "gelss",
                "torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)");
  }
  // One dim fewer than A: B is a (batch of) vector(s), as torch's lstsq decides.
  const bool vector = B.dim() == A.dim() - 1;
  EMBER_CHECK(B.dim() == A.dim() || vector,
              "torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and (input.dim() - other.dim()) <= 1");
  Tensor b = vector ? B.unsqueeze(-1) : B;
  EMBER_CHECK(A.size(-2) == b.size(-2), vector ? "torch.linalg.lstsq: input.size(-2) should match other.size(-1)"
                                               : "torch.linalg.lstsq: input.size(-2) should match other.size(-2)");
  const int64_t m = A.size(-2), n = A.size(-1);
  Shape batch = broadcast_shapes(Shape(A.sizes().begin(), A.sizes().end() - 2), Shape(b.sizes().begin(), b.sizes().end() - 2));
  Shape sa = batch, sb = batch;
  sa.insert(sa.end(), {m, n});
  sb.insert(sb.end(), {m, b.size(-1)});
  Tensor a = A.expand(sa), bb = b.expand(sb);
  double rc = rcond ? *rcond : eps_of(A.dtype()) * double(std::max(m, n));
  Tensor solution, rank;
  {
    NoGradGuard no_grad;
    std::tie(solution, rank) = ops::linalg_lstsq_gelsy()(a, bb, rc);
  }
  // The gradient: of the same minimum-norm solution written as pinv(A) B.
  if (needs_grad(A) || needs_grad(B)) solution = ember::matmul(pinv(a, std::nullopt, rc), bb);
  if (vector) solution = solution.squeeze(-1);
  Tensor none = empty({0}, A.options());
  return {solution, none, rank, none.clone()};
}

}  // namespace linalg

std::tuple<Tensor, Tensor> qr(const Tensor& A, bool some) { return linalg::qr(A, some ? "reduced" : "complete"); }

std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& A, bool some, bool compute_uv) {
  check_matrices(A, "linalg.svd");
  if (!compute_uv) {
    Tensor S = linalg::svdvals(A);
    const int64_t m = A.size(-2), n = A.size(-1);
    Shape su(A.sizes().begin(), A.sizes().end() - 2), sv = su;
    su.insert(su.end(), {m, m});
    sv.insert(sv.end(), {n, n});
    return {zeros(su, A.options()), S, zeros(sv, A.options())};
  }
  auto [U, S, Vh] = linalg::svd(A, /*full_matrices=*/!some);
  return {U, S, Vh.mT()};
}

Tensor pinverse(const Tensor& A, double rcond) { return linalg::pinv(A, 0.0, rcond); }

// ---------------------------------------------------------------- gradients
namespace {
using namespace autograd;

// QR of a square or tall (m >= n) matrix: gA = (Q syminvadj(triu(gR R^T - Q^T gQ)) + gQ) R^-T
// with syminvadj(X) = X + X^T with the diagonal halved.
Tensor qr_backward_tall(const Tensor& gQ, const Tensor& gR, const Tensor& Q, const Tensor& R) {
  Tensor M;
  if (gR.defined()) M = matmul(gR, R.mT());
  if (gQ.defined()) M = M.defined() ? M - matmul(Q.mT(), gQ) : -matmul(Q.mT(), gQ);
  M = M.triu();
  M = M + M.mT();
  M = M - diag_embed_last(diagonal(M, 0, -2, -1) * 0.5);
  Tensor gA = matmul(Q, M);
  if (gQ.defined()) gA = gA + gQ;
  // gA R^-T: solve R X^T = gA^T.
  return linalg::solve(R, gA.mT()).mT();
}

// Wide (m < n): A = [X | Y] with X = Q R_X square and R_Y = Q^T Y, so Y contributes
// Y gR_Y^T to Q's gradient and Q gR_Y to its own.
Tensor qr_backward(const Tensor& gQ, const Tensor& gR, const Tensor& Q, const Tensor& R) {
  const int64_t m = R.size(-2), n = R.size(-1);
  if (m >= n) return qr_backward_tall(gQ, gR, Q, R);
  Tensor RX = R.narrow(-1, 0, m), RY = R.narrow(-1, m, n - m);
  Tensor gRX = gR.defined() ? gR.narrow(-1, 0, m) : Tensor();
  Tensor gQ2 = gQ;
  Tensor gY;
  if (gR.defined()) {
    Tensor gRY = gR.narrow(-1, m, n - m);
    Tensor Y = matmul(Q, RY);
    gQ2 = gQ.defined() ? gQ + matmul(Y, gRY.mT()) : matmul(Y, gRY.mT());
    gY = matmul(Q, gRY);
  } else {
    gY = zeros_like(RY);
  }
  Tensor gX = qr_backward_tall(gQ2, gRX, Q, RX);
  return cat({gX, gY}, -1);
}

std::tuple<Tensor, Tensor> qr_ag(const Tensor& A, int64_t mode) {
  auto [Q, R] = below_autograd([&] { return ops::linalg_qr()(A, mode); });
  const int64_t m = A.size(-2), n = A.size(-1);
  record("LinalgQrBackward0", {A}, {Q, R}, {saved_output(Q), saved_output(R)},
         [mode, m, n](const variable_list& g, LambdaNode& node) -> variable_list {
           EMBER_CHECK(mode != 2, "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
                       "Please use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.");
           EMBER_CHECK(!(mode == 1 && m > n),
                       "The QR decomposition is not differentiable when mode='complete' and nrows > ncols.");
           return {grad_for(node, 0, [&] { return qr_backward(g[0], g[1], node.unpack(0), node.unpack(1)); })};
         });
  return {Q, R};
}

// PyTorch's svd_backward for real inputs (U, Vh reduced to k = min(m, n) columns / rows).
Tensor svd_backward(const Tensor& gU, const Tensor& gS, const Tensor& gVh, const Tensor& U, const Tensor& S,
                    const Tensor& Vh) {
  const int64_t m = U.size(-2), n = Vh.size(-1);
  if (!gU.defined() && !gVh.defined()) {
    if (!gS.defined()) return Tensor();
    return m >= n ? matmul(U, gS.unsqueeze(-1) * Vh) : matmul(U * gS.unsqueeze(-2), Vh);
  }
  auto skew = [](const Tensor& X) { return X - X.mT(); };
  Tensor UhgU = gU.defined() ? skew(matmul(U.mT(), gU)) : Tensor();
  Tensor VhgV = gVh.defined() ? skew(matmul(Vh, gVh.mT())) : Tensor();
  Tensor S2 = S * S;
  Tensor E = ones_on_diagonal(S2.unsqueeze(-2) - S2.unsqueeze(-1));
  Tensor gA;
  if (gU.defined() && gVh.defined()) gA = (UhgU * S.unsqueeze(-2) + S.unsqueeze(-1) * VhgV) / E;
  else if (gU.defined()) gA = (UhgU * S.unsqueeze(-2)) / E;
  else gA = (S.unsqueeze(-1) * VhgV) / E;
  if (gS.defined()) gA = gA + diag_embed_last(gS);
  if (m > n && gU.defined()) {
    gA = matmul(U, gA);
    Tensor gUSinv = gU / S.unsqueeze(-2);
    gA = gA + gUSinv - matmul(U, matmul(U.mT(), gUSinv));
    gA = matmul(gA, Vh);
  } else if (m < n && gVh.defined()) {
    gA = matmul(gA, Vh);
    Tensor SinvgVh = gVh / S.unsqueeze(-1);
    gA = gA + SinvgVh - matmul(matmul(SinvgVh, Vh.mT()), Vh);
    gA = matmul(U, gA);
  } else {
    gA = m >= n ? matmul(U, matmul(gA, Vh)) : matmul(matmul(U, gA), Vh);
  }
  return gA;
}

std::tuple<Tensor, Tensor, Tensor> svd_ag(const Tensor& A, bool full, bool compute_uv) {
  auto [U, S, Vh] = below_autograd([&] { return ops::linalg_svd()(A, full, compute_uv); });
  if (!compute_uv) {
    record("LinalgSvdBackward0", {A}, {S}, {}, [](const variable_list&, LambdaNode&) -> variable_list {
      throw Error("linalg.svd: the singular values' gradient needs U and V: call it with compute_uv=True");
    });
    return {U, S, Vh};
  }
  record("LinalgSvdBackward0", {A}, {U, S, Vh}, {saved_output(U), saved_output(S), saved_output(Vh)},
         [full, shape = A.sizes()](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] {
             Tensor U = n.unpack(0), S = n.unpack(1), Vh = n.unpack(2);
             const int64_t k = S.size(-1);
             Tensor gU = g[0], gVh = g[2];
             if (full) {  // only the first k columns of U / rows of Vh are determined by A
               U = U.narrow(-1, 0, k);
               Vh = Vh.narrow(-2, 0, k);
               if (gU.defined()) gU = gU.narrow(-1, 0, k);
               if (gVh.defined()) gVh = gVh.narrow(-2, 0, k);
             }
             Tensor gA = svd_backward(gU, g[1], gVh, U, S, Vh);
             return gA.defined() ? gA : zeros(shape, U.options());
           })};
         });
  return {U, S, Vh};
}

// Hermitian linalg_eig_backward: gA = V (skew(V^T gV) / (L_j - L_i) + diag(gL)) V^T.
std::tuple<Tensor, Tensor> eigh_ag(const Tensor& A, bool upper, bool compute_v) {
  auto [L, V] = below_autograd([&] { return ops::linalg_eigh()(A, upper, compute_v); });
  if (!compute_v) {
    record("LinalgEighBackward0", {A}, {L}, {}, [](const variable_list&, LambdaNode&) -> variable_list {
      throw Error("linalg.eigh: the eigenvalues' gradient needs the eigenvectors: call it with compute_v=True");
    });
    return {L, V};
  }
  record("LinalgEighBackward0", {A}, {L, V}, {saved_output(L), saved_output(V)},
         [](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] {
             Tensor L = n.unpack(0), V = n.unpack(1);
             if (!g[1].defined()) return matmul(V * g[0].unsqueeze(-2), V.mT());
             Tensor VhgV = matmul(V.mT(), g[1]);
             VhgV = (VhgV - VhgV.mT()) * 0.5;
             Tensor ret = VhgV / ones_on_diagonal(L.unsqueeze(-2) - L.unsqueeze(-1));
             if (g[0].defined()) ret = ret + diag_embed_last(g[0]);
             return matmul(V, matmul(ret, V.mT()));
           })};
         });
  return {L, V};
}

// M^-1 B for complex M through the real system [[Re M, -Im M], [Im M, Re M]] (ember's LAPACK
// solves are real): what eig's backward needs for V^-H.
Tensor solve_complex(const Tensor& M, const Tensor& B) {
  const int64_t n = M.size(-1);
  Tensor Mr = real(M), Mi = imag(M);
  Tensor big = cat({cat({Mr, -Mi}, -1), cat({Mi, Mr}, -1)}, -2);
  Tensor X = linalg::solve(big, cat({real(B), imag(B)}, -2));
  return complex(X.narrow(-2, 0, n), X.narrow(-2, n, n));
}

// torch's linalg_eig_backward for a general (non-Hermitian) matrix:
//   gA = V^-H (diag(gL) + (V^H gV - V^H V Re(diag(V^H gV))) / conj(L_j - L_i)) V^H,
// the middle term projected so that the loss cannot see the phase of each eigenvector (torch
// refuses a loss that does: the imaginary part of diag(V^H gV) must vanish). A real A keeps
// the real part, as torch's handle_r_to_c.
std::tuple<Tensor, Tensor> eig_ag(const Tensor& A, bool compute_v) {
  auto [L, V] = below_autograd([&] { return ops::linalg_eig()(A, compute_v); });
  if (!compute_v) {
    record("LinalgEigBackward0", {A}, {L}, {}, [](const variable_list&, LambdaNode&) -> variable_list {
      throw Error("linalg.eig: the eigenvalues' gradient needs the eigenvectors: call it with compute_v=True");
    });
    return {L, V};
  }
  const bool real_input = !is_complex(A.dtype());
  record("LinalgEigBackward0", {A}, {L, V}, {saved_output(L), saved_output(V)},
         [real_input](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] {
             Tensor L = n.unpack(0), V = n.unpack(1);
             Tensor Vh = V.mT().conj();
             Tensor gA;
             if (!g[1].defined()) {
               gA = solve_complex(Vh, g[0].unsqueeze(-1) * Vh);
             } else {
               Tensor VhgV = matmul(Vh, g[1]);
               Tensor diag = diagonal(VhgV, 0, -2, -1);
               EMBER_CHECK(imag(diag).abs().max().item<double>() <= 1e-2 * (1 + real(diag).abs().max().item<double>()),
                           "linalg_eig_backward: The eigenvectors in the complex case are specified up to "
                           "multiplication by e^{i phi}. The specified loss function depends on this quantity, so "
                           "it is ill-defined.");
               Tensor inner = VhgV - matmul(Vh, V * real(diag).unsqueeze(-2));
               if (g[0].defined()) inner = inner + diag_embed_last(g[0]);
               Tensor Lc = L.conj();
               Tensor E = ones_on_diagonal(Lc.unsqueeze(-2) - Lc.unsqueeze(-1));
               gA = solve_complex(Vh, matmul(inner / E, Vh));
             }
             return real_input ? real(gA).contiguous() : gA;
           })};
         });
  return {L, V};
}

EMBER_REGISTER_KERNEL(linalg_qr, Autograd, qr_ag);
EMBER_REGISTER_KERNEL(linalg_eig, Autograd, eig_ag);
EMBER_REGISTER_KERNEL(linalg_svd, Autograd, svd_ag);
EMBER_REGISTER_KERNEL(linalg_eigh, Autograd, eigh_ag);

}  // namespace
}  // namespace ember
