"""ember.compiler (torch.compiler): helpers around ember.compile (python/ember/_compile.py).

    explain(fn)(*args)   graphs, breaks and their reasons, guards, fused kernels
    is_compiling()       True while ember.compile captures a function
    reset(fn)            forget fn's compiled graphs (the on-disk kernel cache stays)
    disable(fn)          fn never compiles (a no-op wrapper, as torch.compiler.disable)
    set_logs(...)        graph_code, graph_breaks, guards, recompiles (or EMBER_LOGS=...)
    list_backends()      the backend names ember.compile takes
    cudagraph_mark_step_begin()  a new iteration: earlier CUDA graph replays' outputs are done with
"""
from .._compile import CompileError, ExplainOutput, explain, is_compiling, reset, set_logs  # noqa: F401


def disable(fn=None, recursive=True):
    """torch.compiler.disable: fn runs as written (inside a compiled function its ops still join
    the capture, since ember captures ops rather than bytecode)."""
    if fn is None:
        return lambda f: f
    return fn


_DEBUG_BACKENDS = ("eager", "aot_eager")


def list_backends(exclude_tags=("debug", "experimental")):
    """torch.compiler.list_backends: the names ember.compile(backend=...) takes. "inductor" (and its
    alias "ember") generates fused kernels; "cudagraphs" replays the captured ops as CUDA graphs
    without generating kernels; the debug backends "eager" and "aot_eager" run the function as
    written and are listed only when exclude_tags leaves out "debug"."""
    from .._compile import _BACKENDS
    names = [b for b in _BACKENDS if b != "ember"]
    if exclude_tags and "debug" in exclude_tags:
        names = [b for b in names if b not in _DEBUG_BACKENDS]
    return sorted(names)


def cudagraph_mark_step_begin():
    """torch.compiler.cudagraph_mark_step_begin: a new iteration starts, so the outputs (and any
    pending backward) of earlier mode="reduce-overhead" replays will not be used again. Without it,
    a call made while an earlier replay's backward is still to come runs without the CUDA graphs
    (its activations must survive); after it, the call replays, and that stale backward, if run
    after all, raises."""
    from .. import _C
    _C._compile.mark_step_begin()
