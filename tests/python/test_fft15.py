"""ember.fft against PyTorch: every transform over odd, even, prime and power-of-two sizes,
n / s resizing, dims and norm modes, float32 and float64 (and integer inputs), the gradients of
each transform, fftfreq/rfftfreq/fftshift/ifftshift, and torch's errors."""
import numpy as np
import pytest

import ember


def _np(t):
    return t.detach().numpy()


def _real(shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _complex(shape, dtype=np.complex128, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _tol(dtype):
    return dict(rtol=2e-4, atol=2e-4) if dtype in (np.float32, np.complex64) else dict(rtol=1e-9, atol=1e-9)


NORMS = [None, "backward", "ortho", "forward"]


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
@pytest.mark.parametrize("size", [1, 2, 7, 8, 12, 13, 67, 142])  # 67, 142: Bluestein
@pytest.mark.parametrize("norm", NORMS)
def test_1d_transforms_match_torch(torch_ref, name, size, norm):
    if name in ("irfft", "hfft") and size == 1:
        pytest.skip("irfft/hfft of one point has no default output size (torch raises too)")
    real_input = name in ("rfft", "ihfft")
    for dtype in ((np.float32, np.float64) if real_input else (np.complex64, np.complex128)):
        a = _real((3, size), dtype) if real_input else _complex((3, size), dtype)
        got = getattr(ember.fft, name)(ember.from_numpy(a), norm=norm)
        want = getattr(torch_ref.fft, name)(torch_ref.from_numpy(a), norm=norm)
        assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(_np(got), want.resolve_conj().numpy(), **_tol(dtype))


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
@pytest.mark.parametrize("n", [3, 6, 10, 16])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_n_and_dim_resize_like_torch(torch_ref, name, n, dim):
    real_input = name in ("rfft", "ihfft")
    a = _real((5, 6, 4)) if real_input else _complex((5, 6, 4))
    got = getattr(ember.fft, name)(ember.from_numpy(a), n=n, dim=dim)
    want = getattr(torch_ref.fft, name)(torch_ref.from_numpy(a), n=n, dim=dim)
    np.testing.assert_allclose(_np(got), want.resolve_conj().numpy(), rtol=1e-9, atol=1e-9)


def test_real_and_integer_inputs_promote_like_torch(torch_ref):
    x = np.arange(8)
    for dtype, want in ((np.float32, "complex64"), (np.float64, "complex128"), (np.int64, "complex64")):
        got = ember.fft.fft(ember.from_numpy(x.astype(dtype)))
        assert str(got.dtype) == "ember." + want
        np.testing.assert_allclose(_np(got), torch_ref.fft.fft(torch_ref.from_numpy(x.astype(dtype))).numpy(), rtol=1e-5)
    assert ember.fft.rfft(ember.arange(6)).dtype == ember.complex64


@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2", "rfft2", "irfft2"])
@pytest.mark.parametrize("s,dim", [(None, None), ((4, 6), None), (None, (0, 2)), ((5, 3), (2, 0)), ((8,), (1,)),
                                   ((-1, 6), (0, 1))])
@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
def test_nd_transforms_match_torch(torch_ref, name, s, dim, norm):
    real_input = name.startswith("rfft")
    a = _real((4, 5, 6)) if real_input else _complex((4, 5, 6))
    kwargs = {"norm": norm}
    if s is not None:
        kwargs["s"] = s
    if dim is not None:
        kwargs["dim"] = dim
    if name.endswith("2") and ((s is not None and len(s) != 2) or (dim is not None and len(dim) != 2)):
        pytest.skip("the 2-D forms take two dims")
    got = getattr(ember.fft, name)(ember.from_numpy(a), **kwargs)
    want = getattr(torch_ref.fft, name)(torch_ref.from_numpy(a), **kwargs)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(_np(got), want.numpy(), rtol=1e-9, atol=1e-9)


def test_roundtrips():
    x = ember.from_numpy(_real((3, 10)))
    np.testing.assert_allclose(_np(ember.fft.irfft(ember.fft.rfft(x), n=10)), _np(x), atol=1e-12)
    np.testing.assert_allclose(_np(ember.fft.ifft(ember.fft.fft(x)).real), _np(x), atol=1e-12)
    z = ember.from_numpy(_complex((4, 6, 5)))
    np.testing.assert_allclose(_np(ember.fft.ifftn(ember.fft.fftn(z, norm="ortho"), norm="ortho")), _np(z), atol=1e-12)


def _grad_of(lib, name, a, w, **kw):
    x = lib.tensor(a, requires_grad=True)
    y = getattr(lib.fft, name)(x, **kw)
    wt = lib.tensor(w[tuple(slice(0, s) for s in y.shape)])
    loss = (y * wt).real.sum() + (y.abs() ** 2).sum() if y.is_complex() else (y * wt.real).sum() + (y ** 2).sum()
    loss.backward()
    return x.grad.detach().numpy() if lib is ember else x.grad.resolve_conj().numpy()


@pytest.mark.parametrize("name,kw", [("fft", {}), ("ifft", {"norm": "ortho"}), ("rfft", {}), ("rfft", {"n": 7}),
                                     ("irfft", {}), ("irfft", {"n": 9}), ("hfft", {}), ("ihfft", {"norm": "forward"}),
                                     ("fft2", {}), ("rfftn", {"dim": (0, 1)}), ("irfftn", {"s": (4, 7)}),
                                     ("ifftn", {"s": (3, 5), "dim": (1, 0)}), ("fft", {"n": 11, "dim": 0})])
def test_gradients_match_torch(torch_ref, name, kw):
    real_input = name in ("rfft", "ihfft", "rfftn")
    a = _real((4, 6), seed=1) if real_input else _complex((4, 6), seed=1)
    w = _complex((16, 16), seed=2)
    got = _grad_of(ember, name, a, w, **kw)
    want = _grad_of(torch_ref, name, a, w, **kw)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


def test_second_order_gradient_through_rfft(torch_ref):
    a = _real((8,), seed=4)
    results = []
    for lib in (ember, torch_ref):
        x = lib.tensor(a, requires_grad=True)
        spec = lib.fft.rfft(x)
        (g,) = lib.autograd.grad((spec.abs() ** 2).sum(), x, create_graph=True)
        (g * g).sum().backward()
        results.append(x.grad.detach().numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-9)


def test_errors_match_torch():
    x = ember.zeros(4)
    with pytest.raises(RuntimeError, match='Invalid normalization mode: "bad"'):
        ember.fft.fft(x, norm="bad")
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\) specified"):
        ember.fft.fft(x, n=0)
    with pytest.raises(RuntimeError, match="rfft expects a real input tensor, but got ComplexFloat"):
        ember.fft.rfft(ember.zeros(4, dtype=ember.complex64))
    with pytest.raises(RuntimeError, match="dim and shape arguments must have the same length"):
        ember.fft.fftn(ember.zeros(3, 3), s=(3, 3), dim=(0,))
    with pytest.raises(RuntimeError, match="FFT dims must be unique"):
        ember.fft.fftn(ember.zeros(3, 3), dim=(0, 0))
    with pytest.raises(IndexError):
        ember.fft.fft(x, dim=2)


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
    z = ember.from_numpy(_complex((4, 5)))
    np.testing.assert_array_equal(_np(ember.fft.fftshift(z)), torch_ref.fft.fftshift(torch_ref.from_numpy(_np(z))).numpy())


# The paths of the lane engine (src/cpu/fft_plan.h): lane groups with a partial last group (40
# lines: 16 + 16 + 8 floats), lines of a strided dim, one or two long lines through the six-step
# LongPlan (4096 = 64 x 64, 4100 = 50 x 82 with partial groups, 100000 = 250 x 400 with radix 5,
# 2^17 over the lane plan's limit), and a long line with no split (2 x 4099: Bluestein alone).
@pytest.mark.parametrize("shape,dim", [((40, 4096), -1), ((4096, 40), 0), ((1, 4096), -1), ((2, 4100), -1),
                                       ((2, 100000), -1), ((1, 1 << 17), -1), ((1, 8198), -1), ((3, 24, 5000), 1)])
@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft"])
def test_lane_groups_and_long_lines_match_torch(torch_ref, shape, dim, name):
    real_input = name == "rfft"
    for dtype in ((np.float32, np.float64) if real_input else (np.complex64, np.complex128)):
        a = _real(shape, dtype, seed=3) if real_input else _complex(shape, dtype, seed=3)
        got = getattr(ember.fft, name)(ember.from_numpy(a), dim=dim)
        want = getattr(torch_ref.fft, name)(torch_ref.from_numpy(a), dim=dim)
        scale = np.abs(want.numpy()).max()
        np.testing.assert_allclose(_np(got) / scale, want.numpy() / scale, **_tol(dtype))
