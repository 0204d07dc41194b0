"""ember.autograd.Function: custom differentiable operations written in Python, as in torch.

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

    y = Exp.apply(x)

apply() records one node in ember's C++ graph (named "ExpBackward"); the engine calls the
static backward with the GIL held. forward runs without recording history.
"""
import functools

from .. import _C
from .grad_mode import no_grad

__all__ = ["Function", "FunctionCtx", "once_differentiable"]

# The ctx passed to forward/backward: save_for_backward, saved_tensors, needs_input_grad,
# mark_non_differentiable, and any attributes you set on it.
FunctionCtx = _C.FunctionCtx
FunctionCtx.__module__ = "ember.autograd.function"


class Function:
    """Base class for custom autograd operations; subclass it with static ``forward(ctx, *args)``
    and ``backward(ctx, *grad_outputs)`` and call ``YourFunction.apply(*args)``."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use new-style "
            "autograd function with static forward method. "
            "(Example: https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """torch 2's alternative to a ctx argument of forward: override it, write forward(*args)
        without ctx, and save what backward needs here (inputs is the tuple of arguments)."""
        raise NotImplementedError("setup_context is not overridden")

    @classmethod
    def apply(cls, *args, **kwargs):
        uses_setup_context = cls.setup_context is not Function.setup_context
        if _C._compile.tracing():  # inside ember.compile: one opaque node, its own backward kept
            from ember.library import _run_opaque
            return _run_opaque(f"autograd.Function:{cls.__qualname__}",
                               lambda *a, **k: _C._function_apply(cls, uses_setup_context, *a, **k),
                               args, kwargs, mutates=False)
        return _C._function_apply(cls, uses_setup_context, *args, **kwargs)


def once_differentiable(fn):
    """Decorates a backward that is not itself differentiable: it runs under no_grad, so with
    create_graph=True its gradients carry no history (a second backward through them fails)."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            return fn(ctx, *args)
    return wrapper
