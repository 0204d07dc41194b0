"""ember.linalg, torch's top-level linalg aliases and cdist against PyTorch: forward values on
float32/float64 and batched inputs, gradients (float64, against torch's autograd and finite
differences) and error messages (PyTorch 2.x's, hard-coded)."""
import math

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck


def E(a, grad=False):
    t = ember.from_numpy(np.ascontiguousarray(a))
    return t.requires_grad_() if grad else t


def N(t):
    return t.detach().numpy()


def rand(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def spd(*shape, seed=0):
    x = rand(*shape, seed=seed)
    return x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])


def close(a, b, tol):
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


TOL = {np.float32: 2e-4, np.float64: 1e-10}


def torch_pair(torch, a, grad=False):
    t = torch.from_numpy(np.ascontiguousarray(a))
    return t.requires_grad_() if grad else t


# ---------------------------------------------------------------- forward vs torch
SQUARE = [(3, 3), (2, 4, 4), (2, 1, 5, 5)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SQUARE)
@pytest.mark.parametrize("name", ["inv", "det", "slogdet", "cholesky", "eigvalsh", "svdvals", "pinv", "matrix_rank"])
def test_square_functions_match_torch(torch_ref, dtype, shape, name):
    a = spd(*shape).astype(dtype) if name in ("cholesky", "eigvalsh") else rand(*shape).astype(dtype)
    got = getattr(ember.linalg, name)(E(a))
    want = getattr(torch_ref.linalg, name)(torch_pair(torch_ref, a))
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape)
        assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1]
        close(N(g), w.numpy(), TOL[dtype] * (100 if name == "det" else 10))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cholesky_upper_and_aliases_match_torch(torch_ref, dtype):
    a = spd(2, 4, 4).astype(dtype)
    ta, ea = torch_pair(torch_ref, a), E(a)
    tol = TOL[dtype] * 10
    close(N(ember.linalg.cholesky(ea, upper=True)), torch_ref.linalg.cholesky(ta, upper=True).numpy(), tol)
    close(N(ember.cholesky(ea, upper=True)), torch_ref.cholesky(ta, upper=True).numpy(), tol)
    close(N(ember.inverse(ea)), torch_ref.inverse(ta).numpy(), tol)
    close(N(ea.inverse()), torch_ref.inverse(ta).numpy(), tol)
    close(N(ember.det(ea)), torch_ref.det(ta).numpy(), tol * 100)
    close(N(ember.logdet(ea)), torch_ref.logdet(ta).numpy(), tol)
    s, l = ember.slogdet(ea)
    close(N(l), torch_ref.slogdet(ta)[1].numpy(), tol)
    close(N(ember.pinverse(ea)), torch_ref.pinverse(ta).numpy(), tol * 10)


def test_slogdet_and_logdet_signs(torch_ref):
    for a in (-np.eye(3), np.array([[1.0, 2], [2, 4]]), np.diag([2.0, -3, 1])):
        s, l = ember.linalg.slogdet(E(a))
        ts, tl = torch_ref.linalg.slogdet(torch_pair(torch_ref, a))
        assert float(s) == float(ts) and (float(l) == float(tl) or math.isclose(float(l), float(tl)))
        lg, tlg = float(ember.logdet(E(a))), float(torch_ref.logdet(torch_pair(torch_ref, a)))
        assert (math.isnan(lg) and math.isnan(tlg)) or lg == pytest.approx(tlg)
    assert ember.linalg.slogdet(E(np.array([[1.0, 2], [2, 4]]))).sign.item() == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_solve_matches_torch(torch_ref, dtype):
    tol = TOL[dtype] * 100
    a = rand(2, 3, 4, 4, dtype=dtype)
    cases = [(a[0, 0], rand(4, seed=1, dtype=dtype)),           # vector
             (a, rand(2, 3, 4, seed=2, dtype=dtype)),            # batch of vectors
             (a, rand(4, 2, seed=3, dtype=dtype)),               # B broadcast over A's batch
             (a[0, 0], rand(5, 4, 3, seed=4, dtype=dtype)),      # A broadcast over B's batch
             (a, rand(3, 4, 1, seed=5, dtype=dtype))]
    for A, B in cases:
        got = ember.linalg.solve(E(A), E(B))
        want = torch_ref.linalg.solve(torch_pair(torch_ref, A), torch_pair(torch_ref, B))
        assert tuple(got.shape) == tuple(want.shape)
        close(N(got), want.numpy(), tol)
    A, B = a[0], rand(2, 3, 5, 4, seed=6, dtype=dtype)
    got = ember.linalg.solve(E(A), E(B), left=False)
    close(N(got) @ A, B, tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 6, 3), (2, 3, 6)])
def test_qr_matches_torch(torch_ref, dtype, shape):
    a = rand(*shape, dtype=dtype)
    tol = TOL[dtype] * 10
    for mode in ("reduced", "complete", "r"):
        Q, R = ember.linalg.qr(E(a), mode=mode)
        tQ, tR = torch_ref.linalg.qr(torch_pair(torch_ref, a), mode=mode)
        assert tuple(Q.shape) == tuple(tQ.shape) and tuple(R.shape) == tuple(tR.shape)
        close(N(R), tR.numpy(), tol)
        if mode != "r":
            close(N(Q), tQ.numpy(), tol)
    Q, R = ember.qr(E(a), some=False)
    assert Q.shape[-1] == shape[-2]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 6, 3), (2, 3, 3, 5)])
@pytest.mark.parametrize("full", [False, True])
def test_svd_matches_torch(torch_ref, dtype, shape, full):
    a = rand(*shape, dtype=dtype)
    tol = TOL[dtype] * 10
    U, S, Vh = ember.linalg.svd(E(a), full_matrices=full)
    tU, tS, tVh = torch_ref.linalg.svd(torch_pair(torch_ref, a), full_matrices=full)
    for g, w in ((U, tU), (S, tS), (Vh, tVh)):
        assert tuple(g.shape) == tuple(w.shape)
    close(N(S), tS.numpy(), tol)
    k = min(shape[-2:])
    # Singular vectors are defined up to sign (and the extra ones of full_matrices up to a basis).
    close(np.abs(N(U)[..., :k]), np.abs(tU.numpy()[..., :k]), tol * 10)
    close(np.abs(N(Vh)[..., :k, :]), np.abs(tVh.numpy()[..., :k, :]), tol * 10)
    close((N(U)[..., :k] * N(S)[..., None, :]) @ N(Vh)[..., :k, :], a, tol * 10)
    u, s, v = ember.svd(E(a), some=not full)
    close(np.abs(N(v)), np.abs(np.swapaxes(tVh.numpy(), -1, -2)), tol * 10)
    u, s, v = ember.svd(E(a), compute_uv=False)
    tu, ts, tv = torch_ref.svd(torch_pair(torch_ref, a), compute_uv=False)
    assert tuple(u.shape) == tuple(tu.shape) and not N(u).any()
    close(N(s), ts.numpy(), tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_matches_torch(torch_ref, dtype, uplo):
    a = rand(2, 5, 5, dtype=dtype)  # not symmetric: only the UPLO triangle is read
    L, V = ember.linalg.eigh(E(a), UPLO=uplo)
    tL, tV = torch_ref.linalg.eigh(torch_pair(torch_ref, a), UPLO=uplo)
    tol = TOL[dtype] * 10
    close(N(L), tL.numpy(), tol)
    close(np.abs(N(V)), np.abs(tV.numpy()), tol * 10)
    close(N(ember.linalg.eigvalsh(E(a), UPLO=uplo)), tL.numpy(), tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lstsq_matches_torch(torch_ref, dtype):
    tol = TOL[dtype] * 100
    for ashape, bshape in (((6, 3), (6, 2)), ((3, 6), (3, 2)), ((2, 5, 3), (2, 5, 4)), ((2, 5, 3), (2, 5)),
                           ((4, 4), (4,)), ((2, 6, 3), (1, 6, 2))):
        a, b = rand(*ashape, dtype=dtype), rand(*bshape, seed=1, dtype=dtype)
        got = ember.linalg.lstsq(E(a), E(b))
        want = torch_ref.linalg.lstsq(torch_pair(torch_ref, a), torch_pair(torch_ref, b))
        close(N(got.solution), want.solution.numpy(), tol)
        assert N(got.rank).tolist() == want.rank.numpy().tolist()
        assert tuple(got.residuals.shape) == (0,) and tuple(got.singular_values.shape) == (0,)
    # rank-deficient: gelsy's minimum-norm solution and rank
    a = rand(6, 2) @ rand(2, 4, seed=3)
    b = rand(6, 2, seed=4)
    got = ember.linalg.lstsq(E(a), E(b))
    want = torch_ref.linalg.lstsq(torch_pair(torch_ref, a), torch_pair(torch_ref, b))
    assert int(got.rank) == 2 == int(want.rank)
    close(N(got.solution), want.solution.numpy(), 1e-8)


def test_pinv_matrix_rank_options_match_torch(torch_ref):
    a = rand(6, 2) @ rand(2, 4, seed=3)
    ta = torch_pair(torch_ref, a)
    close(N(ember.linalg.pinv(E(a))), torch_ref.linalg.pinv(ta).numpy(), 1e-8)
    close(N(ember.linalg.pinv(E(a), atol=1e-3)), torch_ref.linalg.pinv(ta, atol=1e-3).numpy(), 1e-8)
    h = spd(4, 4) - 10 * np.eye(4)
    close(N(ember.linalg.pinv(E(h), hermitian=True)), torch_ref.linalg.pinv(torch_pair(torch_ref, h),
                                                                            hermitian=True).numpy(), 1e-8)
    assert int(ember.linalg.matrix_rank(E(a))) == 2
    assert int(ember.linalg.matrix_rank(E(a), atol=1e9)) == 0
    assert int(ember.linalg.matrix_rank(E(h), hermitian=True)) == int(torch_ref.linalg.matrix_rank(
        torch_pair(torch_ref, h), hermitian=True))
    assert ember.linalg.matrix_rank(E(rand(3, 4, 5))).dtype == ember.int64


# ---------------------------------------------------------------- norms, cross, cdist
@pytest.mark.parametrize("ord", [2, 1, 0, 3.5, 0.5, math.inf, -math.inf, -1])
@pytest.mark.parametrize("dim", [None, 1, (0, 2), -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_vector_norm_matches_torch(torch_ref, ord, dim, keepdim):
    x = rand(3, 4, 5)
    got = ember.linalg.vector_norm(E(x), ord, dim=dim, keepdim=keepdim)
    want = torch_ref.linalg.vector_norm(torch_pair(torch_ref, x), ord, dim=dim, keepdim=keepdim)
    assert tuple(got.shape) == tuple(want.shape)
    close(N(got), want.numpy(), 1e-10)


@pytest.mark.parametrize("ord", ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf])
@pytest.mark.parametrize("dim", [(-2, -1), (0, 2), (2, 0)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_matrix_norm_matches_torch(torch_ref, ord, dim, keepdim):
    x = rand(3, 4, 5)
    got = ember.linalg.matrix_norm(E(x), ord, dim=dim, keepdim=keepdim)
    want = torch_ref.linalg.matrix_norm(torch_pair(torch_ref, x), ord, dim=dim, keepdim=keepdim)
    assert tuple(got.shape) == tuple(want.shape)
    close(N(got), want.numpy(), 1e-10)


def test_linalg_norm_dispatch_matches_torch(torch_ref):
    x3, x2, x1 = rand(3, 4, 5), rand(4, 5), rand(5)
    cases = [(x3, {}), (x3, {"keepdim": True}), (x2, {"ord": 2}), (x2, {"ord": "nuc"}), (x1, {"ord": 3}),
             (x1, {"ord": math.inf}), (x3, {"ord": 1, "dim": 1}), (x3, {"dim": (0, 1)}),
             (x3, {"ord": "fro", "dim": (1, 2)}), (x3, {"ord": -2, "dim": (2, 1), "keepdim": True})]
    for x, kw in cases:
        got = ember.linalg.norm(E(x), **kw)
        want = torch_ref.linalg.norm(torch_pair(torch_ref, x), **kw)
        assert tuple(got.shape) == tuple(want.shape), kw
        close(N(got), want.numpy(), 1e-10)
    got = ember.linalg.vector_norm(E(x3.astype(np.float32)), dtype=ember.float64)
    assert got.dtype == ember.float64


def test_cross_matches_torch(torch_ref):
    a, b = rand(1, 4, 3), rand(2, 1, 3, seed=1)
    close(N(ember.linalg.cross(E(a), E(b))), torch_ref.linalg.cross(torch_pair(torch_ref, a),
                                                                      torch_pair(torch_ref, b)).numpy(), 1e-12)
    a, b = rand(3, 5), rand(3, 5, seed=1)
    close(N(ember.cross(E(a), E(b))), torch_ref.cross(torch_pair(torch_ref, a), torch_pair(torch_ref, b),
                                                      dim=0).numpy(), 1e-12)
    close(N(ember.linalg.cross(E(a), E(b), dim=0)), np.cross(a, b, axis=0), 1e-12)


@pytest.mark.parametrize("p", [2.0, 1.0, 0.0, math.inf, 3.0, 0.5])
@pytest.mark.parametrize("shapes", [((5, 3), (4, 3)), ((2, 5, 3), (2, 4, 3)), ((2, 1, 5, 3), (3, 4, 3)),
                                    ((30, 4), (7, 4))])
def test_cdist_matches_torch(torch_ref, p, shapes):
    x1, x2 = rand(*shapes[0]), rand(*shapes[1], seed=1)
    got = ember.cdist(E(x1), E(x2), p=p)
    want = torch_ref.cdist(torch_pair(torch_ref, x1), torch_pair(torch_ref, x2), p=p)
    assert tuple(got.shape) == tuple(want.shape)
    close(N(got), want.numpy(), 1e-9)


def test_cdist_gradient_matches_torch(torch_ref):
    x1, x2 = rand(2, 5, 3), rand(2, 4, 3, seed=1)
    x2[0, 1] = x1[0, 2]  # a zero distance: subgradient 0, as torch
    for p in (2.0, 1.0, 3.0, math.inf):
        for mode in ("use_mm_for_euclid_dist_if_necessary", "donot_use_mm_for_euclid_dist"):
            e1, e2 = E(x1, True), E(x2, True)
            t1, t2 = torch_pair(torch_ref, x1, True), torch_pair(torch_ref, x2, True)
            w = rand(2, 5, 4, seed=7)
            (ember.cdist(e1, e2, p=p, compute_mode=mode) * E(w)).sum().backward()
            (torch_ref.cdist(t1, t2, p=p, compute_mode=mode) * torch_ref.from_numpy(w)).sum().backward()
            close(N(e1.grad), t1.grad.numpy(), 1e-9)
            close(N(e2.grad), t2.grad.numpy(), 1e-9)


# ---------------------------------------------------------------- gradients
def grads_match(torch, f_e, f_t, *arrays, tol=1e-8):
    es = [E(a, True) for a in arrays]
    ts = [torch_pair(torch, a, True) for a in arrays]
    f_e(*es).backward()
    f_t(*ts).backward()
    for e, t in zip(es, ts):
        close(N(e.grad), t.grad.numpy(), tol)


def weighted(lib, out, seed):
    """A scalar loss that weights every entry differently (so every gradient entry is tested)."""
    outs = out if isinstance(out, tuple) else (out,)
    total = 0
    for i, o in enumerate(outs):
        w = rand(*tuple(o.shape), seed=seed + i)
        total = total + (o * lib.from_numpy(w)).sum()
    return total


@pytest.mark.parametrize("name,make,f", [
    ("inv", lambda: rand(2, 4, 4), lambda lib, a: lib.linalg.inv(a)),
    ("det", lambda: rand(2, 4, 4), lambda lib, a: lib.linalg.det(a)),
    ("slogdet", lambda: rand(2, 4, 4), lambda lib, a: lib.linalg.slogdet(a)[1]),
    ("cholesky", lambda: spd(2, 4, 4), lambda lib, a: lib.linalg.cholesky(a)),
    ("cholesky_upper", lambda: spd(4, 4), lambda lib, a: lib.linalg.cholesky(a, upper=True)),
    ("qr_tall", lambda: rand(2, 5, 3), lambda lib, a: lib.linalg.qr(a)),
    ("qr_square", lambda: rand(4, 4), lambda lib, a: lib.linalg.qr(a)),
    ("qr_wide", lambda: rand(3, 5), lambda lib, a: lib.linalg.qr(a)),
    ("svdvals", lambda: rand(2, 5, 3), lambda lib, a: lib.linalg.svdvals(a)),
    ("svd_gauge_invariant", lambda: rand(2, 5, 3),
     lambda lib, a: tuple(x ** 2 for x in lib.linalg.svd(a, full_matrices=False))),
    ("svd_wide", lambda: rand(3, 6),
     lambda lib, a: tuple(x ** 2 for x in lib.linalg.svd(a, full_matrices=False))),
    ("svd_full", lambda: rand(5, 3), lambda lib, a: lib.linalg.svd(a)[1]),
    ("eigh", lambda: spd(2, 4, 4), lambda lib, a: tuple(x ** 2 for x in lib.linalg.eigh(a))),
    ("eigvalsh", lambda: spd(4, 4), lambda lib, a: lib.linalg.eigvalsh(a)),
    ("pinv", lambda: rand(5, 3), lambda lib, a: lib.linalg.pinv(a)),
    ("matrix_norm_nuc", lambda: rand(4, 3), lambda lib, a: lib.linalg.matrix_norm(a, "nuc")),
    ("matrix_norm_2", lambda: rand(4, 3), lambda lib, a: lib.linalg.matrix_norm(a, 2)),
    ("matrix_norm_inf", lambda: rand(4, 3), lambda lib, a: lib.linalg.matrix_norm(a, math.inf)),
])
def test_gradients_match_torch(torch_ref, name, make, f):
    a = make()
    grads_match(torch_ref, lambda x: weighted(ember, f(ember, x), 11), lambda x: weighted(torch_ref, f(torch_ref, x), 11),
                a, tol=1e-7)


def test_det_gradient_of_a_singular_matrix_is_the_cofactor_matrix():
    # PyTorch 2.x's value; 1.13 returned zeros here.
    a = E(np.array([[1.0, 2, 3], [2, 4, 6], [0, 1, 5]]), True)
    ember.linalg.det(a).backward()
    close(N(a.grad), np.array([[14.0, -10, 2], [-7, 5, -1], [0, 0, 0]]), 1e-12)


def test_solve_and_lstsq_gradients_match_torch(torch_ref):
    a, b = rand(2, 4, 4), rand(2, 4, 3, seed=1)
    grads_match(torch_ref, lambda x, y: weighted(ember, ember.linalg.solve(x, y), 3),
                lambda x, y: weighted(torch_ref, torch_ref.linalg.solve(x, y), 3), a, b)
    a, b = rand(6, 3), rand(6, 2, seed=2)
    grads_match(torch_ref, lambda x, y: weighted(ember, ember.linalg.lstsq(x, y).solution, 3),
                lambda x, y: weighted(torch_ref, torch_ref.linalg.lstsq(x, y).solution, 3), a, b)


@pytest.mark.parametrize("f", [
    lambda a: ember.linalg.inv(a),
    lambda a: ember.linalg.det(a),
    lambda a: ember.linalg.cholesky(a @ a.mT + 4 * ember.eye(4, dtype=ember.float64)),
    lambda a: ember.linalg.qr(a)[0] * 1.5 + ember.linalg.qr(a)[1],
    lambda a: ember.linalg.svd(a, full_matrices=False)[0] ** 2,
    lambda a: ember.linalg.eigh(a + a.mT)[1] ** 2,
    lambda a: ember.linalg.pinv(a),
])
def test_gradcheck(f):
    a = E(rand(4, 4, seed=5) + 3 * np.eye(4), True)
    assert gradcheck(f, (a,), eps=1e-6, atol=1e-5, rtol=1e-3)


def test_double_backward_of_inv(torch_ref):
    a = rand(3, 3) + 3 * np.eye(3)
    e, t = E(a, True), torch_pair(torch_ref, a, True)
    (ge,) = ember.autograd.grad(ember.linalg.inv(e).sum(), e, create_graph=True)
    (gt,) = torch_ref.autograd.grad(torch_ref.linalg.inv(t).sum(), t, create_graph=True)
    (ge ** 2).sum().backward()
    (gt ** 2).sum().backward()
    close(N(e.grad), t.grad.numpy(), 1e-9)


# ---------------------------------------------------------------- errors (PyTorch 2.x messages)
def raises(fn, match, exc=RuntimeError):
    with pytest.raises(exc) as info:
        fn()
    assert str(info.value).startswith(match), str(info.value)


def test_errors_follow_torch():
    S2 = E(np.array([[1.0, 2], [2, 4]]))
    raises(lambda: ember.linalg.inv(S2), "linalg.inv: The diagonal element 2 is zero, the inversion could not be "
           "completed because the input matrix is singular.")
    raises(lambda: ember.linalg.inv(ember.stack([ember.eye(2, dtype=ember.float64), S2])),
           "linalg.inv: (Batch element 1): The diagonal element 2 is zero")
    raises(lambda: ember.linalg.inv(ember.zeros(2, 3)),
           "linalg.inv: A must be batches of square matrices, but they are 2 by 3 matrices")
    raises(lambda: ember.linalg.inv(ember.zeros(3)), "linalg.inv: The input tensor A must have at least 2 dimensions.")
    raises(lambda: ember.linalg.inv(ember.zeros(2, 2, dtype=ember.int64)),
           "linalg.inv: Expected a floating point or complex tensor as input. Got Long", NotImplementedError)
    raises(lambda: ember.linalg.solve(S2, ember.ones(2, dtype=ember.float64)),
           "torch.linalg.solve: The solver failed because the input matrix is singular.")
    raises(lambda: ember.linalg.solve(ember.eye(2), ember.ones(3)),
           "linalg.solve: Incompatible shapes of A and B for the equation AX = B (2x2 and 3x1)")
    raises(lambda: ember.linalg.cholesky(S2), "linalg.cholesky: The factorization could not be completed because the "
           "input is not positive-definite (the leading minor of order 2 is not positive-definite).")
    raises(lambda: ember.linalg.cholesky(ember.stack([ember.eye(2), -ember.eye(2)])),
           "linalg.cholesky: (Batch element 1): The factorization could not be completed")
    raises(lambda: ember.linalg.det(ember.zeros(2, 3)),
           "linalg.det: A must be batches of square matrices, but they are 2 by 3 matrices")
    raises(lambda: ember.linalg.qr(ember.zeros(2, 3), mode="foo"),
           "qr received unrecognized mode 'foo' but expected one of 'reduced' (default), 'r', or 'complete'")
    raises(lambda: ember.linalg.eigh(ember.zeros(2, 2), UPLO="X"), "Expected UPLO argument to be 'L' or 'U', but got X")
    raises(lambda: ember.linalg.svd(ember.zeros(3)), "linalg.svd: The input tensor A must have at least 2 dimensions.")
    raises(lambda: ember.linalg.lstsq(ember.zeros(3, 2), ember.zeros(4, 2)),
           "torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    raises(lambda: ember.linalg.matrix_norm(ember.zeros(3, 3), ord=3), "linalg.matrix_norm: Order 3 not supported.")
    raises(lambda: ember.linalg.vector_norm(ember.zeros(3, 3), ord="fro"),
           "linalg_vector_norm(): argument 'ord' must be Number, not str", TypeError)
    raises(lambda: ember.linalg.norm(ember.zeros(3, 3, 3), ord=2),
           "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got 3D.")
    raises(lambda: ember.linalg.cross(ember.zeros(3, 2), ember.zeros(3, 2)),
           "linalg.cross: inputs dimension -1 must have length 3. Got 2 and 2")
    raises(lambda: ember.linalg.cross(ember.zeros(4, 3), ember.zeros(2, 1, 3)),
           "linalg.cross: inputs must have the same number of dimensions.")
    raises(lambda: ember.cdist(ember.zeros(3, 2), ember.zeros(3, 3)),
           "X1 and X2 must have the same number of columns. X1: 2 X2: 3")
    raises(lambda: ember.cdist(ember.zeros(3), ember.zeros(3, 3)), "cdist only supports at least 2D tensors, X1 got: 1D")
    raises(lambda: ember.cdist(ember.zeros(3, 2), ember.zeros(3, 2), p=-1), "cdist only supports non-negative p values")
    raises(lambda: ember.linalg.qr(E(rand(3, 2), True), mode="r")[1].sum().backward(),
           "The derivative of linalg.qr depends on Q")
    # *_ex forms report without raising
    inv, info = ember.linalg.inv_ex(S2)
    assert int(info) == 2
    L, info = ember.linalg.cholesky_ex(ember.stack([ember.eye(2), -ember.eye(2)]))
    assert N(info).tolist() == [0, 1]


def test_empty_and_float32_cases(torch_ref):
    assert float(ember.linalg.det(ember.zeros(0, 0))) == 1.0
    assert tuple(ember.linalg.svdvals(ember.zeros(2, 0, 3)).shape) == (2, 0)
    assert tuple(ember.linalg.inv(ember.zeros(2, 0, 0)).shape) == (2, 0, 0)
    U, S, Vh = ember.linalg.svd(ember.zeros(0, 3))
    assert tuple(U.shape) == (0, 0) and tuple(Vh.shape) == (3, 3)
    a = rand(3, 3, dtype=np.float32)
    assert ember.linalg.inv(E(a)).dtype == ember.float32


# ---------------------------------------------------------------- composites over solve / matmul
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular_matches_torch(torch_ref, upper, left, unit):
    a = rand(2, 4, 4) + 4 * np.eye(4)
    b = rand(2, 4, 3, seed=1) if left else rand(2, 3, 4, seed=1)
    got = ember.linalg.solve_triangular(E(a), E(b), upper=upper, left=left, unitriangular=unit)
    want = torch_ref.linalg.solve_triangular(torch_pair(torch_ref, a), torch_pair(torch_ref, b), upper=upper,
                                             left=left, unitriangular=unit)
    close(N(got), want.numpy(), 1e-10)
    grads_match(torch_ref,
                lambda x, y: weighted(ember, ember.linalg.solve_triangular(x, y, upper=upper, left=left,
                                                                           unitriangular=unit), 5),
                lambda x, y: weighted(torch_ref, torch_ref.linalg.solve_triangular(x, y, upper=upper, left=left,
                                                                                   unitriangular=unit), 5),
                a, b)


def test_cholesky_solve_inverse_matrix_power_multi_dot_vecdot_match_torch(torch_ref):
    s = spd(2, 4, 4)
    L = np.linalg.cholesky(s)
    b = rand(2, 4, 3, seed=2)
    for upper in (False, True):
        f = np.swapaxes(L, -1, -2).copy() if upper else L
        close(N(ember.cholesky_solve(E(b), E(f), upper)),
              torch_ref.cholesky_solve(torch_pair(torch_ref, b), torch_pair(torch_ref, f), upper).numpy(), 1e-10)
        close(N(ember.cholesky_inverse(E(f[0]), upper)),
              torch_ref.cholesky_inverse(torch_pair(torch_ref, f[0]), upper).numpy(), 1e-10)
    a = rand(2, 3, 3) + 2 * np.eye(3)
    for n in (0, 1, 2, 5, -1, -3):
        close(N(ember.linalg.matrix_power(E(a), n)),
              torch_ref.linalg.matrix_power(torch_pair(torch_ref, a), n).numpy(), 1e-9)
    ms = [rand(4, seed=1), rand(4, 3, seed=2), rand(3, 5, seed=3), rand(5, seed=4)]
    close(N(ember.linalg.multi_dot([E(m) for m in ms])),
          torch_ref.linalg.multi_dot([torch_pair(torch_ref, m) for m in ms]).numpy(), 1e-10)
    x, y = rand(3, 4), rand(3, 4, seed=1)
    close(N(ember.linalg.vecdot(E(x), E(y), dim=0)), (x * y).sum(0), 1e-12)
    close(N(ember.linalg.diagonal(E(rand(2, 3, 3)), offset=1)), np.diagonal(rand(2, 3, 3), 1, -2, -1), 0)
    x = rand(4, 3)
    close(N(ember.norm(E(x), p="nuc")), torch_ref.norm(torch_pair(torch_ref, x), p="nuc").numpy(), 1e-10)


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 5, 5), (5, 3), (3, 5)])
def test_lu_family_matches_torch(torch_ref, shape):
    a = rand(*shape)
    ta = torch_pair(torch_ref, a)
    LU, piv = ember.linalg.lu_factor(E(a))
    tLU, tpiv = torch_ref.linalg.lu_factor(ta)
    close(N(LU), tLU.numpy(), 1e-12)
    assert N(piv).tolist() == tpiv.numpy().tolist() and piv.dtype == ember.int32
    for got, want in zip(ember.linalg.lu(E(a)), torch_ref.linalg.lu(ta)):
        close(N(got), want.numpy(), 1e-12)
    for got, want in zip(ember.lu_unpack(LU, piv), torch_ref.lu_unpack(tLU, tpiv)):
        close(N(got), want.numpy(), 1e-12)
    if shape[-1] == shape[-2]:
        b = rand(*shape[:-1], 2, seed=3)
        for left in (True, False):
            for adjoint in (False, True):
                bb = b if left else np.swapaxes(b, -1, -2).copy()
                got = ember.linalg.lu_solve(LU, piv, E(bb), left=left, adjoint=adjoint)
                want = torch_ref.linalg.lu_solve(tLU, tpiv, torch_pair(torch_ref, bb), left=left, adjoint=adjoint)
                close(N(got), want.numpy(), 1e-10)
        grads_match(torch_ref, lambda x: weighted(ember, ember.linalg.lu_factor(x)[0], 2),
                    lambda x: weighted(torch_ref, torch_ref.linalg.lu_factor(x)[0], 2), a)
        grads_match(torch_ref, lambda x: weighted(ember, ember.linalg.lu(x)[1:], 2),
                    lambda x: weighted(torch_ref, torch_ref.linalg.lu(x)[1:], 2), a)


def test_lu_errors_follow_torch():
    S2 = E(np.array([[1.0, 2], [2, 4]]))
    raises(lambda: ember.linalg.lu_factor(S2), "torch.linalg.lu_factor: U[2,2] is zero and using it on lu_solve would "
           "result in a division by zero.")
    LU, piv, info = ember.linalg.lu_factor_ex(S2)
    assert int(info) == 2 and N(piv).tolist() == [2, 2]
    raises(lambda: ember.linalg.lu_factor(ember.zeros(3)),
           "torch.lu_factor: Expected tensor with 2 or more dimensions. Got size: [3] instead")


@pytest.mark.parametrize("scale", [0.0, 0.1, 1.0, 20.0])
def test_matrix_exp_matches_torch(torch_ref, scale):
    a = rand(2, 4, 4) * scale
    close(N(ember.linalg.matrix_exp(E(a))), torch_ref.linalg.matrix_exp(torch_pair(torch_ref, a)).numpy(),
          1e-10 * max(1.0, float(np.abs(torch_ref.linalg.matrix_exp(torch_pair(torch_ref, a)).numpy()).max())))
    if scale:
        grads_match(torch_ref, lambda x: weighted(ember, ember.linalg.matrix_exp(x), 4),
                    lambda x: weighted(torch_ref, torch_ref.linalg.matrix_exp(x), 4), a, tol=1e-7)
    e32 = ember.linalg.matrix_exp(E(a.astype(np.float32)))
    assert e32.dtype == ember.float32


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", 1, -1, math.inf, -math.inf])
def test_cond_matches_torch(torch_ref, p):
    a = rand(2, 4, 4)
    close(N(ember.linalg.cond(E(a), p)), torch_ref.linalg.cond(torch_pair(torch_ref, a), p).numpy(), 1e-8)
    if p not in (None, 2, -2):
        assert math.isinf(float(ember.linalg.cond(E(np.array([[1.0, 2], [2, 4]])), p)))


def test_triangular_solve_chain_matmul_pdist_match_torch(torch_ref):
    a, b = rand(2, 4, 4) + 4 * np.eye(4), rand(2, 4, 3, seed=1)
    for upper in (True, False):
        for transpose in (False, True):
            got = ember.triangular_solve(E(b), E(a), upper=upper, transpose=transpose)
            want = torch_ref.triangular_solve(torch_pair(torch_ref, b), torch_pair(torch_ref, a), upper=upper,
                                              transpose=transpose)
            close(N(got.solution), want.solution.numpy(), 1e-10)
            close(N(got.cloned_coefficient), a, 0)
    ms = [rand(3, 4), rand(4, 2, seed=1), rand(2, 5, seed=2)]
    close(N(ember.chain_matmul(*[E(m) for m in ms])), ms[0] @ ms[1] @ ms[2], 1e-12)
    x = rand(6, 3)
    x[4] = x[1]
    for p in (2.0, 1.0, 0.0, math.inf, 3.0):
        close(N(ember.pdist(E(x), p)), torch_ref.pdist(torch_pair(torch_ref, x), p).numpy(), 1e-10)
    grads_match(torch_ref, lambda t: weighted(ember, ember.pdist(t), 1), lambda t: weighted(torch_ref, torch_ref.pdist(t), 1),
                x)


def test_layouts_and_dtypes():
    a = rand(3, 4, 4) + 4 * np.eye(4)
    base = E(a)
    want = np.linalg.inv(a)
    close(N(ember.linalg.inv(base.mT).mT), want, 1e-12)                 # column-major input
    close(N(ember.linalg.inv(base[:, :, :])), want, 1e-12)
    close(N(ember.linalg.inv(base[0].expand(2, 4, 4))), np.stack([want[0]] * 2), 1e-12)   # stride-0 batch
    wide = E(rand(4, 8))
    close(N(ember.linalg.svdvals(wide[:, ::2])), np.linalg.svd(rand(4, 8)[:, ::2], compute_uv=False), 1e-12)
    x = E(a)
    ember.linalg.inv(x)
    close(N(x), a, 0)  # the input is never overwritten by LAPACK
    raises(lambda: ember.linalg.inv(ember.eye(2, dtype=ember.float16)),
           "linalg.inv: Low precision dtypes not supported. Got Half")


def test_double_backward_through_svd_and_cholesky(torch_ref):
    a = rand(4, 3)
    e, t = E(a, True), torch_pair(torch_ref, a, True)
    (ge,) = ember.autograd.grad(ember.linalg.svdvals(e).sum(), e, create_graph=True)
    (gt,) = torch_ref.autograd.grad(torch_ref.linalg.svdvals(t).sum(), t, create_graph=True)
    (ge ** 2).sum().backward()
    (gt ** 2).sum().backward()
    close(N(e.grad), t.grad.numpy(), 1e-8)
    s = spd(3, 3)
    e, t = E(s, True), torch_pair(torch_ref, s, True)
    (ge,) = ember.autograd.grad(ember.linalg.cholesky(e).sum(), e, create_graph=True)
    (gt,) = torch_ref.autograd.grad(torch_ref.linalg.cholesky(t).sum(), t, create_graph=True)
    (ge ** 2).sum().backward()
    (gt ** 2).sum().backward()
    close(N(e.grad), t.grad.numpy(), 1e-8)
