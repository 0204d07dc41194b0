"""ember: a deep learning framework in C++ with PyTorch's API.

    import ember as torch
    from ember import nn

runs ordinary PyTorch programs. The tensors, ops, autograd, modules, optimizers and data loading
are ember's C++ library (ember._C, built with nanobind); this package is the thin Python layer
that gives them torch's names.
"""
import os as _os
import pkgutil as _pkgutil

# OpenMP (oneDNN's convolutions, BLAS above 512^3) spins its idle threads for ~300k iterations
# after each region by default, a millisecond or more of a core that ember's own pool
# (src/core/thread_pool.h) needs next: a CNN train step ran 18.8 ms instead of 14.5 ms. libgomp
# reads this when it loads, just below; a value the user set wins, and if another library loaded
# libgomp first this changes nothing.
_os.environ.setdefault("GOMP_SPINCOUNT", "10000")

# A development build keeps _C in build/python/ember (PYTHONPATH=python:build/python): extend
# this package's path so that directory's files are part of it.
__path__ = _pkgutil.extend_path(__path__, __name__)

from . import _C  # noqa: E402
from ._size import Size  # noqa: E402

_C._set_size_type(Size)

from ._C import *  # noqa: E402,F401,F403
from ._C import Tensor, dtype, device, Generator, default_generator  # noqa: E402,F401

__version__ = "0.1.0"

from ._tensor_py import *  # noqa: E402,F401,F403  (Python-level pieces of the Tensor API)
from . import autograd  # noqa: E402,F401
from .autograd.grad_mode import no_grad, enable_grad, set_grad_enabled, inference_mode  # noqa: E402,F401
from . import nn, optim, utils, cuda, cpu, backends, amp, random, profiler  # noqa: E402,F401
from . import linalg, fft  # noqa: E402,F401
from ._spectral import stft, istft, bartlett_window, blackman_window, hamming_window, hann_window, kaiser_window  # noqa: E402,F401,E501
from . import signal  # noqa: E402,F401
from .amp import autocast  # noqa: E402,F401
from .nn.functional import prelu  # noqa: E402,F401  (torch.prelu)
from .amp.autocast_mode import (is_autocast_enabled, set_autocast_enabled, get_autocast_dtype,  # noqa: E402,F401
                                set_autocast_dtype, is_autocast_cpu_enabled, set_autocast_cpu_enabled,
                                get_autocast_cpu_dtype, set_autocast_cpu_dtype, get_autocast_gpu_dtype,
                                set_autocast_gpu_dtype, is_autocast_cache_enabled, set_autocast_cache_enabled,
                                clear_autocast_cache, autocast_increment_nesting, autocast_decrement_nesting)
from ._C import _amp_foreach_non_finite_check_and_unscale_, _amp_update_scale_  # noqa: E402,F401
from ._foreach import *  # noqa: E402,F401,F403  (torch._foreach_*)
from .serialization import save, load  # noqa: E402,F401

# ---- issue 15 names (helper "names"): torch's remaining namespaces and module-level names
from . import _tensor_device_flags  # noqa: E402,F401  (Tensor.is_xpu, is_mps, ...)
from ._dtype_info import finfo, iinfo  # noqa: E402,F401
from ._global_flags import *  # noqa: E402,F401,F403  (matmul precision, deterministic algorithms)
from . import accelerator, distributions, onnx, special, testing, version  # noqa: E402,F401
from . import _composite_ops  # noqa: E402  (cartesian_prod, tensordot, quantile, ...: composites of ember ops)
for _name in _composite_ops.__all__:
    if not hasattr(_C, _name):  # a C++ op of the same name, where one exists, stays the one used
        globals()[_name] = getattr(_composite_ops, _name)
from . import _math_composites  # noqa: E402  (asinh, acosh, atanh, copysign, index_copy)
for _name in _math_composites.__all__:
    if not hasattr(_C, _name):
        globals()[_name] = getattr(_math_composites, _name)
from . import _composite_more  # noqa: E402  (gcd, mode, histogram, *_scatter, *_copy, ...: more composites)
for _name in _composite_more.__all__:
    if not hasattr(_C, _name) and _name not in globals():
        globals()[_name] = getattr(_composite_more, _name)
for _name in ("nanmean", "unique_consecutive", "frexp", "ldexp"):  # torch has these as Tensor methods too
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, getattr(_composite_ops, _name))
from . import _householder  # noqa: E402  (geqrf, orgqr, ormqr: QR in LAPACK's packed form)
for _name in _householder.__all__:
    globals()[_name] = getattr(_householder, _name)
    setattr(Tensor, _name, getattr(_householder, _name))
from . import _inplace_more  # noqa: E402  (x.eq_(y), x.t_(), fill_diagonal_, torch.clamp_, ...)
_inplace_more.install(globals())
from . import _torch_nn_aliases  # noqa: E402  (torch.conv2d, torch.layer_norm, ...: nn.functional under torch's names)
for _name in _torch_nn_aliases.__all__:
    if _name not in globals():
        globals()[_name] = getattr(_torch_nn_aliases, _name)
range = _composite_ops._torch_range  # torch.range (deprecated); the module keeps Python's range
from ._compile import compile  # noqa: E402  (torch.compile; ember.compiler has explain/reset/...)
from . import compiler  # noqa: E402,F401
from ._cond import cond  # noqa: E402,F401  (torch.cond: control flow ember.compile holds without a break)
from . import _dynamo  # noqa: E402,F401  (torch._dynamo: reset, explain, mark_dynamic, graph_break, config)
from . import library  # noqa: E402,F401  (torch.library: custom ops)
from .library import ops  # noqa: E402,F401  (ember.ops.<namespace>.<op>)
from . import export  # noqa: E402,F401  (torch.export: programs that run without Python)
from . import func  # noqa: E402,F401  (torch.func: grad, vmap, jacrev, functional_call, ...)
from .func import vmap  # noqa: E402,F401  (torch.vmap)
from . import _out  # noqa: E402  (torch's out= keyword for the functions that have one; Tensor.resize_)
_out.install(globals())
