"""ember.distributions against torch.distributions (PyTorch 1.13 in .venv; skipped without it):
log_prob, entropy, mean, variance, stddev, cdf/icdf and KL divergences to 1e-6, shapes of
samples with sample_shape, expand, argument validation messages, sampling moments."""
import math
import sys
import types

import numpy as np
import pytest

import ember
import ember.distributions as ed

torch = pytest.importorskip("torch", reason="PyTorch not installed: differential test skipped")
import torch.distributions as td  # noqa: E402


def close(e, t, rtol=1e-6, atol=1e-7):
    e = e.detach().numpy() if isinstance(e, ember.Tensor) else np.asarray(e)
    t = t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
    assert e.shape == t.shape, (e.shape, t.shape)
    np.testing.assert_allclose(e, t, rtol=rtol, atol=atol, equal_nan=True)


def pair(a, dtype=np.float64):
    a = np.asarray(a, dtype=dtype)
    return ember.tensor(a), torch.tensor(a)


@pytest.fixture
def linalg_available(monkeypatch):
    """MultivariateNormal needs ember.linalg.cholesky / solve_triangular (another part of issue
    15 adds them). Until it exists, a NumPy stand-in (values only, no gradients) lets these tests
    check the distribution's own formulas."""
    try:
        from ember import linalg  # noqa: F401
        if hasattr(linalg, "cholesky") and hasattr(linalg, "solve_triangular"):
            return "ember"
    except ImportError:
        pass
    stand_in = types.ModuleType("ember.linalg")

    def cholesky(a):
        return ember.tensor(np.linalg.cholesky(a.detach().numpy()))

    def solve_triangular(a, b, *, upper, left=True):
        a_np, b_np = a.detach().numpy(), b.detach().numpy()
        batch = np.broadcast_shapes(a_np.shape[:-2], b_np.shape[:-2])
        a_np = np.broadcast_to(a_np, batch + a_np.shape[-2:])
        b_np = np.broadcast_to(b_np, batch + b_np.shape[-2:])
        return ember.tensor(np.linalg.solve(a_np, b_np))

    stand_in.cholesky = cholesky
    stand_in.solve_triangular = solve_triangular
    monkeypatch.setitem(sys.modules, "ember.linalg", stand_in)
    monkeypatch.setattr(ember, "linalg", stand_in, raising=False)
    return "stand-in"


def check_stats(e_dist, t_dist, value_e, value_t, fields=("mean", "variance", "stddev"), rtol=1e-6):
    close(e_dist.log_prob(value_e), t_dist.log_prob(value_t), rtol=rtol)
    close(e_dist.entropy(), t_dist.entropy(), rtol=rtol)
    for f in fields:
        close(getattr(e_dist, f), getattr(t_dist, f), rtol=rtol)
    assert tuple(e_dist.batch_shape) == tuple(t_dist.batch_shape)
    assert tuple(e_dist.event_shape) == tuple(t_dist.event_shape)


# ---------------------------------------------------------------- per family
def test_normal():
    (el, tl), (es, ts) = pair([0.0, 1.5, -2.0]), pair([1.0, 0.5, 3.0])
    e, t = ed.Normal(el, es), td.Normal(tl, ts)
    ve, vt = pair([[0.3, -1.0, 2.0], [5.0, 1.5, -2.0]])
    check_stats(e, t, ve, vt, fields=("mean", "variance", "stddev", "mode"))
    pe, pt = pair([0.1, 0.5, 0.97])
    close(e.cdf(ve), t.cdf(vt))
    close(e.icdf(pe), t.icdf(pt), rtol=1e-10)
    assert e.sample().shape == (3,) and e.sample((4, 2)).shape == (4, 2, 3) and e.rsample([5]).shape == (5, 3)
    s = ed.Normal(0.0, 1.0)
    assert s.batch_shape == () and s.sample((2,)).shape == (2,)
    assert repr(ed.Normal(ember.tensor(0.0), ember.tensor(1.0))) == repr(td.Normal(torch.tensor(0.0), torch.tensor(1.0))).replace("torch", "ember")


def test_normal_rsample_gradients_and_moments():
    loc = ember.tensor([1.0, -2.0], requires_grad=True)
    scale = ember.tensor([0.5, 2.0], requires_grad=True)
    ember.manual_seed(0)
    x = ed.Normal(loc, scale).rsample((20000,))
    x.mean().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [0.5, 0.5], rtol=1e-6)
    assert abs(float(x[:, 0].mean()) - 1.0) < 0.03 and abs(float(x[:, 1].std()) - 2.0) < 0.05
    assert not ed.Normal(loc, scale).sample().requires_grad


def test_uniform():
    (el, tl), (eh, th) = pair([0.0, -1.0]), pair([2.0, 3.0])
    e, t = ed.Uniform(el, eh), td.Uniform(tl, th)
    ve, vt = pair([0.5, 2.5])
    check_stats(e, t, ve, vt)
    close(e.cdf(ve), t.cdf(vt))
    close(e.icdf(ember.tensor([0.25, 0.5], dtype=ember.float64)), t.icdf(torch.tensor([0.25, 0.5], dtype=torch.float64)))
    s = e.sample((1000,))
    assert s.shape == (1000, 2) and bool((s >= el).all()) and bool((s < eh).all())
    with pytest.raises(ValueError, match="Uniform is not defined when low>= high"):
        ed.Uniform(ember.tensor([1.0]), ember.tensor([0.0]))
    ve2, vt2 = pair([2.0, -1.0])  # outside: log_prob -inf without validation
    close(ed.Uniform(el, eh, validate_args=False).log_prob(ve2), td.Uniform(tl, th, validate_args=False).log_prob(vt2))


@pytest.mark.parametrize("use_logits", [False, True])
def test_categorical(use_logits):
    p = np.array([[0.2, 0.3, 0.5, 0.0], [1.0, 2.0, 3.0, 4.0]])
    if use_logits:
        ee, tt = pair(np.log(p + 1e-3))
        e, t = ed.Categorical(logits=ee), td.Categorical(logits=tt)
    else:
        ee, tt = pair(p)
        e, t = ed.Categorical(probs=ee), td.Categorical(probs=tt)
    ve, vt = ember.tensor([[2, 1], [0, 3]]), torch.tensor([[2, 1], [0, 3]])
    check_stats(e, t, ve, vt, fields=("mean", "variance", "probs", "logits", "mode"))
    assert e.sample().shape == (2,) and e.sample((3, 5)).shape == (3, 5, 2)
    assert e.enumerate_support().tolist() == t.enumerate_support().tolist()
    counts = ember.bincount(ed.Categorical(probs=ember.tensor([0.1, 0.6, 0.3])).sample((20000,)), minlength=3)
    np.testing.assert_allclose(counts.numpy() / 20000, [0.1, 0.6, 0.3], atol=0.02)
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but not both."):
        ed.Categorical()


def test_bernoulli():
    ee, tt = pair([0.1, 0.5, 0.9, 0.0])
    e, t = ed.Bernoulli(probs=ee), td.Bernoulli(probs=tt)
    ve, vt = pair([1.0, 0.0, 1.0, 0.0])
    check_stats(e, t, ve, vt, fields=("mean", "variance", "logits", "mode"))
    le, lt = pair([-2.0, 0.0, 3.0])
    e, t = ed.Bernoulli(logits=le), td.Bernoulli(logits=lt)
    ve, vt = pair([1.0, 0.0, 1.0])
    check_stats(e, t, ve, vt, fields=("mean", "variance", "probs"))
    s = ed.Bernoulli(probs=ember.full((10000,), 0.3)).sample()
    assert abs(float(s.mean()) - 0.3) < 0.02 and set(s.unique().tolist()) <= {0.0, 1.0}


def test_gamma_beta_dirichlet():
    (ec, tc), (er, tr) = pair([0.5, 2.0, 7.5]), pair([1.0, 3.0, 0.2])
    e, t = ed.Gamma(ec, er), td.Gamma(tc, tr)
    ve, vt = pair([0.3, 1.0, 40.0])
    check_stats(e, t, ve, vt, fields=("mean", "variance", "stddev", "mode"))
    # torch 1.13's Gamma has no cdf yet (2.x's is igamma(concentration, rate * value))
    close(e.cdf(ve), torch.special.gammainc(tc, tr * vt), rtol=1e-10)
    (e1, t1), (e0, t0) = pair([0.5, 2.0, 3.0]), pair([1.5, 2.0, 0.7])
    e, t = ed.Beta(e1, e0), td.Beta(t1, t0)
    ve, vt = pair([0.1, 0.5, 0.95])
    check_stats(e, t, ve, vt, fields=("mean", "variance", "concentration1", "concentration0"))
    ec, tc = pair([[0.5, 2.0, 3.0], [1.0, 1.0, 1.0]])
    e, t = ed.Dirichlet(ec), td.Dirichlet(tc)
    ve, vt = pair([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])
    check_stats(e, t, ve, vt, fields=("mean", "variance"))
    ec, tc = pair([[2.0, 3.0, 4.0], [0.5, 0.2, 0.9]])
    close(ed.Dirichlet(ec).mode, td.Dirichlet(tc).mode)


@pytest.mark.parametrize("alpha", [0.3, 1.0, 4.5])
def test_gamma_sampling_moments(alpha):
    ember.manual_seed(1)
    x = ed.Gamma(ember.full((40000,), alpha, dtype=ember.float64), ember.tensor(2.0, dtype=ember.float64)).sample()
    assert bool((x > 0).all())
    mean, var = float(x.mean()), float(x.var())
    assert abs(mean - alpha / 2) < 0.03 * max(alpha / 2, 0.2), mean
    assert abs(var - alpha / 4) < 0.08 * max(alpha / 4, 0.1), var


def test_beta_and_dirichlet_sampling():
    ember.manual_seed(2)
    b = ed.Beta(ember.tensor([2.0]), ember.tensor([5.0])).sample((20000,))
    assert b.shape == (20000, 1) and abs(float(b.mean()) - 2 / 7) < 0.01
    d = ed.Dirichlet(ember.tensor([1.0, 2.0, 7.0])).sample((10000,))
    assert d.shape == (10000, 3)
    np.testing.assert_allclose(d.sum(-1).numpy(), 1.0, rtol=1e-5)
    np.testing.assert_allclose(d.mean(0).numpy(), [0.1, 0.2, 0.7], atol=0.01)


@pytest.mark.parametrize("param", ["covariance_matrix", "scale_tril", "precision_matrix"])
def test_multivariate_normal(param, linalg_available):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 3))
    cov = a @ a.transpose(0, 2, 1) + 3 * np.eye(3)
    mats = {"covariance_matrix": cov, "scale_tril": np.linalg.cholesky(cov), "precision_matrix": np.linalg.inv(cov)}
    loc = rng.standard_normal(3)
    e = ed.MultivariateNormal(ember.tensor(loc), **{param: ember.tensor(mats[param])})
    t = td.MultivariateNormal(torch.tensor(loc), **{param: torch.tensor(mats[param])})
    ve, vt = pair(rng.standard_normal((4, 2, 3)))
    check_stats(e, t, ve, vt, fields=("mean", "variance", "covariance_matrix", "scale_tril", "precision_matrix"),
                rtol=1e-9)
    assert e.sample().shape == (2, 3) and e.rsample((5,)).shape == (5, 2, 3)
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix or precision_matrix or scale_tril"):
        ed.MultivariateNormal(ember.tensor(loc))


def test_independent_normal():
    (el, tl), (es, ts) = pair(np.zeros((2, 3))), pair(np.full((2, 3), 2.0))
    e, t = ed.Independent(ed.Normal(el, es), 1), td.Independent(td.Normal(tl, ts), 1)
    ve, vt = pair(np.arange(6.0).reshape(2, 3))
    check_stats(e, t, ve, vt)
    close(ed.kl_divergence(e, ed.Independent(ed.Normal(el + 1, es), 1)),
          td.kl_divergence(t, td.Independent(td.Normal(tl + 1, ts), 1)))


# ---------------------------------------------------------------- shapes, expand, validation
def test_expand_and_shapes():
    e = ed.Normal(ember.tensor([0.0, 1.0]), ember.tensor([1.0, 2.0])).expand((3, 2))
    assert e.batch_shape == (3, 2) and e.sample((4,)).shape == (4, 3, 2)
    c = ed.Categorical(probs=ember.tensor([0.5, 0.5])).expand([5])
    assert c.batch_shape == (5,) and c.sample().shape == (5,)
    d = ed.Dirichlet(ember.tensor([1.0, 2.0])).expand((4,))
    assert d.batch_shape == (4,) and d.event_shape == (2,) and d.sample().shape == (4, 2)
    b = ed.Beta(ember.tensor([2.0]), ember.tensor([3.0])).expand((2, 1))
    assert b.batch_shape == (2, 1)
    assert ed.Bernoulli(logits=ember.zeros(3)).expand((2, 3)).sample().shape == (2, 3)
    assert ed.Gamma(ember.ones(1), ember.ones(1)).expand((6,)).sample().shape == (6,)
    assert ed.Uniform(ember.zeros(1), ember.ones(1)).expand((2, 1)).batch_shape == (2, 1)


def test_validation_messages_match_torch():
    def message(fn):
        with pytest.raises(ValueError) as info:
            fn()
        return str(info.value)

    em = message(lambda: ed.Normal(ember.tensor([0.0]), ember.tensor([-1.0])))
    tm = message(lambda: td.Normal(torch.tensor([0.0]), torch.tensor([-1.0])))
    assert em.replace("ember", "torch") == tm
    em = message(lambda: ed.Normal(ember.zeros(2), ember.ones(2)).log_prob(ember.ones(3)))
    tm = message(lambda: td.Normal(torch.zeros(2), torch.ones(2)).log_prob(torch.ones(3)))
    assert em.replace("ember", "torch") == tm
    em = message(lambda: ed.Bernoulli(probs=ember.tensor([0.5])).log_prob(ember.tensor([0.5])))
    tm = message(lambda: td.Bernoulli(probs=torch.tensor([0.5])).log_prob(torch.tensor([0.5])))
    assert em.replace("ember", "torch") == tm
    em = message(lambda: ed.Categorical(probs=ember.tensor([0.5, 0.5])).log_prob(ember.tensor([3])))
    tm = message(lambda: td.Categorical(probs=torch.tensor([0.5, 0.5])).log_prob(torch.tensor([3])))
    assert em.replace("ember", "torch") == tm
    em = message(lambda: ed.Gamma(ember.tensor([1.0]), ember.tensor([0.0])))
    tm = message(lambda: td.Gamma(torch.tensor([1.0]), torch.tensor([0.0])))
    assert em.replace("ember", "torch") == tm
    em = message(lambda: ed.Dirichlet(ember.tensor([1.0, 1.0])).log_prob(ember.tensor([0.5, 0.6])))
    tm = message(lambda: td.Dirichlet(torch.tensor([1.0, 1.0])).log_prob(torch.tensor([0.5, 0.6])))
    assert em.replace("ember", "torch") == tm
    ed.Normal(ember.tensor([0.0]), ember.tensor([-1.0]), validate_args=False)  # no check when off
    with pytest.raises(ValueError, match="must be a Tensor"):
        ed.Normal(0.0, 1.0).log_prob(0.5)


def test_constraint_reprs_match_torch():
    from ember.distributions import constraints as ec
    from torch.distributions import constraints as tc
    for name in ("real", "positive", "nonnegative", "unit_interval", "simplex", "boolean", "real_vector",
                 "lower_cholesky", "positive_definite", "nonnegative_integer"):
        assert repr(getattr(ec, name)) == repr(getattr(tc, name)), name
    assert repr(ec.interval(0.0, 2.0)) == repr(tc.interval(0.0, 2.0))
    assert repr(ec.integer_interval(0, 4)) == repr(tc.integer_interval(0, 4))
    assert repr(ec.greater_than(1.5)) == repr(tc.greater_than(1.5))


# ---------------------------------------------------------------- KL divergences
def test_kl_pairs_match_torch(linalg_available):
    rng = np.random.default_rng(3)
    cases = []
    (a, ta), (b, tb), (c, tc), (d, tdd) = (pair(rng.random(4) + 0.2) for _ in range(4))
    cases.append((ed.Normal(a, b), ed.Normal(c, d), td.Normal(ta, tb), td.Normal(tc, tdd)))
    cases.append((ed.Gamma(a, b), ed.Gamma(c, d), td.Gamma(ta, tb), td.Gamma(tc, tdd)))
    cases.append((ed.Beta(a, b), ed.Beta(c, d), td.Beta(ta, tb), td.Beta(tc, tdd)))
    (p, tp), (q, tq) = pair(rng.random((2, 4))), pair(rng.random((2, 4)))
    cases.append((ed.Categorical(probs=p), ed.Categorical(probs=q), td.Categorical(probs=tp), td.Categorical(probs=tq)))
    cases.append((ed.Dirichlet(p + 0.5), ed.Dirichlet(q + 0.1), td.Dirichlet(tp + 0.5), td.Dirichlet(tq + 0.1)))
    (bp, tbp), (bq, tbq) = pair([0.0, 0.3, 1.0, 0.5]), pair([0.2, 0.0, 1.0, 1.0])
    cases.append((ed.Bernoulli(probs=bp), ed.Bernoulli(probs=bq), td.Bernoulli(probs=tbp), td.Bernoulli(probs=tbq)))
    (l1, tl1), (h1, th1), (l2, tl2), (h2, th2) = pair([0.0, 0.0]), pair([1.0, 2.0]), pair([-1.0, 0.5]), pair([2.0, 3.0])
    cases.append((ed.Uniform(l1, h1), ed.Uniform(l2, h2), td.Uniform(tl1, th1), td.Uniform(tl2, th2)))
    a_ = rng.standard_normal((3, 3))
    cov1, cov2 = a_ @ a_.T + np.eye(3), np.diag([1.0, 2.0, 3.0])
    m1, m2 = rng.standard_normal(3), rng.standard_normal(3)
    cases.append((ed.MultivariateNormal(ember.tensor(m1), ember.tensor(cov1)),
                  ed.MultivariateNormal(ember.tensor(m2), ember.tensor(cov2)),
                  td.MultivariateNormal(torch.tensor(m1), torch.tensor(cov1)),
                  td.MultivariateNormal(torch.tensor(m2), torch.tensor(cov2))))
    for ep, eq, tp_, tq_ in cases:
        close(ed.kl_divergence(ep, eq), td.kl_divergence(tp_, tq_), rtol=1e-9)


def test_register_kl_and_missing_pair():
    class MyNormal(ed.Normal):
        pass

    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented"):
        ed.kl_divergence(ed.Normal(0.0, 1.0), ed.Cauchy(0.0, 1.0))  # (Normal, Gamma) is inf, as torch
    # a subclass falls back to its base's formula until it registers its own
    n = ed.kl_divergence(MyNormal(0.0, 1.0), ed.Normal(1.0, 1.0))
    assert abs(float(n) - 0.5) < 1e-7

    @ed.register_kl(MyNormal, ed.Normal)
    def _kl_mine(p, q):
        return ember.tensor(42.0)

    assert float(ed.kl_divergence(MyNormal(0.0, 1.0), ed.Normal(1.0, 1.0))) == 42.0
    assert abs(float(ed.kl_divergence(ed.Normal(0.0, 1.0), ed.Normal(1.0, 1.0))) - 0.5) < 1e-7


def test_log_prob_gradients_match_torch():
    (el, tl), (es, ts) = pair([0.5, -1.0]), pair([1.2, 0.7])
    el.requires_grad_(True)
    es.requires_grad_(True)
    tl.requires_grad_(True)
    ts.requires_grad_(True)
    v = [1.0, 0.0]
    ed.Normal(el, es).log_prob(ember.tensor(v, dtype=ember.float64)).sum().backward()
    td.Normal(tl, ts).log_prob(torch.tensor(v, dtype=torch.float64)).sum().backward()
    close(el.grad, tl.grad)
    close(es.grad, ts.grad)
    (ec, tc) = pair([2.0, 0.7])
    ec.requires_grad_(True)
    tc.requires_grad_(True)
    ed.Gamma(ec, ember.tensor(1.5, dtype=ember.float64)).log_prob(ember.tensor([0.4, 2.0], dtype=ember.float64)).sum().backward()
    td.Gamma(tc, torch.tensor(1.5, dtype=torch.float64)).log_prob(torch.tensor([0.4, 2.0], dtype=torch.float64)).sum().backward()
    close(ec.grad, tc.grad, rtol=1e-9)


# ---------------------------------------------------------------- reparameterised gamma family
def test_standard_gamma_grad_is_the_implicit_derivative():
    """d x / d alpha at fixed quantile: -(dP/dalpha) / density, P the regularised incomplete gamma
    (mpmath to 30 digits); torch's approximation of the same derivative agrees to 1e-3."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 30
    pairs = [(0.1, 1e-6), (0.5, 0.1), (0.5, 3.0), (1.0, 1.0), (2.0, 1.5), (7.5, 4.0), (30.0, 28.0), (30.0, 45.0),
             (300.0, 280.0)]
    alpha = ember.tensor([a for a, _ in pairs], dtype=ember.float64)
    x = ember.tensor([v for _, v in pairs], dtype=ember.float64)
    got = ember._C._standard_gamma_grad(alpha, x).numpy()

    def exact(a, v):
        dp = mpmath.diff(lambda s: mpmath.gammainc(s, 0, v, regularized=True), a)
        density = mpmath.exp((a - 1) * mpmath.log(v) - v - mpmath.loggamma(a))
        return float(-dp / density)

    np.testing.assert_allclose(got, [exact(a, v) for a, v in pairs], rtol=1e-7)
    ref = torch._standard_gamma_grad(torch.tensor([a for a, _ in pairs], dtype=torch.float64),
                                     torch.tensor([v for _, v in pairs], dtype=torch.float64)).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-3)


def test_gamma_beta_dirichlet_rsample_gradients():
    ember.manual_seed(4)
    alpha = ember.tensor([0.7, 3.0], dtype=ember.float64, requires_grad=True)
    rate = ember.tensor([2.0, 0.5], dtype=ember.float64, requires_grad=True)
    x = ed.Gamma(alpha, rate).rsample((40000,))
    x.mean(0).sum().backward()
    # E[x] = alpha / rate: d/dalpha = 1 / rate, d/drate = -alpha / rate^2
    np.testing.assert_allclose(alpha.grad.numpy(), [0.5, 2.0], rtol=0.03)
    np.testing.assert_allclose(rate.grad.numpy(), [-0.175, -12.0], rtol=0.03)
    assert not ed.Gamma(alpha, rate).sample().requires_grad
    c1 = ember.tensor(2.0, dtype=ember.float64, requires_grad=True)
    c0 = ember.tensor(3.0, dtype=ember.float64, requires_grad=True)
    b = ed.Beta(c1, c0).rsample((40000,))
    b.mean().backward()
    # E[b] = c1 / (c1 + c0): d/dc1 = c0 / (c1 + c0)^2 = 0.12, d/dc0 = -c1 / (c1 + c0)^2 = -0.08
    np.testing.assert_allclose([float(c1.grad), float(c0.grad)], [0.12, -0.08], rtol=0.05)
    conc = ember.tensor([1.0, 2.0, 5.0], dtype=ember.float64, requires_grad=True)
    d = ed.Dirichlet(conc).rsample((40000,))
    d[:, 2].mean().backward()
    # E[d_2] = c_2 / sum(c): gradient (-5/64, -5/64, 3/64)
    np.testing.assert_allclose(conc.grad.numpy(), [-5 / 64, -5 / 64, 3 / 64], rtol=0.06, atol=0.003)
    assert ed.Gamma(1.0, 1.0).has_rsample and ed.Beta(1.0, 1.0).has_rsample and ed.Dirichlet(conc).has_rsample
