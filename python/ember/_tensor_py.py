"""Python-level pieces of the Tensor API: the legacy typed constructors (FloatTensor, ...),
pickling and deepcopy of tensors, and small module-level helpers torch has (is_tensor, numel,
typename, get_rng_state, ...)."""
import copy as _copy

from . import _C
from ._C import Tensor

__all__ = [
    "is_tensor", "is_storage", "is_floating_point", "numel", "typename", "get_rng_state", "set_rng_state",
    "seed", "initial_seed", "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
    "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor", "strided", "contiguous_format",
    "preserve_format", "channels_last", "layout", "memory_format",
]


def is_tensor(obj):
    return isinstance(obj, Tensor)


def is_storage(obj):
    return False


def is_floating_point(input):
    return input.is_floating_point()


def numel(input):
    return input.numel()


def typename(obj):
    if isinstance(obj, Tensor):
        return obj.type()
    return type(obj).__module__ + "." + type(obj).__qualname__


def get_rng_state():
    return _C.default_generator.get_state()


def set_rng_state(new_state):
    _C.default_generator.set_state(new_state)


def seed():
    return _C.default_generator.seed()


def initial_seed():
    return _C.default_generator.initial_seed()


class _LegacyTensorType(type):
    """torch.FloatTensor & co: calling makes a tensor of that dtype; isinstance checks the dtype."""

    def __call__(cls, *args, **kwargs):
        if kwargs:
            raise TypeError(f"{cls.__name__}() takes no keyword arguments")
        return _C._legacy_new(args, cls._dtype)

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype == cls._dtype


def _legacy(name, dtype):
    return _LegacyTensorType(name, (), {"_dtype": dtype, "__module__": "ember"})


FloatTensor = _legacy("FloatTensor", _C.float32)
DoubleTensor = _legacy("DoubleTensor", _C.float64)
HalfTensor = _legacy("HalfTensor", _C.float16)
BFloat16Tensor = _legacy("BFloat16Tensor", _C.bfloat16)
LongTensor = _legacy("LongTensor", _C.int64)
IntTensor = _legacy("IntTensor", _C.int32)
ShortTensor = _legacy("ShortTensor", _C.int16)
CharTensor = _legacy("CharTensor", _C.int8)
ByteTensor = _legacy("ByteTensor", _C.uint8)
BoolTensor = _legacy("BoolTensor", _C.bool)


class layout:
    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return "ember." + self._name


class memory_format(layout):
    pass


strided = layout("strided")
contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")


# ---- pickling and copying ------------------------------------------------------------------

def _rebuild_tensor(array, dtype, requires_grad):
    t = _C.from_numpy(array).to(dtype, copy=True)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _tensor_reduce_ex(self, protocol):
    # Through NumPy (bfloat16 via float32); the dtype is restored on load. Pickle is what
    # copy.deepcopy of containers and multiprocessing use; checkpoints use ember.save.
    data = self.detach()
    if data.dtype == _C.bfloat16:
        data = data.float()
    state = (_rebuild_tensor, (data.numpy().copy(), self.dtype, self.requires_grad))
    extra = getattr(self, "__dict__", None)
    if extra:
        return state + (dict(extra),)
    return state


def _tensor_deepcopy(self, memo):
    if not self.is_leaf:
        raise RuntimeError(
            "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at the moment")
    key = id(self)
    if key in memo:
        return memo[key]
    with _no_grad():
        new = self.clone()
    if type(self) is not Tensor:  # a subclass without its own __deepcopy__ wraps the copy
        data, new = new, type(self).__new__(type(self))
        Tensor.__init__(new, data)
    if self.requires_grad:
        new.requires_grad_(True)
    if self.grad is not None:
        new.grad = _copy.deepcopy(self.grad, memo)
    for k, v in getattr(self, "__dict__", {}).items():
        setattr(new, k, _copy.deepcopy(v, memo))
    memo[key] = new
    return new


def _no_grad():
    from .autograd.grad_mode import no_grad
    return no_grad()


def _tensor_setstate(self, state):
    for k, v in state.items():
        setattr(self, k, v)


_SHARE_MEMORY_NOTE = ("ember: share_memory_() leaves tensors where they are: ember has no shared-memory "
                      "tensors yet, so a tensor passed to another process (ember.multiprocessing, "
                      "multiprocessing) is a copy, and writes there are not seen here (Hogwild-style "
                      "training would silently train copies). Exchange results through collectives "
                      "(ember.distributed), files or queues.")


def _share_memory_(self):
    """torch's share_memory_: warns that ember keeps the tensor process-local (is_shared() stays
    False), instead of silently not sharing it."""
    import warnings
    warnings.warn(_SHARE_MEMORY_NOTE, UserWarning, stacklevel=2)
    return self


Tensor.share_memory_ = _share_memory_
Tensor.__reduce_ex__ = _tensor_reduce_ex
Tensor.__deepcopy__ = _tensor_deepcopy
Tensor.__setstate__ = _tensor_setstate
Tensor.__module__ = "ember"


# ---- ember.return_types: print as torch's structseqs do ---------------------------------------

def _structseq_repr(self):
    fields = ",\n".join(f"{k}={v!r}" for k, v in zip(self._fields, self))
    return f"ember.return_types.{type(self).__name__}(\n{fields})"


for _name in dir(_C.return_types):
    _t = getattr(_C.return_types, _name)
    if isinstance(_t, type) and issubclass(_t, tuple):
        _t.__repr__ = _structseq_repr


# ---- in-place and scatter methods composed from other ops (issue 15) ------------------------------
def _cumsum_(self, dim, *, dtype=None):
    return self.copy_(self.cumsum(dim, dtype=dtype))


def _put_(self, index, source, accumulate=False):
    """Writes source into self viewed as 1-D at `index` (negative indices count from the end);
    with accumulate, adds (repeated indices add up)."""
    n = self.numel()
    idx = index.reshape(-1)
    src = source.reshape(-1)
    if idx.numel() != src.numel():
        raise RuntimeError(f"put_(): Expected source and index to have the same number of elements, but got "
                           f"source.numel() = {src.numel()}, index.numel() = {idx.numel()}")
    if idx.numel() and (bool((idx >= n).any()) or bool((idx < -n).any())):
        bad = int(idx[(idx >= n) | (idx < -n)][0])
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    idx = _C.where(idx < 0, idx + n, idx)
    flat = self.reshape(-1).clone() if not self.is_contiguous() else None
    target = flat if flat is not None else self.view(-1)
    if accumulate:
        target.index_add_(0, idx, src.to(self.dtype))
    else:
        target.index_put_((idx,), src.to(self.dtype))
    if flat is not None:
        self.copy_(flat.view(self.shape))
    return self


def _put(self, index, source, accumulate=False):
    return _put_(self.clone(), index, source, accumulate)


def _masked_scatter_(self, mask, source):
    """Copies source's elements, in order, into the positions where mask is True."""
    if mask.dtype != _C.bool:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype {mask.dtype}")
    m = mask.expand(self.shape) if tuple(mask.shape) != tuple(self.shape) else mask
    count = int(m.sum())
    if count > source.numel():
        raise RuntimeError(f"masked_scatter: expected source to have at least {count} elements, but it has "
                           f"{source.numel()}")
    self[m] = source.reshape(-1)[:count].to(self.dtype)
    return self


def _masked_scatter(self, mask, source):
    return _masked_scatter_(self.clone(), mask, source)


Tensor.cumsum_ = _cumsum_
Tensor.put_ = _put_
Tensor.put = _put
Tensor.masked_scatter_ = _masked_scatter_
Tensor.masked_scatter = _masked_scatter


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """torch.set_printoptions: how tensors print (process-wide). Unset arguments keep their
    value, except sci_mode: None means chosen per tensor, as torch."""
    import math as _math
    if threshold is not None and isinstance(threshold, float):
        threshold = 2 ** 62 if _math.isinf(threshold) else int(threshold)
    if linewidth is not None and isinstance(linewidth, float):
        linewidth = 2 ** 62 if _math.isinf(linewidth) else int(linewidth)
    _C._set_printoptions(precision, threshold, edgeitems, linewidth, profile, sci_mode)


__all__.append("set_printoptions")


# ---- cauchy_ and geometric_: torch's draws (one float64 uniform per element, in the tensor's
# memory order, transformed in float64 and rounded once to the tensor's dtype) ---------------------
def _uniform64_like(self, generator):
    """float64 uniforms shaped like self, drawn in self's memory order (dims by decreasing
    stride, as torch's TensorIterator walks the output)."""
    order = sorted(range(self.dim()), key=lambda d: -self.stride(d))
    u = _C.empty([self.shape[d] for d in order], dtype=_C.float64)
    u = u.uniform_(0.0, 1.0, generator=generator) if generator is not None else u.uniform_(0.0, 1.0)
    inverse = [order.index(d) for d in range(self.dim())]
    return u.permute(inverse) if self.dim() else u


def _cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    import math as _math
    u = _uniform64_like(self, generator)
    from .autograd.grad_mode import no_grad
    with no_grad():
        return self.copy_(median + sigma * _C.tan(_math.pi * (u - 0.5)))


def _geometric_(self, p, *, generator=None):
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    import math as _math
    u = _uniform64_like(self, generator)
    from .autograd.grad_mode import no_grad
    with no_grad():
        return self.copy_(_C.ceil(_C.log(u) / _math.log1p(-p)))


Tensor.cauchy_ = _cauchy_
Tensor.geometric_ = _geometric_
