"""torch.nn pieces ember lacked (part 2): fractional max pooling, LPPool3d, MaxUnpool3d,
AdaptiveLogSoftmaxWithLoss, SyncBatchNorm (one process, and two processes through ember-run),
CrossMapLRN2d, NLLLoss2d.

References are numpy loops written from the definitions (torch's interval formula in float32 and
float64, torch's legacy LRN loops), closed forms and finite differences; PyTorch, where installed,
is an extra check. Run as a script, this file is the SyncBatchNorm worker the launcher starts."""
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn

HERE = os.path.dirname(os.path.abspath(__file__))


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


# ---- fractional max pooling -------------------------------------------------------------------------

def _intervals(u, size, out, pool, dt):
    """torch's generate_intervals in the dtype dt: int((i + u) * alpha) - int(u * alpha)."""
    seq = np.zeros(out, dtype=np.int64)
    if out > 1:
        alpha = dt(size - pool) / dt(out - 1)
        for i in range(out):
            seq[i] = int(dt((dt(i) + dt(u)) * alpha)) - int(dt(dt(u) * alpha))
    if out > 0:
        seq[out - 1] = size - pool
    return seq


def _fmp_ref(x, kernel, out, samples, dt):
    """Fractional max pooling of x (N, C, *spatial) by loops: each window scanned in order, the
    first maximum kept unless a NaN comes (the last NaN wins); samples 2-D (w, h), 3-D (t, h, w)."""
    n = len(kernel)
    N, C = x.shape[:2]
    sizes = x.shape[2:]
    order = (1, 0) if n == 2 else (0, 1, 2)
    val = np.zeros((N, C) + tuple(out), dtype=x.dtype)
    idx = np.zeros((N, C) + tuple(out), dtype=np.int64)
    for b in range(N):
        for c in range(C):
            starts = [_intervals(samples[b, c, order[d]], sizes[d], out[d], kernel[d], dt) for d in range(n)]
            for o in np.ndindex(*out):
                first = [starts[d][o[d]] for d in range(n)]
                best, best_i = -np.inf, int(np.ravel_multi_index(first, sizes))
                for k in np.ndindex(*kernel):
                    p = tuple(first[d] + k[d] for d in range(n))
                    v = x[(b, c) + p]
                    if v > best or np.isnan(v):
                        best, best_i = v, int(np.ravel_multi_index(p, sizes))
                val[(b, c) + o] = best
                idx[(b, c) + o] = best_i
    return val, idx


@pytest.mark.parametrize("n,dtype", [(2, np.float32), (2, np.float64), (3, np.float32), (3, np.float64)])
def test_fractional_max_pool_equals_the_reference_loops(n, dtype):
    rng = np.random.default_rng(n)
    for trial in range(6):
        sizes = rng.integers(3, 10 if n == 2 else 6, n)
        kernel = [int(rng.integers(1, 3)) for _ in range(n)]
        # torch's fit: out + k - 1 <= size in 2-D, < size in 3-D
        out = [int(rng.integers(1, s - k + (2 if n == 2 else 1))) for s, k in zip(sizes, kernel)]
        x = rng.standard_normal((2, 3) + tuple(sizes)).astype(dtype)
        if trial == 1:
            x = np.round(x)  # ties: the first maximum in scan order
        if trial == 2:
            x.reshape(-1)[::7] = np.nan
        samples = rng.random((2, 3, n)).astype(dtype)
        xe = ember.tensor(x, requires_grad=True)
        pool = F.fractional_max_pool2d if n == 2 else F.fractional_max_pool3d
        val, idx = pool(xe, kernel, output_size=out, return_indices=True, _random_samples=ember.tensor(samples))
        rval, ridx = _fmp_ref(x, kernel, out, samples, dtype)
        np.testing.assert_array_equal(idx.numpy(), ridx)
        np.testing.assert_array_equal(val.detach().numpy(), rval)
        # the gradient goes to the chosen elements (summed where windows share one)
        g = rng.standard_normal(val.shape).astype(dtype)
        (val * ember.tensor(g)).sum().backward()
        want = np.zeros((2, 3, int(np.prod(sizes))), dtype=dtype)
        for b, c in np.ndindex(2, 3):
            np.add.at(want[b, c], ridx[b, c].reshape(-1), g[b, c].reshape(-1))
        np.testing.assert_allclose(xe.grad.numpy().reshape(want.shape), want, rtol=1e-6)


def test_fractional_intervals_are_computed_in_the_input_dtype():
    """u = 0.0499993...: in float32 (torch's arithmetic for float input) the 19th window starts at
    19, in float64 at 18 -- so a float32 input must use float32 arithmetic."""
    u = np.float32(0.049999311566352844)
    assert _intervals(u, 21, 20, 1, np.float32)[18] == 19 and _intervals(u, 21, 20, 1, np.float64)[18] == 18
    x = np.arange(21, dtype=np.float32).reshape(1, 1, 1, 21)
    for dt, want in ((np.float32, 19), (np.float64, 18)):
        s = ember.tensor(np.array([[[u, 0.5]]], dtype=dt))
        _, idx = F.fractional_max_pool2d(ember.tensor(x.astype(dt)), (1, 1), output_size=(1, 20), return_indices=True,
                                         _random_samples=s)
        assert idx[0, 0, 0, 18].item() == want


def test_fractional_max_pool_options_modules_and_errors():
    x = ember.randn(2, 3, 9, 8)
    # output_ratio: int(size * ratio) windows; unbatched input; random samples by default
    assert tuple(F.fractional_max_pool2d(x, 2, output_ratio=(0.5, 0.75)).shape) == (2, 3, 4, 6)
    assert tuple(F.fractional_max_pool2d(x, 2, output_ratio=0.5).shape) == (2, 3, 4, 4)
    out, idx = F.fractional_max_pool2d_with_indices(x[0], 3, output_size=4)
    assert tuple(out.shape) == (3, 4, 4) and tuple(idx.shape) == (3, 4, 4)
    np.testing.assert_array_equal(out.numpy(), np.take_along_axis(x[0].numpy().reshape(3, -1),
                                                                  idx.numpy().reshape(3, -1), 1).reshape(3, 4, 4))
    assert tuple(F.fractional_max_pool3d(ember.randn(2, 5, 5, 6), 2, output_ratio=0.5).shape) == (2, 2, 2, 3)
    assert tuple(F.fractional_max_pool2d(x, 2, output_size=0).shape) == (2, 3, 0, 0)
    s = ember.rand(2, 3, 2)
    m = nn.FractionalMaxPool2d(3, output_size=(4, 5), return_indices=True, _random_samples=s)
    assert repr(m) == "FractionalMaxPool2d()" and list(m.state_dict()) == ["_random_samples"]
    mo, mi = m(x)
    fo, fi = F.fractional_max_pool2d(x, 3, (4, 5), None, True, _random_samples=s)
    assert (mo == fo).all() and (mi == fi).all()
    assert list(nn.FractionalMaxPool3d(2, output_ratio=0.5).state_dict()) == []
    assert nn.FractionalMaxPool3d(2, output_ratio=0.5).output_ratio == (0.5, 0.5, 0.5)
    errors = [
        (lambda: nn.FractionalMaxPool2d(2), ValueError,
         "FractionalMaxPool2d requires specifying either an output size, or a pooling ratio"),
        (lambda: nn.FractionalMaxPool2d(2, output_size=2, output_ratio=0.5), ValueError,
         "only one of output_size and output_ratio may be specified"),
        (lambda: nn.FractionalMaxPool2d(2, output_ratio=1.5), ValueError,
         "output_ratio must be between 0 and 1 (got 1.5)"),
        (lambda: nn.FractionalMaxPool3d(0, output_ratio=0.5), ValueError,
         "kernel_size must be greater than 0, but got 0"),
        (lambda: F.fractional_max_pool2d(x, 2), ValueError,
         "fractional_max_pool2d requires specifying either an output_size or an output_ratio"),
        (lambda: F.fractional_max_pool2d(x, 3, output_size=(8, 5)), RuntimeError,
         "fractional_max_pool2d(): pool height 3 too large relative to input height 9"),
        (lambda: F.fractional_max_pool2d(x, (2, 3), output_size=(4, 7)), RuntimeError,
         "fractional_max_pool2d(): pool width 3 too large relative to input width 8"),
        (lambda: F.fractional_max_pool3d(ember.randn(1, 1, 4, 4, 4), 2, output_size=3), RuntimeError,
         "fractional_max_pool3d_out(): pool time 2 too large relative to input time 4"),
        (lambda: F.fractional_max_pool2d(x, (0, 3), output_size=2), RuntimeError,
         "fractional_max_pool2d(): kernel size should be greater than zero, but got 0x3"),
        (lambda: F.fractional_max_pool2d(x.unsqueeze(0), 2, output_size=2), RuntimeError,
         "fractional_max_pool2d(): Expected 3D or 4D tensor, but got: [1, 2, 3, 9, 8]"),
        (lambda: F.fractional_max_pool2d(x, 2, output_size=2, _random_samples=ember.rand(1, 3, 2)), RuntimeError,
         "Expect _random_samples.size(0) no less then input batch size."),
        (lambda: F.fractional_max_pool2d(x, 2, output_size=2, _random_samples=ember.rand(2, 2, 2)), RuntimeError,
         "Expect _random_samples.size(1) equals to input channel size."),
        (lambda: F.fractional_max_pool2d(x, 2, output_size=2, _random_samples=ember.rand(2, 3, 3)), RuntimeError,
         "Expect _random_samples.size(2) equals to 2; got 3."),
        (lambda: F.fractional_max_pool2d(x, 2, output_size=2, _random_samples=ember.rand(2, 3, 2).double()),
         RuntimeError, "Expect _random_samples to have the same dtype as input"),
        (lambda: F.fractional_max_pool2d(x, 2, output_size=(2, 2, 2)), RuntimeError,
         "fractional_max_pool2d: output_size must either be a single Int or tuple of Ints"),
    ]
    for fn, exc, msg in errors:
        with pytest.raises(exc) as info:
            fn()
        assert str(info.value) == msg


def test_fractional_max_pool_matches_torch():
    torch = _torch()
    if torch is None:
        pytest.skip("PyTorch not installed")
    rng = np.random.default_rng(7)
    for n in (2, 3):
        x = rng.standard_normal((2, 3, 11, 9, 8)[:2 + n]).astype(np.float32)
        s = rng.random((2, 3, n)).astype(np.float32)
        out = (5, 6, 4)[:n]
        tf = torch.nn.functional.fractional_max_pool2d if n == 2 else torch.nn.functional.fractional_max_pool3d
        ef = F.fractional_max_pool2d if n == 2 else F.fractional_max_pool3d
        to, ti = tf(torch.tensor(x), 3, output_size=out, return_indices=True, _random_samples=torch.tensor(s))
        eo, ei = ef(ember.tensor(x), 3, output_size=out, return_indices=True, _random_samples=ember.tensor(s))
        np.testing.assert_array_equal(ei.numpy(), ti.numpy())
        np.testing.assert_array_equal(eo.numpy(), to.numpy())


# ---- LPPool3d and MaxUnpool3d ----------------------------------------------------------------------

def test_lp_pool3d_equals_window_power_sums():
    rng = np.random.default_rng(8)
    x = np.abs(rng.standard_normal((2, 2, 5, 6, 7))) + 0.1
    k, s = (2, 3, 2), (1, 2, 2)
    for p in (1.0, 2.0, 3.5):
        xe = ember.tensor(x, requires_grad=True)
        got = F.lp_pool3d(xe, p, k, stride=s)
        out = [(5 - 2) // 1 + 1, (6 - 3) // 2 + 1, (7 - 2) // 2 + 1]
        want = np.zeros((2, 2) + tuple(out))
        for o in np.ndindex(*out):
            win = x[:, :, o[0]:o[0] + 2, 2 * o[1]:2 * o[1] + 3, 2 * o[2]:2 * o[2] + 2]
            want[(slice(None), slice(None)) + o] = (win ** p).sum(axis=(2, 3, 4)) ** (1 / p)
        np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-10)
        # gradient of (sum x^p)^(1/p): x^(p-1) * out^(1-p), summed over the windows holding x
        got.sum().backward()
        g = np.zeros_like(x)
        for o in np.ndindex(*out):
            sl = (slice(None), slice(None), slice(o[0], o[0] + 2), slice(2 * o[1], 2 * o[1] + 3),
                  slice(2 * o[2], 2 * o[2] + 2))
            g[sl] += x[sl] ** (p - 1) * want[(slice(None), slice(None)) + o][..., None, None, None] ** (1 - p)
        np.testing.assert_allclose(xe.grad.numpy(), g, rtol=1e-8)
    xs = ember.tensor(rng.standard_normal((1, 1, 4, 4, 4)))
    np.testing.assert_array_equal(F.lp_pool3d(xs, float("inf"), 2).numpy(), F.max_pool3d(xs.abs(), 2).numpy())
    m = nn.LPPool3d(2, 2, stride=1)
    assert repr(m) == "LPPool3d(norm_type=2, kernel_size=2, stride=1, ceil_mode=False)"
    np.testing.assert_allclose(m(ember.tensor(x)).numpy(), F.lp_pool3d(ember.tensor(x), 2.0, 2, 1).numpy())
    with pytest.raises(ValueError, match="norm_type must be a non-zero value, but got 0"):
        nn.LPPool3d(0, 2)
    with pytest.raises(ValueError, match="norm_type must be a non-zero value, but got 0"):
        F.lp_pool3d(xs, 0, 2)


def test_max_unpool3d_places_values_at_their_indices():
    rng = np.random.default_rng(9)
    x = ember.tensor(rng.standard_normal((2, 3, 4, 6, 6)), requires_grad=True)
    pooled, idx = F.max_pool3d(x, 2, return_indices=True)
    up = F.max_unpool3d(pooled, idx, 2)
    want = np.zeros((2, 3, 4 * 6 * 6))
    for b, c in np.ndindex(2, 3):
        want[b, c, idx[b, c].numpy().reshape(-1)] = pooled[b, c].detach().numpy().reshape(-1)
    np.testing.assert_array_equal(up.detach().numpy(), want.reshape(2, 3, 4, 6, 6))
    # each maximum survives, everything else is zero
    assert int((up != 0).sum()) == pooled.numel()
    up.sum().backward()
    assert float(x.grad.sum()) == pooled.numel()
    big = F.max_unpool3d(pooled, idx, 2, output_size=(5, 7, 7))
    assert tuple(big.shape) == (2, 3, 5, 7, 7)
    m = nn.MaxUnpool3d(2)
    assert repr(m) == "MaxUnpool3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), padding=(0, 0, 0))"
    assert (m(pooled, idx, output_size=[2, 3, 4, 6, 6]) == up).all()
    with pytest.raises(ValueError, match="output_size should be a sequence containing 3 or 5 elements, but it has "
                                         "a length of '2'"):
        F.max_unpool3d(pooled, idx, 2, output_size=(2, 3))
    with pytest.raises(ValueError, match=re.escape('invalid output_size "(9, 9, 9)" (dim 0 must be between 2 and 6)')):
        F.max_unpool3d(pooled, idx, 2, output_size=(9, 9, 9))


# ---- AdaptiveLogSoftmaxWithLoss ----------------------------------------------------------------------

def _asm_full_log_prob(m, x):
    """Every class's log probability from the module's weights, in numpy."""
    def lsm(a):
        a = a - a.max(1, keepdims=True)
        return a - np.log(np.exp(a).sum(1, keepdims=True))
    W = m.head.weight.detach().numpy()
    head = x @ W.T + (m.head.bias.detach().numpy() if m.head.bias is not None else 0)
    hl = lsm(head)
    parts = [hl[:, :m.shortlist_size]]
    for i, seq in enumerate(m.tail):
        h = x @ seq[0].weight.detach().numpy().T @ seq[1].weight.detach().numpy().T
        parts.append(lsm(h) + hl[:, m.shortlist_size + i:m.shortlist_size + i + 1])
    return np.concatenate(parts, 1)


def test_adaptive_log_softmax_equals_the_two_level_factorisation():
    m = nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 9, 15], div_value=2.0, head_bias=True).double()
    assert list(m.state_dict()) == ["head.weight", "head.bias", "tail.0.0.weight", "tail.0.1.weight",
                                    "tail.1.0.weight", "tail.1.1.weight", "tail.2.0.weight", "tail.2.1.weight"]
    assert [tuple(v.shape) for v in m.state_dict().values()] == [(7, 16), (7,), (8, 16), (5, 8), (4, 16), (6, 4),
                                                                 (2, 16), (5, 2)]
    rng = np.random.default_rng(10)
    x = rng.standard_normal((12, 16))
    t = np.array([0, 3, 4, 8, 9, 14, 15, 19, 2, 10, 16, 5])
    full = _asm_full_log_prob(m, x)
    np.testing.assert_allclose(np.exp(full).sum(1), 1, rtol=1e-12)  # a distribution over the 20 classes
    xe = ember.tensor(x, requires_grad=True)
    res = m(xe, ember.tensor(t))
    assert type(res).__name__ == "_ASMoutput" and res._fields == ("output", "loss")
    np.testing.assert_allclose(res.output.detach().numpy(), full[np.arange(12), t], rtol=1e-12)
    assert res.loss.item() == pytest.approx(-full[np.arange(12), t].mean(), rel=1e-12)
    np.testing.assert_allclose(m.log_prob(ember.tensor(x)).detach().numpy(), full, rtol=1e-12)
    np.testing.assert_array_equal(m.predict(ember.tensor(x)).numpy(), full.argmax(1))
    # the input gradient by central differences of the reference
    res.loss.backward()
    num = np.zeros_like(x)
    for i in (0, 5, 11):
        for j in range(16):
            up, down = x.copy(), x.copy()
            up[i, j] += 1e-6
            down[i, j] -= 1e-6
            num[i, j] = (-_asm_full_log_prob(m, up)[np.arange(12), t].mean()
                         + _asm_full_log_prob(m, down)[np.arange(12), t].mean()) / 2e-6
        np.testing.assert_allclose(xe.grad.numpy()[i], num[i], atol=1e-8)
    assert m.head.weight.grad is not None and m.tail[2][1].weight.grad is not None
    # unbatched
    one = m(ember.tensor(x[3]), ember.tensor(t[3]))
    assert one.output.dim() == 0 and one.output.item() == pytest.approx(full[3, t[3]], rel=1e-12)


def test_adaptive_log_softmax_errors_and_torch_state_dicts():
    m = nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 9])
    for cut in ([], [4, 4], [0, 3], [3, 25], [5, 3]):
        with pytest.raises(ValueError, match="cutoffs should be"):
            nn.AdaptiveLogSoftmaxWithLoss(16, 20, cut)
    with pytest.raises(RuntimeError, match=re.escape("Target values should be in [0, 19], but values in range "
                                                     "[0, 25] were found.")):
        m(ember.zeros(2, 16), ember.tensor([0, 25]))
    with pytest.raises(RuntimeError, match="Input and target should have the same size in the batch dimension."):
        m(ember.zeros(3, 16), ember.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="0D or 1D target tensor expected, multi-target not supported"):
        m(ember.zeros(3, 16), ember.zeros(3, 1, dtype=ember.int64))
    torch = _torch()
    if torch is None:
        return
    tm = torch.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 9]).double()
    m = m.double()
    assert repr(tm) == repr(m)
    m.load_state_dict({k: ember.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    x = np.random.default_rng(11).standard_normal((6, 16))
    t = np.array([0, 5, 9, 19, 3, 12])
    ours, theirs = m(ember.tensor(x), ember.tensor(t)), tm(torch.tensor(x), torch.tensor(t))
    np.testing.assert_allclose(ours.output.detach().numpy(), theirs.output.detach().numpy(), rtol=1e-12)


# ---- SyncBatchNorm -------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(8, 3), (4, 3, 5), (2, 3, 4, 4)])
def test_sync_batch_norm_is_batch_norm_in_one_process(shape):
    x = ember.randn(*shape, dtype=ember.float64) * 3 + 1
    bn = (nn.BatchNorm1d if len(shape) < 4 else nn.BatchNorm2d)(3, momentum=None).double()
    sbn = nn.SyncBatchNorm(3, momentum=None).double()
    with ember.no_grad():
        for mod in (bn, sbn):
            mod.weight.copy_(ember.tensor([0.5, 2.0, -1.0], dtype=ember.float64))
            mod.bias.copy_(ember.tensor([0.1, 0.0, 0.3], dtype=ember.float64))
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    ya, yb = bn(xa), sbn(xb)
    np.testing.assert_array_equal(yb.detach().numpy(), ya.detach().numpy())
    # closed form: (x - mean) / sqrt(var + eps) * w + b, statistics over every axis but 1
    dims = (0,) + tuple(range(2, len(shape)))
    xn = x.numpy()
    norm = (xn - xn.mean(dims, keepdims=True)) / np.sqrt(xn.var(dims, keepdims=True) + 1e-5)
    cshape = [1, 3] + [1] * (len(shape) - 2)
    want = norm * np.reshape([0.5, 2.0, -1.0], cshape) + np.reshape([0.1, 0.0, 0.3], cshape)
    np.testing.assert_allclose(yb.detach().numpy(), want, rtol=1e-10, atol=1e-12)
    (ya ** 3).sum().backward()
    (yb ** 3).sum().backward()
    np.testing.assert_array_equal(xb.grad.numpy(), xa.grad.numpy())
    np.testing.assert_array_equal(sbn.running_var.numpy(), bn.running_var.numpy())
    assert int(sbn.num_batches_tracked) == 1
    sbn.eval()
    np.testing.assert_array_equal(sbn(x).detach().numpy(), bn.eval()(x).detach().numpy())


def test_sync_batch_norm_conversion_repr_and_errors():
    model = nn.Sequential(nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3), nn.Sequential(nn.BatchNorm1d(4, affine=False)))
    model[1].running_mean.fill_(0.25)
    w, rm = model[1].weight, model[1].running_mean
    model.eval()
    conv = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert conv is model and type(conv[1]) is nn.SyncBatchNorm and type(conv[2][0]) is nn.SyncBatchNorm
    assert conv[1].weight is w and conv[1].running_mean is rm and not conv[1].training
    assert conv[2][0].weight is None and conv[2][0].num_features == 4
    assert type(nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm3d(2))) is nn.SyncBatchNorm
    assert repr(nn.SyncBatchNorm(3)) == "SyncBatchNorm(3, eps=1e-05, momentum=0.1, affine=True, " \
                                        "track_running_stats=True)"
    assert nn.SyncBatchNorm(3, process_group="g").process_group == "g"
    with pytest.raises(ValueError, match=re.escape("expected at least 2D input (got 1D input)")):
        nn.SyncBatchNorm(3)(ember.zeros(3))
    with pytest.raises(ValueError, match="SyncBatchNorm number of input channels should be non-zero"):
        nn.SyncBatchNorm(0)(ember.zeros(3, 0))


def _sync_worker():
    """Two ranks, each with half of one batch: SyncBatchNorm's outputs, input gradients, summed
    parameter gradients and running statistics equal BatchNorm's on the whole batch."""
    import ember.distributed as dist
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    assert dist.get_world_size() == 2
    ember.manual_seed(0)
    x = ember.randn(6, 3, 4, dtype=ember.float64) * 2 + 0.5  # the same on every rank
    g = ember.randn(6, 3, 4, dtype=ember.float64)
    bn = nn.BatchNorm1d(3).double()
    with ember.no_grad():
        bn.weight.copy_(ember.tensor([1.5, -0.5, 2.0], dtype=ember.float64))
    sbn = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.BatchNorm1d(3)))[0].double()
    sbn.load_state_dict(bn.state_dict())
    full = x.clone().requires_grad_()
    y = bn(full)
    (y * g).sum().backward()
    rows = slice(3 * rank, 3 * rank + 3)
    half = x[rows].clone().requires_grad_()
    ys = sbn(half)
    (ys * g[rows]).sum().backward()
    np.testing.assert_allclose(ys.detach().numpy(), y.detach().numpy()[rows], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(half.grad.numpy(), full.grad.numpy()[rows], rtol=1e-10, atol=1e-12)
    for p_sync, p_full in ((sbn.weight, bn.weight), (sbn.bias, bn.bias)):
        total = p_sync.grad.clone()
        dist.all_reduce(total)
        np.testing.assert_allclose(total.numpy(), p_full.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(sbn.running_mean.numpy(), bn.running_mean.numpy(), rtol=1e-12)
    np.testing.assert_allclose(sbn.running_var.numpy(), bn.running_var.numpy(), rtol=1e-12)
    dist.destroy_process_group()
    print(f"OK {rank}", flush=True)


def test_sync_batch_norm_over_two_processes_equals_batch_norm_over_the_whole_batch():
    import ember.distributed as dist
    if not dist.is_available():
        pytest.skip("ember built without Gloo (EMBER_DISTRIBUTED off)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, "-m", "ember.distributed.run", "--standalone", "--nproc_per_node=2",
                           os.path.abspath(__file__), "sync_batch_norm"], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(int(r) for r in re.findall(r"OK (\d+)", proc.stdout)) == [0, 1], proc.stdout


# ---- CrossMapLRN2d and NLLLoss2d ---------------------------------------------------------------------

def _cross_map_lrn_ref(x, go, size, alpha, beta, k):
    """torch's legacy CrossMapLRN2d loops (nn/_functions.py), forward and backward, in numpy."""
    N, C = x.shape[:2]
    sq = x * x
    scale = np.zeros_like(x)
    pre_pad = int((size - 1) / 2 + 1)
    for c in range(min(pre_pad, C)):
        scale[:, 0] += sq[:, c]
    for c in range(1, C):
        scale[:, c] = scale[:, c - 1]
        if c < C - pre_pad + 1:
            scale[:, c] += sq[:, c + pre_pad - 1]
        if c > pre_pad:
            scale[:, c] -= sq[:, c - pre_pad]
    scale = scale * alpha / size + k
    out = scale ** -beta * x
    grad = scale ** -beta * go
    inv = int(size - (size - 1) / 2)
    for n in range(N):
        padded = np.zeros((C + size - 1,) + x.shape[2:])
        padded[inv:inv + C] = go[n] * out[n] / scale[n]
        acc = padded[:size - 1].sum(0)
        for c in range(C):
            acc = acc + padded[c + size - 1]
            grad[n, c] -= 2 * alpha * beta / size * x[n, c] * acc
            acc = acc - padded[c]
    return out, grad


@pytest.mark.parametrize("size,channels", [(2, 3), (3, 7), (4, 5), (5, 9)])
def test_cross_map_lrn2d_equals_torchs_legacy_loops(size, channels):
    rng = np.random.default_rng(size * 10 + channels)
    x = rng.standard_normal((2, channels, 3, 4))
    go = rng.standard_normal(x.shape)
    xe = ember.tensor(x, requires_grad=True)
    m = nn.CrossMapLRN2d(size, alpha=0.05, beta=0.75, k=1.5)
    y = m(xe)
    (y * ember.tensor(go)).sum().backward()
    out, grad = _cross_map_lrn_ref(x, go, size, 0.05, 0.75, 1.5)
    np.testing.assert_allclose(y.detach().numpy(), out, rtol=1e-12)
    np.testing.assert_allclose(xe.grad.numpy(), grad, rtol=1e-10, atol=1e-12)
    assert repr(m) == f"CrossMapLRN2d({size}, alpha=0.05, beta=0.75, k=1.5)"
    with pytest.raises(ValueError, match="CrossMapLRN2d: Expected input to be 4D, got 3D instead."):
        m(ember.zeros(2, 3, 4))


def test_nll_loss2d_is_a_deprecated_nll_loss():
    with pytest.warns(FutureWarning, match="`NLLLoss2d` has been deprecated"):
        crit = nn.NLLLoss2d(ignore_index=1, reduction="sum")
    assert isinstance(crit, nn.NLLLoss) and crit.ignore_index == 1
    rng = np.random.default_rng(12)
    lp = np.log(rng.dirichlet(np.ones(4), size=(2, 3, 5)))  # (N, H, W, C)
    t = rng.integers(0, 4, (2, 3, 5))
    got = crit(ember.tensor(lp.transpose(0, 3, 1, 2)), ember.tensor(t)).item()
    picked = np.take_along_axis(lp, t[..., None], 3)[..., 0]
    assert got == pytest.approx(-(picked * (t != 1)).sum(), rel=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.NLLLoss()  # the plain one does not warn


if __name__ == "__main__":  # the launcher's worker
    {"sync_batch_norm": _sync_worker}[sys.argv[1]]()
