"""FullyShardedDataParallel: each rank keeps 1/world of every parameter, gradient and optimizer
state; a unit's whole parameters exist only while that unit computes.

The arithmetic is C++'s (ember::distributed::FlatParamHandle, include/ember/distributed/flat_param.h):
a unit's parameters are one flat buffer, sharded by rank; unshard() all-gathers it, views() gives
the original parameters as differentiable views whose gradients meet in one backward node that
reduce-scatters (averages) them into the shard's .grad and frees the gathered buffer. This class is
the Module around it, torch's FSDP1 with use_orig_params=False:

- auto_wrap_policy makes submodules units of their own (bottom-up); each unit's parameters that
  are not in a nested unit are removed from their modules and become that unit's `_flat_param`,
  which is what `parameters()` and so the optimizer see.
- forward: all-gather (or wait for the prefetched gather), put the views in place as the modules'
  attributes, run, and under FULL_SHARD free the gathered memory again (the root keeps it).
- backward: a hook on the unit's outputs all-gathers again before the unit's backward runs and
  starts the gather of the unit that comes next in backward (BACKWARD_PRE prefetch).
- state_dict(): FULL_STATE_DICT (the default) gathers unit by unit into the plain module's keys;
  SHARDED_STATE_DICT gives each parameter as a DTensor sharded on dim 0 (for
  ember.distributed.checkpoint). load_state_dict takes either back.
"""
import contextlib
import itertools
from collections import OrderedDict

import ember

from ...nn.modules.module import Module
from ...nn.parallel.distributed import _tensors_in
from ...nn.parameter import Parameter
from .api import (BackwardPrefetch, CPUOffload, FullStateDictConfig, MixedPrecision, ShardedStateDictConfig,
                  ShardingStrategy, StateDictType)
from .wrap import _policy_callable, _recursive_wrap

__all__ = ["FullyShardedDataParallel"]

_WRAPPED = "_fsdp_wrapped_module"


def _strategy_name(s):
    if s in (ShardingStrategy.HYBRID_SHARD, ShardingStrategy._HYBRID_SHARD_ZERO2):
        raise NotImplementedError(f"FSDP: {s.name} (sharding within a node, replication across nodes) is not "
                                  "supported yet; use FULL_SHARD or SHARD_GRAD_OP with a DeviceMesh group")
    return s.name


def _cast_floating(obj, dtype):
    if isinstance(obj, ember.Tensor):
        return obj.to(dtype) if obj.is_floating_point() and obj.dtype != dtype else obj
    if isinstance(obj, tuple):
        return tuple(_cast_floating(x, dtype) for x in obj)
    if isinstance(obj, list):
        return [_cast_floating(x, dtype) for x in obj]
    if isinstance(obj, dict):
        return {k: _cast_floating(v, dtype) for k, v in obj.items()}
    return obj


def _clean_walk(module, prefix=""):
    """(key prefix, module) for the plain modules under `module`, FSDP wrappers made transparent:
    the keys a state dict of the unwrapped model would have."""
    if isinstance(module, FullyShardedDataParallel):
        yield from _clean_walk(module._fsdp_wrapped_module, prefix)
        return
    yield prefix, module
    for name, child in module._modules.items():
        if child is not None:
            yield from _clean_walk(child, prefix + name + ".")


def _own_modules(root, ignored):
    """root's subtree in breadth-first order, without nested FSDP units and ignored modules."""
    out, queue = [], [root]
    while queue:
        m = queue.pop(0)
        if isinstance(m, FullyShardedDataParallel) or m in ignored:
            continue
        out.append(m)
        queue.extend(c for c in m._modules.values() if c is not None)
    return out


def _own_states(m):
    """m's own parameters and buffers (not its children's)."""
    return [t for t in itertools.chain(m._parameters.values(), m._buffers.values()) if t is not None]


def _materialize_meta(modules, param_init_fn, device):
    """Gives modules built on the meta device real tensors, as torch's FSDP does: param_init_fn(m)
    for every module when given; otherwise each module holding meta parameters or buffers of its
    own gets uninitialised memory on `device` (to_empty, recurse=False) and its reset_parameters()."""
    if not any(t.is_meta for m in modules for t in _own_states(m)):
        return
    with ember.no_grad():
        for m in modules:
            if param_init_fn is not None:
                param_init_fn(m)
            elif any(t.is_meta for t in _own_states(m)):
                if not hasattr(m, "reset_parameters"):
                    raise RuntimeError(f"FSDP: {type(m).__name__} has parameters or buffers on the meta device and no "
                                       "reset_parameters() to initialise them after to_empty(); pass param_init_fn")
                m.to_empty(device=device, recurse=False)
                m.reset_parameters()
    left = [type(m).__name__ for m in modules if any(t.is_meta for t in _own_states(m))]
    if left:
        raise RuntimeError(f"FSDP: param_init_fn left tensors on the meta device in {left[:4]}")


class FullyShardedDataParallel(Module):
    def __init__(self, module, process_group=None, sharding_strategy=None, cpu_offload=None, auto_wrap_policy=None,
                 backward_prefetch=BackwardPrefetch.BACKWARD_PRE, mixed_precision=None, ignored_modules=None,
                 param_init_fn=None, device_id=None, sync_module_states=False, forward_prefetch=False,
                 limit_all_gathers=True, use_orig_params=False, ignored_states=None, device_mesh=None):
        super().__init__()
        from ... import distributed as dist
        if not dist.is_available() or not dist.is_initialized():
            raise RuntimeError("Default process group has not been initialized, please make sure to call "
                               "init_process_group.")
        if use_orig_params:
            raise NotImplementedError("FSDP: use_orig_params=True is not supported yet; the optimizer sees each "
                                      "unit's flat parameter (use_orig_params=False)")
        if device_mesh is not None:
            if process_group is not None:
                raise ValueError("FSDP: pass process_group or device_mesh, not both")
            process_group = device_mesh.get_group()
        group = process_group if process_group is not None else dist.group.WORLD
        strategy = sharding_strategy if sharding_strategy is not None else ShardingStrategy.FULL_SHARD
        _strategy_name(strategy)
        ignored = set(ignored_modules or ())
        device = None
        if device_id is not None:
            device = ember.device(device_id) if not isinstance(device_id, ember.device) else device_id
        object.__setattr__(self, "_fsdp_kwargs", dict(
            process_group=group, sharding_strategy=strategy, cpu_offload=cpu_offload, backward_prefetch=backward_prefetch,
            mixed_precision=mixed_precision, ignored_modules=ignored_modules, param_init_fn=param_init_fn,
            device_id=device_id, sync_module_states=sync_module_states, forward_prefetch=forward_prefetch,
            limit_all_gathers=limit_all_gathers))
        policy = _policy_callable(auto_wrap_policy)
        if policy is not None:  # the nested units first: each materialises, moves and syncs its own part
            _recursive_wrap(module, policy, lambda m: FullyShardedDataParallel(m, **self._fsdp_kwargs), ignored,
                            only_wrap_children=True)
        # This unit's own modules (not inside a nested unit): built on the meta device, they get
        # memory here (torch's param_init_fn / reset_parameters contract), then move and sync.
        own = _own_modules(module, ignored)
        _materialize_meta(own, param_init_fn, device if device is not None else ember.device("cpu"))
        if device is not None:
            for m in own:
                m._apply(lambda t: t.to(device), recurse=False)
        if sync_module_states:
            ember._C._distributed.broadcast_coalesced(group._pg, [t for m in own for t in _own_states(m)], 0)
        self.process_group = group
        self.sharding_strategy = strategy
        self.mixed_precision = mixed_precision
        self.cpu_offload = cpu_offload if cpu_offload is not None else CPUOffload()
        self.backward_prefetch = backward_prefetch
        self.forward_prefetch = forward_prefetch
        self._fsdp_wrapped_module = module
        mp = mixed_precision
        if mp is not None and mp.buffer_dtype is not None:
            for m in module.modules():
                for name, b in m._buffers.items():
                    if b is not None and b.is_floating_point():
                        m._buffers[name] = b.to(mp.buffer_dtype)
        self._flatten(module, ignored, device_id)
        object.__setattr__(self, "_is_root", None)
        object.__setattr__(self, "_state_dict_type", StateDictType.FULL_STATE_DICT)
        object.__setattr__(self, "_state_dict_config", FullStateDictConfig())

    # ---- construction ------------------------------------------------------------------------

    def _flatten(self, module, ignored, device_id):
        """Takes the parameters of module's subtree that no nested unit or ignored module owns
        out of their modules and into one flat parameter of this unit."""
        # a loop, not a recursive closure: a closure that refers to itself is a reference cycle,
        # and it would keep the original parameters alive until the garbage collector ran
        owners, unique, seen = [], [], {}
        stack = [(module, "")]
        while stack:
            m, prefix = stack.pop()
            if isinstance(m, FullyShardedDataParallel) or m in ignored:
                continue
            for name, p in list(m._parameters.items()):
                if p is None:
                    continue
                if id(p) not in seen:
                    seen[id(p)] = len(unique)
                    unique.append((prefix + name, p))
                owners.append((m, name, seen[id(p)]))
            children = [(c, prefix + n + ".") for n, c in m._modules.items() if c is not None]
            stack.extend(reversed(children))  # registration order, depth first
        object.__setattr__(self, "_owners", owners)
        object.__setattr__(self, "_handle", None)
        if not unique:
            return
        mp = self.mixed_precision
        compute = None
        if device_id is not None:
            compute = device_id if isinstance(device_id, ember.device) else ember.device(device_id)
        handle = ember._C._distributed.FlatParamHandle(
            unique, self.process_group._pg, _strategy_name(self.sharding_strategy),
            mp.param_dtype if mp is not None else None,
            (mp.reduce_dtype if mp.reduce_dtype is not None else mp.param_dtype) if mp is not None else None,
            self.cpu_offload.offload_params, compute)
        flat = Parameter(handle.flat_param, requires_grad=handle.flat_param.requires_grad)
        handle.set_flat_param(flat)
        object.__setattr__(self, "_handle", handle)
        # the modules keep their parameter names as plain attributes, filled in with views each forward
        order = {}
        for m, name, _ in owners:
            order.setdefault(id(m), (m, list(m._parameters.keys())))
        object.__setattr__(self, "_param_order", list(order.values()))
        for m, name, _ in owners:
            del m._parameters[name]
            object.__setattr__(m, name, None)
        self._flat_param = flat

    # ---- attribute passthrough (torch's FSDP behaves as the module it wraps) -----------------

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            wrapped = self.__dict__.get("_modules", {}).get(_WRAPPED)
            if wrapped is None:
                raise
            return getattr(wrapped, name)

    def __getitem__(self, key):
        return self._fsdp_wrapped_module.__getitem__(key)

    @property
    def module(self):
        return self._fsdp_wrapped_module

    @staticmethod
    def fsdp_modules(module, root_only=False):
        units = [m for m in module.modules() if isinstance(m, FullyShardedDataParallel)]
        return [m for m in units if m._is_root] if root_only else units

    # ---- forward and backward ----------------------------------------------------------------

    def _lazy_init(self):
        units = FullyShardedDataParallel.fsdp_modules(self)
        for u in units:
            object.__setattr__(u, "_is_root", u is self)
            object.__setattr__(u, "_root", self)
        object.__setattr__(self, "_units", units)
        object.__setattr__(self, "_exec_order", [])  # this iteration's forward order
        object.__setattr__(self, "_prev_order", [])  # the last one's: who to prefetch

    def _install(self, views):
        for m, name, i in self._owners:
            object.__setattr__(m, name, views[i])

    def _unit_after(self, order, step):
        if self not in order:
            return None
        i = order.index(self) + step
        return order[i] if 0 <= i < len(order) else None

    def forward(self, *args, **kwargs):
        if self._is_root is None:
            self._lazy_init()
        root = self._root
        if self._is_root:
            if self._exec_order:
                object.__setattr__(self, "_prev_order", self._exec_order)
            object.__setattr__(self, "_exec_order", [])
            mp = self.mixed_precision
            if mp is not None and mp.param_dtype is not None and mp.cast_root_forward_inputs:
                args, kwargs = _cast_floating(args, mp.param_dtype), _cast_floating(kwargs, mp.param_dtype)
        root._exec_order.append(self)
        handle = self._handle
        if handle is not None:
            handle.unshard()
            if self.forward_prefetch:
                nxt = self._unit_after(root._prev_order, +1)
                if nxt is not None and nxt._handle is not None:
                    nxt._handle.start_unshard()
            self._install(handle.views())
        out = self._fsdp_wrapped_module(*args, **kwargs)
        grad = ember.is_grad_enabled()
        if handle is not None:
            if grad and handle.flat_param.requires_grad:
                object.__setattr__(self, "_backward_ready", False)
                for t in _tensors_in(out, []):
                    if t.requires_grad:
                        t.register_hook(self._pre_backward)
            keep = self._is_root or self.sharding_strategy != ShardingStrategy.FULL_SHARD
            if not grad or not keep:
                handle.reshard()
        if self._is_root and not grad:
            for u in self._units:
                if u._handle is not None:
                    u._handle.reshard()
        return out

    def _pre_backward(self, grad):
        if not self._backward_ready:
            object.__setattr__(self, "_backward_ready", True)
            self._handle.unshard()
            if self.backward_prefetch is not None:
                prev = self._unit_after(self._root._exec_order, -1)
                if prev is not None and prev._handle is not None:
                    prev._handle.start_unshard()
        return None

    @contextlib.contextmanager
    def no_sync(self):
        """Gradient accumulation: ember still reduce-scatters in every backward (the sum of averaged
        shards equals the averaged sum, so the result is the same; only the communication is not
        saved)."""
        yield

    # ---- gradients ---------------------------------------------------------------------------

    def clip_grad_norm_(self, max_norm, norm_type=2.0):
        """Clips the gradients of all units' shards by their joint norm over the whole model;
        returns that norm (every rank gets the same)."""
        if not self._is_root and self._is_root is not None:
            raise RuntimeError("clip_grad_norm_ should only be called on the root FSDP instance")
        norm_type = float(norm_type)
        units = [u for u in FullyShardedDataParallel.fsdp_modules(self) if u._handle is not None]
        flat = {id(u._flat_param) for u in units}
        grads = [u._flat_param.grad for u in units if u._flat_param.grad is not None]
        extra = [p.grad for p in self.parameters() if id(p) not in flat and p.grad is not None]  # ignored modules'
        sharded = self.sharding_strategy != ShardingStrategy.NO_SHARD
        dev = grads[0].device if grads else ember.device("cpu")
        if norm_type == float("inf"):
            local = max([g.abs().max().float() for g in grads], default=ember.zeros((), device=dev))
            total = local.clone()
            if sharded:
                ember.distributed.all_reduce(total, op=ember.distributed.ReduceOp.MAX, group=self.process_group)
            for g in extra:
                total = ember.maximum(total, g.abs().max().float())
        else:
            local = sum([g.float().abs().pow(norm_type).sum() for g in grads], ember.zeros((), device=dev))
            total = local.clone()
            if sharded:
                ember.distributed.all_reduce(total, group=self.process_group)
            for g in extra:
                total = total + g.float().abs().pow(norm_type).sum()
            total = total.pow(1.0 / norm_type)
        coef = float(max_norm) / (float(total) + 1e-6)
        if coef < 1.0:
            with ember.no_grad():
                for g in grads + extra:
                    g.mul_(coef)
        return total

    # ---- full parameters ---------------------------------------------------------------------

    @staticmethod
    @contextlib.contextmanager
    def summon_full_params(module, recurse=True, writeback=True, rank0_only=False, offload_to_cpu=False,
                           with_grads=False):
        """Inside, every unit's modules hold their whole parameters (plain tensors); with
        writeback, changes to them are sharded back on exit."""
        units = [u for u in FullyShardedDataParallel.fsdp_modules(module) if u._handle is not None]
        if not recurse and isinstance(module, FullyShardedDataParallel):
            units = [module] if module._handle is not None else []
        fulls = []
        with ember.no_grad():
            for u in units:
                full = u._handle.gather_full()
                fulls.append(full)
                u._install(u._handle.split(full))
        try:
            yield
        finally:
            with ember.no_grad():
                for u, full in zip(units, fulls):
                    if writeback:
                        u._handle.load_full(full)
                    for m, name, _ in u._owners:
                        object.__setattr__(m, name, None)

    # ---- state dicts -------------------------------------------------------------------------

    @staticmethod
    def set_state_dict_type(module, state_dict_type, state_dict_config=None, optim_state_dict_config=None):
        if state_dict_type == StateDictType.LOCAL_STATE_DICT:
            raise NotImplementedError("FSDP: LOCAL_STATE_DICT is not supported; use SHARDED_STATE_DICT")
        config = state_dict_config
        if config is None:
            config = FullStateDictConfig() if state_dict_type == StateDictType.FULL_STATE_DICT else ShardedStateDictConfig()
        previous = None
        for u in FullyShardedDataParallel.fsdp_modules(module):
            if previous is None:
                previous = (u._state_dict_type, u._state_dict_config)
            object.__setattr__(u, "_state_dict_type", state_dict_type)
            object.__setattr__(u, "_state_dict_config", config)
        return previous

    @staticmethod
    @contextlib.contextmanager
    def state_dict_type(module, state_dict_type, state_dict_config=None, optim_state_dict_config=None):
        previous = FullyShardedDataParallel.set_state_dict_type(module, state_dict_type, state_dict_config)
        try:
            yield
        finally:
            if previous is not None:
                FullyShardedDataParallel.set_state_dict_type(module, previous[0], previous[1])

    def _clean_keys(self):
        """id(module) -> its key prefix in the unwrapped model."""
        return {id(m): prefix for prefix, m in _clean_walk(self)}

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        if args or destination is not None:  # reached as a child of a plain module's state_dict
            return Module.state_dict(self, *args, destination=destination, prefix=prefix, keep_vars=keep_vars)
        sharded = self._state_dict_type == StateDictType.SHARDED_STATE_DICT
        config = self._state_dict_config
        rank = self.process_group.rank()
        units = [u for u in FullyShardedDataParallel.fsdp_modules(self) if u._handle is not None]
        values = {}  # id(module) -> {param name: value}
        with ember.no_grad():
            for u in units:  # one unit's full parameters at a time (the same order on every rank)
                pieces = u._handle.split(u._handle.gather_full())
                for m, name, i in u._owners:
                    v = pieces[i]
                    if sharded:
                        v = _dim0_shard(v, u.process_group)
                    elif config.rank0_only and rank != 0:
                        continue
                    else:
                        v = v.clone()
                        if config.offload_to_cpu:
                            v = v.cpu()
                    values.setdefault(id(m), {})[name] = v
        out = OrderedDict()
        skip_plain = not sharded and config.rank0_only and rank != 0
        order = {id(m): names for u in units for m, names in u._param_order}  # registration order
        for key_prefix, m in _clean_walk(self):
            got = values.get(id(m), {})
            names = order.get(id(m), list(m._parameters.keys()))
            for name in names:
                if name in got:
                    out[prefix + key_prefix + name] = got[name]
                elif name in m._parameters and m._parameters[name] is not None and not skip_plain:
                    out[prefix + key_prefix + name] = m._parameters[name].detach()
            if skip_plain:
                continue
            for name, b in m._buffers.items():
                if b is not None and name not in m._non_persistent_buffers_set:
                    out[prefix + key_prefix + name] = b.detach().cpu() if config.offload_to_cpu else b.detach()
        return out

    def load_state_dict(self, state_dict, strict=True):
        from ...nn.modules.module import _IncompatibleKeys
        from ..tensor import DTensor
        state = dict(state_dict)
        missing, used = [], set()
        keys = self._clean_keys()
        units = [u for u in FullyShardedDataParallel.fsdp_modules(self) if u._handle is not None]
        with ember.no_grad():
            for u in units:
                pieces = [None] * len(u._handle.names)
                for m, name, i in u._owners:
                    key = keys[id(m)] + name
                    if key in state:
                        used.add(key)
                        if pieces[i] is None:
                            pieces[i] = state[key]
                    else:
                        missing.append(key)
                shapes = u._handle.shapes
                current = None  # the unit's present values, gathered once if some key is missing
                flat = []
                for i, v in enumerate(pieces):
                    if v is None:  # missing: keep the current values
                        if current is None:
                            current = u._handle.split(u._handle.gather_full())
                        v = current[i]
                    elif isinstance(v, DTensor):
                        v = v.full_tensor()
                    if list(v.shape) != list(shapes[i]):
                        raise RuntimeError(f"Error(s) in loading state_dict for FullyShardedDataParallel:\n\tsize "
                                           f"mismatch for {u._handle.names[i]}: copying a param with shape "
                                           f"{tuple(v.shape)}, the shape in current model is {tuple(shapes[i])}.")
                    flat.append(v.reshape(-1).to(u._flat_param.dtype))
                u._handle.load_full(ember.cat(flat).to(u._flat_param.device))
            for key_prefix, m in _clean_walk(self):  # parameters outside units (ignored modules), buffers
                persistent = [(n, b) for n, b in m._buffers.items() if n not in m._non_persistent_buffers_set]
                for name, t in list(m._parameters.items()) + persistent:
                    if t is None:
                        continue
                    key = key_prefix + name
                    if key in state:
                        used.add(key)
                        v = state[key]
                        t.copy_(v.full_tensor() if isinstance(v, DTensor) else v)
                    else:
                        missing.append(key)
        unexpected = [k for k in state if k not in used]
        if strict and (missing or unexpected):
            msg = []
            if missing:
                msg.append("Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ".")
            if unexpected:
                msg.append("Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ".")
            raise RuntimeError("Error(s) in loading state_dict for FullyShardedDataParallel:\n\t" + "\n\t".join(msg))
        return _IncompatibleKeys(missing, unexpected)

    # ---- optimizer state dicts ---------------------------------------------------------------

    def _gather_flat(self, shard):
        """The unpadded full flat tensor of a shard-shaped tensor (a parameter's or optimizer state's)."""
        h = self._handle
        if self.sharding_strategy == ShardingStrategy.NO_SHARD:
            return shard.narrow(0, 0, h.numel)
        out = ember.empty((h.padded_numel,), dtype=shard.dtype, device=shard.device)
        ember.distributed.all_gather_into_tensor(out, shard.contiguous(), group=self.process_group)
        return out.narrow(0, 0, h.numel)

    def _shard_flat(self, full):
        """This rank's padded shard of an unpadded full flat tensor."""
        h = self._handle
        n = self._flat_param.numel()
        if h.padded_numel > h.numel:
            full = ember.cat([full, ember.zeros((h.padded_numel - h.numel,), dtype=full.dtype, device=full.device)])
        return full.narrow(0, h.shard_offset, n).clone()

    def _unit_keys(self, keys):
        """For each flattened parameter (handle order), its key in the unwrapped model."""
        out = [None] * len(self._handle.names)
        for m, name, i in self._owners:
            if out[i] is None:
                out[i] = keys[id(m)] + name
        return out

    @staticmethod
    def _param_keys(model):
        """id(optimizer parameter) -> (unit or None, keys): a flat parameter stands for its unit's
        parameters."""
        keys = model._clean_keys() if isinstance(model, FullyShardedDataParallel) else {
            id(m): p for p, m in _clean_walk(model)}
        out = {}
        for u in FullyShardedDataParallel.fsdp_modules(model):
            if u._handle is not None:
                out[id(u._flat_param)] = (u, u._unit_keys(keys))
        for prefix, m in _clean_walk(model):
            for name, p in m._parameters.items():
                if p is not None and id(p) not in out:
                    out[id(p)] = (None, [prefix + name])
        return out

    @staticmethod
    def optim_state_dict(model, optim, optim_state_dict=None, group=None):
        """The optimizer's state keyed by the unwrapped model's parameter names: whole tensors
        (FULL_STATE_DICT) or dim-0 DTensor shards (SHARDED_STATE_DICT), by the model's
        state_dict_type."""
        sharded = model._state_dict_type == StateDictType.SHARDED_STATE_DICT
        osd = optim.state_dict() if optim_state_dict is None else optim_state_dict
        by_id = FullyShardedDataParallel._param_keys(model)
        index_to_param = []
        for g in optim.param_groups:
            index_to_param.extend(g["params"])
        state, groups = {}, []
        with ember.no_grad():
            for idx, p in enumerate(index_to_param):
                unit, keys = by_id[id(p)]
                st = osd["state"].get(idx)
                if st is None:
                    continue
                if unit is None:
                    state[keys[0]] = dict(st)
                    continue
                per_key = [dict() for _ in keys]
                for name, v in st.items():
                    if isinstance(v, ember.Tensor) and v.dim() == 1 and v.numel() == p.numel():
                        pieces = unit._handle.split(unit._gather_flat(v))
                        for d, piece in zip(per_key, pieces):
                            d[name] = _dim0_shard(piece, unit.process_group) if sharded else piece.clone()
                    else:
                        for d in per_key:
                            d[name] = v.clone() if isinstance(v, ember.Tensor) else v
                for k, d in zip(keys, per_key):
                    state[k] = d
        pos = 0
        for g, saved in zip(optim.param_groups, osd["param_groups"]):
            names = []
            for p in g["params"]:
                names.extend(by_id[id(p)][1])
                pos += 1
            groups.append({**{k: v for k, v in saved.items() if k != "params"}, "params": names})
        return {"state": state, "param_groups": groups}

    @staticmethod
    def optim_state_dict_to_load(model, optim, optim_state_dict, is_named_optimizer=False, load_directly=False,
                                 group=None):
        """The reverse of optim_state_dict: an optimizer.load_state_dict argument for this rank's
        shards (any world size may have saved it)."""
        from ..tensor import DTensor
        by_id = FullyShardedDataParallel._param_keys(model)
        state_in = optim_state_dict["state"]
        index_to_param = []
        for g in optim.param_groups:
            index_to_param.extend(g["params"])
        state = {}
        with ember.no_grad():
            for idx, p in enumerate(index_to_param):
                unit, keys = by_id[id(p)]
                if not any(k in state_in for k in keys):
                    continue
                if unit is None:
                    state[idx] = dict(state_in[keys[0]])
                    continue
                missing = [k for k in keys if k not in state_in]
                if missing:
                    raise RuntimeError(f"FSDP.optim_state_dict_to_load: no optimizer state for {missing} although "
                                       f"the rest of its unit ({keys[0]}, ...) has some")
                first = state_in[keys[0]]
                st = {}
                for name, v in first.items():
                    per = [state_in[k][name] for k in keys]
                    if isinstance(v, (ember.Tensor, DTensor)) and v.dim() >= 1:  # per-parameter, not a step count
                        whole = [x.full_tensor() if isinstance(x, DTensor) else x for x in per]
                        full = ember.cat([w.reshape(-1).to(p.device) for w in whole])
                        st[name] = unit._shard_flat(full)
                    else:
                        st[name] = v.full_tensor() if isinstance(v, DTensor) else v
                state[idx] = st
        groups, pos = [], 0
        for g, saved in zip(optim.param_groups, optim_state_dict["param_groups"]):
            ids = list(range(pos, pos + len(g["params"])))
            pos += len(g["params"])
            groups.append({**{k: v for k, v in saved.items() if k != "params"}, "params": ids})
        return {"state": state, "param_groups": groups}

    def extra_repr(self):
        n = self._flat_param.numel() if self._handle is not None else 0
        return f"sharding_strategy={self.sharding_strategy.name}, flat_param_shard={n}"


def _dim0_shard(full, group):
    """This rank's dim-0 chunk of a whole parameter as a DTensor over the group's 1-D mesh."""
    from ..device_mesh import DeviceMesh
    from ..tensor import DTensor, Shard
    mesh = DeviceMesh._for_group(group, full.device.type)
    return DTensor._from_full(full, mesh, [Shard(0)])
