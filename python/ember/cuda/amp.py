"""ember.cuda.amp: torch.cuda.amp's names, deprecated in torch 2 in favour of ember.amp with
device_type "cuda" (same FutureWarnings)."""
import functools
import warnings

from .. import amp as _amp

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast(_amp.autocast):
    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. "
                      "Please use `torch.amp.autocast('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        from .. import float16
        super().__init__("cuda", dtype=float16 if dtype is None else dtype, enabled=enabled,
                         cache_enabled=cache_enabled)


class GradScaler(_amp.GradScaler):
    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. "
                      "Please use `torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)


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
