"""torch.func.functional_call and stack_module_state: call a module with other parameters and
buffers than its own (swapped in for the call, the originals put back after, even on error)."""
import contextlib
import weakref
from collections.abc import Sequence

from .. import _C

__all__ = ["functional_call", "stack_module_state"]

_MISSING = object()


def _all_named_tensors(module):
    """{name: tensor} of every parameter and buffer under every path, tied ones under each of
    their names (torch's named_parameters(remove_duplicate=False) and named_buffers(...))."""
    out = {}

    def walk(mod, prefix, which):
        for k, v in getattr(mod, which).items():
            if v is not None:
                out[prefix + k] = v
        for name, sub in mod._modules.items():
            if sub is not None:
                walk(sub, prefix + name + ".", which)

    walk(module, "", "_parameters")
    walk(module, "", "_buffers")
    return out


class _ModuleInfo:
    """What functional_call needs to know of a module's structure: the names tied together and
    all valid names, and the submodules by dotted path. Kept per module while ember's module
    structure counter (bumped by every attribute assignment on any module) has not moved."""

    __slots__ = ("epoch", "tied", "names", "memo", "__weakref__")

    def __init__(self, module, epoch):
        self.epoch = epoch
        all_named = _all_named_tensors(module)
        names_of = {}
        for name, t in all_named.items():
            names_of.setdefault(id(t), set()).add(name)
        self.tied = {}
        for names in names_of.values():
            if len(names) > 1:
                for n in names:
                    self.tied[n] = names
        self.names = set(all_named)
        self.memo = {}


_infos = weakref.WeakKeyDictionary()


def _structure_epoch():
    from ..nn.modules.module import _structure_epoch as epoch
    return epoch


def _module_info(module):
    epoch = _structure_epoch()[0]
    info = _infos.get(module)
    if info is None or info.epoch != epoch:
        info = _ModuleInfo(module, epoch)
        _infos[module] = info
    return info


def _untie_named_tensors_map(info, parameters_and_buffers):
    """The given map with a value added for every name tied to a given name (torch's
    stateless._untie_named_tensors_map): {'foo': v} -> {'foo': v, 'tied_foo': v}."""
    tied = info.tied
    if not tied:
        return parameters_and_buffers
    given_tied = {n for n in parameters_and_buffers if n in tied}
    if not given_tied:
        return parameters_and_buffers
    for n in given_tied:
        names = tied[n]
        if (len(names & given_tied) > 1
                and len({id(parameters_and_buffers[k]) for k in names if k in parameters_and_buffers}) != 1):
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, which are tied. "
                             "Consider using tie_weights=False")
    untied = dict(parameters_and_buffers)
    for n in given_tied:
        for k in tied[n]:
            untied[k] = parameters_and_buffers[n]
    return untied


def _get_submodule(module, path, memo):
    if not path:
        return module
    if path in memo:
        return memo[path]
    prefix, dot, attr = path.rpartition(".")
    parent = _get_submodule(module, prefix, memo) if dot else module
    try:
        sub = getattr(parent, attr)
    except AttributeError as ex:
        raise AttributeError(f"{parent._get_name()} has no attribute `{attr}`") from ex
    from ..nn.modules.module import Module
    if not isinstance(sub, Module):
        raise TypeError(f"submodule `{path}`: {sub} is not an instance of torch.nn.Module")
    memo[path] = sub
    return sub


def _swap_tensor(module, name, tensor, memo):
    """Put tensor (or _MISSING: remove) at the dotted name; returns what was there (_MISSING if
    nothing). Parameters and buffers are replaced in their dicts, so any tensor may stand in
    for a Parameter; other names become plain attributes."""
    prefix, _, attr = name.rpartition(".")
    mod = _get_submodule(module, prefix, memo)
    if tensor is not _MISSING and tensor is not None and not isinstance(tensor, _C.Tensor):
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    if attr == "":
        raise KeyError('tensor name can\'t be empty string ""')
    params = mod._parameters
    if attr in params:
        orig = params[attr]
        if tensor is _MISSING:
            del params[attr]
        else:
            params[attr] = tensor
        return orig
    buffers = mod._buffers
    if attr in buffers:
        orig = buffers[attr]
        if tensor is _MISSING:
            del buffers[attr]
        else:
            buffers[attr] = tensor
        return orig
    orig = getattr(mod, attr) if hasattr(mod, attr) else _MISSING
    if orig is not _MISSING and orig is not None and not isinstance(orig, _C.Tensor):
        raise TypeError(f"attribute `{attr}`: {orig} is not an instance of torch.Tensor")
    if tensor is not _MISSING:
        setattr(mod, attr, tensor)
    elif hasattr(mod, attr):
        delattr(mod, attr)
    return orig


def _swap_in(module, parameters_and_buffers, tie_weights, strict):
    """Put the given tensors in the module; returns what _swap_out needs to undo it."""
    info = _module_info(module)
    untied = _untie_named_tensors_map(info, parameters_and_buffers) if tie_weights else parameters_and_buffers
    if strict:
        keys = set(untied)
        missing, unexpected = sorted(info.names - keys), sorted(keys - info.names)
        msgs = []
        if unexpected:
            msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if msgs:
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(module._get_name(),
                                                                             "\n\t".join(msgs)))
    epoch = _structure_epoch()
    epoch[0] += 1  # ember.compile re-reads a module's parameters when the structure counter moves
    orig = {}
    state = (module, parameters_and_buffers, info, orig, epoch[0])
    try:
        for name, t in untied.items():
            orig[name] = _swap_tensor(module, name, t, info.memo)
    except BaseException:
        _swap_out(state)
        raise
    return state


def _swap_out(state):
    """Put the module's own tensors back (in reverse order: a name given twice ends as it was)."""
    module, parameters_and_buffers, info, orig, start = state
    new = {}
    for name, t in reversed(list(orig.items())):
        new[name] = _swap_tensor(module, name, t, info.memo)
    epoch = _structure_epoch()
    unchanged = epoch[0] == start  # nothing but the swaps touched any module meanwhile
    epoch[0] += 1
    if unchanged and info.epoch == start - 1:
        info.epoch = epoch[0]  # the module is as it was: its info stays valid
    # a module that assigned to its own parameters/buffers in place of the given ones: the
    # caller's dict sees the new values (torch does the same)
    for k in parameters_and_buffers:
        if k in new and new[k] is not _MISSING:
            parameters_and_buffers[k] = new[k]


@contextlib.contextmanager
def _reparametrize_module(module, parameters_and_buffers, tie_weights=False, strict=False):
    state = _swap_in(module, parameters_and_buffers, tie_weights, strict)
    try:
        yield
    finally:
        _swap_out(state)


def _functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    state = _swap_in(module, parameters_and_buffers, tie_weights, strict)
    try:
        return module(*args, **kwargs)
    finally:
        _swap_out(state)


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """Call module(*args, **kwargs) with the parameters and buffers named in
    parameter_and_buffer_dicts (one dict, or a tuple/list of dicts with distinct keys) in place
    of its own, which are restored afterwards. Names the dicts leave out keep the module's own
    values (unless strict=True, which requires exactly the module's names). With tie_weights,
    a value given for one of several tied names is used for all of them."""
    if isinstance(parameter_and_buffer_dicts, dict):
        parameters_and_buffers = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        counts = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is ambiguous")
        parameters_and_buffers = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, "
                         f"but got {type(parameter_and_buffer_dicts)}")
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)


def _stacked_leaf(tensors, name):
    all_rg = all(t.requires_grad for t in tensors)
    none_rg = all(not t.requires_grad for t in tensors)
    if not all_rg and not none_rg:
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    out = _C.stack(list(tensors))
    if all_rg:
        out = out.detach().requires_grad_()
    return out


def stack_module_state(models):
    """(params, buffers): each parameter and buffer of the models (all of one class, all in the
    same training mode) stacked along a new dim 0, by name. The stacked parameters are new
    leaves (requires_grad as the originals), ready for an optimizer and for vmap over dim 0."""
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    typ = type(models[0])
    if not all(type(m) is typ for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    params = {k: _stacked_leaf(tuple(p[k] for p in all_params), k) for k in all_params[0]}
    all_buffers = [dict(m.named_buffers()) for m in models]
    buffers = {k: _stacked_leaf(tuple(b[k] for b in all_buffers), k) for k in all_buffers[0]}
    return params, buffers
