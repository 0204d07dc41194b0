"""mode="reduce-overhead": a compiled signature's graph replayed as CUDA graphs (torch's
cudagraphs), so a call costs one launch instead of one per kernel.

A signature is captured on its second call (the first warmed up cuBLAS, cuDNN and, in training,
the backward's kernels too). The call's tensor arguments are copied into static ones the graph
reads; tensors from outside the function (parameters, buffers) are read in place, so an optimizer
updating them in place is seen, and a parameter given new storage (`p.data = ...`, `.to()`) makes
the signature capture again. As in torch, the outputs are the graph's own tensors and the next
replay overwrites them: clone what you keep past the next call.

- Inference (no gradient wanted): one graph.
- Training (an argument or parameter requires grad, grad mode on): the forward and its backward
  are captured as two graphs (cuda.graphs.capture_forward_backward, make_graphed_callables' core)
  behind one autograd node, whose backward replays the backward graph and returns the input
  and parameter gradients, so `loss.backward()` and optimizers work unchanged. The saved
  activations live in the graph's memory, one copy per signature: a call made while an earlier
  call's backward is still to come (two forwards, then one backward over both) runs the compiled
  graph without replaying, and a backward whose activations a later replay overwrote (a second
  backward with retain_graph=True after another call) raises instead of returning wrong gradients.

A graph that cannot be captured (random numbers in it, a host sync) is logged under
"graph_breaks" and its signature runs its kernels one by one, as mode="default"."""
from . import _C
from ._C import _compile as _cc


def cudagraphable(tensors):
    """Whether a call can replay a CUDA graph: its tensors are all on one GPU."""
    if not tensors:
        return False
    dev = tensors[0].device
    return dev.type == "cuda" and all(t.device == dev for t in tensors)


def wants_grad(tensors):
    return _C.is_grad_enabled() and any(t.requires_grad for t in tensors)


class _Captured:
    """What a signature's capture left: the graphs, the static arguments, and the storage of the
    outside tensors the graphs read in place."""
    __slots__ = ("static_args", "outside", "outside_ptrs", "outputs", "graphs", "generation", "waiting",
                 "function")

    def matches_outside(self):
        return all(t.data_ptr() == p for t, p in zip(self.outside, self.outside_ptrs))

    def copy_args(self, args):
        for s, t in zip(self.static_args, args):
            if s.data_ptr() != t.data_ptr():
                s.copy_(t)


def _static_args(args):
    return [t.detach().clone().requires_grad_(t.requires_grad) for t in args]


def _returns_own(outs, tensors):
    mine = {_cc.impl_id(t) for t in tensors}
    return any(_cc.impl_id(o) in mine for o in outs)


def capture(run, all_tensors, n_args, training):
    """A _Captured for run (the compiled graph's run over a list of tensors), or the reason it
    cannot be captured. Nothing has run: replay() gives the call's values."""
    from . import cuda
    c = _Captured()
    c.static_args = _static_args(all_tensors[:n_args])
    c.outside = list(all_tensors[n_args:])
    c.outside_ptrs = [t.data_ptr() for t in c.outside]
    inputs = c.static_args + c.outside
    c.generation, c.waiting, c.function = 0, 0, None
    try:
        if training:
            c.graphs = cuda.graphs.capture_forward_backward(lambda: run(inputs), inputs, cuda.graph_pool_handle(),
                                                            allow_unused=True)
            outs = list(c.graphs.static_outputs)
        else:
            c.graphs = cuda.CUDAGraph()
            with cuda.graph(c.graphs):
                outs = run(inputs)
    except RuntimeError as e:
        return str(e)
    if _returns_own(outs, inputs):  # an argument or outside tensor returned: eager returns the caller's
        return "it returns one of its inputs"
    c.outputs = outs
    if training:
        c.function = _training_function(c)
    return c


def replay(c, all_tensors, n_args):
    """The outputs of a replay for this call, or None when this call must run the compiled graph
    instead (training: an earlier call's backward is still to come)."""
    if c.function is None:
        c.copy_args(all_tensors[:n_args])
        c.graphs.replay()
        return c.outputs
    if c.waiting:
        return None
    return list(c.function.apply(*all_tensors))


class _Waiting:
    """Held by a training replay's autograd node until its backward runs: while one is held, a new
    call must not overwrite the activations that backward reads. Dropped with the node (outputs
    freed without a backward) it stops holding."""
    __slots__ = ("captured", "held")

    def __init__(self, captured):
        self.captured, self.held = captured, True
        captured.waiting += 1

    def release(self):
        if self.held:
            self.held = False
            self.captured.waiting -= 1

    def __del__(self):
        self.release()


def _training_function(c):
    from .autograd import Function
    from .cuda.graphs import replay_backward
    n_args = len(c.static_args)
    non_differentiable = [i for i, o in enumerate(c.outputs) if not o.requires_grad]

    class CompiledCUDAGraph(Function):
        @staticmethod
        def forward(ctx, *tensors):
            c.copy_args(tensors[:n_args])
            c.graphs.forward.replay()
            c.generation += 1
            ctx.generation, ctx.waiting = c.generation, _Waiting(c)
            outs = tuple(o.detach() for o in c.outputs)
            if non_differentiable:
                ctx.mark_non_differentiable(*(outs[i] for i in non_differentiable))
            return outs

        @staticmethod
        def backward(ctx, *grads):
            ctx.waiting.release()
            if ctx.generation != c.generation:
                raise RuntimeError(
                    "ember.compile(mode='reduce-overhead'): this backward reads activations that a later call "
                    "of the same compiled graph overwrote (CUDA graphs keep one copy per signature). Run "
                    "backward before calling it again, or compile with mode='default'")
            return replay_backward(c.graphs, grads)

    return CompiledCUDAGraph
