"""ember.compiler (torch.compiler): helpers around ember.compile (python/ember/_compile.py).

    explain(fn)(*args)   graphs, breaks and their reasons, guards, fused kernels
    is_compiling()       True while ember.compile captures a function
    reset(fn)            forget fn's compiled graphs (the on-disk kernel cache stays)
    disable(fn)          fn never compiles (a no-op wrapper, as torch.compiler.disable)
    set_logs(...)        graph_code, graph_breaks, guards, recompiles (or EMBER_LOGS=...)
"""
from .._compile import CompileError, ExplainOutput, explain, is_compiling, reset, set_logs  # noqa: F401


def disable(fn=None, recursive=True):
    """torch.compiler.disable: fn runs as written (inside a compiled function its ops still join
    the capture, since ember captures ops rather than bytecode)."""
    if fn is None:
        return lambda f: f
    return fn
