"""ember.cuda.amp: torch.cuda.amp's names (see ember.amp: disabled without CUDA, as in torch)."""
import functools

from ..amp import GradScaler, autocast as _autocast

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast(_autocast):
    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


def custom_fwd(fwd=None, **kwargs):
    if fwd is None:
        return lambda f: custom_fwd(f, **kwargs)
    return functools.wraps(fwd)(lambda *a, **k: fwd(*a, **k))


def custom_bwd(bwd):
    return functools.wraps(bwd)(lambda *a, **k: bwd(*a, **k))
