"""ember.nn.utils.parametrize (torch.nn.utils.parametrize): a tensor of a module computed from
others, `module.weight = parametrization(module.parametrizations.weight.original)`.

As torch does it: the module's class is swapped for a subclass that owns one property per
parametrized tensor; the original tensors live in `module.parametrizations[name]` (a
ParametrizationList), so state_dict keys read `parametrizations.weight.original` (or
`original0`, `original1`, ... when right_inverse returns several tensors).
"""
import contextlib

from ..modules.container import ModuleDict, ModuleList
from ..parameter import Parameter

__all__ = ["register_parametrization", "is_parametrized", "remove_parametrizations", "cached",
           "ParametrizationList", "type_before_parametrizations", "transfer_parametrizations_and_params"]

_cache_enabled = 0
_cache = {}


@contextlib.contextmanager
def cached():
    """Within this context each parametrized tensor is computed once, on first access."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _no_grad():
    from ... import no_grad
    return no_grad()


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and the original tensor(s)."""

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        new = original
        with _no_grad():
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        self.is_tensor = not isinstance(new, (tuple, list))
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError(f"When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                                 f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}")
            if tuple(new.shape) != tuple(original.shape):
                raise ValueError(f"ember: right_inverse may not change the shape of a single tensor "
                                 f"(original {tuple(original.shape)}, right_inverse {tuple(new.shape)})")
            with _no_grad():
                original.copy_(new)
            _register(self, "original", original)
        else:
            for i, originali in enumerate(new):
                p = Parameter(originali, original.requires_grad) if isinstance(original, Parameter) else originali
                _register(self, f"original{i}", p)

    def right_inverse(self, value):
        """Sets the originals so that this list's result is `value` (calls each right_inverse)."""
        with _no_grad():
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
                else:
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement "
                                       "right_inverse.")
            if self.is_tensor:
                self.original.copy_(value)
            else:
                for i, v in enumerate(value):
                    getattr(self, f"original{i}").copy_(v)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _register(module, name, tensor):
    if isinstance(tensor, Parameter):
        module.register_parameter(name, tensor)
    else:
        module.register_buffer(name, tensor)


def _inject_new_class(module):
    cls = module.__class__

    def getstate(self):
        raise RuntimeError("Serialization of parametrized modules is only supported through state_dict().")

    param_cls = type(f"Parametrized{cls.__name__}", (cls,), {"__getstate__": getstate})
    module.__class__ = param_cls


def _inject_property(module, tensor_name):
    def get_parametrized(self):
        parametrization = self.parametrizations[tensor_name]
        if _cache_enabled:
            key = (id(module), tensor_name)
            if key not in _cache:
                _cache[key] = parametrization()
            return _cache[key]
        return parametrization()

    def set_original(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def is_parametrized(module, tensor_name=None):
    parametrizations = getattr(module, "parametrizations", None)
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def type_before_parametrizations(module):
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Makes `module.<tensor_name>` return parametrization(original); returns module."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            Y = getattr(module, tensor_name)
            X = parametrization(Y)
            if tuple(X.shape) != tuple(Y.shape) or X.dtype != Y.dtype:
                raise ValueError(f"Registering a parametrization may not change the shape or dtype of the tensor. "
                                 f"unparametrized shape: {tuple(Y.shape)}, parametrized: {tuple(X.shape)}")
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
        return module
    if tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
        return module
    raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with name "
                     f"'{tensor_name}'")


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Removes the parametrizations of `tensor_name`; the tensor keeps its current value
    (leave_parametrized) or goes back to the original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with _no_grad():
                t = getattr(module, tensor_name)
                if tuple(t.shape) == tuple(original.shape):
                    original.copy_(t)
                else:
                    original = Parameter(t.detach(), original.requires_grad) if isinstance(original, Parameter) \
                        else t.detach()
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
                             "parametrized in terms of a sequence of tensors.")
        with _no_grad():
            t = getattr(module, tensor_name)
        first = parametrizations.original0
        original = Parameter(t.detach(), first.requires_grad) if isinstance(first, Parameter) else t.detach()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Copies the parametrizations (and their originals) of from_module onto to_module."""
    if not is_parametrized(from_module):
        return to_module
    names = [tensor_name] if tensor_name is not None else list(from_module.parametrizations.keys())
    for name in names:
        plist = from_module.parametrizations[name]
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        for p in plist:
            register_parametrization(to_module, name, p)
        with _no_grad():
            if plist.is_tensor:
                to_module.parametrizations[name].original.copy_(plist.original)
            else:
                for i in range(plist.ntensors):
                    getattr(to_module.parametrizations[name], f"original{i}").copy_(getattr(plist, f"original{i}"))
    return to_module

