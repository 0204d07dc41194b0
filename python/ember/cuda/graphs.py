"""CUDA graphs (torch.cuda.graphs): capture the kernels a piece of code queues, replay them as
one launch. ember.cuda.CUDAGraph is the C++ engine (include/ember/cuda.h); `graph` is torch's
context manager (a side stream, the capture around the block) and make_graphed_callables
torch's helper that graphs a callable's forward and backward.

Inside a capture nothing may wait for the GPU (.item(), .cpu(), printing, synchronize): the
call fails and the capture is void. Random numbers are refused there for now (each replay would
repeat them). Memory allocated during a capture belongs to the graph's pool; replays write the
same tensors, so copy new inputs into the tensors the capture read and read the outputs it
returned (copy them to keep them past the next replay)."""
import gc

from .. import _C

__all__ = ["CUDAGraph", "graph", "graph_pool_handle", "is_current_stream_capturing", "make_graphed_callables"]


class CUDAGraph:
    """torch.cuda.CUDAGraph: capture_begin/capture_end around the work to record (on a stream
    other than the default one: `graph` arranges that), then replay()."""

    def __init__(self):
        self._graph = _C._cuda.CUDAGraph()

    def capture_begin(self, pool=None, capture_error_mode="global"):
        self._graph.capture_begin(0 if pool is None else int(pool), capture_error_mode)

    def capture_end(self):
        self._graph.capture_end()

    def replay(self):
        self._graph.replay()

    def reset(self):
        self._graph.reset()

    def pool(self):
        """The memory pool handle: pass it as `pool` to another capture to share memory."""
        return self._graph.pool()

    def enable_debug_mode(self):
        pass  # ember keeps no debug copy of the graph; debug_dump says so

    def debug_dump(self, debug_path):
        raise RuntimeError("CUDAGraph.debug_dump: ember does not keep a debug copy of the graph")


def graph_pool_handle():
    """A memory pool handle for graphs to share (torch.cuda.graph_pool_handle)."""
    return _C._cuda.graph_pool_handle()


def is_current_stream_capturing():
    """True while the current stream of the current GPU is being captured."""
    return _C._cuda.is_current_stream_capturing()


class graph:
    """with ember.cuda.graph(g): ... captures the block's GPU work into g (torch.cuda.graph): the
    device is synchronized and the cache emptied first, the block runs on a side stream (one
    shared by default, as torch's), and the capture ends with the block. An error inside the
    block ends the capture and is raised as it is."""

    default_capture_stream = None

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global"):
        from . import Stream, StreamContext
        if self.__class__.default_capture_stream is None:
            self.__class__.default_capture_stream = Stream()
        self.pool = pool
        self.capture_stream = stream if stream is not None else self.__class__.default_capture_stream
        self.stream_ctx = StreamContext(self.capture_stream)
        self.cuda_graph = cuda_graph
        self.capture_error_mode = capture_error_mode

    def __enter__(self):
        from . import synchronize, empty_cache
        synchronize()
        gc.collect()
        empty_cache()
        self.stream_ctx.__enter__()
        try:
            self.cuda_graph.capture_begin(self.pool, capture_error_mode=self.capture_error_mode)
        except BaseException:
            self.stream_ctx.__exit__(None, None, None)
            raise

    def __exit__(self, exc_type, exc, tb):
        try:
            self.cuda_graph.capture_end()
        except RuntimeError:
            if exc_type is None:
                raise
            self.cuda_graph.reset()  # the block's own error is the one to see
        finally:
            self.stream_ctx.__exit__(None, None, None)
        return False


def make_graphed_callables(callables, sample_args, num_warmup_iters=3, allow_unused_input=False, pool=None):
    """torch.cuda.make_graphed_callables: each callable (a function or a Module) runs
    num_warmup_iters times on a side stream, then its forward and its backward are captured into
    two graphs; the returned callable copies its tensor arguments into the captured ones, replays
    the forward, and its backward replays the backward graph. Arguments must be tensors of the
    sample's shapes, dtypes and requires_grad; a Module must not have hooks."""
    from . import Stream, current_stream, stream
    from .. import empty_like
    from ..nn import Module

    just_one = not isinstance(callables, tuple)
    if just_one:
        callables, sample_args = (callables,), (sample_args,)
    mempool = graph_pool_handle() if pool is None else pool
    graphed = []
    for func, args in zip(callables, sample_args):
        args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
        for a in args:
            if not isinstance(a, _C.Tensor):
                raise TypeError("make_graphed_callables: sample_args must hold tensors only, got "
                                f"{type(a).__name__}")
        if isinstance(func, Module) and (func._forward_hooks or func._forward_pre_hooks):
            raise RuntimeError("make_graphed_callables: modules must not have hooks registered when graphed")
        params = tuple(func.parameters()) if isinstance(func, Module) else ()
        static_inputs = args + params
        wants_grad = [i for i in static_inputs if i.requires_grad]

        side = Stream()
        side.wait_stream(current_stream())
        with stream(side):
            for _ in range(num_warmup_iters):
                outs = _flat_outputs(func(*args))
                _backward(outs, [empty_like(o) for o in outs], wants_grad, allow_unused_input)
        current_stream().wait_stream(side)

        captured = capture_forward_backward(lambda: func(*args), static_inputs, mempool, allow_unused_input)
        graphed.append(_graphed(func, args, static_inputs, captured, len(params)))
    return graphed[0] if just_one else tuple(graphed)


def _flat_outputs(out):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    for o in outs:
        if not isinstance(o, _C.Tensor):
            raise TypeError(f"make_graphed_callables: the callable must return tensors, got {type(o).__name__}")
    return tuple(outs)


def _backward(outputs, grad_outputs, wants_grad, allow_unused):
    """The gradients of outputs (those that require grad) for wants_grad, as autograd.grad."""
    from .. import autograd
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not pairs or not wants_grad:
        return ()
    return autograd.grad([o for o, _ in pairs], wants_grad, [g for _, g in pairs], allow_unused=allow_unused)


def capture_forward_backward(call, static_inputs, pool, allow_unused=False):
    """call() (which computes from static_inputs) captured into a forward graph, and the gradients
    of its outputs for the static inputs that require grad into a backward graph, both in pool
    (compile/device_graphs.h, shared with ember.compile's mode="reduce-overhead"). Nothing runs:
    replay_forward() for values; replay_backward(grads) returns the input gradients (copies)."""
    return _C._compile.capture_forward_backward(lambda: _flat_outputs(call()), list(static_inputs), pool,
                                                allow_unused)


def _graphed(func, sample, static_inputs, captured, n_params):
    from ..autograd import Function
    from ..nn import Module

    class Graphed(Function):
        @staticmethod
        def forward(ctx, *inputs):
            for static, given in zip(static_inputs, inputs):
                if static.data_ptr() != given.data_ptr():
                    static.copy_(given)
            captured.replay_forward()
            return tuple(o.detach() for o in captured.static_outputs)

        @staticmethod
        def backward(ctx, *grads):
            return tuple(captured.replay_backward(list(grads)))

    single = len(captured.static_outputs) == 1

    def run(*args):
        if len(args) != len(sample):
            raise TypeError(f"graphed callable: expected {len(sample)} tensor arguments, got {len(args)}")
        params = tuple(func.parameters()) if isinstance(func, Module) else ()
        out = Graphed.apply(*(args + params))
        return out[0] if single else out

    if isinstance(func, Module):
        func.forward = run
        return func
    return run
