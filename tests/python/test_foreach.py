"""torch._foreach_norm / torch._foreach_mul_ (multi-tensor ops) against PyTorch on the CPU and, on a
GPU, ember's CUDA kernels against its CPU loop; clip_grad_norm_ through them."""
import math

import numpy as np
import pytest
import torch

import ember

NO_GPU = "no CUDA GPU on this machine: the CUDA backend compiled but did not run"
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not ember.cuda.is_available(), reason=NO_GPU))]


def arrays(seed=0, count=53):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(n).astype(np.float32) for n in [1, 5, 4097, 20000] + list(range(7, 7 + count))]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("ord", [2.0, 1.0, math.inf, 3.0])
def test_foreach_norm_matches_torch(device, ord):
    xs = arrays()
    got = ember._foreach_norm([ember.tensor(x, device=device) for x in xs], ord)
    want = torch._foreach_norm([torch.tensor(x) for x in xs], ord)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == () and g.dtype == ember.float32
        np.testing.assert_allclose(g.item(), w.item(), rtol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_foreach_mul_in_place(device):
    xs = arrays(1, 60)
    ts = [ember.tensor(x, device=device) for x in xs]
    ember._foreach_mul_(ts, ember.tensor(0.5, device=device))
    ember._foreach_mul_(ts, 3)
    for t, x in zip(ts, xs):
        np.testing.assert_allclose(t.cpu().numpy(), x * 1.5, rtol=1e-6)


def test_foreach_errors():
    with pytest.raises(RuntimeError, match="at least one tensor"):
        ember._foreach_norm([])
    with pytest.raises(RuntimeError, match="one element"):
        ember._foreach_mul_([ember.zeros(2)], ember.zeros(2))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("norm_type", [2.0, math.inf])
def test_clip_grad_norm_many_parameters(device, norm_type):
    """More gradients than one CUDA batch (48), as a GPT's 149: total norm and scaled gradients as torch."""
    xs = arrays(2, 70)
    ps, tps = [], []
    for x in xs:
        p = ember.zeros(x.shape, device=device, requires_grad=True)
        p.grad = ember.tensor(x, device=device)
        ps.append(p)
        tp = torch.zeros(x.shape, requires_grad=True)
        tp.grad = torch.tensor(x)
        tps.append(tp)
    total = ember.nn.utils.clip_grad_norm_(ps, 0.5, norm_type)
    want = torch.nn.utils.clip_grad_norm_(tps, 0.5, norm_type)
    np.testing.assert_allclose(total.item(), want.item(), rtol=1e-5)
    for p, tp in zip(ps, tps):
        np.testing.assert_allclose(p.grad.cpu().numpy(), tp.grad.numpy(), rtol=1e-5, atol=1e-7)
