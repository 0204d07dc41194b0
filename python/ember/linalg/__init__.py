"""ember.linalg: torch.linalg's functions (C++ ops in src/ops/linalg_*.cpp, over LAPACK)."""
from .._C._linalg import (  # noqa: F401
    inv, inv_ex, solve, det, slogdet, cholesky, cholesky_ex, qr, svd, svdvals, eigh, eigvalsh,
    lstsq, pinv, matrix_rank, norm, vector_norm, matrix_norm, cross, matmul, solve_triangular,
    matrix_power, matrix_exp, multi_dot, vecdot, diagonal, lu_factor, lu_factor_ex, lu, lu_solve,
    cond, eig, eigvals,
)

from ._more import solve_ex, tensorinv, tensorsolve, vander, householder_product  # noqa: F401,E402

# torch.linalg.LinAlgError subclasses RuntimeError; ember raises RuntimeError for the same
# failures (singular matrix, not positive-definite), so this name catches them.
LinAlgError = RuntimeError



