"""torch.stft / torch.istft, the window factories (hann_window, ..., kaiser_window), torch.signal.windows
and torch.fft.hfft2/hfftn/ihfft2/ihfftn in ember (python/ember/_spectral.py, ember/signal, ember/fft).

Every value is checked against an independent reference: numpy's FFT over frames built with
numpy (and one explicit DFT sum), numpy overlap-add, closed-form window formulas (np.i0 for
Kaiser), the istft(stft(x)) round trip, and finite differences for the gradients. PyTorch 2.x,
where installed, is an extra comparison (values, shapes, strides, messages)."""
import math
import warnings

import numpy as np
import pytest

import ember
from ember import _spectral


def _np(t):
    return t.detach().numpy()


def _rng(seed=0):
    return np.random.default_rng(seed)


def _cplx(a):
    """ember complex tensor -> numpy complex array."""
    r = _np(ember.view_as_real(a.detach()))
    return r[..., 0] + 1j * r[..., 1]


@pytest.fixture
def torch2():
    torch = pytest.importorskip("torch", reason="PyTorch not installed: differential test skipped")
    if int(torch.__version__.split(".")[0]) < 2:
        pytest.skip(f"needs PyTorch 2.x (have {torch.__version__})")
    return torch


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


# ------------------------------------------------------------------------------------------ windows
def _cos_sum(n, denominator, coefficients):
    return sum((-1) ** k * a * np.cos(2 * np.pi * k * n / denominator) for k, a in enumerate(coefficients))


def _factory_reference(name, length, periodic, **kw):
    if length == 0:
        return np.zeros(0)
    if length == 1:
        return np.ones(1)
    n = np.arange(length, dtype=np.float64)
    d = length if periodic else length - 1
    if name == "hann_window":
        return 0.5 - 0.5 * np.cos(2 * np.pi * n / d)
    if name == "hamming_window":
        return kw.get("alpha", 0.54) - kw.get("beta", 0.46) * np.cos(2 * np.pi * n / d)
    if name == "blackman_window":
        return 0.42 - 0.5 * np.cos(2 * np.pi * n / d) + 0.08 * np.cos(4 * np.pi * n / d)
    if name == "bartlett_window":
        return 1 - np.abs(2 * n / d - 1)
    beta = kw.get("beta", 12.0)
    return np.i0(beta * np.sqrt(np.clip(1 - (2 * n / d - 1) ** 2, 0, None))) / np.i0(beta)


FACTORIES = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]


@pytest.mark.parametrize("name", FACTORIES)
def test_window_factories_match_closed_forms(name):
    fn = getattr(ember, name)
    for length in (0, 1, 2, 5, 16, 17):
        for periodic in (True, False):
            want = _factory_reference(name, length, periodic)
            w64 = fn(length, periodic, dtype=ember.float64)
            assert w64.dtype == ember.float64 and tuple(w64.shape) == (length,)
            np.testing.assert_allclose(_np(w64), want, rtol=1e-12, atol=1e-14)
            w32 = fn(length, periodic=periodic, dtype=ember.float32)
            assert w32.dtype == ember.float32
            np.testing.assert_allclose(_np(w32), want, rtol=1e-6, atol=1e-7)
    assert fn(8).dtype == ember.get_default_dtype()
    np.testing.assert_allclose(_np(fn(8)), _factory_reference(name, 8, True), atol=1e-6)  # periodic by default
    w = fn(6, requires_grad=True)
    assert w.requires_grad and w.is_leaf


def test_window_factory_parameters():
    np.testing.assert_allclose(_np(ember.hamming_window(9, False, 0.6, 0.3, dtype=ember.float64)),
                               _factory_reference("hamming_window", 9, False, alpha=0.6, beta=0.3), atol=1e-14)
    np.testing.assert_allclose(_np(ember.hamming_window(9, alpha=0.5, beta=0.5, dtype=ember.float64)),
                               _factory_reference("hann_window", 9, True), atol=1e-14)
    for beta in (0.0, 5.0, 30.0):
        np.testing.assert_allclose(_np(ember.kaiser_window(11, True, beta, dtype=ember.float64)),
                                   _factory_reference("kaiser_window", 11, True, beta=beta), rtol=1e-10)


def test_window_factory_errors():
    with pytest.raises(RuntimeError, match="hann_window requires non-negative window_length, got window_length=-1"):
        ember.hann_window(-1)
    with pytest.raises(RuntimeError, match="kaiser_window expects floating point dtypes"):
        ember.kaiser_window(4, dtype=ember.int64)
    with pytest.raises(TypeError, match=r"hann_window\(\): argument 'window_length' \(position 1\) must be int, "
                                        "not float"):
        ember.hann_window(4.0)
    with pytest.raises(TypeError, match="must be int, not bool"):
        ember.blackman_window(True)


def _signal_reference(name, M, sym, **kw):
    if M == 0:
        return np.zeros(0)
    n = np.arange(M, dtype=np.float64)
    periodic = not sym and M > 1
    if name == "exponential":
        c = kw.get("center")
        c = ((M if periodic else M - 1) / 2) if c is None else c
        return np.exp(-np.abs(n - c) / kw.get("tau", 1.0))
    if name == "gaussian":
        c = (M if periodic else M - 1) / 2
        return np.exp(-((n - c) ** 2) / (2 * kw.get("std", 1.0) ** 2))
    if name == "cosine":
        return np.sin(np.pi * (n + 0.5) / (M + 1 if periodic else M))
    if M == 1:
        return np.ones(1)
    d = M if not sym else M - 1
    if name == "bartlett":
        return 1 - np.abs(2 * n / d - 1)
    if name == "kaiser":
        beta = kw.get("beta", 12.0)
        return np.i0(beta * np.sqrt(np.clip(1 - (2 * n / d - 1) ** 2, 0, None))) / np.i0(beta)
    coefficients = {"hann": [0.5, 0.5], "hamming": [0.54, 0.46], "blackman": [0.42, 0.5, 0.08],
                    "nuttall": [0.3635819, 0.4891775, 0.1365995, 0.0106411],
                    "general_hamming": [kw.get("alpha", 0.54), 1 - kw.get("alpha", 0.54)]}.get(name, kw.get("a"))
    return _cos_sum(n, d, coefficients)


SIGNAL_WINDOWS = [("bartlett", {}), ("blackman", {}), ("cosine", {}), ("exponential", {}),
                  ("exponential", {"tau": 2.5}),
                  ("gaussian", {}), ("gaussian", {"std": 3.0}), ("general_cosine", {"a": [0.4, 0.35, 0.25]}),
                  ("general_hamming", {}), ("general_hamming", {"alpha": 0.7}), ("hamming", {}), ("hann", {}),
                  ("kaiser", {}), ("kaiser", {"beta": 4.0}), ("nuttall", {})]


@pytest.mark.parametrize("name,kw", SIGNAL_WINDOWS)
def test_signal_windows_match_closed_forms(name, kw):
    fn = getattr(ember.signal.windows, name)
    for M in (0, 1, 2, 7, 16):
        for sym in (True, False):
            want = _signal_reference(name, M, sym, **kw)
            got = fn(M, sym=sym, dtype=ember.float64, **kw)
            assert got.dtype == ember.float64 and tuple(got.shape) == (M,)
            np.testing.assert_allclose(_np(got), want, rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(_np(fn(M, sym=sym, dtype=ember.float32, **kw)), want, rtol=1e-6, atol=1e-7)
    assert fn(5, **kw).dtype == ember.get_default_dtype()
    np.testing.assert_allclose(_np(fn(9, **kw)), _signal_reference(name, 9, True, **kw), atol=1e-6)  # sym default


def test_signal_windows_options_and_errors():
    w = ember.signal.windows.exponential(6, center=1.0, sym=False, dtype=ember.float64)
    np.testing.assert_allclose(_np(w), np.exp(-np.abs(np.arange(6) - 1.0)), rtol=1e-14)
    assert ember.signal.windows.hann(4, requires_grad=True).requires_grad
    cases = [
        (lambda: ember.signal.windows.hann(-1), ValueError,
         "general_cosine requires non-negative window length, got M=-1"),
        (lambda: ember.signal.windows.gaussian(-2), ValueError, "gaussian requires non-negative window length"),
        (lambda: ember.signal.windows.blackman(3, dtype=ember.float16), ValueError,
         "blackman expects float32 or float64 dtypes"),
        (lambda: ember.signal.windows.general_cosine(5, a=3), TypeError, "Coefficients must be a list/tuple"),
        (lambda: ember.signal.windows.general_cosine(5, a=[]), ValueError, "Coefficients cannot be empty"),
        (lambda: ember.signal.windows.exponential(5, center=1.0), ValueError, "Center must be None for symmetric"),
        (lambda: ember.signal.windows.exponential(5, tau=0), ValueError, "Tau must be positive, got: 0 instead."),
        (lambda: ember.signal.windows.gaussian(5, std=-1), ValueError, "Standard deviation must be positive"),
        (lambda: ember.signal.windows.kaiser(5, beta=-1), ValueError, "beta must be non-negative, got: -1 instead."),
    ]
    for fn, exc, message in cases:
        with pytest.raises(exc, match=message.replace("(", r"\(").replace(")", r"\)")):
            fn()


# --------------------------------------------------------------------------------------------- stft
_NP_PAD = {"reflect": "reflect", "constant": "constant", "replicate": "edge", "circular": "wrap"}


def _stft_reference(x, n_fft, hop=None, win_length=None, window=None, center=True, pad_mode="reflect",
                    normalized=False, onesided=None, align_to_window=False):
    """numpy: pad, frame, window (centred in n_fft), FFT of each frame -> (batch?, freq, frames)."""
    hop = n_fft // 4 if hop is None else hop
    win_length = n_fft if win_length is None else win_length
    w = np.ones(win_length) if window is None else window
    left = (n_fft - win_length) // 2
    w = np.pad(w, (left, n_fft - win_length - left))
    x2 = np.atleast_2d(x)
    if center:
        x2 = np.pad(x2, ((0, 0), (n_fft // 2, n_fft // 2)), mode=_NP_PAD[pad_mode])
    elif align_to_window:
        x2 = np.pad(x2, ((0, 0), (left, left)), mode=_NP_PAD[pad_mode])
    count = 1 + (x2.shape[1] - n_fft) // hop
    frames = np.stack([x2[:, i * hop:i * hop + n_fft] for i in range(count)], axis=1) * w
    complex_fft = np.iscomplexobj(frames)
    onesided = (not complex_fft) if onesided is None else onesided
    spec = (np.fft.rfft if onesided else np.fft.fft)(frames, axis=-1, norm="ortho" if normalized else "backward")
    spec = spec.transpose(0, 2, 1)
    return spec[0] if np.ndim(x) == 1 else spec


def test_stft_matches_an_explicit_dft_sum():
    x = _rng(1).standard_normal(40)
    w = 0.5 + _rng(2).random(10)
    n_fft, hop = 12, 5
    got = _cplx(ember.stft(ember.from_numpy(x), n_fft, hop_length=hop, win_length=10, window=ember.from_numpy(w),
                           center=False, return_complex=True))
    wp = np.pad(w, (1, 1))
    frames = 1 + (40 - n_fft) // hop
    want = np.zeros((n_fft // 2 + 1, frames), complex)
    for m in range(frames):
        for k in range(n_fft // 2 + 1):
            want[k, m] = sum(wp[j] * x[m * hop + j] * np.exp(-2j * np.pi * k * j / n_fft) for j in range(n_fft))
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


STFT_CASES = [
    dict(n_fft=64),
    dict(n_fft=64, hop=10, win_length=40),
    dict(n_fft=63, center=False),
    dict(n_fft=50, hop=7, normalized=True, onesided=False),
    dict(n_fft=32, pad_mode="constant"),
    dict(n_fft=32, pad_mode="replicate"),
    dict(n_fft=32, pad_mode="circular"),
    dict(n_fft=64, win_length=30, center=False, align_to_window=True),
]


@pytest.mark.parametrize("case", STFT_CASES)
@pytest.mark.parametrize("windowed", [False, True])
def test_stft_matches_numpy(case, windowed):
    case = dict(case)
    hop, align = case.pop("hop", None), case.pop("align_to_window", None)
    win_length = case.get("win_length", case["n_fft"])
    w = np.hanning(win_length + 2)[1:-1] if windowed else None
    x = _rng(3).standard_normal((3, 300))
    for signal in (x, x[1]):
        got = ember.stft(ember.from_numpy(signal), hop_length=hop, window=None if w is None else ember.from_numpy(w),
                         return_complex=True, align_to_window=align, **case)
        want = _stft_reference(signal, hop=hop, window=w, align_to_window=align, **case)
        assert got.dtype == ember.complex128 and tuple(got.shape) == want.shape
        np.testing.assert_allclose(_cplx(got), want, rtol=1e-10, atol=1e-10)


def test_stft_complex_input_float32_and_view_as_real():
    rng = _rng(4)
    z = (rng.standard_normal((2, 200)) + 1j * rng.standard_normal((2, 200)))
    w = np.hanning(32)
    got = ember.stft(ember.from_numpy(z), 32, window=ember.from_numpy(w))  # complex input: complex, two-sided
    assert got.dtype == ember.complex128 and tuple(got.shape) == (2, 32, 1 + 200 // 8)
    np.testing.assert_allclose(_cplx(got), _stft_reference(z, 32, window=w), rtol=1e-10, atol=1e-10)
    x = rng.standard_normal(256).astype(np.float32)
    real = ember.stft(ember.from_numpy(x), 64, hop_length=16, return_complex=False)
    assert real.dtype == ember.float32 and tuple(real.shape) == (33, 17, 2)
    want = _stft_reference(x.astype(np.float64), 64, 16)
    np.testing.assert_allclose(_np(real)[..., 0], want.real, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(_np(real)[..., 1], want.imag, rtol=1e-4, atol=1e-4)
    # a float64 window promotes a float32 signal, as torch's multiply does
    mixed = ember.stft(ember.from_numpy(x), 64, window=ember.hann_window(64, dtype=ember.float64), return_complex=True)
    assert mixed.dtype == ember.complex128
    # a complex window makes a real signal's transform complex and two-sided
    cw = ember.stft(ember.from_numpy(x), 64, window=ember.hann_window(64).to(ember.complex64))
    assert cw.dtype == ember.complex64 and cw.shape[0] == 64


def test_stft_tensor_method_and_output_layout():
    x = ember.randn(2, 500, dtype=ember.float64)
    w = ember.hann_window(128, dtype=ember.float64)
    a = x.stft(128, hop_length=32, window=w, return_complex=True)
    b = ember.stft(x, 128, 32, window=w, return_complex=True)
    np.testing.assert_array_equal(_cplx(a), _cplx(b))
    assert tuple(a.shape) == (2, 65, 16) and tuple(a.stride()) == (65 * 16, 1, 65)  # torch's transposed layout


def test_stft_warnings_and_errors():
    x = ember.randn(100)
    _spectral._warned.clear()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ember.stft(x, 16, return_complex=False)
        ember.stft(x, 16, return_complex=False)
    messages = [str(w.message) for w in seen]
    assert sum("A window was not provided" in m for m in messages) == 1  # once per process, as TORCH_WARN_ONCE
    assert sum("stft with return_complex=False is deprecated" in m for m in messages) == 1
    prefix = r"stft\(torch.FloatTensor\[116\], n_fft=16, hop_length="
    cases = [
        (lambda: ember.stft(x, 16), RuntimeError,
         r"stft requires the return_complex parameter be given for real inputs, and will further require that "
         r"return_complex=True in a future PyTorch release."),
        (lambda: ember.stft(x, 101, center=False, return_complex=True), RuntimeError,
         r"stft\(torch.FloatTensor\[100\], n_fft=101, hop_length=25, win_length=101, window=None, normalized=0, "
         r"onesided=None, return_complex=1, align_to_window=None\) : expected 0 < n_fft < 100, but got n_fft=101"),
        (lambda: ember.stft(x, 16, hop_length=0, return_complex=True), RuntimeError,
         prefix + r"0, .* : expected hop_length > 0, but got hop_length=0"),
        (lambda: ember.stft(x, 16, win_length=20, return_complex=True), RuntimeError,
         prefix + r"4, .* : expected 0 < win_length <= n_fft, but got win_length=20"),
        (lambda: ember.stft(x, 16, window=ember.ones(10), return_complex=True), RuntimeError,
         r"window=torch.FloatTensor\{\[10\]\}.* : expected a 1D window tensor of size equal to win_length=16, "
         r"but got window with size \[10\]"),
        (lambda: ember.stft(x.long(), 16, return_complex=True), NotImplementedError,
         r"stft\(torch.LongTensor\[116\].* : expected a tensor of floating point or complex values"),
        (lambda: ember.stft(ember.randn(2, 3, 100), 16, return_complex=True), RuntimeError,
         r"stft\(torch.FloatTensor\[2, 3, 116\].* : expected a 1D or 2D tensor"),
        (lambda: ember.stft(x.to(ember.complex64), 16, onesided=True), RuntimeError,
         "Cannot have onesided output if window or input is complex"),
        (lambda: ember.stft(x, 16, center=True, align_to_window=True, return_complex=True), RuntimeError,
         "stft align_to_window should only be set when center = false"),
        (lambda: ember.stft(x, 200, return_complex=True), RuntimeError, "Padding size should be less than"),
        (lambda: ember.stft(x, 16, pad_mode="foo", return_complex=True), NotImplementedError,
         "Unrecognised padding mode foo"),
    ]
    for fn, exc, pattern in cases:
        with pytest.raises(exc, match=pattern):
            fn()


# -------------------------------------------------------------------------------------------- istft
def _istft_reference(spec, n_fft, hop, window, center=True, length=None):
    """numpy: inverse rFFT of each frame, times the window, overlap-add, / overlap-added window^2."""
    frames = np.fft.irfft(np.swapaxes(spec, -1, -2), n=n_fft, axis=-1) * window
    count = frames.shape[-2]
    total = n_fft + hop * (count - 1)
    y = np.zeros(frames.shape[:-2] + (total,))
    env = np.zeros(total)
    for m in range(count):
        y[..., m * hop:m * hop + n_fft] += frames[..., m, :]
        env[m * hop:m * hop + n_fft] += window ** 2
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (total - n_fft // 2 if center else total)
    return y[..., start:end] / env[start:end]


@pytest.mark.parametrize("n_fft", [64, 63])
def test_istft_matches_numpy_overlap_add(n_fft):
    rng = _rng(5)
    freq, frames, hop = n_fft // 2 + 1, 12, n_fft // 4
    spec = rng.standard_normal((2, freq, frames)) + 1j * rng.standard_normal((2, freq, frames))
    w = np.hanning(n_fft + 1)[:n_fft] + 0.05
    got = ember.istft(ember.from_numpy(spec), n_fft, hop, window=ember.from_numpy(w))
    want = _istft_reference(spec, n_fft, hop, w)
    assert got.dtype == ember.float64 and tuple(got.shape) == want.shape
    np.testing.assert_allclose(_np(got), want, rtol=1e-10, atol=1e-10)
    got = ember.istft(ember.from_numpy(spec[0]), n_fft, hop, window=ember.from_numpy(w), center=False, length=150)
    np.testing.assert_allclose(_np(got), _istft_reference(spec[0], n_fft, hop, w, center=False, length=150),
                               rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("n_fft,win_length", [(512, 512), (400, 400), (256, 200)])
def test_istft_inverts_stft(n_fft, win_length):
    x = ember.randn(3, 4000, dtype=ember.float64)
    w = ember.hann_window(win_length, dtype=ember.float64)
    hop = n_fft // 4
    spec = ember.stft(x, n_fft, hop, win_length, window=w, return_complex=True)
    back = ember.istft(spec, n_fft, hop, win_length, window=w, length=4000)
    np.testing.assert_allclose(_np(back), _np(x), atol=1e-10)
    back = ember.istft(spec, n_fft, hop, win_length, window=w)  # no length: (frames - 1) * hop samples
    assert tuple(back.shape) == (3, (spec.shape[-1] - 1) * hop)
    np.testing.assert_allclose(_np(back), _np(x)[:, :back.shape[1]], atol=1e-10)
    one = ember.istft(spec[1], n_fft, hop, win_length, window=w, length=4000)  # 1-D round trip
    np.testing.assert_allclose(_np(one), _np(x[1]), atol=1e-10)
    # normalized and two-sided spectra invert too
    spec = ember.stft(x, n_fft, hop, win_length, window=w, normalized=True, onesided=False, return_complex=True)
    back = spec.istft(n_fft, hop, win_length, window=w, normalized=True, onesided=False, length=4000)
    np.testing.assert_allclose(_np(back), _np(x), atol=1e-10)


def test_istft_complex_output_and_float32():
    rng = _rng(6)
    z = rng.standard_normal((2, 600)) + 1j * rng.standard_normal((2, 600))
    w = ember.hann_window(64, dtype=ember.float64)
    spec = ember.stft(ember.from_numpy(z), 64, 16, window=w)
    back = spec.istft(64, 16, window=w, return_complex=True, length=600)
    assert back.dtype == ember.complex128
    np.testing.assert_allclose(_cplx(back), z, atol=1e-10)
    x = ember.randn(1000)
    w32 = ember.hann_window(128)
    back = ember.istft(ember.stft(x, 128, 32, window=w32, return_complex=True), 128, 32, window=w32, length=1000)
    assert back.dtype == ember.float32
    np.testing.assert_allclose(_np(back), _np(x), atol=1e-5)


def test_istft_length_padding_and_errors():
    x = ember.randn(100)
    w = ember.hann_window(16)
    spec = ember.stft(x, 16, window=w, return_complex=True)
    _spectral._warned.clear()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        long = ember.istft(spec, 16, window=w, length=120)
    assert any("shorter than the length parameter" in str(m.message) for m in seen)
    # centred: 116 - 8 = 108 samples exist, the other 12 are zeros
    assert tuple(long.shape) == (120,) and float(long[108:].abs().max()) == 0.0 and float(long[107].abs()) > 0
    np.testing.assert_allclose(_np(long[:100]), _np(x), atol=1e-5)
    prefix = (r"istft\(CPUComplexFloatType\[9, 26\], n_fft=16, hop_length=4, win_length=16, "
              r"window=torch.FloatTensor\{\[16\]\}, ")
    cases = [
        (lambda: ember.istft(spec, 16, window=w, center=False), RuntimeError,
         prefix + r"center=0, normalized=0, onesided=None, length=None, return_complex=0\) window overlap add min: 1"),
        (lambda: ember.istft(ember.view_as_real(spec), 16, window=w), TypeError,
         "istft requires a complex-valued input tensor matching the output from stft with return_complex=True."),
        (lambda: ember.istft(spec, 16, window=w, hop_length=17), RuntimeError,
         prefix.replace("hop_length=4", "hop_length=17") + r".* : expected 0 < hop_length <= win_length"),
        (lambda: ember.istft(spec, 16, window=w, win_length=17), RuntimeError, "expected 0 < win_length <= n_fft"),
        (lambda: ember.istft(spec, 16, window=ember.ones(10)), RuntimeError,
         "Invalid window shape. window has to be 1D and length of `win_length`"),
        (lambda: ember.istft(spec, 18, window=ember.ones(18)), RuntimeError,
         r"to match n_fft / 2 \+ 1 when onesided=True, but got 9"),
        (lambda: ember.istft(spec, 16, window=w, onesided=False), RuntimeError,
         "to match n_fft when onesided=False, but got 9"),
        (lambda: ember.istft(spec, 16, window=w, return_complex=True), RuntimeError,
         "Cannot have onesided output if window or input is complex"),
        (lambda: ember.istft(spec[:, :0], 16, window=w), RuntimeError, "input tensor cannot be empty."),
        (lambda: ember.istft(spec[None, None], 16, window=w), RuntimeError,
         "expected a tensor with 3 or 4 dimensions, but got 5"),
    ]
    for fn, exc, pattern in cases:
        with pytest.raises(exc, match=pattern):
            fn()
    two_sided = ember.stft(x, 16, window=w, onesided=False, return_complex=True)
    with pytest.raises(RuntimeError, match="Complex windows are incompatible with return_complex=False"):
        ember.istft(two_sided, 16, window=w.to(ember.complex64))


# ---------------------------------------------------------------------------------------- gradients
def _fd_check(fn, inputs, eps=1e-6, seed=0):
    """Backward against central differences of a random linear functional of the output, along a
    random direction per input (complex inputs: grad = dL/dRe + i dL/dIm, torch's convention)."""
    gen = _rng(seed)

    def as_real(t):
        return ember.view_as_real(t) if t.is_complex() else t

    out = as_real(fn(*inputs))
    weights = ember.from_numpy(gen.standard_normal(tuple(out.shape)))
    grads = ember.autograd.grad((out * weights).sum(), inputs)
    for i, (x, g) in enumerate(zip(inputs, grads)):
        direction = gen.standard_normal(tuple(x.shape) + ((2,) if x.is_complex() else ()))
        v = ember.view_as_complex(ember.from_numpy(direction)) if x.is_complex() else ember.from_numpy(direction)
        values = []
        for sign in (1, -1):
            moved = [a.detach() for a in inputs]
            moved[i] = moved[i] + sign * eps * v
            values.append(float((as_real(fn(*moved)) * weights).sum()))
        numeric = (values[0] - values[1]) / (2 * eps)
        analytic = float((as_real(g) * ember.from_numpy(direction)).sum())
        assert abs(numeric - analytic) <= 1e-6 * max(1.0, abs(analytic)), (i, numeric, analytic)


def test_stft_gradients_reach_input_and_window():
    x = ember.randn(2, 40, dtype=ember.float64, requires_grad=True)
    w = (ember.rand(12, dtype=ember.float64) + 0.5).requires_grad_()
    _fd_check(lambda x, w: ember.stft(x, 16, 4, 12, window=w, return_complex=True), (x, w))
    _fd_check(lambda x, w: ember.stft(x, 16, 5, 12, window=w, center=False, normalized=True, return_complex=False),
              (x, w))
    z = ember.randn(40, dtype=ember.complex128, requires_grad=True)
    cw = (ember.rand(10, dtype=ember.complex128) + 0.5).requires_grad_()
    _fd_check(lambda z, w: ember.stft(z, 16, window=w, win_length=10), (z, cw))


def test_stft_gradient_equals_the_adjoint_dft():
    # d/dx sum(Re(S) * A + Im(S) * B) built by hand: the transposed framing of the windowed DFT.
    n_fft, hop = 8, 3
    xn = _rng(7).standard_normal(30)
    wn = 0.5 + _rng(8).random(n_fft)
    x = ember.from_numpy(xn.copy()).requires_grad_()
    s = ember.stft(x, n_fft, hop, window=ember.from_numpy(wn), center=False, return_complex=True)
    a, b = _rng(9).standard_normal(tuple(s.shape)), _rng(10).standard_normal(tuple(s.shape))
    (ember.view_as_real(s)[..., 0] * ember.from_numpy(a) + ember.view_as_real(s)[..., 1] * ember.from_numpy(b)).sum() \
        .backward()
    k = np.arange(n_fft // 2 + 1)[:, None]
    j = np.arange(n_fft)[None, :]
    want = np.zeros(30)
    for m in range(s.shape[1]):
        per_tap = (a[:, m:m + 1] * np.cos(2 * np.pi * k * j / n_fft)
                   - b[:, m:m + 1] * np.sin(2 * np.pi * k * j / n_fft)).sum(0) * wn
        want[m * hop:m * hop + n_fft] += per_tap
    np.testing.assert_allclose(_np(x.grad), want, rtol=1e-10, atol=1e-10)


def test_istft_gradients_reach_input_and_window():
    spec = ember.stft(ember.randn(2, 60, dtype=ember.float64), 16, window=ember.hann_window(16, dtype=ember.float64),
                      return_complex=True).detach().requires_grad_()
    w = (ember.hann_window(16, dtype=ember.float64) + 0.1).requires_grad_()
    _fd_check(lambda s, w: ember.istft(s, 16, window=w), (spec, w))
    _fd_check(lambda s, w: ember.istft(s, 16, window=w, length=70), (spec, w))
    two = ember.randn(2, 16, 7, dtype=ember.complex128, requires_grad=True)
    cw = (ember.rand(12, dtype=ember.complex128) + 0.5).requires_grad_()
    _fd_check(lambda s, w: ember.istft(s, 16, 3, 12, window=w, return_complex=True), (two, cw))


# ---------------------------------------------------------------------------------- hfftn / ihfftn
def _norm_scale(norm, n):
    return {None: 1.0, "backward": 1.0, "forward": 1.0 / n, "ortho": 1.0 / math.sqrt(n)}[norm]


@pytest.mark.parametrize("norm", [None, "backward", "forward", "ortho"])
def test_hfftn_and_ihfftn_match_numpy(norm):
    rng = _rng(11)
    z = rng.standard_normal((3, 5, 6)) + 1j * rng.standard_normal((3, 5, 6))
    r = rng.standard_normal((3, 5, 6))
    for s, dim, axes in [(None, None, (0, 1, 2)), ((4, 8), (0, 2), (0, 2)), ((7,), None, (2,)),
                         (None, (-2, -1), (1, 2))]:
        got = ember.fft.hfftn(ember.from_numpy(z), s=s, dim=dim, norm=norm)
        last = s[-1] if s is not None else 2 * (z.shape[axes[-1]] - 1)
        sizes = (list(s) if s is not None else [z.shape[a] for a in axes[:-1]] + [last])
        n = int(np.prod(sizes))
        # hfftn(x) = irfftn(conj(x)) with the forward direction's scaling
        want = np.fft.irfftn(np.conj(z), s=sizes, axes=axes) * n * _norm_scale(norm, n)
        assert got.dtype == ember.float64 and tuple(got.shape) == want.shape
        np.testing.assert_allclose(_np(got), want, rtol=1e-10, atol=1e-10)
        got = ember.fft.ihfftn(ember.from_numpy(r), s=s, dim=dim, norm=norm)
        sizes = list(s) if s is not None else [r.shape[a] for a in axes]
        n = int(np.prod(sizes))
        # ihfftn(x) = conj(rfftn(x)) with the inverse direction's scaling
        want = np.conj(np.fft.rfftn(r, s=sizes, axes=axes)) / n / _norm_scale(norm, n)
        assert got.dtype == ember.complex128 and tuple(got.shape) == want.shape
        np.testing.assert_allclose(_cplx(got), want, rtol=1e-10, atol=1e-10)


def test_hfft2_ihfft2_round_trip_out_dtypes_and_errors():
    r = ember.randn(4, 6, 8)
    half = ember.fft.ihfft2(r)
    assert half.dtype == ember.complex64 and tuple(half.shape) == (4, 6, 5)
    np.testing.assert_allclose(_np(ember.fft.hfft2(half, s=(6, 8))), _np(r), atol=1e-5)
    np.testing.assert_allclose(_np(ember.fft.hfftn(ember.fft.ihfftn(r), s=(4, 6, 8))), _np(r), atol=1e-5)
    out = ember.empty(0)
    res = ember.fft.hfft2(half, s=(6, 8), out=out)
    assert res is out and tuple(out.shape) == (4, 6, 8)
    out = ember.empty(0, dtype=ember.complex64)
    assert ember.fft.ihfftn(r, dim=(0, 2), out=out) is out and tuple(out.shape) == (4, 6, 5)
    assert ember.fft.ihfftn(ember.arange(12).view(3, 4)).dtype == ember.complex64  # integers: the default dtype
    with pytest.raises(TypeError, match="ihfftn expects a real input tensor, but got ComplexFloat"):
        ember.fft.ihfftn(half)
    with pytest.raises(RuntimeError, match='Invalid normalization mode: "foo"'):
        ember.fft.hfftn(half, norm="foo")
    with pytest.raises(RuntimeError, match="FFT dims must be unique"):
        ember.fft.ihfftn(r, dim=(0, 0))
    _fd_check(lambda x: ember.fft.hfftn(x, s=(4, 6)), (ember.randn(4, 4, dtype=ember.complex128, requires_grad=True),))
    _fd_check(lambda x: ember.fft.ihfft2(x, norm="ortho"),
              (ember.randn(4, 5, dtype=ember.float64, requires_grad=True),))


# ------------------------------------------------------------------------- PyTorch 2.x, where present
def test_against_torch2_windows_stft_istft_hfftn(torch2):
    torch = torch2
    for name in FACTORIES:
        for length, periodic in ((0, True), (1, False), (7, True), (16, False)):
            got = getattr(ember, name)(length, periodic, dtype=ember.float64)
            want = getattr(torch, name)(length, periodic, dtype=torch.float64)
            np.testing.assert_allclose(_np(got), want.numpy(), rtol=1e-12, atol=1e-14)
    for name, kw in SIGNAL_WINDOWS:
        for sym in (True, False):
            got = getattr(ember.signal.windows, name)(9, sym=sym, dtype=ember.float64, **kw)
            want = getattr(torch.signal.windows, name)(9, sym=sym, dtype=torch.float64, **kw)
            np.testing.assert_allclose(_np(got), want.numpy(), rtol=1e-12, atol=1e-14)
    x = _rng(12).standard_normal((2, 700))
    for case in STFT_CASES:
        case = dict(case)
        hop, align = case.pop("hop", None), case.pop("align_to_window", None)
        wl = case.get("win_length", case["n_fft"])
        got = ember.stft(ember.from_numpy(x), hop_length=hop, window=ember.hann_window(wl, dtype=ember.float64),
                         align_to_window=align, return_complex=True, **case)
        want = torch.stft(torch.from_numpy(x), hop_length=hop, window=torch.hann_window(wl, dtype=torch.float64),
                          align_to_window=align, return_complex=True, **case)
        assert tuple(got.shape) == tuple(want.shape) and tuple(got.stride()) == tuple(want.stride())
        np.testing.assert_allclose(_cplx(got), want.numpy(), rtol=1e-10, atol=1e-10)
    spec = torch.stft(torch.from_numpy(x), 128, 32, window=torch.hann_window(128, dtype=torch.float64),
                      return_complex=True)
    for kw in (dict(), dict(length=650), dict(length=800), dict(center=True, normalized=True)):
        want = torch.istft(spec, 128, 32, window=torch.hann_window(128, dtype=torch.float64), **kw)
        got = ember.istft(ember.from_numpy(spec.numpy()), 128, 32, window=ember.hann_window(128, dtype=ember.float64),
                          **kw)
        np.testing.assert_allclose(_np(got), want.numpy(), rtol=1e-10, atol=1e-10)
    z = _rng(13).standard_normal((3, 4, 5)) + 1j * _rng(14).standard_normal((3, 4, 5))
    for norm in (None, "forward", "ortho"):
        np.testing.assert_allclose(_np(ember.fft.hfftn(ember.from_numpy(z), s=(5, 6), norm=norm)),
                                   torch.fft.hfftn(torch.from_numpy(z), s=(5, 6), norm=norm).numpy(), atol=1e-10)
        np.testing.assert_allclose(_cplx(ember.fft.ihfft2(ember.from_numpy(z.real), norm=norm)),
                                   torch.fft.ihfft2(torch.from_numpy(z.real), norm=norm).resolve_conj().numpy(),
                                   atol=1e-10)


def test_against_torch2_error_messages(torch2):
    torch = torch2

    def message(T, fn):
        try:
            fn(T)
        except Exception as e:  # noqa: BLE001 - the point is to compare whatever is raised
            return type(e).__name__, str(e).split("\n")[0].replace("ember.", "torch.")
        return None

    cases = [
        lambda T: T.stft(T.randn(100), 16),
        lambda T: T.stft(T.randn(100), 0, return_complex=True),
        lambda T: T.stft(T.randn(100), 16, win_length=0, return_complex=True),
        lambda T: T.stft(T.randn(3, 100), 16, window=T.ones(5), return_complex=True),
        lambda T: T.stft(T.randn(100).double(), 200, center=False, return_complex=True),
        lambda T: T.istft(T.stft(T.randn(100), 16, window=T.ones(16), return_complex=True), 16, window=T.ones(16),
                          hop_length=0),
        lambda T: T.istft(T.randn(9, 26, dtype=T.complex64), 16, window=T.ones(16), win_length=20),
        lambda T: T.hann_window(-3),
        lambda T: T.signal.windows.cosine(-3),
        lambda T: T.signal.windows.nuttall(4, dtype=T.float16),
    ]
    for fn in cases:
        assert message(ember, fn) == message(torch, fn)
