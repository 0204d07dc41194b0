"""ember.autograd: reverse-mode automatic differentiation, as torch.autograd.

The graph, the engine and the gradient formulas are ember's C++ library; this package gives
them torch's Python API: backward(), grad(), Function, grad mode, gradcheck.
"""
from .. import _C
from . import grad_mode, function, graph  # noqa: F401
from .grad_mode import (no_grad, enable_grad, set_grad_enabled, inference_mode,  # noqa: F401
                        is_grad_enabled, is_inference_mode_enabled)
from .function import Function, FunctionCtx, once_differentiable  # noqa: F401
from .gradcheck import gradcheck, gradgradcheck, GradcheckError  # noqa: F401
from .anomaly_mode import detect_anomaly, set_detect_anomaly, is_anomaly_enabled  # noqa: F401
from . import functional  # noqa: F401,E402
from . import profiler, profiler_util  # noqa: F401,E402

__all__ = ["Variable", "Function", "backward", "grad", "grad_mode", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode", "is_grad_enabled", "is_inference_mode_enabled",
           "gradcheck", "gradgradcheck", "detect_anomaly", "set_detect_anomaly"]


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None,
             inputs=None):
    """Computes the gradients of `tensors` (a tensor or a sequence) and accumulates them into the
    .grad of the graph's leaves (only of `inputs`, when given). `grad_tensors` gives one
    gradient per tensor (None for a scalar tensor: ones). The graph is freed unless
    `retain_graph` (default: `create_graph`); `create_graph` records the backward itself, for
    higher-order derivatives."""
    if grad_variables is not None:
        if grad_tensors is not None:
            raise RuntimeError("'grad_tensors' and 'grad_variables' (deprecated) arguments both passed to "
                               "backward(). Please only use 'grad_tensors'.")
        grad_tensors = grad_variables
    _C._autograd_backward(tensors, grad_tensors, retain_graph, create_graph, inputs)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=False, is_grads_batched=False):
    """Returns the gradients of `outputs` with respect to `inputs` as a tuple, without touching
    any .grad. An input the outputs do not depend on is an error unless `allow_unused` (then
    its gradient is None)."""
    if is_grads_batched:
        raise NotImplementedError("ember.autograd.grad: is_grads_batched=True is not supported")
    return _C._autograd_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused)


class _VariableMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, _C.Tensor)


class Variable(metaclass=_VariableMeta):
    """Deprecated, as in torch: Variable(t, requires_grad=False) returns a tensor sharing t's data;
    every tensor is an instance of Variable."""

    def __new__(cls, data, requires_grad=False, volatile=False):
        if not isinstance(data, _C.Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        out = data.detach()
        if requires_grad:
            out.requires_grad_(True)
        return out
