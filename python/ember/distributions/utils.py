"""Helpers shared by the distributions: broadcasting parameters, probabilities <-> logits, and a
cached property for parameters derived from one another (probs from logits and back)."""
import numbers
from functools import update_wrapper

from .. import _C
from .._dtype_info import finfo

__all__ = ["broadcast_all", "logits_to_probs", "probs_to_logits", "clamp_probs", "lazy_property", "tril_matrix_to_vec",
           "vec_to_tril_matrix"]

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant


def _standard_normal(shape, dtype, device):
    return _C.randn(tuple(shape), dtype=dtype, device=device)


def _sum_rightmost(value, dim):
    """value with its dim rightmost dims summed out."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[: value.dim() - dim]) + (-1,)).sum(-1)


def broadcast_all(*values):
    """The arguments as tensors of one broadcast shape; numbers take the dtype/device of the first
    tensor argument (the default dtype when there is none)."""
    if not all(isinstance(v, (_C.Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, torch.Tensor or objects "
                         "implementing __torch_function__.")
    if not all(isinstance(v, _C.Tensor) for v in values):
        like = next((v for v in values if isinstance(v, _C.Tensor)), None)
        opts = dict(dtype=_C.get_default_dtype()) if like is None else dict(dtype=like.dtype, device=like.device)
        values = [v if isinstance(v, _C.Tensor) else _C.tensor(float(v), **opts) for v in values]
    return _C.broadcast_tensors(*values)


def clamp_probs(probs):
    """probs clamped to [eps, 1 - eps] of their dtype, so their logs stay finite."""
    eps = finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits, is_binary=False):
    if is_binary:
        return _C.sigmoid(logits)
    return _C.softmax(logits, -1)


def probs_to_logits(probs, is_binary=False):
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return _C.log(ps_clamped) - _C.log1p(-ps_clamped)
    return _C.log(ps_clamped)


class lazy_property:
    """Computed on first access and stored on the instance (so probs and logits are derived from
    whichever one the distribution was built with, once)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        from ..autograd.grad_mode import enable_grad
        with enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def _tril_mask(n, diag, device):
    arange = _C.arange(n, device=device)
    return arange < arange.view(-1, 1) + (diag + 1)


def tril_matrix_to_vec(mat, diag=0):
    """The lower triangle (below the diag-th diagonal) of a D x D matrix, or a batch of them, as
    vectors in row order."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    return mat[..., _tril_mask(n, diag, mat.device)]


def vec_to_tril_matrix(vec, diag=0):
    """The inverse of tril_matrix_to_vec: vectors into D x D lower triangular matrices."""
    # positive root of D**2 + (1 + 2 diag) D - |diag| (diag + 1) - 2 vec.shape[-1] = 0
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    eps = finfo(vec.dtype).eps
    if round(n) - n > eps:
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be expressed as "
                         "the lower triangular part of a square D x D matrix.")
    n = round(n)
    mat = vec.new_zeros(tuple(vec.shape[:-1]) + (n, n))
    mat[..., _tril_mask(n, diag, vec.device)] = vec
    return mat
