"""Gamma(concentration, rate), and the standard gamma sampler the Beta and Dirichlet samplers
share (Marsaglia and Tsang's squeeze-rejection method)."""
import numbers

from .. import _C
from .._dtype_info import finfo
from .._size import Size
from . import constraints
from .distribution import _C_no_grad
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Gamma", "standard_gamma", "standard_gamma_rsample"]


def standard_gamma(alpha, generator=None):
    """One Gamma(alpha, 1) draw per element of alpha (no gradient).

    Marsaglia & Tsang (2000): for a >= 1, d = a - 1/3, c = 1 / sqrt(9 d); draw x ~ N(0, 1),
    v = (1 + c x)^3, u ~ U(0, 1); accept d v when v > 0 and log u < x^2 / 2 + d - d v + d log v.
    For a < 1 the draw for a + 1 is scaled by u^(1/a). The loop redraws only the rejected
    elements (acceptance is above 95% for every a)."""
    with _C_no_grad():
        alpha = alpha.detach()
        dtype = alpha.dtype
        a = alpha.double().flatten()
        boost = a < 1
        a_work = _C.where(boost, a + 1, a)
        d = a_work - 1.0 / 3.0
        c = 1.0 / (9.0 * d).sqrt()
        out = _C.zeros_like(a)
        pending = _C.arange(a.numel(), device=a.device)
        while pending.numel() > 0:
            dp, cp = d[pending], c[pending]
            x = _C.randn(pending.numel(), dtype=_C.float64, device=a.device, generator=generator)
            u = _C.rand(pending.numel(), dtype=_C.float64, device=a.device, generator=generator)
            v = (1 + cp * x) ** 3
            safe_v = _C.where(v > 0, v, _C.ones_like(v))
            accept = (v > 0) & (u.log() < 0.5 * x * x + dp - dp * safe_v + dp * safe_v.log())
            done = pending[accept]
            out[done] = (dp * v)[accept]
            pending = pending[~accept]
        if bool(boost.any()):
            u = _C.rand(a.numel(), dtype=_C.float64, device=a.device, generator=generator)
            out = _C.where(boost, out * u.pow(1.0 / a), out)
        out = out.clamp(min=finfo(dtype).tiny)
        return out.to(dtype).reshape(alpha.shape)


def _standard_gamma_function():
    from ..autograd.function import Function

    class _StandardGamma(Function):
        """A Gamma(alpha, 1) draw whose gradient in alpha is the implicit reparameterisation one:
        d x / d alpha at the draw's fixed quantile (ember's _standard_gamma_grad op, as torch's)."""

        @staticmethod
        def forward(ctx, alpha):
            x = standard_gamma(alpha)
            ctx.save_for_backward(alpha, x)
            return x

        @staticmethod
        def backward(ctx, grad):
            alpha, x = ctx.saved_tensors
            return grad * _C._standard_gamma_grad(alpha, x)

    return _StandardGamma


_STANDARD_GAMMA = None


def standard_gamma_rsample(alpha):
    """standard_gamma(alpha) with gradients to alpha."""
    global _STANDARD_GAMMA
    if _STANDARD_GAMMA is None:
        _STANDARD_GAMMA = _standard_gamma_function()
    return _STANDARD_GAMMA.apply(alpha)


class Gamma(ExponentialFamily):
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        batch_shape = Size() if isinstance(concentration, numbers.Number) and isinstance(rate, numbers.Number) \
            else self.concentration.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gamma, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.concentration = self.concentration.expand(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        super(Gamma, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        value = standard_gamma_rsample(self.concentration.expand(shape)) / self.rate.expand(shape)
        return value.clamp(min=finfo(value.dtype).tiny)

    def log_prob(self, value):
        value = _C.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (_C.xlogy(self.concentration, self.rate) + _C.xlogy(self.concentration - 1, value)
                - self.rate * value - _C.lgamma(self.concentration))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return _C.igamma(self.concentration, value * self.rate)

    def entropy(self):
        return (self.concentration - _C.log(self.rate) + _C.lgamma(self.concentration)
                + (1.0 - self.concentration) * _C.digamma(self.concentration))

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return _C.lgamma(x + 1) + (x + 1) * _C.log(-y.reciprocal())
