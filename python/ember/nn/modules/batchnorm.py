"""torch.nn.modules.batchnorm's path: ember keeps the batch norms in normalization.py; this
module re-exports them (every *BatchNorm* class there, so later additions come along)."""
from . import normalization as _normalization
from .normalization import _BatchNorm, _NormBase, BatchNorm1d, BatchNorm2d  # noqa: F401

globals().update({k: v for k, v in vars(_normalization).items() if "BatchNorm" in k and isinstance(v, type)})
