"""torch.stft, torch.istft and the window factories (hann_window, hamming_window, blackman_window,
bartlett_window, kaiser_window), composed in Python over ember's FFT ops (ember.fft.rfft / fft /
irfft / ifft), unfold and F.fold, so gradients reach the input and the window as in torch.

stft: optional centre padding (F.pad with pad_mode), frames as an unfold view, times the window
(centre-padded to n_fft), one r2c or c2c transform along the frame, transposed to
(batch, freq, frames): torch 2.x's algorithm and its checks and messages.
istft: the inverse transform of every frame, times the window, overlap-added with F.fold (col2im),
divided by the overlap-added squared window (torch's NOLA check first).
"""
import math as _math
import operator as _operator
import warnings as _warnings

from . import _C
from ._C import Tensor

__all__ = ["stft", "istft", "hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]

_warned = set()


def _warn_once(key, message):
    """TORCH_WARN_ONCE: the first time in the process only."""
    if key not in _warned:
        _warned.add(key)
        _warnings.warn(message, UserWarning, stacklevel=3)


def _type_name(t):
    return t.dtype._scalar_type_name


def _legacy_type(t):
    """torch.FloatTensor / torch.cuda.FloatTensor, as torch's messages print a tensor."""
    dev = "cuda." if t.device.type == "cuda" else ""
    return f"torch.{dev}{_type_name(t)}Tensor"


def _backend_type(t):
    """CPUComplexFloatType, as istft's messages print its input."""
    return f"{t.device.type.upper()}{_type_name(t)}Type"


def _flag(v):
    return "None" if v is None else str(int(bool(v)))


def _window_repr(window):
    return "None" if window is None else f"{_legacy_type(window)}{{{list(window.shape)}}}"


def _pad(x, pads, mode="constant"):
    """F.pad, for complex tensors too (ember's pad kernels are real: pad both parts)."""
    from .nn import functional as F
    if x.is_complex():
        return _C.complex(F.pad(x.real, pads, mode), F.pad(x.imag, pads, mode))
    return F.pad(x, pads, mode)


def _pad_window(window, n_fft, dtype, device, win_length):
    """The window (ones when None) centred in n_fft zeros: torch's rule for win_length < n_fft."""
    if window is None:
        if win_length == n_fft:
            return None
        window = _C.ones(win_length, dtype=dtype, device=device)
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        window = _pad(window, (left, n_fft - win_length - left))
    return window


# ------------------------------------------------------------------------------------------ stft
def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None, align_to_window=None):
    """torch.stft: the short-time Fourier transform of a 1-D signal or a (batch, time) batch.

    Returns (batch?, n_fft // 2 + 1 or n_fft, frames), complex, or its view_as_real when
    return_complex=False (deprecated in torch 2.x, which requires return_complex for real input).
    """
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    n_fft = int(n_fft)
    if window is None:
        _warn_once("stft_window", "A window was not provided. A rectangular window will be applied,which is known to "
                   "cause spectral leakage. Other windows such as torch.hann_window or torch.hamming_window are "
                   "recommended to reduce spectral leakage.To suppress this warning and use a rectangular window, "
                   "explicitly set `window=torch.ones(n_fft, device=<device>)`.")
    if window is not None and window.device != input.device:
        raise RuntimeError(f"stft input and window must be on the same device but got self on {input.device} "
                           f"and window on {window.device}")
    complex_window = window is not None and window.is_complex()
    if return_complex is None:
        return_complex = input.is_complex() or complex_window
        if not return_complex:
            raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will "
                               "further require that return_complex=True in a future PyTorch release.")
    if not return_complex:
        _warn_once("stft_real", "stft with return_complex=False is deprecated. In a future pytorch release, stft "
                   "will return complex tensors for all inputs, and return_complex=False will raise an error.\n"
                   "Note: you can still call torch.view_as_real on the complex output to recover the old "
                   "return format.")
    hop = n_fft >> 2 if hop_length is None else int(hop_length)
    win = n_fft if win_length is None else int(win_length)

    def fail(shape, message, exc=RuntimeError):
        raise exc(f"stft({_legacy_type(input)}{list(shape)}, n_fft={n_fft}, hop_length={hop}, win_length={win}, "
                  f"window={_window_repr(window)}, normalized={_flag(normalized)}, onesided={_flag(onesided)}, "
                  f"return_complex={_flag(return_complex)}, align_to_window={_flag(align_to_window)}) : {message}")

    ndim = input.dim()
    floating = input.is_floating_point() or input.is_complex()
    if center and ndim >= 1 and (not floating or ndim > 2):
        # torch pads these in Python first, then refuses them: the message shows the padded length.
        shape = tuple(input.shape)
        fail(shape[:-1] + (shape[-1] + 2 * (n_fft // 2),),
             "expected a tensor of floating point or complex values" if not floating else "expected a 1D or 2D tensor",
             RuntimeError if floating else NotImplementedError)
    if center and ndim in (1, 2):
        pad = n_fft // 2
        padded = _pad(input.reshape((1,) * (3 - ndim) + tuple(input.shape)), [pad, pad], pad_mode)
        input = padded.view(padded.shape[3 - ndim:])
    if not (input.is_floating_point() or input.is_complex()):
        fail(input.shape, "expected a tensor of floating point or complex values", NotImplementedError)
    if ndim not in (1, 2):
        fail(input.shape, "expected a 1D or 2D tensor")
    x = input.unsqueeze(0) if ndim == 1 else input
    if align_to_window and not center:
        a = (n_fft - win) // 2
        x = _pad(x.unsqueeze(0), [a, a], pad_mode).squeeze(0)
    length = x.shape[1]
    if n_fft <= 0 or n_fft > length:
        fail(input.shape, f"expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop <= 0:
        fail(input.shape, f"expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        fail(input.shape, f"expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        fail(input.shape, f"expected a 1D window tensor of size equal to win_length={win}, "
                          f"but got window with size {list(window.shape)}")
    window_ = _pad_window(window, n_fft, x.dtype, x.device, win)
    if x.is_complex() and x.requires_grad:
        # unfold's backward (index_add_) is real-only in ember: frame the two parts.
        frames = _C.complex(x.real.unfold(-1, n_fft, hop), x.imag.unfold(-1, n_fft, hop))
    else:
        frames = x.unfold(-1, n_fft, hop)  # (batch, n_frames, n_fft): a view
    if window_ is not None:
        frames = frames * window_
    complex_fft = frames.is_complex()
    if onesided is None:
        onesided = not complex_fft
    if onesided and complex_fft:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    from . import fft as _fft
    norm = "ortho" if normalized else "backward"
    out = (_fft.rfft if onesided else _fft.fft)(frames, dim=-1, norm=norm).transpose(1, 2)
    if ndim == 1:
        out = out.squeeze(0)
    return out if return_complex else _C.view_as_real(out)


# ----------------------------------------------------------------------------------------- istft
def _overlap_add(frames, hop, length):
    """sum_f frames[:, f, :] placed at f * hop: (batch, n_frames, n) -> (batch, length), by col2im."""
    from .nn import functional as F
    b, _, n = frames.shape
    if frames.is_complex():
        return _C.complex(_overlap_add(frames.real, hop, length), _overlap_add(frames.imag, hop, length))
    cols = frames.transpose(1, 2)
    return F.fold(cols, output_size=(1, length), kernel_size=(1, n), stride=(1, hop)).reshape(b, length)


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    """torch.istft: the least-squares inverse of stft (overlap-add normalised by the summed squared
    window). input: complex (batch?, freq, frames) as stft(return_complex=True) gives it."""
    n_fft = int(n_fft)
    if window is None:
        _warn_once("istft_window", "A window was not provided. A rectangular window will be applied.Please provide "
                   "the same window used by stft to make the inversion lossless.To suppress this warning and use a "
                   "rectangular window, explicitly set `window=torch.ones(n_fft, device=<device>)`.")
    if window is not None and window.device != input.device:
        raise RuntimeError(f"istft input and window must be on the same device but got self on {input.device} "
                           f"and window on {window.device}")
    hop = n_fft >> 2 if hop_length is None else int(hop_length)
    win = n_fft if win_length is None else int(win_length)
    if not input.is_complex():
        raise TypeError("istft requires a complex-valued input tensor matching the output from stft with "
                        "return_complex=True.")

    def fail(message, joiner=" : "):
        raise RuntimeError(
            f"istft({_backend_type(input)}{list(input.shape)}, n_fft={n_fft}, hop_length={hop}, win_length={win}, "
            f"window={_window_repr(window)}, center={_flag(center)}, normalized={_flag(normalized)}, "
            f"onesided={_flag(onesided)}, length={'None' if length is None else int(length)}, "
            f"return_complex={_flag(return_complex)}){joiner}{message}")

    ndim = input.dim()
    if ndim < 2:  # torch reads sizes -2 and -3 of the real view first
        real_ndim = ndim + 1
        raise IndexError(f"Dimension out of range (expected to be in range of [{-real_ndim}, {real_ndim - 1}], "
                         f"but got {-2 if real_ndim < 2 else -3})")
    n_frames, fft_size = input.shape[-1], input.shape[-2]
    if input.numel() == 0:
        fail("input tensor cannot be empty.")
    if ndim not in (2, 3):
        fail(f"expected a tensor with 3 or 4 dimensions, but got {ndim + 1}")
    onesided_ = onesided if onesided is not None else fft_size != n_fft
    if onesided_:
        if n_fft // 2 + 1 != fft_size:
            fail("expected the frequency dimension (3rd to the last) of the input tensor to match n_fft / 2 + 1 "
                 f"when onesided=True, but got {fft_size}")
    elif n_fft != fft_size:
        fail(f"expected the frequency dimension (3rd to the last) of the input tensor to match n_fft when "
             f"onesided=False, but got {fft_size}")
    if not 0 < hop <= win:
        fail("expected 0 < hop_length <= win_length")
    if not 0 < win <= n_fft:
        fail("expected 0 < win_length <= n_fft")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        fail("Invalid window shape. window has to be 1D and length of `win_length`")
    real_dtype = input.real.dtype
    window_ = _pad_window(window, n_fft, real_dtype, input.device, win)
    if window_ is None:
        window_ = _C.ones(n_fft, dtype=real_dtype, device=input.device)

    x = (input if ndim == 3 else input.unsqueeze(0)).transpose(1, 2)  # (batch, n_frames, freq)
    from . import fft as _fft
    norm = "ortho" if normalized else "backward"
    if return_complex:
        if onesided_:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = _fft.ifft(x, dim=-1, norm=norm)
    else:
        if window is not None and window.is_complex():
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not onesided_:
            x = x[..., :n_fft // 2 + 1]
        frames = _fft.irfft(x, n=n_fft, dim=-1, norm=norm)
    expected_len = n_fft + hop * (n_frames - 1)
    y = _overlap_add(frames * window_, hop, expected_len)
    envelope = _overlap_add((window_ * window_).expand(1, n_frames, n_fft), hop, expected_len)

    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + int(length)
    elif center:
        end = expected_len - n_fft // 2
    else:
        end = expected_len
    stop = min(end, expected_len)
    y = y[:, start:stop]
    envelope = envelope[:, start:stop]
    if envelope.numel():
        lowest = float(envelope.abs().min())
        if lowest < 1e-11:
            fail(f"window overlap add min: 1 (the summed squared window falls to {lowest:g} < 1e-11 there: "
                 "the window and hop_length break the nonzero overlap-add condition)", joiner=" ")
    y = y / envelope
    if ndim == 2:
        y = y.squeeze(0)
    if end > expected_len:
        _warn_once("istft_length", "The length of signal is shorter than the length parameter. Result is being "
                   "padded with zeros in the tail. Please check your center and hop_length settings.")
        y = _pad(y, (0, end - expected_len))
    return y


# ---------------------------------------------------------------------------------------- windows
def _window_length(name, window_length):
    if isinstance(window_length, bool) or not isinstance(window_length, int):
        try:
            if isinstance(window_length, (bool, float)):
                raise TypeError
            window_length = _operator.index(window_length)
        except TypeError:
            raise TypeError(f"{name}(): argument 'window_length' (position 1) must be int, not "
                            f"{type(window_length).__name__}") from None
    return int(window_length)


def _window(name, window_length, periodic, dtype, layout, device, requires_grad, values):
    """Checks as torch's window factories, then values(n, denominator) in float64 (n: arange of the
    length), cast to dtype (the default dtype when None); length 0 empty, length 1 ones."""
    window_length = _window_length(name, window_length)
    dtype = _C.get_default_dtype() if dtype is None else dtype
    if layout is not None and layout != _C.strided:
        raise RuntimeError(f"{name} is not implemented for sparse types, got: TensorOptions(dtype={dtype}, "
                           f"layout={layout})")
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: TensorOptions(dtype={dtype}, "
                           f"device={device if device is not None else 'cpu'}, layout=Strided)")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    if window_length <= 1:
        w = _C.ones(window_length, dtype=dtype, device=device)
    else:
        from .autograd.grad_mode import no_grad
        with no_grad():
            n = _C.arange(window_length, dtype=_C.float64, device=device)
            # periodic: the first window_length points of the symmetric window of window_length + 1
            w = values(n, window_length if periodic else window_length - 1).to(dtype)
    return w.requires_grad_(bool(requires_grad))


def _cosine_sum(coefficients):
    """sum_k (-1)^k a_k cos(2 pi k n / N)."""
    def values(n, denominator):
        phase = n * (2 * _math.pi / denominator)
        out = _C.full_like(n, float(coefficients[0]))
        for k, a in enumerate(coefficients[1:], 1):
            out = out + ((-1) ** k * float(a)) * _C.cos(phase * k)
        return out
    return values


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                requires_grad=False):
    """0.5 - 0.5 cos(2 pi n / N): N = window_length if periodic, else window_length - 1."""
    return _window("hann_window", window_length, periodic, dtype, layout, device, requires_grad,
                   _cosine_sum((0.5, 0.5)))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   pin_memory=False, requires_grad=False):
    """alpha - beta cos(2 pi n / N)."""
    return _window("hamming_window", window_length, periodic, dtype, layout, device, requires_grad,
                   _cosine_sum((alpha, beta)))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                    requires_grad=False):
    """0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)."""
    return _window("blackman_window", window_length, periodic, dtype, layout, device, requires_grad,
                   _cosine_sum((0.42, 0.5, 0.08)))


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                    requires_grad=False):
    """1 - |2 n / N - 1|."""
    return _window("bartlett_window", window_length, periodic, dtype, layout, device, requires_grad,
                   lambda n, d: 1 - _C.abs(n * (2.0 / d) - 1))


def _kaiser_values(beta):
    def values(n, denominator):
        r = n * (2.0 / denominator) - 1
        a = beta * _C.sqrt(_C.clamp(1 - r * r, min=0.0))
        return _C.i0(a) / _C.i0(_C.full_like(n, beta))
    return values


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None, pin_memory=False,
                  requires_grad=False):
    """I0(beta sqrt(1 - (2 n / N - 1)^2)) / I0(beta)."""
    return _window("kaiser_window", window_length, periodic, dtype, layout, device, requires_grad,
                   _kaiser_values(float(beta)))


def _stft_method(self, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
                 normalized=False, onesided=None, return_complex=None, align_to_window=None):
    return stft(self, n_fft, hop_length, win_length, window, center, pad_mode, normalized, onesided,
                return_complex, align_to_window)


def _istft_method(self, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
                  onesided=None, length=None, return_complex=False):
    return istft(self, n_fft, hop_length, win_length, window, center, normalized, onesided, length, return_complex)


_stft_method.__name__ = _stft_method.__qualname__ = "stft"
_istft_method.__name__ = _istft_method.__qualname__ = "istft"
_stft_method.__doc__ = stft.__doc__
_istft_method.__doc__ = istft.__doc__
Tensor.stft = _stft_method
Tensor.istft = _istft_method
