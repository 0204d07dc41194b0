"""Autocast (issue 18): the CPU column of src/amp/autocast_policy.h against PyTorch 2.x's output
dtypes, region semantics (nesting, disabling, decorator, cache, threads), gradients, custom_fwd /
custom_bwd, and a short training run under CPU autocast against float32.

EXPECTED_CPU was recorded from PyTorch 2.15 (torch.autocast("cpu", dtype=torch.bfloat16)) for
float32 inputs, bfloat16 inputs and a bfloat16/float32 mix; where a torch >= 2.4 is importable the
same cases also run against it live. The CUDA column runs in tests/cpp/test_autocast.cpp on the
test device (which uses the accelerator column), and here when a GPU is present."""
import threading
import warnings

import pytest

import ember
import ember.nn.functional as F

try:
    import torch as _torch
    _TORCH2 = tuple(int(x) for x in _torch.__version__.split(".")[:2]) >= (2, 4)
except Exception:  # noqa: BLE001
    _torch, _TORCH2 = None, False


def _cases(t):
    nnf = t.nn.functional
    return {
        "mm": lambda m: t.mm(m(3, 4), m(4, 5)),
        "bmm": lambda m: t.bmm(m(2, 3, 4), m(2, 4, 5)),
        "addmm": lambda m: t.addmm(m(3, 5), m(3, 4), m(4, 5)),
        "baddbmm": lambda m: t.baddbmm(m(2, 3, 5), m(2, 3, 4), m(2, 4, 5)),
        "matmul": lambda m: t.matmul(m(3, 4), m(4, 5)),
        "matmul_op": lambda m: m(3, 4) @ m(4, 5),
        "mv": lambda m: t.mv(m(3, 4), m(4)),
        "addmv": lambda m: t.addmv(m(3), m(3, 4), m(4)),
        "dot": lambda m: t.dot(m(4), m(4)),
        "einsum": lambda m: t.einsum("ij,jk->ik", m(3, 4), m(4, 5)),
        "multi_dot": lambda m: t.linalg.multi_dot([m(3, 4), m(4, 5), m(5, 2)]),
        "vecdot": lambda m: t.linalg.vecdot(m(3, 4), m(3, 4)),
        "linear": lambda m: nnf.linear(m(3, 4), m(5, 4), m(5)),
        "linear_3d": lambda m: nnf.linear(m(2, 3, 4), m(5, 4), m(5)),
        "conv1d": lambda m: nnf.conv1d(m(1, 2, 6), m(3, 2, 3)),
        "conv2d": lambda m: nnf.conv2d(m(1, 2, 6, 6), m(3, 2, 3, 3), m(3)),
        "conv3d": lambda m: nnf.conv3d(m(1, 2, 4, 4, 4), m(3, 2, 3, 3, 3)),
        "conv_transpose1d": lambda m: nnf.conv_transpose1d(m(1, 2, 6), m(2, 3, 3)),
        "conv_transpose2d": lambda m: nnf.conv_transpose2d(m(1, 2, 6, 6), m(2, 3, 3, 3)),
        "conv_transpose3d": lambda m: nnf.conv_transpose3d(m(1, 2, 4, 4, 4), m(2, 3, 3, 3, 3)),
        "sdpa": lambda m: nnf.scaled_dot_product_attention(m(1, 2, 4, 8), m(1, 2, 4, 8), m(1, 2, 4, 8)),
        "tensordot": lambda m: t.tensordot(m(3, 4), m(4, 5), dims=1),
        "addcmul": lambda m: t.addcmul(m(3), m(3), m(3)),
        "atan2": lambda m: t.atan2(m(3), m(3)),
        "exp": lambda m: t.exp(m(3)),
        "log1p": lambda m: t.log1p(m(3)),
        "rsqrt": lambda m: t.rsqrt(m(3)),
        "pow_tt": lambda m: t.pow(m(3), m(3)),
        "pow_ts": lambda m: t.pow(m(3), 2.0),
        "softplus": lambda m: nnf.softplus(m(3)),
        "rms_norm": lambda m: nnf.rms_norm(m(3, 4), (4,), m(4)),
        "cosine_similarity": lambda m: nnf.cosine_similarity(m(3, 4), m(3, 4)),
        "cross_entropy": lambda m: nnf.cross_entropy(m(3, 4), t.tensor([0, 1, 2])),
        "nll_loss": lambda m: nnf.nll_loss(m(3, 4), t.tensor([0, 1, 2])),
        "mse_loss": lambda m: nnf.mse_loss(m(3, 4), m(3, 4)),
        "l1_loss": lambda m: nnf.l1_loss(m(3, 4), m(3, 4)),
        "smooth_l1_loss": lambda m: nnf.smooth_l1_loss(m(3, 4), m(3, 4)),
        "huber_loss": lambda m: nnf.huber_loss(m(3, 4), m(3, 4)),
        "kl_div": lambda m: nnf.kl_div(m(3, 4), m(3, 4), reduction="batchmean"),
        "bce": lambda m: nnf.binary_cross_entropy(m(3, 4).sigmoid(), m(3, 4).sigmoid()),
        "bce_logits": lambda m: nnf.binary_cross_entropy_with_logits(m(3, 4), m(3, 4)),
        "poisson_nll_loss": lambda m: nnf.poisson_nll_loss(m(3, 4), m(3, 4)),
        "cosine_embedding_loss": lambda m: nnf.cosine_embedding_loss(m(3, 4), m(3, 4), t.ones(3)),
        "hinge_embedding_loss": lambda m: nnf.hinge_embedding_loss(m(3, 4), t.ones(3, 4)),
        "margin_ranking_loss": lambda m: nnf.margin_ranking_loss(m(3), m(3), t.ones(3)),
        "soft_margin_loss": lambda m: nnf.soft_margin_loss(m(3), t.ones(3)),
        "triplet_margin_loss": lambda m: nnf.triplet_margin_loss(m(3, 4), m(3, 4), m(3, 4)),
        "multi_margin_loss": lambda m: nnf.multi_margin_loss(m(3, 4), t.tensor([0, 1, 2])),
        "dist": lambda m: t.dist(m(3), m(3)),
        "cdist": lambda m: t.cdist(m(3, 4), m(3, 4)),
        "renorm": lambda m: t.renorm(m(3, 4), 2, 0, 1.0),
        "logsumexp": lambda m: t.logsumexp(m(3, 4), 1),
        "interp_bilinear": lambda m: nnf.interpolate(m(1, 2, 4, 4), scale_factor=2, mode="bilinear"),
        "prod": lambda m: t.prod(m(3)),
        "prod_dim": lambda m: t.prod(m(3, 4), 1),
        "softmax": lambda m: t.softmax(m(3, 4), 1),
        "log_softmax": lambda m: t.log_softmax(m(3, 4), 1),
        "cumsum": lambda m: t.cumsum(m(3), 0),
        "sum": lambda m: t.sum(m(3)),
        "mean": lambda m: t.mean(m(3, 4)),
        "vector_norm": lambda m: t.linalg.vector_norm(m(3, 4)),
        "norm": lambda m: t.norm(m(3, 4)),
        "cat": lambda m: t.cat([m(3), m(3)]),
        "stack": lambda m: t.stack([m(3), m(3)]),
        "index_put": lambda m: t.index_put(m(3, 4), (t.tensor([0]),), m(4)),
        "scatter_add": lambda m: t.scatter_add(m(3, 4), 1, t.tensor([[0], [1], [2]]), m(3, 1)),
        "quantile": lambda m: t.quantile(m(5), 0.3),
        "trace": lambda m: t.trace(m(3, 3)),
        "grid_sample": lambda m: nnf.grid_sample(m(1, 1, 4, 4), m(1, 2, 2, 2), align_corners=False),
        "avg_pool3d": lambda m: nnf.avg_pool3d(m(1, 1, 4, 4, 4), 2),
        "max_pool3d": lambda m: nnf.max_pool3d(m(1, 1, 4, 4, 4), 2),
        "max_pool2d": lambda m: nnf.max_pool2d(m(1, 1, 4, 4), 2),
        "adaptive_avg_pool3d": lambda m: nnf.adaptive_avg_pool3d(m(1, 1, 4, 4, 4), 2),
        "reflection_pad2d": lambda m: nnf.pad(m(1, 1, 4, 4), (1, 1, 1, 1), mode="reflect"),
        "replication_pad2d": lambda m: nnf.pad(m(1, 1, 4, 4), (1, 1, 1, 1), mode="replicate"),
        "inverse": lambda m: t.linalg.inv(m(3, 3) + 3 * t.eye(3)),
        "rfft": lambda m: t.fft.rfft(m(8)),
        "relu": lambda m: t.relu(m(3)),
        "gelu": lambda m: nnf.gelu(m(3)),
        "add": lambda m: m(3) + m(3),
        "embedding": lambda m: nnf.embedding(t.tensor([0]), m(3, 4)),
        "layer_norm": lambda m: nnf.layer_norm(m(3, 4), (4,), m(4), m(4)),
        "group_norm": lambda m: nnf.group_norm(m(2, 4, 3), 2, m(4), m(4)),
        "prelu": lambda m: nnf.prelu(m(2, 3), m(1)),
        "index_copy": lambda m: t.index_copy(m(3, 4), 0, t.tensor([0]), m(1, 4)),
    }


# op: (float32 inputs, bfloat16 inputs, bf16/f32 mix) -> output dtype under CPU bf16 autocast,
# as PyTorch 2.15 gives them ("err" where torch's own kernel rejects the mix).
B, F32, C64 = "bfloat16", "float32", "complex64"
EXPECTED_CPU = {
    "mm": (B, B, B), "bmm": (B, B, B), "addmm": (B, B, B), "baddbmm": (B, B, B), "matmul": (B, B, B),
    "matmul_op": (B, B, B), "mv": (F32, B, "err"), "addmv": (F32, B, "err"), "dot": (F32, B, "err"),
    "einsum": (B, B, B), "multi_dot": (B, B, "err"), "vecdot": (B, B, B), "linear": (B, B, B),
    "linear_3d": (B, B, B), "conv1d": (B, B, B), "conv2d": (B, B, B), "conv3d": (B, B, B),
    "conv_transpose1d": (B, B, B), "conv_transpose2d": (B, B, B), "conv_transpose3d": (B, B, B),
    "sdpa": (B, B, B), "tensordot": (B, B, "err"), "addcmul": (F32, B, F32), "atan2": (F32, B, F32),
    "exp": (F32, B, B), "log1p": (F32, B, B), "rsqrt": (F32, B, B), "pow_tt": (F32, B, F32),
    "pow_ts": (F32, B, B), "softplus": (F32, B, B), "rms_norm": (F32, B, B),
    "cosine_similarity": (F32, B, F32), "cross_entropy": (F32, F32, F32), "nll_loss": (F32, F32, F32),
    "mse_loss": (F32, F32, F32), "l1_loss": (F32, F32, F32), "smooth_l1_loss": (F32, F32, F32),
    "huber_loss": (F32, F32, F32), "kl_div": (F32, F32, F32), "bce": (F32, F32, F32),
    "bce_logits": (F32, F32, F32), "poisson_nll_loss": (F32, F32, F32),
    "cosine_embedding_loss": (F32, F32, F32), "hinge_embedding_loss": (F32, F32, F32),
    "margin_ranking_loss": (F32, F32, F32), "soft_margin_loss": (F32, F32, F32),
    "triplet_margin_loss": (F32, F32, F32), "multi_margin_loss": (F32, F32, F32),
    "dist": (F32, B, F32), "cdist": (F32, F32, F32), "renorm": (F32, B, B), "logsumexp": (F32, B, B),
    "interp_bilinear": (F32, B, B), "prod": (F32, F32, F32), "prod_dim": (F32, F32, F32),
    "softmax": (F32, B, B), "log_softmax": (F32, B, B), "cumsum": (F32, B, B), "sum": (F32, B, B),
    "mean": (F32, B, B), "vector_norm": (F32, B, B), "norm": (F32, B, B), "cat": (F32, B, F32),
    "stack": (F32, B, F32), "index_put": (F32, B, "err"), "scatter_add": (F32, B, "err"),
    "quantile": (F32, F32, F32), "trace": (F32, F32, F32), "grid_sample": (F32, F32, F32),
    "avg_pool3d": (F32, F32, F32), "max_pool3d": (F32, F32, F32), "max_pool2d": (F32, B, B),
    "adaptive_avg_pool3d": (F32, F32, F32), "reflection_pad2d": (F32, F32, F32),
    "replication_pad2d": (F32, F32, F32), "inverse": (F32, F32, F32), "rfft": (C64, C64, C64),
    "relu": (F32, B, B), "gelu": (F32, B, B), "add": (F32, B, F32), "embedding": (F32, B, B),
    "layer_norm": (F32, B, "err"), "group_norm": (F32, B, "err"), "prelu": (B, B, B), "index_copy": (F32, B, F32),
}


def _makers(t):
    gen = t.Generator().manual_seed(0)

    def f32(*s):
        return t.rand(*s, generator=gen) + 0.5

    def bf(*s):
        return f32(*s).to(t.bfloat16)

    def mixed():
        n = [0]

        def mk(*s):
            n[0] += 1
            return bf(*s) if n[0] % 2 else f32(*s)
        return mk
    return f32, bf, mixed


def _dtype_name(d):
    return str(d).split(".")[-1]


def _run_column(t, name):
    f32, bf, mixed = _makers(t)
    out = []
    for maker in (f32, bf, mixed()):
        try:
            with t.autocast("cpu", dtype=t.bfloat16):
                r = _cases(t)[name](maker)
            out.append(_dtype_name(r.dtype))
        except Exception:  # noqa: BLE001
            out.append("err")
    return tuple(out)


@pytest.mark.parametrize("name", sorted(EXPECTED_CPU))
def test_cpu_policy_matches_torch(name):
    got = _run_column(ember, name)
    exp = EXPECTED_CPU[name]
    # Where torch's kernel rejects a bf16/f32 mix ("err"), ember may be more permissive; the
    # float32 and bfloat16 columns must match exactly.
    assert got[:2] == exp[:2], f"{name}: ember {got}, torch 2.x {exp}"
    if exp[2] != "err":
        assert got[2] == exp[2], f"{name}: ember {got}, torch 2.x {exp}"


@pytest.mark.skipif(not _TORCH2, reason="needs PyTorch >= 2.4 to compare live (the recorded table still runs)")
@pytest.mark.parametrize("name", sorted(EXPECTED_CPU))
def test_cpu_policy_live_against_torch(name):
    assert _run_column(_torch, name) == EXPECTED_CPU[name]


def test_policy_table_rows_are_torch_policies():
    rows = ember.amp.policy_table()
    names = [r[0] for r in rows]
    assert len(names) == len(set(names))
    allowed = {"none", "none (what it calls is not cast)", "lower_precision_fp", "fp32", "fp32_set_opt_dtype", "promote", "banned"}
    for name, cuda, cpu in rows:
        assert cuda in allowed and cpu in allowed
    table = {r[0]: r[1:] for r in rows}
    # A few rows straight from torch's lists (ATen/autocast_mode.h, autocast_mode.cpp).
    assert table["mm"] == ("lower_precision_fp", "lower_precision_fp")
    assert table["sum"] == ("fp32_set_opt_dtype", "none")
    assert table["binary_cross_entropy"] == ("banned", "fp32")
    assert table["cat"] == ("none", "promote")
    assert table["layer_norm"] == ("fp32", "none")


def test_fp64_and_integer_inputs_are_not_cast():
    with ember.autocast("cpu"):
        assert ember.mm(ember.ones(2, 2, dtype=ember.float64), ember.ones(2, 2, dtype=ember.float64)).dtype == ember.float64
        assert ember.mm(ember.ones(2, 2, dtype=ember.int64), ember.ones(2, 2, dtype=ember.int64)).dtype == ember.int64


def test_region_nesting_disable_and_restore():
    a, b = ember.randn(3, 4), ember.randn(4, 2)
    assert not ember.is_autocast_enabled("cpu")
    with ember.autocast("cpu"):
        assert ember.is_autocast_enabled("cpu") and ember.is_autocast_cpu_enabled()
        assert ember.get_autocast_dtype("cpu") == ember.bfloat16
        assert ember.mm(a, b).dtype == ember.bfloat16
        with ember.autocast("cpu", enabled=False):
            assert not ember.is_autocast_enabled("cpu")
            assert ember.mm(a, b).dtype == ember.float32
        with ember.autocast("cpu", dtype=ember.float16):
            assert ember.mm(a, b).dtype == ember.float16
        assert ember.mm(a, b).dtype == ember.bfloat16
    assert not ember.is_autocast_enabled("cpu")
    assert ember.mm(a, b).dtype == ember.float32


def test_decorator_and_legacy_names():
    @ember.autocast("cpu")
    def f(x, w):
        return ember.mm(x, w)
    assert f(ember.randn(2, 3), ember.randn(3, 2)).dtype == ember.bfloat16
    with pytest.warns(FutureWarning):
        ctx = ember.cpu.amp.autocast()
    with ctx:
        assert ember.mm(ember.randn(2, 3), ember.randn(3, 2)).dtype == ember.bfloat16
    with ember.amp.autocast(device_type="cpu", dtype=ember.bfloat16):
        assert ember.is_autocast_enabled("cpu")


def test_bad_arguments():
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        ember.autocast(0)
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'tpu'"):
        ember.autocast("tpu")
    with pytest.warns(UserWarning, match="CPU Autocast only supports dtype of torch.bfloat16, torch.float16"):
        ctx = ember.autocast("cpu", dtype=ember.float64)
    with ctx:
        assert not ember.is_autocast_enabled("cpu")


@pytest.mark.skipif(ember.cuda.is_available(), reason="checks the no-GPU behaviour")
def test_cuda_autocast_without_gpu_warns_and_disables():
    with pytest.warns(UserWarning, match="CUDA is not available. Disabling"):
        ctx = ember.autocast("cuda")
    with ctx:
        assert not ember.is_autocast_enabled("cuda")
    with pytest.warns(FutureWarning):
        with pytest.warns(UserWarning):
            ember.cuda.amp.autocast()


def test_other_device_region_leaves_cpu_ops_alone():
    ember.set_autocast_enabled("cuda", True)  # as a CUDA region would, without needing a GPU
    try:
        assert ember.mm(ember.randn(2, 3), ember.randn(3, 2)).dtype == ember.float32
        assert ember.exp(ember.randn(3).bfloat16()).dtype == ember.bfloat16
    finally:
        ember.set_autocast_enabled("cuda", False)


def test_state_is_per_thread():
    seen = []
    with ember.autocast("cpu"):
        t = threading.Thread(target=lambda: seen.append(
            (ember.is_autocast_enabled("cpu"), ember.mm(ember.randn(2, 2), ember.randn(2, 2)).dtype)))
        t.start()
        t.join()
    assert seen == [(False, ember.float32)]


def test_weight_cast_cache_lives_for_one_region():
    lin = ember.nn.Linear(4, 3)
    x = ember.randn(2, 4)
    assert ember._C._amp._cache_size() == 0
    with ember.autocast("cpu"):
        lin(x)
        n = ember._C._amp._cache_size()
        assert n == 2  # weight and bias, cast once
        lin(x)
        assert ember._C._amp._cache_size() == n
        with ember.autocast("cpu"):  # a nested region shares the outer one's cache
            lin(x)
        assert ember._C._amp._cache_size() == n
        with ember.no_grad():  # grad-less casts are cached apart, for no_grad calls only
            lin(x)
            lin(x)
        assert ember._C._amp._cache_size() == 2 * n
        lin(x).sum().backward()  # a grad-mode call still gets the cast with a graph
        assert lin.weight.grad is not None and lin.bias.grad is not None
    assert ember._C._amp._cache_size() == 0
    with ember.autocast("cpu", cache_enabled=False):
        lin(x)
        assert ember._C._amp._cache_size() == 0


def test_cached_cast_follows_in_place_updates():
    lin = ember.nn.Linear(4, 3, bias=False)
    x = ember.ones(1, 4)
    with ember.autocast("cpu"):
        y1 = lin(x)
        with ember.no_grad():
            lin.weight.mul_(2)
        y2 = lin(x)
    assert ember.allclose(y2.float(), 2 * y1.float(), rtol=1e-2)


def test_gradients_flow_to_float32_parameters():
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Linear(8, 16), ember.nn.ReLU(), ember.nn.Linear(16, 4))
    x, y = ember.randn(32, 8), ember.randint(0, 4, (32,))
    with ember.autocast("cpu"):
        out = model(x)
        assert out.dtype == ember.bfloat16
        loss = F.cross_entropy(out, y)
        assert loss.dtype == ember.float32
    loss.backward()
    grads_amp = [p.grad.clone() for p in model.parameters()]
    for p in model.parameters():
        assert p.grad.dtype == ember.float32
        p.grad = None
    F.cross_entropy(model(x), y).backward()
    for g_amp, p in zip(grads_amp, model.parameters()):
        assert ember.allclose(g_amp, p.grad, rtol=0.05, atol=0.02), (g_amp - p.grad).abs().max()


def test_custom_fwd_bwd():
    seen = {}

    class MyMM(ember.autograd.Function):
        @staticmethod
        @ember.amp.custom_fwd(device_type="cpu")
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a.mm(b)

        @staticmethod
        @ember.amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad):
            seen["bwd_autocast"] = ember.is_autocast_enabled("cpu")
            a, b = ctx.saved_tensors
            return grad.mm(b.t()), a.t().mm(grad)

    class Fp32MM(ember.autograd.Function):
        @staticmethod
        @ember.amp.custom_fwd(device_type="cpu", cast_inputs=ember.float32)
        def forward(ctx, a, b):
            seen["fwd_autocast"] = ember.is_autocast_enabled("cpu")
            return a.mm(b)

        @staticmethod
        @ember.amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad):
            return grad, grad

    a = ember.randn(2, 3, requires_grad=True)
    b = ember.randn(3, 2, requires_grad=True)
    with ember.autocast("cpu"):
        out = MyMM.apply(a, b)
        assert out.dtype == ember.bfloat16
        out2 = Fp32MM.apply(a.bfloat16(), b.bfloat16())
        assert out2.dtype == ember.float32 and seen["fwd_autocast"] is False
    out.float().sum().backward()
    assert seen["bwd_autocast"] is True
    assert a.grad.shape == (2, 3)


def test_python_composite_outside_region_is_unchanged():
    x = ember.randn(3, 4).bfloat16()
    assert ember.renorm(x, 2, 0, 1.0).dtype == ember.bfloat16


def _fashion_subset(n_train, n_test):
    import os
    root = "/usr/share/datasets/fashion-mnist"
    if not os.path.isdir(root):
        pytest.skip("Debian's dataset-fashion-mnist is not installed")
    from ember.vision import datasets
    train = datasets.FashionMNIST(root, train=True)
    test = datasets.FashionMNIST(root, train=False)
    return train, test


def test_training_under_cpu_autocast_matches_float32_accuracy():
    """A small MLP on a synthetic 10-class problem: autocast (bf16 matmuls) reaches the float32
    run's test accuracy within 2 percentage points."""
    def run(amp):
        ember.manual_seed(0)
        g = ember.Generator().manual_seed(1)
        centers = ember.randn(10, 32, generator=g) * 1.5
        def data(n):
            y = ember.randint(0, 10, (n,), generator=g)
            return centers[y] + ember.randn(n, 32, generator=g), y
        xtr, ytr = data(4000)
        xte, yte = data(1000)
        model = ember.nn.Sequential(ember.nn.Linear(32, 64), ember.nn.ReLU(), ember.nn.Linear(64, 10))
        opt = ember.optim.AdamW(model.parameters(), lr=3e-3)
        for epoch in range(3):
            for i in range(0, 4000, 100):
                with ember.autocast("cpu", enabled=amp):
                    loss = F.cross_entropy(model(xtr[i:i + 100]), ytr[i:i + 100])
                opt.zero_grad()
                loss.backward()
                opt.step()
        with ember.no_grad(), ember.autocast("cpu", enabled=amp):
            return (model(xte).argmax(1) == yte).float().mean().item()
    acc32, acc_amp = run(False), run(True)
    assert acc32 > 0.8
    assert abs(acc_amp - acc32) < 0.02, (acc32, acc_amp)


def test_matmul_grads_keep_the_parameters_layout():
    """mm/addmm compute the gradient of a column-major operand (linear's weight.t()) in that
    layout, so the weight's gradient arrives contiguous and AccumulateGrad copies nothing; the
    values equal the row-major formula's."""
    g = ember.Generator().manual_seed(11)
    x = ember.randn(6, 5, generator=g, requires_grad=True)
    w = ember.randn(3, 5, generator=g, requires_grad=True)
    b = ember.randn(3, generator=g, requires_grad=True)
    up = ember.randn(6, 3, generator=g)
    (ember.addmm(b, x, w.t()) * up).sum().backward()
    assert w.grad.is_contiguous() and w.grad.stride() == (5, 1)
    assert ember.allclose(w.grad, up.t() @ x.detach(), atol=1e-6)
    assert ember.allclose(x.grad, up @ w.detach(), atol=1e-6)
    xt = ember.randn(5, 6, generator=g, requires_grad=True)  # a column-major first operand
    (ember.mm(xt.t(), w.detach().t()) * up).sum().backward()
    assert xt.grad.is_contiguous() and ember.allclose(xt.grad, (up @ w.detach()).t(), atol=1e-6)
    with ember.autocast("cpu"):
        lin = ember.nn.Linear(5, 3)
        lin(x.detach()).float().sum().backward()
    assert lin.weight.grad.dtype == ember.float32 and lin.weight.grad.is_contiguous()


# The CUDA column (torch's ATen/autocast_mode.h lists) for float32 inputs under float16 autocast;
# runs on a GPU machine (and against torch there when it has CUDA). The same column runs here on
# the test device: tests/cpp/test_autocast.cpp.
H = "float16"
EXPECTED_CUDA_F32_INPUTS = {
    "mm": H, "bmm": H, "addmm": H, "baddbmm": H, "matmul": H, "mv": H, "addmv": H, "einsum": H, "linear": H,
    "conv2d": H, "conv_transpose2d": H, "sdpa": H, "vecdot": H, "exp": F32, "log1p": F32, "rsqrt": F32,
    "pow_tt": F32, "softplus": F32, "rms_norm": F32, "layer_norm": F32, "group_norm": F32, "cosine_similarity": F32,
    "cross_entropy": F32, "nll_loss": F32, "mse_loss": F32, "bce_logits": F32, "kl_div": F32, "cdist": F32,
    "logsumexp": F32, "interp_bilinear": F32, "prod": F32, "softmax": F32, "log_softmax": F32, "cumsum": F32,
    "sum": F32, "norm": F32, "vector_norm": F32, "relu": F32, "gelu": F32, "add": F32, "cat": F32, "dot": F32,
    "addcmul": F32, "atan2": F32,
}


def _cuda_maker(t):
    gen = t.Generator().manual_seed(0)
    return lambda *s: (t.rand(*s, generator=gen, device="cpu") + 0.5).to("cuda")


def _run_on_cuda(t, name):
    """Case `name` under t.autocast("cuda"), its own tensors (targets, indices) made on the GPU. An
    op whose CUDA kernel is not written yet skips the case, naming it."""
    t.set_default_device("cuda")
    try:
        with t.autocast("cuda"):
            return _cases(t)[name](_cuda_maker(t))
    except NotImplementedError as e:
        if t is ember and "'CUDA' backend" in str(e):
            pytest.skip(f"{name}: no CUDA kernel yet ({e})")
        raise
    finally:
        t.set_default_device(None)


@pytest.mark.parametrize("name", sorted(EXPECTED_CUDA_F32_INPUTS))
def test_cuda_policy(name):
    if not ember.cuda.is_available():
        pytest.skip("no CUDA GPU on this machine: the CUDA backend compiled but did not run")
    out = _run_on_cuda(ember, name)
    assert _dtype_name(out.dtype) == EXPECTED_CUDA_F32_INPUTS[name]
    if _torch is not None and _torch.cuda.is_available():
        assert _dtype_name(_run_on_cuda(_torch, name).dtype) == _dtype_name(out.dtype)


def test_cuda_binary_cross_entropy_is_banned():
    if not ember.cuda.is_available():
        pytest.skip("no CUDA GPU on this machine: the CUDA backend compiled but did not run")
    p = (ember.rand(3, 4) * 0.8 + 0.1).cuda()
    with ember.autocast("cuda"):
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            F.binary_cross_entropy(p, p)
