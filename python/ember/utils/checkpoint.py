"""ember.utils.checkpoint: gradient checkpointing, as torch.utils.checkpoint.

checkpoint(fn, *args) runs fn without keeping its intermediate activations and runs it again
during backward to get them, with the random state the forward saw (dropout masks repeat).
The gradients are those of running fn directly.

- use_reentrant=True (torch 1.13's default, and what torch 2.x uses, with a warning, when the
  argument is not given): a custom Function whose backward recomputes fn with grad enabled and
  calls backward() through the recomputation. Outputs require grad only when a tensor argument
  does, as in torch; it works with .backward(), not with autograd.grad() or backward(inputs=...)
  (the parameters' gradients are accumulated into .grad), as torch's.
- use_reentrant=False (torch 2.x's recommendation): fn runs once, recorded as usual, under
  saved-tensor hooks that keep an index instead of each tensor the graph saves
  (autograd.graph.saved_tensors_hooks). The first time backward unpacks one, fn is run again
  (same RNG state, `context_fn`'s second context) and what it saves, in the same order, is
  handed out. The graph is the ordinary one, so autograd.grad, backward(inputs=...), double
  backward of the outer graph and keyword arguments all work.
"""
import contextlib
import warnings

from .. import _C
from ..autograd.function import Function
from ..autograd.grad_mode import no_grad, enable_grad
from .. import autograd as _autograd

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "noop_context_fn"]


def _get_rng_state():
    return _C.default_generator.get_state()


def _set_rng_state(state):
    _C.default_generator.set_state(state)


class CheckpointFunction(Function):
    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.fwd_rng_state = _get_rng_state()
        # Tensors go through save_for_backward (version-checked, freed with the graph); other
        # arguments are kept as they are.
        ctx.inputs = [None if isinstance(a, _C.Tensor) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, _C.Tensor)]
        ctx.save_for_backward(*[args[i] for i in ctx.tensor_indices])
        with no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            d = t.detach()
            d.requires_grad_(t.requires_grad)
            inputs[i] = d
        state = _get_rng_state() if ctx.preserve_rng_state else None
        try:
            if ctx.preserve_rng_state:
                _set_rng_state(ctx.fwd_rng_state)
            with enable_grad():
                outputs = ctx.run_function(*inputs)
        finally:
            if state is not None:
                _set_rng_state(state)
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        diff_outs, diff_grads = [], []
        for o, g in zip(outs, grads):
            if isinstance(o, _C.Tensor) and o.requires_grad and g is not None:
                diff_outs.append(o)
                diff_grads.append(g)
        if not diff_outs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        _autograd.backward(diff_outs, diff_grads)
        input_grads = tuple(a.grad if isinstance(a, _C.Tensor) else None for a in inputs)
        return (None, None) + input_grads


def _noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


noop_context_fn = _noop_context_fn


class CheckpointError(RuntimeError):
    """The recomputation did not save what the forward saved (torch's CheckpointError)."""


def _checkpoint_without_reentrant(function, preserve_rng_state, context_fn, args, kwargs):
    """function(*args, **kwargs) whose saved tensors are recomputed on first use in backward."""
    from ..autograd.graph import saved_tensors_hooks
    rng_state = _get_rng_state() if preserve_rng_state else None
    forward_context, recompute_context = context_fn()
    state = {"saved": 0, "recomputed": None}

    def pack(_tensor):
        state["saved"] += 1
        return state["saved"] - 1

    def recompute():
        store = []
        inputs = [a.detach().requires_grad_(a.requires_grad) if isinstance(a, _C.Tensor) else a for a in args]
        current = _get_rng_state() if rng_state is not None else None
        try:
            if rng_state is not None:
                _set_rng_state(rng_state)
            with saved_tensors_hooks(lambda t: store.append(t) or len(store) - 1, lambda i: store[i]):
                with enable_grad(), recompute_context:
                    function(*inputs, **kwargs)
        finally:
            if current is not None:
                _set_rng_state(current)
        if len(store) != state["saved"]:
            raise CheckpointError(
                f"torch.utils.checkpoint: A different number of tensors was saved during the original forward and "
                f"recomputation.\nNumber of tensors saved during forward: {state['saved']}\nNumber of tensors saved "
                f"during recomputation: {len(store)}")
        return store

    def unpack(index):
        if state["recomputed"] is None:
            state["recomputed"] = recompute()
        return state["recomputed"][index]

    with saved_tensors_hooks(pack, unpack), forward_context:
        return function(*args, **kwargs)


def checkpoint(function, *args, use_reentrant=None, preserve_rng_state=True, context_fn=noop_context_fn,
               determinism_check="default", debug=False, early_stop=True, **kwargs):
    """Runs function(*args, **kwargs) without storing its activations; they are recomputed in
    backward. See the module docstring for use_reentrant."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. In a future "
                      "release, calling checkpoint without use_reentrant will raise an exception. "
                      "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the differences between the "
                      "two variants.", stacklevel=2)
        use_reentrant = True
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got {determinism_check}")
    if use_reentrant:
        if context_fn is not noop_context_fn or debug:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if not _C.is_grad_enabled():
        # Nothing is recorded: no activations to drop, nothing to recompute.
        return function(*args, **kwargs)
    if not use_reentrant:
        return _checkpoint_without_reentrant(function, preserve_rng_state, context_fn, args, kwargs)
    return CheckpointFunction.apply(function, preserve_rng_state, *args)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, preserve_rng_state=True):
    """Splits a sequence of modules/functions (or an nn.Sequential) into `segments` chunks and
    checkpoints each chunk but the last, which runs normally."""
    if hasattr(functions, "children") and not isinstance(functions, (list, tuple)):
        functions = list(functions.children())
    functions = list(functions)

    def run_function(start, end):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve_rng_state)
    return run_function(end + 1, len(functions) - 1)(input)
