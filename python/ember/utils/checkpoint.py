"""ember.utils.checkpoint: gradient checkpointing, as torch.utils.checkpoint.

checkpoint(fn, *args) runs fn without keeping its intermediate activations and runs it again
during backward to get them, with the random state the forward saw (dropout masks repeat).
The gradients are those of running fn directly.

Both flavours are a custom Function whose backward recomputes fn with grad enabled and calls
backward() through the recomputation, so parameters used inside fn get their .grad as well:
- use_reentrant=True (torch 1.13's default): outputs require grad only when a tensor argument
  does, as in torch (parameters alone do not make them differentiable);
- use_reentrant=False: parameters used inside fn are enough, as in torch, and keyword
  arguments are passed to fn.
As torch's reentrant variant, it works with .backward() (not with autograd.grad() or
backward(inputs=...), which would accumulate the parameters' gradients into .grad instead).
"""
import functools

from .. import _C
from ..autograd.function import Function
from ..autograd.grad_mode import no_grad, enable_grad
from .. import autograd as _autograd

__all__ = ["checkpoint", "checkpoint_sequential"]


def _get_rng_state():
    return _C.default_generator.get_state()


def _set_rng_state(state):
    _C.default_generator.set_state(state)


class CheckpointFunction(Function):
    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, dummy, *args):
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.fwd_rng_state = _get_rng_state()
        # Tensors go through save_for_backward (version-checked, freed with the graph); other
        # arguments are kept as they are.
        ctx.inputs = [None if isinstance(a, _C.Tensor) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, _C.Tensor)]
        ctx.save_for_backward(*[args[i] for i in ctx.tensor_indices])
        ctx.dummy_mode = dummy is not None
        tensor_args = [args[i] for i in ctx.tensor_indices]
        if dummy is not None and not any(a.requires_grad for a in tensor_args):
            # Non-reentrant flavour: outputs must require grad exactly when they would without
            # checkpointing (parameters inside fn count); find out with a recorded run whose graph
            # is dropped right away, and mark the others non-differentiable.
            with enable_grad():
                outputs = run_function(*args)
            outs = outputs if isinstance(outputs, tuple) else (outputs,)
            detached = tuple(o.detach() if isinstance(o, _C.Tensor) else o for o in outs)
            ctx.mark_non_differentiable(*[d for o, d in zip(outs, detached)
                                          if isinstance(o, _C.Tensor) and not o.requires_grad])
            return detached if isinstance(outputs, tuple) else detached[0]
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
        if diff_outs:
            _autograd.backward(diff_outs, diff_grads)
        elif not ctx.dummy_mode:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        input_grads = tuple(a.grad if isinstance(a, _C.Tensor) else None for a in inputs)
        return (None, None, None) + input_grads


def checkpoint(function, *args, use_reentrant=None, preserve_rng_state=True, **kwargs):
    """Runs function(*args, **kwargs) without storing its activations; they are recomputed in
    backward. See the module docstring for use_reentrant."""
    if use_reentrant is None:
        use_reentrant = True
    if use_reentrant and kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if not _C.is_grad_enabled():
        # Nothing is recorded: no activations to drop, nothing to recompute.
        return function(*args, **kwargs)
    run = functools.partial(function, **kwargs) if kwargs else function
    dummy = None
    if not use_reentrant:
        # A tensor input that requires grad makes apply() record the node even when no real
        # argument does (parameters inside `function` then still get gradients).
        dummy = _C.empty(0, requires_grad=True)
    return CheckpointFunction.apply(run, preserve_rng_state, dummy, *args)


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
