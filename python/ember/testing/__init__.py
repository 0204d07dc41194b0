"""ember.testing: assert_close (torch.testing.assert_close) and make_tensor."""
import collections.abc as _abc
import math as _math

import numpy as _np

from .. import _C

__all__ = ["assert_close", "assert_allclose", "make_tensor"]

# torch's default tolerances per dtype: (rtol, atol).
_TOLERANCES = {
    "float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7),
}


def _tolerances(dtype):
    return _TOLERANCES.get(str(dtype).split(".")[-1], (0.0, 0.0))


def _fail(msg, extra):
    raise AssertionError(msg if extra is None else f"{msg}\n\n{extra}" if not callable(extra) else extra(msg))


def _to_numpy(t):
    t = t.detach().cpu()
    if t.dtype == _C.bfloat16 or t.dtype == _C.float16:
        t = t.float()
    return t.numpy()


def _compare_tensors(actual, expected, rtol, atol, equal_nan, check_dtype, check_device, msg, path):
    where = f" at {path}" if path else ""
    if actual.shape != expected.shape:
        _fail(f"The values for attribute 'shape' do not match: {actual.shape} != {expected.shape}.", msg)
    if check_device and actual.device != expected.device:
        _fail(f"The values for attribute 'device' do not match: {actual.device} != {expected.device}.", msg)
    if check_dtype and actual.dtype != expected.dtype:
        _fail(f"The values for attribute 'dtype' do not match: {actual.dtype} != {expected.dtype}.", msg)
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no {'rtol' if rtol is None else 'atol'}.")
    if rtol is None:
        r1, a1 = _tolerances(actual.dtype)
        r2, a2 = _tolerances(expected.dtype)
        rtol, atol = max(r1, r2), max(a1, a2)
    a = _to_numpy(actual)
    e = _to_numpy(expected)
    if a.dtype == _np.bool_ or e.dtype == _np.bool_:
        a = a.astype(_np.int64)
        e = e.astype(_np.int64)
    floating = _np.issubdtype(a.dtype, _np.floating) or _np.issubdtype(e.dtype, _np.floating)
    af = a.astype(_np.float64)
    ef = e.astype(_np.float64)
    if floating:
        with _np.errstate(invalid="ignore"):
            ok = _np.isclose(af, ef, rtol=rtol, atol=atol, equal_nan=equal_nan)
    else:  # integers: exact up to atol/rtol, without the float64 detour losing bits
        diff = _np.abs(a.astype(_np.int64) - e.astype(_np.int64)) if rtol == 0 and atol == 0 else None
        ok = (a == e) if diff is not None else _np.isclose(af, ef, rtol=rtol, atol=atol)
    if ok.all():
        return
    total = ok.size
    bad = int((~ok).sum())
    kind = "Tensor-likes" if a.ndim > 0 or path else "Scalars"
    with _np.errstate(invalid="ignore", divide="ignore"):
        absdiff = _np.abs(af - ef)
        reldiff = absdiff / _np.abs(ef)
    absdiff = _np.where(ok, 0, absdiff)
    reldiff = _np.where(ok, 0, reldiff)
    ia = _np.unravel_index(int(_np.nanargmax(absdiff)) if not _np.isnan(absdiff).all() else 0, a.shape) if a.ndim else ()
    ir = _np.unravel_index(int(_np.nanargmax(reldiff)) if not _np.isnan(reldiff).all() else 0, a.shape) if a.ndim else ()
    lines = [f"{kind} are not close{where}!", ""]
    if a.ndim:
        lines.append(f"Mismatched elements: {bad} / {total} ({100.0 * bad / total:.1f}%)")
        lines.append(f"Greatest absolute difference: {absdiff[ia]} at index {tuple(int(i) for i in ia)} "
                     f"(up to {atol} allowed)")
        lines.append(f"Greatest relative difference: {reldiff[ir]} at index {tuple(int(i) for i in ir)} "
                     f"(up to {rtol} allowed)")
    else:
        lines.append(f"Expected {ef.item()} but got {af.item()}.")
        lines.append(f"Absolute difference: {absdiff.item()} (up to {atol} allowed)")
        lines.append(f"Relative difference: {reldiff.item()} (up to {rtol} allowed)")
    text = "\n".join(lines)
    if msg is None:
        raise AssertionError(text)
    raise AssertionError(msg(text) if callable(msg) else msg)


def _as_tensor(x, like):
    if isinstance(x, _C.Tensor):
        return x
    if isinstance(x, _np.ndarray):
        return _C.from_numpy(x)
    return _C.tensor(x)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, msg=None, _path=""):
    """Raises AssertionError unless actual and expected are close: |a - e| <= atol + rtol * |e|
    elementwise, with torch's default tolerances per dtype; sequences and mappings compare
    element by element; shapes, dtypes and devices must match."""
    if isinstance(actual, (str, bytes)) or isinstance(expected, (str, bytes)):
        if actual != expected:
            _fail(f"{actual!r} != {expected!r}", msg)
        return
    if isinstance(actual, _abc.Mapping) and isinstance(expected, _abc.Mapping):
        if set(actual.keys()) != set(expected.keys()):
            _fail(f"The keys of the mappings do not match:\n{sorted(map(str, actual))} != {sorted(map(str, expected))}", msg)
        for k in expected:
            assert_close(actual[k], expected[k], rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device,
                         check_dtype=check_dtype, msg=msg, _path=f"{_path}[{k!r}]" if _path else f"item [{k!r}]")
        return
    seq = (_abc.Sequence,)
    if isinstance(actual, seq) and isinstance(expected, seq):
        if len(actual) != len(expected):
            _fail(f"The length of the sequences mismatch: {len(actual)} != {len(expected)}", msg)
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_close(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device,
                         check_dtype=check_dtype, msg=msg, _path=f"{_path}[{i}]" if _path else f"item [{i}]")
        return
    if actual is None or expected is None:
        if actual is not expected:
            _fail(f"None mismatch: {actual} is not {expected}", msg)
        return
    a_is_t, e_is_t = isinstance(actual, (_C.Tensor, _np.ndarray)), isinstance(expected, (_C.Tensor, _np.ndarray))
    if not a_is_t and not e_is_t:
        if isinstance(actual, bool) or isinstance(expected, bool) or type(actual) is not type(expected):
            if type(actual) is not type(expected):
                _fail(f"The values for attribute 'type' do not match: {type(actual)} != {type(expected)}.", msg)
        if isinstance(actual, complex) or isinstance(expected, complex):
            raise TypeError("ember.testing.assert_close: complex numbers are not supported")
        if not isinstance(actual, (int, float)):
            raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and {type(expected)}.")
        if rtol is None:
            rtol, atol = (1.3e-6, 1e-5) if isinstance(actual, float) else (0.0, 0.0)
        if actual == expected or (equal_nan and _math.isnan(actual) and _math.isnan(expected)):
            return
        if isinstance(actual, float) and _math.isfinite(actual) and _math.isfinite(expected) and \
                abs(actual - expected) <= atol + rtol * abs(expected):
            return
        where = f" at {_path}" if _path else ""
        _fail(f"Scalars are not close{where}!\n\nExpected {expected} but got {actual}.\n"
              f"Absolute difference: {abs(actual - expected)} (up to {atol} allowed)\n"
              f"Relative difference: {abs(actual - expected) / abs(expected) if expected else float('inf')} "
              f"(up to {rtol} allowed)", msg)
    if a_is_t != e_is_t:
        _fail(f"The values for attribute 'type' do not match: {type(actual)} != {type(expected)}.", msg)
    _compare_tensors(_as_tensor(actual, expected), _as_tensor(expected, actual), rtol, atol, equal_nan,
                     check_dtype, check_device, msg, _path)


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """Deprecated torch.testing.assert_allclose: no dtype check, NaN equal by default."""
    if not isinstance(actual, _C.Tensor):
        actual = _C.tensor(actual)
    if not isinstance(expected, _C.Tensor):
        expected = _C.tensor(expected, dtype=actual.dtype)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=False,
                 msg=msg or None)


def make_tensor(*shape, dtype, device=None, low=None, high=None, requires_grad=False, noncontiguous=False,
                exclude_zero=False, memory_format=None):
    """A tensor of the given shape filled with values drawn uniformly from [low, high)
    (defaults: [-9, 9] for numbers, {False, True} for bool)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    if dtype == _C.bool:
        t = _C.randint(0, 2, shape, device=device).to(_C.bool)
    elif dtype.is_floating_point:
        lo = -9.0 if low is None else low
        hi = 9.0 if high is None else high
        t = (_C.rand(shape, dtype=_C.float64, device=device) * (hi - lo) + lo).to(dtype)
    else:
        info = _np.iinfo(_np.dtype(str(dtype).split(".")[-1]))
        lo = max(-9 if low is None else int(low), int(info.min))
        hi = min(10 if high is None else int(high), int(info.max))
        t = _C.randint(lo, hi, shape, device=device).to(dtype)
    if exclude_zero:
        t = _C.where(t == 0, _C.ones_like(t), t)
    if noncontiguous and t.numel() > 1:
        t = _C.repeat_interleave(t, 2, dim=-1)[..., ::2]
    if requires_grad:
        t.requires_grad_(True)
    return t
