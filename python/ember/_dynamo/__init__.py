"""ember._dynamo (torch._dynamo): the pieces of torch's compiler front end that user code calls,
over ember.compile (python/ember/_compile.py). ember captures ops through its dispatcher rather
than Python bytecode, so these act on that capture:

    reset()                  forget every compiled function's graphs (the kernel disk cache stays)
    explain(fn)(*args)       graphs, breaks and reasons (ember.compiler.explain)
    mark_dynamic(t, dim)     t's sizes vary: a compiled function it is passed to turns dynamic (as
                             dynamic=True: symbolic sizes fitted over its first captures; the size
                             that varies is found from the calls, not from `dim`)
    mark_static / maybe_mark_dynamic   accepted (mark_static undoes a mark_dynamic)
    graph_break()            a break here, as torch's (the function then runs eagerly; with
                             fullgraph=True an error naming this line)
    disable, allow_in_graph, optimize("inductor")(fn), is_compiling
    config.cache_size_limit  signatures kept per function (ember._compile.cache_size_limit)
"""
from .. import _C
from .. import _compile
from .._compile import explain, is_compiling  # noqa: F401
from ..compiler import list_backends  # noqa: F401


def reset():
    _compile.reset()


def mark_dynamic(t, index, *, min=None, max=None):
    dims = set(getattr(t, "_ember_dynamic_dims", None) or ())
    dims.update(index if isinstance(index, (list, tuple)) else [index])
    t._ember_dynamic_dims = dims


def maybe_mark_dynamic(t, index):
    mark_dynamic(t, index)


def mark_static(t, index=None):
    if getattr(t, "_ember_dynamic_dims", None):
        t._ember_dynamic_dims = None


def graph_break():
    """A break in the capture (torch._dynamo.graph_break)."""
    _C._compile.note_break("torch._dynamo.graph_break() was called")


def disable(fn=None, recursive=True):
    from ..compiler import disable as _disable
    return _disable(fn, recursive)


def allow_in_graph(fn):
    return fn


def optimize(backend="inductor", *, nopython=False, dynamic=None, **unused):
    """torch._dynamo.optimize(backend)(fn): ember.compile(fn, fullgraph=nopython)."""
    def wrap(fn):
        return _compile.compile(fn, fullgraph=nopython, dynamic=dynamic, backend=backend)
    return wrap


class _Config:
    """torch._dynamo.config: cache_size_limit reads and writes ember's; the other flags are kept
    (suppress_errors: ember never fails a call it cannot capture, it runs it eagerly)."""

    def __init__(self):
        object.__setattr__(self, "_flags", {"suppress_errors": False, "verbose": False,
                                            "automatic_dynamic_shapes": True, "assume_static_by_default": True})

    def __getattr__(self, name):
        if name in ("cache_size_limit", "recompile_limit"):
            return _compile.cache_size_limit
        if name in self._flags:
            return self._flags[name]
        raise AttributeError(f"ember._dynamo.config has no setting {name!r}")

    def __setattr__(self, name, value):
        if name in ("cache_size_limit", "recompile_limit"):
            _compile.cache_size_limit = int(value)
        else:
            self._flags[name] = value


config = _Config()
