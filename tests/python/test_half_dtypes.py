"""Float16 and bfloat16 tensors through the ops a training program uses (issue 18): each op runs
on half inputs (computing in float32 inside, as torch) and agrees with the same op on the float32
copy of those inputs, to the half type's resolution; gradients come back in the input's dtype.
Device-parametrised: the CUDA half runs on a GPU machine."""
import pytest

import ember
import ember.nn.functional as F
from cuda_skip import skip_missing_cuda_kernel

NO_GPU = "no CUDA GPU on this machine: the CUDA backend compiled but did not run"
HALF = [ember.bfloat16, ember.float16]
I = lambda *v: ember.tensor(list(v))  # noqa: E731


def _ops():
    return {
        "exp": lambda t, x: t.exp(x(4, 5)), "log": lambda t, x: t.log(x(4, 5).abs() + 0.5),
        "tanh": lambda t, x: t.tanh(x(4, 5)), "sigmoid": lambda t, x: t.sigmoid(x(4, 5)),
        "erfinv": lambda t, x: t.erfinv(x(4, 5).clamp(-0.9, 0.9)), "lgamma": lambda t, x: t.lgamma(x(4, 5).abs() + 0.5),
        "rsqrt": lambda t, x: t.rsqrt(x(4, 5).abs() + 0.5), "round": lambda t, x: t.round(x(4, 5) * 3),
        "pow": lambda t, x: t.pow(x(4, 5).abs() + 0.5, 1.5), "atan2": lambda t, x: t.atan2(x(4, 5), x(4, 5)),
        "clamp": lambda t, x: t.clamp(x(4, 5), -0.5, 0.5), "where": lambda t, x: t.where(x(4, 5) > 0, x(4, 5), x(4, 5)),
        "lerp": lambda t, x: t.lerp(x(4, 5), x(4, 5), 0.3), "addcdiv": lambda t, x: t.addcdiv(x(5), x(5), x(5).abs() + 1),
        "sum": lambda t, x: t.sum(x(4, 5), 1), "mean": lambda t, x: t.mean(x(4, 5)), "prod": lambda t, x: t.prod(x(4, 5) * 0.5 + 1, 0),
        "var": lambda t, x: t.var(x(4, 5), 1), "norm": lambda t, x: t.norm(x(4, 5)), "amax": lambda t, x: t.amax(x(4, 5), 0),
        "max_dim": lambda t, x: t.max(x(4, 5), 1)[0], "argmax": lambda t, x: t.argmax(x(4, 5), 1),
        "logsumexp": lambda t, x: t.logsumexp(x(4, 5), 1), "cumsum": lambda t, x: t.cumsum(x(4, 5), 1),
        "cumprod": lambda t, x: t.cumprod(x(4, 5) * 0.1 + 1, 1), "sort": lambda t, x: t.sort(x(4, 5), 1)[0],
        "topk": lambda t, x: t.topk(x(4, 5), 2)[0], "median": lambda t, x: t.median(x(4, 5)),
        "softmax": lambda t, x: t.softmax(x(4, 5), 1), "log_softmax": lambda t, x: t.log_softmax(x(4, 5), 1),
        "mm": lambda t, x: t.mm(x(4, 5), x(5, 3)), "bmm": lambda t, x: t.bmm(x(2, 4, 5), x(2, 5, 3)),
        "matmul_t": lambda t, x: t.matmul(x(5, 4).t(), x(5, 3)), "addmm": lambda t, x: t.addmm(x(3), x(4, 5), x(5, 3)),
        "einsum": lambda t, x: t.einsum("bij,bjk->bik", x(2, 4, 5), x(2, 5, 3)),
        "index_select": lambda t, x: t.index_select(x(4, 5), 0, I(0, 2)), "gather": lambda t, x: t.gather(x(4, 5), 1, I(0, 1, 2, 3).view(4, 1)),
        "scatter_add": lambda t, x: t.zeros(4, 5, dtype=x(1).dtype).scatter_add(1, I(0, 1, 2, 3).view(4, 1), x(4, 1)),
        "index_add": lambda t, x: t.zeros(4, 5, dtype=x(1).dtype).index_add(0, I(0, 2), x(2, 5)),
        "masked_fill": lambda t, x: x(4, 5).masked_fill(x(4, 5) > 0, 1.0), "cat": lambda t, x: t.cat([x(2, 5), x(3, 5)]),
        "flip": lambda t, x: t.flip(x(4, 5), [1]), "tril": lambda t, x: t.tril(x(4, 5)), "roll": lambda t, x: t.roll(x(4, 5), 1, 0),
        "linear": lambda t, x: F.linear(x(3, 4), x(5, 4), x(5)) if t is ember else t.nn.functional.linear(x(3, 4), x(5, 4), x(5)),
        "conv2d": lambda t, x: _F(t).conv2d(x(2, 3, 8, 8), x(4, 3, 3, 3), x(4), padding=1),
        "conv_transpose2d": lambda t, x: _F(t).conv_transpose2d(x(1, 3, 5, 5), x(3, 2, 3, 3), stride=2),
        "max_pool2d": lambda t, x: _F(t).max_pool2d(x(1, 2, 6, 6), 2), "avg_pool2d": lambda t, x: _F(t).avg_pool2d(x(1, 2, 6, 6), 2),
        "adaptive_avg_pool2d": lambda t, x: _F(t).adaptive_avg_pool2d(x(1, 2, 6, 6), 3),
        "layer_norm": lambda t, x: _F(t).layer_norm(x(3, 8), (8,), x(8), x(8)),
        "group_norm": lambda t, x: _F(t).group_norm(x(2, 4, 3), 2, x(4), x(4)),
        "batch_norm": lambda t, x: _F(t).batch_norm(x(4, 3, 5), None, None, x(3), x(3), training=True),
        "rms_norm": lambda t, x: _F(t).rms_norm(x(3, 8), (8,), x(8)),
        "gelu": lambda t, x: _F(t).gelu(x(4, 5)), "silu": lambda t, x: _F(t).silu(x(4, 5)),
        "embedding": lambda t, x: _F(t).embedding(I(0, 2, 1), x(3, 4)),
        "sdpa": lambda t, x: _F(t).scaled_dot_product_attention(x(1, 2, 6, 8), x(1, 2, 6, 8), x(1, 2, 6, 8), is_causal=True),
        "cross_entropy": lambda t, x: _F(t).cross_entropy(x(4, 5), I(0, 1, 2, 4)),
        "mse_loss": lambda t, x: _F(t).mse_loss(x(4, 5), x(4, 5)),
        "bce_logits": lambda t, x: _F(t).binary_cross_entropy_with_logits(x(4, 5), x(4, 5).sigmoid()),
        "interpolate": lambda t, x: _F(t).interpolate(x(1, 2, 4, 4), scale_factor=2, mode="bilinear"),
        "pad_reflect": lambda t, x: _F(t).pad(x(1, 2, 4, 4), (1, 1, 1, 1), mode="reflect"),
        "dropout_eval": lambda t, x: _F(t).dropout(x(4, 5), 0.5, training=False),
    }


def _F(t):
    return t.nn.functional


TOL = {ember.bfloat16: 2e-2, ember.float16: 2e-3}



@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("dtype", HALF, ids=["bf16", "fp16"])
@pytest.mark.parametrize("name", sorted(_ops()))
def test_half_op_matches_float32(name, dtype, device):
    if device == "cuda" and not ember.cuda.is_available():
        pytest.skip(NO_GPU)
    fn = _ops()[name]
    gen = ember.Generator().manual_seed(7)
    inputs = []

    def half(*size):
        v = ember.randn(*size, generator=gen, device="cpu").to(dtype)
        inputs.append(v)
        return v.to(device)
    it = None

    def as_f32(*size):
        return next(it).float().to(device)
    # The ops' own tensors (indices, zeros) are made on the device under test.
    ember.set_default_device(device)
    try:
        out = skip_missing_cuda_kernel(lambda: fn(ember, half))
        it = iter(inputs)
        ref = fn(ember, as_f32)
    finally:
        ember.set_default_device(None)
    if out.is_floating_point():
        assert out.dtype == dtype, f"{name}: {out.dtype}"
        # One rounding of the float32 result to the half type, plus what rounding inside the op
        # may add (a sum of k roundings): relative to the result's scale.
        scale = max(1.0, ref.float().abs().max().item())
        err = (out.float().cpu() - ref.float().cpu()).abs().max().item()
        assert err <= 4 * TOL[dtype] * scale, f"{name}: max error {err} (scale {scale})"
    else:
        assert ember.equal(out.cpu(), ref.cpu())


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("dtype", HALF, ids=["bf16", "fp16"])
def test_half_training_step_gradients(dtype, device):
    if device == "cuda" and not ember.cuda.is_available():
        pytest.skip(NO_GPU)
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Conv2d(1, 4, 3, padding=1), ember.nn.ReLU(), ember.nn.Flatten(),
                                ember.nn.Linear(4 * 6 * 6, 3)).to(device)
    ref = ember.nn.Sequential(ember.nn.Conv2d(1, 4, 3, padding=1), ember.nn.ReLU(), ember.nn.Flatten(),
                              ember.nn.Linear(4 * 6 * 6, 3)).to(device)
    ref.load_state_dict(model.state_dict())
    model.to(dtype)
    x, y = ember.randn(5, 1, 6, 6, device=device), ember.tensor([0, 1, 2, 0, 1], device=device)
    skip_missing_cuda_kernel(lambda: F.cross_entropy(model(x.to(dtype)), y).backward())
    F.cross_entropy(ref(x), y).backward()
    for p, r in zip(model.parameters(), ref.parameters()):
        assert p.grad.dtype == dtype
        assert ember.allclose(p.grad.float().cpu(), r.grad.cpu(), rtol=0.1, atol=8 * TOL[dtype]), name
    opt = ember.optim.AdamW(model.parameters(), lr=1e-2)
    opt.step()
    for p in model.parameters():
        assert p.dtype == dtype and bool(p.isfinite().all())


@pytest.mark.parametrize("dtype", HALF, ids=["bf16", "fp16"])
def test_in_loop_conversion_layouts(dtype):
    """The CPU converts float16/bfloat16 operands block by block inside the loop: strided,
    broadcast, in-place, mixed with float32 and with the other half type, longer than a block."""
    g = ember.Generator().manual_seed(3)
    a32 = ember.randn(300, 7, generator=g)
    b32 = ember.randn(7, generator=g)
    a, b = a32.to(dtype), b32.to(dtype)
    ref = (a.float().t() * b.float().unsqueeze(1)).to(dtype)
    assert ember.equal(a.t() * b.unsqueeze(1), ref)                       # strided x broadcast
    assert ember.equal((a + b32).float(), a.float() + b32)                 # half + float32 -> float32
    other = ember.bfloat16 if dtype == ember.float16 else ember.float16
    mixed = a + b.to(other)
    assert mixed.dtype == ember.float32
    assert ember.equal(mixed, a.float() + b.to(other).float())
    c = a.clone()[:, ::2]                                                  # in place, non-contiguous
    c.mul_(2.5)
    assert ember.equal(c.float(), (a.float()[:, ::2] * 2.5).to(dtype).float())
    big = ember.randn(70001, generator=g).to(dtype)                        # many blocks, a ragged end
    assert ember.equal(big.exp(), big.float().exp().to(dtype))
    special = ember.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 3.0e38]).to(dtype)
    assert ember.equal((special * 1.0).isnan(), special.isnan())
    assert ember.allclose(special.neg().float(), -(special.float()), rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", HALF, ids=["bf16", "fp16"])
def test_transposed_conversion(dtype):
    """float32 <-> half copies of transposed (and batched transposed) tensors take the tiled path."""
    g = ember.Generator().manual_seed(5)
    x = ember.randn(3, 70, 45, generator=g)
    for src in (x.transpose(1, 2), x[0].t()):
        h = src.to(dtype)
        assert h.is_contiguous() and ember.equal(h, src.contiguous().to(dtype))
        back = h.transpose(-2, -1).contiguous().transpose(-2, -1)  # transposed half storage
        assert ember.equal(back.float(), h.float())
