"""Autograd from Python: tensor attributes, backward/grad, hooks, grad mode, custom Functions,
.data, gradcheck (checkpointing: test_checkpoint.py); differential tests against torch when it is installed."""
import gc
import math
import threading

import pytest

import ember
from ember.autograd import Function, gradcheck, GradcheckError


def t64(values, requires_grad=True):
    return ember.tensor(values, dtype=ember.float64, requires_grad=requires_grad)


def close(a, b, tol=1e-6):
    a = a.tolist() if isinstance(a, ember.Tensor) else a
    b = b.tolist() if isinstance(b, ember.Tensor) else b
    if isinstance(a, list):
        return len(a) == len(b) and all(close(x, y, tol) for x, y in zip(a, b))
    return abs(a - b) <= tol * (1 + abs(b))


# ---------------------------------------------------------------- attributes

def test_leaf_attributes():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    assert x.requires_grad and x.is_leaf and x.grad_fn is None and x.grad is None
    y = x * 2
    assert y.requires_grad and not y.is_leaf
    assert y.grad_fn.name() == "MulBackward0"
    assert type(y.grad_fn).__name__ == "MulBackward0"
    assert repr(y.grad_fn).startswith("<MulBackward0 object at 0x")
    assert y.grad_fn is y.grad_fn  # one Python object per node while it lives
    assert isinstance(y.grad_fn, ember.autograd.graph.Node)
    (acc, nr), (none, _) = y.grad_fn.next_functions  # the number 2 has no node, as in torch
    assert none is None
    assert acc.name() == "AccumulateGrad" and nr == 0
    assert acc.variable is not None and acc.variable.data_ptr() == x.data_ptr()
    z = ember.tensor([1.0, 2.0])
    assert not z.requires_grad and z.is_leaf and (z * 2).grad_fn is None
    assert (x + z).grad_fn.next_functions[1] == (None, 0)


def test_requires_grad_setters():
    x = ember.zeros(3)
    assert x.requires_grad_() is x and x.requires_grad
    x.requires_grad = False
    assert not x.requires_grad
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype can require gradients"):
        ember.zeros(2, dtype=ember.int64).requires_grad_()
    y = ember.ones(2, requires_grad=True) * 3
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables. If"):
        y.requires_grad = False
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        y.requires_grad = True
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        y.requires_grad_(False)
    assert y.requires_grad_(True) is y  # allowed, as in torch


def test_grad_get_set_del():
    x = ember.ones(2, requires_grad=True)
    assert x.grad is None
    x.grad = ember.full((2,), 5.0)
    assert x.grad.tolist() == [5.0, 5.0]
    (x * 3).sum().backward()
    assert x.grad.tolist() == [8.0, 8.0]  # accumulates into the assigned grad
    del x.grad
    assert x.grad is None
    x.grad = ember.ones(2)
    x.grad = None
    assert x.grad is None
    with pytest.raises(RuntimeError, match="assigned grad has data of a different size"):
        x.grad = ember.zeros(3)
    with pytest.raises(RuntimeError, match="assigned grad has data of a different type"):
        x.grad = ember.zeros(2, dtype=ember.float64)
    with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None"):
        x.grad = 3


def test_detach_and_detach_():
    x = ember.ones(3, requires_grad=True)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and d.data_ptr() == y.data_ptr()
    d.add_(1)  # shares data and version counter
    assert y.tolist() == [3.0, 3.0, 3.0] and y._version == d._version
    z = x * 2
    assert z.detach_() is z
    assert not z.requires_grad and z.grad_fn is None
    with pytest.raises(RuntimeError, match="Can't detach views in-place"):
        (x * 1).view(3).detach_()


def test_version_and_output_nr():
    x = ember.zeros(2)
    v = x._version
    x.add_(1)
    assert x._version == v + 1

    class Pair(Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2, t * 3

        @staticmethod
        def backward(ctx, ga, gb):
            return ga * 2 + gb * 3

    a, b = Pair.apply(ember.ones(2, requires_grad=True))
    assert (a.output_nr, b.output_nr) == (0, 1) and ember.ones(1).output_nr == 0


# ---------------------------------------------------------------- backward / grad

def test_composed_ops_against_analytic_values():
    x = t64([0.5, -1.0, 2.0])
    w = t64([1.5, 2.0, -0.5])
    # f = sum(exp(x) * w + x^3 / 3)
    f = (x.exp() * w + x ** 3 / 3).sum()
    f.backward()
    xs, ws = [0.5, -1.0, 2.0], [1.5, 2.0, -0.5]
    assert close(x.grad, [math.exp(a) * b + a * a for a, b in zip(xs, ws)])
    assert close(w.grad, [math.exp(a) for a in xs])


def test_matmul_gradient():
    a = t64([[1.0, 2.0], [3.0, 4.0]])
    b = t64([[0.5, -1.0], [2.0, 1.0]])
    (a @ b).sum().backward()
    # d/da sum(a@b) = ones @ b^T ; d/db = a^T @ ones
    assert close(a.grad, [[-0.5, 3.0], [-0.5, 3.0]])
    assert close(b.grad, [[4.0, 4.0], [6.0, 6.0]])


def test_gradcheck_on_composed_functions():
    x = ember.randn(3, 2, dtype=ember.float64, requires_grad=True)
    y = ember.randn(2, 4, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda a, b: (a @ b).tanh() * a.sum(), (x, y))
    assert gradcheck(lambda a: (a.exp() / (1 + a * a)).sum(1), (x,))


def test_gradcheck_detects_a_wrong_gradient():
    class BadSquare(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x  # should be 2 * x

    x = ember.randn(3, dtype=ember.float64, requires_grad=True)
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradcheck(BadSquare.apply, (x,))
    assert gradcheck(BadSquare.apply, (x,), raise_exception=False) is False


def test_backward_with_gradient_and_non_scalar_error():
    x = ember.ones(3, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        y.backward()
    y.backward(ember.tensor([1.0, 2.0, 3.0]))
    assert x.grad.tolist() == [2.0, 4.0, 6.0]
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        ember.ones(2).sum().backward()


def test_backward_twice_raises_and_retain_graph_allows_it():
    x = ember.ones(2, requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert close(x.grad, [4 * math.e] * 2)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_autograd_backward_function_and_inputs():
    x = ember.ones(2, requires_grad=True)
    w = ember.full((2,), 3.0, requires_grad=True)
    a, b = (x * w).sum(), (x * x).sum()
    ember.autograd.backward([a, b])
    assert x.grad.tolist() == [5.0, 5.0] and w.grad.tolist() == [1.0, 1.0]
    x.grad = None
    w.grad = None
    ember.autograd.backward(x * w, grad_tensors=ember.tensor([1.0, 2.0]), inputs=[w])
    assert w.grad.tolist() == [1.0, 2.0] and x.grad is None
    with pytest.raises(TypeError, match="element 1 of argument 'tensors' must be a Tensor"):
        ember.autograd.backward([a, 3])


def test_autograd_grad():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    z = ember.ones(2, requires_grad=True)
    y = (x ** 2).sum()
    (gx,) = ember.autograd.grad(y, x, retain_graph=True)
    assert gx.tolist() == [2.0, 4.0] and x.grad is None and not gx.requires_grad
    assert isinstance(ember.autograd.grad(y, [x], retain_graph=True), tuple)
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        ember.autograd.grad(y, [x, z], retain_graph=True)
    gx, gz = ember.autograd.grad(y, [x, z], allow_unused=True, retain_graph=True)
    assert gz is None and gx.tolist() == [2.0, 4.0]
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors does not require grad"):
        ember.autograd.grad(y, [ember.ones(2)])
    (g,) = ember.autograd.grad([x * 3], [x], grad_outputs=[ember.tensor([1.0, -1.0])])
    assert g.tolist() == [3.0, -3.0]


def test_create_graph_double_backward():
    x = ember.tensor([2.0, 3.0], requires_grad=True)
    y = (x ** 3).sum()
    (g,) = ember.autograd.grad(y, x, create_graph=True)
    assert g.requires_grad and g.tolist() == [12.0, 27.0]
    (gg,) = ember.autograd.grad(g.sum(), x)
    assert gg.tolist() == [12.0, 18.0]  # 6x
    # backward(create_graph=True) leaves a differentiable .grad
    x2 = ember.tensor(1.5, requires_grad=True)
    (x2 ** 4).backward(create_graph=True)
    assert x2.grad.requires_grad and close(x2.grad.item(), 4 * 1.5 ** 3)
    (h,) = ember.autograd.grad(x2.grad, x2)
    assert close(h.item(), 12 * 1.5 ** 2)


# ---------------------------------------------------------------- hooks

def test_hooks_order_replacement_and_removal():
    calls = []
    x = ember.ones(2, requires_grad=True)
    y = x * 2
    h1 = y.register_hook(lambda g: calls.append(("first", g.tolist())))
    y.register_hook(lambda g: g * 10)
    y.register_hook(lambda g: calls.append(("third", g.tolist())))
    y.sum().backward()
    assert calls == [("first", [1.0, 1.0]), ("third", [10.0, 10.0])]
    assert x.grad.tolist() == [20.0, 20.0]

    calls.clear()
    x.grad = None
    y = x * 2
    h = y.register_hook(lambda g: calls.append("removed"))
    h.remove()
    h.remove()  # a second remove is harmless
    h1.remove()
    y.sum().backward()
    assert calls == [] and x.grad.tolist() == [2.0, 2.0]


def test_leaf_hook_and_retain_grad():
    x = ember.ones(3, requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.tolist()) or g * 0.5)
    y = x * 4
    y.retain_grad()
    assert y.retains_grad and not x.retains_grad
    y.sum().backward()
    assert seen == [[4.0] * 3] and x.grad.tolist() == [2.0] * 3
    assert y.grad.tolist() == [1.0] * 3
    z = x * 4
    z.sum().backward()
    assert z.grad is None  # a non-leaf keeps no .grad unless asked
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        ember.ones(2).register_hook(lambda g: g)
    with pytest.raises(TypeError, match="must be callable"):
        x.register_hook(3)


def test_hook_exception_propagates_with_its_type():
    x = ember.ones(2, requires_grad=True)
    y = x * 2

    def bad(g):
        raise KeyError("from the hook")

    y.register_hook(bad)
    with pytest.raises(KeyError, match="from the hook"):
        y.sum().backward()


def test_hook_handle_as_context_manager_and_post_accumulate_hook():
    x = ember.ones(2, requires_grad=True)
    seen = []
    with (x * 1).register_hook(lambda g: seen.append(1)):
        pass
    x.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.tolist()))
    (x * 3).sum().backward()
    assert seen == [[3.0, 3.0]]


# ---------------------------------------------------------------- grad mode

def test_no_grad_context_and_decorator_forms():
    x = ember.ones(2, requires_grad=True)
    with ember.no_grad():
        assert not ember.is_grad_enabled()
        assert not (x * 2).requires_grad
        with ember.enable_grad():
            assert (x * 2).requires_grad
        assert not (x * 2).requires_grad
    assert ember.is_grad_enabled() and (x * 2).requires_grad

    @ember.no_grad()
    def called_form(t):
        return t * 2

    @ember.no_grad
    def bare_form(t):
        return t * 2

    assert not called_form(x).requires_grad and not bare_form(x).requires_grad
    assert called_form.__name__ == "called_form"

    @ember.enable_grad()
    def enabled(t):
        return t * 2

    with ember.no_grad():
        assert enabled(x).requires_grad
    assert ember.autograd.no_grad is ember.no_grad
    assert ember.autograd.grad_mode.no_grad is ember.no_grad


def test_grad_mode_restored_after_exception():
    with pytest.raises(ValueError):
        with ember.no_grad():
            raise ValueError("x")
    assert ember.is_grad_enabled()


def test_set_grad_enabled_forms():
    x = ember.ones(1, requires_grad=True)
    with ember.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert ember.is_grad_enabled()
    ember.set_grad_enabled(False)  # plain call takes effect at once
    try:
        assert not ember.is_grad_enabled()
    finally:
        ember.set_grad_enabled(True)

    @ember.set_grad_enabled(False)
    def f(t):
        return t * 2

    assert ember.is_grad_enabled()  # decorating does not change the mode
    assert not f(x).requires_grad and ember.is_grad_enabled()


def test_inference_mode():
    x = ember.ones(2, requires_grad=True)
    assert not ember.is_inference_mode_enabled()
    with ember.inference_mode():
        assert ember.is_inference_mode_enabled() and not ember.is_grad_enabled()
        assert not (x * 2).requires_grad
        with ember.inference_mode(False):
            assert not ember.is_inference_mode_enabled() and ember.is_grad_enabled()
    assert not ember.is_inference_mode_enabled() and ember.is_grad_enabled()

    @ember.inference_mode()
    def f(t):
        return t * 2

    @ember.inference_mode
    def g(t):
        return t * 2

    assert not f(x).requires_grad and not g(x).requires_grad


def test_decorated_generator_runs_in_the_mode():
    @ember.no_grad()
    def gen():
        for _ in range(2):
            yield ember.is_grad_enabled()

    it = gen()
    assert next(it) is False
    assert ember.is_grad_enabled()  # the caller's mode between resumptions
    assert next(it) is False


def test_grad_mode_is_thread_local():
    results = {}

    def worker():
        results["enabled"] = ember.is_grad_enabled()
        with ember.no_grad():
            results["inner"] = ember.is_grad_enabled()

    with ember.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert not ember.is_grad_enabled()  # the thread's no_grad did not leak here either
    assert results == {"enabled": True, "inner": False}


# ---------------------------------------------------------------- custom Functions

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


def test_function_exp():
    x = t64([0.0, 1.0, -2.0])
    y = Exp.apply(x)
    assert y.grad_fn.name() == "ExpBackward" and type(y.grad_fn).__name__ == "ExpBackward"
    y.sum().backward()
    assert close(x.grad, [math.exp(v) for v in [0.0, 1.0, -2.0]])
    assert gradcheck(Exp.apply, (t64([0.3, -0.7]),))
    with ember.no_grad():
        assert not Exp.apply(x).requires_grad


def test_function_multiple_outputs_none_grads_and_non_tensor_args():
    seen = {}

    class ScaleSplit(Function):
        @staticmethod
        def forward(ctx, x, k, y, name="unused"):
            seen["needs"] = ctx.needs_input_grad
            ctx.k = k
            ctx.save_for_backward(x, y)
            return x * k, x + y, k + 1

        @staticmethod
        def backward(ctx, ga, gb, gc):
            seen["gc"] = gc
            x, y = ctx.saved_tensors
            return ga * ctx.k + gb, None, None

    x = t64([1.0, 2.0])
    y = t64([3.0, 4.0], requires_grad=False)
    a, b, c = ScaleSplit.apply(x, 3.0, y)
    assert c == 4.0 and seen["needs"] == (True, False, False)
    assert a.grad_fn is b.grad_fn and a.grad_fn.k == 3.0  # the node answers for its ctx
    assert a.grad_fn.needs_input_grad == (True, False, False)
    (a.sum() + 2 * b.sum()).backward()
    assert x.grad.tolist() == [5.0, 5.0] and y.grad is None
    assert seen["gc"] is None


def test_function_unused_output_gets_zeros_and_non_differentiable_output():
    class TwoOut(Function):
        @staticmethod
        def forward(ctx, x):
            idx = (x > 0).to(ember.float32)
            ctx.mark_non_differentiable(idx)
            return x * 2, idx

        @staticmethod
        def backward(ctx, g, gidx):
            assert gidx.tolist() == [0.0, 0.0]
            return g * 2

    x = ember.tensor([1.0, -1.0], requires_grad=True)
    y, idx = TwoOut.apply(x)
    assert y.requires_grad and not idx.requires_grad
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_function_with_setup_context():
    class Mul(Function):
        @staticmethod
        def forward(x, k):
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, k = inputs
            ctx.k = k
            ctx.save_for_backward(output)

        @staticmethod
        def backward(ctx, g):
            (out,) = ctx.saved_tensors
            return g * ctx.k, None

    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = Mul.apply(x, 4.0)
    assert y.tolist() == [4.0, 8.0] and y.grad_fn.saved_tensors[0].tolist() == [4.0, 8.0]
    y.sum().backward()
    assert x.grad.tolist() == [4.0, 4.0]


def test_function_errors():
    class WrongType(Function):
        @staticmethod
        def forward(ctx, x, n):
            return x * n

        @staticmethod
        def backward(ctx, g):
            return g, g

    x = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="returned a gradient different than None at position 2"):
        WrongType.apply(x, 2).sum().backward()

    class Raises(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        Raises.apply(x).sum().backward()

    class TooFew(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="returned an incorrect number of gradients \\(expected 2, got 1\\)"):
        TooFew.apply(x, x).sum().backward()

    class ForwardRaises(Function):
        @staticmethod
        def forward(ctx, x):
            raise ValueError("bad forward")

    with pytest.raises(ValueError, match="bad forward"):
        ForwardRaises.apply(x)
    assert ember.is_grad_enabled()

    class SaveNumber(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(3)
            return x

    with pytest.raises(TypeError, match="save_for_backward can only save variables"):
        SaveNumber.apply(x)


def test_function_saved_tensors_freed_after_backward():
    x = ember.ones(2, requires_grad=True)
    y = Exp.apply(x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_function_double_backward():
    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = ember.tensor([3.0], requires_grad=True)
    (g,) = ember.autograd.grad(Square.apply(x).sum(), x, create_graph=True)
    (gg,) = ember.autograd.grad(g.sum(), x)
    assert g.tolist() == [6.0] and gg.tolist() == [2.0]


def test_function_returning_its_input():
    class Identity(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 3

    x = ember.ones(2, requires_grad=True)
    y = Identity.apply(x)
    assert y.grad_fn.name() == "IdentityBackward"
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_function_ctx_freed_with_the_graph():
    import weakref

    class Keep(Function):
        @staticmethod
        def forward(ctx, x):
            seen.append(weakref.ref(ctx))
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    seen = []
    x = ember.ones(2, requires_grad=True)
    y = Keep.apply(x)
    assert seen[0]() is not None
    del y
    gc.collect()
    assert seen[0]() is None


# ---------------------------------------------------------------- .data

def test_data_setter_visible_through_other_references():
    p = ember.ones(3, requires_grad=True)
    holder = {"param": p}
    alias = [p]
    p.data = ember.tensor([5.0, 6.0, 7.0, 8.0])
    assert holder["param"].tolist() == [5.0, 6.0, 7.0, 8.0] and alias[0].shape == (4,)
    assert p.requires_grad and p.is_leaf
    (p * 2).sum().backward()  # the new shape works in a new graph
    assert p.grad.tolist() == [2.0] * 4
    with pytest.raises(RuntimeError, match="must be floating point"):
        p.data = ember.zeros(4, dtype=ember.int64)


def test_data_getter_is_detached_alias_outside_version_tracking():
    p = ember.ones(2, requires_grad=True)
    d = p.data
    assert not d.requires_grad and d.data_ptr() == p.data_ptr()
    y = (p * p).sum()  # saves p
    v = p._version
    d.mul_(3)  # an optimizer-style update through .data is invisible to autograd's checks
    assert p.tolist() == [3.0, 3.0] and p._version == v
    y.backward()
    assert p.grad.tolist() == [6.0, 6.0]


# ---------------------------------------------------------------- misc API

def test_variable_and_anomaly_switches():
    x = ember.ones(2)
    v = ember.autograd.Variable(x, requires_grad=True)
    assert v.requires_grad and not x.requires_grad and isinstance(x, ember.autograd.Variable)
    with ember.autograd.detect_anomaly():
        assert ember.autograd.is_anomaly_enabled()
    assert not ember.autograd.is_anomaly_enabled()


def test_long_chain_backward():
    x = ember.ones(1, requires_grad=True)
    y = x
    for _ in range(2000):
        y = y * 1.0001
    y.sum().backward()
    assert close(x.grad.item(), 1.0001 ** 2000, 1e-4)


# ---------------------------------------------------------------- against torch

def test_gradients_match_torch(torch_ref):
    torch = torch_ref
    vals = [[0.3, -1.2, 2.0], [1.1, 0.4, -0.7]]
    wv = [[0.5, -0.3], [1.5, 0.2], [-0.8, 0.9]]

    def run(lib):
        x = lib.tensor(vals, dtype=lib.float64, requires_grad=True)
        w = lib.tensor(wv, dtype=lib.float64, requires_grad=True)
        h = (x @ w).tanh()
        h.retain_grad()
        loss = (h.exp() * h.sigmoid()).sum() + (x ** 2).mean()
        (gx,) = lib.autograd.grad(loss, x, create_graph=True)
        (gx.pow(2).sum()).backward()
        return x.grad.tolist(), w.grad.tolist(), h.grad.tolist()

    for got, want in zip(run(ember), run(torch)):
        assert close(got, want)


def test_grad_fn_names_and_function_match_torch(torch_ref):
    torch = torch_ref

    def names(lib):
        x = lib.ones(2, requires_grad=True)
        return [(x * 2).grad_fn.name(), (x + 1).grad_fn.name(), x.exp().grad_fn.name(),
                type((x * 2).grad_fn.next_functions[0][0]).__name__]

    assert names(ember) == names(torch)

    def run(lib):
        class Cube(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, k):
                ctx.save_for_backward(x)
                ctx.k = k
                return x ** 3 * k

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 3 * x ** 2 * g * ctx.k, None

        x = lib.tensor([1.0, -2.0], requires_grad=True)
        y = Cube.apply(x, 2.0)
        y.sum().backward()
        return y.grad_fn.name(), x.grad.tolist()

    assert run(ember) == run(torch)


def test_relu_backward_lets_nan_through_as_torch():
    # torch's threshold_backward zeroes where the output is <= 0: a NaN output passes its gradient.
    x = ember.tensor([float("nan"), -1.0, 0.0, 2.0], requires_grad=True)
    x.relu().backward(ember.full((4,), 3.0))
    assert math.isnan(x.relu()[0].item())
    assert x.grad.tolist() == [3.0, 0.0, 0.0, 3.0]


def test_linear_gradients_reach_leaves_without_copies():
    # addmm's weight gradient is a transpose of a fresh product and its bias gradient a reshaped
    # sum: views whose base nobody else holds, which AccumulateGrad takes as they are.
    w = ember.randn(4, 3, requires_grad=True)
    b = ember.randn(4, requires_grad=True)
    x = ember.randn(8, 3)
    with ember.profiler.profile() as prof:
        ember.nn.functional.linear(x, w, b).pow(2).sum().backward()
    assert sum(e.count for e in prof.key_averages() if e.key == "aten::clone") == 0
    assert w.grad.is_contiguous() and w.grad.shape == (4, 3) and b.grad.shape == (4,)
    g = 2 * (x @ w.detach().t() + b.detach())
    assert close(w.grad, g.t() @ x, 1e-5) and close(b.grad, g.sum(0), 1e-5)
    # a second backward accumulates into the taken tensors
    ember.nn.functional.linear(x, w, b).pow(2).sum().backward()
    assert close(w.grad, 2 * (g.t() @ x), 1e-5)


def test_bool_operands_in_float_ops():
    m = ember.tensor([True, False, True, True])
    f = ember.tensor([1.5, 2.0, -3.0, 4.0])
    assert (f * m).tolist() == [1.5, 0.0, -3.0, 4.0]
    assert m.to(ember.float32).tolist() == [1.0, 0.0, 1.0, 1.0]
    assert m.to(ember.int32).tolist() == [1, 0, 1, 1]
    assert (m & ember.tensor([True, True, False, True])).tolist() == [True, False, False, True]
    assert f.masked_fill(m, 0.5).tolist() == [0.5, 2.0, 0.5, 0.5]
    assert (f[::2] * m[::2]).tolist() == [1.5, -3.0]  # strided bool operand


def test_gradients_gathering_in_a_buffer_leave_shared_tensors_alone():
    # The engine adds a second gradient into the first in place only when nothing else holds the
    # first: a tensor a custom backward also keeps elsewhere stays as it was.
    kept = ember.ones(3)

    class Keep(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return kept

    x = ember.zeros(3, requires_grad=True)
    (Keep.apply(x) + Keep.apply(x) + Keep.apply(x)).sum().backward()
    assert kept.tolist() == [1.0, 1.0, 1.0]
    assert x.grad.tolist() == [3.0, 3.0, 3.0]
    # a weight read at every step of a loop gathers every step's share
    w = ember.randn(4, 4, requires_grad=True)
    h = ember.randn(2, 4)
    out = h
    for _ in range(5):
        out = (out @ w).tanh()
    out.sum().backward()
    w2 = w.detach().clone().requires_grad_()
    out2 = h
    for _ in range(5):
        out2 = (out2 @ w2).tanh()
    g = ember.autograd.grad(out2.sum(), w2, create_graph=True)[0]  # (the out-of-place path)
    assert close(w.grad, g.detach(), 1e-6)
    y = ember.randn(3, requires_grad=True) * 2
    y.retain_grad()
    (y * 3 + y * 4).sum().backward()
    assert y.grad.tolist() == [7.0, 7.0, 7.0]
