"""ember.special: torch.special's functions. The elementary ones are ember ops (C++ kernels with
gradients: lgamma, digamma, polygamma, erfinv, erfc, i0, i1, sinc; composites: xlogy, xlog1py,
entr, logit, i0e, i1e); the rest are compositions of them here, as in torch."""
import math as _math

from . import _C

__all__ = ["expit", "logit", "erf", "erfc", "erfcx", "erfinv", "gammaln", "digamma", "psi", "polygamma",
           "multigammaln", "xlogy", "xlog1py", "log_softmax", "softmax", "logsumexp", "entr", "i0", "i0e",
           "i1", "i1e", "sinc", "ndtr", "ndtri", "log_ndtr", "log1p", "expm1", "exp2", "round", "logit",
           "zeta", "gammainc", "gammaincc"]


def expit(input):
    return _C.sigmoid(input)


def logit(input, eps=None):
    return _C.logit(input, eps)


def erf(input):
    return _C.erf(input)


def erfc(input):
    return _C.erfc(input)


def erfcx(input):
    """exp(x^2) erfc(x). Above x = 25, where exp(x^2) erfc(x) would be inf * 0, the asymptotic
    series 1 / (x sqrt(pi)) (1 - 1/(2x^2) + 3/(4x^4) - 15/(8x^6) + 105/(16x^8)) (error < 1e-13)."""
    x = input if input.is_floating_point() else input.to(_C.get_default_dtype())
    big = x > 25
    near = _C.where(big, _C.full_like(x, 25.0), x)
    direct = _C.exp(near * near) * _C.erfc(near)
    far = _C.where(big, x, _C.full_like(x, 26.0))
    inv2 = 1.0 / (far * far)
    series = 1 + inv2 * (-0.5 + inv2 * (0.75 + inv2 * (-1.875 + inv2 * 6.5625)))
    return _C.where(big, series / (far * _math.sqrt(_math.pi)), direct)


def erfinv(input):
    return _C.erfinv(input)


def gammaln(input):
    return _C.lgamma(input)


def digamma(input):
    return _C.digamma(input)


psi = digamma


def polygamma(n, input):
    return _C.polygamma(n, input)


def multigammaln(input, p):
    """log of the multivariate gamma function of dimension p."""
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    offsets = _C.arange(p, dtype=input.dtype if input.is_floating_point() else _C.get_default_dtype(),
                        device=input.device) * -0.5
    return _C.lgamma(input.unsqueeze(-1) + offsets).sum(-1) + p * (p - 1) / 4 * _math.log(_math.pi)


def xlogy(input, other):
    return _C.xlogy(input, other)


def xlog1py(input, other):
    return _C._special_xlog1py(input, other)


def log_softmax(input, dim, *, dtype=None):
    return _C.log_softmax(input, dim, dtype=dtype)


def softmax(input, dim, *, dtype=None):
    return _C.softmax(input, dim, dtype=dtype)


def logsumexp(input, dim, keepdim=False):
    return _C.logsumexp(input, dim, keepdim)


def entr(input):
    return _C._special_entr(input)


def i0(input):
    return _C.i0(input)


def i0e(input):
    return _C._special_i0e(input)


def i1(input):
    return _C._special_i1(input)


def i1e(input):
    return _C._special_i1e(input)


def sinc(input):
    return _C.sinc(input)


def ndtr(input):
    """The standard normal CDF: (1 + erf(x / sqrt 2)) / 2."""
    return 0.5 * _C.erfc(input * -_math.sqrt(0.5))


def ndtri(input):
    """The standard normal quantile function (inverse of ndtr)."""
    return _C.erfinv(2 * input - 1) * _math.sqrt(2.0)


def log_ndtr(input):
    """log(ndtr(x)); for x < -1 through erfcx so the tail does not underflow to log(0)."""
    t = input * -_math.sqrt(0.5)
    tail = _C.log(erfcx(t) * 0.5) - t * t
    return _C.where(input < -1, tail, _C.log(ndtr(input)))


def log1p(input):
    return _C.log1p(input)


def expm1(input):
    return _C.expm1(input)


def exp2(input):
    return _C.exp2(input)


def round(input, *, decimals=0):
    return _C.round(input, decimals=decimals)


def zeta(input, other):
    """Hurwitz zeta(x, q) for integer x >= 2, through polygamma: zeta(n + 1, q) = (-1)^(n+1) psi_n(q) / n!."""
    if isinstance(input, _C.Tensor):
        values = set(input.flatten().tolist())
        if len(values) != 1:
            raise NotImplementedError("ember.special.zeta: only a single integer order x >= 2 is supported")
        (input,) = values
    s = float(input)
    if s != int(s) or s < 2:
        raise NotImplementedError("ember.special.zeta: only integer orders x >= 2 are supported")
    n = int(s) - 1
    return _C.polygamma(n, other) * ((-1.0) ** (n + 1) / _math.factorial(n))



def gammainc(input, other):
    """Regularised lower incomplete gamma P(a, x)."""
    return _C.igamma(input, other)


def gammaincc(input, other):
    """Regularised upper incomplete gamma Q(a, x) = 1 - P(a, x)."""
    return _C.igammac(input, other)


# the Bessel / Airy functions and the orthogonal polynomials (python/ember/_special_more.py)
from ._special_more import *  # noqa: E402,F401,F403
from . import _special_more as _more  # noqa: E402

__all__ = __all__ + _more.__all__
