"""ember.autograd.functional (jacobian, hessian, vjp, jvp, hvp, vhp) against torch, and on
functions whose derivatives are known in closed form (so the test runs without torch)."""
import numpy as np
import pytest

import ember

AF = ember.autograd.functional


def f(x, y):
    return (x * x * y.sum()).sin(), x.exp().sum() * y


def s(x):
    return (x ** 3).sum() * x[0]


def t64(v):
    return ember.tensor(v, dtype=ember.float64)


X, Y = [0.3, -0.2, 0.5], [1.0, 2.0]


def test_closed_forms():
    x = t64(X)
    # d/dx sum(x^3) * x0: 3 x_i^2 x0 + (i == 0) sum(x^3)
    xs = np.array(X)
    want = 3 * xs ** 2 * xs[0]
    want[0] += (xs ** 3).sum()
    np.testing.assert_allclose(np.asarray(AF.jacobian(s, x).tolist()), want, rtol=1e-12)
    H = np.diag(6 * xs * xs[0])
    H[0, :] += 3 * xs ** 2
    H[:, 0] += 3 * xs ** 2
    np.testing.assert_allclose(np.asarray(AF.hessian(s, x).tolist()), H, rtol=1e-12)
    v = t64([1.0, 2.0, 3.0])
    _, hv = AF.hvp(s, x, v)
    np.testing.assert_allclose(np.asarray(hv.tolist()), H @ np.array([1.0, 2.0, 3.0]), rtol=1e-12)
    # the inputs are left as they were
    assert not x.requires_grad


def test_matches_torch(torch_ref):
    def both(fn):
        e = fn(ember)
        t = fn(torch_ref)
        return e, t

    def flat(r):
        if isinstance(r, (tuple, list)):
            return [v for item in r for v in flat(item)]
        return list(np.asarray(r.tolist()).ravel())

    cases = [
        lambda T: T.autograd.functional.jacobian(f, (T.tensor(X, dtype=T.float64), T.tensor(Y, dtype=T.float64))),
        lambda T: T.autograd.functional.hessian(lambda a, b: (a * a * b).sum() * a.sum(),
                                                (T.tensor(X, dtype=T.float64), T.tensor(X, dtype=T.float64) * 2)),
        lambda T: T.autograd.functional.vjp(f, (T.tensor(X, dtype=T.float64), T.tensor(Y, dtype=T.float64)),
                                            (T.ones(3, dtype=T.float64), T.ones(2, dtype=T.float64))),
        lambda T: T.autograd.functional.jvp(f, (T.tensor(X, dtype=T.float64), T.tensor(Y, dtype=T.float64)),
                                            (T.ones(3, dtype=T.float64), T.ones(2, dtype=T.float64))),
        lambda T: T.autograd.functional.vhp(s, T.tensor(X, dtype=T.float64), T.tensor([1.0, 2, 3],
                                                                                      dtype=T.float64)),
    ]
    for case in cases:
        e, t = both(case)
        np.testing.assert_allclose(flat(e), flat(t), rtol=1e-12, atol=1e-14)


def test_create_graph_gives_differentiable_results():
    x = t64(X).requires_grad_()
    J = AF.jacobian(s, x, create_graph=True)
    assert J.requires_grad
    J.sum().backward()  # the Hessian's row sums
    H = np.asarray(AF.hessian(s, t64(X)).tolist())
    np.testing.assert_allclose(np.asarray(x.grad.tolist()), H.sum(0), rtol=1e-12)


def test_errors():
    x = t64(X)
    with pytest.raises(RuntimeError, match="does not require gradients"):
        AF.jacobian(lambda a: t64(Y) * 2, x, strict=True)
    with pytest.raises(RuntimeError, match="independent of input 1"):
        AF.vjp(lambda a, b: a * 2, (x, t64(Y)), t64([1.0, 1, 1]), strict=True)
    with pytest.raises(TypeError, match="must be either a Tensor or a tuple of Tensors"):
        AF.jacobian(s, [1.0, 2.0])
    with pytest.raises(RuntimeError, match="v can only be None"):
        AF.vjp(lambda a: a * 2, x)
    with pytest.raises(ValueError, match="Expected strategy"):
        AF.jacobian(s, x, strategy="sideways")
