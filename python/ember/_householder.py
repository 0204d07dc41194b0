"""torch.geqrf / orgqr / ormqr: QR as LAPACK stores it (R on and above the diagonal, the
Householder vectors below it, their scalars tau), and products with its Q. Built from ember ops
one column at a time (a matrix of n columns takes n small steps, vectorised over the batch);
torch gives geqrf no gradient and neither does ember (the result is detached).

Reflector j (LAPACK's dlarfg convention, real matrices): with x the column below and on the
diagonal, alpha = x[0], beta = -sign(alpha) * |x|, tau = (beta - alpha) / beta and
v = x / (alpha - beta) with v[0] = 1, so that (I - tau v v^T) x = beta e_1; tau = 0 (no
reflection) when x is already zero below the diagonal."""
from collections import namedtuple

from . import _C
from ._C import Tensor

__all__ = ["geqrf", "orgqr", "ormqr"]

_geqrf_result = namedtuple("geqrf", ["a", "tau"])


def _real_matrices(op, A):
    if not isinstance(A, Tensor) or A.dim() < 2:
        raise RuntimeError(f"torch.{op}: input must have at least 2 dimensions.")
    if A.is_complex():
        raise NotImplementedError(f"ember's {op} handles real matrices only; got {A.dtype}")
    if not A.is_floating_point():
        raise RuntimeError(f"torch.{op}: Expected a floating point or complex tensor as input. Got {A.dtype}")


def geqrf(input):
    """(a, tau): the QR factorisation of each (..., m, n) matrix in LAPACK's packed form."""
    _real_matrices("geqrf", input)
    from .autograd.grad_mode import no_grad
    with no_grad():
        R = input.detach().clone()
        m, n = R.shape[-2], R.shape[-1]
        k = min(m, n)
        taus = []
        for j in range(k):
            x = R[..., j:, j]
            alpha = x[..., 0]
            below = x[..., 1:].norm(dim=-1) if m - j > 1 else _C.zeros_like(alpha)
            norm = (alpha * alpha + below * below).sqrt()
            reflect = below != 0
            beta = _C.where(alpha >= 0, -norm, norm)
            safe_beta = _C.where(reflect, beta, _C.ones_like(beta))
            tau = _C.where(reflect, (beta - alpha) / safe_beta, _C.zeros_like(alpha))
            scale = _C.where(reflect, 1.0 / (alpha - safe_beta), _C.zeros_like(alpha))
            v = x * scale.unsqueeze(-1)
            v = _C.cat([_C.ones_like(v[..., :1]), v[..., 1:]], -1)  # v[0] = 1
            # R[j:, j:] -= tau v (v^T R[j:, j:])
            block = R[..., j:, j:]
            update = tau.unsqueeze(-1).unsqueeze(-1) * v.unsqueeze(-1) * (v.unsqueeze(-2) @ block)
            R[..., j:, j:] = block - update
            # store beta on the diagonal and v below it (where nothing was reflected, keep x)
            column = _C.where(reflect.unsqueeze(-1), _C.cat([beta.unsqueeze(-1), v[..., 1:]], -1), x)
            R[..., j:, j] = column
            taus.append(tau)
        tau = _C.stack(taus, -1) if taus else _C.zeros(tuple(R.shape[:-2]) + (0,), dtype=R.dtype, device=R.device)
    return _geqrf_result(R, tau)


def orgqr(input, tau):
    """The first n columns of Q from geqrf's (a, tau): linalg.householder_product."""
    from .linalg import householder_product
    return householder_product(input, tau)


def ormqr(input, tau, other, left=True, transpose=False):
    """Q @ other (left) or other @ Q (right), Q^T when transpose, without forming Q: the
    reflectors H_i = I - tau_i v_i v_i^T applied one by one."""
    if input.dim() < 2 or other.dim() < 2:
        raise RuntimeError("torch.ormqr: input and other must have at least 2 dimensions.")
    m = input.shape[-2]
    k = tau.shape[-1]
    if (other.shape[-2] if left else other.shape[-1]) != m:
        raise RuntimeError(f"torch.ormqr: other.shape[{-2 if left else -1}] must be equal to input.shape[-2]")
    rows = _C.arange(m, device=input.device).unsqueeze(-1)
    C = other
    # left: Q C = H_1 ... H_k C (H_k first), Q^T C = H_k ... H_1 C (H_1 first);
    # right: C Q applies H_1 first, C Q^T applies H_k first. Each H_i is symmetric.
    order = range(k) if (left == transpose) else reversed(range(k))
    for i in order:
        column = input[..., :, i:i + 1]
        v = _C.where(rows > i, column, _C.where(rows == i, _C.ones_like(column), _C.zeros_like(column)))
        t = tau[..., i].unsqueeze(-1).unsqueeze(-1)
        if left:
            C = C - t * v @ (v.mT @ C)
        else:
            C = C - (C @ v) @ (t * v.mT)
    return C
