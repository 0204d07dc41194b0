"""nn.utils weight_norm / spectral_norm (hook-based and parametrizations) and
nn.utils.parametrize, against torch: same parameter names and state_dict keys, same weights,
outputs, gradients and power-iteration buffers (torch's random u, v copied over first)."""
import warnings

import numpy as np
import pytest

import ember

nn = ember.nn
rng = np.random.RandomState(0)


def arr(t):
    return np.asarray(t.detach().tolist()) if hasattr(t, "detach") else np.asarray(t)


def tarr(t):
    return t.detach().numpy()


def copy_params(e_mod, t_mod, torch_ref):
    for (n, pe), (_, pt) in zip(e_mod.named_parameters(), t_mod.named_parameters()):
        with ember.no_grad():
            pe.copy_(ember.tensor(tarr(pt)))


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_parametrization_matches_torch(dim, torch_ref):
    if not hasattr(torch_ref.nn.utils.parametrizations, "weight_norm"):
        pytest.skip("this torch (< 2.1) has no nn.utils.parametrizations.weight_norm")
    e = nn.utils.parametrizations.weight_norm(nn.Linear(4, 3), dim=dim)
    t = torch_ref.nn.utils.parametrizations.weight_norm(torch_ref.nn.Linear(4, 3), dim=dim)
    assert list(e.state_dict().keys()) == list(t.state_dict().keys())
    copy_params(e, t, torch_ref)
    x = rng.randn(5, 4).astype(np.float32)
    ye, yt = e(ember.tensor(x)), t(torch_ref.tensor(x))
    np.testing.assert_allclose(arr(ye), tarr(yt), rtol=1e-5, atol=1e-6)
    ye.sum().backward()
    yt.sum().backward()
    for (n, pe), (_, pt) in zip(e.named_parameters(), t.named_parameters()):
        np.testing.assert_allclose(arr(pe.grad), tarr(pt.grad), rtol=1e-5, atol=1e-6, err_msg=n)
    assert type(e).__name__ == "ParametrizedLinear"
    nn.utils.parametrize.remove_parametrizations(e, "weight")
    assert type(e) is nn.Linear and list(e.state_dict().keys()) == ["bias", "weight"]  # re-registered last, as torch
    np.testing.assert_allclose(arr(e(ember.tensor(x))), tarr(yt), rtol=1e-5, atol=1e-6)


def test_legacy_weight_norm_matches_torch(torch_ref):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = nn.utils.weight_norm(nn.Conv1d(3, 4, 2))
        t = torch_ref.nn.utils.weight_norm(torch_ref.nn.Conv1d(3, 4, 2))
    assert sorted(n for n, _ in e.named_parameters()) == sorted(n for n, _ in t.named_parameters())
    copy_params(e, t, torch_ref)
    x = rng.randn(2, 3, 6).astype(np.float32)
    ye, yt = e(ember.tensor(x)), t(torch_ref.tensor(x))
    np.testing.assert_allclose(arr(ye), tarr(yt), rtol=1e-5, atol=1e-6)
    ye.sum().backward()
    yt.sum().backward()
    np.testing.assert_allclose(arr(e.weight_g.grad), tarr(t.weight_g.grad), rtol=1e-5, atol=1e-6)
    nn.utils.remove_weight_norm(e)
    assert sorted(n for n, _ in e.named_parameters()) == ["bias", "weight"]
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        nn.utils.remove_weight_norm(e)


def test_weight_norm_warns_as_torch():
    with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
        nn.utils.weight_norm(nn.Linear(2, 2))


@pytest.mark.parametrize("legacy", [False, True])
def test_spectral_norm_matches_torch(legacy, torch_ref):
    def make(lib):
        m = lib.nn.Linear(6, 5)
        return lib.nn.utils.spectral_norm(m) if legacy else lib.nn.utils.parametrizations.spectral_norm(m)
    e, t = make(ember), make(torch_ref)
    assert list(e.state_dict().keys()) == list(t.state_dict().keys())
    with ember.no_grad():
        for k, v in t.state_dict().items():  # torch's random u, v and its weights
            dict(e.state_dict())[k].copy_(ember.tensor(tarr(v)))
    for step in range(3):
        x = rng.randn(4, 6).astype(np.float32)
        ye, yt = e(ember.tensor(x)), t(torch_ref.tensor(x))
        np.testing.assert_allclose(arr(ye), tarr(yt), rtol=1e-4, atol=1e-5)
        ye.sum().backward()
        yt.sum().backward()
    for k, v in t.state_dict().items():
        np.testing.assert_allclose(arr(e.state_dict()[k]), tarr(v), rtol=1e-4, atol=1e-5, err_msg=k)
    e.eval()
    t.eval()
    x = rng.randn(4, 6).astype(np.float32)
    np.testing.assert_allclose(arr(e(ember.tensor(x))), tarr(t(torch_ref.tensor(x))), rtol=1e-4, atol=1e-5)


def test_spectral_norm_bounds_the_largest_singular_value():
    ember.manual_seed(0)
    m = nn.utils.parametrizations.spectral_norm(nn.Linear(8, 8))
    for _ in range(30):
        m(ember.randn(2, 8))  # power iteration converges in training forwards
    w = np.asarray(m.weight.detach().tolist())
    assert abs(np.linalg.svd(w, compute_uv=False)[0] - 1.0) < 1e-3
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive"):
        nn.utils.parametrizations.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)


def test_register_parametrization():
    class Symmetric(nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

    m = nn.Linear(3, 3)
    nn.utils.parametrize.register_parametrization(m, "weight", Symmetric())
    w = np.asarray(m.weight.detach().tolist())
    np.testing.assert_allclose(w, w.T)
    assert nn.utils.parametrize.is_parametrized(m) and nn.utils.parametrize.is_parametrized(m, "weight")
    assert "parametrizations.weight.original" in m.state_dict()
    m(ember.randn(2, 3)).sum().backward()
    assert m.parametrizations.weight.original.grad is not None
    with nn.utils.parametrize.cached():
        assert m.weight is m.weight
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized element"):
        nn.utils.parametrize.register_parametrization(m, "nope", Symmetric())
