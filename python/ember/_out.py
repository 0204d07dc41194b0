"""torch's `out=` argument, for the functions of the ember namespace that take one in torch:
the result is computed as usual and written into `out`, which is returned. As torch: `out` is
resized when its shape differs (with torch's warning when it had elements), the result's dtype
must be castable to out's (float into an int tensor is an error), out must be on the result's
device, and out= does not take part in autograd (an error when a gradient would be needed). For
a factory (zeros, arange, randn, ...) out's dtype and device are the defaults, as in torch. For
functions returning (values, indices), out is a pair. Also Tensor.resize_ / resize_as_.

(Before this, the factories, cat and stack accepted out= and ignored it, a silent wrong answer,
and the other functions refused it.)
"""
import functools
import warnings

from . import _C

# torch functions with an out= variant that ember has (those returning a pair take a pair)
_ELEMENTWISE = """abs absolute acos arccos acosh arccosh add addcdiv addcmul angle asin arcsin asinh arcsinh atan
arctan atan2 arctan2 atanh arctanh bitwise_and bitwise_not bitwise_or bitwise_xor bitwise_left_shift
bitwise_right_shift ceil clamp clip clamp_min clamp_max copysign cos cosh deg2rad div divide digamma eq erf erfc
erfinv exp exp2 expm1 fix float_power floor floor_divide fmax fmin fmod frac ge greater_equal gt greater
heaviside hypot i0 igamma igammac isclose isinf isnan isneginf isposinf isfinite lgamma le less_equal lerp log
log10 log1p log2 logaddexp logaddexp2 logical_and logical_not logical_or logical_xor logit lt less maximum
minimum mul multiply mvlgamma nan_to_num ne not_equal neg negative nextafter polygamma positive pow rad2deg
reciprocal remainder round rsqrt sgn sigmoid sign signbit sin sinc sinh sqrt square sub subtract tan tanh
true_divide trunc where xlogy""".split()
_REDUCTIONS = """all amax amin any argmax argmin count_nonzero cumprod cumsum logcumsumexp logsumexp mean nanmean
nansum norm prod std sum var""".split()
_PAIRS = {"max", "min", "sort", "topk", "kthvalue", "median", "nanmedian", "mode", "cummax", "cummin", "aminmax",
          "frexp", "histogram", "geqrf", "lu"}
_LINALG = """addbmm addmm addmv addr baddbmm bmm cat concat concatenate cross diag dist dot gather hstack index_select
inner kron masked_select matmul mm mv narrow_copy nonzero outer stack take tensordot trace tril triu vdot vstack
column_stack dstack row_stack bucketize searchsorted histc cdist renorm lu_solve orgqr ormqr""".split()
_FACTORIES = {"zeros", "ones", "full", "empty", "rand", "randn", "randint", "randperm", "arange", "range", "linspace",
              "logspace", "eye"}


def _write(name, result, out):
    """Writes one result tensor into out (torch's out= rules)."""
    import ember
    if not isinstance(out, _C.Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if not isinstance(result, _C.Tensor):
        result = ember.tensor(result)
    if ember.is_grad_enabled() and (result.requires_grad or out.requires_grad):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    if out.device != result.device:
        raise RuntimeError(f"{name}(): Expected out tensor to have device {result.device}, but got {out.device} instead")
    if result.dtype != out.dtype and not _C.can_cast(result.dtype, out.dtype):
        raise RuntimeError(f"{name}(): result type {result.dtype._scalar_type_name} can't be cast to the desired output "
                           f"type {out.dtype._scalar_type_name}")
    if tuple(out.shape) != tuple(result.shape):
        if out.numel() != 0:
            warnings.warn(f"An output with one or more elements was resized since it had shape {list(out.shape)}, "
                          f"which does not match the required output shape {list(result.shape)}. This behavior is "
                          "deprecated, and in a future PyTorch release outputs will not be resized unless they have "
                          "zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero "
                          "elements with t.resize_(0).", UserWarning, stacklevel=3)
        out.resize_(tuple(result.shape))
    with ember.no_grad():
        out.copy_(result)
    return out


def with_out(fn, name):
    """fn taking torch's out= keyword."""
    factory = name in _FACTORIES

    @functools.wraps(fn)
    def wrapper(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        if factory and isinstance(out, _C.Tensor):  # out's dtype and device are the factory's defaults
            kwargs.setdefault("dtype", out.dtype)
            kwargs.setdefault("device", out.device)
        result = fn(*args, **kwargs)
        if isinstance(result, tuple):  # (values, indices): out is a pair too
            if not isinstance(out, (tuple, list)) or len(out) != len(result):
                raise TypeError(f"{name}(): argument 'out' must be a tuple of {len(result)} Tensors")
            written = tuple(_write(name, r, o) for r, o in zip(result, out))
            try:
                return type(result)(*written)
            except TypeError:
                return written
        return _write(name, result, out)
    wrapper.__ember_out__ = True
    return wrapper


def install(namespace):
    """Gives the namespace's functions their out= keyword."""
    for name in set(_ELEMENTWISE + _REDUCTIONS + _LINALG) | _PAIRS | _FACTORIES:
        fn = namespace.get(name)
        if fn is None or not callable(fn) or getattr(fn, "__ember_out__", False) or isinstance(fn, type):
            continue
        namespace[name] = with_out(fn, name)


def _resize_(self, *sizes, memory_format=None):
    """Tensor.resize_: this tensor (the same object) with the given sizes, contiguous; its first
    elements keep their values when the new size has room, the others are uninitialised."""
    import ember
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list, ember.Size)):
        sizes = tuple(sizes[0])
    sizes = tuple(int(s) for s in sizes)
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {list(sizes)}")
    if tuple(self.shape) == sizes:
        return self
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    fresh = ember.empty(sizes, dtype=self.dtype, device=self.device)
    keep = min(self.numel(), fresh.numel())
    if keep:
        with ember.no_grad():
            fresh.view(-1)[:keep].copy_(self.reshape(-1)[:keep])
    self.data = fresh
    return self


def _resize_as_(self, other, memory_format=None):
    return _resize_(self, tuple(other.shape))


_C.Tensor.resize_ = _resize_
_C.Tensor.resize_as_ = _resize_as_
