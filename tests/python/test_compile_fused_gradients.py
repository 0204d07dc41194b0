"""ember.compile's fused kernels, the gradient side and masks: a weight's or bias's gradient summed
per chunk of rows inside the generated backward (the same bits at any thread count), a kernel
holding a branch without gradients (its outputs carry no history), masked_fill made one where
that fuses with its neighbours. Against eager's values and gradients."""
import pytest

import ember
from ember.compiler import explain


@pytest.fixture(autouse=True)
def _kernel_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ember-cache"))


def _layer_norm_by_hand(x, w, b):
    m = x.mean(-1, keepdim=True)
    d = x - m
    return d * (d.pow(2).mean(-1, keepdim=True) + 1e-5).rsqrt() * w + b


def test_broadcast_operands_gradients_are_summed_per_chunk_of_rows():
    """A weight or bias (an operand over the last dims) gets its gradient summed inside the
    generated backward, per chunk of rows (kGradientChunks: 64), then over the chunks: row counts
    below, at and above 64 and not a multiple of it, elementwise and row groups, a [1, D] operand,
    an operand over the last two dims; close to eager, and the same bits at 1 and 2 threads."""
    def chain(x, w, b):
        return (x * w + b).tanh() * 2.0

    def rows(x, w, b):
        return _layer_norm_by_hand(x, w.reshape(-1), b) * 3.0

    def two_dims(x, w, b):
        return (x * w).sigmoid() + b

    cases = [(chain, lambda n: (ember.randn(n, 24), ember.randn(24), ember.randn(1, 24))),
             (rows, lambda n: (ember.randn(n, 40), ember.randn(1, 40), ember.randn(40))),
             (two_dims, lambda n: (ember.randn(n, 3, 8), ember.randn(3, 8), ember.randn(8)))]
    threads = ember.get_num_threads()
    try:
        for f, make in cases:
            fast = ember.compile(f)
            for n in (1, 5, 64, 67, 300):
                args = [a.requires_grad_() for a in make(n)]
                up = ember.randn(*f(*args).shape)
                fast(*args)  # the capture call
                grads = []
                for t in (1, 2):
                    ember.set_num_threads(t)
                    grads.append(ember.autograd.grad((fast(*args) * up).sum(), args))
                want = ember.autograd.grad((f(*args) * up).sum(), args)
                for a, b, c in zip(grads[0], grads[1], want):
                    assert ember.equal(a, b), (f.__name__, n)
                    assert a.shape == c.shape and ember.allclose(a, c, rtol=1e-4, atol=1e-4), (f.__name__, n)
            assert "(with a fused backward)" in str(explain(f, *args))
    finally:
        ember.set_num_threads(threads)


def test_a_fused_branch_without_gradients_gives_outputs_without_history():
    """One kernel may hold two branches, one reaching a tensor that wants a gradient and one not;
    the other branch's outputs carry no history, as in eager (they once got the kernel's autograd
    node, and so requires_grad, and a gradient path that does not exist)."""
    def f(x, w):
        return x.cos() * 2.0, (w * w).tanh()

    x, w = ember.randn(3, 5), ember.randn(3, 5, requires_grad=True)
    fast = ember.compile(f)
    fast(x, w)
    (a, b), (a0, b0) = fast(x, w), f(x, w)
    assert "(with a fused backward)" in str(explain(f, x, w))
    assert (a.requires_grad, b.requires_grad) == (a0.requires_grad, b0.requires_grad) == (False, True)
    assert a.grad_fn is None and ember.equal(a, a0) and ember.equal(b, b0)
    g, = ember.autograd.grad((a.sum() + b.sum()), w)
    assert ember.allclose(g, ember.autograd.grad(a0.sum() + b0.sum(), w)[0])


def test_masked_fill_joins_the_chain_around_it():
    """x.masked_fill(mask, v), captured as a fresh buffer, a copy and an in-place fill, becomes one
    where(mask, v, x) that fuses with its neighbours; a bool tensor multiplied in fuses too. Values
    are eager's bits and gradients eager's, in float32 and bfloat16; a filled tensor written in place
    afterwards is the where's own buffer, as it was the composite's; an integer tensor's fill stays
    as captured (where would promote the number)."""
    def attention_scores(s, causal, keep):
        return ((s * 0.125).masked_fill(causal, float("-inf")).exp() * keep).sum(-1)

    def written_after(s, causal):
        t = s.masked_fill(causal, 0.0)
        return t, t.add_(1.0)

    s = ember.randn(2, 3, 8, 8)
    causal = ember.ones(8, 8).triu(1).bool()
    keep = ember.randn(2, 3, 8, 8) > -1.0
    for dtype in (ember.float32, ember.bfloat16):
        sd = s.to(dtype).requires_grad_()
        fast = ember.compile(attention_scores)
        fast(sd, causal, keep)
        got, want = fast(sd, causal, keep), attention_scores(sd, causal, keep)
        assert ember.equal(got, want), dtype
        g_got, = ember.autograd.grad(got.sum(), sd)
        g_want, = ember.autograd.grad(want.sum(), sd)
        assert ember.allclose(g_got.float(), g_want.float(), rtol=1e-2 if dtype == ember.bfloat16 else 1e-6), dtype
        info = str(explain(attention_scores, sd, causal, keep))
        assert "1 masked fills made out of place" in info and "mul where exp mul" in info, info
    fast = ember.compile(written_after)
    with ember.no_grad():
        fast(s, causal)
        got, want = fast(s, causal), written_after(s, causal)
        assert got[0] is got[1] and ember.equal(got[0], want[0])  # (one tensor returned twice, as eager)
    n = ember.randint(0, 9, (4, 8))

    def ints(n, m):
        return n.masked_fill(m, 7) * 2

    fast = ember.compile(ints)
    with ember.no_grad():
        fast(n, causal[:4])
        assert ember.equal(fast(n, causal[:4]), ints(n, causal[:4]))
        assert "masked fills" not in str(explain(ints, n, causal[:4]))
