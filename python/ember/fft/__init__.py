"""ember.fft: the parts of torch.fft that need no complex dtype.

fftfreq, rfftfreq, fftshift and ifftshift are real-valued (sample frequencies and a roll), so
they are here with torch's signatures. The transforms themselves (fft, rfft, ...) return complex
tensors, and ember has no complex dtype yet: they raise NotImplementedError saying so, rather
than returning something else.
"""
import ember as _ember

__all__ = ["fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def fftfreq(n, d=1.0, *, dtype=None, layout=None, device=None, requires_grad=False):
    """[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d * n), as torch.fft.fftfreq."""
    n = int(n)
    pos = (n - 1) // 2 + 1
    idx = _ember.cat([_ember.arange(0, pos, device=device), _ember.arange(-(n // 2), 0, device=device)])
    out = (idx * (1.0 / (d * n))).to(dtype if dtype is not None else _ember.get_default_dtype())
    return out.requires_grad_(requires_grad)


def rfftfreq(n, d=1.0, *, dtype=None, layout=None, device=None, requires_grad=False):
    """[0, 1, ..., n // 2] / (d * n), as torch.fft.rfftfreq."""
    n = int(n)
    out = (_ember.arange(0, n // 2 + 1, device=device) * (1.0 / (d * n)))
    out = out.to(dtype if dtype is not None else _ember.get_default_dtype())
    return out.requires_grad_(requires_grad)


def _dims(input, dim):
    if dim is None:
        return list(range(input.dim()))
    return [dim] if isinstance(dim, int) else list(dim)


def fftshift(input, dim=None):
    """Moves the zero-frequency entry to the centre: a roll by n // 2 along each dim."""
    dims = _dims(input, dim)
    if not dims:
        return input.clone()
    return _ember.roll(input, [input.shape[d] // 2 for d in dims], dims)


def ifftshift(input, dim=None):
    """The inverse of fftshift: a roll by -(n // 2) along each dim."""
    dims = _dims(input, dim)
    if not dims:
        return input.clone()
    return _ember.roll(input, [-(input.shape[d] // 2) for d in dims], dims)


def _needs_complex(name):
    def transform(*args, **kwargs):
        raise NotImplementedError(
            f"torch.fft.{name} returns a complex tensor and ember has no complex dtype yet "
            "(ember.fft provides fftfreq, rfftfreq, fftshift and ifftshift)")
    transform.__name__ = name
    return transform


for _name in ("fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn",
              "irfftn", "hfft", "ihfft"):
    globals()[_name] = _needs_complex(_name)
del _name
