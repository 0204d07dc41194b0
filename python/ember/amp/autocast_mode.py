"""torch.autocast for ember: a region in which ops run in the precision of torch's per-op policy.

The state lives in C++ (per thread, ember/amp.h) and the policy is one table,
src/amp/autocast_policy.h; ember.amp.policy_table() returns it. This module is the Python face:
the context manager / decorator, the state functions, custom_fwd/custom_bwd for autograd
Functions, and the wrapper that applies the table to ember's Python-only composites."""
import functools
import warnings

from .. import _C

_amp = _C._amp

__all__ = ["autocast", "custom_fwd", "custom_bwd", "is_autocast_available", "policy_table"]


def is_autocast_available(device_type):
    """Whether autocast knows this device type ("cpu", "cuda")."""
    return device_type in ("cpu", "cuda")


def policy_table():
    """The autocast table as [(op, cuda_policy, cpu_policy)], with torch's policy names."""
    return list(_amp._policy_table())


def _cuda_available():
    from .. import cuda
    return cuda.is_available()


class autocast:
    """torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None): a context
    manager (and decorator) under which ops on device_type run in dtype (default: bfloat16 on
    the CPU, float16 on CUDA) or float32 as torch's per-op lists say."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if not is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self.device = device_type
        self.fast_dtype = _amp.get_autocast_dtype(device_type) if dtype is None else dtype
        self._cache_enabled = _amp.is_autocast_cache_enabled() if cache_enabled is None else bool(cache_enabled)
        enabled = bool(enabled)
        if enabled and device_type == "cuda" and not _cuda_available():
            warnings.warn("User provided device_type of 'cuda', but CUDA is not available. Disabling")
            enabled = False
        if enabled and self.fast_dtype not in (_C.bfloat16, _C.float16):
            which = "CPU" if device_type == "cpu" else "CUDA"
            warnings.warn(f"In {which} autocast, but the target dtype is not supported. Disabling autocast.\n"
                          f"{which} Autocast only supports dtype of torch.bfloat16, torch.float16 currently.")
            enabled = False
        if enabled and device_type == "cuda" and self.fast_dtype == _C.bfloat16:
            from .. import cuda
            if not cuda.is_bf16_supported():
                raise RuntimeError("Current CUDA Device does not support bfloat16. Please switch dtype to float16.")
        self._enabled = enabled

    def __enter__(self):
        self.prev_cache_enabled = _amp.is_autocast_cache_enabled()
        self.prev = _amp.is_autocast_enabled(self.device)
        self.prev_fastdtype = _amp.get_autocast_dtype(self.device)
        _amp.set_autocast_enabled(self.device, self._enabled)
        _amp.set_autocast_dtype(self.device, self.fast_dtype)
        _amp.autocast_increment_nesting()
        _amp.set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if _amp.autocast_decrement_nesting() == 0:
            _amp.clear_autocast_cache()
        _amp.set_autocast_enabled(self.device, self.prev)
        _amp.set_autocast_dtype(self.device, self.prev_fastdtype)
        _amp.set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return decorate_autocast


def _deprecated_autocast(device_type, default_dtype):
    """torch.<device>.amp.autocast: autocast(device_type) with the old signature, and torch 2's
    FutureWarning."""
    class autocast_(autocast):
        def __init__(self, enabled=True, dtype=None, cache_enabled=True):
            warnings.warn(f"`torch.{device_type}.amp.autocast(args...)` is deprecated. "
                          f"Please use `torch.amp.autocast('{device_type}', args...)` instead.", FutureWarning,
                          stacklevel=2)
            super().__init__(device_type, dtype=getattr(_C, default_dtype) if dtype is None else dtype,
                             enabled=enabled, cache_enabled=cache_enabled)
    autocast_.__name__ = autocast_.__qualname__ = "autocast"
    return autocast_


# ---- the state, under torch's top-level names ----

def is_autocast_enabled(device_type=None):
    """torch.is_autocast_enabled(device_type=None); without an argument, CUDA's (as torch)."""
    return _amp.is_autocast_enabled("cuda" if device_type is None else device_type)


def set_autocast_enabled(device_type, enabled=None):
    if enabled is None:  # the old one-argument form sets CUDA's
        device_type, enabled = "cuda", device_type
    _amp.set_autocast_enabled(device_type, bool(enabled))


def get_autocast_dtype(device_type):
    return _amp.get_autocast_dtype(device_type)


def set_autocast_dtype(device_type, dtype):
    _amp.set_autocast_dtype(device_type, dtype)


is_autocast_cache_enabled = _amp.is_autocast_cache_enabled
set_autocast_cache_enabled = _amp.set_autocast_cache_enabled
clear_autocast_cache = _amp.clear_autocast_cache
autocast_increment_nesting = _amp.autocast_increment_nesting
autocast_decrement_nesting = _amp.autocast_decrement_nesting


def is_autocast_cpu_enabled():
    return _amp.is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled):
    _amp.set_autocast_enabled("cpu", bool(enabled))


def get_autocast_cpu_dtype():
    return _amp.get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype):
    _amp.set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    return _amp.get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype):
    _amp.set_autocast_dtype("cuda", dtype)


# ---- custom autograd Functions ----

def _cast(value, device_type, dtype):
    from .. import Tensor
    if isinstance(value, Tensor):
        eligible = value.is_floating_point() and value.device.type == device_type and value.dtype != _C.float64
        return value.to(dtype) if eligible else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast(v, device_type, dtype) for k, v in value.items()}
    return value


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """torch.amp.custom_fwd: decorates a custom Function's forward. With cast_inputs=None the
    forward runs under the caller's autocast state, which backward (custom_bwd) reuses; with a
    dtype, floating inputs are cast to it and the forward runs with autocast off."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = _amp.get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = _amp.is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        autocast_context = _amp.is_autocast_enabled(device_type)
        ctx._fwd_used_autocast = False
        if autocast_context:
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """torch.amp.custom_bwd: runs a custom Function's backward under the autocast state its
    forward ran with."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd


# ---- the table applied to Python-only composites ----

def _autocast_op(name):
    """Applies the policy row `name` (src/amp/autocast_policy.h) to a composite written in Python:
    inside a region its tensor arguments are cast and its body runs below the Autocast layer."""
    def wrap(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if not _amp._pending():
                return fn(*args, **kwargs)
            cast = _amp._cast_inputs(name, args, kwargs)
            if cast is None:
                return fn(*args, **kwargs)
            with _amp._below_autocast():
                return fn(*cast[0], **cast[1])
        return wrapper
    return wrap
