"""ember.finfo / ember.iinfo: the numeric limits of a dtype, with torch's fields and repr."""
import math as _math

import numpy as _np

from . import _C

__all__ = ["finfo", "iinfo"]

# bfloat16 has float32's exponent and 8 bits of significand (7 stored).
_BF16 = dict(bits=16, eps=2.0 ** -7, max=3.3895313892515355e38, tiny=2.0 ** -126)


def _fmt(v):
    return f"{v:g}"


_COMPLEX_PARTS = {"complex32": "float16", "complex64": "float32", "complex128": "float64"}


class finfo:
    """Floating-point limits: bits, eps, max, min, tiny (= smallest_normal), resolution, dtype."""

    def __init__(self, type=None):
        if type is None:
            type = _C.get_default_dtype()
        name = str(type).split(".")[-1] if isinstance(type, _C.dtype) else None
        # a complex dtype reports the limits of its real and imaginary parts, as torch's
        name = _COMPLEX_PARTS.get(name, name)
        if name is None or not (name in _COMPLEX_PARTS.values() or type.is_floating_point):
            raise TypeError(f"torch.finfo() requires a floating point input type. Use torch.iinfo to handle '{type}'")
        if name == "bfloat16":
            info = _BF16
        else:
            f = _np.finfo(_np.dtype(name))
            info = dict(bits=f.bits, eps=float(f.eps), max=float(f.max), tiny=float(f.tiny))
        self.bits = info["bits"]
        self.eps = info["eps"]
        self.max = info["max"]
        self.min = -info["max"]
        self.tiny = self.smallest_normal = info["tiny"]
        # 10^-(decimal digits of precision), a Python float as torch's (not numpy's rounded one)
        self.resolution = 10.0 ** -int(-_math.log10(self.eps))
        self.dtype = name

    def __repr__(self):
        return (f"finfo(resolution={_fmt(self.resolution)}, min={_fmt(self.min)}, max={_fmt(self.max)}, "
                f"eps={_fmt(self.eps)}, smallest_normal={_fmt(self.smallest_normal)}, tiny={_fmt(self.tiny)}, "
                f"dtype={self.dtype})")

    def __eq__(self, other):
        return isinstance(other, finfo) and self.dtype == other.dtype

    def __hash__(self):
        return hash(("finfo", self.dtype))


class iinfo:
    """Integer limits: bits, max, min, dtype."""

    def __init__(self, type):
        name = str(type).split(".")[-1] if isinstance(type, _C.dtype) else None
        if name is None or type.is_floating_point or name == "bool" or name.startswith("complex"):
            raise TypeError(f"{type} is not supported by torch.iinfo")
        i = _np.iinfo(_np.dtype(name))
        self.bits = i.bits
        self.max = int(i.max)
        self.min = int(i.min)
        self.dtype = name

    def __repr__(self):
        return f"iinfo(min={_fmt(float(self.min))}, max={_fmt(float(self.max))}, dtype={self.dtype})"

    def __eq__(self, other):
        return isinstance(other, iinfo) and self.dtype == other.dtype

    def __hash__(self):
        return hash(("iinfo", self.dtype))
