"""ember.optim.Adafactor and ember.optim.Muon (torch 2.x's optimizers).

Every update is checked against a reference written out step by step with numpy below:
Adafactor's factored second moment (row/column running means over the last two dims, their
outer product over the mean row factor) for 2-D and 3-D parameters and the full running average
for vectors, the relative step size, update clipping, eps1/eps2, weight decay and maximize; Muon's
momentum (plain and Nesterov), its Newton-Schulz orthogonalisation in bfloat16 (emulated bit for
bit: every op rounds to bfloat16 once, as torch's), the adjusted learning rates and the 2-D
restriction. Also: state_dict layout and save/load resumption, param groups, torch's error
messages (spelled out here), and that a small model trains. Trajectories against torch 2.x are
an extra check, skipped where torch or the optimizer is missing."""
import copy
import io
import math

import numpy as np
import pytest

import ember
from ember import optim
from ember.optim.muon import _zeropower_via_newtonschulz

NS_COEFFS = (3.4445, -4.7750, 2.0315)


def _np(t):
    return t.detach().numpy().astype(np.float64)


# -- numpy references -----------------------------------------------------------------------------
def _bf16(x):
    """x rounded to the nearest bfloat16 (ties to even), returned as float64."""
    a = np.atleast_1d(np.asarray(x, dtype=np.float32))
    u = a.view(np.uint32).astype(np.uint64)
    u = (u + np.uint64(0x7FFF) + ((u >> np.uint64(16)) & np.uint64(1))) & np.uint64(0xFFFF0000)
    out = u.astype(np.uint32).view(np.float32).astype(np.float64)
    return out.reshape(np.shape(x)) if np.ndim(x) else float(out[0])


def _ns_ref(g, coeffs=NS_COEFFS, steps=5, eps=1e-7):
    """Newton-Schulz in bfloat16: each result is computed exactly (float64) and rounded once."""
    a, b, c = coeffs
    x = _bf16(g)
    tall = x.shape[0] > x.shape[1]
    if tall:
        x = x.T
    x = _bf16(x / max(_bf16(np.sqrt((x * x).sum())), _bf16(eps)))
    for _ in range(steps):
        m = _bf16(x @ x.T)
        poly = _bf16(b * m + c * (m @ m))
        x = _bf16(a * x + poly @ x)
    return x.T if tall else x


def _lerp32(start, end, w):
    """torch's lerp in float32: start + w (end - start) for w < 0.5, else end - (1 - w)(end - start)."""
    start, end, w = np.float32(start), np.float32(end), np.float32(w)
    if w < 0.5:
        return start + w * (end - start)
    return end - (end - start) * (np.float32(1) - w)


def _adjusted_lr(lr, fn, shape):
    a, b = shape
    if fn in (None, "original"):
        return lr * math.sqrt(max(1.0, a / b))
    if fn == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(a, b))
    assert fn == "spectral_unclamped"
    return lr * math.sqrt(a / b)


def _muon_ref(p0, grads, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True, ns_coefficients=NS_COEFFS,
              eps=1e-7, ns_steps=5, adjust_lr_fn=None):
    """The parameter after each step (float32 arithmetic, bfloat16 orthogonalisation)."""
    p = np.float32(p0)
    buf = np.zeros_like(p)
    out = []
    for g in grads:
        g = np.float32(g)
        buf = _lerp32(buf, g, 1 - momentum)
        direction = _lerp32(g, buf, momentum) if nesterov else buf
        o = _ns_ref(direction, ns_coefficients, ns_steps, eps)
        p = p * np.float32(1 - lr * weight_decay)
        p = (p + np.float32(-_adjusted_lr(lr, adjust_lr_fn, p.shape)) * o.astype(np.float32)).astype(np.float32)
        out.append(p.astype(np.float64))
    return out, buf


def _adafactor_ref(p0, grad_fn, steps, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0,
                   maximize=False, eps1_default=np.finfo(np.float64).eps, log=None):
    """float64 Adafactor. p0: list of arrays (one group); grad_fn(step, i, p) -> the gradient.
    Returns the parameters after each step and the final state."""
    ps = [np.array(p, dtype=np.float64) for p in p0]
    eps1, eps2 = eps
    eps1 = eps1_default if eps1 is None else eps1
    st = []
    for p in ps:
        if p.ndim > 1:
            st.append({"row_var": np.zeros(p.shape[:-1] + (1,)), "col_var": np.zeros(p.shape[:-2] + (1, p.shape[-1]))})
        else:
            st.append({"variance": np.zeros_like(p)})
    traj = []
    for t in range(1, steps + 1):
        grads = [grad_fn(t, i, p) for i, p in enumerate(ps)]
        for i, (p, g) in enumerate(zip(ps, grads)):
            g = -g if maximize else g
            w = t ** beta2_decay  # 1 - beta2_t
            rho = min(lr, 1 / math.sqrt(t))
            alpha = max(eps2, math.sqrt((p * p).mean())) * rho
            p = p * (1 - lr * weight_decay)
            if g.ndim > 1:
                r, c = st[i]["row_var"], st[i]["col_var"]
                r = (1 - w) * r + w * (g * g).mean(axis=-1, keepdims=True)
                c = (1 - w) * c + w * (g * g).mean(axis=-2, keepdims=True)
                st[i]["row_var"], st[i]["col_var"] = r, c
                v = r * c / np.maximum(r.mean(axis=-2, keepdims=True), eps1)
            else:
                v = (1 - w) * st[i]["variance"] + w * g * g
                st[i]["variance"] = v
            u = g / np.maximum(np.sqrt(v), eps1)
            clip = max(1.0, math.sqrt((u * u).mean()) / d)
            if log is not None:
                log.append(dict(alpha=alpha, clip=clip, eps2_bound=alpha == eps2 * rho))
            ps[i] = p - alpha / clip * u
        traj.append([p.copy() for p in ps])
    return traj, st


# -- helpers to drive ember --------------------------------------------------------------------
_RNG = np.random.default_rng(1234)
_SHAPES = [(4, 3), (2, 3, 5), (5,), (3,)]
_INIT = [_RNG.standard_normal(s) for s in _SHAPES[:3]] + [np.zeros(3)]  # a zero vector: the eps2 floor
_NOISE = [[_RNG.standard_normal(s) * (1 + i) for i, s in enumerate(_SHAPES)] for _ in range(8)]


def _grad_fn(t, i, p):
    """A gradient that depends on the parameter (0.5 p) plus fixed noise per step."""
    return _NOISE[t - 1][i] + 0.5 * p


def _run(opt_factory, p0, grad_fn, steps, dtype=ember.float64):
    params = [ember.tensor(p, dtype=dtype, requires_grad=True) for p in p0]
    opt = opt_factory(params)
    traj = []
    for t in range(1, steps + 1):
        grads = [grad_fn(t, i, _np(p)) for i, p in enumerate(params)]
        for p, g in zip(params, grads):
            p.grad = ember.tensor(g, dtype=dtype)
        opt.step()
        traj.append([_np(p) for p in params])
    return traj, opt, params


# -- Adafactor against the numpy reference ---------------------------------------------------------
ADAFACTOR_CASES = [
    {},
    dict(lr=0.05, weight_decay=0.1),
    dict(lr=0.6, beta2_decay=-0.5, eps=(1e-3, 1e-2), d=1.2),  # rho = 1/sqrt(t) < lr from t = 3
    dict(lr=0.05, maximize=True, weight_decay=0.01),
]


@pytest.mark.parametrize("kw", ADAFACTOR_CASES, ids=[str(k) for k in ADAFACTOR_CASES])
def test_adafactor_matches_numpy_reference(kw):
    log = []
    ref, ref_state = _adafactor_ref(_INIT, _grad_fn, 6, log=log, **kw)
    got, opt, params = _run(lambda ps: optim.Adafactor(ps, **kw), _INIT, _grad_fn, 6)
    for r, g in zip(ref, got):
        for rp, gp in zip(r, g):
            np.testing.assert_allclose(gp, rp, rtol=1e-12, atol=1e-13)
    assert not np.allclose(got[-1][0], _INIT[0])
    assert any(e["eps2_bound"] for e in log)  # the zero vector took eps2-sized steps
    # The state is the factored one for 2-D and 3-D parameters, the full average for vectors.
    for p, rs in zip(params, ref_state):
        st = opt.state[p]
        assert float(st["step"]) == 6.0
        assert list(st) == ["step"] + list(rs)
        for k, v in rs.items():
            assert tuple(st[k].shape) == v.shape
            np.testing.assert_allclose(_np(st[k]), v, rtol=1e-12, atol=1e-15)


def test_adafactor_clipping_and_eps1_matter():
    """A gradient whose factored estimate is tiny for one entry: eps1 bounds the division and the
    update is clipped to RMS d; eps1=None is the parameter dtype's machine epsilon."""
    g = np.array([[1e-5, 0.0, 0.0], [0.0, 1.0, 0.5]])
    p0 = [np.array([[0.5, -1.0, 2.0], [1.0, 0.25, -0.5]])]
    for dtype, np_eps in ((ember.float32, np.finfo(np.float32).eps), (ember.float64, np.finfo(np.float64).eps)):
        for kw in ({}, dict(eps=(1e-3, 1e-3)), dict(d=4.0, lr=0.1)):
            log = []
            ref, _ = _adafactor_ref(p0, lambda t, i, p: g, 2, eps1_default=np_eps, log=log, **kw)
            got, _, _ = _run(lambda ps: optim.Adafactor(ps, **kw), p0, lambda t, i, p: g, 2, dtype=dtype)
            assert (log[0]["clip"] > 1.0) == ("eps" not in kw)  # eps1 = 1e-3 keeps U small
            tol = 2e-6 if dtype == ember.float32 else 1e-12
            for r, gg in zip(ref, got):
                np.testing.assert_allclose(gg[0], r[0], rtol=tol, atol=tol)
    # The dtype's epsilon really changes the result: float32's eps1 (1.2e-7) exceeds sqrt(v) there.
    a, _ = _adafactor_ref(p0, lambda t, i, p: g, 1, eps1_default=np.finfo(np.float32).eps)
    b, _ = _adafactor_ref(p0, lambda t, i, p: g, 1, eps1_default=np.finfo(np.float64).eps)
    assert not np.allclose(a[0][0], b[0][0], rtol=1e-4)


def test_adafactor_param_groups():
    groups_kw = [dict(lr=0.05, weight_decay=0.1), dict(lr=0.2, maximize=True, beta2_decay=-0.6)]
    p_a, p_b = [_INIT[0], _INIT[2]], [_INIT[1], _INIT[3]]
    ember_a = [ember.tensor(p, requires_grad=True) for p in p_a]
    ember_b = [ember.tensor(p, requires_grad=True) for p in p_b]
    opt = optim.Adafactor([dict(params=ember_a, **groups_kw[0]), dict(params=ember_b, **groups_kw[1])], d=1.5)
    assert opt.param_groups[1]["d"] == 1.5 and opt.param_groups[0]["eps"] == (None, 1e-3)
    refs = [_adafactor_ref(ps, lambda t, i, p, j=j: _NOISE[t - 1][[0, 2][i] if j == 0 else [1, 3][i]] + 0.5 * p,
                           4, d=1.5, **kw)[0] for j, (ps, kw) in enumerate(zip((p_a, p_b), groups_kw))]
    for t in range(1, 5):
        for j, ps in enumerate((ember_a, ember_b)):
            for i, p in enumerate(ps):
                p.grad = ember.tensor(_NOISE[t - 1][[0, 2][i] if j == 0 else [1, 3][i]] + 0.5 * _np(p))
        opt.step()
    for ref, ps in zip(refs, (ember_a, ember_b)):
        for r, p in zip(ref[-1], ps):
            np.testing.assert_allclose(_np(p), r, rtol=1e-12, atol=1e-13)


# -- Muon against the numpy reference --------------------------------------------------------------
@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (6, 6), (12, 7)])
def test_newton_schulz_matches_bf16_reference(shape):
    rng = np.random.default_rng(sum(shape))
    for scale in (1e-3, 1.0, 50.0):
        g = (rng.standard_normal(shape) * scale).astype(np.float32)
        out = _zeropower_via_newtonschulz(ember.tensor(g), NS_COEFFS, 5, 1e-7)
        assert out.dtype == ember.bfloat16 and tuple(out.shape) == shape
        got, ref = _np(out.float()), _ns_ref(g)
        # Each op rounds once to bfloat16; a different fp32 summation order may flip a rare last
        # bit, so allow some entries to differ by at most two bfloat16 ulps.
        assert (got == ref).mean() >= 0.75  # a float32 (unrounded) iteration would match none
        np.testing.assert_allclose(got, ref, rtol=2 ** -7, atol=2 ** -9)
        # The iteration orthogonalises: singular values pulled into roughly [0.5, 1.5].
        sv = np.linalg.svd(ref, compute_uv=False)
        assert sv.min() > 0.4 and sv.max() < 1.5
    # Other coefficients and step counts are honoured.
    g = rng.standard_normal(shape).astype(np.float32)
    out = _zeropower_via_newtonschulz(ember.tensor(g), (2.0, -1.5, 0.5), 3, 1e-7)
    np.testing.assert_allclose(_np(out.float()), _ns_ref(g, (2.0, -1.5, 0.5), 3), rtol=2 ** -7, atol=2 ** -9)


MUON_CASES = [
    {},
    dict(lr=0.02),
    dict(lr=0.02, nesterov=False, momentum=0.9, weight_decay=0.01, adjust_lr_fn="match_rms_adamw"),
    dict(lr=0.05, adjust_lr_fn="spectral_unclamped", ns_steps=3, weight_decay=0.0),
    dict(lr=0.03, adjust_lr_fn="original", ns_coefficients=(2.0, -1.5, 0.5), momentum=0.5),
]


@pytest.mark.parametrize("kw", MUON_CASES, ids=[str(k) for k in MUON_CASES])
def test_muon_matches_numpy_reference(kw):
    rng = np.random.default_rng(7)
    shapes = [(5, 3), (3, 6), (4, 4)]
    p0 = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    noise = [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(5)]

    def grad_fn(t, i, p):
        return (noise[t - 1][i] + 0.5 * p).astype(np.float32)

    got, opt, params = _run(lambda ps: optim.Muon(ps, **kw), p0, grad_fn, 5, dtype=ember.float32)
    for i, s in enumerate(shapes):
        # The reference is driven by ember's own parameters so that a last-bit flip in one step
        # (see test_newton_schulz_matches_bf16_reference) does not propagate.
        ref_prev = p0[i]
        bufs = np.zeros(s, dtype=np.float32)
        for t in range(1, 6):
            g = grad_fn(t, i, ref_prev)
            mu = kw.get("momentum", 0.95)
            bufs = _lerp32(bufs, g, 1 - mu)
            direction = _lerp32(g, bufs, mu) if kw.get("nesterov", True) else bufs
            o = _ns_ref(direction, kw.get("ns_coefficients", NS_COEFFS), kw.get("ns_steps", 5))
            lr, wd = kw.get("lr", 1e-3), kw.get("weight_decay", 0.1)
            adj = _adjusted_lr(lr, kw.get("adjust_lr_fn"), s)
            expect = ref_prev.astype(np.float64) * (1 - lr * wd) - adj * o
            np.testing.assert_allclose(got[t - 1][i], expect, rtol=0, atol=1e-6 + adj * 2 ** -7)
            ref_prev = got[t - 1][i].astype(np.float32)
        np.testing.assert_allclose(_np(opt.state[params[i]]["momentum_buffer"]), bufs, rtol=1e-6, atol=1e-7)
    assert not np.allclose(got[-1][0], p0[0])


def test_muon_free_running_reference():
    """Gradients that do not depend on the parameter: the free-running numpy trajectory matches."""
    rng = np.random.default_rng(3)
    p0 = rng.standard_normal((6, 4)).astype(np.float32)
    grads = [rng.standard_normal((6, 4)).astype(np.float32) for _ in range(6)]
    kw = dict(lr=0.02, weight_decay=0.05)
    ref, buf = _muon_ref(p0, grads, **kw)
    got, opt, params = _run(lambda ps: optim.Muon(ps, **kw), [p0], lambda t, i, p: grads[t - 1], 6,
                            dtype=ember.float32)
    adj = _adjusted_lr(0.02, None, (6, 4))
    assert adj == pytest.approx(0.02 * math.sqrt(1.5))
    for r, g in zip(ref, got):
        np.testing.assert_allclose(g[0], r, rtol=0, atol=1e-6 + 6 * adj * 2 ** -8)
    np.testing.assert_allclose(_np(opt.state[params[0]]["momentum_buffer"]), buf, rtol=1e-6, atol=1e-7)
    assert list(opt.state[params[0]]) == ["momentum_buffer"]


def test_muon_float64_parameters_take_a_bf16_update():
    rng = np.random.default_rng(5)
    p0 = rng.standard_normal((3, 5))
    g = rng.standard_normal((3, 5))
    p = ember.tensor(p0, requires_grad=True)
    p.grad = ember.tensor(g)
    optim.Muon([p], lr=0.1, weight_decay=0.0, nesterov=False).step()
    assert p.dtype == ember.float64
    o = _ns_ref(_lerp32(np.zeros((3, 5), np.float32), g, 0.05))
    np.testing.assert_allclose(_np(p), p0 - 0.1 * o, rtol=0, atol=0.1 * 2 ** -7)


def test_muon_param_groups():
    rng = np.random.default_rng(11)
    a0, b0 = rng.standard_normal((4, 2)).astype(np.float32), rng.standard_normal((2, 4)).astype(np.float32)
    ga = [rng.standard_normal((4, 2)).astype(np.float32) for _ in range(3)]
    gb = [rng.standard_normal((2, 4)).astype(np.float32) for _ in range(3)]
    a, b = ember.tensor(a0, requires_grad=True), ember.tensor(b0, requires_grad=True)
    kw_a, kw_b = dict(lr=0.05, adjust_lr_fn="match_rms_adamw"), dict(lr=0.01, nesterov=False, momentum=0.8)
    opt = optim.Muon([dict(params=[a], **kw_a), dict(params=[b], **kw_b)], weight_decay=0.02)
    assert opt.param_groups[1]["weight_decay"] == 0.02 and opt.param_groups[0]["momentum"] == 0.95
    for t in range(3):
        a.grad, b.grad = ember.tensor(ga[t]), ember.tensor(gb[t])
        opt.step()
    ra, _ = _muon_ref(a0, ga, weight_decay=0.02, **kw_a)
    rb, _ = _muon_ref(b0, gb, weight_decay=0.02, **kw_b)
    np.testing.assert_allclose(_np(a), ra[-1], rtol=0, atol=1e-6 + 3 * 0.05 * 0.2 * 2 * 2 ** -8)
    np.testing.assert_allclose(_np(b), rb[-1], rtol=0, atol=1e-6 + 3 * 0.01 * 2 ** -8)


def test_muon_shape_restrictions():
    with pytest.raises(ValueError, match=r"^Muon only supports 2D parameters whereas we found a parameter with "
                                         r"size: ember\.Size\(\[3\]\)$"):
        optim.Muon([ember.zeros(3, requires_grad=True)])
    with pytest.raises(ValueError, match=r"Muon only supports 2D parameters .*size: ember\.Size\(\[2, 3, 4\]\)"):
        optim.Muon([ember.zeros(4, 4, requires_grad=True), ember.zeros(2, 3, 4, requires_grad=True)])
    # As torch: a group added later is not checked until step().
    w = ember.zeros(2, 2, requires_grad=True)
    opt = optim.Muon([w])
    v = ember.zeros(3, requires_grad=True)
    opt.add_param_group({"params": [v]})
    v.grad = ember.ones(3)
    with pytest.raises(ValueError, match=r"^Param gradient must be a 2D matrix$"):
        opt.step()
    w.grad = ember.ones(2, 2)
    with pytest.raises(ValueError, match=r"^Number of steps must be less than 100 for computational efficiency$"):
        optim.Muon([w], ns_steps=100).step()
    with pytest.raises(ValueError, match=r"^Coefficients must be a tuple of exactly 3 values$"):
        optim.Muon([w], ns_coefficients=(1.0, 2.0)).step()
    c = ember.tensor(np.ones((2, 2)) + 0j, requires_grad=True)
    c.grad = ember.tensor(np.ones((2, 2)) + 0j)
    with pytest.raises(RuntimeError, match="^Muon does not support complex parameters$"):
        optim.Muon([c]).step()
    with pytest.raises(RuntimeError, match="^Adafactor does not support complex parameters$"):
        optim.Adafactor([c]).step()


# -- argument checks (torch 2.x's messages) ------------------------------------------------------
ADAFACTOR_ERRORS = [
    (dict(lr=-0.1), "Learning rate should be >= 0 but is: -0.1"),
    (dict(beta2_decay=0.5), "beta2_decay should be <= 0 but is: 0.5"),
    (dict(eps=(-1e-3, 1e-3)), "epsilon1 should be >= 0 but is: -0.001"),
    (dict(eps=(None, -1.0)), "epsilon2 should be >= 0 but is: -1.0"),
    (dict(d=0.5), "Clipping threshold d should be >= 1 but is: 0.5"),
    (dict(weight_decay=-0.2), "weight_decay should be >= 0 but is: -0.2"),
]
MUON_ERRORS = [
    (dict(lr=-1.0), "Learning rate should be >= 0 but is: -1.0"),
    (dict(momentum=-0.5), "momentum should be >= 0 but is: -0.5"),
    (dict(weight_decay=-0.1), "weight decay should be >= 0 but is: -0.1"),
    (dict(adjust_lr_fn="bogus"), "Adjust learning rate function bogus is not supported"),
]


@pytest.mark.parametrize("name,kw,msg", [("Adafactor",) + e for e in ADAFACTOR_ERRORS]
                         + [("Muon",) + e for e in MUON_ERRORS])
def test_argument_errors(name, kw, msg):
    with pytest.raises(ValueError) as info:
        getattr(optim, name)([ember.zeros(2, 2, requires_grad=True)], **kw)
    assert str(info.value) == msg
    try:
        import torch
    except ImportError:
        return
    if hasattr(torch.optim, name):
        with pytest.raises(ValueError) as tinfo:
            getattr(torch.optim, name)([torch.zeros(2, 2, requires_grad=True)], **kw)
        assert str(tinfo.value) == msg


def test_tensor_lr():
    for cls in (optim.Adafactor, optim.Muon):
        with pytest.raises(ValueError, match="^Tensor lr must be 1-element$"):
            cls([ember.zeros(2, 2, requires_grad=True)], lr=ember.tensor([0.1, 0.2]))
    # A one-element tensor lr gives the float lr's trajectory.
    for cls, kw in ((optim.Adafactor, {}), (optim.Muon, dict(weight_decay=0.1))):
        runs = []
        for lr in (0.0625, ember.tensor(0.0625)):  # exact in float32
            runs.append(_run(lambda ps: cls(ps, lr=lr, **kw), [_INIT[0]], _grad_fn, 3)[0][-1][0])
        np.testing.assert_array_equal(runs[0], runs[1])


# -- state_dict ------------------------------------------------------------------------------------
_MUON_P0 = [_RNG.standard_normal((4, 3)), _RNG.standard_normal((3, 5))]
_MUON_NOISE = [[_RNG.standard_normal(p.shape) for p in _MUON_P0] for _ in range(6)]
_ROUND_TRIP = {
    "Adafactor": (lambda ps: optim.Adafactor(ps, lr=0.1, weight_decay=0.01), _INIT, _grad_fn),
    "Muon": (lambda ps: optim.Muon(ps, lr=0.02), _MUON_P0, lambda t, i, p: _MUON_NOISE[t - 1][i] + 0.5 * p),
}


def _steps(opt, params, grad_fn, ts):
    for t in ts:
        for i, p in enumerate(params):
            p.grad = ember.tensor(grad_fn(t, i, _np(p)))
        opt.step()


@pytest.mark.parametrize("name", ["Adafactor", "Muon"])
def test_state_dict_round_trip(name):
    factory, p0, grad_fn = _ROUND_TRIP[name]
    params = [ember.tensor(p, requires_grad=True) for p in p0]
    opt = factory(params)
    _steps(opt, params, grad_fn, range(1, 4))
    sd = opt.state_dict()
    assert list(sd["state"]) == list(range(len(p0)))
    if name == "Adafactor":
        assert list(sd["state"][0]) == ["step", "row_var", "col_var"]
        assert list(sd["state"][2]) == ["step", "variance"]
        assert sd["state"][0]["step"].dtype == ember.float32 and float(sd["state"][0]["step"]) == 3.0
        assert sd["param_groups"][0] == dict(lr=0.1, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.01,
                                             foreach=None, maximize=False, params=[0, 1, 2, 3])
    else:
        assert list(sd["state"][0]) == ["momentum_buffer"]
        assert sd["param_groups"][0] == dict(lr=0.02, weight_decay=0.1, momentum=0.95, nesterov=True,
                                             ns_coefficients=NS_COEFFS, eps=1e-7, ns_steps=5, adjust_lr_fn=None,
                                             params=[0, 1])
    buf = io.BytesIO()
    ember.save(sd, buf)
    buf.seek(0)
    loaded = ember.load(buf)
    loaded_copy = copy.deepcopy(loaded)  # load_state_dict shares the state tensors (as torch 2)
    snapshot = [_np(p) for p in params]

    params2 = [ember.tensor(p, requires_grad=True) for p in snapshot]
    opt2 = factory(params2)
    opt2.load_state_dict(loaded)
    assert opt2.state_dict()["param_groups"] == sd["param_groups"]
    _steps(opt, params, grad_fn, range(4, 7))
    _steps(opt2, params2, grad_fn, range(4, 7))
    for a, b in zip(params, params2):
        np.testing.assert_array_equal(_np(a), _np(b))
    # The loaded state matters: a fresh optimizer from the same parameters goes elsewhere.
    params3 = [ember.tensor(p, requires_grad=True) for p in snapshot]
    _steps(factory(params3), params3, grad_fn, range(4, 7))
    assert not np.allclose(_np(params3[0]), _np(params[0]), rtol=1e-6, atol=0)
    # A deep copy of the state_dict loads as well (torch's usual checkpoint path).
    params4 = [ember.tensor(p, requires_grad=True) for p in snapshot]
    opt4 = factory(params4)
    opt4.load_state_dict(loaded_copy)
    _steps(opt4, params4, grad_fn, range(4, 7))
    np.testing.assert_array_equal(_np(params4[-1]), _np(params[-1]))


# -- a small model trains -------------------------------------------------------------------------
def _regression():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 6)).astype(np.float32)
    y = np.tanh(x @ rng.standard_normal((6, 1))).astype(np.float32)
    return ember.tensor(x), ember.tensor(y)


def _train(model, opts, x, y, steps):
    losses = []
    for _ in range(steps):
        for o in opts:
            o.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        for o in opts:
            o.step()
        losses.append(loss.item())
    return losses


def test_adafactor_trains_a_model():
    x, y = _regression()
    model = ember.nn.Sequential(ember.nn.Linear(6, 16), ember.nn.Tanh(), ember.nn.Linear(16, 1))
    losses = _train(model, [optim.Adafactor(model.parameters(), lr=0.05)], x, y, 60)
    assert losses[-1] < 0.3 * losses[0]


def test_muon_trains_a_model():
    x, y = _regression()
    model = ember.nn.Sequential(ember.nn.Linear(6, 16), ember.nn.Tanh(), ember.nn.Linear(16, 1))
    matrices = [p for p in model.parameters() if p.ndim == 2]
    others = [p for p in model.parameters() if p.ndim != 2]
    opts = [optim.Muon(matrices, lr=0.02, weight_decay=0.0), optim.Adam(others, lr=0.01)]
    losses = _train(model, opts, x, y, 60)
    assert losses[-1] < 0.3 * losses[0]


# -- torch 2.x (extra; skipped without it) -------------------------------------------------------
def _torch_cls(name):
    torch = pytest.importorskip("torch", reason="PyTorch not installed: differential test skipped")
    if not hasattr(torch.optim, name):
        pytest.skip(f"torch {torch.__version__} has no optim.{name}")
    return torch, getattr(torch.optim, name)


_W1, _W2, _W3 = _RNG.standard_normal((6, 4)), _RNG.standard_normal((4, 3)), _RNG.standard_normal((2, 4, 3))
_B3, _X, _Y = _RNG.standard_normal(3), _RNG.standard_normal((8, 6)), _RNG.standard_normal((8, 3))


def _torch_style_run(lib, name, kw, dtype, n_params, steps=10):
    dt = getattr(lib, dtype)
    ps = [lib.tensor(a, dtype=dt, requires_grad=True) for a in (_W1, _W2, _W3, _B3)[:n_params]]
    opt = getattr(lib.optim, name)(ps, **kw)
    x, y = lib.tensor(_X, dtype=dt), lib.tensor(_Y, dtype=dt)
    traj = []
    for _ in range(steps):
        opt.zero_grad()
        h = lib.tanh(x @ ps[0])
        out = h @ ps[1]
        if n_params > 2:
            out = out + (h @ ps[2]).sum(0) + ps[3]
        ((out - y) ** 2).mean().backward()
        opt.step()
        traj.append(np.concatenate([p.detach().numpy().astype(np.float64).ravel() for p in ps]))
    return np.array(traj), opt


TORCH_CASES = [("Adafactor", k) for k in ADAFACTOR_CASES] + [("Muon", k) for k in MUON_CASES]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", TORCH_CASES, ids=[f"{n}-{k}" for n, k in TORCH_CASES])
def test_matches_torch(case, dtype):
    name, kw = case
    torch, _ = _torch_cls(name)
    n = 4 if name == "Adafactor" else 2
    tt, topt = _torch_style_run(torch, name, kw, dtype, n)
    et, eopt = _torch_style_run(ember, name, kw, dtype, n)
    # float32: ember's norms round correctly (torch accumulates in float32), a last-bit difference
    # that Adafactor's large relative steps (lr=0.6) grow to ~2e-6 over 10 steps.
    big = dtype == "float32" and kw.get("lr", 0) > 0.5
    np.testing.assert_allclose(et, tt, rtol=2e-6 if dtype == "float32" else 1e-12,
                               atol=(5e-6 if big else 1e-6) if dtype == "float32" else 1e-13)
    assert not np.allclose(et[-1], et[0])
    tsd, esd = topt.state_dict(), eopt.state_dict()
    assert esd["param_groups"] == tsd["param_groups"]
    assert list(esd["state"]) == list(tsd["state"])
    for i in tsd["state"]:
        ts, es = tsd["state"][i], esd["state"][i]
        assert list(es) == list(ts)
        for k in ts:
            assert str(es[k].dtype).split(".")[-1] == str(ts[k].dtype).split(".")[-1], k
            assert tuple(es[k].shape) == tuple(ts[k].shape), k
            np.testing.assert_allclose(es[k].numpy(), ts[k].numpy(), rtol=1e-5, atol=1e-7)
