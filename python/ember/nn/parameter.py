"""nn.Parameter: a Tensor subclass that modules register as a parameter.

`Parameter(data)` shares `data`'s storage (as torch's does) but is a new autograd leaf: the
Tensor binding's aliasing constructor `Tensor.__init__(self, other)` wraps a detached view.
"""
import copy as _copy

from .. import _C
from .._C import Tensor

__all__ = ["Parameter", "UninitializedParameter", "is_lazy"]


class Parameter(Tensor):
    r"""A kind of Tensor that is to be considered a module parameter.

    Assigning a Parameter as a Module attribute adds it to the module's parameters (and so to
    `parameters()`, `state_dict()` and the optimizers built from them).
    """

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            data = _C.empty(0)
        elif not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not {type(data).__name__}")
        Tensor.__init__(self, data.detach())
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self):
        return "Parameter containing:\n" + Tensor.__repr__(self)

    __str__ = __repr__

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        from ..autograd.grad_mode import no_grad
        with no_grad():
            result = type(self)(self.detach().clone(), self.requires_grad)
        if self.grad is not None:
            result.grad = _copy.deepcopy(self.grad, memo)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, proto):
        return (_rebuild_parameter, (self.detach(), self.requires_grad))


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)


class UninitializedParameter(Parameter):
    """Placeholder for lazy modules; ember has no lazy modules, so it only answers isinstance."""


def is_lazy(param):
    return isinstance(param, UninitializedParameter)
