"""ember.compile: torch.compile's API over ember's own compiler (src/compile/).

The first call of each input signature runs the function eagerly while the dispatcher's Tracer
layer records every op it dispatches (capture); the graph is cleaned up (dead code, common
subexpressions, constant folding), its elementwise chains become C++ kernels (with a generated
backward where gradients are needed) built by the system compiler and cached on disk, and later
calls with the same signature run that graph from C++: no Python in between, fewer passes over
memory. Results are the eager results.

A signature (the guards) is everything the graph depends on: each tensor argument's dtype, device,
shape, strides and requires_grad, which arguments are the same tensor, every non-tensor argument's
value, grad mode, autocast state; for modules the identity of their parameters and buffers, their
training flags and plain attributes; for a bound method's object and a closure, the Python state
they reach (its tensors and their .grad become graph inputs fetched per call). What capture cannot
stand for (a value read back into Python: .item(), .tolist(), .numpy(), bool(tensor); a backward
pass; print; writing .grad or requires_grad; hooks; an explicit Generator) makes that signature run
eagerly, or with fullgraph=True raises CompileError naming the reason and the source line. A
signature that breaks is split: the function (or module's forward) runs eagerly and the modules it
calls run compiled, each on its own (_Compiled._submodule_routes, _route_called).

Python runs only while capturing: other side effects (appending to a list, Python's random,
logging in a hook) happen on the capture call only, as torch.jit.trace's; a module-level global
rebound to another tensor is not seen (docs/issue23-compile.md).
"""
import builtins
import functools
import os
import sys
import threading
import warnings

from ember import _C
from ember._C import _compile as _cc
from ember.nn.modules.module import Module, _structure_epoch

_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
_BACKENDS = ("inductor", "ember", "cudagraphs", "eager", "aot_eager")
cache_size_limit = 8  # torch._dynamo.config.cache_size_limit: signatures per function
# dynamic=True (or dynamic=None once a size changed, torch's automatic dynamic shapes): calls at
# new sizes are captured until a graph with symbolic sizes is fitted over them, and then run it
# specialised (_compile_dynamic.py); shapes do not count against cache_size_limit: the most
# recently used this many signatures are kept.
dynamic_cache_size = 64


class CompileError(RuntimeError):
    """fullgraph=True and the function cannot be captured whole (torch._dynamo.exc.Unsupported)."""


# ---- logging: EMBER_LOGS=graph_code,graph_breaks,guards,recompiles (TORCH_LOGS' names) ----------
_logs = set(filter(None, os.environ.get("EMBER_LOGS", "").replace("+", "").split(",")))


def set_logs(**flags):
    """ember.compiler.set_logs(graph_code=True, graph_breaks=True, guards=True, recompiles=True)."""
    for name, on in flags.items():
        (_logs.add if on else _logs.discard)(name)


def _log(kind, text):
    if kind in _logs:
        print(f"[ember.compile {kind}] {text}", file=sys.stderr)


# ---- arguments as tensors plus a hashable description of everything else -------------------------
def _is_tensor(x):
    return isinstance(x, _C.Tensor)


_plain_specs = {}  # n -> _flatten's spec of (n tensors as positional arguments, no kwargs)


def _flatten_call(args, kwargs, tensors):
    """_flatten((args, kwargs), tensors), with a shortcut for the common call of tensors only: a
    compiled call's guards are on its fast path, and a small model's eager call costs 20 us."""
    if not kwargs and all(type(a) is _C.Tensor for a in args):
        tensors.extend(args)
        spec = _plain_specs.get(len(args))
        if spec is None:
            spec = _plain_specs[len(args)] = _flatten((tuple(args), {}), [])
        return spec
    return _flatten((args, kwargs), tensors)


def _flatten(obj, tensors):
    """The structure of obj with each tensor replaced by its index in `tensors`."""
    if _is_tensor(obj):
        tensors.append(obj)
        return ("T", len(tensors) - 1)
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, tuple(_flatten(o, tensors) for o in obj))
    if isinstance(obj, dict):
        return ("dict", tuple((k, _flatten(v, tensors)) for k, v in obj.items()))
    if obj is None or isinstance(obj, (bool, int, float, str, complex)):
        return ("V", type(obj).__name__, obj)
    import ember
    if isinstance(obj, (ember.dtype, ember.device)):
        return ("V", type(obj).__name__, str(obj))
    return ("O", id(obj))  # any other object: by identity


def _unflatten(spec, tensors):
    kind = spec[0]
    if kind == "T":
        return tensors[spec[1]]
    if kind in ("list", "tuple"):
        items = [_unflatten(s, tensors) for s in spec[1]]
        return items if kind == "list" else tuple(items)
    if kind == "dict":
        return {k: _unflatten(s, tensors) for k, s in spec[1]}
    if kind == "V":
        return spec[2]
    if kind == "obj":
        obj = spec[1].__new__(spec[1])
        for k, s in spec[2]:
            object.__setattr__(obj, k, _unflatten(s, tensors))
        return obj
    raise CompileError("ember.compile: the function returned an object that is not a tensor, a number, a string, "
                       "None or a list/tuple/dict of them")


def _flatten_output(obj, tensors):
    if _is_tensor(obj):
        tensors.append(obj)
        return ("T", len(tensors) - 1)
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__ if type(obj) in (list, tuple) else "tuple",
                tuple(_flatten_output(o, tensors) for o in obj))
    if isinstance(obj, dict):
        return ("dict", tuple((k, _flatten_output(v, tensors)) for k, v in obj.items()))
    if obj is None or isinstance(obj, (bool, int, float, str, complex)):
        if type(obj) not in (bool, int, float, str, complex) and isinstance(obj, int):
            obj = int.__int__(obj)  # a size read in a dynamic capture (a SymSize): the number
        return ("V", type(obj).__name__, obj)
    fields = getattr(obj, "__dict__", None)
    if fields is not None and not isinstance(obj, Module) and not callable(obj):
        # a plain result object (a model's output with .logits, .loss, a dataclass): its fields
        specs = tuple((k, _flatten_output(v, tensors)) for k, v in fields.items())
        if all(sp is not None for _, sp in specs):
            return ("obj", type(obj), specs)
    return None  # not representable: the signature runs eagerly


def _erase_ints(spec, ints):
    from ._compile_dynamic import erase_ints
    return erase_ints(spec, ints)


def _autocast_guard():
    """Autocast's dtypes (whether it is on is in the C++ signature's dispatcher layers)."""
    import ember
    state = []
    for dev in ("cpu", "cuda"):
        try:
            state.append(str(ember.get_autocast_dtype(dev)) if ember.is_autocast_enabled(dev) else None)
        except Exception:  # a build without that device type
            state.append(None)
    return tuple(state)


def _fingerprint(obj, tensors, depth=4):
    """A hashable description of the Python state a function reads through `self` or its closure
    (an optimizer's state and param_groups, a counter in a closure): values of scalars and
    strings, lengths and keys of containers. The tensors found there (and their .grad) are
    collected into `tensors`, which become graph inputs fetched afresh on every call (their
    metadata joins the C++ signature). Anything deeper or opaque is taken by identity."""
    if _is_tensor(obj):
        tensors.append(obj)
        grad = obj.grad if obj.requires_grad else None
        if grad is not None:
            tensors.append(grad)
        return ("T", grad is not None)
    if obj is None or isinstance(obj, (bool, int, float, str, complex)):
        return obj
    if depth == 0 or isinstance(obj, Module) or callable(obj):
        return ("id", id(obj))
    if isinstance(obj, (list, tuple)):
        return tuple(_fingerprint(o, tensors, depth - 1) for o in obj)
    if isinstance(obj, dict):
        return tuple((_fingerprint(k, tensors, 1), _fingerprint(v, tensors, depth - 1)) for k, v in obj.items())
    if isinstance(obj, (set, frozenset)):
        return ("set", len(obj))
    d = getattr(obj, "__dict__", None)
    if d is not None:
        return (type(obj).__name__, _fingerprint(d, tensors, depth - 1))
    return ("id", id(obj))


def _module_scalars(mod):
    """The plain attributes (numbers, strings, None) of a module and its children: a forward that
    reads self.scale bakes it into the graph, so it is part of the guard."""
    return tuple(tuple((k, v) for k, v in m.__dict__.items()
                       if v is None or isinstance(v, (bool, int, float, str))) for m in mod.modules())


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _where(what):
    """The user's source line the first break came from (ember's own frames skipped)."""
    import traceback
    for frame in reversed(traceback.extract_stack()[:-1]):
        if not os.path.abspath(frame.filename).startswith(_PACKAGE_DIR):
            return f" at {frame.filename}:{frame.lineno} in {frame.name}: {(frame.line or '').strip()}"
    return ""


class _CallRecorder(dict):
    """Module.__call__'s route table while a function is captured: the routes in force, and every
    module called noted in order (if the capture breaks, they are routed to their compiled selves)."""

    def __init__(self, routes):
        super().__init__(routes)
        self.called, self._seen = [], set()

    def __bool__(self):
        return True  # (Module.__call__ consults a table only when it is non-empty)

    def get(self, module, default=None):
        if module not in self._seen:
            self._seen.add(module)
            self.called.append(module)
        return dict.get(self, module, default)


def _run_captured(session, fn, args, kwargs, called=None):
    """Runs fn under an open capture session (print patched to note a break, the session closed if
    fn raises): returns (result, its tensors, its spec, the break reason or ""). With `called`, the
    modules fn calls are appended to it."""
    from ember.nn.modules import module as _module
    session.on_break(_where)
    real_print = builtins.print
    routes = _module._forward_routes
    if called is not None:
        _module._forward_routes = _CallRecorder(routes)

    def print_breaks(*a, **k):
        _cc.note_break("print() has a side effect outside the graph")
        return real_print(*a, **k)
    builtins.print = print_breaks
    try:
        result = fn(*args, **kwargs)
    except BaseException:
        session.close()
        raise
    finally:
        builtins.print = real_print
        if called is not None:
            called += _module._forward_routes.called
            _module._forward_routes = routes
    outputs = []
    out_spec = _flatten_output(result, outputs)
    reason = session.break_reason
    if not reason and out_spec is None:
        reason = f"it returned a {type(result).__name__}, which a graph cannot return"
    return result, outputs, out_spec, reason


class _Entry:
    __slots__ = ("graph", "out_spec", "reason", "calls", "externals", "cudagraph", "returns_callers", "split")

    def __init__(self, graph, out_spec, reason, externals=None, split=False):
        self.graph, self.out_spec, self.reason, self.calls = graph, out_spec, reason, 0
        self.split = split  # a signature that broke: its own code runs eagerly, the modules it calls compiled
        self.externals = externals or {}  # impl id -> the Python tensor from outside the function
        self.cudagraph = None  # mode="reduce-overhead": its _cc.GraphedRun, or False (none)
        # whether the graph returns an input or an outside tensor (then the caller's object is
        # returned in its place); None until the first replay tells (the graph's outputs are fixed)
        self.returns_callers = None


def _as_callers_objects(results, inputs, externals):
    """Results that are the caller's tensors (an input returned, a global returned) as the very
    Python objects eager would return; a tensor returned twice (`t, t.add_(1)`) as one object."""
    own = {_cc.impl_id(t): t for t in inputs}
    own.update(externals)
    return [own.setdefault(_cc.impl_id(r), r) for r in results]


_capture_lock = threading.local()


import weakref as _weakref  # noqa: E402

_all_compiled = _weakref.WeakSet()  # every compiled function, for reset()


class _Compiled:
    """One compiled callable: its cache of signatures -> graphs (or eager)."""

    def __init__(self, fn, fullgraph, module=None, dynamic=False, cudagraphs=False, fuse=True):
        import collections
        self.fn = fn
        # what logs, warnings and errors call it: the function, or the module's class
        self.name = f"{type(module).__name__}.forward" if module is not None else getattr(fn, "__qualname__", repr(fn))
        self.fullgraph = fullgraph
        self.module = module
        self.dynamic = bool(dynamic)
        self._dynamic_arg = dynamic  # what submodules compiled on their own get (a split graph)
        # dynamic=None (torch's default): static until a call differs from an earlier one only in
        # sizes, dynamic from then on (torch's automatic_dynamic_shapes)
        self.automatic = dynamic is None
        self._static_groups = set()
        self.cudagraphs = cudagraphs  # mode="reduce-overhead" (or backend="cudagraphs")
        self.fuse = fuse  # backend="cudagraphs": the captured ops replayed as they are, no generated kernels
        self.cudagraph_captures = self.cudagraph_replays = 0
        self.cudagraph_failures = []  # why a signature could not be captured as CUDA graphs
        self.cache = collections.OrderedDict()
        _all_compiled.add(self)
        self.captures = self.graph_runs = self.eager_runs = 0
        self.groups = collections.OrderedDict()  # dynamic: signatures up to sizes -> _compile_dynamic.Group
        self.specialisations = 0  # dynamic: calls at new sizes that ran a fitted graph instead of a capture
        self.breaks = []
        self.split_runs = 0  # calls whose own code ran eagerly around compiled modules (a split)
        # Calls (argument spec and signature) that split, found without the state fingerprint: a
        # split runs the function's own code eagerly, so the state it reads (an optimizer's, walked
        # object by object: ~1 ms a call for AdamW over a GPT block) cannot make it wrong. A state
        # that would no longer break is not re-captured then; the split stays correct.
        self._split_calls = set()
        self._routes, self._routes_epoch = {}, None  # module -> its _Compiled (a split graph)
        self._warned_limit = False
        self._module_epoch = None
        self._module_cached = ([], ())
        # Python state the function reads besides its arguments: a bound method's object (not a
        # module: modules are guarded above) and the closure's cells
        roots = []
        owner = getattr(fn, "__self__", None)
        if owner is not None and not isinstance(owner, Module):
            roots.append(owner)
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                roots.append(cell.cell_contents)
            except ValueError:  # an empty cell
                pass
        self.state_roots = tuple(roots)

    def _module_state(self):
        """The module's parameters and buffers (graph inputs) and its training flags and tensor
        identities (guards), re-read only when some module's attributes changed."""
        if self.module is None:
            return [], ()
        if self._module_epoch != _structure_epoch[0]:
            extra = [p for p in self.module.parameters()] + [b for b in self.module.buffers()]
            flags = tuple(m.training for m in self.module.modules())
            self._module_cached = (extra, (flags, tuple(id(t) for t in extra), _module_scalars(self.module)))
            self._module_epoch = _structure_epoch[0]
        return self._module_cached

    def __call__(self, *args, **kwargs):
        if _cc.capturing():  # inside another compiled function's capture: its ops join that graph
            return self.fn(*args, **kwargs)
        tensors = []
        spec = _flatten_call(args, kwargs, tensors)
        if not self.dynamic and any(getattr(t, "_ember_dynamic_dims", None) for t in tensors):
            self.dynamic = True  # torch._dynamo.mark_dynamic on an input: sizes vary, keep the recent ones
        extra, module_key = self._module_state()
        if self._split_calls:
            call_key = (spec, _cc.signature(tensors), _autocast_guard(), module_key)
            if call_key in self._split_calls:
                return self._run_split(args, kwargs)
        state_tensors = []
        state = _fingerprint(self.state_roots, state_tensors) if self.state_roots else None
        all_tensors = tensors + extra + state_tensors
        key = (spec, _cc.signature(all_tensors), _autocast_guard(), module_key, state)
        entry = self.cache.get(key)
        if entry is not None:
            if self.dynamic:
                self.cache.move_to_end(key)
            if entry.graph is None:
                if entry.split:
                    if self.state_roots and len(self._split_calls) < 64:
                        self._split_calls.add((spec, _cc.signature(tensors), key[2], module_key))
                    return self._run_split(args, kwargs)
                self.eager_runs += 1
                return self.fn(*args, **kwargs)
            return self._run(entry, all_tensors, len(tensors))
        ints, group_key = [], None
        if self.dynamic or self.automatic:  # (signatures up to sizes and int values)
            group_key = (_erase_ints(spec, ints), _cc.signature(all_tensors, False), key[2], module_key, state)
        if not self.dynamic and self.automatic:
            if group_key in self._static_groups:
                self.dynamic = True
                _log("recompiles", f"{self.name}: sizes changed, dynamic from now on")
            self._static_groups.add(group_key)
        if not self.dynamic:
            group_key = None
        else:
            entry = self._specialised(group_key, all_tensors, ints)
            if entry is not None:
                if len(self.cache) >= dynamic_cache_size:
                    self.cache.popitem(last=False)
                self.cache[key] = entry
                return self._run(entry, all_tensors, len(tensors))
            group = self.groups.get(group_key)
            if group is not None and group.failed and not group.regimes and group.captures >= cache_size_limit:
                # sizes that vary in a way no graph fits (a size read as a plain number, a floor
                # division): past cache_size_limit captures, new ones run eagerly, as static signatures do
                if not self._warned_limit:
                    warnings.warn(f"ember.compile: {self.name}: its sizes cannot be made "
                                  f"symbolic ({next(iter(group.failed.values()))}) and it reached cache_size_limit "
                                  f"({cache_size_limit}); new sizes run eagerly")
                    self._warned_limit = True
                self.eager_runs += 1
                return self.fn(*args, **kwargs)
        if self.dynamic and len(self.cache) >= dynamic_cache_size:
            self.cache.popitem(last=False)  # the least recently used signature
        elif not self.dynamic and len(self.cache) >= cache_size_limit:
            if not self._warned_limit:
                warnings.warn(f"ember.compile: {self.name} reached cache_size_limit "
                              f"({cache_size_limit}); new input signatures run eagerly")
                self._warned_limit = True
            self.eager_runs += 1
            return self.fn(*args, **kwargs)
        if self.cache and "recompiles" in _logs:
            _log("recompiles", f"{self.name}: new signature {key}")
        return self._capture(key, all_tensors, args, kwargs, group_key, ints)

    def _fusing(self):
        return self.fuse and os.environ.get("EMBER_COMPILE_FUSE", "1") != "0"

    def _run(self, entry, all_tensors, n_args):
        self.graph_runs += 1
        entry.calls += 1
        if self.cudagraphs and entry.cudagraph is not False and entry.calls > 1 and _cc.device_graphable(all_tensors):
            outs = self._replay(entry, all_tensors, n_args)
            if outs is not None:
                return _unflatten(entry.out_spec, outs)
        results = entry.graph.run(all_tensors)
        if entry.returns_callers is not False:
            mapped = _as_callers_objects(results, all_tensors, entry.externals)
            if entry.returns_callers is None:
                entry.returns_callers = any(m is not r for m, r in zip(mapped, results))
            results = mapped
        return _unflatten(entry.out_spec, results)

    def _specialised(self, group_key, all_tensors, ints):
        """dynamic: an entry for these tensors' sizes from a graph fitted over earlier captures
        (_compile_dynamic), or None (then the call is captured)."""
        group = self.groups.get(group_key)
        if group is None or not group.regimes:
            return None
        made = group.specialise(all_tensors, ints, self._fusing())
        if made is None:
            return None
        graph, regime = made
        self.specialisations += 1
        return _Entry(graph, regime.base.out_spec, None, regime.base.externals)

    def _replay(self, entry, all_tensors, n_args):
        """The graph replayed as CUDA graphs (compile/device_graphs.h: GraphedRun), captured on the
        signature's second compiled run; in training a forward and a backward graph behind one
        autograd node. As in torch, the outputs are the graphs' own tensors and the next replay
        overwrites them. None when this call runs the compiled graph instead: no graph could be
        captured (logged), or an earlier call's backward is still to come."""
        g = entry.cudagraph
        if g is not None and not g.reads_current_storage(all_tensors):  # a parameter got new storage
            g = entry.cudagraph = None
        if g is None:
            try:
                g = _cc.GraphedRun(entry.graph, all_tensors, n_args)
            except RuntimeError as e:
                _log("graph_breaks", f"{self.name}: no CUDA graph ({e}); this signature runs its kernels one by one")
                self.cudagraph_failures.append(str(e))
                entry.cudagraph = False
                return None
            entry.cudagraph = g
            self.cudagraph_captures += 1
        outs = g(all_tensors)
        if outs is not None:
            self.cudagraph_replays += 1
        return outs

    def _capture(self, key, all_tensors, args, kwargs, group_key=None, ints=()):
        self.captures += 1
        session = _cc.CaptureSession(all_tensors)
        called = [] if self.module is None else None  # (a function's module calls: where a break splits it)
        if group_key is not None:  # dynamic: the sizes Python reads are tracked (_compile_dynamic)
            from . import _compile_dynamic
            if ints:
                args, kwargs = _compile_dynamic.with_sym_ints(args, kwargs)
            with _compile_dynamic.tracking() as events:
                result, outputs, out_spec, reason = _run_captured(session, self.fn, args, kwargs, called)
        else:
            result, outputs, out_spec, reason = _run_captured(session, self.fn, args, kwargs, called)
        if reason:
            session.close()
            name = self.name
            if self.fullgraph:
                raise CompileError(f"ember.compile(fullgraph=True): {name} cannot be captured whole: {reason}")
            self.breaks.append(reason)
            if called:
                self._route_called(called)
            split = bool(self._submodule_routes())
            _log("graph_breaks", f"{name}: {reason}; this signature runs "
                 + ("its own code eagerly and the modules it calls compiled" if split else "eagerly"))
            self.cache[key] = _Entry(None, None, reason, split=split)
            return result
        fuse = self._fusing()
        if group_key is None:
            graph = session.finish(outputs, fuse)
        else:
            graph, raw = session.finish_dynamic(outputs, fuse)
        outside = set(graph.external_ids)
        externals = {_cc.impl_id(t): t for t in outputs if _cc.impl_id(t) in outside}
        self.cache[key] = _Entry(graph, out_spec, None, externals)
        if group_key is not None:
            self._observe(group_key, all_tensors, ints, events, session.structure_sizes, raw, out_spec, externals)
        if "graph_code" in _logs:  # (describing a big graph costs a millisecond: only when logged)
            _log("graph_code", f"{self.name}\n{graph.describe('graph_code_source' in _logs)}")
        if "guards" in _logs:
            _log("guards", f"{self.name}: {key}")
        return result

    def _submodule_routes(self):
        """A module's graph broke: the submodules its forward calls, each compiled on its own
        (torch splits the graph at the break; ember splits it at the submodule calls around it).
        Containers without a forward of their own (ModuleList, ModuleDict) are looked through.
        A submodule that breaks in turn splits the same way. Kept across structure changes by
        identity, so their caches survive."""
        if self.module is None:
            return self._routes  # (a function: the modules its breaking captures called)
        if self._routes_epoch != _structure_epoch[0]:
            routes, pending = {}, list(self.module.children())
            while pending:
                m = pending.pop()
                if m in routes:
                    continue
                if type(m).forward is Module.forward:  # a container: its elements are what gets called
                    pending.extend(m.children())
                    continue
                routes[m] = self._compiled_module(m)
            self._routes, self._routes_epoch = routes, _structure_epoch[0]
        return self._routes

    def _compiled_module(self, m):
        """m compiled on its own for a split graph (the one made before, if any)."""
        return self._routes.get(m) or _Compiled(m._call_unrouted, False, module=m, dynamic=self._dynamic_arg,
                                                cudagraphs=self.cudagraphs, fuse=self.fuse)

    def _route_called(self, called):
        """A function's capture broke: the modules it called at the top (none inside another; not
        ones compiled already) run compiled from now on, around its eager code."""
        new = [m for m in called if m not in self._routes and not isinstance(m, OptimizedModule)]
        if not new:
            return
        inner = set()
        for m in called:
            inner.update(d for d in m.modules() if d is not m)
        for m in new:
            if m not in inner:
                self._routes[m] = self._compiled_module(m)

    def _run_split(self, args, kwargs):
        """The function (or module's forward) run eagerly, with its module calls routed to their
        compiled selves (Module.__call__ reads _forward_routes)."""
        from ember.nn.modules import module as _module
        routes = self._submodule_routes()
        table = _module._forward_routes
        saved = {k: table.get(k) for k in routes}
        table.update(routes)
        if self.module is None:  # a function may reach modules its capture did not: noted, and routed next time
            _module._forward_routes = _CallRecorder(table)
        self.split_runs += 1
        try:
            return self.fn(*args, **kwargs)
        finally:
            if self.module is None:
                self._route_called(_module._forward_routes.called)
                _module._forward_routes = table
            for k, v in saved.items():
                if v is None:
                    table.pop(k, None)
                else:
                    table[k] = v

    def _all(self):
        """This compiled callable and the modules a split graph compiled, depth first."""
        yield self
        for c in self._routes.values():
            yield from c._all()

    def _observe(self, group_key, all_tensors, ints, events, structure_sizes, raw, out_spec, externals):
        from . import _compile_dynamic
        group = self.groups.get(group_key)
        if group is None:
            if len(self.groups) >= 8:
                self.groups.popitem(last=False)
            group = self.groups[group_key] = _compile_dynamic.Group()
        else:
            self.groups.move_to_end(group_key)
        note = group.observe(_compile_dynamic.Observation(all_tensors, ints, events, structure_sizes, raw, out_spec,
                                                          externals))
        if note:
            _log("recompiles", f"{self.name}: {note}")

    def explain(self):
        """What compiled, what broke: a split graph's submodules count in."""
        every = list(self._all())
        graphs = [e for c in every for e in c.cache.values() if e.graph is not None]
        return ExplainOutput(
            graph_count=len(graphs), graph_break_count=sum(len(c.breaks) for c in every),
            break_reasons=[r for c in every for r in c.breaks],
            graphs=[e.graph.describe() for e in graphs], ops_per_graph=[e.graph.ops for e in graphs],
            fused_kernels=sum(e.graph.fused_kernels for e in graphs),
            guards=[k for c in every for k in c.cache],
            compile_seconds=sum(e.graph.codegen_seconds for e in graphs),
            symbolic=[line for c in every for g in c.groups.values() for line in g.describe()],
            specialisations=sum(c.specialisations for c in every),
            split_modules=[c.name for c in every[1:]])


class ExplainOutput:
    """What ember.compiler.explain reports (torch._dynamo.explain's ExplainOutput)."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def __str__(self):
        lines = [f"Graph Count: {self.graph_count}", f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {sum(len(o) for o in self.ops_per_graph)}", f"Fused Kernels: {self.fused_kernels}"]
        if self.break_reasons:
            lines.append("Break Reasons:")
            lines += [f"  {r}" for r in self.break_reasons]
        if getattr(self, "split_modules", None):
            lines.append(f"Split: the code around a break runs eagerly; {len(self.split_modules)} modules it calls "
                         "run compiled:")
            lines += [f"  {name}" for name in self.split_modules]
        if getattr(self, "symbolic", None):
            lines.append(f"Symbolic Sizes ({self.specialisations} calls ran a fitted graph):")
            lines += [f"  {r}" for r in self.symbolic]
        for i, g in enumerate(self.graphs):
            lines.append(f"Graph {i}:")
            lines.append(g.rstrip())
        return "\n".join(lines)

    __repr__ = __str__


def _check(fullgraph, dynamic, backend, mode, options):
    if mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(m for m in _MODES if m)}")
    if not (callable(backend) or backend in _BACKENDS):
        raise ValueError(f"ember.compile: unknown backend {backend!r} (expected one of {', '.join(_BACKENDS)} or a "
                         "callable)")
    if options is not None and mode is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,
            disable=False):
    """torch.compile: compile a function or an nn.Module; usable as @ember.compile or
    @ember.compile(fullgraph=True). backend="eager" runs the function as it is. dynamic=True
    fits a graph with symbolic sizes over the first calls at new sizes and runs it, specialised,
    at later ones (_compile_dynamic.py); dynamic=None does so once a call differs from an earlier
    one only in sizes (torch's automatic dynamic shapes); dynamic=False captures every new shape,
    up to cache_size_limit signatures."""
    _check(fullgraph, dynamic, backend, mode, options)
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                 options=options, disable=disable)
    if callable(backend) and not disable:
        warnings.warn(f"ember.compile: the backend {getattr(backend, '__name__', backend)!r} is not called: ember "
                      "captures ops, not an FX graph to hand it, so the function runs as written", stacklevel=2)
    if disable or backend in ("eager", "aot_eager") or callable(backend):
        return model
    # backend="cudagraphs" (torch's): the captured graph replayed as CUDA graphs, without generated kernels
    cudagraphs, fuse = mode == "reduce-overhead" or backend == "cudagraphs", backend != "cudagraphs"
    if isinstance(model, Module):
        return OptimizedModule(model, fullgraph, dynamic=dynamic, cudagraphs=cudagraphs, fuse=fuse)
    if not callable(model):
        raise RuntimeError("ember.compile: expected a callable or an nn.Module, got " + type(model).__name__)
    compiled = _Compiled(model, fullgraph, dynamic=dynamic, cudagraphs=cudagraphs, fuse=fuse)

    @functools.wraps(model)
    def wrapper(*args, **kwargs):
        return compiled(*args, **kwargs)
    wrapper._ember_compiled = compiled
    wrapper._torchdynamo_orig_callable = model
    return wrapper


def _compile_call(module, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,
                  disable=False):
    """Module.compile(): the module's own call (its hooks included) compiled in place, or None when
    the options say to run it eagerly."""
    _check(fullgraph, dynamic, backend, mode, options)
    if disable or backend in ("eager", "aot_eager") or callable(backend):
        return None
    cudagraphs, fuse = mode == "reduce-overhead" or backend == "cudagraphs", backend != "cudagraphs"
    return _Compiled(module._call_unrouted, fullgraph, module=module, dynamic=dynamic, cudagraphs=cudagraphs,
                     fuse=fuse)


class OptimizedModule(Module):
    """What compile(module) returns (torch's OptimizedModule): forward runs compiled; the original
    module is `_orig_mod`, so parameters, state_dict keys ("_orig_mod.") and optimizers see the
    same tensors."""

    def __init__(self, mod, fullgraph=False, dynamic=None, cudagraphs=False, fuse=True):
        super().__init__()
        self._orig_mod = mod
        self._ember_compiled = _Compiled(mod, fullgraph, module=mod, dynamic=dynamic, cudagraphs=cudagraphs, fuse=fuse)

    def forward(self, *args, **kwargs):
        return self._ember_compiled(*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._orig_mod, name)


def _compiled_of(fn):
    c = getattr(fn, "_ember_compiled", None)
    if c is None:
        raise TypeError("expected a function or module returned by ember.compile")
    return c


def explain(fn, *args, **kwargs):
    """torch._dynamo.explain(fn)(*args): compile fn (unless it is compiled already), call it with
    these arguments, and report graphs, breaks and their source lines, guards and fused kernels.
    With only fn, returns a function taking the arguments."""
    def run(*a, **k):
        compiled = fn if hasattr(fn, "_ember_compiled") else compile(fn)
        compiled(*a, **k)
        return _compiled_of(compiled).explain()
    if not args and not kwargs:
        return run
    return run(*args, **kwargs)


def is_compiling():
    """True while ember.compile is capturing (torch.compiler.is_compiling)."""
    return _cc.capturing()


def reset(fn=None):
    """Forget compiled graphs: fn's, or every compiled function's (torch.compiler.reset). The disk
    cache of kernels stays."""
    for c in (list(_compiled_of(fn)._all()) if fn is not None else list(_all_compiled)):
        c.cache.clear()
        c.breaks.clear()
        c.groups.clear()
        c._static_groups.clear()
        c._split_calls.clear()
