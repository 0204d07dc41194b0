"""ember.backends.cudnn: torch's cuDNN flags, kept in C++ (ember/cudnn_flags.h) where the cuDNN
convolutions read them. As torch's module, the flags are properties of the module itself:
`ember.backends.cudnn.benchmark = True` sets the C++ flag.

  enabled (True), benchmark (False), benchmark_limit (10), deterministic (False),
  allow_tf32 (True: float32 convolutions may use TensorFloat32 tensor cores).

ember has no CUDA convolution besides cuDNN's, so enabled=False keeps using cuDNN. is_available()
is True when the build links cuDNN and a GPU answered; version() is cudnnGetVersion() (e.g.
91900) then, None otherwise."""
import contextlib as _contextlib
import sys as _sys
import types as _types

from ... import _C


def _flags():
    # (enabled, benchmark, benchmark_limit, deterministic, allow_tf32)
    return _C._cuda.cudnn_get_flags()


def _set_flags(enabled, benchmark, benchmark_limit, deterministic, allow_tf32):
    _C._cuda.cudnn_set_enabled(bool(enabled))
    _C._cuda.cudnn_set_benchmark(bool(benchmark))
    _C._cuda.cudnn_set_benchmark_limit(int(benchmark_limit))
    _C._cuda.cudnn_set_deterministic(bool(deterministic))
    _C._cuda.cudnn_set_allow_tf32(bool(allow_tf32))


def is_available():
    return bool(_C._cuda.cudnn_is_available())


def version():
    if not is_available():
        return None
    return int(_C._cuda.cudnn_version())


_SUPPORTED_DTYPES = ("float16", "bfloat16", "float32", "float64")


def is_acceptable(tensor):
    """torch.backends.cudnn.is_acceptable: cuDNN is on and can take this tensor."""
    if not _flags()[0] or not getattr(tensor, "is_cuda", False):
        return False
    if str(tensor.dtype).rsplit(".", 1)[-1] not in _SUPPORTED_DTYPES:
        return False
    return is_available()


@_contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True):
    """Sets the flags for the block and restores them after (torch.backends.cudnn.flags)."""
    old = _flags()
    _set_flags(enabled, benchmark, benchmark_limit, deterministic, allow_tf32)
    try:
        yield
    finally:
        _set_flags(*old)


def _prop(index, setter, convert):
    def get(self):
        return _flags()[index]

    def set_(self, value):
        getattr(_C._cuda, setter)(convert(value))

    return property(get, set_)


class _CudnnModule(_types.ModuleType):
    """The module's class: its flags read and write the C++ settings."""

    enabled = _prop(0, "cudnn_set_enabled", bool)
    benchmark = _prop(1, "cudnn_set_benchmark", bool)
    benchmark_limit = _prop(2, "cudnn_set_benchmark_limit", int)
    deterministic = _prop(3, "cudnn_set_deterministic", bool)
    allow_tf32 = _prop(4, "cudnn_set_allow_tf32", bool)


_sys.modules[__name__].__class__ = _CudnnModule
