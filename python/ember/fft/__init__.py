"""ember.fft: torch.fft's discrete Fourier transforms.

The transforms run in C++ (src/ops/fft.cpp over ember's own FFT engine, src/cpu/fft_plan.cpp, with
the kernels in src/cpu/fft_kernels.cpp) and are differentiable; this module gives them torch's
Python signatures (``n``/``s``, ``dim``, ``norm``, ``out=``). hfft2/hfftn/ihfft2/ihfftn compose
them here; fftfreq, rfftfreq, fftshift and ifftshift are here too.
"""
import ember as _ember
from ember._C import _fft as _C_fft

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn",
           "rfftn", "irfftn", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def _finish(result, out):
    if out is None:
        return result
    if tuple(out.shape) != tuple(result.shape):
        out.resize_(result.shape)
    out.copy_(result)
    return out


def _sizes(s):
    if s is None:
        return None
    return [int(s)] if isinstance(s, int) else [int(v) for v in s]


def _one(name):
    impl = getattr(_C_fft, name)

    def transform(input, n=None, dim=-1, norm=None, *, out=None):
        return _finish(impl(input, None if n is None else int(n), int(dim), norm), out)

    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = f"torch.fft.{name}(input, n=None, dim=-1, norm=None): see ember/fft/__init__.py"
    return transform


def _many(name, default_dim=None):
    impl = getattr(_C_fft, name)

    def transform(input, s=None, dim=default_dim, norm=None, *, out=None):
        return _finish(impl(input, _sizes(s), _sizes(dim), norm), out)

    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = f"torch.fft.{name}(input, s=None, dim={default_dim}, norm=None)"
    return transform


fft, ifft, rfft, irfft, hfft, ihfft = (_one(n) for n in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"))
fftn, ifftn, rfftn, irfftn = (_many(n) for n in ("fftn", "ifftn", "rfftn", "irfftn"))
fft2, ifft2, rfft2, irfft2 = (_many(n, (-2, -1)) for n in ("fftn", "ifftn", "rfftn", "irfftn"))
for _f, _n in ((fft2, "fft2"), (ifft2, "ifft2"), (rfft2, "rfft2"), (irfft2, "irfft2")):
    _f.__name__ = _f.__qualname__ = _n
del _f, _n

# hfftn's scaling is the forward transform's, irfftn's the inverse's: the same modes swapped.
_SWAPPED_NORM = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    """torch.fft.hfftn: the real n-D transform of a Hermitian-symmetric signal given by its half
    (the last dim halved). It is irfftn of the conjugate with the scaling of the forward direction
    ("backward" = no scaling, "forward" = 1/n)."""
    x = input.conj() if input.is_complex() else input
    return _finish(_C_fft.irfftn(x, _sizes(s), _sizes(dim), _SWAPPED_NORM.get(norm, norm)), out)


def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    """torch.fft.ihfftn: the inverse of hfftn for real input, the half spectrum (last dim halved):
    the conjugate of rfftn with the inverse direction's scaling (1/n for "backward")."""
    if input.is_complex():
        raise TypeError(f"ihfftn expects a real input tensor, but got {_complex_name(input)}")
    return _finish(_C_fft.rfftn(input, _sizes(s), _sizes(dim), _SWAPPED_NORM.get(norm, norm)).conj(), out)


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """torch.fft.hfft2: hfftn over two dims (the last two by default)."""
    return hfftn(input, s, dim, norm, out=out)


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """torch.fft.ihfft2: ihfftn over two dims (the last two by default)."""
    if input.is_complex():
        raise TypeError(f"ihfft2 expects a real input tensor, but got {_complex_name(input)}")
    return ihfftn(input, s, dim, norm, out=out)


def _complex_name(t):
    return "ComplexDouble" if t.dtype == _ember.complex128 else "ComplexFloat"


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d * n), as torch.fft.fftfreq."""
    n = int(n)
    pos = (n - 1) // 2 + 1
    idx = _ember.cat([_ember.arange(0, pos, device=device), _ember.arange(-(n // 2), 0, device=device)])
    result = (idx * (1.0 / (d * n))).to(dtype if dtype is not None else _ember.get_default_dtype())
    return _finish(result, out).requires_grad_(requires_grad)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """[0, 1, ..., n // 2] / (d * n), as torch.fft.rfftfreq."""
    n = int(n)
    result = (_ember.arange(0, n // 2 + 1, device=device) * (1.0 / (d * n)))
    result = result.to(dtype if dtype is not None else _ember.get_default_dtype())
    return _finish(result, out).requires_grad_(requires_grad)


def fftshift(input, dim=None):
    """Moves the zero-frequency entry to the centre: a roll by n // 2 along each dim."""
    return _C_fft.fftshift(input, _sizes(dim))


def ifftshift(input, dim=None):
    """The inverse of fftshift: a roll by -(n // 2) along each dim."""
    return _C_fft.ifftshift(input, _sizes(dim))
