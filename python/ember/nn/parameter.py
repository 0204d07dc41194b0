"""nn.Parameter: a Tensor subclass that modules register as a parameter.

`Parameter(data)` shares `data`'s storage (as torch's does) but is a new autograd leaf: the
Tensor binding's aliasing constructor `Tensor.__init__(self, other)` wraps a detached view.
"""
import copy as _copy

from .. import _C
from .._C import Tensor

__all__ = ["Parameter", "UninitializedParameter", "UninitializedBuffer", "Buffer", "is_lazy"]


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


class _BufferMeta(type):
    """isinstance(t, Buffer) is True for the tensors Buffer(...) returned (torch's _BufferMeta; ember's
    Tensor metaclass cannot be subclassed, so Buffer is a plain class whose constructor returns a Tensor)."""

    def __instancecheck__(cls, instance):
        if cls is Buffer:
            return isinstance(instance, Tensor) and bool(getattr(instance, "_is_buffer", False))
        return super().__instancecheck__(instance)


class Buffer(metaclass=_BufferMeta):
    r"""Marks a tensor as a module buffer (torch 2.5+): `self.x = nn.Buffer(t, persistent=True)` in a
    Module registers `x` as a buffer, in the state_dict unless persistent=False.

    Returns a detached Tensor (keeping `data.requires_grad`) flagged `_is_buffer` and `persistent`."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = _C.empty(0)
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


_UNINIT_MSG = ("Can't access the shape of an uninitialized parameter or buffer. This error usually happens in "
               "`load_state_dict` when trying to load an uninitialized parameter into an initialized one. Call "
               "`forward` to initialize the parameters before accessing their attributes.")


class UninitializedTensorMixin:
    """A placeholder of unknown shape (an empty tensor of the chosen device and dtype) that lazy modules
    materialize at their first forward; `materialize` gives it its data and its final class."""

    cls_to_become = Tensor

    def materialize(self, shape, device=None, dtype=None):
        if device is None:
            device = self.device
        if dtype is None:
            dtype = self.dtype
        self.data = _C.empty(tuple(shape), device=device, dtype=dtype)
        self.__class__ = self.cls_to_become

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call `forward` to "
                           "initialize the parameters before calling `module.share_memory()`.")

    def __repr__(self):
        return f"<{self.__class__.__name__}>"

    __str__ = __repr__

    def __reduce_ex__(self, proto):
        return (self.__class__, (self.requires_grad,))


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter whose shape is not known yet (lazy modules); becomes a Parameter when
    materialized (the same object, so optimizers built earlier hold it)."""

    cls_to_become = Parameter

    def __init__(self, requires_grad=True, device=None, dtype=None):
        Parameter.__init__(self, _C.empty(0, device=device, dtype=dtype), requires_grad)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.requires_grad, self.device, self.dtype)
        memo[id(self)] = result
        return result


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet (lazy norm layers); becomes a Tensor when materialized."""

    cls_to_become = Tensor

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        Tensor.__init__(self, _C.empty(0, device=device, dtype=dtype))
        if requires_grad:
            self.requires_grad_(True)
        self.persistent = persistent
        self._is_buffer = True

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.requires_grad, self.device, self.dtype, getattr(self, "persistent", True))
        memo[id(self)] = result
        return result


def is_lazy(param):
    """Whether `param` is an UninitializedParameter or UninitializedBuffer."""
    return isinstance(param, UninitializedTensorMixin)
