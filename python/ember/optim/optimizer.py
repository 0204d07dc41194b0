"""ember.optim.Optimizer: torch's optimizer base class.

param_groups is a plain list of dicts (edit g['lr'] and the next step uses it), state maps each
parameter to its dict, and state_dict()/load_state_dict() use torch's layout, so checkpoints move
between ember and torch. Subclass it and write step() with self.param_groups and self.state, as in
torch. SGD, Adam, AdamW, RMSprop and Adagrad derive from _CppOptimizer below: their update runs in
ember's C++ library (include/ember/optim/), which also keeps their per-parameter state; Adadelta,
Adamax, NAdam, RAdam, Rprop, ASGD and LBFGS are plain Python subclasses over ember tensor ops.
Step, state_dict and load_state_dict hooks work as in torch 2 for all of them.
"""
import copy
import functools
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Iterable, MutableMapping
from itertools import chain

from .. import _C
from .._profiler_region import profiler_region
from .._C import Tensor

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]

# Hooks run around every optimizer's step() (torch.optim.optimizer's global hooks).
_global_optimizer_pre_hooks = OrderedDict()
_global_optimizer_post_hooks = OrderedDict()


def _removable_handle(hooks_dict):
    from ..nn.modules.module import RemovableHandle
    return RemovableHandle(hooks_dict)


def register_optimizer_step_pre_hook(hook):
    """hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs), run before every
    optimizer's step(). Returns a handle whose remove() unregisters it."""
    handle = _removable_handle(_global_optimizer_pre_hooks)
    _global_optimizer_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook):
    """hook(optimizer, args, kwargs) -> None, run after every optimizer's step()."""
    handle = _removable_handle(_global_optimizer_post_hooks)
    _global_optimizer_post_hooks[handle.id] = hook
    return handle


_HOOK_DICTS = ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
               "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks",
               "_optimizer_load_state_dict_post_hooks")


class _RequiredParameter:
    """Singleton marking an option a param group must give (SGD's lr)."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _typename(obj):
    if isinstance(obj, Tensor):
        return "ember.Tensor"
    t = type(obj)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _enable_grad():
    from ..autograd.grad_mode import enable_grad
    return enable_grad()


def _get_scalar_dtype():
    """dtype of the scalar state tensors ('step', 'mu_product', 'eta', ...): float64 when the
    default dtype is float64, else float32 (as torch)."""
    from .. import float32, float64, get_default_dtype
    return float64 if get_default_dtype() == float64 else float32


def _to_scalar(x):
    """A group's lr may be a one-element tensor: its Python value."""
    if isinstance(x, Tensor):
        return x.item()
    return x


def _check_lr(lr):
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def _check_betas_eps_decay(betas, eps, weight_decay):
    """The checks (and torch's messages) that Adam-like optimizers share."""
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


_GROUP_FLAGS = (("foreach", None), ("maximize", False), ("differentiable", False), ("capturable", False))


def _restore_group_flags(optimizer, *extra_flags):
    """__setstate__ helper: groups saved by an older torch get the flags it did not have."""
    for group in optimizer.param_groups:
        for k, v in _GROUP_FLAGS + extra_flags:
            group.setdefault(k, v)


def _evaluate_closure(closure):
    """step(closure)'s loss: the closure re-evaluates the model with grad enabled."""
    if closure is None:
        return None
    with _enable_grad():
        return closure()


def _scalar_state(value, param, capturable):
    """A 0-dim state tensor of the scalar dtype: on the parameter's device when capturable, else
    on the CPU (torch keeps 'step' on the host so reading it costs no device sync)."""
    from .. import tensor
    if capturable:
        return tensor(float(value), dtype=_get_scalar_dtype(), device=param.device)
    return tensor(float(value), dtype=_get_scalar_dtype())


def _step_tensors_after_load(optimizer, *extra_keys):
    """__setstate__ helper: state saved with a Python number for 'step' (older torch) gets the
    0-dim tensor torch 2 stores."""
    for group in optimizer.param_groups:
        for p in group["params"]:
            st = optimizer.state.get(p, None)
            if not st:
                continue
            for key in ("step",) + extra_keys:
                if key in st and not isinstance(st[key], Tensor):
                    st[key] = _scalar_state(st[key], p, group.get("capturable", False))


def _use_grad_for_differentiable(step):
    """step() runs under no_grad unless the group asks to differentiate through the update."""
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        from ..autograd.grad_mode import set_grad_enabled
        with set_grad_enabled(bool(self.defaults.get("differentiable", False))):
            return step(self, *args, **kwargs)
    return wrapper


class Optimizer:
    r"""Base class for all optimizers.

    Args:
        params: an iterable of tensors, or of dicts (param groups: 'params' plus per-group options).
        defaults: the options a group takes when it does not give its own.
    """

    def __init__(self, params, defaults):
        self.defaults = defaults
        for name in _HOOK_DICTS:
            setattr(self, name, OrderedDict())
        self._patch_step_function()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors "
                            "or dicts, but got " + _typename(params))
        if isinstance(params, set):
            warnings.warn("optimizer parameters need to be organized in ordered collections, but the ordering "
                          "of tensors in sets will change between runs. Please use a list instead. This will "
                          "be an error in a future release.", FutureWarning, stacklevel=2)
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in _HOOK_DICTS:
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self._patch_step_function()
        self.defaults.setdefault("differentiable", False)

    # -- hooks -----------------------------------------------------------------------------------
    @staticmethod
    def profile_hook_step(func):
        """Wraps a step() so that the global and per-optimizer step pre/post hooks run around it."""
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            self = args[0]
            for pre_hook in chain(_global_optimizer_pre_hooks.values(),
                                  self.__dict__.get("_optimizer_step_pre_hooks", {}).values()):
                result = pre_hook(self, args, kwargs)
                if result is not None:
                    if isinstance(result, tuple) and len(result) == 2:
                        args, kwargs = result
                    else:
                        raise RuntimeError(f"{func} must return None or a tuple of (new_args, new_kwargs), "
                                           f"but got {result}.")
            with profiler_region("Optimizer.step#{}.step".format(self.__class__.__name__)):
                out = func(*args, **kwargs)
            for post_hook in chain(self.__dict__.get("_optimizer_step_post_hooks", {}).values(),
                                   _global_optimizer_post_hooks.values()):
                post_hook(self, args, kwargs)
            return out
        wrapper.hooked = True
        return wrapper

    def _patch_step_function(self):
        # As torch: the class's step is wrapped once, on the first instance, so that subclasses
        # written by users get the hooks too.
        cls = self.__class__
        if not getattr(cls.step, "hooked", False):
            cls.step = self.profile_hook_step(cls.step)

    def _register_hook(self, name, hook, prepend=False):
        hooks = getattr(self, name)
        handle = _removable_handle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_step_pre_hook(self, hook):
        """hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs), before each step()."""
        return self._register_hook("_optimizer_step_pre_hooks", hook)

    def register_step_post_hook(self, hook):
        """hook(optimizer, args, kwargs) -> None, after each step()."""
        return self._register_hook("_optimizer_step_post_hooks", hook)

    def register_state_dict_pre_hook(self, hook, prepend=False):
        """hook(optimizer) -> None, before state_dict() builds its result."""
        return self._register_hook("_optimizer_state_dict_pre_hooks", hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        """hook(optimizer, state_dict) -> None or a state_dict returned instead."""
        return self._register_hook("_optimizer_state_dict_post_hooks", hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        """hook(optimizer, state_dict) -> None or a state_dict loaded instead."""
        return self._register_hook("_optimizer_load_state_dict_pre_hooks", hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        """hook(optimizer) -> None, after load_state_dict()."""
        return self._register_hook("_optimizer_load_state_dict_post_hooks", hook, prepend)

    def __repr__(self):
        s = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += "\nParameter Group {0}\n".format(i)
            for key in sorted(group.keys()):
                if key != "params":
                    s += "    {0}: {1}\n".format(key, group[key])
        return s + ")"

    def add_param_group(self, param_group):
        """Adds a group (a dict with 'params' and optional options; missing ones come from
        defaults), e.g. to train layers that were frozen so far."""
        if not isinstance(param_group, dict):
            raise TypeError("param group must be a dict")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the "
                            "ordering of tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)
        # torch 2: params may be (name, tensor) pairs, e.g. model.named_parameters().
        names = [p[0] for p in param_group["params"] if isinstance(p, tuple)]
        param_group["params"] = [p[1] if isinstance(p, tuple) else p for p in param_group["params"]]
        if names:
            if len(names) != len(param_group["params"]):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names
        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(param))
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required optimization parameter " + name)
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            import warnings
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this "
                          "will cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        for g in self.param_groups:
            if ("param_names" in param_group) != ("param_names" in g):
                raise ValueError("all optimizer param groups should be with/without names. cannot add param group "
                                 + ("with names" if "param_names" in param_group else "without names")
                                 + " to the optimizer")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True):
        """Resets the gradients of every parameter: to None (default, as torch 2), or to zeros."""
        with profiler_region("Optimizer.zero_grad#{}.zero_grad".format(self.__class__.__name__)):
            _C._zero_grad(self.param_groups, bool(set_to_none))

    def step(self, closure=None):
        raise NotImplementedError

    # -- state_dict ------------------------------------------------------------------------------
    def _pack_groups(self):
        mapping, groups, start = {}, [], 0
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            for i, p in enumerate(g["params"], start):
                mapping.setdefault(id(p), i)
            packed["params"] = [mapping[id(p)] for p in g["params"]]
            start += len(packed["params"])
            groups.append(packed)
        return mapping, groups

    def state_dict(self):
        """{'state': {index: per-parameter state}, 'param_groups': [options + 'params': indices]}:
        torch's layout. State tensors are shared with the optimizer, as in torch."""
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        state_dict = self._build_state_dict()
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def _build_state_dict(self):
        mapping, groups = self._pack_groups()
        state = {(mapping[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        return {"state": state, "param_groups": groups}

    def _check_loadable(self, state_dict):
        saved_groups = state_dict["param_groups"]
        if len(self.param_groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(self.param_groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        return saved_groups

    def load_state_dict(self, state_dict):
        """Loads a state_dict() (ember's or torch's): saved parameter indices map onto this
        optimizer's parameters in order. As in torch 2, the state tensors are not copied: each is
        cast (.to, which shares the tensor when nothing changes) to its parameter's device and,
        for a floating parameter, dtype; 'step' stays as saved unless the group is capturable or
        fused (then float32 on the parameter's device)."""
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        self._load_state_dict(state_dict)
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    def _load_state_dict(self, state_dict):
        self._check_loadable(state_dict)
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in self.param_groups)))
        policy = {}  # saved index -> whether its group keeps 'step' as float32 on the device
        for g in state_dict["param_groups"]:
            for i in g["params"]:
                policy.setdefault(i, bool(g.get("capturable", False) or g.get("fused", False)))

        def cast(param, value, device_step, key=None):
            if isinstance(value, Tensor):
                if key == "step":
                    if device_step:
                        from .. import float32
                        return value.to(dtype=float32, device=param.device)
                    return value
                if param.is_floating_point():
                    return value.to(dtype=param.dtype, device=param.device)
                return value.to(device=param.device)
            if isinstance(value, dict):
                return {k: cast(param, v, device_step, key=k) for k, v in value.items()}
            if isinstance(value, Iterable) and not isinstance(value, str):
                return type(value)(cast(param, v, device_step) for v in value)
            return value

        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                state[id_map[k]] = cast(id_map[k], v, policy.get(k, False))
            else:
                state[k] = v
        groups = []
        for g, ng in zip(self.param_groups, saved_groups):
            ng["params"] = g["params"]
            if "param_names" in g and "param_names" not in ng:
                ng["param_names"] = g["param_names"]
            groups.append(ng)
        self.__setstate__({"state": state, "param_groups": groups})


class _StateEntry(dict):
    """One parameter's state from a C++ optimizer: a dict sharing the C++ tensors, whose edits
    (st['step'] = ...) are written back."""

    def __init__(self, cpp, param, items):
        super().__init__(items)
        self._cpp, self._param = cpp, param

    def _push(self):
        self._cpp.state_set(self._param, dict(self))

    def __setitem__(self, k, v):
        super().__setitem__(k, v)
        self._push()

    def __delitem__(self, k):
        super().__delitem__(k)
        self._push()

    def update(self, *a, **kw):
        super().update(*a, **kw)
        self._push()

    def pop(self, *a):
        out = super().pop(*a)
        self._push()
        return out

    def setdefault(self, k, v=None):
        out = super().setdefault(k, v)
        self._push()
        return out

    def clear(self):
        super().clear()
        self._push()


class _CppState(MutableMapping):
    """optimizer.state of a built-in optimizer: parameter -> its state dict, read from C++."""

    def __init__(self, opt):
        self._opt = opt

    def _params(self):
        seen, out = set(), []
        for g in self._opt.param_groups:
            for p in g["params"]:
                if id(p) not in seen:
                    seen.add(id(p))
                    out.append(p)
        return out

    def __getitem__(self, p):
        if not isinstance(p, Tensor):
            raise KeyError(p)
        d = self._opt._cpp.state_get(p)
        return _StateEntry(self._opt._cpp, p, d or {})

    def __setitem__(self, p, value):
        if not isinstance(p, Tensor):
            raise TypeError("optimizer.state of a built-in optimizer is keyed by parameters")
        self._opt._cpp.state_set(p, dict(value))

    def __delitem__(self, p):
        if p not in self:
            raise KeyError(p)
        self._opt._cpp.state_del(p)

    def __contains__(self, p):
        return isinstance(p, Tensor) and self._opt._cpp.state_get(p) is not None

    def __iter__(self):
        params = self._params()
        return iter([p for p, has in zip(params, self._opt._cpp.state_mask(params)) if has])

    def __len__(self):
        return sum(self._opt._cpp.state_mask(self._params()))

    def clear(self):
        self._opt._cpp.state_clear()

    def __repr__(self):
        return repr(dict(self.items()))


class _CppOptimizer(Optimizer):
    """A built-in optimizer: the Python groups are the API, the C++ optimizer does the update
    (synced from the groups before every step, GIL released) and keeps the state."""

    _kind = None  # "sgd", "adam", ...: the C++ class _C._make_optimizer builds

    def __init__(self, params, defaults):
        super().__init__(params, defaults)
        self._cpp = _C._make_optimizer(self._kind, self.param_groups, defaults)
        self.state = _CppState(self)

    def add_param_group(self, param_group):
        super().add_param_group(param_group)
        if "_cpp" in self.__dict__:
            self._cpp.sync(self.param_groups)  # Adagrad creates its state for the new group here

    def step(self, closure=None):
        """One update of every parameter that has a gradient. closure (optional) re-evaluates the
        model with grad enabled and returns the loss, which step returns."""
        loss = None
        if closure is not None:
            with _enable_grad():
                loss = closure()
        self._cpp.step(self.param_groups)
        return loss

    def _build_state_dict(self):
        _, groups = self._pack_groups()
        return {"state": self._cpp.state_dict_state(self.param_groups), "param_groups": groups}

    def _load_state_dict(self, state_dict):
        saved_groups = self._check_loadable(state_dict)
        # The C++ optimizer maps indices to parameters, copies and casts the state tensors.
        self._cpp.load_state_dict(self.param_groups, state_dict)
        groups = []
        for g, saved in zip(self.param_groups, saved_groups):
            ng = copy.deepcopy({k: v for k, v in saved.items() if k != "params"})
            ng["params"] = g["params"]
            groups.append(ng)
        self.param_groups = groups

    def __getstate__(self):
        raise TypeError(f"cannot pickle {type(self).__name__}: save its state_dict() instead")

    def __setstate__(self, state):
        Optimizer.__setstate__(self, state)
