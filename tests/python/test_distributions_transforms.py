"""ember.distributions.transforms, TransformedDistribution and biject_to / transform_to, checked
against independent references: the maps written out with numpy, log |det J| against
finite-difference Jacobians, the change of variables by hand, densities integrated on a grid,
rsample gradients against finite differences under a fixed seed. A few comparisons with
torch.distributions run only where torch is installed."""
import math

import numpy as np
import pytest

import ember
import ember.distributions as ed
from ember.distributions import constraints
from ember.distributions import transforms as T


def E(a):
    return ember.tensor(np.asarray(a, dtype=np.float64))


def N(t):
    return t.detach().numpy() if isinstance(t, ember.Tensor) else np.asarray(t, dtype=np.float64)


def close(a, b, rtol=1e-9, atol=1e-10):
    a, b = N(a), N(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


X = np.array([-3.1, -1.2, -0.3, 0.0, 0.4, 1.7, 2.9])


def trapezoid(y, x):
    """The trapezoid rule along axis 0 (numpy's is trapz or trapezoid depending on version)."""
    dx = np.diff(x).reshape((-1,) + (1,) * (np.ndim(y) - 1))
    return ((y[1:] + y[:-1]) / 2 * dx).sum(0)


def _numeric_log_abs_derivative(f, x, h=1e-6):
    return np.log(np.abs((f(x + h) - f(x - h)) / (2 * h)))


def _numeric_jacobian(f, x, h=1e-6):
    """d f(x) / d x for a map R^n -> R^m given as a numpy function, by central differences."""
    x = np.asarray(x, dtype=np.float64)
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        cols.append((f(x + e) - f(x - e)) / (2 * h))
    return np.stack(cols, -1)


ELEMENTWISE = [
    (T.ExpTransform(), np.exp, X),
    (T.SigmoidTransform(), lambda x: 1 / (1 + np.exp(-x)), X),
    (T.TanhTransform(), np.tanh, X),
    (T.SoftplusTransform(), lambda x: np.log1p(np.exp(x)), X),
    (T.AffineTransform(1.5, -2.0), lambda x: 1.5 - 2.0 * x, X),
    (T.AffineTransform(E([0.5] * 7), E(np.linspace(0.5, 2, 7))), lambda x: 0.5 + np.linspace(0.5, 2, 7) * x, X),
    (T.PowerTransform(E(2.5)), lambda x: x ** 2.5, np.abs(X) + 0.2),
    (T.PowerTransform(E(-0.5)), lambda x: x ** -0.5, np.abs(X) + 0.2),
    (T.ExpTransform().inv, np.log, np.abs(X) + 0.2),
    (T.SigmoidTransform().inv, lambda y: np.log(y / (1 - y)), np.linspace(0.05, 0.95, 7)),
]


@pytest.mark.parametrize("t,f,x", ELEMENTWISE, ids=lambda v: repr(v)[:30] if isinstance(v, T.Transform) else "")
def test_elementwise_forward_inverse_and_log_det_jacobian(t, f, x):
    xe = E(x)
    y = t(xe)
    close(y, f(x), rtol=1e-12)
    close(t.inv(y), x, rtol=1e-9, atol=1e-9)
    close(t.log_abs_det_jacobian(xe, y), _numeric_log_abs_derivative(f, x), rtol=1e-6, atol=1e-6)
    assert t.bijective and t.event_dim == 0
    assert bool(t.codomain.check(y).all()) and bool(t.domain.check(xe).all())


def test_tanh_log_det_jacobian_is_stable_in_the_tails():
    x = np.array([-50.0, -20.0, 0.5, 20.0, 50.0])
    got = N(T.TanhTransform().log_abs_det_jacobian(E(x), E(np.tanh(x))))
    # log(1 - tanh(x)^2) = log 4 - 2|x| - 2 log1p(exp(-2|x|)), finite where 1 - tanh^2 underflows
    want = math.log(4) - 2 * np.abs(x) - 2 * np.log1p(np.exp(-2 * np.abs(x)))
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_abs_transform_is_not_bijective_and_inverts_to_the_positive_branch():
    t = T.AbsTransform()
    close(t(E(X)), np.abs(X))
    close(t.inv(E(np.abs(X))), np.abs(X))
    assert not t.bijective
    with pytest.raises(NotImplementedError):
        t.log_abs_det_jacobian(E(X), E(np.abs(X)))


def test_stick_breaking_maps_onto_the_simplex_with_its_jacobian():
    t = T.StickBreakingTransform()
    x = np.array([[0.3, -1.2, 2.0], [-0.5, 0.1, 0.7]])
    y = t(E(x))
    assert tuple(y.shape) == (2, 4)
    assert bool(constraints.simplex.check(y).all()) and bool((y > 0).all())
    close(t.inv(y), x, rtol=1e-9)
    for row in range(2):
        jac = _numeric_jacobian(lambda v: N(t(E(v)))[:-1], x[row])
        close(t.log_abs_det_jacobian(E(x[row]), t(E(x[row]))), np.log(abs(np.linalg.det(jac))), rtol=1e-6)
    assert t.forward_shape((5, 3)) == (5, 4) and t.inverse_shape((5, 4)) == (5, 3)
    assert t.domain.event_dim == 1 and t.codomain.event_dim == 1


def test_softmax_transform_normalises_and_inverts_up_to_a_constant():
    t = T.SoftmaxTransform()
    x = np.array([[0.3, -1.2, 2.0], [-0.5, 0.1, 0.7]])
    y = N(t(E(x)))
    np.testing.assert_allclose(y, np.exp(x) / np.exp(x).sum(-1, keepdims=True), rtol=1e-12)
    back = N(t.inv(E(y)))
    np.testing.assert_allclose(back - back[:, :1], x - x[:, :1], rtol=1e-9, atol=1e-12)
    assert not t.bijective


def test_corr_cholesky_transform_rows_have_unit_norm_and_its_jacobian():
    t = T.CorrCholeskyTransform()
    x = np.array([0.3, -1.2, 0.8, 0.5, -0.1, 1.1])  # D = 4
    y = t(E(x))
    yn = N(y)
    assert yn.shape == (4, 4)
    np.testing.assert_allclose(np.linalg.norm(yn, axis=-1), 1.0, rtol=1e-12)
    assert np.all(np.triu(yn, 1) == 0) and np.all(np.diag(yn) > 0)
    assert bool(constraints.corr_cholesky.check(y))
    close(t.inv(y), x, rtol=1e-8)
    rows, cols = np.tril_indices(4, -1)
    jac = _numeric_jacobian(lambda v: N(t(E(v)))[rows, cols], x)
    close(t.log_abs_det_jacobian(E(x), y), np.log(abs(np.linalg.det(jac))), rtol=1e-6)
    assert t.forward_shape((2, 6)) == (2, 4, 4) and t.inverse_shape((2, 4, 4)) == (2, 6)
    with pytest.raises(ValueError, match="flattened lower-diagonal"):
        t.forward_shape((5,))


def test_lower_cholesky_and_positive_definite_transforms():
    x = np.array([[0.3, -1.2, 0.8], [0.5, -0.1, 1.1], [2.0, 0.4, -0.7]])
    L = N(T.LowerCholeskyTransform()(E(x)))
    want = np.tril(x, -1) + np.diag(np.exp(np.diag(x)))
    np.testing.assert_allclose(L, want, rtol=1e-12)
    close(T.LowerCholeskyTransform().inv(E(L)), np.tril(x), rtol=1e-12)  # the upper triangle is dropped
    P = T.PositiveDefiniteTransform()(E(x))
    np.testing.assert_allclose(N(P), want @ want.T, rtol=1e-12)
    assert bool(constraints.positive_definite.check(P))
    close(T.PositiveDefiniteTransform().inv(P), np.tril(x), rtol=1e-9, atol=1e-12)


def test_compose_transform_values_jacobians_and_inverse():
    parts = [T.AffineTransform(0.5, 2.0), T.ExpTransform(), T.AffineTransform(-1.0, 3.0)]
    t = T.ComposeTransform(parts)
    f = lambda x: -1.0 + 3.0 * np.exp(0.5 + 2.0 * x)  # noqa: E731
    y = t(E(X))
    close(y, f(X), rtol=1e-12)
    close(t.log_abs_det_jacobian(E(X), y), _numeric_log_abs_derivative(f, X), rtol=1e-6)
    close(t.inv(y), X, rtol=1e-9, atol=1e-12)
    assert t.inv.inv is t and t.bijective and t.sign == 1
    assert T.ComposeTransform([T.AffineTransform(0.0, -1.0), T.ExpTransform()]).sign == -1
    # identity
    close(T.identity_transform(E(X)), X)
    close(T.identity_transform.log_abs_det_jacobian(E(X), E(X)), np.zeros_like(X))
    # event dims: an elementwise part before a vector part sums its jacobian over the event
    c = T.ComposeTransform([T.ExpTransform(), T.StickBreakingTransform()])
    assert c.domain.event_dim == 1 and c.codomain.event_dim == 1
    x = np.array([[0.3, -1.2, 0.5]])
    want = N(T.ExpTransform().log_abs_det_jacobian(E(x), E(np.exp(x)))).sum(-1) + \
        N(T.StickBreakingTransform().log_abs_det_jacobian(E(np.exp(x)), T.StickBreakingTransform()(E(np.exp(x)))))
    close(c.log_abs_det_jacobian(E(x), c(E(x))), want, rtol=1e-12)
    assert c.forward_shape((2, 3)) == (2, 4)


def test_cache_returns_the_original_input_and_validates_size():
    t = T.ExpTransform(cache_size=1)
    x = E(X)
    y = t(x)
    assert t(x) is y and t.inv(y) is x
    t0 = T.ExpTransform()
    assert t0(x) is not t0(x)
    assert t0.with_cache(1)._cache_size == 1 and t0.with_cache(0) is t0
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        T.ExpTransform(cache_size=2)
    c = T.ComposeTransform([T.ExpTransform(), T.TanhTransform()], cache_size=1)
    assert all(p._cache_size == 1 for p in c.parts)
    assert T.AffineTransform(1.0, 2.0).with_cache(1)._cache_size == 1
    assert T.AffineTransform(1.0, 2.0).inv.with_cache(1).inv._cache_size == 1


def test_transform_equality_and_hashing_follow_torch():
    assert T.ExpTransform() == T.ExpTransform() and T.ExpTransform() != T.SigmoidTransform()
    assert T.AffineTransform(1.0, 2.0) == T.AffineTransform(1.0, 2.0)
    assert T.AffineTransform(E([1.0]), 2.0) != T.AffineTransform(E([1.5]), 2.0)
    assert T.ExpTransform().inv == T.ExpTransform().inv
    assert T.ComposeTransform([T.ExpTransform()]) == T.ComposeTransform([T.ExpTransform()])
    assert T.PowerTransform(E(2.0)) == T.PowerTransform(E(2.0)) != T.PowerTransform(E(3.0))
    with pytest.raises(TypeError):
        hash(T.ExpTransform())  # __eq__ without __hash__, as torch
    assert repr(T.ExpTransform().inv) == "_InverseTransform(ExpTransform())"


def test_independent_and_reshape_transforms():
    x = np.array([[0.3, -1.2, 0.5], [1.0, 0.2, -0.4]])
    t = T.IndependentTransform(T.ExpTransform(), 1)
    close(t(E(x)), np.exp(x))
    close(t.log_abs_det_jacobian(E(x), t(E(x))), x.sum(-1))
    assert t.domain.event_dim == 1 and repr(t) == "IndependentTransform(ExpTransform(), 1)"
    r = T.ReshapeTransform((2, 3), (3, 2))
    y = r(E(np.arange(12.0).reshape(2, 2, 3)))
    assert tuple(y.shape) == (2, 3, 2)
    close(r.inv(y), np.arange(12.0).reshape(2, 2, 3))
    close(r.log_abs_det_jacobian(E(np.zeros((2, 2, 3))), y), np.zeros(2))
    assert r.forward_shape((5, 2, 3)) == (5, 3, 2) and r.inverse_shape((5, 3, 2)) == (5, 2, 3)
    with pytest.raises(ValueError, match="different numbers of elements"):
        T.ReshapeTransform((2, 3), (4,))


def test_cat_and_stack_transforms_act_per_slice():
    x = np.array([[0.3, -1.2, 0.5], [1.0, 0.2, -0.4]])
    c = T.CatTransform([T.ExpTransform(), T.AffineTransform(1.0, 3.0)], dim=1, lengths=[1, 2])
    y = c(E(x))
    close(y, np.concatenate([np.exp(x[:, :1]), 1 + 3 * x[:, 1:]], 1), rtol=1e-12)
    close(c.inv(y), x, rtol=1e-12)
    close(c.log_abs_det_jacobian(E(x), y), np.concatenate([x[:, :1], np.full((2, 2), math.log(3))], 1))
    s = T.StackTransform([T.ExpTransform(), T.identity_transform, T.SigmoidTransform()], dim=1)
    y = s(E(x))
    close(y, np.stack([np.exp(x[:, 0]), x[:, 1], 1 / (1 + np.exp(-x[:, 2]))], 1), rtol=1e-12)
    close(s.inv(y), x, rtol=1e-9)
    sig = x[:, 2]
    close(s.log_abs_det_jacobian(E(x), y),
          np.stack([x[:, 0], np.zeros(2), -np.log1p(np.exp(-sig)) - np.log1p(np.exp(sig))], 1), rtol=1e-9)
    assert bool(s.codomain.check(y).all())


def test_cumulative_distribution_transform_of_a_normal():
    t = T.CumulativeDistributionTransform(ed.Normal(E(1.0), E(2.0)))
    y = t(E(X))
    close(y, [0.5 * (1 + math.erf((v - 1.0) / (2.0 * math.sqrt(2)))) for v in X], rtol=1e-12)
    close(t.inv(y), X, rtol=1e-6, atol=1e-9)
    close(t.log_abs_det_jacobian(E(X), y), -((X - 1) ** 2) / 8 - math.log(2 * math.sqrt(2 * math.pi)), rtol=1e-12)


def test_power_transform_sign_and_shapes():
    t = T.PowerTransform(E([2.0, -1.0]))
    close(t.sign, [1.0, -1.0])
    assert t.forward_shape((3, 1)) == (3, 2)
    assert T.AffineTransform(0.0, -2.0).sign == -1 and T.AffineTransform(0.0, E([2.0, -1.0])).sign.tolist() == [1, -1]


# ---------------------------------------------------------------- TransformedDistribution
def _tanh_normal_log_prob(y, mu, s):
    x = np.arctanh(y)
    return -((x - mu) ** 2) / (2 * s * s) - np.log(s) - 0.5 * math.log(2 * math.pi) - np.log1p(-y * y)


def test_tanh_normal_log_prob_is_the_change_of_variables_formula():
    mu, s = np.array([0.2, -0.7]), np.array([0.6, 1.3])
    d = ed.TransformedDistribution(ed.Normal(E(mu), E(s)), [T.TanhTransform(cache_size=1)])
    assert tuple(d.batch_shape) == (2,) and tuple(d.event_shape) == () and d.has_rsample
    y = np.array([[0.3, -0.95], [-0.5, 0.9999]])
    close(d.log_prob(E(y)), _tanh_normal_log_prob(y, mu, s), rtol=1e-9)
    # the density integrates to 1 over (-1, 1)
    grid = np.linspace(-1 + 1e-9, 1 - 1e-9, 200001)
    dens = np.exp(N(d.log_prob(E(np.stack([grid, grid], -1)))))
    np.testing.assert_allclose(trapezoid(dens, grid), [1.0, 1.0], atol=2e-4)
    assert isinstance(d.support, type(constraints.interval(-1.0, 1.0)))


def _sac_loss(mu, log_std, seed):
    ember.manual_seed(seed)
    d = ed.TransformedDistribution(ed.Normal(mu, log_std.exp()), [T.TanhTransform(cache_size=1)])
    a = d.rsample((64,))
    return (d.log_prob(a) + 2.0 * a).sum()


def test_sac_tanh_normal_rsample_and_log_prob_gradients_match_finite_differences():
    mu0, ls0 = np.array([0.3, -1.1]), np.array([-0.4, 0.2])
    mu, ls = E(mu0).requires_grad_(), E(ls0).requires_grad_()
    _sac_loss(mu, ls, 7).backward()
    h = 1e-6
    for param, base, grad in ((0, mu0, mu.grad), (1, ls0, ls.grad)):
        for i in range(2):
            up, dn = base.copy(), base.copy()
            up[i] += h
            dn[i] -= h
            args_up = (E(up), E(ls0)) if param == 0 else (E(mu0), E(up))
            args_dn = (E(dn), E(ls0)) if param == 0 else (E(mu0), E(dn))
            fd = (float(_sac_loss(*args_up, 7)) - float(_sac_loss(*args_dn, 7))) / (2 * h)
            assert abs(float(grad[i]) - fd) < 1e-5 * max(1.0, abs(fd)), (param, i, float(grad[i]), fd)


def test_cache_keeps_log_prob_finite_where_tanh_saturates():
    base = ed.Normal(E([25.0]), E([0.01]))
    cached = ed.TransformedDistribution(base, [T.TanhTransform(cache_size=1)])
    a = cached.rsample()
    assert float(a) == 1.0  # tanh rounds to 1: atanh(a) would be inf
    lp = float(cached.log_prob(a))
    assert math.isfinite(lp)
    uncached = ed.TransformedDistribution(base, [T.TanhTransform()])
    assert not math.isfinite(float(uncached.log_prob(a)))  # torch's behaviour without the cache


def test_transformed_distribution_cdf_icdf_with_a_decreasing_transform():
    d = ed.TransformedDistribution(ed.Normal(E(0.5), E(1.0)), [T.AffineTransform(1.0, -2.0)])
    y = np.array([-2.0, 0.0, 1.0, 3.5])
    # Y = 1 - 2 X: P(Y <= y) = P(X >= (1 - y) / 2)
    want = [1 - 0.5 * (1 + math.erf(((1 - v) / 2 - 0.5) / math.sqrt(2))) for v in y]
    close(d.cdf(E(y)), want, rtol=1e-12)
    close(d.icdf(E(want)), y, rtol=1e-6, atol=1e-9)
    close(d.log_prob(E(y)), -(((1 - y) / 2 - 0.5) ** 2) / 2 - 0.5 * math.log(2 * math.pi) - math.log(2), rtol=1e-12)


def test_transformed_distribution_shapes_expand_and_sampling():
    base = ed.Normal(E(np.zeros(3)), E(np.ones(3)))
    d = ed.TransformedDistribution(base, T.StickBreakingTransform())
    assert tuple(d.batch_shape) == () and tuple(d.event_shape) == (4,)
    s = d.sample((5,))
    assert tuple(s.shape) == (5, 4) and bool(constraints.simplex.check(s).all()) and not s.requires_grad
    # log_prob = base log_prob summed over the event - log |det J|
    x = np.array([0.3, -0.2, 1.0])
    t = T.StickBreakingTransform()
    y = t(E(x))
    want = N(base.log_prob(E(x))).sum() - N(t.log_abs_det_jacobian(E(x), y))
    close(d.log_prob(y), want, rtol=1e-9)
    e = ed.TransformedDistribution(ed.Normal(E(0.0), E(1.0)), [T.ExpTransform()]).expand((2, 3))
    assert tuple(e.batch_shape) == (2, 3) and tuple(e.sample().shape) == (2, 3)
    assert not ed.TransformedDistribution(ed.Poisson(E(1.0)), [T.AffineTransform(0.0, 2.0)]).has_rsample
    with pytest.raises(ValueError, match="transforms must be a Transform or list"):
        ed.TransformedDistribution(base, (T.ExpTransform(),))
    with pytest.raises(ValueError, match="transforms must be a Transform or a list of Transforms"):
        ed.TransformedDistribution(base, [T.ExpTransform(), 3])


# ---------------------------------------------------------------- biject_to / transform_to
CONSTRAINTS = [
    (constraints.real, 0), (constraints.positive, 0), (constraints.nonnegative, 0), (constraints.unit_interval, 0),
    (constraints.interval(-1.0, 3.0), 0), (constraints.half_open_interval(2.0, 5.0), 0),
    (constraints.greater_than(2.0), 0), (constraints.greater_than_eq(-1.0), 0), (constraints.less_than(2.0), 0),
    (constraints.simplex, 1), (constraints.real_vector, 1), (constraints.independent(constraints.positive, 1), 1),
    (constraints.corr_cholesky, 1),
]


@pytest.mark.parametrize("c,event_dim", CONSTRAINTS, ids=lambda v: repr(v) if not isinstance(v, int) else "")
def test_biject_to_lands_in_the_constraint_and_inverts(c, event_dim):
    rng = np.random.default_rng(3)
    x = E(rng.normal(size=(4, 6)) * 2)
    t = ed.biject_to(c)
    y = t(x)
    assert bool(c.check(y).all()), (c, y)
    assert t.bijective
    close(t.inv(y), x, rtol=1e-6, atol=1e-6)
    t2 = ed.transform_to(c)
    assert bool(c.check(t2(x)).all())


def test_transform_to_non_bijective_constraints_and_errors():
    x = E(np.array([[0.3, -1.2, 0.5], [1.0, 0.2, -0.4], [0.0, 0.9, -2.0]]))
    assert bool(constraints.simplex.check(ed.transform_to(constraints.simplex)(x)).all())
    assert isinstance(ed.transform_to(constraints.simplex), T.SoftmaxTransform)
    assert isinstance(ed.biject_to(constraints.simplex), T.StickBreakingTransform)
    assert bool(constraints.lower_cholesky.check(ed.transform_to(constraints.lower_cholesky)(x)))
    assert bool(constraints.positive_definite.check(ed.transform_to(constraints.positive_definite)(x)))
    assert isinstance(ed.biject_to(constraints.unit_interval), T.SigmoidTransform)
    with pytest.raises(NotImplementedError, match="Cannot transform _LowerCholesky constraints"):
        ed.biject_to(constraints.lower_cholesky)
    with pytest.raises(TypeError, match="Expected constraint to be either a Constraint subclass or instance"):
        ed.biject_to.register(3, lambda c: None)


def test_cat_and_stack_constraints_through_the_registry():
    c = constraints.cat([constraints.positive, constraints.interval(0.0, 1.0)], dim=-1, lengths=[2, 1])
    y = ed.biject_to(c)(E(np.array([[-3.0, 0.5, 4.0]])))
    yn = N(y)
    assert yn[0, 0] > 0 and yn[0, 1] > 0 and 0 < yn[0, 2] < 1 and bool(c.check(y).all())
    s = constraints.stack([constraints.positive, constraints.real], dim=0)
    y = ed.transform_to(s)(E(np.array([[-3.0, 0.5], [-1.0, 2.0]])))
    close(y, [[math.exp(-3.0), math.exp(0.5)], [-1.0, 2.0]], rtol=1e-12)


def test_registering_a_transform_for_a_new_constraint():
    class _Odd(constraints.Constraint):
        def check(self, value):
            return value % 2 == 1

    registry = type(ed.biject_to)()

    @registry.register(_Odd)
    def _to_odd(constraint):
        return T.AffineTransform(1.0, 2.0)

    assert isinstance(registry(_Odd()), T.AffineTransform)
    with pytest.raises(NotImplementedError):
        registry(constraints.positive)


def test_new_constraints_check_values():
    assert constraints.one_hot.check(E([[0, 1, 0], [1, 1, 0], [0, 0, 0]])).tolist() == [True, False, False]
    assert constraints.multinomial(3).check(E([[1, 2, 0], [2, 2, 0], [-1, 2, 0]])).tolist() == [True, False, False]
    assert constraints.square.check(ember.zeros(2, 3, 3)).tolist() == [True, True]
    assert not bool(constraints.square.check(ember.zeros(3, 2)))
    assert not bool(constraints.symmetric.check(E([[1.0, 2.0], [0.0, 1.0]])))
    bad = E([[1.0, 0.0], [0.6, 0.6]])  # second row has norm < 1
    good = E([[1.0, 0.0], [0.6, 0.8]])
    assert bool(constraints.corr_cholesky.check(good)) and not bool(constraints.corr_cholesky.check(bad))
    c = constraints.cat([constraints.positive, constraints.real], dim=0, lengths=[1, 2])
    assert c.check(E([1.0, -2.0, 3.0])).tolist() == [True, True, True]
    assert c.check(E([-1.0, -2.0, 3.0])).tolist() == [False, True, True]
    assert c.event_dim == 0 and not c.is_discrete
    m = constraints.MixtureSameFamilyConstraint(constraints.positive)
    assert m.check(E([1.0, -1.0])).tolist() == [True, False]
    assert repr(m) == "MixtureSameFamilyConstraint(GreaterThan(lower_bound=0.0))"


# ---------------------------------------------------------------- against torch, where installed
def test_log_abs_det_jacobians_match_torch():
    torch = pytest.importorskip("torch", reason="PyTorch not installed: differential test skipped")
    import torch.distributions.transforms as TT
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 6))
    for name in ("ExpTransform", "SigmoidTransform", "TanhTransform", "SoftplusTransform", "StickBreakingTransform",
                 "CorrCholeskyTransform"):
        if not hasattr(TT, name):
            continue
        te, tt = getattr(T, name)(), getattr(TT, name)()
        xt = torch.tensor(x)
        close(te(E(x)), tt(xt).numpy(), rtol=1e-10, atol=1e-12)
        close(te.log_abs_det_jacobian(E(x), te(E(x))), tt.log_abs_det_jacobian(xt, tt(xt)).numpy(), rtol=1e-9)
