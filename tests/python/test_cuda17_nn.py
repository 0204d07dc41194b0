"""nn kernels on CUDA (issue 17): every op runs on cuda:0 in float32 and is compared, forward and
gradients, with the same op on the CPU in float64; the half types are compared with float32 on the
GPU; the demo's CNN trains the same on both. Without a GPU every case skips with the reason. An op
whose CUDA kernel is not written yet skips naming it (the dispatcher's NotImplementedError), so the
file lists what is missing rather than failing on it."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from cuda_skip import skip_missing_cuda_kernel

NO_GPU = "no CUDA GPU on this machine: the CUDA backend compiled but did not run"


def need_gpu():
    if not ember.cuda.is_available():
        pytest.skip(NO_GPU)


@pytest.fixture(autouse=True)
def _strict_float32():
    """cuDNN may round float32 convolutions to TF32 by default (torch.backends.cudnn.allow_tf32, as
    torch): these comparisons are at float32 tolerances, so TF32 is off for them."""
    old = ember.backends.cudnn.allow_tf32
    ember.backends.cudnn.allow_tf32 = False
    yield
    ember.backends.cudnn.allow_tf32 = old


def rand(rng, *shape):
    return rng.standard_normal(shape)


# name -> (input shapes, fn(inputs) -> output); the first input is the one whose gradient is
# compared along with every other floating input's.
def _ce_target(x):
    return ember.tensor([1, 0, 4, 2, 3, 1], device=x.device)


CASES = {
    "layer_norm": ([(6, 5, 32), (32,), (32,)], lambda x, w, b: F.layer_norm(x, (32,), w, b)),
    "layer_norm_2d_shape": ([(4, 3, 8, 8)], lambda x: F.layer_norm(x, (8, 8))),
    "layer_norm_long_rows": ([(3, 3000), (3000,), (3000,)], lambda x, w, b: F.layer_norm(x, (3000,), w, b)),
    "layer_norm_rows_past_registers": ([(2, 5000), (5000,)], lambda x, w: F.layer_norm(x, (5000,), w)),
    "rms_norm": ([(6, 48), (48,)], lambda x, w: F.rms_norm(x, (48,), w)),
    "rms_norm_wide": ([(3, 1500), (1500,)], lambda x, w: F.rms_norm(x, (1500,), w)),
    "batch_norm2d": ([(4, 3, 5, 7), (3,), (3,)], lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True)),
    "batch_norm1d": ([(16, 10), (10,), (10,)], lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True)),
    "batch_norm3d": ([(2, 4, 3, 4, 5)], lambda x: F.batch_norm(x, None, None, training=True)),
    "group_norm": ([(3, 6, 5, 5), (6,), (6,)], lambda x, w, b: F.group_norm(x, 3, w, b)),
    "cross_entropy": ([(6, 5)], lambda x: F.cross_entropy(x, _ce_target(x))),
    "cross_entropy_smooth_weight": ([(6, 5), (5,)],
                                    lambda x, w: F.cross_entropy(x, _ce_target(x), weight=w.abs() + 0.1,
                                                                 label_smoothing=0.2)),
    "cross_entropy_none_ignore": ([(6, 5)],
                                  lambda x: F.cross_entropy(x, _ce_target(x), ignore_index=4, reduction="none")),
    "cross_entropy_sum_wide": ([(6, 3000)], lambda x: F.cross_entropy(x, _ce_target(x) * 500, reduction="sum")),
    "nll_log_softmax": ([(6, 5)], lambda x: F.nll_loss(F.log_softmax(x, 1), _ce_target(x))),
    "conv2d": ([(2, 3, 9, 8), (4, 3, 3, 3), (4,)], lambda x, w, b: F.conv2d(x, w, b, padding=1)),
    "conv2d_stride_dilation_groups": ([(2, 4, 11, 10), (6, 2, 3, 2)],
                                      lambda x, w: F.conv2d(x, w, stride=2, padding=(2, 1), dilation=(2, 1), groups=2)),
    "conv1d": ([(2, 3, 20), (5, 3, 4), (5,)], lambda x, w, b: F.conv1d(x, w, b, stride=2)),
    "conv3d": ([(1, 2, 5, 6, 5), (3, 2, 2, 3, 2), (3,)], lambda x, w, b: F.conv3d(x, w, b, padding=1)),
    "conv_transpose2d": ([(2, 3, 5, 5), (3, 4, 3, 3)], lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1)),
    "max_pool2d": ([(2, 3, 9, 8)], lambda x: F.max_pool2d(x, 2)),
    "max_pool2d_overlap_ceil": ([(2, 3, 9, 8)], lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True)),
    "avg_pool2d": ([(2, 3, 9, 8)], lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False)),
    "adaptive_avg_pool2d": ([(2, 3, 9, 8)], lambda x: F.adaptive_avg_pool2d(x, (4, 3))),
    "adaptive_max_pool2d": ([(2, 3, 9, 8)], lambda x: F.adaptive_max_pool2d(x, (4, 3))),
    "max_pool3d": ([(1, 2, 6, 6, 5)], lambda x: F.max_pool3d(x, 2)),
    "avg_pool3d": ([(1, 2, 6, 6, 5)], lambda x: F.avg_pool3d(x, 3, 2, 1)),
    "pad_reflect": ([(2, 3, 6, 7)], lambda x: F.pad(x, (2, 1, 1, 3), mode="reflect")),
    "pad_replicate": ([(2, 3, 6, 7)], lambda x: F.pad(x, (2, 1, 1, 3), mode="replicate")),
    "pad_circular": ([(2, 3, 6, 7)], lambda x: F.pad(x, (2, 1, 1, 3), mode="circular")),
    "interp_bilinear": ([(2, 3, 5, 6)], lambda x: F.interpolate(x, scale_factor=2, mode="bilinear")),
    "interp_nearest": ([(2, 3, 5, 6)], lambda x: F.interpolate(x, size=(7, 9), mode="nearest")),
    "unfold": ([(2, 3, 6, 7)], lambda x: F.unfold(x, 3, padding=1, stride=2)),
    "fold": ([(2, 12, 9)], lambda x: F.fold(x, (4, 4), 2, stride=1)),
    "dropout_eval": ([(4, 5)], lambda x: F.dropout(x, 0.5, training=False)),
    "gelu_silu": ([(4, 33)], lambda x: F.gelu(x) + F.silu(x) + F.gelu(x, approximate="tanh")),
    # tanh_backward, sigmoid_backward, threshold_backward (and silu_backward above): fused kernels
    "tanh_sigmoid_relu": ([(4, 33)], lambda x: F.tanh(x) * 2 + F.sigmoid(x) + F.relu(x) * 3),
    "embedding": ([(10, 4)], lambda w: F.embedding(ember.tensor([[1, 2, 9], [1, 1, 0]], device=w.device), w)),
}


def _eval(name, device, dtype, seed=0):
    shapes, fn = CASES[name]
    rng = np.random.default_rng(seed)
    inputs = [ember.tensor(rand(rng, *s), dtype=dtype, device=device).requires_grad_() for s in shapes]
    out = fn(*inputs)
    g = ember.tensor(rand(np.random.default_rng(seed + 1), *out.shape), dtype=dtype, device=device)
    (out * g).sum().backward()
    return out, [x.grad for x in inputs]


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_float32_cuda_matches_cpu_float64(name):
    need_gpu()
    out, grads = skip_missing_cuda_kernel(lambda: _eval(name, "cuda", ember.float32))
    ref, ref_grads = _eval(name, "cpu", ember.float64)
    assert out.device.type == "cuda" and out.dtype == ember.float32
    np.testing.assert_allclose(out.detach().cpu().double().numpy(), ref.detach().numpy(), rtol=2e-4, atol=2e-4, err_msg=name)
    for k, (g, r) in enumerate(zip(grads, ref_grads)):
        assert (g is None) == (r is None), f"{name}: input {k} gradient presence"
        if g is not None:
            np.testing.assert_allclose(g.cpu().double().numpy(), r.numpy(), rtol=2e-4, atol=5e-4,
                                       err_msg=f"{name}: gradient of input {k}")


HALF_CASES = ["layer_norm", "rms_norm", "batch_norm2d", "cross_entropy", "conv2d", "max_pool2d", "avg_pool2d",
              "adaptive_avg_pool2d", "interp_bilinear", "pad_reflect", "gelu_silu", "tanh_sigmoid_relu"]


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("name", HALF_CASES)
def test_op_half_cuda_matches_float32(name, dtype):
    need_gpu()
    out, grads = skip_missing_cuda_kernel(lambda: _eval(name, "cuda", dtype))
    ref, ref_grads = _eval(name, "cuda", ember.float32)
    assert out.dtype == dtype
    tol = 2e-2 if dtype == ember.bfloat16 else 4e-3
    scale = max(1.0, ref.abs().max().item())
    assert (out.float() - ref).abs().max().item() <= 4 * tol * scale, name
    for g, r in zip(grads, ref_grads):
        gscale = max(1.0, r.abs().max().item())
        assert (g.float() - r).abs().max().item() <= 8 * tol * gscale, name


def test_batch_norm_running_stats_on_cuda():
    need_gpu()
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 4, 5, 5)) * 3 + 2
    mods = []
    for device in ["cpu", "cuda"]:
        bn = ember.nn.BatchNorm2d(4).to(device)
        skip_missing_cuda_kernel(lambda: bn(ember.tensor(x, dtype=ember.float32, device=device)))
        mods.append(bn)
    for name in ["running_mean", "running_var", "num_batches_tracked"]:
        a, b = getattr(mods[0], name), getattr(mods[1], name)
        assert b.device.type == "cuda"
        np.testing.assert_allclose(b.cpu().double().numpy(), a.double().numpy(), rtol=1e-5, atol=1e-6, err_msg=name)


def test_cross_entropy_wide_rows_and_special_values_match_cpu():
    """GPT-2's 50257-word rows (the one-pass max and sum), rows with +-inf and NaN, and a row whose
    max comes last: losses and gradients as the CPU's, NaN where it has NaN."""
    need_gpu()
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 50257)) * 4
    x[1, 7] = np.inf
    x[2, :] = -np.inf
    x[3, 100] = np.nan
    x[4, :1000] = -np.inf
    x[5, -1] = 40.0  # the max arrives after every thread has a running max
    t = np.array([3, 7, 0, 5, 2000, 50256])
    outs = []
    for device in ("cpu", "cuda"):
        xi = ember.tensor(x, dtype=ember.float32, device=device).requires_grad_()
        loss = F.cross_entropy(xi, ember.tensor(t, device=device), reduction="none")
        loss.sum().backward()
        outs.append((loss.detach().cpu().double().numpy(), xi.grad.cpu().double().numpy()))
    (l_cpu, g_cpu), (l_gpu, g_gpu) = outs
    np.testing.assert_array_equal(np.isnan(l_gpu), np.isnan(l_cpu))
    np.testing.assert_allclose(l_gpu, l_cpu, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.isnan(g_gpu), np.isnan(g_cpu))
    np.testing.assert_allclose(g_gpu, g_cpu, rtol=1e-4, atol=1e-7)


def test_cross_entropy_all_ignored_is_nan_on_cuda():
    need_gpu()
    x = ember.randn(3, 4, device="cuda")
    t = ember.full((3,), -100, dtype=ember.int64, device="cuda")
    assert skip_missing_cuda_kernel(lambda: F.cross_entropy(x, t)).isnan().item()


def _demo_cnn():
    nn = ember.nn
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2, 2),
                         nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2, 2),
                         nn.Flatten(), nn.Linear(16 * 7 * 7, 32), nn.ReLU(), nn.Linear(32, 10))


def test_demo_cnn_trains_the_same_on_cuda_and_cpu():
    need_gpu()
    rng = np.random.default_rng(5)
    xs = [ember.tensor(rng.standard_normal((16, 1, 28, 28)), dtype=ember.float32) for _ in range(4)]
    ys = [ember.tensor(rng.integers(0, 10, 16)) for _ in range(4)]
    ember.manual_seed(0)
    cpu_model = _demo_cnn()
    gpu_model = _demo_cnn()
    gpu_model.load_state_dict(cpu_model.state_dict())
    gpu_model.to("cuda")
    losses = {}
    for device, model in [("cpu", cpu_model), ("cuda", gpu_model)]:
        opt = ember.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        seen = []
        for x, y in zip(xs, ys):
            opt.zero_grad()
            loss = skip_missing_cuda_kernel(lambda: F.cross_entropy(model(x.to(device)), y.to(device)))
            loss.backward()
            opt.step()
            seen.append(loss.item())
        losses[device] = seen
    np.testing.assert_allclose(losses["cuda"], losses["cpu"], rtol=2e-3, atol=2e-3)
    assert losses["cuda"][-1] < losses["cuda"][0]


# ---------------------------------------------------------------- flash attention
FLASH_SHAPES = [  # (batch, heads, Tq, Tk, head_dim, causal)
    (2, 3, 128, 128, 64, False),
    (2, 3, 128, 128, 64, True),
    (1, 2, 100, 257, 64, False),
    (1, 2, 257, 100, 128, True),
    (2, 1, 333, 333, 128, True),
    (1, 1, 1, 70, 64, False),
]


def _attention_reference(q, k, v, causal):
    """float64 softmax(q k^T / sqrt(d)) v on the CPU by the math path, with gradients."""
    from ember.nn.attention import SDPBackend, sdpa_kernel
    q, k, v = (t.detach().cpu().double().requires_grad_() for t in (q, k, v))
    with sdpa_kernel(SDPBackend.MATH):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal), (q, k, v)


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("shape", FLASH_SHAPES, ids=lambda s: "x".join(map(str, s[:5])) + ("c" if s[5] else ""))
def test_flash_attention_matches_float64(shape, dtype):
    need_gpu()
    b, h, tq, tk, d, causal = shape
    rng = np.random.default_rng(tq * 7 + tk)
    q, k, v = (ember.tensor(rng.standard_normal(s), dtype=dtype, device="cuda").requires_grad_()
               for s in [(b, h, tq, d), (b, h, tk, d), (b, h, tk, d)])
    g = ember.tensor(rng.standard_normal((b, h, tq, d)), dtype=dtype, device="cuda")
    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    assert out.dtype == dtype and out.shape == (b, h, tq, d)
    assert out.grad_fn is not None and "Flash" in out.grad_fn.name()
    (out.float() * g.float()).sum().backward()
    ref, leaves = _attention_reference(q, k, v, causal)
    (ref * g.cpu().double()).sum().backward()
    tol = 2e-2 if dtype == ember.bfloat16 else 4e-3
    for name, got, want in [("out", out, ref), ("dq", q.grad, leaves[0].grad), ("dk", k.grad, leaves[1].grad),
                            ("dv", v.grad, leaves[2].grad)]:
        got = got.detach().cpu().double().numpy()
        want = want.detach().numpy()
        scale = max(1.0, np.abs(want).max())
        assert np.abs(got - want).max() <= 4 * tol * scale, f"{name}: max error {np.abs(got - want).max()}"


@pytest.mark.parametrize("layout", ["packed_qkv", "head_dim_strided", "misaligned", "five_dims"])
def test_flash_attention_reads_strided_heads(layout):
    """q, k, v as a GPT makes them (split out of one [B, T, 3C] projection, heads transposed) are
    read in place; layouts the kernels cannot follow are copied first. Both agree with float64."""
    need_gpu()
    rng = np.random.default_rng(5)
    b, h, t, d = 2, 3, 130, 64
    if layout == "packed_qkv":
        x = ember.tensor(rng.standard_normal((b, t, 3 * h * d)), dtype=ember.bfloat16, device="cuda").requires_grad_()
        q, k, v = (z.view(b, t, h, d).transpose(1, 2) for z in x.split(h * d, dim=2))
    elif layout == "head_dim_strided":  # the head dim is not contiguous: copied
        x = ember.tensor(rng.standard_normal((3, b, h, d, t)), dtype=ember.bfloat16, device="cuda").requires_grad_()
        q, k, v = (x[i].transpose(-1, -2) for i in range(3))
    elif layout == "misaligned":  # rows 2 elements past a 16-byte boundary: copied
        x = ember.tensor(rng.standard_normal((b, h, t, 3 * d + 2)), dtype=ember.bfloat16, device="cuda").requires_grad_()
        q, k, v = (x[..., 2 + i * d: 2 + (i + 1) * d] for i in range(3))
    else:  # [2, 2, h, T, d] views of a [2, 2, T, h, d] tensor: the outer dims merge
        x = ember.tensor(rng.standard_normal((3, 2, 2, t, h, d)), dtype=ember.bfloat16, device="cuda").requires_grad_()
        q, k, v = (x[i].transpose(-2, -3) for i in range(3))
    # the incoming gradient strided too, as the transpose back to [B, T, H, D] hands it over
    g = ember.tensor(rng.standard_normal(q.shape), dtype=ember.bfloat16, device="cuda")
    g = g.transpose(-2, -3).contiguous().transpose(-2, -3)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert "Flash" in out.grad_fn.name()
    out.backward(g)
    ref, leaves = _attention_reference(q, k, v, True)
    ref.backward(g.cpu().double())
    got = out.detach().cpu().double().numpy()
    assert np.abs(got - ref.detach().numpy()).max() <= 0.08 * max(1.0, np.abs(ref.detach().numpy()).max())
    assert x.grad is not None and x.grad.shape == x.shape
    # each input's gradient read back out of x.grad through its own view
    grads = {"packed_qkv": lambda gx: [z.view(b, t, h, d).transpose(1, 2) for z in gx.split(h * d, dim=2)],
             "head_dim_strided": lambda gx: [gx[i].transpose(-1, -2) for i in range(3)],
             "misaligned": lambda gx: [gx[..., 2 + i * d: 2 + (i + 1) * d] for i in range(3)],
             "five_dims": lambda gx: [gx[i].transpose(-2, -3) for i in range(3)]}[layout](x.grad)
    for name, got_g, leaf in zip(("dq", "dk", "dv"), grads, leaves):
        got_g = got_g.detach().cpu().double().numpy()
        want = leaf.grad.numpy()
        assert np.abs(got_g - want).max() <= 0.08 * max(1.0, np.abs(want).max()), f"{layout} {name}"


def test_flash_attention_switch_and_math_fallback_agree():
    need_gpu()
    q, k, v = (ember.randn(2, 4, 96, 64, device="cuda", dtype=ember.float16) for _ in range(3))
    assert ember.backends.cuda.flash_sdp_enabled()
    fast = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    ember.backends.cuda.enable_flash_sdp(False)
    try:
        assert not ember.backends.cuda.flash_sdp_enabled()
        slow = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    finally:
        ember.backends.cuda.enable_flash_sdp(True)
    assert (fast.float() - slow.float()).abs().max().item() < 4e-3


def test_flash_attention_does_not_store_the_score_matrix():
    need_gpu()
    t, d = 8192, 64
    q, k, v = (ember.randn(1, 2, t, d, device="cuda", dtype=ember.bfloat16).requires_grad_() for _ in range(3))
    ember.cuda.synchronize()
    ember.cuda.reset_peak_memory_stats()
    base = ember.cuda.memory_allocated()
    F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
    ember.cuda.synchronize()
    peak = ember.cuda.max_memory_allocated() - base
    # the 2 x 8192 x 8192 scores alone would be 256 MiB in bfloat16; flash keeps O(T d)
    assert peak < 32 * 2 ** 20, f"peak {peak / 2 ** 20:.1f} MiB"
    assert q.grad is not None and q.grad.isfinite().all().item()


def test_flash_attention_under_autocast_and_double_backward():
    need_gpu()
    q, k, v = (ember.randn(1, 2, 64, 64, device="cuda").requires_grad_() for _ in range(3))
    with ember.autocast("cuda", dtype=ember.bfloat16):
        out = F.scaled_dot_product_attention(q, k, v)
    assert out.dtype == ember.bfloat16
    # create_graph: the backward is built from differentiable ops (the math formula)
    (gq,) = ember.autograd.grad(out.float().pow(2).sum(), q, create_graph=True)
    gq.sum().backward()
    assert k.grad is not None and k.grad.isfinite().all().item()


def test_sdpa_kernel_switches_and_restores():
    from ember.nn.attention import SDPBackend, sdpa_kernel
    cuda = ember.backends.cuda
    q = ember.randn(1, 2, 5, 8)
    ref = F.scaled_dot_product_attention(q, q, q)
    with sdpa_kernel(SDPBackend.MATH):
        assert cuda.math_sdp_enabled() and not cuda.flash_sdp_enabled()
        assert ember.allclose(F.scaled_dot_product_attention(q, q, q), ref)
    assert cuda.flash_sdp_enabled() and cuda.math_sdp_enabled()
    # only flash: the CPU flash kernel serves it, masks too; dropout it cannot take fails naming why
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
        out = F.scaled_dot_product_attention(q, q, q)
        assert out.grad_fn is None and ember.allclose(out, ref, atol=1e-6)
        masked = F.scaled_dot_product_attention(q, q, q, attn_mask=ember.ones(5, 5, dtype=ember.bool))
        assert ember.allclose(masked, ref, atol=1e-6)
        with pytest.raises(RuntimeError, match="No available kernel"):
            F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    with cuda.sdp_kernel(enable_math=False, enable_flash=True):
        assert not cuda.math_sdp_enabled()
    assert cuda.math_sdp_enabled() and cuda.cudnn_sdp_enabled()
    with pytest.raises(TypeError):
        with sdpa_kernel(["math"]):
            pass
