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
           "set_deterministic_debug_mode", "get_deterministic_debug_mode", "set_warn_always", "is_warn_always_enabled",
           "set_default_tensor_type", "is_anomaly_enabled", "set_anomaly_enabled", "is_anomaly_check_nan_enabled",
           "has_lapack", "has_openmp", "has_spectral", "has_mkl", "compiled_with_cxx11_abi", "init_num_threads"]

# What this build has: LAPACK (OpenBLAS), OpenMP (oneDNN, BLAS), its own FFT; not MKL.
has_lapack = True
has_openmp = True
has_spectral = True
has_mkl = False
_warn_always = False

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


def set_warn_always(b):
    """torch: warnings that fire once per process fire every time instead. ember's Python
    warnings go through the warnings module, whose filters decide; this stores the flag for
    code that reads it back."""
    global _warn_always
    _warn_always = bool(b)


def is_warn_always_enabled():
    return _warn_always


def set_default_tensor_type(t):
    """Deprecated in torch: the default floating dtype (and, for torch.cuda.*Tensor, the default
    device) from a legacy tensor type or its name ("torch.DoubleTensor")."""
    import ember
    name = t if isinstance(t, str) else getattr(t, "__name__", str(t))
    name = name.replace("torch.", "").replace("ember.", "")
    on_cuda = name.startswith("cuda.")
    base = name.split(".")[-1]
    dtypes = {"FloatTensor": ember.float32, "DoubleTensor": ember.float64, "HalfTensor": ember.float16,
              "BFloat16Tensor": ember.bfloat16}
    if base not in dtypes:
        raise TypeError(f"only floating-point types are supported as the default type, but got {name}")
    _warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                   "torch.set_default_dtype() and torch.set_default_device() as alternatives.", UserWarning,
                   stacklevel=2)
    ember.set_default_dtype(dtypes[base])
    if hasattr(ember, "set_default_device"):
        ember.set_default_device("cuda" if on_cuda else "cpu")


def is_anomaly_enabled():
    from .autograd import anomaly_mode
    return anomaly_mode.is_anomaly_enabled()


def is_anomaly_check_nan_enabled():
    from .autograd import anomaly_mode
    return anomaly_mode.is_anomaly_check_nan_enabled()


def set_anomaly_enabled(enabled, check_nan=True):
    from .autograd import anomaly_mode
    anomaly_mode.set_detect_anomaly(enabled, check_nan)


def compiled_with_cxx11_abi():
    return True  # built with GCC's default (new) std::string/std::list ABI


def init_num_threads():
    """torch initialises OpenMP's thread count here; ember's thread pool starts its workers on
    first use with the count ember.set_num_threads set, so there is nothing to do early."""
