"""ember.compile's matmul epilogues (src/compile/matmul_epilogue.cpp): a Linear whose result only a
relu, a gelu or a residual add reads becomes one _addmm_epilogue node. The node runs the same GEMM
calls and formulas as eager's addmm, activation and add, so results and gradients keep eager's bits."""
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.compiler import explain


@pytest.fixture(autouse=True)
def _kernel_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ember-cache"))


def epilogues(fn, *args):
    text = str(explain(fn, *args))
    return text.count("_addmm_epilogue("), text


def steps_equal(model, make_input, steps=3, loss=lambda y: y.pow(2).mean()):
    """Three forward+backward steps through the compiled model equal eager's, bit for bit."""
    fast = ember.compile(model)
    for _ in range(steps):
        x = make_input()
        model.zero_grad()
        want = model(x)
        loss(want).backward()
        want_grads = [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        got = fast(x)
        loss(got).backward()
        assert ember.equal(got, want)
        for g, w in zip((p.grad for p in model.parameters()), want_grads):
            assert ember.equal(g, w)


def test_mlp_relus_fuse_into_their_linears_with_eager_bits():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 96), nn.ReLU(), nn.Linear(96, 48), nn.ReLU(), nn.Linear(48, 10))
    x = ember.randn(32, 1, 28, 28)
    count, text = epilogues(model, x)
    assert count == 2 and "2 matmul epilogues" in text  # the last Linear has no activation after it
    steps_equal(model, lambda: ember.randn(32, 1, 28, 28), loss=lambda y: F.cross_entropy(y, ember.arange(32) % 10))
    with ember.no_grad():
        assert ember.equal(ember.compile(model)(x), model(x))


class Block(nn.Module):  # a transformer MLP: Linear -> gelu -> Linear, plus the residual, on 3-d input
    def __init__(self, d, approximate):
        super().__init__()
        self.fc, self.out, self.approximate = nn.Linear(d, 4 * d), nn.Linear(4 * d, d), approximate

    def forward(self, x):
        return x + self.out(F.gelu(self.fc(x), approximate=self.approximate))


@pytest.mark.parametrize("approximate", ["tanh", "none"])
def test_gelu_and_residual_through_reshapes(approximate):
    ember.manual_seed(1)
    block = Block(24, approximate)
    x = ember.randn(3, 10, 24, requires_grad=True)
    count, text = epilogues(block, x)
    assert count == 2, text
    steps_equal(block, lambda: ember.randn(3, 10, 24))
    # the input's gradient arrives through the residual and the product
    fast = ember.compile(block)
    gx_fast, = ember.autograd.grad(fast(x).sum(), [x])
    gx, = ember.autograd.grad(block(x).sum(), [x])
    assert ember.equal(gx_fast, gx)


def test_double_backward_through_fused_linears():
    ember.manual_seed(2)
    block = Block(8, "tanh").double()
    fast = ember.compile(block)

    def penalty(f, x):  # a gradient penalty: the gradient of a gradient's norm
        g, = ember.autograd.grad(f(x).pow(2).sum(), [x], create_graph=True)
        return ember.autograd.grad(g.pow(2).sum(), list(block.parameters()))

    x = ember.randn(4, 8, dtype=ember.float64, requires_grad=True)
    for a, b in zip(penalty(fast, x), penalty(block, x)):
        assert ember.allclose(a, b, rtol=1e-10, atol=1e-12)


def test_what_does_not_fuse_stays_as_eager_ran_it():
    ember.manual_seed(3)
    w, b, v = ember.randn(6, 5), ember.randn(6), ember.randn(6)

    def returned_too(x):  # the product is read twice: it must exist, so no epilogue
        y = F.linear(x, w, b)
        return y, y.relu()

    def broadcast_add(x):  # the add's other operand broadcasts: not a residual of the result's shape
        return F.linear(x, w, b) + v

    x = ember.randn(4, 5)
    for f in (returned_too, broadcast_add):
        count, text = epilogues(f, x)
        assert count == 0, (f.__name__, text)
        got, want = ember.compile(f)(x), f(x)
        for g_, w_ in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            assert ember.equal(g_, w_)


def test_bias_free_linears_fuse_too():
    # LLaMA-style: projections without a bias (mm), a residual, an activation, on 3-d input
    ember.manual_seed(5)

    class Mlp(nn.Module):
        def __init__(self):
            super().__init__()
            self.up, self.down = nn.Linear(12, 32, bias=False), nn.Linear(32, 12, bias=False)

        def forward(self, x):
            return x + self.down(F.gelu(self.up(x), approximate="tanh"))

    block = Mlp()
    x = ember.randn(2, 7, 12)
    count, text = epilogues(block, x)
    assert count == 2 and "mm(" not in text.replace("_addmm_epilogue(", ""), text
    steps_equal(block, lambda: ember.randn(2, 7, 12))


def test_float64_fuses_and_bfloat16_does_not():
    ember.manual_seed(4)
    lin = nn.Linear(5, 7)
    f = lambda x: F.relu(lin(x))  # noqa: E731
    assert epilogues(f, ember.randn(3, 5))[0] == 1
    lin64 = nn.Linear(5, 7).double()
    g = lambda x: F.relu(lin64(x))  # noqa: E731
    x64 = ember.randn(3, 5, dtype=ember.float64)
    assert epilogues(g, x64)[0] == 1
    assert ember.equal(ember.compile(g)(x64), g(x64))
    with ember.autocast("cpu", dtype=ember.bfloat16):
        assert epilogues(f, ember.randn(3, 5))[0] == 0


def test_fusion_off_leaves_the_products(monkeypatch):
    monkeypatch.setenv("EMBER_COMPILE_EPILOGUES", "0")
    lin = nn.Linear(5, 7)
    assert epilogues(lambda x: lin(x).relu(), ember.randn(3, 5))[0] == 0
