"""clip_grad_norm_ / clip_grad_value_: the C++ implementations (include/ember/nn/utils.h)."""
import warnings

from ... import _C
from ..._C import Tensor
from ..._C import _nn as _U

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_"]


def _as_list(parameters):
    if isinstance(parameters, Tensor):
        return [parameters]
    return list(parameters)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    r"""Scales the gradients of `parameters` in place so their joint norm is at most max_norm;
    returns the total norm (before clipping) as a 0-dim tensor."""
    params = [p for p in _as_list(parameters) if p.grad is not None]
    if len(params) == 0:
        return _C.tensor(0.0)
    return _U.clip_grad_norm_(params, float(max_norm), float(norm_type), error_if_nonfinite)


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    warnings.warn("torch.nn.utils.clip_grad_norm is now deprecated in favor of torch.nn.utils.clip_grad_norm_.",
                  stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite)


def clip_grad_value_(parameters, clip_value):
    params = [p for p in _as_list(parameters) if p.grad is not None]
    _U.clip_grad_value_(params, float(clip_value))
