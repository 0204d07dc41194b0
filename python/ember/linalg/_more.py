"""torch.linalg functions composed of ember's linalg ops: solve_ex, tensorinv, tensorsolve,
vander, householder_product. Differentiable through the ops they are built from."""
import math
from collections import namedtuple

from .. import _C
from .._C import _linalg as _L
from .._out import with_out

__all__ = ["solve_ex", "tensorinv", "tensorsolve", "vander", "householder_product"]

_solve_ex_result = namedtuple("linalg_solve_ex", ["result", "info"])


def solve_ex(A, B, *, left=True, check_errors=False):
    """(X, info) with A X = B (X A = B when not left); info is 0, or i > 0 when the LU
    factorisation's i-th pivot is zero (then X holds the inf/NaN the substitution gives)."""
    if not left:  # X A = B  <=>  A^T X^T = B^T
        result, info = solve_ex(A.mT, B.mT, check_errors=check_errors)
        return _solve_ex_result(result.mT, info)
    LU, pivots, info = _L.lu_factor_ex(A)
    if check_errors and bool((info > 0).any()):
        raise RuntimeError("torch.linalg.solve_ex: The solver failed because the input matrix is singular.")
    vector_rhs = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    rhs = B.unsqueeze(-1) if vector_rhs else B
    singular = info > 0
    if bool(singular.any()):
        # ember's lu_solve refuses singular factors; solve the rest and give the singular ones NaN
        # (torch leaves whatever its substitution produced there: "not meaningful" either way).
        eye = _C.eye(A.shape[-1], dtype=A.dtype, device=A.device).expand_as(A)
        mask = singular.reshape(tuple(singular.shape) + (1, 1))
        LU, pivots, _ = _L.lu_factor_ex(_C.where(mask, eye, A))
        nan = _C.tensor(math.nan, dtype=rhs.dtype, device=rhs.device)
        result = _C.where(mask, nan, _L.lu_solve(LU, pivots, rhs))
    else:
        result = _L.lu_solve(LU, pivots, rhs)
    return _solve_ex_result(result.squeeze(-1) if vector_rhs else result, info)


def tensorinv(A, ind=2):
    """The tensor Ainv with tensordot(Ainv, A, ind) the identity: inv of A viewed as a
    prod(shape[:ind]) x prod(shape[ind:]) matrix."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    return _L.inv(A.reshape(rows, cols)).reshape(tuple(A.shape[ind:]) + tuple(A.shape[:ind]))


def tensorsolve(A, B, dims=None):
    """X with tensordot(A, X, X.dim()) = B; `dims` moves those dimensions of A to the end first."""
    if dims is not None:
        dims = [d % A.dim() for d in dims]
        A = A.permute([d for d in range(A.dim()) if d not in dims] + dims)
    result_shape = tuple(A.shape[B.dim():])
    rows, cols = B.numel(), math.prod(result_shape)
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {cols} != {rows}")
    return _L.solve(A.reshape(rows, cols), B.reshape(rows)).reshape(result_shape)


def vander(x, *, N=None):
    """Columns x^0, x^1, ..., x^(N-1) along a new last dimension (batched x)."""
    if x.dim() < 1:
        raise RuntimeError("linalg.vander: x must have at least one dimension.")
    n = x.shape[-1] if N is None else int(N)
    if n <= 1:
        if n < 1:
            raise RuntimeError("N must be greater than 1.")
        return _C.ones_like(x).unsqueeze(-1)
    dtype = _C.promote_types(x.dtype, _C.int64)
    xs = x.to(dtype).unsqueeze(-1)
    return _C.cat([_C.ones_like(xs), xs.expand(tuple(x.shape) + (n - 1,))], -1).cumprod(-1)


def householder_product(A, tau):
    """The first n columns of H_1 H_2 ... H_k, H_i = I - tau_i v_i v_i^H with v_i the i-th column
    of A below the diagonal and 1 on it (LAPACK's orgqr; geqrf's output gives QR's Q)."""
    if A.dim() < 2:
        raise RuntimeError("torch.linalg.householder_product: input must have at least 2 dimensions.")
    m, n = A.shape[-2], A.shape[-1]
    k = tau.shape[-1]
    if m < n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if k > n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    rows = _C.arange(m, device=A.device).unsqueeze(-1)
    Q = _C.eye(m, n, dtype=A.dtype, device=A.device).expand(tuple(A.shape[:-2]) + (m, n))
    for i in reversed(range(k)):  # Q <- H_i Q, from the last reflector to the first
        column = A[..., :, i:i + 1]
        v = _C.where(rows > i, column, _C.where(rows == i, _C.ones_like(column), _C.zeros_like(column)))
        t = tau[..., i].unsqueeze(-1).unsqueeze(-1)
        Q = Q - t * v @ (v.conj().mT @ Q)
    return Q


# torch's out= keyword (the result written into out, with torch's checks: ember/_out.py)
solve_ex = with_out(solve_ex, "linalg.solve_ex")
tensorinv = with_out(tensorinv, "linalg.tensorinv")
tensorsolve = with_out(tensorsolve, "linalg.tensorsolve")
householder_product = with_out(householder_product, "linalg.householder_product")
