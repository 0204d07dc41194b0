"""ember.compile against eager on random small models: stacks of what model code does to a
[batch, tokens, features] tensor -- Linear layers (with activations and residuals: the matmul
epilogues), layer norm, softmax and log_softmax, attention written out, chunk and cat (joined
pieces), slices and rolls, transposed copies, masked fills, norms by hand -- with parameters
wanting gradients. Values, the input's and every parameter's gradients match eager's, in grad
mode and under no_grad, and with dynamic=True over batch and token counts. Seeded: a failure
names its model."""
import math
import os
import random

import pytest

import ember
import ember.nn.functional as F

LAYERS = ["linear", "linear_relu", "linear_gelu", "residual", "layer_norm", "softmax", "log_softmax", "attention",
          "chunk_cat", "roll", "transpose_copy", "masked_fill", "rms_by_hand", "center", "dropout", "cross_entropy"]


def _model(seed, d, device="cpu"):
    rng = random.Random(seed)
    layers = [rng.choice(LAYERS) for _ in range(rng.randint(2, 6))]
    ember.manual_seed(seed)
    params = {}
    for i, kind in enumerate(layers):
        if kind.startswith("linear") or kind == "residual":
            params[f"w{i}"] = (ember.randn(d, d) / math.sqrt(d)).to(device).requires_grad_()
            params[f"b{i}"] = (ember.randn(d) * 0.1).to(device).requires_grad_(rng.random() < 0.8)
        elif kind in ("layer_norm", "rms_by_hand"):
            params[f"g{i}"] = (1.0 + 0.1 * ember.randn(d)).to(device).requires_grad_()
            params[f"b{i}"] = (0.1 * ember.randn(d)).to(device).requires_grad_(kind == "layer_norm")
    return layers, params


def _forward(layers, params, x):
    h = x
    for i, kind in enumerate(layers):
        p = lambda name: params[f"{name}{i}"]  # noqa: E731
        if kind == "linear":
            h = F.linear(h, p("w"), p("b"))
        elif kind == "linear_relu":
            h = F.linear(h, p("w"), p("b")).relu()
        elif kind == "linear_gelu":
            h = F.gelu(F.linear(h, p("w"), p("b")), approximate="tanh")
        elif kind == "residual":
            h = h + F.linear(h, p("w"), p("b"))
        elif kind == "layer_norm":
            h = F.layer_norm(h, (h.shape[-1],), p("g"), p("b"))
        elif kind == "softmax":
            h = h.softmax(-1) * h.shape[-1]
        elif kind == "log_softmax":
            h = F.log_softmax(h, -1)
        elif kind == "attention":
            scores = h @ h.transpose(1, 2) / math.sqrt(h.shape[-1])
            h = scores.softmax(-1) @ h
        elif kind == "chunk_cat":
            a, b = h.chunk(2, -1)
            h = ember.cat([b.tanh(), a * 0.5], -1)
        elif kind == "roll":
            h = ember.cat([h[:, 1:], h[:, :1]], 1)
        elif kind == "transpose_copy":
            h = h.transpose(1, 2).contiguous().transpose(1, 2) + 1.0
        elif kind == "masked_fill":
            h = h.masked_fill(h > 1.0, 1.0)
        elif kind == "rms_by_hand":
            h = h * (h.pow(2).mean(-1, keepdim=True) + 1e-6).rsqrt() * p("g")
        elif kind == "center":
            h = h - h.mean(-1, keepdim=True)
        elif kind == "dropout":  # (random: both sides draw under the same seed)
            h = F.dropout(h, 0.25, training=True)
        elif kind == "cross_entropy":  # a loss over the features as classes, then back to the shape
            targets = ember.arange(h.shape[0] * h.shape[1], device=h.device) % h.shape[-1]
            h = h + F.cross_entropy(h.reshape(-1, h.shape[-1]), targets)
    return h


def _check(layers, params, fast, x, where, grad=True, tol=1e-4):
    ember.manual_seed(7)
    got = fast(x)
    ember.manual_seed(7)
    want = _forward(layers, params, x)
    assert got.shape == want.shape and ember.allclose(got.float(), want.float(), rtol=tol, atol=tol), where
    if not grad:
        return
    leaves = [x] + [t for t in params.values() if t.requires_grad]
    up = ember.randn(*want.shape).to(want.device)
    g_got = ember.autograd.grad((got * up).sum(), leaves, allow_unused=True)
    g_want = ember.autograd.grad((want * up).sum(), leaves, allow_unused=True)
    for a, b in zip(g_got, g_want):
        assert (a is None) == (b is None), where
        if a is not None:
            assert ember.allclose(a, b, rtol=10 * tol, atol=10 * tol), where


@pytest.mark.parametrize("seed", range(int(os.environ.get("EMBER_RANDOM_MODELS", "16"))))
def test_random_model_matches_eager(seed, device="cpu"):
    d = random.Random(seed).choice([8, 16, 24])
    layers, params = _model(seed, d, device)
    where = f"model {seed}: {layers}, d={d}, on {device}"
    fast = ember.compile(lambda x: _forward(layers, params, x))
    x = ember.randn(3, 5, d).to(device).requires_grad_()
    fast(x)  # the capture call
    for _ in range(2):
        _check(layers, params, fast, x, where)
    with ember.no_grad():
        fast(x)
        _check(layers, params, fast, x, where + " (no_grad)", grad=False)


@pytest.mark.parametrize("seed", range(int(os.environ.get("EMBER_RANDOM_DYNAMIC_MODELS", "6"))))
def test_random_model_over_batch_and_token_counts(seed):
    d = 16
    layers, params = _model(100 + seed, d)
    where = f"model {100 + seed}: {layers}"
    fast = ember.compile(lambda x: _forward(layers, params, x), dynamic=True)
    for b, t in [(2, 5), (3, 5), (4, 5), (5, 5), (6, 5), (3, 7), (3, 9), (3, 11), (3, 13), (7, 6), (2, 17)]:
        x = ember.randn(b, t, d, requires_grad=True)
        _check(layers, params, fast, x, f"{where} at {b}x{t}")


@pytest.mark.parametrize("seed", range(int(os.environ.get("EMBER_RANDOM_AUTOCAST_MODELS", "4"))))
def test_random_model_under_bfloat16_autocast(seed):
    d = 16
    layers, params = _model(200 + seed, d)
    where = f"model {200 + seed}: {layers} (autocast bfloat16)"

    def f(x):
        with ember.autocast("cpu", dtype=ember.bfloat16):
            return _forward(layers, params, x)

    fast = ember.compile(f)
    x = ember.randn(3, 5, d, requires_grad=True)
    ember.manual_seed(7)
    fast(x)
    ember.manual_seed(7)
    got = fast(x)
    ember.manual_seed(7)
    want = f(x)
    assert got.dtype == want.dtype and ember.allclose(got.float(), want.float(), rtol=5e-2, atol=5e-2), where
    leaves = [x] + [t for t in params.values() if t.requires_grad]
    up = ember.randn(*want.shape)
    g_got = ember.autograd.grad((got.float() * up).sum(), leaves, allow_unused=True)
    g_want = ember.autograd.grad((want.float() * up).sum(), leaves, allow_unused=True)
    for a, b in zip(g_got, g_want):
        assert (a is None) == (b is None), where
        if a is not None:
            assert ember.allclose(a, b, rtol=1e-1, atol=1e-1), where


@pytest.mark.skipif(not ember.cuda.is_available(),
                    reason="no CUDA GPU on this machine: the CUDA backend compiled but did not run")
@pytest.mark.parametrize("seed", range(16))
def test_random_model_matches_eager_on_the_gpu(seed):
    """The same models on a GPU (cuBLAS products, NVRTC-built fused kernels; dropout's numbers are the
    GPU generator's, drawn alike under the shared seed)."""
    test_random_model_matches_eager(seed, device="cuda")
