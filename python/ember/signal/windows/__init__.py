"""ember.signal.windows: torch.signal.windows' window functions (scipy.signal.windows' definitions).

Each takes the length M and keywords only: sym=True gives the symmetric window (for filter design),
sym=False the periodic one (for spectral analysis: the first M points of the symmetric window of
M + 1). dtype float32 or float64 (default: the default dtype), layout strided. Values are computed
in float64 and cast; requires_grad=True returns a leaf that requires grad.
"""
import math as _math
from collections.abc import Iterable as _Iterable

import ember as _ember

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
           "hamming", "hann", "kaiser", "nuttall"]


def _checks(name, M, dtype, layout):
    dtype = _ember.get_default_dtype() if dtype is None else dtype
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not _ember.strided and layout != _ember.strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (_ember.float32, _ember.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")
    return dtype


def _make(M, dtype, device, requires_grad, values):
    """values(n) over n = 0 .. M-1 in float64, cast; M == 0 gives an empty window."""
    if M == 0:
        w = _ember.empty((0,), dtype=dtype, device=device)
    else:
        with _ember.no_grad():
            w = values(_ember.arange(M, dtype=_ember.float64, device=device)).to(dtype)
    return w.requires_grad_(bool(requires_grad))


def _ones_if_one(M, dtype, device, requires_grad):
    return _ember.ones((1,), dtype=dtype, device=device).requires_grad_(bool(requires_grad))


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=_ember.strided, device=None,
                requires_grad=False):
    """exp(-|n - center| / tau); center defaults to (M - 1) / 2 (sym) or M / 2 (periodic)."""
    dtype = _checks("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    return _make(M, dtype, device, requires_grad, lambda n: _ember.exp(-_ember.abs(n - center) / tau))


def cosine(M, *, sym=True, dtype=None, layout=_ember.strided, device=None, requires_grad=False):
    """sin(pi (n + 0.5) / M) (sym), sin(pi (n + 0.5) / (M + 1)) (periodic)."""
    dtype = _checks("cosine", M, dtype, layout)
    denominator = M + 1 if not sym and M > 1 else M
    return _make(M, dtype, device, requires_grad, lambda n: _ember.sin((n + 0.5) * (_math.pi / denominator)))


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=_ember.strided, device=None, requires_grad=False):
    """exp(-(n - c)^2 / (2 std^2)), c = (M - 1) / 2 (sym) or M / 2 (periodic)."""
    dtype = _checks("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    c = (M if not sym and M > 1 else M - 1) / 2.0
    return _make(M, dtype, device, requires_grad, lambda n: _ember.exp(-((n - c) ** 2) / (2.0 * std * std)))


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=_ember.strided, device=None, requires_grad=False):
    """I0(beta sqrt(1 - (2n / N - 1)^2)) / I0(beta), N = M - 1 (sym) or M (periodic)."""
    dtype = _checks("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    if M == 1:
        return _ones_if_one(M, dtype, device, requires_grad)
    denominator = M - 1 if sym else M
    beta = float(beta)

    def values(n):
        r = n * (2.0 / denominator) - 1
        a = beta * _ember.sqrt(_ember.clamp(1 - r * r, min=0.0))
        return _ember.i0(a) / _ember.i0(_ember.full_like(n, beta))
    return _make(M, dtype, device, requires_grad, values)


def hamming(M, *, sym=True, dtype=None, layout=_ember.strided, device=None, requires_grad=False):
    """0.54 - 0.46 cos(2 pi n / N)."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=_ember.strided, device=None, requires_grad=False):
    """0.5 - 0.5 cos(2 pi n / N)."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=_ember.strided, device=None, requires_grad=False):
    """0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)."""
    dtype = _checks("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=_ember.strided, device=None, requires_grad=False):
    """1 - |2n / N - 1|, N = M - 1 (sym) or M (periodic)."""
    dtype = _checks("bartlett", M, dtype, layout)
    if M == 1:
        return _ones_if_one(M, dtype, device, requires_grad)
    denominator = M - 1 if sym else M
    return _make(M, dtype, device, requires_grad, lambda n: 1 - _ember.abs(n * (2.0 / denominator) - 1))


def general_cosine(M, *, a, sym=True, dtype=None, layout=_ember.strided, device=None, requires_grad=False):
    """sum_k (-1)^k a_k cos(2 pi k n / N), N = M - 1 (sym) or M (periodic)."""
    dtype = _checks("general_cosine", M, dtype, layout)
    if M == 0:
        return _make(M, dtype, device, requires_grad, None)
    if M == 1:
        return _ones_if_one(M, dtype, device, requires_grad)
    if not isinstance(a, _Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    a = [float(v) for v in a]
    if not a:
        raise ValueError("Coefficients cannot be empty")
    denominator = M - 1 if sym else M

    def values(n):
        phase = n * (2 * _math.pi / denominator)
        out = _ember.full_like(n, a[0])
        for k in range(1, len(a)):
            out = out + ((-1) ** k * a[k]) * _ember.cos(phase * k)
        return out
    return _make(M, dtype, device, requires_grad, values)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=_ember.strided, device=None,
                    requires_grad=False):
    """alpha - (1 - alpha) cos(2 pi n / N)."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def nuttall(M, *, sym=True, dtype=None, layout=_ember.strided, device=None, requires_grad=False):
    """The 4-term Nuttall window (coefficients 0.3635819, 0.4891775, 0.1365995, 0.0106411)."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype,
                          layout=layout, device=device, requires_grad=requires_grad)
