"""InstanceNorm1d/2d/3d: per-sample, per-channel normalisation (F.instance_norm), with torch's
optional affine weight/bias and running statistics (used in eval when track_running_stats)."""
import warnings

from .. import functional as F
from .normalization import _NormBase

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


class _InstanceNorm(_NormBase):
    _no_batch_dim = 2
    _expected = (2, 3)

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)

    def _check_input_dim(self, input):
        if input.dim() not in self._expected:
            raise ValueError(f"expected {self._expected[0]}D or {self._expected[1]}D input "
                             f"(got {input.dim()}D input)")

    def _get_no_batch_dim(self):
        return self._no_batch_dim

    def _apply_instance_norm(self, input):
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                               self.training or not self.track_running_stats,
                               self.momentum if self.momentum is not None else 0.0, self.eps)

    def forward(self, input):
        self._check_input_dim(input)
        feature_dim = input.dim() - self._get_no_batch_dim()
        if input.size(feature_dim) != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match num_features"
                                 f" ({self.num_features}), but got: {input.size(feature_dim)}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. "
                          "You can silence this warning by not passing in num_features, "
                          "which is not used because affine=False")
        if input.dim() == self._get_no_batch_dim():
            return self._apply_instance_norm(input.unsqueeze(0)).squeeze(0)
        return self._apply_instance_norm(input)


class InstanceNorm1d(_InstanceNorm):
    _no_batch_dim = 2
    _expected = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    _no_batch_dim = 3
    _expected = (3, 4)


class InstanceNorm3d(_InstanceNorm):
    _no_batch_dim = 4
    _expected = (4, 5)


def __getattr__(name):
    # torch's path for the lazy variants, defined in lazy.py (which imports this module)
    if name in ("LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"):
        from . import lazy
        return getattr(lazy, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
