"""Process-wide switches torch programs set: float32 matmul precision and deterministic
algorithms. The matmul precision lives in C++ (ember/matmul_precision.h), where the CUDA GEMMs
read it: "high" and "medium" let float32 products use TF32 tensor cores, "highest" (the default)
does not. The CPU computes float32 products in float32 at every setting (there is no TF32 on
the CPU). ember's kernels are deterministic, so `use_deterministic_algorithms(True)` is stored
and read back and promises nothing ember does not already keep."""
import warnings as _warnings

from . import _C

__all__ = ["set_float32_matmul_precision", "get_float32_matmul_precision", "use_deterministic_algorithms",
           "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
           "set_deterministic_debug_mode", "get_deterministic_debug_mode"]

_deterministic = False
_deterministic_warn_only = False


def set_float32_matmul_precision(precision):
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got {type(precision).__name__}")
    # None when applied; otherwise torch's warning text, and the setting is unchanged.
    rejected = _C._cuda.set_float32_matmul_precision(precision)
    if rejected is not None:
        _warnings.warn(rejected, stacklevel=2)


def get_float32_matmul_precision():
    return _C._cuda.get_float32_matmul_precision()


def use_deterministic_algorithms(mode, *, warn_only=False):
    global _deterministic, _deterministic_warn_only
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' must be bool, not {type(mode).__name__}")
    _deterministic = mode
    _deterministic_warn_only = bool(warn_only) if mode else False


def are_deterministic_algorithms_enabled():
    return _deterministic


def is_deterministic_algorithms_warn_only_enabled():
    return _deterministic_warn_only


def set_deterministic_debug_mode(debug_mode):
    if isinstance(debug_mode, str):
        modes = {"default": 0, "warn": 1, "error": 2}
        if debug_mode not in modes:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, "
                               f"but got {debug_mode}")
        debug_mode = modes[debug_mode]
    if debug_mode == 0:
        use_deterministic_algorithms(False)
    elif debug_mode == 1:
        use_deterministic_algorithms(True, warn_only=True)
    elif debug_mode == 2:
        use_deterministic_algorithms(True)
    else:
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")


def get_deterministic_debug_mode():
    if not _deterministic:
        return 0
    return 1 if _deterministic_warn_only else 2
