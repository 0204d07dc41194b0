"""torch.* elementwise and indexing functions that compose existing ember ops: the inverse
hyperbolic functions, copysign, index_copy (issue 18 found them missing while probing every op in
float16/bfloat16). Built from differentiable ember ops, so gradients flow as torch's do."""
import math as _math

from . import _C
from ._C import Tensor
from ._composite_ops import _wrap
from .amp.autocast_mode import _autocast_op

__all__ = ["asinh", "acosh", "atanh", "arcsinh", "arccosh", "arctanh", "copysign", "index_copy"]
nan = _math.nan

_LN2 = _math.log(2.0)
_BIG = 2.0 ** 28  # past this, sqrt(1 + x^2) is |x| in float64 too: log(2|x|) is exact enough


def _float_input(name, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")
    return x if x.is_floating_point() else x.to(_C.get_default_dtype())


def asinh(input):
    """log(x + sqrt(x^2 + 1)), in forms that neither cancel near 0 nor overflow for large |x|."""
    x = _float_input("asinh", input)
    neg = _C.signbit(x)
    a = _C.where(neg, -x, x)  # |x| whose gradient at 0 is 1 (abs's is 0), so d asinh / dx (0) = 1
    big = a > _BIG
    s = _C.where(big, _C.zeros_like(a), a)
    small = _C.log1p(s + s * s / (1 + _C.sqrt(1 + s * s)))
    large = _C.log(_C.where(big, a, _C.ones_like(a))) + _LN2
    r = _C.where(big, large, small)
    return _C.where(neg, -r, r)


def acosh(input):
    """log(x + sqrt(x^2 - 1)) for x >= 1 (NaN below), accurate near 1 and for large x."""
    x = _float_input("acosh", input)
    big = x > _BIG
    t = _C.where(big, _C.zeros_like(x), x - 1)
    small = _C.log1p(t + _C.sqrt(2 * t + t * t))
    large = _C.log(_C.where(big, x, _C.ones_like(x))) + _LN2
    # Below 1 the small form can cancel to a number (x = -1e30: t + sqrt(2t + t^2) is 0).
    return _C.where(x < 1, _C.full_like(x, nan), _C.where(big, large, small))


def atanh(input):
    """0.5 * log((1 + x) / (1 - x)) = sign(x) * 0.5 * log1p(2|x| / (1 - |x|)): the argument of
    log1p stays positive, so nothing cancels near -1; +-inf at +-1, NaN beyond."""
    x = _float_input("atanh", input)
    neg = _C.signbit(x)
    a = _C.where(neg, -x, x)  # |x| with gradient 1 at 0
    r = 0.5 * _C.log1p(2 * a / (1 - a))
    return _C.where(neg, -r, r)


def copysign(input, other):
    """|input| with the sign bit of other (-0.0 and NaN signs included), in the floating result type."""
    if not isinstance(other, Tensor):
        other = _C.tensor(float(other))
    a = _float_input("copysign", input)
    dt = _C.promote_types(a.dtype, other.dtype if other.is_floating_point() else a.dtype)
    a = a.to(dt).abs()
    return _C.where(_C.signbit(other), -a, a)


def _check_index_copy(self, dim, index, source):
    d = _wrap(dim, self.dim())
    if index.dtype != _C.int64:
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got {str(index.dtype).split('.')[-1]}")
    if index.dim() > 1:
        raise IndexError("index_copy_(): Index should have dimension 1 or 0 (got {})".format(index.dim()))
    n = index.numel()
    if source.dim() != self.dim() and not (self.dim() == 0 and source.dim() <= 1):
        raise IndexError("index_copy_(): When source and destination are not scalars, their dimensionality must "
                         f"match. Source dimensionality ({source.dim()}), destination dimensionality ({self.dim()})")
    if self.dim() > 0:
        for i in range(self.dim()):
            if i != d and source.shape[i] != self.shape[i]:
                raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice shapes. "
                                   f"Destination slice shape: {list(self.shape)} at dimension {d} and source slice "
                                   f"shape: {list(source.shape)} at dimension {d}.")
        if source.shape[d] != n:
            raise IndexError(f"index_copy_(): Number of indices ({n}) should be equal to source.size(dim) "
                             f"({source.shape[d]})")
    if source.dtype != self.dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, but got (self) "
                           f"{str(self.dtype).split('.')[-1]} and (source) {str(source.dtype).split('.')[-1]}")
    return d


def index_copy_(self, dim, index, source):
    """self[..., index[i], ...] = source[..., i, ...] along dim, in place."""
    d = _check_index_copy(self, dim, index, source)
    if self.dim() == 0:
        self.copy_(source.reshape(()))
        return self
    self[(slice(None),) * d + (index.reshape(-1),)] = source
    return self


@_autocast_op("index_copy")
def index_copy(input, dim, index, source):
    return index_copy_(input.clone(), dim, index, source)


arcsinh, arccosh, arctanh = asinh, acosh, atanh
for _name in ("asinh", "acosh", "atanh", "arcsinh", "arccosh", "arctanh", "copysign", "index_copy", "index_copy_"):
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, globals()[_name])
for _name in ("asinh", "acosh", "atanh", "arcsinh", "arccosh", "arctanh", "copysign"):
    def _inplace(self, *args, _fn=globals()[_name]):
        return self.copy_(_fn(self, *args))
    if not hasattr(Tensor, _name + "_"):
        setattr(Tensor, _name + "_", _inplace)
