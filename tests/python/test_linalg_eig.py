"""linalg.eig / eigvals (LAPACK geev): complex eigenpairs of real and complex matrices, checked
against numpy and A V = V diag(L); gradients (torch's linalg_eig_backward) against central finite
differences of losses that do not depend on the eigenvectors' phases. torch 2.x comparisons run
where torch is installed."""
import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:
    torch = None


def _rand(shape, seed, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype,tol", [(ember.float64, 1e-10), (ember.float32, 1e-4)])
def test_eigenpairs_of_real_matrices(dtype, tol):
    a = _rand((3, 5, 5), 0)
    L, V = ember.linalg.eig(ember.tensor(a).to(dtype))
    assert L.dtype == (ember.complex128 if dtype == ember.float64 else ember.complex64) and V.shape == (3, 5, 5)
    Ln, Vn = L.numpy(), V.numpy()
    np.testing.assert_allclose(a.astype(Vn.dtype) @ Vn, Vn * Ln[:, None, :], atol=tol * 10)
    np.testing.assert_allclose(np.linalg.norm(Vn, axis=-2), 1.0, rtol=tol)
    for b in range(3):
        np.testing.assert_allclose(np.sort_complex(Ln[b]), np.sort_complex(np.linalg.eigvals(a[b])), rtol=tol * 10)
    # the complex pairs of a real matrix come as conjugates, vectors too
    rotation = ember.tensor([[0.0, -2.0], [2.0, 0.0]], dtype=ember.float64)
    L, V = ember.linalg.eig(rotation)
    np.testing.assert_allclose(sorted(L.numpy().imag.tolist()), [-2.0, 2.0], rtol=1e-14)
    assert np.allclose(L.numpy().real, 0)
    np.testing.assert_allclose(V.numpy()[:, 0], V.numpy()[:, 1].conj())
    np.testing.assert_allclose(ember.linalg.eigvals(rotation).numpy(), L.numpy())


def test_eigenpairs_of_complex_matrices_and_errors():
    a = _rand((4, 4), 1) + 1j * _rand((4, 4), 2)
    L, V = ember.linalg.eig(ember.tensor(a))
    assert L.dtype == ember.complex128
    np.testing.assert_allclose(a @ V.numpy(), V.numpy() * L.numpy()[None, :], atol=1e-10)
    np.testing.assert_allclose(np.sort_complex(L.numpy()), np.sort_complex(np.linalg.eigvals(a)), rtol=1e-10)
    with pytest.raises(RuntimeError, match="must be batches of square matrices"):
        ember.linalg.eig(ember.randn(2, 3))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        ember.linalg.eigvals(ember.randn(3))
    e = ember.linalg.eig(ember.zeros(0, 0, dtype=ember.float64))
    assert e.eigenvalues.shape == (0,) and e.eigenvectors.shape == (0, 0)


def _loss(A, w1, w2, w3, use_vectors=True):
    L, V = ember.linalg.eig(A)
    out = (ember.real(L) * w1).sum() + (ember.imag(L) * w2).sum()
    if use_vectors:
        out = out + (V.abs() ** 2 * w3).sum()  # |V| does not see the phase of a column
    return out


@pytest.mark.parametrize("use_vectors", [False, True])
def test_gradients_match_finite_differences(use_vectors):
    # eigenvalues well apart (one complex pair) so a small step keeps LAPACK's ordering
    a = np.array([[4.0, 1.0, 0.5, 0.2], [0.3, 1.0, -2.0, 0.1], [0.1, 2.5, 1.5, 0.4], [0.2, -0.3, 0.1, -3.0]])
    w1, w2 = ember.tensor([1.0, -2.0, 0.5, 3.0], dtype=ember.float64), ember.tensor([0.7, 0.2, -1.0, 0.4],
                                                                                     dtype=ember.float64)
    w3 = ember.tensor(_rand((4, 4), 3))
    A = ember.tensor(a, requires_grad=True)
    _loss(A, w1, w2, w3, use_vectors).backward()
    fd = np.zeros_like(a)
    h = 1e-6
    for i in range(4):
        for j in range(4):
            plus, minus = a.copy(), a.copy()
            plus[i, j] += h
            minus[i, j] -= h
            fd[i, j] = (_loss(ember.tensor(plus), w1, w2, w3, use_vectors).item()
                        - _loss(ember.tensor(minus), w1, w2, w3, use_vectors).item()) / (2 * h)
    assert A.grad.dtype == ember.float64
    np.testing.assert_allclose(A.grad.numpy(), fd, rtol=1e-5, atol=1e-6)


def test_phase_dependent_loss_is_refused_and_eigvals_differentiates():
    A = ember.tensor(_rand((3, 3), 4), requires_grad=True)
    L, V = ember.linalg.eig(A)
    with pytest.raises(RuntimeError, match="specified up to multiplication by e\\^\\{i phi\\}"):
        ember.imag(V).sum().backward()
    B = ember.tensor(_rand((3, 3), 5), requires_grad=True)
    ember.real(ember.linalg.eigvals(B)).sum().backward()  # d trace / dA = I
    np.testing.assert_allclose(B.grad.numpy(), np.eye(3), atol=1e-10)


@pytest.mark.skipif(torch is None or not hasattr(torch, "linalg") or not hasattr(torch.linalg, "eig"),
                    reason="needs torch with linalg.eig")
def test_against_torch():
    a = _rand((2, 4, 4), 6)
    w = _rand((2, 4, 4), 7)
    tA = torch.tensor(a, requires_grad=True)
    eA = ember.tensor(a, requires_grad=True)
    for A, mod in ((tA, torch), (eA, ember)):
        L, V = mod.linalg.eig(A)
        (mod.real(L).sum() + (V.abs() * mod.tensor(w)).sum()).backward()
    tL = torch.linalg.eigvals(torch.tensor(a)).numpy()
    np.testing.assert_allclose(ember.linalg.eigvals(ember.tensor(a)).numpy(), tL, rtol=1e-10)
    np.testing.assert_allclose(eA.grad.numpy(), tA.grad.numpy(), rtol=1e-7, atol=1e-9)
