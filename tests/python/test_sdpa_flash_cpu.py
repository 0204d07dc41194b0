"""The CPU flash-attention kernels (src/cpu/flash_attention_kernels.cpp) against the math path of
F.scaled_dot_product_attention: outputs and gradients for float32/float64/bfloat16, causal or not,
Tq != Tk, head dims that are not powers of two, lengths that leave partial blocks; the path SDPA
picks by default (from 128 x 128 scores); attn_mask (bool and additive, broadcast, fully masked
rows); double backward."""
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
    assert "Flash" in F.scaled_dot_product_attention(q, q, q).grad_fn.name()
    mask = ember.rand(300, 300) > 0.5
    assert "Flash" in F.scaled_dot_product_attention(q, q, q, attn_mask=mask).grad_fn.name()
    small = ember.randn(1, 2, 100, 16, requires_grad=True)  # below 128 x 128 scores: math
    assert "Flash" not in F.scaled_dot_product_attention(small, small, small, is_causal=True).grad_fn.name()
    ember.backends.cuda.enable_flash_sdp(False)
    try:
        assert "Flash" not in F.scaled_dot_product_attention(q, q, q, is_causal=True).grad_fn.name()
    finally:
        ember.backends.cuda.enable_flash_sdp(True)


def _check_double_backward(q, k, v, **kw):
    """gradcheck through the flash path, and (create_graph: the backward is the math formula on
    differentiable ops) its second-order gradients equal to the math path's."""
    def fn(a, b, c):
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(a, b, c, **kw)
    assert ember.autograd.gradcheck(fn, (q, k, v))
    second = []
    for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.MATH):
        a, b, c = (t.detach().clone().requires_grad_() for t in (q, k, v))
        with sdpa_kernel(backend):
            out = F.scaled_dot_product_attention(a, b, c, **kw)
        (ga,) = ember.autograd.grad(out.pow(2).sum(), a, create_graph=True)
        ga.pow(2).sum().backward()
        second.append([t.grad for t in (a, b, c)])
    for x, y in zip(*second):
        assert not ember.isnan(x).any().item()
        assert ember.allclose(x, y, rtol=1e-9, atol=1e-10)


def test_cpu_flash_double_backward():
    q, k, v = (ember.randn(1, 2, 40, 8, dtype=ember.float64, requires_grad=True) for _ in range(3))
    _check_double_backward(q, k, v, is_causal=True)


# ---- attn_mask: the flash kernels read a bool or additive mask in place ----------------------

def _masked_case(backend, q_shape, kv_len, mask, dtype, seed=1):
    rng = np.random.default_rng(seed)
    k_shape = q_shape[:-2] + (kv_len, q_shape[-1])
    q, k, v = (ember.tensor(rng.standard_normal(s), dtype=dtype).requires_grad_() for s in (q_shape, k_shape, k_shape))
    g = ember.tensor(rng.standard_normal(q_shape), dtype=dtype)
    with sdpa_kernel(backend):
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    (out.float() * g.float()).sum().backward()
    return out, out.grad_fn.name(), [t.grad for t in (q, k, v)]


def _masks(q_shape, kv_len, seed=2):
    """(name, mask) pairs over the broadcast shapes models use, with rows whose every key is
    masked (which give 0, as torch 2.x's safe softmax)."""
    rng = np.random.default_rng(seed)
    b, h, tq = q_shape[0], q_shape[1], q_shape[2]
    keep = rng.random((b, 1, tq, kv_len)) > 0.3
    keep[0, 0, 3] = False  # a fully masked row
    pad = np.ones((b, 1, 1, kv_len), dtype=bool)
    pad[-1, 0, 0, kv_len - 7:] = False  # a padded sequence
    additive = rng.standard_normal((tq, kv_len))
    additive[5, :] = -np.inf  # a fully masked row in a float mask
    additive[6, ::2] = -np.inf
    per_head = rng.random((b, h, tq, kv_len)) > 0.5
    return [("bool_b1qk", ember.tensor(keep)), ("padding_b11k", ember.tensor(pad)),
            ("float_qk", ember.tensor(additive, dtype=ember.float32)), ("bool_bhqk", ember.tensor(per_head))]


MASK_SHAPES = [((2, 3, 70, 16), 70), ((1, 2, 200, 24), 600), ((2, 2, 33, 8), 130)]


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.bfloat16], ids=["f32", "f64", "bf16"])
@pytest.mark.parametrize("q_shape,kv_len", MASK_SHAPES, ids=lambda s: str(s))
def test_cpu_flash_masked_matches_math(q_shape, kv_len, dtype):
    tol = {ember.float32: 2e-5, ember.float64: 1e-11, ember.bfloat16: 3e-2}[dtype]
    for name, mask in _masks(q_shape, kv_len):
        if name == "float_qk":
            mask = mask.to(dtype)
        out, fname, grads = _masked_case(SDPBackend.FLASH_ATTENTION, q_shape, kv_len, mask, dtype)
        ref, mname, ref_grads = _masked_case(SDPBackend.MATH, q_shape, kv_len, mask, dtype)
        assert "Flash" in fname and "Flash" not in mname, name
        for got, want in [(out, ref)] + list(zip(grads, ref_grads)):
            got, want = got.detach().double(), want.detach().double()
            assert not ember.isnan(got).any().item() and not ember.isnan(want).any().item(), name
            scale = max(1.0, want.abs().max().item())
            assert (got - want).abs().max().item() <= tol * scale, name


def test_masked_against_float64_reference():
    """The flash path with a bool mask against softmax(q k^T / sqrt(d) + mask) v written out in
    float64 numpy, values and the gradient of q through finite differences of the reference."""
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((1, 2, 20, 8)) for _ in range(3))
    keep = rng.random((20, 20)) > 0.4
    keep[7] = False

    def reference(qn):
        s = qn @ k.transpose(0, 1, 3, 2) / np.sqrt(8) + np.where(keep, 0.0, -np.inf)
        m = s.max(-1, keepdims=True)
        e = np.where(np.isfinite(s), np.exp(s - np.where(np.isfinite(m), m, 0)), 0.0)
        tot = e.sum(-1, keepdims=True)
        return (np.divide(e, tot, out=np.zeros_like(e), where=tot > 0)) @ v
    eq = ember.tensor(q, dtype=ember.float64).requires_grad_()
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        out = F.scaled_dot_product_attention(eq, ember.tensor(k, dtype=ember.float64),
                                             ember.tensor(v, dtype=ember.float64), attn_mask=ember.tensor(keep))
    assert "Flash" in out.grad_fn.name()
    np.testing.assert_allclose(out.detach().numpy(), reference(q), rtol=1e-12, atol=1e-12)
    assert np.all(out.detach().numpy()[0, :, 7] == 0)
    out.sum().backward()
    eps, num = 1e-6, np.zeros_like(q)
    for idx in np.ndindex(q.shape):
        d = np.zeros_like(q)
        d[idx] = eps
        num[idx] = (reference(q + d).sum() - reference(q - d).sum()) / (2 * eps)
    np.testing.assert_allclose(eq.grad.numpy(), num, rtol=1e-6, atol=1e-7)


def test_fully_masked_rows_give_zero_on_both_paths():
    q = ember.randn(1, 1, 4, 8, requires_grad=True)
    keep = ember.ones(4, 4, dtype=ember.bool)
    keep[2] = False
    for backend in (SDPBackend.MATH, SDPBackend.FLASH_ATTENTION):
        q.grad = None
        with sdpa_kernel(backend):
            out = F.scaled_dot_product_attention(q, q, q, attn_mask=keep)
        out.sum().backward()
        assert out[0, 0, 2].abs().max().item() == 0
        assert not ember.isnan(q.grad).any().item()


def test_mask_that_needs_a_gradient_takes_the_math_path():
    q = ember.randn(1, 2, 300, 16, requires_grad=True)
    mask = ember.randn(300, 300, requires_grad=True)
    out = F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
    assert "Flash" not in out.grad_fn.name()
    out.sum().backward()
    assert mask.grad is not None and mask.grad.shape == (300, 300)
    with ember.no_grad(), sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        flash = F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
    assert ember.allclose(flash, out.detach(), atol=2e-5)
    # a mask that does not broadcast: the flash path does not apply, and with the math path off
    # the error says why
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION), pytest.raises(RuntimeError, match="No available kernel"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=ember.zeros(7, 300))


def test_masked_double_backward():
    q, k, v = (ember.randn(1, 2, 12, 4, dtype=ember.float64, requires_grad=True) for _ in range(3))
    keep = ember.rand(12, 12) > 0.3
    keep[4] = False
    _check_double_backward(q, k, v, attn_mask=keep)


@pytest.mark.parametrize("heads", [1, 3, 8], ids=lambda h: f"h{h}")  # 8: the one-pass-per-head backward
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_cpu_flash_reads_qkv_cut_from_one_projection(heads, causal):
    # A GPT block's q, k, v are strided views of one [b, T, 3d] tensor; the kernels read them in
    # place and lay the output (and the gradients) out as [b, T, h, hd], so the block's
    # out.transpose(1, 2).reshape(b, T, d) is a view. Values and gradients equal the math path on
    # contiguous copies.
    b, t, hd = 2, 150, 16
    d = heads * hd
    rng = np.random.default_rng(heads)
    qkv0 = rng.standard_normal((b, t, 3 * d))
    g0 = ember.tensor(rng.standard_normal((b, t, d)), dtype=ember.float32)

    def run(backend, contiguous):
        qkv = ember.tensor(qkv0, dtype=ember.float32).requires_grad_()
        q, k, v = (z.reshape(b, t, heads, hd).transpose(1, 2) for z in qkv.split(d, dim=2))
        if contiguous:
            q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        with sdpa_kernel(backend):
            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        y = out.transpose(1, 2).reshape(b, t, d)
        (y * g0).sum().backward()
        return out, y, qkv.grad

    out, y, grad = run(SDPBackend.FLASH_ATTENTION, contiguous=False)
    _, y_ref, grad_ref = run(SDPBackend.MATH, contiguous=True)
    assert out.transpose(1, 2).is_contiguous()  # torch's layout for the attention output
    assert (y - y_ref).abs().max().item() < 2e-5
    assert (grad - grad_ref).abs().max().item() < 2e-5
