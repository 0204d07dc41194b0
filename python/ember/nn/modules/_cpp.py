"""Python Modules backed by C++ nn::Modules (the layers that exist only in C++).

Mechanism. A C++-backed module (`CppModule` subclass) owns a C++ `nn::Module` (`self._cpp`, from
ember._C._nn) and mirrors its tree on the Python side:

  - every C++ parameter becomes a Python `Parameter` aliasing the *same* TensorImpl
    (`Parameter._alias`: no copy, no new leaf), so `parameters()`, optimizers, `.grad`,
    in-place updates and `load_state_dict` (which copies in place) act on the tensors the C++
    forward reads;
  - every C++ child becomes a `_CppChild` wrapper registered in `_modules` under the C++ name, so
    `state_dict()` keys, `named_modules()` and `repr()` are torch's ("self_attn.out_proj.weight");
  - C++ buffers are registered as Python buffers (same TensorImpls).

The Python side is the source of truth: before each C++ forward, `_sync_cpp()` points every C++
parameter slot at the tensor the Python Parameter holds now (cheap pointer compares; it matters
after `.to(dtype)`, `param.data = ...` or assigning a new Parameter) and copies each Python
module's `training` flag to its C++ twin. Such modules nest freely inside Python modules
(Sequential, user subclasses), and `copy.deepcopy` rebuilds the C++ module from the constructor
arguments and copies the state in.
"""
import copy

from ..parameter import Parameter
from .module import Module, _no_grad

__all__ = ["CppModule"]


class CppModule(Module):
    """Base of the C++-backed modules. Subclasses build their C++ module and call
    `super().__init__(cpp, init_args)`, where init_args = (args, kwargs) of their own
    constructor call (what deepcopy uses to build a twin)."""

    def __init__(self, cpp, init_args=((), {})):
        super().__init__()
        object.__setattr__(self, "_init_args", init_args)
        self._attach(cpp)

    def _attach(self, cpp):
        object.__setattr__(self, "_cpp", cpp)
        for name, t in cpp._local_parameters():
            self._parameters[name] = None if t is None else Parameter._alias(t)
        for name, t in cpp._local_buffers():
            self._buffers[name] = t
        for name, child in cpp._children():
            self._modules[name] = _CppChild(child)
        object.__setattr__(self, "training", cpp.training)

    def _sync_cpp(self):
        for m in self.modules():
            cpp = m.__dict__.get("_cpp")
            if cpp is None:
                continue
            for name, p in m._parameters.items():
                if p is not None:
                    cpp._set_parameter(name, p)
            if cpp.training != m.training:
                cpp.train(m.training)  # recursive in C++; children visited later re-fix their own flag

    def _get_name(self):
        return self._cpp._name()

    def extra_repr(self):
        return self._cpp.extra_repr()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        args, kwargs = self._init_args
        new = type(self)(*copy.deepcopy(args, memo), **copy.deepcopy(kwargs, memo))
        memo[id(self)] = new
        with _no_grad():
            for (_, mine), (_, theirs) in zip(self.named_parameters(), new.named_parameters()):
                theirs.copy_(mine)
                theirs.requires_grad_(mine.requires_grad)
            for (_, mine), (_, theirs) in zip(self.named_buffers(), new.named_buffers()):
                theirs.copy_(mine)
        new.train(self.training)
        for k, v in self.__dict__.items():  # plain Python attributes the user added
            if k not in new.__dict__:
                new.__dict__[k] = copy.deepcopy(v, memo)
        return new

    def __reduce_ex__(self, protocol):
        # Pickled as "call the constructor again, then copy the tensors in" (what deepcopy does),
        # so ember.save(model) of a model holding C++-backed layers works.
        params = [(p.detach(), p.requires_grad) for _, p in self.named_parameters()]
        buffers = [b.detach() for _, b in self.named_buffers()]
        extra = {k: v for k, v in self.__dict__.items() if not k.startswith("_") and k != "training"}
        return (_rebuild_cpp_module, (type(self), self._init_args, params, buffers, self.training, extra))


def _rebuild_cpp_module(cls, init_args, params, buffers, training, extra):
    args, kwargs = init_args
    new = cls(*args, **kwargs)
    with _no_grad():
        for (_, theirs), (mine, requires_grad) in zip(new.named_parameters(), params):
            theirs.copy_(mine)
            theirs.requires_grad_(requires_grad)
        for (_, theirs), mine in zip(new.named_buffers(), buffers):
            theirs.copy_(mine)
    new.train(training)
    for k, v in extra.items():
        if k not in new.__dict__:
            new.__dict__[k] = v
    return new


class _CppChild(CppModule):
    """A submodule of a C++ module (e.g. out_proj of MultiheadAttention), wrapped in place."""

    def __init__(self, cpp):
        super().__init__(cpp)

    def forward(self, input):
        self._sync_cpp()
        return self._cpp.forward(input)

    def __deepcopy__(self, memo):
        raise TypeError(f"ember: {self._get_name()} is part of a C++ module; deep-copy the module that owns it")
