// LU with partial pivoting: torch.linalg.lu_factor(_ex), lu, lu_solve and torch.lu_unpack.
// The factorisation is the dispatched op linalg_lu_factor_ex (LAPACK getrf on the CPU); the
// rest are composites over it (triangular parts, a permutation matrix from the pivots,
// triangular solves), so their gradients come from lu_factor's (PyTorch's linalg_lu_backward,
// square case) and their parts.
#include <numeric>

#include "autograd/record.h"
#include "ember/linalg.h"
#include "ember/ops.h"
#include "ops/linalg_checks.h"
#include "ops/op_handles.h"

namespace ember {
using namespace linalg_checks;

namespace {

// P with A = P L U from getrf's pivots (row i was swapped with row pivots[i] - 1, in order):
// P[..., j, i] = 1 where j = perm[i]. The pivots are read on the host.
Tensor permutation_matrix(const Tensor& pivots, int64_t m, const Tensor& like) {
  Tensor piv = pivots.cpu().contiguous();
  const int64_t k = piv.size(-1);
  Shape batch(piv.sizes().begin(), piv.sizes().end() - 1);
  const int64_t nb = shape_numel(batch);
  Shape pshape = batch;
  pshape.push_back(m);
  Tensor perm = empty(pshape, {.dtype = kInt64, .device = Device(DeviceType::CPU)});
  const int32_t* pv = piv.data_ptr<int32_t>();
  int64_t* pp = perm.data_ptr<int64_t>();
  for (int64_t b = 0; b < nb; ++b) {
    int64_t* row = pp + b * m;
    std::iota(row, row + m, int64_t(0));
    for (int64_t i = 0; i < k; ++i) {
      int64_t j = pv[b * k + i] - 1;
      EMBER_CHECK(j >= i && j < m, "lu_unpack: pivots[", i, "] = ", j + 1, " is out of range [", i + 1, ", ", m,
                  "] (pivots must come from lu_factor)");
      std::swap(row[i], row[j]);
    }
  }
  Tensor rows = arange(m, {.dtype = kInt64, .device = like.device()}).unsqueeze(-1);
  return eq(rows, perm.to(like.device()).unsqueeze(-2)).to(like.dtype());
}

}  // namespace

namespace linalg {

std::tuple<Tensor, Tensor, Tensor> lu_factor_ex(const Tensor& A, bool check_errors) {
  EMBER_CHECK(A.dim() >= 2, "torch.lu_factor: Expected tensor with 2 or more dimensions. Got size: ", A.sizes(),
              " instead");
  check_floating(A, "torch.linalg.lu_factor");
  auto [LU, piv, info] = ops::linalg_lu_factor_ex()(A);
  if (check_errors) check_info(info, "torch.linalg.lu_factor_ex", Failure::LuSingular);
  return {LU, piv, info};
}

std::tuple<Tensor, Tensor> lu_factor(const Tensor& A) {
  auto [LU, piv, info] = lu_factor_ex(A);
  check_info(info, "torch.linalg.lu_factor", Failure::LuSingular);
  return {LU, piv};
}

std::tuple<Tensor, Tensor, Tensor> lu(const Tensor& A) {
  auto [LU, piv, info] = lu_factor_ex(A);
  return lu_unpack(LU, piv);
}

Tensor lu_solve(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left, bool adjoint) {
  check_square(LU, "linalg.lu_solve", "LU");
  EMBER_CHECK(B.dim() >= 2, "linalg.lu_solve: The input tensor B must have at least 2 dimensions.");
  EMBER_CHECK(pivots.dtype() == kInt32, "linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32");
  const int64_t n = LU.size(-1);
  if (!left) {  // X A = B  <=>  A^T X^T = B^T
    return lu_solve(LU, pivots, B.mT(), /*left=*/true, !adjoint).mT();
  }
  EMBER_CHECK(B.size(-2) == n, "linalg.lu_solve: Incompatible shapes of A and B for the equation AX = B (", n, "x", n,
              " and ", B.size(-2), "x", B.size(-1), ")");
  Tensor P = permutation_matrix(pivots, n, LU);
  if (!adjoint) {  // P L U X = B
    Tensor y = solve_triangular(LU, ember::matmul(P.mT(), B), /*upper=*/false, true, /*unitriangular=*/true);
    return solve_triangular(LU, y, /*upper=*/true);
  }
  // U^T L^T P^T X = B
  Tensor y = solve_triangular(LU.mT(), B, /*upper=*/false);
  Tensor z = solve_triangular(LU.mT(), y, /*upper=*/true, true, /*unitriangular=*/true);
  return ember::matmul(P, z);
}

}  // namespace linalg

std::tuple<Tensor, Tensor, Tensor> lu_unpack(const Tensor& LU, const Tensor& pivots) {
  EMBER_CHECK(LU.dim() >= 2, "torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: ", LU.sizes(),
              " instead");
  const int64_t m = LU.size(-2), n = LU.size(-1), k = std::min(m, n);
  EMBER_CHECK(pivots.dim() >= 1 && pivots.size(-1) == k, "torch.lu_unpack: pivots must have size ", k,
              " in its last dim, got ", pivots.sizes());
  Tensor L = LU.narrow(-1, 0, k).tril(-1) + eye(m, k, LU.options());
  Tensor U = LU.narrow(-2, 0, k).triu();
  return {permutation_matrix(pivots, m, LU), L, U};
}

// ---------------------------------------------------------------- gradient
namespace {
using namespace autograd;

// PyTorch's linalg_lu_backward for square A = P L U, with gL / gU the strict lower / upper
// triangles of LU's gradient: gA = P L^-T [tril(L^T gL, -1) + triu(gU U^T)] U^-T.
Tensor lu_factor_backward(const Tensor& g, const Tensor& LU, const Tensor& pivots) {
  EMBER_CHECK(LU.size(-1) == LU.size(-2),
              "linalg.lu_factor: the gradient of a non-square LU factorisation is not implemented in ember");
  auto [P, L, U] = lu_unpack(LU, pivots);
  Tensor phi = matmul(L.mT(), g.tril(-1)).tril(-1) + matmul(g.triu(), U.mT()).triu();
  Tensor x = linalg::solve_triangular(U.mT(), phi, /*upper=*/false, /*left=*/false);
  x = linalg::solve_triangular(L.mT(), x, /*upper=*/true, /*left=*/true, /*unitriangular=*/true);
  return matmul(P, x);
}

std::tuple<Tensor, Tensor, Tensor> lu_factor_ex_ag(const Tensor& A) {
  auto [LU, piv, info] = below_autograd([&] { return ops::linalg_lu_factor_ex()(A); });
  record("LinalgLuFactorExBackward0", {A}, {LU}, {saved_output(LU), saved_input(piv)},
         [](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] { return lu_factor_backward(g[0], n.unpack(0), n.unpack(1)); })};
         });
  return {LU, piv, info};
}

EMBER_REGISTER_KERNEL(linalg_lu_factor_ex, Autograd, lu_factor_ex_ag);

}  // namespace
}  // namespace ember
