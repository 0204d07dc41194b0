"""ember.fft's real-valued helpers against PyTorch, and the transforms' explicit refusal (ember
has no complex dtype yet)."""
import numpy as np
import pytest

import ember


@pytest.mark.parametrize("n", [1, 2, 5, 8])
@pytest.mark.parametrize("d", [1.0, 0.1])
def test_fftfreq_rfftfreq_match_torch(torch_ref, n, d):
    np.testing.assert_allclose(ember.fft.fftfreq(n, d).numpy(), torch_ref.fft.fftfreq(n, d).numpy(), rtol=1e-6)
    np.testing.assert_allclose(ember.fft.rfftfreq(n, d).numpy(), torch_ref.fft.rfftfreq(n, d).numpy(), rtol=1e-6)
    assert ember.fft.fftfreq(n, dtype=ember.float64).dtype == ember.float64


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1), -1])
def test_fftshift_ifftshift_match_torch(torch_ref, dim):
    x = np.arange(35.0).reshape(5, 7)
    for name in ("fftshift", "ifftshift"):
        got = getattr(ember.fft, name)(ember.from_numpy(x), dim=dim).numpy()
        want = getattr(torch_ref.fft, name)(torch_ref.from_numpy(x), dim=dim).numpy()
        np.testing.assert_array_equal(got, want)
    y = ember.from_numpy(x)
    np.testing.assert_array_equal(ember.fft.ifftshift(ember.fft.fftshift(y, dim=dim), dim=dim).numpy(), x)


def test_transforms_say_complex_is_missing():
    with pytest.raises(NotImplementedError, match="no complex dtype"):
        ember.fft.rfft(ember.zeros(4))


def test_linalg_eig_says_complex_is_missing():
    with pytest.raises(NotImplementedError, match="no complex dtype"):
        ember.linalg.eig(ember.eye(2))
