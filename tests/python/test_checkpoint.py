"""torch.utils.checkpoint: both flavours give the plain gradients (random ops repeat), the
non-reentrant one (saved-tensor hooks) supports autograd.grad and create_graph, context_fn,
the recomputation check and torch 2.x's warning; checkpoint_sequential."""
import pytest

import ember
from ember.utils.checkpoint import checkpoint, checkpoint_sequential


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_gives_identical_grads(use_reentrant):
    x0 = ember.randn(4, 3, dtype=ember.float64)
    w1 = ember.randn(3, 5, dtype=ember.float64, requires_grad=True)
    w2 = ember.randn(5, 2, dtype=ember.float64, requires_grad=True)

    def block(x):
        h = (x @ w1).tanh()
        # random op inside: the recomputation must see the same numbers
        h = h * (ember.rand(h.shape, dtype=ember.float64) > 0.3).to(ember.float64)
        return (h @ w2).sin()

    x = x0.clone().requires_grad_()
    ember.manual_seed(7)
    ref = block(x)
    ref.sum().backward()
    ref_grads = [x.grad, w1.grad, w2.grad]
    x2 = x0.clone().requires_grad_()
    w1.grad = None
    w2.grad = None
    ember.manual_seed(7)
    out = checkpoint(block, x2, use_reentrant=use_reentrant)
    # reentrant: one custom node; non-reentrant: the ordinary graph (its saved tensors recomputed)
    assert out.grad_fn.name() == ("CheckpointFunctionBackward" if use_reentrant else "SinBackward0")
    assert out.tolist() == ref.tolist()
    ember.rand(3)  # move the global generator: backward must restore the forward's state
    out.sum().backward()
    for got, want in zip([x2.grad, w1.grad, w2.grad], ref_grads):
        assert got.tolist() == want.tolist()


def test_checkpoint_parameters_only_and_kwargs():
    w = ember.ones(3, requires_grad=True)
    x = ember.tensor([1.0, 2.0, 3.0])  # data: no grad

    def f(x, scale=1.0):
        return (x * w * scale).sum()

    out = checkpoint(f, x, use_reentrant=False, scale=2.0)
    assert out.requires_grad
    out.backward()
    assert w.grad.tolist() == [2.0, 4.0, 6.0]
    # reentrant flavour: as torch, no tensor argument requiring grad -> no graph
    assert not checkpoint(f, x, use_reentrant=True).requires_grad
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        checkpoint(f, x, use_reentrant=True, scale=2.0)
    # outputs that would not require grad do not
    c = checkpoint(lambda t: t * 2, x, use_reentrant=False)
    assert not c.requires_grad
    with ember.no_grad():
        assert not checkpoint(f, x, use_reentrant=False).requires_grad


def test_checkpoint_without_reentrant_recomputes_once_and_supports_grad():
    w = ember.randn(3, 3, dtype=ember.float64, requires_grad=True)
    x = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
    calls = []

    def block(t):
        calls.append(1)
        return ((t @ w).tanh() @ w).exp()

    ref_gx, ref_gw = ember.autograd.grad(block(x).sum(), (x, w))
    calls.clear()
    out = checkpoint(block, x, use_reentrant=False)
    assert len(calls) == 1
    gx, gw = ember.autograd.grad(out.sum(), (x, w))  # the reentrant flavour cannot do this
    assert len(calls) == 2  # one recomputation for all the saved tensors
    assert gx.tolist() == ref_gx.tolist() and gw.tolist() == ref_gw.tolist()
    assert w.grad is None  # grad() accumulated nothing
    # create_graph through the recomputed tensors: a second derivative
    y = ember.tensor([0.3, -0.2], dtype=ember.float64, requires_grad=True)
    (g,) = ember.autograd.grad(checkpoint(lambda t: t.sin().sum(), y, use_reentrant=False), y, create_graph=True)
    g.sum().backward()
    assert y.grad.tolist() == (-y.detach().sin()).tolist()


def test_checkpoint_context_fn_mismatch_and_warning():
    import contextlib
    entered = []

    @contextlib.contextmanager
    def mark(name):
        entered.append(name)
        yield

    w = ember.randn(3, requires_grad=True)
    out = checkpoint(lambda t: (t * w).exp().sum(), ember.ones(3), use_reentrant=False,
                     context_fn=lambda: (mark("forward"), mark("recompute")))
    assert entered == ["forward"]
    out.backward()
    assert entered == ["forward", "recompute"]
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        checkpoint(lambda t: t, ember.ones(1, requires_grad=True), use_reentrant=True,
                   context_fn=lambda: (mark("a"), mark("b")))
    state = {"first": True}

    def changes(t):  # saves one tensor the first time, two on the recomputation
        r = t.exp() if state["first"] else t.exp().exp()
        state["first"] = False
        return r.sum()

    bad = checkpoint(changes, ember.ones(2, requires_grad=True), use_reentrant=False)
    with pytest.raises(RuntimeError, match="A different number of tensors was saved"):
        bad.backward()
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint(lambda t: t * 2, ember.ones(1, requires_grad=True))


def test_checkpoint_sequential():
    ws = [ember.randn(3, 3, dtype=ember.float64, requires_grad=True) for _ in range(4)]
    fns = [lambda t, w=w: (t @ w).tanh() for w in ws]
    x = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
    ref = x
    for f in fns:
        ref = f(ref)
    ref.sum().backward()
    want = [w.grad.tolist() for w in ws] + [x.grad.tolist()]
    for w in ws:
        w.grad = None
    x.grad = None
    checkpoint_sequential(fns, 2, x).sum().backward()
    assert [w.grad.tolist() for w in ws] + [x.grad.tolist()] == want
