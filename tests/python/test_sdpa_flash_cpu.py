"""The CPU flash-attention kernels (src/cpu/flash_attention_kernels.cpp) against the math path of
F.scaled_dot_product_attention: outputs and gradients for float32/float64/bfloat16, causal or not,
Tq != Tk, head dims that are not powers of two, lengths that leave partial blocks; the path SDPA
picks by default (causal from 256 x 256, unmasked only from 8192 x 8192); double backward."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.nn.attention import SDPBackend, sdpa_kernel


def _run(backend, shapes, dtype, causal, seed=0):
    rng = np.random.default_rng(seed)
    q, k, v = (ember.tensor(rng.standard_normal(s), dtype=dtype).requires_grad_() for s in shapes)
    g = ember.tensor(rng.standard_normal(shapes[0][:-1] + (shapes[2][-1],)), dtype=dtype)
    with sdpa_kernel(backend):
        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    (out.float() * g.float()).sum().backward()
    return out, out.grad_fn.name(), [t.grad for t in (q, k, v)]


SHAPES = [  # (q, k, v)
    ((2, 3, 70, 16), (2, 3, 70, 16), (2, 3, 70, 16)),
    ((1, 2, 300, 20), (1, 2, 300, 20), (1, 2, 300, 20)),
    ((1, 2, 33, 8), (1, 2, 290, 8), (1, 2, 290, 8)),
    ((2, 65, 12), (2, 130, 12), (2, 130, 12)),
    ((1, 1, 1, 4), (1, 1, 5, 4), (1, 1, 5, 4)),
]


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.bfloat16], ids=["f32", "f64", "bf16"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("shapes", SHAPES, ids=lambda s: "x".join(map(str, s[0])) + "_k" + str(s[1][-2]))
def test_cpu_flash_matches_math(shapes, causal, dtype):
    out, name, grads = _run(SDPBackend.FLASH_ATTENTION, shapes, dtype, causal)
    ref, ref_name, ref_grads = _run(SDPBackend.MATH, shapes, dtype, causal)
    assert "Flash" in name and "Flash" not in ref_name
    assert out.dtype == dtype
    tol = {ember.float32: 2e-5, ember.float64: 1e-11, ember.bfloat16: 3e-2}[dtype]
    for got, want in [(out, ref)] + list(zip(grads, ref_grads)):
        got, want = got.detach().double(), want.detach().double()
        scale = max(1.0, want.abs().max().item())
        assert (got - want).abs().max().item() <= tol * scale


def test_default_path_on_cpu():
    q = ember.randn(1, 2, 300, 16, requires_grad=True)
    assert "Flash" in F.scaled_dot_product_attention(q, q, q, is_causal=True).grad_fn.name()
    assert "Flash" not in F.scaled_dot_product_attention(q, q, q).grad_fn.name()  # unmasked, small: math
    small = ember.randn(1, 2, 100, 16, requires_grad=True)
    assert "Flash" not in F.scaled_dot_product_attention(small, small, small, is_causal=True).grad_fn.name()
    ember.backends.cuda.enable_flash_sdp(False)
    try:
        assert "Flash" not in F.scaled_dot_product_attention(q, q, q, is_causal=True).grad_fn.name()
    finally:
        ember.backends.cuda.enable_flash_sdp(True)


def test_cpu_flash_double_backward():
    q, k, v = (ember.randn(1, 2, 40, 8, dtype=ember.float64, requires_grad=True) for _ in range(3))

    def fn(a, b, c):
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(a, b, c, is_causal=True)
    assert ember.autograd.gradcheck(fn, (q, k, v))
    # create_graph: the backward is the math formula on differentiable ops, so its own gradient
    # agrees with the math path's double backward
    second = []
    for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.MATH):
        a, b, c = (t.detach().clone().requires_grad_() for t in (q, k, v))
        with sdpa_kernel(backend):
            out = F.scaled_dot_product_attention(a, b, c, is_causal=True)
        (ga,) = ember.autograd.grad(out.pow(2).sum(), a, create_graph=True)
        ga.pow(2).sum().backward()
        second.append([t.grad for t in (a, b, c)])
    for x, y in zip(*second):
        assert ember.allclose(x, y, rtol=1e-9, atol=1e-10)
