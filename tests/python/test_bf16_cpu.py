"""bfloat16 matmul and convolution on the CPU (oneDNN's AMX / AVX512-BF16 kernels where the build
and the CPU have them, the float32 path elsewhere): results must match ember's float32 path on
the same bfloat16-rounded inputs, and PyTorch's bfloat16 results where torch is importable.

Tolerances, as for one rounding of a float32 accumulation to bfloat16 (and a different order of
the float32 sums): rtol 1.6e-2, atol 1e-2 * sqrt(K) for a reduction over K terms."""
import math
import threading

import numpy as np
import pytest

import ember
import ember.nn.functional as EF

try:
    import torch
except ImportError:
    torch = None

bf16 = ember.bfloat16


def rand(*shape, scale=1.0):
    """bfloat16 normal values: the rounded inputs both paths see."""
    return (ember.randn(*shape) * scale).to(bf16)


def to_np(t):
    return t.detach().float().numpy()


def to_torch(t, requires_grad=False):
    x = torch.from_numpy(to_np(t).copy()).to(torch.bfloat16)
    return x.requires_grad_(requires_grad)


def assert_close(got, want, k, what=""):
    """got: an ember bfloat16 result; want: a float32 reference (ember or torch, any dtype)."""
    if isinstance(got, ember.Tensor):
        assert got.dtype == bf16, f"{what}: dtype {got.dtype}"
        got = to_np(got)
    if torch is not None and isinstance(want, torch.Tensor):
        want = want.detach().float().numpy()
    elif isinstance(want, ember.Tensor):
        want = to_np(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} vs {want.shape}"
    np.testing.assert_allclose(got, want, rtol=1.6e-2, atol=1e-2 * math.sqrt(max(k, 1)), err_msg=what)


needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed: differential check skipped")


@pytest.fixture(autouse=True, params=[1, 2], ids=["1thread", "2threads"])
def threads(request):
    """Every test runs on one thread and on two: the products take different paths (one
    primitive call; sub-batches on ember's pool; oneDNN's own threads). Importing torch may
    have set OpenMP's thread count, which ember's is, to 1."""
    before = ember.get_num_threads()
    ember.set_num_threads(request.param)
    yield request.param
    ember.set_num_threads(before)


# ------------------------------------------------------------------------------------------ mm

MM_SHAPES = [(1, 1, 1), (7, 13, 5), (3, 1, 17), (1, 40, 9), (16, 16, 16), (64, 64, 64), (128, 128, 128),
             (200, 96, 150), (257, 129, 300), (600, 520, 512)]


@pytest.mark.parametrize("m,n,k", MM_SHAPES)
def test_mm_matches_float32(m, n, k):
    a, b = rand(m, k), rand(k, n)
    out = ember.mm(a, b)
    assert out.shape == (m, n)
    assert_close(out, ember.mm(a.float(), b.float()), k, f"mm {m}x{n}x{k}")
    assert ember.equal(ember.mm(a, b), out), "bfloat16 mm is not deterministic"


@needs_torch
@pytest.mark.parametrize("m,n,k", MM_SHAPES)
def test_mm_matches_torch(m, n, k):
    a, b = rand(m, k), rand(k, n)
    assert_close(ember.mm(a, b), torch.mm(to_torch(a), to_torch(b)), k, f"mm {m}x{n}x{k}")


def operand_views(m, k):
    """(name, view) pairs of an (m, k) bfloat16 matrix with the layouts matmul meets."""
    dense = rand(m, k)
    return [
        ("dense", dense),
        ("t()", rand(k, m).t()),
        ("row slice", rand(m + 3, k)[2:m + 2]),
        ("column slice (ld > width)", rand(m, k + 5)[:, 1:k + 1]),
        ("strided", rand(2 * m, 2 * k)[::2, ::2]),
        ("t() of a slice", rand(k, m + 4)[:, :m].t()),
        ("expanded row", rand(1, k).expand(m, k)),
    ]


@pytest.mark.parametrize("m,n,k", [(7, 13, 5), (96, 80, 72), (160, 128, 144)])
def test_mm_operand_layouts(m, n, k):
    for name_a, a in operand_views(m, k):
        for name_b, b in operand_views(k, n):
            assert_close(ember.mm(a, b), ember.mm(a.float(), b.float()), k, f"mm a {name_a}, b {name_b}")


def test_large_products():
    """Products oneDNN threads itself, B packed first from 1024 rows on, with bias and beta."""
    m, n, k = 1100, 300, 420
    a, b, bias, c = rand(m, k), rand(k, n), rand(n), rand(m, n)
    assert_close(ember.mm(a, b), ember.mm(a.float(), b.float()), k, "large mm")
    bt = rand(n, k).t()
    assert_close(ember.mm(a, bt), ember.mm(a.float(), bt.float()), k, "large mm, B transposed")
    assert_close(ember.addmm(bias, a, bt), ember.addmm(bias.float(), a.float(), bt.float()), k, "large linear")
    assert_close(ember.addmm(c, a, b, beta=0.5, alpha=2), ember.addmm(c.float(), a.float(), b.float(), beta=0.5,
                 alpha=2), k, "large addmm")


def test_mm_result_is_fresh_and_contiguous():
    a, b = rand(33, 17), rand(17, 9).t().contiguous().t()
    out = ember.mm(a, b)
    assert out.is_contiguous()
    assert_close(out, ember.mm(a.float(), b.float()), 17)


# ----------------------------------------------------------------------------------------- bmm

def test_bmm_matches_float32_and_torch():
    a, b = rand(32, 128, 64), rand(32, 64, 128)
    out = ember.bmm(a, b)
    assert_close(out, ember.bmm(a.float(), b.float()), 64, "bmm")
    if torch is not None:
        assert_close(out, torch.bmm(to_torch(a), to_torch(b)), 64, "bmm vs torch")


@pytest.mark.parametrize("batch,m,n,k", [(1, 5, 6, 7), (3, 7, 13, 5), (5, 64, 48, 80), (4, 300, 200, 100),
                                         (40, 8, 8, 8)])
def test_bmm_layouts(batch, m, n, k):
    cases = {
        "dense": (rand(batch, m, k), rand(batch, k, n)),
        "transposed": (rand(batch, k, m).transpose(1, 2), rand(batch, n, k).transpose(1, 2)),
        "a expanded batch": (rand(1, m, k).expand(batch, m, k), rand(batch, k, n)),
        "b expanded batch": (rand(batch, m, k), rand(1, k, n).expand(batch, k, n)),
        "both expanded": (rand(1, m, k).expand(batch, m, k), rand(1, k, n).expand(batch, k, n)),
        "batch-strided (permuted)": (rand(m, batch, k).permute(1, 0, 2), rand(k, batch, n).permute(1, 0, 2)),
        "batch slice": (rand(batch + 2, m, k)[1:batch + 1], rand(batch * 2, k, n)[::2]),
    }
    for name, (a, b) in cases.items():
        out = ember.bmm(a, b)
        assert out.shape == (batch, m, n)
        assert_close(out, ember.bmm(a.float(), b.float()), k, f"bmm {name}")


def test_matmul_broadcast_batches():
    a, b = rand(2, 3, 17, 24), rand(24, 9)
    assert_close(ember.matmul(a, b), ember.matmul(a.float(), b.float()), 24, "4-d @ 2-d")
    a, b = rand(2, 1, 17, 24), rand(3, 24, 9)
    assert_close(ember.matmul(a, b), ember.matmul(a.float(), b.float()), 24, "broadcast batches")
    a, b = rand(24), rand(4, 24, 9)
    assert_close(ember.matmul(a, b), ember.matmul(a.float(), b.float()), 24, "vector @ batch")
    if torch is not None:
        assert_close(ember.matmul(a, b), torch.matmul(to_torch(a), to_torch(b)), 24, "vector @ batch vs torch")


def test_einsum_bfloat16():
    a, b = rand(4, 16, 32), rand(4, 32, 8)
    out = ember.einsum("bij,bjk->bik", a, b)
    assert_close(out, ember.einsum("bij,bjk->bik", a.float(), b.float()), 32, "einsum")


# --------------------------------------------------------------------------------------- addmm

@pytest.mark.parametrize("beta", [0, 1, 0.5])
@pytest.mark.parametrize("alpha", [1, 2.0])
@pytest.mark.parametrize("self_shape", [(24,), (1, 24), (40, 1), (40, 24), ()])
def test_addmm(beta, alpha, self_shape):
    m, n, k = 40, 24, 72
    s, a, b = rand(*self_shape), rand(m, k), rand(k, n)
    out = ember.addmm(s, a, b, beta=beta, alpha=alpha)
    want = ember.addmm(s.float(), a.float(), b.float(), beta=beta, alpha=alpha)
    assert_close(out, want, k, f"addmm beta={beta} alpha={alpha} self {self_shape}")
    if torch is not None:
        assert_close(out, torch.addmm(to_torch(s), to_torch(a), to_torch(b), beta=beta, alpha=alpha), k,
                     f"addmm vs torch beta={beta} alpha={alpha} self {self_shape}")


def test_addmm_beta_zero_ignores_nan():
    s = ember.full((8, 6), float("nan")).to(bf16)
    a, b = rand(8, 70), rand(70, 6)
    out = ember.addmm(s, a, b, beta=0)
    assert not ember.isnan(out).any().item()
    assert_close(out, ember.mm(a.float(), b.float()), 70)
    # beta 1 keeps it
    assert ember.isnan(ember.addmm(s, a, b)).all().item()


@pytest.mark.parametrize("shape", [(64, 784), (5, 3), (2, 7, 33)])
def test_linear_with_bias(shape):
    x, w, bias = rand(*shape), rand(48, shape[-1], scale=0.1), rand(48)
    out = EF.linear(x, w, bias)
    assert_close(out, EF.linear(x.float(), w.float(), bias.float()), shape[-1], "linear")
    if torch is not None:
        tout = torch.nn.functional.linear(to_torch(x), to_torch(w), to_torch(bias))
        assert_close(out, tout, shape[-1], "linear vs torch")


# ---------------------------------------------------------------------------------------- empty

def test_empty_products():
    out = ember.mm(rand(5, 0), rand(0, 7))
    assert out.dtype == bf16 and out.shape == (5, 7) and (out.float() == 0).all().item()
    assert ember.mm(rand(0, 4), rand(4, 7)).shape == (0, 7)
    assert ember.mm(rand(3, 4), rand(4, 0)).shape == (3, 0)
    assert ember.bmm(rand(0, 3, 4), rand(0, 4, 5)).shape == (0, 3, 5)
    out = ember.bmm(rand(2, 3, 0), rand(2, 0, 5))
    assert out.shape == (2, 3, 5) and (out.float() == 0).all().item()
    s = rand(3, 5)
    out = ember.addmm(s, rand(3, 0), rand(0, 5), beta=0.5)
    assert_close(out, s.float() * 0.5, 1, "addmm with K = 0")


# ------------------------------------------------------------------------------ linear autograd

def test_linear_backward_matches_float32():
    x32, w32, b32 = ember.randn(64, 200), ember.randn(96, 200) * 0.1, ember.randn(96)
    g32 = rand(64, 96).float()
    grads = {}
    for dt in (bf16, ember.float32):
        x = x32.to(bf16).to(dt).requires_grad_()
        w = w32.to(bf16).to(dt).requires_grad_()
        b = b32.to(bf16).to(dt).requires_grad_()
        y = EF.linear(x, w, b)
        y.backward(g32.to(dt))
        grads[dt] = (y, x.grad, w.grad, b.grad)
    for name, got, want, k in zip(("out", "x.grad", "w.grad", "b.grad"), grads[bf16], grads[ember.float32],
                                  (200, 96, 64, 64)):
        assert got.dtype == bf16, name
        assert_close(got, want, k, f"linear {name}")


@needs_torch
def test_linear_backward_matches_torch():
    x, w, b = rand(32, 120), rand(64, 120, scale=0.1), rand(64)
    g = rand(32, 64)
    ex, ew, eb = (t.clone().requires_grad_() for t in (x, w, b))
    EF.linear(ex, ew, eb).backward(g)
    tx, tw, tb = (to_torch(t, True) for t in (x, w, b))
    torch.nn.functional.linear(tx, tw, tb).backward(to_torch(g))
    for name, e, t, k in (("x", ex, tx, 64), ("w", ew, tw, 32), ("b", eb, tb, 32)):
        assert_close(e.grad, t.grad, k, f"linear grad {name} vs torch")


# ------------------------------------------------------------------------------------ conv2d/3d

CONV_CASES = [
    # (N, C, H, W), (O, C/groups, KH, KW), stride, padding, dilation, groups, bias
    ((2, 1, 9, 9), (4, 1, 3, 3), 1, 1, 1, 1, True),
    ((4, 3, 12, 10), (8, 3, 3, 3), 1, 0, 1, 1, False),
    ((2, 16, 14, 14), (32, 16, 3, 3), 1, 1, 1, 1, True),
    ((2, 16, 15, 13), (16, 4, 3, 3), 2, 1, 1, 4, True),
    ((3, 8, 11, 11), (8, 1, 5, 5), 1, 2, 2, 8, False),
    ((2, 12, 9, 10), (6, 12, 1, 1), 1, 0, 1, 1, True),
    ((1, 32, 7, 7), (64, 32, 3, 3), (2, 1), (0, 1), (1, 2), 1, True),
]


def conv_inputs(in_shape, w_shape, bias):
    x = rand(*in_shape)
    w = rand(*w_shape, scale=1.0 / math.sqrt(math.prod(w_shape[1:])))
    b = rand(w_shape[0]) if bias else None
    return x, w, b


def conv_and_grads(x, w, b, g, stride, padding, dilation, groups, conv=EF.conv2d):
    """Output and the gradients of input, weight and bias for grad_output g."""
    x, w = x.clone().requires_grad_(), w.clone().requires_grad_()
    b = b.clone().requires_grad_() if b is not None else None
    y = conv(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
    y.backward(g)
    return y, x.grad, w.grad, (b.grad if b is not None else None)


@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: f"{c[0]}-{c[1]}-s{c[2]}-p{c[3]}-d{c[4]}-g{c[5]}")
def test_conv2d_forward_backward(case):
    in_shape, w_shape, stride, padding, dilation, groups, bias = case
    x, w, b = conv_inputs(in_shape, w_shape, bias)
    y0 = EF.conv2d(x.float(), w.float(), None if b is None else b.float(), stride=stride, padding=padding,
                   dilation=dilation, groups=groups)
    g = rand(*y0.shape)
    got = conv_and_grads(x, w, b, g, stride, padding, dilation, groups)
    want = conv_and_grads(x.float(), w.float(), None if b is None else b.float(), g.float(), stride, padding,
                          dilation, groups)
    n, o, oh, ow = y0.shape
    taps = w_shape[1] * w_shape[2] * w_shape[3]
    ks = {"out": taps, "input grad": o // groups * w_shape[2] * w_shape[3], "weight grad": n * oh * ow,
          "bias grad": n * oh * ow}
    for name, e, f in zip(ks, got, want):
        if f is None:
            continue
        assert e.dtype == bf16, f"{name}: {e.dtype}"
        assert_close(e, f, ks[name], f"conv2d {name}")
    if torch is not None:
        tx, tw = to_torch(x, True), to_torch(w, True)
        tb = to_torch(b, True) if b is not None else None
        ty = torch.nn.functional.conv2d(tx, tw, tb, stride=stride, padding=padding, dilation=dilation, groups=groups)
        ty.backward(to_torch(g))
        for name, e, t in zip(ks, got, (ty, tx.grad, tw.grad, None if tb is None else tb.grad)):
            if t is not None:
                assert_close(e, t, ks[name], f"conv2d {name} vs torch")


def test_conv3d_forward_backward():
    x, w, b = conv_inputs((2, 8, 6, 7, 5), (16, 8, 3, 3, 3), True)
    y0 = EF.conv3d(x.float(), w.float(), b.float(), padding=1)
    g = rand(*y0.shape)
    got = conv_and_grads(x, w, b, g, 1, 1, 1, 1, conv=EF.conv3d)
    want = conv_and_grads(x.float(), w.float(), b.float(), g.float(), 1, 1, 1, 1, conv=EF.conv3d)
    for name, e, f, k in zip(("out", "input grad", "weight grad", "bias grad"), got, want,
                             (8 * 27, 16 * 27, 2 * 6 * 7 * 5, 2 * 6 * 7 * 5)):
        assert_close(e, f, k, f"conv3d {name}")


def test_conv_transpose2d():
    x, w = rand(2, 16, 7, 7), rand(16, 8, 3, 3, scale=0.1)
    out = EF.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1)
    assert_close(out, EF.conv_transpose2d(x.float(), w.float(), stride=2, padding=1, output_padding=1), 16 * 9)


def test_cnn_layer_autograd_through_module():
    conv = ember.nn.Conv2d(1, 32, 3, padding=1).to(bf16)
    x = rand(8, 1, 28, 28)
    conv(x).float().square().mean().backward()
    assert conv.weight.grad.dtype == bf16 and conv.bias.grad.dtype == bf16
    conv32 = ember.nn.Conv2d(1, 32, 3, padding=1)
    with ember.no_grad():
        conv32.weight.copy_(conv.weight.float())
        conv32.bias.copy_(conv.bias.float())
    conv32(x.float()).bfloat16().float().square().mean().backward()
    assert_close(conv.weight.grad, conv32.weight.grad, 8 * 28 * 28, "weight grad")


# -------------------------------------------------------------------------- float16, threads

def test_float16_still_matches():
    a, b = ember.randn(33, 40).half(), ember.randn(40, 21).half()
    out = ember.mm(a, b)
    assert out.dtype == ember.float16
    np.testing.assert_allclose(out.float().numpy(), ember.mm(a.float(), b.float()).numpy(), rtol=2e-3,
                               atol=2e-3 * math.sqrt(40))


def test_thread_count_does_not_change_results_beyond_rounding(threads):
    a, b = rand(300, 200), rand(200, 260)
    ember.set_num_threads(1)
    one = ember.mm(a, b)
    ember.set_num_threads(2)
    assert_close(ember.mm(a, b), one.float(), 200)


def test_concurrent_callers():
    """Python threads share the primitive cache: different shapes at once, each checked."""
    shapes = [(17, 33, 9), (64, 64, 64), (130, 70, 90), (5, 300, 40)]
    inputs = [(rand(m, k), rand(k, n)) for m, n, k in shapes]
    wants = [ember.mm(a.float(), b.float()) for a, b in inputs]
    errors = []

    def work(i):
        try:
            for _ in range(20):
                a, b = inputs[i % len(inputs)]
                assert_close(ember.mm(a, b), wants[i % len(inputs)], a.shape[1])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
