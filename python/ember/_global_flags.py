"""Process-wide switches torch programs set: float32 matmul precision and deterministic
algorithms. ember's CPU kernels are deterministic and compute float32 products in float32 at
every setting (there is no TF32 on the CPU), so the switches are stored and read back, and
`use_deterministic_algorithms(True)` promises nothing ember does not already keep."""
import warnings as _warnings

__all__ = ["set_float32_matmul_precision", "get_float32_matmul_precision", "use_deterministic_algorithms",
           "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
           "set_deterministic_debug_mode", "get_deterministic_debug_mode"]

_matmul_precision = "highest"
_deterministic = False
_deterministic_warn_only = False


def set_float32_matmul_precision(precision):
    global _matmul_precision
    if precision not in ("highest", "high", "medium"):
        _warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                       "setFloat32MatmulPrecision call has no effect.")
        return
    _matmul_precision = precision


def get_float32_matmul_precision():
    return _matmul_precision


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
