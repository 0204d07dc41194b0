"""ember.special's Airy / Bessel functions and orthogonal polynomials (python/ember/_special_more.py).

References that need nothing installed: the Bessel, modified Bessel and Airy functions are summed
here in Python's decimal arithmetic at 40+ digits (power series, A&S 9.1.10-11, 9.6.10-11,
10.4.2-3, and for large arguments the Hankel expansions A&S 9.2.5-10 / 9.7.2), then checked
against identities (Wronskians, known zeros, the Bessel differential equations through the
gradients); the polynomials against numpy.polynomial (T, H, He, L, P), exact rational sums of
their explicit formulas (T, U, V, W) and Gauss-quadrature orthogonality. The comparisons with
PyTorch 2.x run only where it is installed (not with the .venv's torch 1.13).
"""
import decimal
import math
from decimal import Decimal as D
from fractions import Fraction

import numpy as np
import pytest

import ember

S = ember.special
INF = float("inf")
NAN = float("nan")

# ------------------------------------------------------------------ decimal references

_PI = D("3.141592653589793238462643383279502884197169399375105820974944592307816")
_EULER = D("0.5772156649015328606065120900824024310421593359399235988057672348848677")
_AI0 = D("0.35502805388781723926006318600418317639797917419917724058332651030081")   # Ai(0)
_MAIP0 = D("0.2588194037928067984051835601892039634790911383549345822100018138561028")  # -Ai'(0)


def _ctx(prec):
    return decimal.localcontext(decimal.Context(prec=prec, Emax=10 ** 6, Emin=-10 ** 6))


def _series_j_i(nu, x, modified):
    """J_nu / I_nu: sum (+-1)^k (x/2)^(2k+nu) / (k! (k+nu)!) (current decimal context)."""
    h = D(x) / 2
    q = h * h if modified else -h * h
    term = h ** nu / math.factorial(nu)
    total, k = term, 0
    eps = D(10) ** (-decimal.getcontext().prec - 5)
    while True:
        k += 1
        term = term * q / (k * (k + nu))
        total += term
        if k > abs(float(x)) and abs(term) <= eps * abs(total):
            return total


def _series_y_k(nu, x, modified):
    """Y_nu (A&S 9.1.11) / K_nu (A&S 9.6.11) for nu = 0, 1 by their log-series."""
    h = D(x) / 2
    lg = h.ln()
    q = h * h if modified else -h * h
    # sum_k [psi(k+1) + psi(nu+k+1)] q^k / (k! (nu+k)!), psi(m+1) = H_m - gamma
    c = D(1) / math.factorial(nu)
    hk, hnk = D(0), sum((D(1) / j for j in range(1, nu + 1)), D(0))
    total = (hk + hnk - 2 * _EULER) * c
    eps = D(10) ** (-decimal.getcontext().prec - 5)
    k = 0
    while True:
        k += 1
        c = c * q / (k * (nu + k))
        hk += D(1) / k
        hnk += D(1) / (nu + k)
        term = (hk + hnk - 2 * _EULER) * c
        total += term
        if k > abs(float(x)) and abs(term) <= eps * abs(total):
            break
    if modified:
        first = _series_j_i(nu, x, True)
        finite = 1 / D(x) if nu == 1 else D(0)
        return finite + (-1) ** (nu + 1) * lg * first + (-1) ** nu * h ** nu * total / 2
    first = _series_j_i(nu, x, False)
    finite = -2 / (_PI * D(x)) if nu == 1 else D(0)
    return finite + 2 / _PI * lg * first - h ** nu / _PI * total


def _sincos(x):
    two_pi = 2 * _PI
    r = x - two_pi * (x / two_pi).to_integral_value(rounding=decimal.ROUND_FLOOR)
    s, c, term, k = D(0), D(0), D(1), 0
    eps = D(10) ** (-decimal.getcontext().prec - 5)
    while True:
        if k % 4 == 0:
            c += term
        elif k % 4 == 1:
            s += term
        elif k % 4 == 2:
            c -= term
        else:
            s -= term
        k += 1
        term = term * r / k
        if k > 30 and term < eps:
            return s, c


def _asymptotic_terms(nu, x):
    """a_k(nu) / x^k (A&S 9.2.5-10, 9.7.2) up to the smallest term."""
    terms, t, k = [D(1)], D(1), 0
    mu = 4 * nu * nu
    while True:
        k += 1
        nxt = t * (mu - (2 * k - 1) ** 2) / (k * 8 * D(x))
        if abs(nxt) >= abs(t) or abs(nxt) < D(10) ** (-decimal.getcontext().prec):
            return terms
        terms.append(nxt)
        t = nxt


def _hankel(nu, x, second_kind):
    a = _asymptotic_terms(nu, x)
    p = sum(((-1) ** (k // 2) * a[k] for k in range(0, len(a), 2)), D(0))
    q = sum(((-1) ** (k // 2) * a[k] for k in range(1, len(a), 2)), D(0))
    s, c = _sincos(D(x) - (D(nu) / 2 + D(1) / 4) * _PI)
    amp = (2 / (_PI * D(x))).sqrt()
    return amp * (p * s + q * c) if second_kind else amp * (p * c - q * s)


def ref_bessel(kind, x):
    """float J0/J1/Y0/Y1/I0/I1/K0/K1/K0e/K1e at the float x, from 40+ significant digits."""
    nu = int(kind[-1]) if kind[-1] in "01" else int(kind[1])
    ax = abs(x)
    if kind in ("j0", "j1", "y0", "y1"):
        with _ctx(40 + int(0.45 * ax)):
            if ax <= 25:
                v = _series_y_k(nu, x, False) if kind[0] == "y" else _series_j_i(nu, x, False)
            else:
                v = _hankel(nu, ax, kind[0] == "y")
                if kind == "j1" and x < 0:
                    v = -v
            return float(v)
    if kind in ("i0", "i1"):
        with _ctx(40):
            return float(_series_j_i(nu, x, True))
    # K0, K1 and the scaled K0e = exp(x) K0, K1e
    with _ctx(40 + int(0.9 * min(ax, 25))):
        if ax <= 25:
            v = _series_y_k(nu, x, True)
            return float(v * D(x).exp()) if kind.endswith("e") else float(v)
        v = (_PI / (2 * D(x))).sqrt() * sum(_asymptotic_terms(nu, x), D(0))
        return float(v) if kind.endswith("e") else float(v * (-D(x)).exp())


def ref_airy_ai(x):
    """Ai(x) = Ai(0) f(x) + Ai'(0) g(x), the Maclaurin series (A&S 10.4.2-3), at enough digits;
    above x = 15 (where f, g ~ exp(zeta) would need Ai(0), Ai'(0) to more digits than written
    here) the asymptotic series exp(-zeta) / (2 sqrt(pi) x^(1/4)) sum (-1)^k u_k zeta^-k (A&S 10.4.59)."""
    ax = abs(x)
    if x > 15:
        with _ctx(50):
            xd = D(x)
            zeta = 2 * xd * xd.sqrt() / 3
            u, total, k = D(1), D(1), 0
            while True:
                k += 1
                nxt = u * (6 * k - 5) * (6 * k - 3) * (6 * k - 1) / ((2 * k - 1) * 216 * k) / zeta
                if nxt >= u or nxt < D(10) ** -45:
                    break
                total += (-1) ** k * nxt
                u = nxt
            return float((-zeta).exp() / (2 * _PI.sqrt() * xd.sqrt().sqrt()) * total)
    with _ctx(40 + int(0.6 * ax ** 1.5)):
        z = D(x) ** 3
        tf, tg = D(1), D(x)
        f, g = tf, tg
        eps = D(10) ** (-decimal.getcontext().prec)
        k = 0
        while True:
            k += 1
            tf = tf * z / ((3 * k - 1) * (3 * k))
            tg = tg * z / ((3 * k) * (3 * k + 1))
            f += tf
            g += tg
            if k > 3 and abs(tf) + abs(tg) < eps:
                return float(_AI0 * f - _MAIP0 * g)


def ref_spherical_j0(x):
    with _ctx(40):
        if x == 0:
            return 1.0
        s, _ = _sincos(D(x))
        return float(s / D(x))


def _f64(vals):
    return ember.tensor(np.asarray(vals, dtype=np.float64), dtype=ember.float64)


def _np(t):
    return t.detach().numpy().astype(np.float64)


# ------------------------------------------------------------------ Bessel / Airy values

_J_POINTS = [1e-8, 1e-4, 0.1, 0.5, 1.0, 2.0, 2.4, 3.0, 4.5, 4.999, 5.0, 5.001, 6.0, 7.5, 8.0, 10.0, 13.7,
             20.0, 24.9, 25.1, 33.3, 50.0, 71.2, 100.0, 200.0]
_K_POINTS = [1e-8, 1e-3, 0.1, 0.5, 1.0, 1.999, 2.0, 2.001, 3.0, 5.0, 8.0, 12.5, 20.0, 25.5, 40.0, 90.0, 300.0,
             700.0]
_I_POINTS = [1e-8, 1e-3, 0.1, 1.0, 3.0, 7.999, 8.0, 8.001, 12.0, 30.0, 100.0, 400.0, 700.0]


def _envelope(x):
    """The size of the oscillating Bessel functions near x: absolute error is measured against it."""
    return np.sqrt(2 / (np.pi * np.maximum(np.abs(x), 1.0)))


@pytest.mark.parametrize("name,kind,signed", [("bessel_j0", "j0", True), ("bessel_j1", "j1", True),
                                              ("bessel_y0", "y0", False), ("bessel_y1", "y1", False)])
def test_bessel_first_second_kind_values(name, kind, signed):
    xs = np.array(_J_POINTS + ([-v for v in _J_POINTS] if signed else []))
    ref = np.array([ref_bessel(kind, float(x)) for x in xs])
    got = _np(getattr(S, name)(_f64(xs)))
    err = np.abs(got - ref) / np.maximum(np.abs(ref), _envelope(xs))
    assert err.max() < 2e-14, (xs[err.argmax()], got[err.argmax()], ref[err.argmax()])


@pytest.mark.parametrize("name,kind", [("modified_bessel_i0", "i0"), ("modified_bessel_i1", "i1")])
def test_modified_bessel_i_values(name, kind):
    xs = np.array(_I_POINTS + [-v for v in _I_POINTS])
    ref = np.array([ref_bessel(kind, float(x)) for x in xs])
    got = _np(getattr(S, name)(_f64(xs)))
    rel = np.abs(got - ref) / np.abs(ref)
    assert rel.max() < 4e-15, (xs[rel.argmax()], got[rel.argmax()], ref[rel.argmax()])


@pytest.mark.parametrize("name,kind", [("modified_bessel_k0", "k0"), ("modified_bessel_k1", "k1"),
                                       ("scaled_modified_bessel_k0", "k0e"), ("scaled_modified_bessel_k1", "k1e")])
def test_modified_bessel_k_values(name, kind):
    xs = np.array(_K_POINTS + ([1000.0, 1e5] if kind.endswith("e") else []))
    ref = np.array([ref_bessel(kind, float(x)) for x in xs])
    got = _np(getattr(S, name)(_f64(xs)))
    rel = np.abs(got - ref) / np.abs(ref)
    assert rel.max() < 4e-15, (xs[rel.argmax()], got[rel.argmax()], ref[rel.argmax()])


def test_airy_ai_values():
    xs = np.array([-40.0, -25.3, -10.0, -5.0, -3.0, -2.1, -2.09, -2.0, -1.0, -0.3, 0.0, 1e-6, 0.5, 1.0, 2.0,
                   2.0899, 2.09, 2.1, 4.0, 8.0, 15.0, 30.0])
    ref = np.array([ref_airy_ai(float(x)) for x in xs])
    got = _np(S.airy_ai(_f64(xs)))
    # Ai's own condition number grows as |x|^(3/2) (its phase / exponent 2/3 |x|^(3/2)); on the
    # negative side the error is measured against the envelope |x|^(-1/4) / sqrt(pi)
    envelope = np.maximum(np.abs(xs), 1) ** -0.25 / np.sqrt(np.pi)
    scale = np.where(xs < 0, np.maximum(np.abs(ref), envelope), np.abs(ref))
    err = np.abs(got - ref) / scale / (1 + np.abs(xs) ** 1.5)
    assert err.max() < 4e-15, (xs[err.argmax()], got[err.argmax()], ref[err.argmax()])


def test_spherical_bessel_j0_values():
    xs = np.array([0.0, 1e-10, 1e-3, 0.1, 0.4999, 0.5, 0.50001, 1.0, 3.0, math.pi, 10.0, 123.4])
    xs = np.concatenate([xs, -xs])
    ref = np.array([ref_spherical_j0(float(x)) for x in xs])
    got = _np(S.spherical_bessel_j0(_f64(xs)))
    err = np.abs(got - ref) / np.maximum(np.abs(ref), 1 / np.maximum(np.abs(xs), 1))
    assert err.max() < 4e-16


def test_known_zeros():
    zeros = {  # the first zeros (A&S tables 9.5, 10.13), 20 digits
        S.bessel_j0: [2.4048255576957727686, 5.5200781102863106496, 8.6537279129110122170],
        S.bessel_j1: [3.8317059702075123156, 7.0155866698156187535],
        S.bessel_y0: [0.89357696627916752158, 3.9576784193148578684],
        S.bessel_y1: [2.1971413260310170351, 5.4296810407941351328],
        S.airy_ai: [-2.3381074104597670385, -4.0879494441309706166],
    }
    for fn, zs in zeros.items():
        got = _np(fn(_f64(zs)))
        assert np.abs(got).max() < 2e-15, (fn.__name__, got)
        # and a sign change across each zero
        assert np.all(_np(fn(_f64(np.array(zs) - 1e-6))) * _np(fn(_f64(np.array(zs) + 1e-6))) < 0)


def test_wronskians_and_parity():
    x = np.concatenate([np.linspace(0.01, 60, 3001), np.geomspace(1e-6, 600, 400)])
    t = _f64(x)
    j0, j1, y0, y1 = (_np(f(t)) for f in (S.bessel_j0, S.bessel_j1, S.bessel_y0, S.bessel_y1))
    w = j1 * y0 - j0 * y1  # = 2 / (pi x), A&S 9.1.16
    assert np.abs(w * (np.pi * x / 2) - 1).max() < 3e-14
    i0, i1, k0, k1 = (_np(f(t)) for f in (S.modified_bessel_i0, S.modified_bessel_i1, S.modified_bessel_k0,
                                          S.modified_bessel_k1))
    w = i0 * k1 + i1 * k0  # = 1 / x, A&S 9.6.15
    assert np.abs(w * x - 1).max() < 3e-15
    k0e, k1e = _np(S.scaled_modified_bessel_k0(t)), _np(S.scaled_modified_bessel_k1(t))
    small = x < 600
    assert np.abs(k0e[small] * np.exp(-x[small]) / k0[small] - 1).max() < 1e-13
    assert np.abs(k1e[small] * np.exp(-x[small]) / k1[small] - 1).max() < 1e-13
    # I0 against numpy's own I0 (Cephes' series in numpy.i0)
    assert np.abs(i0[x < 700] / np.i0(x[x < 700]) - 1).max() < 3e-15
    # parities, exactly
    neg = _f64(-x)
    assert np.array_equal(_np(S.bessel_j0(neg)), j0)
    assert np.array_equal(_np(S.bessel_j1(neg)), -j1)
    assert np.array_equal(_np(S.modified_bessel_i0(neg)), i0)
    assert np.array_equal(_np(S.modified_bessel_i1(neg)), -i1)
    assert np.array_equal(_np(S.spherical_bessel_j0(neg)), _np(S.spherical_bessel_j0(t)))


def _same(got, want):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    both_nan = np.isnan(got) & np.isnan(want)
    equal = (got == want) & (np.signbit(got) == np.signbit(want))
    with np.errstate(invalid="ignore"):
        close = np.abs(got - want) <= 1e-15 * np.abs(want)
    return bool(np.all(both_nan | equal | close))


def test_special_values_match_torch():
    """Edge values as torch 2.x gives them (checked with torch 2.15)."""
    x = [0.0, -0.0, -1.5, 1e-300, INF, -INF, NAN]
    c1 = 0.3550280538878172
    want = {
        "airy_ai": [c1, c1, ref_airy_ai(-1.5), c1, NAN, NAN, NAN],
        "bessel_j0": [1.0, 1.0, ref_bessel("j0", 1.5), 1.0, NAN, NAN, NAN],
        "bessel_j1": [0.0, -0.0, -ref_bessel("j1", 1.5), 5e-301, NAN, NAN, NAN],
        "bessel_y0": [-INF, -INF, NAN, ref_bessel("y0", 1e-300), NAN, NAN, NAN],
        "bessel_y1": [-INF, -INF, NAN, -2 / math.pi * 1e300, NAN, NAN, NAN],
        "modified_bessel_i0": [1.0, 1.0, ref_bessel("i0", 1.5), 1.0, NAN, NAN, NAN],
        "modified_bessel_i1": [0.0, 0.0, -ref_bessel("i1", 1.5), 5e-301, NAN, NAN, NAN],
        "modified_bessel_k0": [INF, INF, NAN, ref_bessel("k0", 1e-300), 0.0, NAN, NAN],
        "modified_bessel_k1": [INF, INF, NAN, 1e300, 0.0, NAN, NAN],
        "scaled_modified_bessel_k0": [INF, INF, NAN, ref_bessel("k0", 1e-300), 0.0, NAN, NAN],
        "scaled_modified_bessel_k1": [INF, INF, NAN, 1e300, 0.0, NAN, NAN],
        "spherical_bessel_j0": [1.0, 1.0, ref_spherical_j0(1.5), 1.0, 0.0, 0.0, NAN],
    }
    for name, w in want.items():
        got = _np(getattr(S, name)(_f64(x)))
        assert _same(got, w), (name, got, w)
    assert _np(S.airy_ai(_f64([103.0, 104.0, 700.0])))[1:].tolist() == [0.0, 0.0]
    assert 0 < _np(S.airy_ai(_f64([103.0])))[0] < 1e-300
    assert _np(S.modified_bessel_i0(_f64([800.0])))[0] == INF


def test_float32_is_the_rounded_float64_value():
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(-30, 30, 400), rng.uniform(0, 3, 100)]).astype(np.float32)
    for name in ("airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
                 "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
                 "scaled_modified_bessel_k1", "spherical_bessel_j0"):
        fn = getattr(S, name)
        r32 = fn(ember.tensor(x))
        assert r32.dtype == ember.float32
        r64 = fn(ember.tensor(x.astype(np.float64), dtype=ember.float64))
        assert np.array_equal(r32.numpy(), r64.numpy().astype(np.float32), equal_nan=True), name
    # and one float32 value against the reference: J0(1) rounds to 0.76519769 (torch 2.x: 0.76519763)
    assert S.bessel_j0(ember.tensor([1.0])).item() == float(np.float32(ref_bessel("j0", 1.0)))
    # integer inputs give the default dtype
    assert S.bessel_j0(ember.tensor([1, 2])).dtype == ember.get_default_dtype()


# ------------------------------------------------------------------ gradients

def _grads(fn, x):
    t = ember.tensor(x, dtype=ember.float64, requires_grad=True)
    y = fn(t)
    (g,) = ember.autograd.grad(y.sum(), t, create_graph=True)
    (g2,) = ember.autograd.grad(g.sum(), t)
    return _np(y), _np(g), _np(g2)


@pytest.mark.parametrize("name,nu,modified", [("bessel_j0", 0, False), ("bessel_j1", 1, False),
                                              ("bessel_y0", 0, False), ("bessel_y1", 1, False),
                                              ("modified_bessel_i0", 0, True), ("modified_bessel_i1", 1, True),
                                              ("modified_bessel_k0", 0, True), ("modified_bessel_k1", 1, True)])
def test_gradients_solve_bessels_equation(name, nu, modified):
    """x^2 y'' + x y' + (x^2 - nu^2) y = 0 (modified: x^2 y'' + x y' - (x^2 + nu^2) y = 0), with y'
    and y'' from autograd (the second through the first's graph)."""
    x = np.concatenate([np.linspace(0.05, 4.95, 50), np.linspace(5.05, 30, 50)])
    y, g, g2 = _grads(getattr(S, name), x)
    lhs = x * x * g2 + x * g + ((-x * x if modified else x * x) - nu * nu) * y
    scale = x * x * np.abs(g2) + x * np.abs(g) + (x * x + nu * nu) * np.abs(y)
    assert np.abs(lhs / scale).max() < 1e-12
    # and y' against a central difference of y
    fn = getattr(S, name)
    h = 1e-6
    fd = (_np(fn(_f64(x + h))) - _np(fn(_f64(x - h)))) / (2 * h)
    assert np.abs(g - fd).max() / np.abs(g).max() < 1e-8


def test_gradients_at_the_origin_and_edges():
    x = [0.0, 1e-300, 1e-17]
    _, g, g2 = _grads(S.bessel_j1, x)
    assert g.tolist() == [0.5, 0.5, 0.5] and g2.tolist() == [0.0, 0.0, 0.0]
    _, g, _ = _grads(S.modified_bessel_i1, x)
    assert g.tolist() == [0.5, 0.5, 0.5]
    _, g, g2 = _grads(S.bessel_j0, [0.0])
    assert g.tolist() == [-0.0] and g2.tolist() == [-0.5]
    _, g, _ = _grads(S.bessel_y1, [0.0, 1e-300])
    assert g.tolist() == [INF, INF]
    _, g, _ = _grads(S.modified_bessel_k1, [0.0])
    assert g.tolist() == [-INF]
    _, g, _ = _grads(S.bessel_j1, [NAN])
    assert np.isnan(g).all()
    t = ember.tensor([0.5, 1.5], requires_grad=True)  # float32 in, float32 gradient
    (g,) = ember.autograd.grad(S.bessel_j1(t).sum(), t)
    assert g.dtype == ember.float32


def test_not_differentiable_like_torch():
    t = ember.tensor([0.5, 1.5], dtype=ember.float64, requires_grad=True)
    for fn in (S.airy_ai, S.scaled_modified_bessel_k0, S.scaled_modified_bessel_k1, S.spherical_bessel_j0):
        y = fn(t)
        assert not y.requires_grad
        with pytest.raises(RuntimeError):
            y.sum().backward()
    for fn in (S.chebyshev_polynomial_t, S.hermite_polynomial_h, S.legendre_polynomial_p):
        assert not fn(t, 3).requires_grad
    assert S.bessel_j0(t).requires_grad
    with ember.no_grad():
        assert not S.bessel_j0(t).requires_grad


# ------------------------------------------------------------------ polynomials

def _exact_u(n, x):
    """U_n(x) = sum_k (-1)^k C(n-k, k) (2x)^(n-2k), in exact rationals (0 for n < 0)."""
    if n < 0:
        return Fraction(0)
    return sum((Fraction((-1) ** k * math.comb(n - k, k)) * (2 * x) ** (n - 2 * k) for k in range(n // 2 + 1)),
               Fraction(0))


def _exact_chebyshev(kind, n, x):
    """T (= (U_n - U_{n-2}) / 2), U, V (= U_n - U_{n-1}), W (= U_n + U_{n-1}) as exact rationals."""
    x = Fraction(x)
    if kind == "t":
        return Fraction(1) if n == 0 else (_exact_u(n, x) - _exact_u(n - 2, x)) / 2
    if kind == "u":
        return _exact_u(n, x)
    if kind == "v":
        return _exact_u(n, x) - _exact_u(n - 1, x)
    return _exact_u(n, x) + _exact_u(n - 1, x)


_NP_BASIS = {
    "chebyshev_polynomial_t": (np.polynomial.chebyshev.chebval, np.polynomial.chebyshev.cheb2poly),
    "hermite_polynomial_h": (np.polynomial.hermite.hermval, np.polynomial.hermite.herm2poly),
    "hermite_polynomial_he": (np.polynomial.hermite_e.hermeval, np.polynomial.hermite_e.herme2poly),
    "laguerre_polynomial_l": (np.polynomial.laguerre.lagval, np.polynomial.laguerre.lag2poly),
    "legendre_polynomial_p": (np.polynomial.legendre.legval, np.polynomial.legendre.leg2poly),
}


@pytest.mark.parametrize("name", sorted(_NP_BASIS))
def test_polynomials_against_numpy(name):
    val, to_power = _NP_BASIS[name]
    x = np.concatenate([np.linspace(-1, 1, 41), np.linspace(-4, 7, 23)])
    for n in range(0, 26):
        unit = np.zeros(n + 1)
        unit[n] = 1
        ref = val(x, unit)
        # rounding-error scale: the polynomial with |coefficients| at |x| (at least 1: inside
        # (-1, 1) T_n for n > 6 is cos(n acos x), accurate in absolute terms)
        scale = np.maximum(np.polynomial.polynomial.polyval(np.abs(x), np.abs(to_power(unit))), 1.0)
        got = _np(getattr(S, name)(_f64(x), n))
        assert np.all(np.abs(got - ref) <= 1e-14 * (n + 1) * scale), (name, n)
        # n as a tensor broadcast against x, float n truncated
        got2 = _np(getattr(S, name)(_f64(x), ember.tensor([n + 0.75] * len(x), dtype=ember.float64)))
        assert np.array_equal(got2, got)


@pytest.mark.parametrize("kind", "tuvw")
@pytest.mark.parametrize("shifted", [False, True])
def test_chebyshev_against_exact_sums(kind, shifted):
    name = ("shifted_" if shifted else "") + "chebyshev_polynomial_" + kind
    rng = np.random.default_rng(7)
    base = np.concatenate([rng.uniform(-1, 1, 40), [-1.0, 1.0, 0.0, 0.5, -0.5], rng.uniform(-1.6, 1.6, 10)])
    x = (base + 1) / 2 if shifted else base
    ns = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 13, 20, 31]
    X, N = np.meshgrid(x, ns)
    got = _np(getattr(S, name)(_f64(X.ravel()), ember.tensor(N.ravel())))
    arg = [2 * Fraction(v) - 1 if shifted else Fraction(v) for v in X.ravel()]
    ref = np.array([float(_exact_chebyshev(kind, int(n), a)) for a, n in zip(arg, N.ravel())])
    # inside [-1, 1] the values are O(n); outside they grow: error relative to max(|ref|, 2n + 1)
    err = np.abs(got - ref) / np.maximum(np.abs(ref), 2 * N.ravel() + 1)
    assert err.max() < 2e-14, (name, X.ravel()[err.argmax()], N.ravel()[err.argmax()])


def test_chebyshev_large_degree():
    t = np.linspace(0.01, 3.13, 300)
    x = np.cos(t)
    for n in (50, 1000, 10 ** 6):
        got = _np(S.chebyshev_polynomial_t(_f64(x), n))
        assert np.abs(got - np.cos(n * np.arccos(x))).max() < 1e-9
    got = _np(S.chebyshev_polynomial_u(_f64(x), 300))
    th = np.arccos(x)
    assert np.abs(got - np.sin(301 * th) / np.sin(th)).max() < 1e-9
    # the recurrence for large n: P_200 and L_200 against numpy
    unit = np.zeros(201)
    unit[200] = 1
    xs = np.linspace(-1, 1, 101)
    assert np.abs(_np(S.legendre_polynomial_p(_f64(xs), 200)) - np.polynomial.legendre.legval(xs, unit)).max() < 1e-12
    xs = np.linspace(0, 30, 61)
    ref = np.polynomial.laguerre.lagval(xs, unit)
    assert np.abs(_np(S.laguerre_polynomial_l(_f64(xs), 200)) - ref).max() < 1e-14 * np.abs(ref).max()


def test_orthogonality_by_quadrature():
    m = 16
    P = np.polynomial

    def gram(values, weights):
        return values @ (weights[:, None] * values.T)

    def table(name, x):
        return np.stack([_np(getattr(S, name)(_f64(x), n)) for n in range(m)])

    x, w = P.legendre.leggauss(40)
    assert np.allclose(gram(table("legendre_polynomial_p", x), w), np.diag(2 / (2 * np.arange(m) + 1)), atol=1e-13)
    x, w = P.hermite.hermgauss(40)
    norms = np.array([math.sqrt(math.pi) * 2.0 ** n * math.factorial(n) for n in range(m)])
    G = gram(table("hermite_polynomial_h", x), w)
    assert np.allclose(G / np.sqrt(np.outer(norms, norms)), np.eye(m), atol=1e-12)
    x, w = P.hermite_e.hermegauss(40)
    norms = np.array([math.sqrt(2 * math.pi) * math.factorial(n) for n in range(m)])
    G = gram(table("hermite_polynomial_he", x), w)
    assert np.allclose(G / np.sqrt(np.outer(norms, norms)), np.eye(m), atol=1e-12)
    x, w = P.laguerre.laggauss(40)
    assert np.allclose(gram(table("laguerre_polynomial_l", x), w), np.eye(m), atol=1e-11)
    # Chebyshev through x = cos(t) and the midpoint rule in t (exact for these trigonometric sums)
    N = 64
    t = (np.arange(N) + 0.5) * np.pi / N
    c = np.cos(t)
    d = np.pi / N
    want_t = np.diag([np.pi] + [np.pi / 2] * (m - 1))
    assert np.allclose(gram(table("chebyshev_polynomial_t", c), np.full(N, d)), want_t, atol=1e-12)
    assert np.allclose(gram(table("chebyshev_polynomial_u", c), d * np.sin(t) ** 2), np.eye(m) * np.pi / 2,
                       atol=1e-12)
    assert np.allclose(gram(table("chebyshev_polynomial_v", c), d * (1 + c)), np.eye(m) * np.pi, atol=1e-12)
    assert np.allclose(gram(table("chebyshev_polynomial_w", c), d * (1 - c)), np.eye(m) * np.pi, atol=1e-12)
    # shifted: T*_n(x) = T_n(2x - 1) on (0, 1), with the same weights
    xs = (c + 1) / 2
    for kind in "tuvw":
        assert np.allclose(table("shifted_chebyshev_polynomial_" + kind, xs), table("chebyshev_polynomial_" + kind, c),
                           atol=1e-12)


def test_polynomial_special_cases_like_torch():
    """n < 0, NaN or infinite n give 0, n is truncated toward 0, and the |x| == 1 (x == 0 for
    Laguerre) values, as torch 2.x computes them."""
    x = _f64([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, NAN, INF, -INF])
    every = [S.chebyshev_polynomial_t, S.chebyshev_polynomial_u, S.chebyshev_polynomial_v, S.chebyshev_polynomial_w,
             S.shifted_chebyshev_polynomial_t, S.shifted_chebyshev_polynomial_u, S.shifted_chebyshev_polynomial_v,
             S.shifted_chebyshev_polynomial_w, S.hermite_polynomial_h, S.hermite_polynomial_he,
             S.laguerre_polynomial_l, S.legendre_polynomial_p]
    for fn in every:
        for n in (-1, -7, NAN, INF, -INF, -1.0):
            assert _np(fn(x, ember.tensor(n, dtype=ember.float64))).tolist() == [0.0] * 10, (fn.__name__, n)
        assert _np(fn(x, ember.tensor(-0.5, dtype=ember.float64))).tolist() == [1.0] * 10  # n -> 0
        assert np.array_equal(_np(fn(x, 3.9)), _np(fn(x, 3)), equal_nan=True)
    ends = _f64([-1.0, 1.0])
    for n in (0, 1, 2, 7, 10, 11, 40):
        s = (-1) ** n
        assert _np(S.chebyshev_polynomial_t(ends, n)).tolist() == [s, 1]
        assert _np(S.chebyshev_polynomial_u(ends, n)).tolist() == [s * (n + 1), n + 1]
        assert _np(S.chebyshev_polynomial_v(ends, n)).tolist() == [s * (2 * n + 1), 1]
        assert _np(S.chebyshev_polynomial_w(ends, n)).tolist() == [s, 2 * n + 1]
        assert _np(S.shifted_chebyshev_polynomial_w(_f64([0.0, 1.0]), n)).tolist() == [s, 2 * n + 1]
        assert _np(S.legendre_polynomial_p(ends, n)).tolist() == [s, 1]
    assert _np(S.laguerre_polynomial_l(_f64([0.0, -0.0]), 17)).tolist() == [1.0, 1.0]
    # torch's values at +-inf (what its recurrence gives)
    assert _same(_np(S.chebyshev_polynomial_t(_f64([INF, -INF]), 2)), [INF, INF])
    assert _same(_np(S.chebyshev_polynomial_t(_f64([INF, -INF]), 3)), [NAN, NAN])
    assert _same(_np(S.laguerre_polynomial_l(_f64([INF, -INF]), 1)), [-INF, INF])
    # torch's value next to x = -1 for V (its trigonometric form is degenerate there)
    assert _np(S.chebyshev_polynomial_v(_f64([-1 + 2 ** -53]), 10)).tolist() == [21.0]


def test_polynomial_arguments_and_dtypes():
    f = S.chebyshev_polynomial_t
    r = f(ember.tensor([0.5]), 3)
    assert r.dtype == ember.float32 and r.tolist() == [-1.0]
    r = f(0.5, ember.tensor([3]))
    assert r.dtype == ember.float32 and r.tolist() == [-1.0]
    r = f(ember.tensor([1, 2]), ember.tensor([2, 3]))
    assert r.dtype == ember.float32 and r.tolist() == [1.0, 26.0]
    assert f(ember.tensor([0.5], dtype=ember.float64), ember.tensor([3.0])).dtype == ember.float64
    assert f(ember.tensor([0.5]), ember.tensor([3.0], dtype=ember.float64)).dtype == ember.float64
    assert f(ember.tensor([0.5]), True).tolist() == [0.5]
    r = f(ember.tensor([[0.5], [0.25]], dtype=ember.float64), ember.tensor([1, 2, 3], dtype=ember.int32))
    assert r.shape == (2, 3) and r.tolist() == [[0.5, -0.5, -1.0], [0.25, -0.875, -0.6875]]
    r = f(x=ember.tensor([0.5]), n=2)
    assert r.tolist() == [-0.5]
    with pytest.raises(TypeError):
        f(0.5, 3)
    out = ember.empty(2)
    assert S.legendre_polynomial_p(ember.tensor([0.5, 0.25]), 2, out=out) is out
    assert out.tolist() == [-0.125, -0.40625]
    out = ember.empty(3, dtype=ember.float64)
    assert S.bessel_j0(_f64([1.0, 2.0, 3.0]), out=out) is out
    assert out.tolist() == _np(S.bessel_j0(_f64([1.0, 2.0, 3.0]))).tolist()
    assert S.airy_ai(x=_f64([0.0])).tolist() == [0.3550280538878172]
    with pytest.raises(TypeError):
        S.bessel_j0(2.0)
    assert "bessel_j0" in S.__all__ and "legendre_polynomial_p" in S.__all__


# ------------------------------------------------------------------ PyTorch 2.x

@pytest.fixture
def torch2():
    torch = pytest.importorskip("torch", reason="PyTorch not installed: differential test skipped")
    if int(torch.__version__.split(".")[0]) < 2:  # 1.13 has the values but none of the gradients
        pytest.skip(f"torch {torch.__version__}: the reference here is torch 2.x")
    return torch


# torch 2.x's float64 CPU kernels for J0/J1/Y0/Y1 and Ai are off by up to ~2e-6 (relative to the
# envelope) near x = 5 (J, Y) and x = -2.1 (Ai); elsewhere they agree to ~1e-13
_TORCH_TOL = {"airy_ai": 2e-5, "bessel_j0": 1e-5, "bessel_j1": 1e-5, "bessel_y0": 1e-5, "bessel_y1": 1e-5}


@pytest.mark.parametrize("name", ["airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1",
                                  "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
                                  "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
                                  "spherical_bessel_j0"])
def test_against_torch2(torch2, name):
    x = np.concatenate([np.linspace(-60, 100, 4001), np.geomspace(1e-8, 700, 500), -np.geomspace(1e-8, 700, 500),
                        [0.0, -0.0, INF, -INF, NAN]])
    got = _np(getattr(S, name)(_f64(x)))
    want = getattr(torch2.special, name)(torch2.tensor(x, dtype=torch2.float64)).numpy()
    assert np.array_equal(np.isnan(got), np.isnan(want))
    fin = np.isfinite(want) & np.isfinite(got)
    assert np.array_equal(got[~fin & ~np.isnan(got)], want[~fin & ~np.isnan(want)])
    scale = np.maximum(np.abs(want[fin]), _envelope(x[fin]) if name.startswith(("bessel", "airy")) else 1e-300)
    assert (np.abs(got[fin] - want[fin]) / scale).max() < _TORCH_TOL.get(name, 2e-15 * 8)


def test_gradients_against_torch2(torch2):
    x = np.concatenate([np.linspace(0.05, 30, 300), [0.0, 1e-300, NAN]])
    for name in ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
                 "modified_bessel_k0", "modified_bessel_k1"):
        _, g, g2 = _grads(getattr(S, name), x)
        t = torch2.tensor(x, dtype=torch2.float64, requires_grad=True)
        (tg,) = torch2.autograd.grad(getattr(torch2.special, name)(t).sum(), t, create_graph=True)
        (tg2,) = torch2.autograd.grad(tg.sum(), t)
        for a, b in ((g, tg.detach().numpy()), (g2, tg2.numpy())):
            assert np.array_equal(np.isnan(a), np.isnan(b)), name
            fin = np.isfinite(a) & np.isfinite(b)
            assert np.array_equal(a[~fin & ~np.isnan(a)], b[~fin & ~np.isnan(b)]), name
            tol = 1e-5 if name.startswith("bessel") else 1e-10
            assert (np.abs(a[fin] - b[fin]) / np.maximum(np.abs(b[fin]), 1)).max() < tol, name


_POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
                "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
                "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
                "laguerre_polynomial_l", "legendre_polynomial_p"]


@pytest.mark.parametrize("name", _POLYNOMIALS)
def test_polynomials_against_torch2(torch2, name):
    rng = np.random.default_rng(0)
    below = np.nextafter(1.0, 0.0)
    xs = np.concatenate([np.linspace(-1.2, 1.2, 121), rng.uniform(-3, 3, 60),
                         [-1.0, -below, -0.0, 0.0, below, 1.0, -1 + 2 ** -52, NAN, INF, -INF]])
    if name.startswith("shifted"):
        xs = np.concatenate([(xs + 1) / 2, [0.0, 1.0, 2 ** -54, 1 - 2 ** -53]])
    ns = np.array([-2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 13, 25, 60])
    X, N = (a.ravel() for a in np.meshgrid(xs, ns))
    got = _np(getattr(S, name)(_f64(X), ember.tensor(N)))
    want = getattr(torch2.special, name)(torch2.tensor(X, dtype=torch2.float64), torch2.tensor(N)).numpy()
    assert np.array_equal(np.isnan(got), np.isnan(want))
    fin = np.isfinite(want)
    assert np.array_equal(got[~fin & ~np.isnan(want)], want[~fin & ~np.isnan(want)])
    assert (np.abs(got[fin] - want[fin]) / np.maximum(np.abs(want[fin]), 1)).max() < 1e-12
    # float32 and integer x: torch's result dtypes
    t32 = getattr(torch2.special, name)(torch2.tensor([0.25, 0.75]), 3)
    e32 = getattr(S, name)(ember.tensor([0.25, 0.75]), 3)
    assert e32.dtype == ember.float32 and np.allclose(e32.numpy(), t32.numpy(), rtol=1e-6, atol=1e-6)
