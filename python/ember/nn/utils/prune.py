"""ember.nn.utils.prune (torch.nn.utils.prune): masks that zero parts of a parameter.

Pruning `name` moves the parameter to `<name>_orig`, registers a `<name>_mask` buffer and a
forward pre-hook that sets `module.<name> = <name>_orig * <name>_mask` before each forward, as
torch does (state_dict keys, hooks and iterative pruning alike). Pruning the same tensor again
combines the methods in a PruningContainer: the new method only sees the entries (or channels)
still unpruned.
"""
import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

from ... import _C

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured", "L1Unstructured",
           "RandomStructured", "LnStructured", "CustomFromMask", "identity", "random_unstructured",
           "l1_unstructured", "random_structured", "ln_structured", "global_unstructured", "custom_from_mask",
           "remove", "is_pruned"]


def _no_grad():
    from ... import no_grad
    return no_grad()


class BasePruningMethod(ABC):
    _tensor_name = None

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The mask for tensor t, given the mask already in force (default_mask)."""

    def apply_mask(self, module):
        assert self._tensor_name is not None, f"Module {module} has to be pruned"
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        old_method = None
        found = 0
        for k, hook in list(module._forward_pre_hooks.items()):
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
                old_method = hook
                del module._forward_pre_hooks[k]
                found += 1
        assert found <= 1, f"Avoid adding multiple pruning hooks to the same tensor {name} of module {module}. " \
                           "Use a PruningContainer."
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if old_method is not None:
            if isinstance(old_method, PruningContainer):
                old_method.add_pruning_method(method)
                method = old_method
            else:
                container = PruningContainer(old_method)
                container.add_pruning_method(method)
                method = container

        orig = getattr(module, name)
        if importance_scores is not None:
            assert tuple(importance_scores.shape) == tuple(orig.shape), \
                f"importance_scores should have the same shape as parameter {name} of {module}"
        else:
            importance_scores = orig
        if not isinstance(method, PruningContainer):
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = _C.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        with _no_grad():
            mask = method.compute_mask(importance_scores.detach(), default_mask=default_mask)
        module.register_buffer(name + "_mask", mask)
        setattr(module, name, method.apply_mask(module))
        module.register_forward_pre_hook(method)
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """t with this method's mask applied (no module involved)."""
        scores = importance_scores if importance_scores is not None else t
        default_mask = default_mask if default_mask is not None else _C.ones_like(t)
        with _no_grad():
            return t * self.compute_mask(scores, default_mask=default_mask)

    def remove(self, module):
        """Makes the pruning permanent: <name> becomes a plain parameter holding orig * mask."""
        assert self._tensor_name is not None, f"Module {module} has to be pruned before pruning can be removed"
        with _no_grad():
            weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        with _no_grad():
            orig.copy_(weight)
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


class PruningContainer(BasePruningMethod):
    """A sequence of pruning methods applied to one tensor; each new one acts on what the
    previous ones left."""

    def __init__(self, *args):
        self._pruning_methods = tuple()
        if len(args) == 1 and isinstance(args[0], BasePruningMethod):
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method):
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError("Can only add pruning methods acting on the parameter named "
                             f"'{self._tensor_name}' to PruningContainer {self}. Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype).clone()
        if method.PRUNING_TYPE == "unstructured":
            keep = default_mask == 1
            partial = method.compute_mask(t[keep], default_mask=default_mask[keep])
            new_mask[keep] = partial.to(dtype=new_mask.dtype)
        elif method.PRUNING_TYPE == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError("Pruning methods of PRUNING_TYPE 'structured' need to have the attribute `dim` "
                                     "defined.")
            n_dims = t.dim()
            dim = method.dim + n_dims if method.dim < 0 else method.dim
            others = [d for d in range(n_dims) if d != dim]
            keep_channel = default_mask.sum(others) != 0 if others else default_mask != 0
            index = keep_channel.nonzero().reshape(-1)
            partial = method.compute_mask(t.index_select(dim, index),
                                          default_mask=default_mask.index_select(dim, index))
            new_mask.movedim(dim, 0)[index] = partial.to(dtype=new_mask.dtype).movedim(dim, 0)
        elif method.PRUNING_TYPE == "global":
            new_mask = method.compute_mask(t, default_mask=default_mask).to(dtype=new_mask.dtype)
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
        return new_mask


def _validate_amount_init(amount):
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral) and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _validate_amount(amount, tensor_size):
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={tensor_size}")


def _nparams_toprune(amount, tensor_size):
    if isinstance(amount, numbers.Integral):
        return amount
    return round(amount * tensor_size)


def _validate_structured(t):
    if t.dim() <= 1:
        raise ValueError(f"Structured pruning can only be applied to multidimensional tensors. Found tensor of shape "
                         f"{tuple(t.shape)} with {t.dim()} dims")


def _validate_dim(t, dim):
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {tuple(t.shape)}")


def _channel_mask(t, dim, index_or_keep):
    mask = _C.zeros_like(t)
    d = dim % t.dim()
    shape = [1] * t.dim()
    shape[d] = t.size(d)
    keep = index_or_keep
    if keep.dtype != _C.bool:
        keep = _C.zeros([t.size(d)], dtype=_C.bool, device=t.device).index_fill_(0, index_or_keep, True)
    return mask + keep.reshape(shape).to(t.dtype)


class Identity(BasePruningMethod):
    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


class _Unstructured(BasePruningMethod):
    """Zeroes `amount` entries (a count, or a fraction of the entries), chosen by
    _entries_to_prune."""
    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        n = t.numel()
        k = _nparams_toprune(self.amount, n)
        _validate_amount(k, n)
        mask = default_mask.clone()
        if k != 0:
            mask.view(-1)[self._entries_to_prune(t, k)] = 0
        return mask


class RandomUnstructured(_Unstructured):
    def _entries_to_prune(self, t, k):
        return _C.rand_like(t).reshape(-1).topk(k).indices

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(_Unstructured):
    def _entries_to_prune(self, t, k):
        return t.abs().reshape(-1).topk(k, largest=False).indices

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class _Structured(BasePruningMethod):
    """Zeroes `amount` whole slices along `dim` (a count, or a fraction of the slices); the
    slices kept are chosen by _channels_to_keep (a bool mask or indices along dim)."""
    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _validate_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _validate_structured(t)
        _validate_dim(t, self.dim)
        size = t.size(self.dim)
        k = _nparams_toprune(self.amount, size)
        _validate_amount(k, size)
        if k == 0:
            return default_mask
        mask = _channel_mask(t, self.dim, self._channels_to_keep(t, size, k))
        return mask * default_mask.to(dtype=mask.dtype)


class RandomStructured(_Structured):
    def _channels_to_keep(self, t, size, k):
        prob = _C.rand(size)
        return prob > prob.kthvalue(k).values

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(_Structured):
    def __init__(self, amount, n, dim=-1):
        super().__init__(amount, dim)
        self.n = n

    def _channels_to_keep(self, t, size, k):
        d = self.dim % t.dim()
        norm = t.norm(self.n, [i for i in range(t.dim()) if i != d])
        return norm.topk(size - k, largest=True).indices

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        assert tuple(default_mask.shape) == tuple(self.mask.shape)
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


def identity(module, name):
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name, mask):
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prunes several parameters together: the amount is taken over all of them at once."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores = _C.cat([importance_scores.get((m, n), getattr(m, n)).detach().reshape(-1) for m, n in parameters])
    default = _C.cat([getattr(m, n + "_mask", _C.ones_like(getattr(m, n))).reshape(-1) for m, n in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    with _no_grad():
        final_mask = container.compute_mask(scores, default)
    pointer = 0
    for module, name in parameters:
        param = getattr(module, name)
        n = param.numel()
        custom_from_mask(module, name, mask=final_mask[pointer:pointer + n].view_as(param))
        pointer += n


def remove(module, name):
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module):
    for _, submodule in module.named_modules():
        for hook in submodule._forward_pre_hooks.values():
            if isinstance(hook, BasePruningMethod):
                return True
    return False
