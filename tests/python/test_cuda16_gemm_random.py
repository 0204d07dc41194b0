"""GEMM (mm, bmm, addmm, dot and what reaches them) and the random fills on CPU and CUDA (issue 16).

Every test runs on the CPU too, which proves its body against the CPU kernels; the CUDA cases
skip without a GPU. Products are compared with float64 numpy references; random fills with the
properties both generators must have (reproducible for a seed, a continuing stream, ranges,
moments, frequencies, permutations). The CUDA generator is Philox4x32-10; a numpy reference of
its published algorithm and of ember's element -> counter mapping checks the CUDA streams bit
for bit."""
import math
import warnings

import numpy as np
import pytest

import ember

DEVICES = ["cpu", "cuda"]


def need(device):
    if device == "cuda" and not ember.cuda.is_available():
        pytest.skip("no CUDA GPU on this machine: the CUDA backend compiled but did not run")


def arr(t):
    """A tensor's values as a float64 (or complex128 / int64 / bool) numpy array, from any device."""
    t = t.detach().cpu()
    if t.dtype in (ember.float16, ember.bfloat16):
        t = t.float()
    a = t.numpy()
    if a.dtype.kind == "f":
        return a.astype(np.float64)
    if a.dtype.kind == "c":
        return a.astype(np.complex128)
    return a


def tensor(a, device, dtype=None):
    return ember.tensor(a, dtype=dtype, device=device)


def rng(seed=0):
    return np.random.default_rng(seed)


# torch's float32 result tolerance at "highest" precision, and the loose one for the 16-bit types.
TOL = {ember.float32: 1e-5, ember.float64: 1e-12, ember.float16: 2e-2, ember.bfloat16: 2e-2}


def check_close(got, ref, dtype, scale=1.0):
    tol = TOL[dtype]
    np.testing.assert_allclose(arr(got), ref, rtol=tol, atol=tol * max(1.0, scale))


# ---------------------------------------------------------------- GEMM
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16, ember.bfloat16])
def test_mm_bmm_addmm_dot_match_float64(device, dtype):
    need(device)
    r = rng(1)
    a, b = r.standard_normal((37, 19)), r.standard_normal((19, 23))
    # the reference takes the operands as rounded to the dtype
    ta, tb = tensor(a, device, dtype), tensor(b, device, dtype)
    ra, rb = arr(ta), arr(tb)
    out = ember.mm(ta, tb)
    assert out.shape == (37, 23) and out.dtype == dtype and out.device.type == device
    check_close(out, ra @ rb, dtype, scale=5)

    A, B = r.standard_normal((4, 9, 6)), r.standard_normal((4, 6, 5))
    tA, tB = tensor(A, device, dtype), tensor(B, device, dtype)
    out = ember.bmm(tA, tB)
    assert out.shape == (4, 9, 5) and out.dtype == dtype
    check_close(out, arr(tA) @ arr(tB), dtype, scale=5)

    bias = r.standard_normal(23)
    tbias = tensor(bias, device, dtype)
    for beta, alpha in [(1, 1), (1, 0.5), (0.5, 2), (0, 1)]:
        out = ember.addmm(tbias, ta, tb, beta=beta, alpha=alpha)
        assert out.shape == (37, 23) and out.dtype == dtype
        check_close(out, beta * arr(tbias) + alpha * (ra @ rb), dtype, scale=10)

    x, y = r.standard_normal(50), r.standard_normal(50)
    tx, ty = tensor(x, device, dtype), tensor(y, device, dtype)
    d = ember.dot(tx, ty)
    assert d.shape == () and d.dtype == dtype
    check_close(d, arr(tx) @ arr(ty), dtype, scale=10)


@pytest.mark.parametrize("device", DEVICES)
def test_gemm_operand_layouts(device):
    """Transposed, sliced, expanded and batch-broadcast operands: passed with transpose flags and
    leading dimensions, or made contiguous, all giving the same products."""
    need(device)
    r = rng(2)
    a, b = r.standard_normal((8, 12)), r.standard_normal((12, 10))
    ta, tb = tensor(a, device, ember.float64), tensor(b, device, ember.float64)
    ref = a @ b
    cases = [
        (tensor(a.T.copy(), device, ember.float64).t(), tb),          # column-major a
        (ta, tensor(b.T.copy(), device, ember.float64).t()),          # column-major b
        (tensor(np.repeat(a, 2, axis=1), device, ember.float64)[:, ::2], tb),  # column stride 2
        (ta, tensor(np.repeat(b, 3, axis=0), device, ember.float64)[::3]),     # row stride 3 * 10
        (tensor(np.pad(a, ((0, 0), (0, 5))), device, ember.float64)[:, :12], tb),  # leading dim 17
    ]
    for x, y in cases:
        np.testing.assert_allclose(arr(ember.mm(x, y)), ref, rtol=1e-12, atol=1e-12)
    # an expanded row (stride 0) and a one-column matrix
    row = tensor(r.standard_normal(12), device, ember.float64)
    np.testing.assert_allclose(arr(ember.mm(row.expand(8, 12), tb)), np.tile(arr(row) @ b, (8, 1)), rtol=1e-12)
    np.testing.assert_allclose(arr(ember.mm(ta, tb[:, 3:4])), ref[:, 3:4], rtol=1e-12, atol=1e-12)
    # bmm: a batch-expanded operand (stride 0), a transposed batch
    B = r.standard_normal((12, 10))
    tB = tensor(B, device, ember.float64).expand(5, 12, 10)
    A = r.standard_normal((5, 8, 12))
    tA = tensor(A, device, ember.float64)
    np.testing.assert_allclose(arr(ember.bmm(tA, tB)), A @ B, rtol=1e-12, atol=1e-12)
    tAt = tensor(A.transpose(0, 2, 1).copy(), device, ember.float64).transpose(1, 2)
    np.testing.assert_allclose(arr(ember.bmm(tAt, tB)), A @ B, rtol=1e-12, atol=1e-12)
    # dot of strided and expanded vectors
    v = r.standard_normal(40)
    tv = tensor(v, device, ember.float64)
    np.testing.assert_allclose(arr(ember.dot(tv[::2], tv[1::2])), v[::2] @ v[1::2], rtol=1e-12)
    one = tensor(np.array(2.0), device, ember.float64).expand(20)
    np.testing.assert_allclose(arr(ember.dot(one, tv[:20])), 2 * v[:20].sum(), rtol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_gemm_empty_and_zero_inner_dims(device):
    need(device)
    f = ember.float32
    for m, k, n in [(0, 3, 4), (3, 0, 4), (3, 4, 0), (0, 0, 0)]:
        out = ember.mm(ember.ones(m, k, device=device), ember.ones(k, n, device=device))
        assert out.shape == (m, n) and out.dtype == f
        assert np.all(arr(out) == 0)
    out = ember.bmm(ember.ones(2, 3, 0, device=device), ember.ones(2, 0, 4, device=device))
    assert out.shape == (2, 3, 4) and np.all(arr(out) == 0)
    assert ember.bmm(ember.ones(0, 3, 2, device=device), ember.ones(0, 2, 4, device=device)).shape == (0, 3, 4)
    # K == 0: an empty sum, so addmm is beta * self (and self is ignored when beta == 0, NaN included)
    bias = tensor(np.array([1.0, 2.0, 3.0]), device, f)
    out = ember.addmm(bias, ember.ones(2, 0, device=device), ember.ones(0, 3, device=device), beta=2)
    np.testing.assert_array_equal(arr(out), [[2, 4, 6], [2, 4, 6]])
    nan_bias = tensor(np.full(3, np.nan), device, f)
    out = ember.addmm(nan_bias, ember.ones(2, 0, device=device), ember.ones(0, 3, device=device), beta=0)
    np.testing.assert_array_equal(arr(out), np.zeros((2, 3)))
    out = ember.addmm(nan_bias, ember.ones(2, 4, device=device), ember.ones(4, 3, device=device), beta=0)
    np.testing.assert_array_equal(arr(out), np.full((2, 3), 4.0))
    d = ember.dot(ember.ones(0, device=device), ember.ones(0, device=device))
    assert d.shape == () and float(d.cpu()) == 0.0


@pytest.mark.parametrize("device", DEVICES)
def test_addmm_bias_shapes(device):
    """The bias broadcasts: (N,), (1, N) (the cuBLASLt bias epilogue on CUDA), (M, 1), (M, N), ()."""
    need(device)
    r = rng(3)
    m1, m2 = r.standard_normal((16, 32)), r.standard_normal((32, 24))
    t1, t2 = tensor(m1, device, ember.float32), tensor(m2, device, ember.float32)
    prod = arr(t1) @ arr(t2)
    for shape in [(24,), (1, 24), (16, 1), (16, 24), ()]:
        bias = r.standard_normal(shape)
        tb = tensor(bias, device, ember.float32)
        out = ember.addmm(tb, t1, t2)
        assert out.shape == (16, 24)
        np.testing.assert_allclose(arr(out), prod + arr(tb), rtol=1e-5, atol=1e-4)
        out = ember.addmm(tb, t1, t2, alpha=-0.5)
        np.testing.assert_allclose(arr(out), arr(tb) - 0.5 * prod, rtol=1e-5, atol=1e-4)
    # a sliced (non-contiguous) bias and a misaligned one
    wide = tensor(r.standard_normal(49), device, ember.float32)
    for tb in (wide[::2][:24], wide[1:25]):
        np.testing.assert_allclose(arr(ember.addmm(tb, t1, t2)), prod + arr(tb), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
def test_composites_reach_the_gemm_ops(device):
    """matmul (every rank rule), linear, baddbmm, mv, addmv, inner and einsum."""
    need(device)
    r = rng(4)
    f64 = ember.float64

    def t(a):
        return tensor(a, device, f64)

    def ok(got, ref):
        assert tuple(got.shape) == ref.shape
        np.testing.assert_allclose(arr(got), ref, rtol=1e-10, atol=1e-10)

    v, M, B3, B4 = r.standard_normal(6), r.standard_normal((5, 6)), r.standard_normal((3, 6, 4)), r.standard_normal((2, 1, 4, 6))
    ok(ember.matmul(t(v), t(v)), np.array(v @ v))
    ok(ember.matmul(t(M), t(v)), M @ v)
    ok(ember.matmul(t(v), t(M.T.copy())), v @ M.T)
    ok(ember.matmul(t(M), t(M.T.copy())), M @ M.T)
    ok(ember.matmul(t(B3.transpose(0, 2, 1).copy()), t(v)), B3.transpose(0, 2, 1) @ v)
    ok(ember.matmul(t(v), t(B3)), v @ B3)
    ok(ember.matmul(t(B4), t(B3)), B4 @ B3)
    ok(ember.matmul(t(B3.transpose(0, 2, 1).copy()), t(M.T.copy())), B3.transpose(0, 2, 1) @ M.T)
    W, bias, x = r.standard_normal((7, 6)), r.standard_normal(7), r.standard_normal((2, 3, 6))
    ok(ember.nn.functional.linear(t(x), t(W), t(bias)), x @ W.T + bias)
    ok(ember.nn.functional.linear(t(x[0]), t(W), t(bias)), x[0] @ W.T + bias)
    ok(ember.nn.functional.linear(t(x), t(W)), x @ W.T)
    C = r.standard_normal((3, 6, 6))
    ok(ember.baddbmm(t(C), t(B3), t(B3.transpose(0, 2, 1).copy()), beta=0.5, alpha=2),
       0.5 * C + 2 * B3 @ B3.transpose(0, 2, 1))
    ok(ember.mv(t(M), t(v)), M @ v)
    y = r.standard_normal(5)
    ok(ember.addmv(t(y), t(M), t(v), beta=2, alpha=3), 2 * y + 3 * (M @ v))
    ok(ember.inner(t(M), t(M)), M @ M.T)
    ok(ember.einsum("bij,bjk->bik", t(B3.transpose(0, 2, 1).copy()), t(B3)), B3.transpose(0, 2, 1) @ B3)
    ok(ember.einsum("ij,kj->ik", t(M), t(W)), M @ W.T)


@pytest.mark.parametrize("device", DEVICES)
def test_complex_products(device):
    need(device)
    r = rng(5)
    a = r.standard_normal((6, 4)) + 1j * r.standard_normal((6, 4))
    b = r.standard_normal((4, 3)) + 1j * r.standard_normal((4, 3))
    for dtype, tol in [(ember.complex64, 1e-5), (ember.complex128, 1e-12)]:
        out = ember.mm(tensor(a, device, dtype), tensor(b, device, dtype))
        assert out.dtype == dtype and out.shape == (6, 3)
        np.testing.assert_allclose(arr(out), a @ b, rtol=tol, atol=tol)
        A = np.stack([a, 2 * a])
        out = ember.bmm(tensor(A, device, dtype), tensor(np.stack([b, b]), device, dtype))
        np.testing.assert_allclose(arr(out), A @ b, rtol=tol, atol=tol)


@pytest.mark.parametrize("device", DEVICES)
def test_integer_products(device):
    """The CPU multiplies integers (wrapping as torch); CUDA raises torch's CUDA messages."""
    need(device)
    a = tensor(np.arange(6).reshape(2, 3), device, ember.int64)
    b = tensor(np.arange(12).reshape(3, 4), device, ember.int64)
    if device == "cpu":
        np.testing.assert_array_equal(arr(ember.mm(a, b)), np.arange(6).reshape(2, 3) @ np.arange(12).reshape(3, 4))
        return
    with pytest.raises(RuntimeError, match="\"addmm_cuda\" not implemented for 'Long'"):
        ember.mm(a, b)
    with pytest.raises(RuntimeError, match="\"addmm_cuda\" not implemented for 'Int'"):
        ember.addmm(b[0].int(), a.int(), b.int())
    with pytest.raises(RuntimeError, match="\"baddbmm_cuda\" not implemented for 'Long'"):
        ember.bmm(a[None], b[None])
    with pytest.raises(RuntimeError, match="\"dot\" not implemented for 'Long'"):
        ember.dot(a[0], a[1])
    # no kernel runs for an empty result (torch's order): no error
    assert ember.mm(a[:0], b).shape == (0, 4)


@pytest.mark.parametrize("device", DEVICES)
def test_float32_matmul_precision(device):
    """'highest' keeps float32 products in float32; 'high'/'medium' allow TF32 on the GPU (10-bit
    products), within TF32's error; the CPU is float32 at every setting."""
    need(device)
    r = rng(6)
    a, b = r.standard_normal((64, 256)), r.standard_normal((256, 48))
    ta, tb = tensor(a, device, ember.float32), tensor(b, device, ember.float32)
    ref = arr(ta) @ arr(tb)
    scale = np.abs(arr(ta)) @ np.abs(arr(tb))  # error bound scale per entry
    assert ember.get_float32_matmul_precision() == "highest"
    err_highest = np.max(np.abs(arr(ember.mm(ta, tb)) - ref) / scale)
    assert err_highest < 2e-5
    try:
        for precision in ("high", "medium"):
            ember.set_float32_matmul_precision(precision)
            assert ember.backends.cuda.matmul.allow_tf32 is True
            err = np.max(np.abs(arr(ember.mm(ta, tb)) - ref) / scale)
            assert err < 2e-3  # TF32 rounds each input to 10 mantissa bits: ~2^-10 relative
            err = np.max(np.abs(arr(ember.nn.functional.linear(ta, tb.t(), ember.zeros(64, device=device)[:48])) - ref)
                         / scale)
            assert err < 2e-3
        ember.backends.cuda.matmul.allow_tf32 = False
        assert ember.get_float32_matmul_precision() == "highest"
        assert np.max(np.abs(arr(ember.mm(ta, tb)) - ref) / scale) < 2e-5
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            ember.set_float32_matmul_precision("HIGH")  # case-sensitive, as torch
        assert "is not one of 'highest', 'high', or 'medium'" in str(w[0].message)
        assert ember.get_float32_matmul_precision() == "highest"
        with pytest.raises(RuntimeError, match="expects a str"):
            ember.set_float32_matmul_precision(1)
    finally:
        ember.set_float32_matmul_precision("highest")


@pytest.mark.parametrize("device", DEVICES)
def test_gemm_gradients(device):
    """mm's and bmm's backward are products themselves (G B^T, A^T G)."""
    need(device)
    r = rng(7)
    a = tensor(r.standard_normal((4, 5)), device, ember.float64).requires_grad_()
    b = tensor(r.standard_normal((5, 3)), device, ember.float64).requires_grad_()
    g = r.standard_normal((4, 3))
    ember.mm(a, b).backward(tensor(g, device, ember.float64))
    np.testing.assert_allclose(arr(a.grad), g @ arr(b).T, rtol=1e-12)
    np.testing.assert_allclose(arr(b.grad), arr(a).T @ g, rtol=1e-12)
    A = tensor(r.standard_normal((2, 4, 5)), device, ember.float64).requires_grad_()
    G = r.standard_normal((2, 4, 3))
    ember.bmm(A, b.detach().expand(2, 5, 3)).backward(tensor(G, device, ember.float64))
    np.testing.assert_allclose(arr(A.grad), G @ arr(b).T, rtol=1e-12)


# ---------------------------------------------------------------- Philox reference (numpy)
M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
MASK = 0xFFFFFFFF


def philox4x32_10(ctr, key):
    """Philox4x32-10 on arrays: ctr (n, 4) and key (2,) of uint64 holding 32-bit words."""
    c = [ctr[:, i].astype(np.uint64) for i in range(4)]
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    for rnd in range(10):
        if rnd:
            k0, k1 = (k0 + np.uint64(W0)) & np.uint64(MASK), (k1 + np.uint64(W1)) & np.uint64(MASK)
        p0, p1 = np.uint64(M0) * c[0], np.uint64(M1) * c[2]
        c = [((p1 >> np.uint64(32)) ^ c[1] ^ k0) & np.uint64(MASK), p1 & np.uint64(MASK),
             ((p0 >> np.uint64(32)) ^ c[3] ^ k1) & np.uint64(MASK), p0 & np.uint64(MASK)]
    return np.stack(c, axis=1)


def philox_words(seed, offset, nwords):
    """The first nwords 32-bit words of ember's CUDA stream at (seed, offset): counter offset + j
    is (low, high, 0, 0), the key the seed's (low, high) words."""
    counters = np.arange(offset, offset + (nwords + 3) // 4, dtype=np.uint64)
    ctr = np.zeros((len(counters), 4), dtype=np.uint64)
    ctr[:, 0], ctr[:, 1] = counters & np.uint64(MASK), counters >> np.uint64(32)
    return philox4x32_10(ctr, (seed & MASK, seed >> 32)).reshape(-1)[:nwords]


def test_philox_reference_known_answers():
    """Random123's kat_vectors for philox4x32 10 (the numpy reference the CUDA tests use)."""
    cases = [((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
             ((MASK,) * 4, (MASK, MASK), (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
             ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
              (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1))]
    for ctr, key, want in cases:
        got = philox4x32_10(np.array([ctr], dtype=np.uint64), key)[0]
        assert [int(x) for x in got] == list(want)


def test_cuda_streams_match_the_philox_reference():
    """rand / rand(float64) / randint on CUDA are exactly ember's documented Philox mapping."""
    need("cuda")
    seed = 0x123456789
    ember.cuda.manual_seed(seed)
    n = 1003
    got = arr(ember.rand(n, device="cuda"))
    words = philox_words(seed, 0, n)
    np.testing.assert_array_equal(got, (words >> np.uint64(8)).astype(np.float64) * 2.0 ** -24)
    # the next fill starts at the next counter: ceil(1003 / 4) = 251
    got = arr(ember.rand(n, device="cuda", dtype=ember.float64))
    w = philox_words(seed, 251, 2 * n).reshape(-1, 2)
    bits = (w[:, 1] << np.uint64(32)) | w[:, 0]
    np.testing.assert_array_equal(got, (bits >> np.uint64(11)).astype(np.float64) * 2.0 ** -53)
    # randint(0, 10): one 32-bit word per element (range < 2^28), from 251 + 502 = 753
    got = arr(ember.randint(0, 10, (n,), device="cuda"))
    np.testing.assert_array_equal(got, (philox_words(seed, 753, n) % np.uint64(10)).astype(np.int64))


# ---------------------------------------------------------------- random fills
def moments_ok(x, mean, var, sigmas=6):
    n = x.size
    assert abs(x.mean() - mean) < sigmas * math.sqrt(var / n)
    assert abs(x.var() - var) < sigmas * var * math.sqrt(2.0 / n) + 1e-3 * var


@pytest.mark.parametrize("device", DEVICES)
def test_seed_replays_and_stream_continues(device):
    need(device)
    seeder = ember.cuda.manual_seed if device == "cuda" else ember.manual_seed
    for make in (lambda: ember.rand(1001, device=device), lambda: ember.randn(3, 333, device=device),
                 lambda: ember.randint(-5, 5, (777,), device=device), lambda: ember.randperm(500, device=device),
                 lambda: ember.rand(257, device=device, dtype=ember.float64),
                 lambda: ember.empty(99, device=device).exponential_(),
                 lambda: ember.empty(99, device=device).bernoulli_(0.5)):
        seeder(1234)
        a, b = make(), make()
        seeder(1234)
        c = make()
        np.testing.assert_array_equal(arr(a), arr(c))
        assert not np.array_equal(arr(a), arr(b))
    ember.manual_seed(77)  # seeds every device
    a = ember.rand(50, device=device)
    ember.manual_seed(77)
    np.testing.assert_array_equal(arr(a), arr(ember.rand(50, device=device)))
    # a Generator object of the device: its own stream
    g = ember.Generator(device=device)
    g.manual_seed(5)
    a = ember.rand(40, device=device, generator=g)
    g.manual_seed(5)
    np.testing.assert_array_equal(arr(a), arr(ember.rand(40, device=device, generator=g)))
    if device == "cuda":
        with pytest.raises(RuntimeError, match="Expected a 'cuda' device type for generator but found 'cpu'"):
            ember.rand(4, device="cuda", generator=ember.Generator())


@pytest.mark.parametrize("device", DEVICES)
def test_uniform_values_do_not_depend_on_the_size(device):
    """Element i of a fill depends on (seed, offset, i) only: a prefix of a longer fill is the
    shorter fill (on the GPU whatever the grid: the large fill uses every block many times)."""
    need(device)
    ember.manual_seed(9)
    short = arr(ember.rand(1000, device=device))
    ember.manual_seed(9)
    n = 70_000_003 if device == "cuda" else 100_003
    long = ember.rand(n, device=device)
    np.testing.assert_array_equal(arr(long[:1000]), short)
    tail = arr(long[-100_000:])
    assert tail.min() >= 0 and tail.max() < 1
    moments_ok(tail, 0.5, 1 / 12)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16, ember.bfloat16])
def test_uniform_normal_exponential_log_normal(device, dtype):
    need(device)
    n = 200_001
    x = arr(ember.empty(n, device=device, dtype=dtype).uniform_(-2, 3))
    assert x.min() >= -2 and x.max() < 3
    moments_ok(x, 0.5, 25 / 12)
    x = ember.rand(7, device=device, dtype=dtype)
    assert x.dtype == dtype and x.shape == (7,)
    x = arr(ember.empty(n, device=device, dtype=dtype).normal_(1.5, 2.0))
    moments_ok(x, 1.5, 4.0, sigmas=8 if dtype in (ember.float16, ember.bfloat16) else 6)
    assert np.isfinite(x).all()
    x = arr(ember.empty(n, device=device, dtype=dtype).exponential_(4.0))
    assert (x >= 0).all() and np.isfinite(x).all()
    if device == "cuda":
        assert (x > 0).all()  # torch's CUDA transform never returns 0
    moments_ok(x, 0.25, 1 / 16, sigmas=8)
    x = arr(ember.empty(n, device=device, dtype=dtype).log_normal_(0.5, 0.25))
    assert (x > 0).all()
    moments_ok(np.log(x), 0.5, 0.0625, sigmas=10)
    # sizes that are not multiples of the 4 (2) values per Philox counter, 0-dim, empty
    for shape in [(), (1,), (3,), (5, 3), (0,), (2, 0, 3)]:
        t = ember.randn(*shape, device=device, dtype=dtype) if shape else ember.randn((), device=device, dtype=dtype)
        assert t.shape == shape and t.dtype == dtype and np.isfinite(arr(t)).all()


@pytest.mark.parametrize("device", DEVICES)
def test_fills_of_strided_tensors(device):
    need(device)
    # a transposed (dense) tensor is written where it lies, a sliced one only at its elements
    x = ember.zeros(64, 32, device=device).t()
    x.uniform_(1, 2)
    assert arr(x).min() >= 1 and arr(x).max() < 2
    base = ember.zeros(40, 30, device=device)
    view = base[:, ::3]
    view.normal_()
    b = arr(base)
    mask = np.zeros((40, 30), dtype=bool)
    mask[:, ::3] = True
    assert (b[~mask] == 0).all() and (b[mask] != 0).all()
    base = ember.zeros(10, 10, dtype=ember.int64, device=device)
    base[2:5].random_(7, 9)
    b = arr(base)
    assert set(np.unique(b[2:5])) <= {7, 8} and (b[:2] == 0).all() and (b[5:] == 0).all()
    # rand_like keeps a permuted layout
    like = ember.empty(6, 5, device=device).t()
    assert ember.rand_like(like).stride() == like.stride()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16, ember.bool, ember.uint8, ember.int64])
def test_bernoulli_frequency(device, dtype):
    need(device)
    n = 100_000
    for p in (0.0, 0.3, 1.0):
        x = arr(ember.empty(n, device=device, dtype=dtype).bernoulli_(p)).astype(np.float64)
        assert set(np.unique(x)) <= {0.0, 1.0}
        assert abs(x.mean() - p) < 6 * math.sqrt(p * (1 - p) / n) + 1e-12
    probs = ember.tensor([0.0, 0.25, 1.0], device=device).expand(20000, 3)
    x = arr(ember.bernoulli(probs))
    assert (x[:, 0] == 0).all() and (x[:, 2] == 1).all() and abs(x[:, 1].mean() - 0.25) < 0.02
    x = arr(ember.nn.functional.dropout(ember.ones(n, device=device), 0.2, True))
    assert set(np.unique(x)) <= {0.0, 1.25} and abs((x == 0).mean() - 0.2) < 0.01


@pytest.mark.parametrize("device", DEVICES)
def test_random_ranges_and_dtypes(device):
    need(device)
    n = 50_000
    for dtype, low, high in [(ember.int64, -5, 5), (ember.int32, 0, 3), (ember.uint8, 10, 250), (ember.int16, -300, 300),
                             (ember.float32, -100, 100), (ember.float16, 0, 2048), (ember.bfloat16, 0, 256),
                             (ember.float64, 0, 2**40), (ember.int64, 0, 2**40)]:
        x = ember.randint(low, high, (n,), device=device, dtype=dtype)
        assert x.dtype == dtype
        v = arr(x)
        assert v.min() >= low and v.max() < high
        assert (v == np.round(v)).all()
        span = high - low
        moments_ok(v.astype(np.float64), low + (span - 1) / 2, (span * span - 1) / 12)
    x = arr(ember.empty(n, device=device, dtype=ember.int64).random_())  # [0, 2^63 - 1]
    assert x.min() >= 0 and len(np.unique(x)) == n
    x = arr(ember.empty(n, device=device, dtype=ember.float32).random_())  # [0, 2^24]
    assert x.min() >= 0 and x.max() <= 2**24
    x = arr(ember.empty(n, device=device, dtype=ember.uint8).random_())
    assert x.min() == 0 and x.max() == 255
    x = arr(ember.empty(1000, device=device, dtype=ember.bool).random_())
    assert set(np.unique(x)) == {False, True}
    x = arr(ember.empty(n, device=device, dtype=ember.int64).random_(-2**63, None))  # the full 64 bits
    assert x.min() < 0 < x.max()
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to'"):
        ember.empty(3, device=device).random_(5, 5)
    with pytest.raises(RuntimeError, match="\"random_\" not implemented for 'ComplexFloat'"):
        ember.empty(3, device=device, dtype=ember.complex64).random_(0, 3)
    with pytest.raises(RuntimeError, match="\"uniform_\" not implemented for 'Long'"):
        ember.empty(3, device=device, dtype=ember.int64).uniform_()
    with pytest.raises(RuntimeError, match="\"normal_\" not implemented for 'Int'"):
        ember.empty(3, device=device, dtype=ember.int32).normal_()


@pytest.mark.parametrize("device", DEVICES)
def test_randperm(device):
    need(device)
    for n in (0, 1, 2, 7, 1000, 100_003):
        p = ember.randperm(n, device=device)
        assert p.dtype == ember.int64 and p.shape == (n,) and p.device.type == device
        np.testing.assert_array_equal(np.sort(arr(p)), np.arange(n))
    for dtype in (ember.int32, ember.float32, ember.float64):
        p = ember.randperm(300, device=device, dtype=dtype)
        assert p.dtype == dtype
        np.testing.assert_array_equal(np.sort(arr(p)), np.arange(300))
    # not the identity, and every position moves around: first element uniform over 0..9
    firsts = np.array([int(ember.randperm(10, device=device)[0].cpu()) for _ in range(2000)])
    counts = np.bincount(firsts, minlength=10)
    assert counts.min() > 120 and counts.max() < 280


@pytest.mark.parametrize("device", DEVICES)
def test_multinomial(device):
    need(device)
    probs = ember.tensor([[0.1, 0.0, 0.6, 0.3], [1.0, 1.0, 1.0, 1.0]], device=device)
    n = 20_000
    s = ember.multinomial(probs, n, replacement=True)
    assert s.dtype == ember.int64 and s.shape == (2, n) and s.device.type == device
    s = arr(s)
    f0 = np.bincount(s[0], minlength=4) / n
    np.testing.assert_allclose(f0, [0.1, 0.0, 0.6, 0.3], atol=0.02)
    assert (s[0] != 1).all()
    np.testing.assert_allclose(np.bincount(s[1], minlength=4) / n, [0.25] * 4, atol=0.02)
    for dtype in (ember.float64, ember.float16, ember.bfloat16):
        s = arr(ember.multinomial(probs.to(dtype), 3, replacement=False))
        assert s.shape == (2, 3)
        for row in s:
            assert len(set(row)) == 3
        assert (s[0] != 1).all()
    # one sample: the exponential race's argmax; frequencies follow the probabilities
    firsts = np.array([int(ember.multinomial(probs[0], 1).cpu()[0]) for _ in range(3000)])
    np.testing.assert_allclose(np.bincount(firsts, minlength=4) / 3000, [0.1, 0.0, 0.6, 0.3], atol=0.035)
    # without replacement, all categories: a permutation, larger probabilities first more often
    big = ember.tensor(np.linspace(1, 50, 50), device=device)
    perm = arr(ember.multinomial(big, 50))
    np.testing.assert_array_equal(np.sort(perm), np.arange(50))
    with pytest.raises(RuntimeError, match="probability tensor contains either `inf`, `nan` or element < 0"):
        ember.multinomial(ember.tensor([0.5, -0.1], device=device), 1)
    with pytest.raises(RuntimeError, match=r"invalid multinomial distribution \(sum of probabilities <= 0\)"):
        ember.multinomial(ember.tensor([[0.5, 0.5], [0.0, 0.0]], device=device), 2, replacement=True)


@pytest.mark.parametrize("dtype", [ember.bfloat16, ember.float16, ember.float32])
def test_large_gemms_with_misaligned_rows(dtype):
    """Products of 2 GFLOP or more whose rows are not a multiple of 16 bytes (a GPT-2 vocabulary's
    50257-wide logits) run through row-padded copies on CUDA: the results, for every operand and
    the output misaligned, transposed views and an addmm with beta, against float64."""
    need("cuda")
    g = np.random.default_rng(7)
    tol = {ember.bfloat16: 2e-2, ember.float16: 4e-3, ember.float32: 1e-4}[dtype]

    def make(*shape):
        a = g.standard_normal(shape)
        t = ember.tensor(a, device="cuda").to(dtype)
        return t, arr(t)

    def check(got, want):
        scale = np.abs(want).max()
        np.testing.assert_allclose(arr(got), want, rtol=tol, atol=tol * scale)

    a, an = make(1024, 1000)
    b, bn = make(1000, 1001)
    check(a @ b, an @ bn)                                       # the output's rows: 1001 values
    dl, dln = make(1024, 1001)
    w, wn = make(1001, 1000)
    check(dl @ w, dln @ wn)                                     # a's rows: 1001 values
    check(dl.t() @ a, dln.T @ an)                               # a transposed view of it
    check(a[:, 1:] @ b[1:, :], an[:, 1:] @ bn[1:, :])           # a start one element in
    c, cn = make(1024, 1001)
    check(ember.addmm(c, a, b, beta=0.5, alpha=2.0), 0.5 * cn + 2.0 * (an @ bn))
    bias, biasn = make(1001)
    check(ember.nn.functional.linear(a, b.t().contiguous(), bias), an @ bn + biasn)
