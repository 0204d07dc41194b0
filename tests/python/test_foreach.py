"""torch._foreach_norm / torch._foreach_mul_ (multi-tensor ops) against PyTorch on the CPU and, on a
GPU, ember's CUDA kernels against its CPU loop; clip_grad_norm_ through them."""
import math

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # (the README's test command installs no PyTorch: those comparisons skip)
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed: differential test skipped")

NO_GPU = "no CUDA GPU on this machine: the CUDA backend compiled but did not run"
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not ember.cuda.is_available(), reason=NO_GPU))]


def arrays(seed=0, count=53):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(n).astype(np.float32) for n in [1, 5, 4097, 20000] + list(range(7, 7 + count))]


@needs_torch
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("ord", [2.0, 1.0, math.inf, 3.0])
def test_foreach_norm_matches_torch(device, ord):
    xs = arrays()
    got = ember._foreach_norm([ember.tensor(x, device=device) for x in xs], ord)
    want = torch._foreach_norm([torch.tensor(x) for x in xs], ord)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == () and g.dtype == ember.float32
        np.testing.assert_allclose(g.item(), w.item(), rtol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_foreach_mul_in_place(device):
    xs = arrays(1, 60)
    ts = [ember.tensor(x, device=device) for x in xs]
    ember._foreach_mul_(ts, ember.tensor(0.5, device=device))
    ember._foreach_mul_(ts, 3)
    for t, x in zip(ts, xs):
        np.testing.assert_allclose(t.cpu().numpy(), x * 1.5, rtol=1e-6)


def test_foreach_errors():
    with pytest.raises(RuntimeError, match="at least one tensor"):
        ember._foreach_norm([])
    with pytest.raises(RuntimeError, match="one element"):
        ember._foreach_mul_([ember.zeros(2)], ember.zeros(2))


@needs_torch
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("norm_type", [2.0, math.inf])
def test_clip_grad_norm_many_parameters(device, norm_type):
    """More gradients than one CUDA batch (48), as a GPT's 149: total norm and scaled gradients as torch."""
    xs = arrays(2, 70)
    ps, tps = [], []
    for x in xs:
        p = ember.zeros(x.shape, device=device, requires_grad=True)
        p.grad = ember.tensor(x, device=device)
        ps.append(p)
        tp = torch.zeros(x.shape, requires_grad=True)
        tp.grad = torch.tensor(x)
        tps.append(tp)
    total = ember.nn.utils.clip_grad_norm_(ps, 0.5, norm_type)
    want = torch.nn.utils.clip_grad_norm_(tps, 0.5, norm_type)
    np.testing.assert_allclose(total.item(), want.item(), rtol=1e-5)
    for p, tp in zip(ps, tps):
        np.testing.assert_allclose(p.grad.cpu().numpy(), tp.grad.numpy(), rtol=1e-5, atol=1e-7)


# ---------------------------------------------------------------- the whole family against torch
def _lists(seed=3, positive=False):
    rng = np.random.default_rng(seed)
    xs = [rng.uniform(0.1, 2.0, n) if positive else rng.standard_normal(n) for n in (1, 4, 7, 33)]
    return [x.astype(np.float32) for x in xs]


def _both(xs):
    return [ember.tensor(x) for x in xs], [torch.tensor(x) for x in xs]


def _same(got, want, rtol=1e-5):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=rtol, atol=1e-6)


UNARY = ["abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1", "floor", "frac",
         "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal", "round", "sigmoid", "sin", "sinh", "sqrt",
         "tan", "tanh", "trunc"]


@needs_torch
@pytest.mark.parametrize("op", UNARY)
def test_unary_family_matches_torch(op):
    positive = op in ("log", "log10", "log2", "sqrt", "lgamma", "reciprocal")
    xs = [x * (0.9 if op in ("acos", "asin") else 1) for x in _lists(positive=positive)]
    if op in ("acos", "asin"):
        xs = [np.clip(x, -0.9, 0.9).astype(np.float32) for x in xs]
    e, t = _both(xs)
    _same(getattr(ember, f"_foreach_{op}")(e), getattr(torch, f"_foreach_{op}")(t))
    assert getattr(ember, f"_foreach_{op}_")(e) is None
    getattr(torch, f"_foreach_{op}_")(t)
    _same(e, t)


@needs_torch
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "maximum", "minimum"])
def test_binary_family_matches_torch(op):
    xs, ys = _lists(4), _lists(5, positive=True)
    e, t = _both(xs)
    e2, t2 = _both(ys)
    fe, ft = getattr(ember, f"_foreach_{op}"), getattr(torch, f"_foreach_{op}")
    _same(fe(e, e2), ft(t, t2))                                   # list with list
    if op not in ("maximum", "minimum"):                          # torch 1.13 has no scalar forms of these
        _same(fe(e, 1.5), ft(t, 1.5))                             # one scalar
        _same(fe(e, [0.5, 2.0, -1.0, 3.0]), ft(t, [0.5, 2.0, -1.0, 3.0]))  # a scalar each
    if op in ("add", "sub"):
        _same(fe(e, e2, alpha=0.25), ft(t, t2, alpha=0.25))
    getattr(ember, f"_foreach_{op}_")(e, e2)
    getattr(torch, f"_foreach_{op}_")(t, t2)
    _same(e, t)


@needs_torch
def test_pointwise_lerp_zero_and_errors_match_torch():
    xs, ys, zs = _lists(6), _lists(7), _lists(8, positive=True)
    e, t = _both(xs)
    e1, t1 = _both(ys)
    e2, t2 = _both(zs)
    _same(ember._foreach_addcmul(e, e1, e2, 0.5), torch._foreach_addcmul(t, t1, t2, 0.5))
    _same(ember._foreach_addcdiv(e, e1, e2, [1.0, 2.0, 3.0, 4.0]), torch._foreach_addcdiv(t, t1, t2, [1.0, 2.0, 3.0, 4.0]))
    ember._foreach_addcdiv_(e, e1, e2, value=-0.5)
    torch._foreach_addcdiv_(t, t1, t2, value=-0.5)
    _same(e, t)
    if hasattr(torch, "_foreach_lerp"):
        _same(ember._foreach_lerp(e, e1, 0.3), torch._foreach_lerp(t, t1, 0.3))
    ember._foreach_lerp_(e, e1, 0.3)
    for a, b in zip(e, [x + 0.3 * (y - x) for x, y in zip(t, t1)]):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    ember._foreach_zero_(e)
    assert all(float(x.abs().sum()) == 0 for x in e)
    with pytest.raises(RuntimeError, match="same number of tensors, got 4 and 3"):
        ember._foreach_add(e, e1[:3])
    with pytest.raises(RuntimeError, match="at least one tensor"):
        ember._foreach_sqrt([])
    with pytest.raises(TypeError, match="list of tensors"):
        ember._foreach_exp(e[0])


@needs_torch
def test_a_foreach_optimizer_step_matches_torch():
    """An Adam-like update written with _foreach ops (as torch.optim's foreach paths), both sides."""
    (ep, tp), (eg, tg) = _both(_lists(9)), _both(_lists(10))

    def step(T, ps, grads):
        m = T._foreach_mul(grads, 0.1)
        v = T._foreach_mul(grads, grads)
        denom = T._foreach_add(T._foreach_sqrt(v), 1e-8)
        T._foreach_addcdiv_(ps, m, denom, value=-0.01)
    step(ember, ep, eg)
    step(torch, tp, tg)
    _same(ep, tp)


@needs_torch
@pytest.mark.skipif(not hasattr(torch, "_foreach_pow"), reason="this torch (< 2) has no _foreach_pow/clamp/lerp/max")
def test_torch2_forms_match_torch():
    """The forms torch 2 added: pow (with a scalar base too), clamp_min/max, scalar maximum/minimum,
    rsqrt, sign, max, lerp, a one-element tensor as the other operand, a tensor of values."""
    xs = _lists(11, positive=True)

    def pair(a):
        if a == "list":
            return _both(xs)
        if a == "tensor":
            return ember.tensor(3.0), torch.tensor(3.0)
        return a, a
    for op, args in [("pow", (2.5,)), ("pow", ([1.0, 2.0, 0.5, 3.0],)), ("clamp_min", (1.0,)),
                     ("clamp_max", ([0.5, 1.0, 1.5, 2.0],)), ("maximum", (1.0,)), ("minimum", ([1.0, 0.3, 2.0, 1.0],)),
                     ("rsqrt", ()), ("sign", ()), ("max", ()), ("lerp", ("list", 0.25)), ("mul", ("tensor",)),
                     ("div", ("tensor",))]:
        e, t = _both(xs)
        ea, ta = zip(*[pair(a) for a in args]) if args else ((), ())
        _same(getattr(ember, f"_foreach_{op}")(e, *ea), getattr(torch, f"_foreach_{op}")(t, *ta))
    _same(ember._foreach_pow(2.0, _both(xs)[0]), torch._foreach_pow(2.0, _both(xs)[1]))
    vals = [0.5, 1.0, 2.0, -1.0]
    (e, t), (e1, t1) = _both(xs), _both(_lists(12))
    _same(ember._foreach_addcmul(e, e1, e1, ember.tensor(vals)), torch._foreach_addcmul(t, t1, t1, torch.tensor(vals)))
