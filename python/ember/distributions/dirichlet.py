"""Dirichlet(concentration): distributions over the simplex of the last dim."""
from .. import _C
from .._dtype_info import finfo
from .._size import Size
from . import constraints
from .exp_family import ExponentialFamily
from .gamma import standard_gamma_rsample

__all__ = ["Dirichlet"]


def sample_dirichlet(concentration):
    """Normalised independent gammas, kept strictly inside (0, 1). Differentiable in the
    concentration: the gammas' implicit reparameterisation gradients flow through the
    normalisation (a pathwise gradient of this sampler; torch uses a closed form of the same
    derivative)."""
    g = standard_gamma_rsample(concentration)
    x = g / g.sum(-1, keepdim=True)
    info = finfo(x.dtype)
    return x.clamp(min=info.tiny, max=1 - info.eps)


class Dirichlet(ExponentialFamily):
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.concentration = self.concentration.expand(tuple(batch_shape) + tuple(self.event_shape))
        super(Dirichlet, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        return sample_dirichlet(self.concentration.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (_C.xlogy(self.concentration - 1.0, value).sum(-1) + _C.lgamma(self.concentration.sum(-1))
                - _C.lgamma(self.concentration).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, True)
        # where every concentration is below 1 the density peaks at a vertex; torch picks it as the
        # argmax of that row of `mode` (0 / 0, all NaN, so the first category): the same here
        all_below_one = (self.concentration < 1).all(-1, keepdim=True)
        k = concentrationm1.shape[-1]
        vertex = (_C.arange(k, device=mode.device) == mode.argmax(-1, keepdim=True)).to(mode.dtype)
        return _C.where(all_below_one, vertex, mode)

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (_C.lgamma(self.concentration).sum(-1) - _C.lgamma(a0) - (k - a0) * _C.digamma(a0)
                - ((self.concentration - 1.0) * _C.digamma(self.concentration)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - _C.lgamma(x.sum(-1))
