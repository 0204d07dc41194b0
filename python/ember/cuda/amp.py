"""ember.cuda.amp: torch.cuda.amp's names, deprecated in torch 2 in favour of ember.amp with
device_type "cuda" (same FutureWarnings)."""
import functools
import warnings

from .. import amp as _amp
from ..amp.autocast_mode import _deprecated_autocast
from ..amp.grad_scaler import _deprecated_grad_scaler

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


autocast = _deprecated_autocast("cuda", "float16")
GradScaler = _deprecated_grad_scaler("cuda")


def custom_fwd(fwd=None, *, cast_inputs=None):
    warnings.warn("`torch.cuda.amp.custom_fwd(args...)` is deprecated. "
                  "Please use `torch.amp.custom_fwd(args..., device_type='cuda')` instead.", FutureWarning,
                  stacklevel=2)
    if fwd is None:
        return functools.partial(_amp.custom_fwd, device_type="cuda", cast_inputs=cast_inputs)
    return _amp.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd):
    warnings.warn("`torch.cuda.amp.custom_bwd(args...)` is deprecated. "
                  "Please use `torch.amp.custom_bwd(args..., device_type='cuda')` instead.", FutureWarning,
                  stacklevel=2)
    return _amp.custom_bwd(bwd, device_type="cuda")
