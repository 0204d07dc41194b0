"""torch.nn.modules.batchnorm's path: ember keeps the batch norms in normalization.py; this
module re-exports them (every *BatchNorm* class there, so later additions come along)."""
from . import normalization as _normalization
from .normalization import _BatchNorm, _NormBase, BatchNorm1d, BatchNorm2d  # noqa: F401

globals().update({k: v for k, v in vars(_normalization).items() if "BatchNorm" in k and isinstance(v, type)})


def __getattr__(name):
    # torch's paths for the lazy batch norms (lazy.py) and SyncBatchNorm (sync_batchnorm.py)
    if name in ("LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d"):
        from . import lazy
        return getattr(lazy, name)
    if name == "SyncBatchNorm":
        from .sync_batchnorm import SyncBatchNorm
        return SyncBatchNorm
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
