"""clip_grad_norm_ / clip_grad_value_: the C++ implementations (include/ember/nn/utils.h)."""
import warnings

from ... import _C
from ..._C import Tensor
from ..._C import _nn as _U

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


def _as_list(parameters):
    if isinstance(parameters, Tensor):
        return [parameters]
    return list(parameters)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    r"""Scales the gradients of `parameters` in place so their joint norm is at most max_norm;
    returns the total norm (before clipping) as a 0-dim tensor."""
    params = [p for p in _as_list(parameters) if p.grad is not None]
    if len(params) == 0:
        return _C.tensor(0.0)
    return _U.clip_grad_norm_(params, float(max_norm), float(norm_type), error_if_nonfinite)


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    warnings.warn("torch.nn.utils.clip_grad_norm is now deprecated in favor of torch.nn.utils.clip_grad_norm_.",
                  stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite)


def clip_grad_value_(parameters, clip_value, foreach=None):
    params = [p for p in _as_list(parameters) if p.grad is not None]
    _U.clip_grad_value_(params, float(clip_value))


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the norms of `tensors` (usually gradients): the first half of clip_grad_norm_,
    for callers that combine norms across processes before clipping."""
    tensors = [t for t in _as_list(tensors) if t is not None]
    if not tensors:
        return _C.tensor(0.0)
    from ... import linalg
    norm_type = float(norm_type)
    norms = _C.stack([linalg.vector_norm(t.detach(), norm_type).to(tensors[0].device) for t in tensors])
    total = linalg.vector_norm(norms, norm_type)
    if error_if_nonfinite and not bool(total.isfinite()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                           "so it cannot be clipped. To disable this error and scale the gradients by the "
                           "non-finite norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scales the gradients of `parameters` in place by min(1, max_norm / (total_norm + 1e-6)):
    the second half of clip_grad_norm_, with a total norm computed by get_total_norm."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    scale = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(scale.to(g.device))
