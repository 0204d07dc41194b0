"""torch.geqrf / orgqr / ormqr (QR in LAPACK's packed form) and
nn.utils.parametrizations.orthogonal. References: numpy's QR in 'raw' mode (LAPACK's packed
output, transposed) and 'complete' mode, orthogonality checks; torch 2.x where installed."""
import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.nn.utils import parametrizations as P

try:
    import torch
except ImportError:
    torch = None


def _rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
def test_geqrf_matches_lapack_packed_form(shape):
    a = _rand(shape, 0)
    A, tau = ember.geqrf(ember.tensor(a))
    h, tau_np = np.linalg.qr(a, mode="raw")  # LAPACK's geqrf, stored transposed
    np.testing.assert_allclose(A.numpy(), h.T, atol=1e-12)
    np.testing.assert_allclose(tau.numpy(), tau_np, atol=1e-12)
    # orgqr rebuilds Q's first columns; ormqr multiplies by the full Q (or its transpose)
    q_complete = np.linalg.qr(a, mode="complete")[0]
    k = min(shape)
    np.testing.assert_allclose(ember.orgqr(A[:, :k] if shape[0] >= shape[1] else A[:, :k], tau).numpy(),
                               q_complete[:, :k], atol=1e-12)
    c = _rand((shape[0], 2), 1)
    np.testing.assert_allclose(ember.ormqr(A, tau, ember.tensor(c)).numpy(), q_complete @ c, atol=1e-12)
    np.testing.assert_allclose(A.ormqr(tau, ember.tensor(c), transpose=True).numpy(), q_complete.T @ c,
                               atol=1e-12)
    d = _rand((2, shape[0]), 2)
    np.testing.assert_allclose(ember.ormqr(A, tau, ember.tensor(d), left=False).numpy(), d @ q_complete, atol=1e-12)


def test_geqrf_batches_and_refuses_what_it_cannot_do():
    a = _rand((3, 4, 2), 3)
    A, tau = ember.geqrf(ember.tensor(a))
    for b in range(3):
        h, t = np.linalg.qr(a[b], mode="raw")
        np.testing.assert_allclose(A[b].numpy(), h.T, atol=1e-12)
        np.testing.assert_allclose(tau[b].numpy(), t, atol=1e-12)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        ember.geqrf(ember.ones(3))
    with pytest.raises(NotImplementedError, match="real matrices only"):
        ember.geqrf(ember.ones(2, 2, dtype=ember.complex64))


def _orthogonality(W):
    W = W.detach().numpy()
    g = W.T @ W if W.shape[0] >= W.shape[1] else W @ W.T
    return np.abs(g - np.eye(g.shape[0])).max()


@pytest.mark.parametrize("shape,mapping,trivial", [
    ((5, 5), "matrix_exp", True), ((5, 5), "cayley", True), ((5, 5), "householder", True),
    ((6, 3), "householder", True), ((6, 3), "householder", False), ((3, 6), "matrix_exp", True),
    ((3, 6), "householder", False)])
def test_orthogonal_stays_orthogonal_while_training(shape, mapping, trivial):
    ember.manual_seed(0)
    lin = nn.Linear(shape[1], shape[0], bias=False)
    P.orthogonal(lin, orthogonal_map=mapping, use_trivialization=trivial)
    assert _orthogonality(lin.weight) < 1e-5
    opt = ember.optim.SGD(lin.parameters(), lr=0.2)
    x = ember.randn(8, shape[1])
    target = ember.randn(8, shape[0])
    losses = []
    for _ in range(10):
        opt.zero_grad()
        loss = (lin(x) - target).pow(2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert _orthogonality(lin.weight) < 1e-5
    assert losses[-1] < losses[0]


def test_orthogonal_square_keeps_the_qr_of_the_initial_weight_and_errors():
    lin = nn.Linear(4, 4, bias=False)
    w0 = lin.weight.detach().numpy().astype(np.float64)
    P.orthogonal(lin)
    q, r = np.linalg.qr(w0)
    q = q * np.sign(np.diag(r))[None, :]
    np.testing.assert_allclose(lin.weight.detach().numpy(), q, atol=1e-5)
    keys = set(lin.state_dict())
    assert keys == {"parametrizations.weight.original", "parametrizations.weight.0.base"}
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices"):
        P.orthogonal(_with_vector(), "v")
    with pytest.raises(ValueError, match='orthogonal_map has to be one of'):
        P.orthogonal(nn.Linear(3, 3), orthogonal_map="qr")
    cayley = P.orthogonal(nn.Linear(3, 3), orthogonal_map="cayley", use_trivialization=False)
    with pytest.raises(NotImplementedError, match="use_trivialization=False"):  # as torch: on assignment
        cayley.weight = ember.eye(3)


def _with_vector():
    m = nn.Module()
    m.v = nn.Parameter(ember.ones(3))
    return m


@pytest.mark.skipif(torch is None or not hasattr(torch, "geqrf"), reason="needs torch")
def test_against_torch():
    a = _rand((2, 5, 4), 4)
    ta, tt = torch.geqrf(torch.tensor(a))
    ea, et = ember.geqrf(ember.tensor(a))
    np.testing.assert_allclose(ea.numpy(), ta.numpy(), atol=1e-12)
    np.testing.assert_allclose(et.numpy(), tt.numpy(), atol=1e-12)
    w = _rand((4, 4), 5).astype(np.float32)
    tl, el = torch.nn.Linear(4, 4, bias=False), nn.Linear(4, 4, bias=False)
    with torch.no_grad():
        tl.weight.copy_(torch.tensor(w))
    el.weight.data = ember.tensor(w)
    torch.nn.utils.parametrizations.orthogonal(tl)
    P.orthogonal(el)
    np.testing.assert_allclose(el.weight.detach().numpy(), tl.weight.detach().numpy(), atol=1e-5)
