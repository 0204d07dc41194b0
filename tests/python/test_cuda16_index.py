"""Indexing, sorting and the copying shape/range ops on every device (issue 16): index_select,
gather, scatter(_add), index_add, advanced indexing and index_put_ (masks, accumulate), nonzero,
sort/argsort/topk/unique, searchsorted, bincount, flip/tril/triu/roll/cat/repeat, arange and
linspace. Each test runs on the CPU and on CUDA (skipped without a GPU) and compares the result,
brought back to the host, with PyTorch on the CPU (skipped without torch), dtypes and shapes
included. Out-of-range indices: an IndexError on the CPU, a device-side assert on CUDA."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember

DEVICES = ["cpu", "cuda"]
ALL_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def need(device):
    if device == "cuda" and not ember.cuda.is_available():
        pytest.skip("no CUDA GPU on this machine: the CUDA backend compiled but did not run")


def as_torch(torch, t):
    """An ember tensor (any device) as a torch CPU tensor of the same dtype."""
    t = t.cpu()
    if t.dtype == ember.bfloat16:
        return torch.from_numpy(t.float().numpy()).bfloat16()
    return torch.from_numpy(np.array(t.numpy()))


def from_torch(t, device):
    """A torch CPU tensor as an ember tensor on `device`."""
    if str(t.dtype) == "torch.bfloat16":  # NumPy has no bfloat16
        return ember.from_numpy(t.float().numpy()).bfloat16().to(device)
    return ember.from_numpy(t.numpy().copy()).to(device)


def check(torch, got, want, device):
    """got (ember, on `device`) equals want (torch): device, dtype, shape and values, NaN where
    want has NaN (-0.0 and 0.0 compare equal)."""
    assert got.device.type == device
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], (got.dtype, want.dtype)
    assert tuple(got.shape) == tuple(want.shape)
    g = as_torch(torch, got)
    if want.dtype in (torch.float16, torch.bfloat16):
        g, want = g.float(), want.float()
    assert torch.equal(g.isnan(), want.isnan()) if want.is_floating_point() else True
    if want.is_floating_point():
        mask = ~want.isnan()
        assert torch.equal(g[mask], want[mask]), (g, want)
    else:
        assert torch.equal(g, want), (g, want)


def values(torch, shape, dtype, specials=False, gen=None):
    """Small integer-valued data (exact in every dtype), with ties; NaN/-0.0/inf when asked."""
    dt = getattr(torch, dtype)
    if dtype == "bool":
        return torch.randint(0, 2, shape, generator=gen).bool()
    if dtype == "uint8":
        return torch.randint(0, 50, shape, generator=gen).to(dt)
    x = torch.randint(-8, 9, shape, generator=gen).to(torch.float64) * (0.5 if dt.is_floating_point else 1)
    if specials and dt.is_floating_point and x.numel() >= 4:
        f = x.view(-1)
        f[0], f[-1], f[1], f[2] = float("nan"), -0.0, float("inf"), float("-inf")
        f[x.numel() // 2] = float("nan")
    return x.to(dt)


@pytest.fixture
def gen(torch_ref):
    return torch_ref.Generator().manual_seed(16)


# ---------------------------------------------------------------- index_select / gather / scatter

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_index_select(device, dtype, torch_ref, gen):
    need(device)
    torch = torch_ref
    for shape, dim in [((5,), 0), ((4, 6), 1), ((3, 4, 5), 0), ((3, 4, 5), -1), ((2, 0, 3), 2)]:
        x = values(torch, shape, dtype, gen=gen)
        n = x.shape[dim]
        for idx_dtype in (torch.int64, torch.int32):
            idx = torch.randint(0, max(n, 1), (7,), generator=gen).to(idx_dtype) if n else torch.zeros(0, dtype=idx_dtype)
            want = torch.index_select(x, dim, idx)
            got = ember.index_select(from_torch(x, device), dim, from_torch(idx, device))
            check(torch, got, want, device)
    # a transposed (non-contiguous) source and a 0-dim one
    x = values(torch, (6, 4), dtype, gen=gen).t()
    idx = torch.tensor([3, 0, 3, 1])
    check(torch, from_torch(x, device).t().contiguous().t().index_select(1, from_torch(idx, device)),
          x.index_select(1, idx), device)
    s = values(torch, (), dtype, gen=gen)
    check(torch, from_torch(s, device).index_select(0, from_torch(torch.tensor([0]), device)),
          s.index_select(0, torch.tensor([0])), device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int8", "bool", "float16"])
def test_gather_and_scatter(device, dtype, torch_ref, gen):
    need(device)
    torch = torch_ref
    x = values(torch, (4, 5, 3), dtype, gen=gen)
    xe = from_torch(x, device)
    for dim in range(3):
        ishape = [2, 3, 2]
        ishape[dim] = 6
        idx = torch.randint(0, x.shape[dim], ishape, generator=gen)
        check(torch, ember.gather(xe, dim, from_torch(idx, device)), torch.gather(x, dim, idx), device)
        # scatter with distinct targets per column: a permutation along dim, cut
        perm = torch.rand(x.shape, generator=gen).argsort(dim=dim).narrow(dim, 0, 2)
        src = values(torch, perm.shape, dtype, gen=gen)
        check(torch, ember.scatter(xe, dim, from_torch(perm, device), from_torch(src, device)),
              torch.scatter(x, dim, perm, src), device)
        check(torch, xe.scatter(dim, from_torch(perm, device), 1), x.scatter(dim, perm, 1), device)
        if dtype not in ("bool", "float16"):
            # duplicates accumulate (integer-valued data: exact in any order)
            src = values(torch, idx.shape, dtype, gen=gen)
            check(torch, ember.scatter_add(xe, dim, from_torch(idx, device), from_torch(src, device)),
                  torch.scatter_add(x, dim, idx, src), device)
    # int32 index, transposed index
    idx = torch.randint(0, 4, (5, 4), generator=gen).t()
    check(torch, ember.gather(xe[:, :, 0], 0, from_torch(idx.contiguous(), device).to(ember.int32)),
          torch.gather(x[:, :, 0], 0, idx), device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "int16", "uint8", "float16", "bfloat16"])
def test_index_add(device, dtype, torch_ref, gen):
    need(device)
    torch = torch_ref
    x = values(torch, (5, 4), dtype, gen=gen)
    for dim, idx, alpha in [(0, torch.tensor([0, 4, 0, 2, 0]), 1), (1, torch.tensor([3, 3, 1], dtype=torch.int32), 2)]:
        shape = [5, 4]
        shape[dim] = len(idx)
        src = values(torch, shape, dtype, gen=gen)
        if dtype in ("float16", "bfloat16"):
            src = src.float().abs().clamp(max=2).to(src.dtype)  # small sums stay exact
        want = x.index_add(dim, idx, src, alpha=alpha)
        got = from_torch(x, device).index_add(dim, from_torch(idx, device), from_torch(src, device), alpha=alpha)
        check(torch, got, want, device)


# ---------------------------------------------------------------- advanced indexing

def index_cases(torch, gen):
    t = torch.tensor
    return [
        (t([2, 0, 2]),),
        (slice(None), t([-1, 1])),
        (t([[0, 1], [2, 2]]), t([1, 0])),                 # broadcast index tensors
        (t([0, 2]), slice(None), t([1, 3])),              # non-adjacent: index dims first
        (Ellipsis, t([0, 3, 3])),
        (None, t([1]), slice(1, 3)),
        (torch.rand(3, 4, generator=gen) > 0.5,),         # mask over two dims
        (slice(None), torch.rand(4, generator=gen) > 0.3),
        (t(True),),
        (1, t([0, 0, 3])),
        (t([0, 2], dtype=torch.int32), t([1, 1], dtype=torch.int32)),
    ]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "float16", "float64"])
def test_getitem_advanced(device, dtype, torch_ref, gen):
    need(device)
    torch = torch_ref
    x = values(torch, (3, 4, 5), dtype, gen=gen)
    xe = from_torch(x, device)
    for case in index_cases(torch, gen):
        # (torch 1.13 refuses int32 index tensors: its reference indexes with int64)
        want = x[tuple(c.long() if isinstance(c, torch.Tensor) and c.dtype == torch.int32 else c for c in case)]
        as_e = tuple(from_torch(c, device) if isinstance(c, torch.Tensor) else c for c in case)
        check(torch, xe[as_e], want, device)
        # host index tensors work on a GPU tensor too
        as_host = tuple(from_torch(c, "cpu") if isinstance(c, torch.Tensor) else c for c in case)
        check(torch, xe[as_host], want, device)
    check(torch, xe[[2, 0]], x[[2, 0]], device)
    check(torch, ember.masked_select(xe, xe.to(ember.float32) > 0), torch.masked_select(x, x.float() > 0), device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "int32", "float64", "int8"])
def test_setitem_and_index_put(device, dtype, torch_ref, gen):
    need(device)
    torch = torch_ref
    x = values(torch, (3, 4, 5), dtype, gen=gen)
    t = torch.tensor
    for case in [(t([2, 0]),), (slice(None), t([3, 1])), (t([0, 2]), slice(None), t([4, 0])),
                 (torch.rand(3, 4, generator=gen) > 0.5,), (Ellipsis, t([-1]))]:
        v = values(torch, x[case].shape, dtype, gen=gen)
        a, b = x.clone(), from_torch(x, device)
        a[case] = v
        b[tuple(from_torch(c, device) if isinstance(c, torch.Tensor) else c for c in case)] = from_torch(v, device)
        check(torch, b, a, device)
        a[case] = 3
        b[tuple(from_torch(c, device) if isinstance(c, torch.Tensor) else c for c in case)] = 3
        check(torch, b, a, device)
    # accumulate with repeated indices
    idx = (t([0, 2, 0, 0]), t([1, 1, 1, 3]))
    v = values(torch, (4, 5), dtype, gen=gen)
    want = x.index_put(idx, v, accumulate=True)
    got = from_torch(x, device).index_put(tuple(from_torch(i, device) for i in idx), from_torch(v, device), accumulate=True)
    check(torch, got, want, device)
    # a 0-dim host value on a GPU tensor
    want = x.index_put((t([1]),), t(5).to(x.dtype))
    got = from_torch(x, device).index_put((from_torch(t([1]), device),), from_torch(t(5).to(x.dtype), "cpu"))
    check(torch, got, want, device)


@pytest.mark.parametrize("device", DEVICES)
def test_index_gradients(device, torch_ref, gen):
    need(device)
    torch = torch_ref
    x = torch.randn(5, 3, dtype=torch.float64, generator=gen, requires_grad=True)
    idx = torch.tensor([4, 0, 4, 1])
    y = (x[idx] * torch.arange(12.0, dtype=torch.float64).view(4, 3)).sum() + x.index_select(0, idx).sum() \
        + torch.gather(x, 1, idx.view(2, 2) % 3).sum()
    y.backward()
    xe = from_torch(x.detach(), device).requires_grad_()
    ie = from_torch(idx, device)
    ye = (xe[ie] * ember.arange(12.0, dtype=ember.float64, device=device).view(4, 3)).sum() \
        + xe.index_select(0, ie).sum() + ember.gather(xe, 1, ie.view(2, 2) % 3).sum()
    ye.backward()
    check(torch, xe.grad, x.grad, device)
    # sort / topk backward scatters the gradient back
    x.grad = None
    torch.sort(x, dim=0)[0][1:].sum().backward()
    xe.grad = None
    ember.sort(xe, dim=0)[0][1:].sum().backward()
    check(torch, xe.grad, x.grad, device)


# ---------------------------------------------------------------- nonzero

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_nonzero(device, dtype, torch_ref, gen):
    need(device)
    torch = torch_ref
    for shape in [(7,), (3, 4), (2, 3, 4), (2, 0, 3), ()]:
        x = values(torch, shape, dtype, specials=True, gen=gen)
        xe = from_torch(x, device)
        check(torch, ember.nonzero(xe), torch.nonzero(x), device)
        check(torch, ember.argwhere(xe), torch.argwhere(x), device)
    x = values(torch, (4, 6), dtype, gen=gen).t()  # strided
    check(torch, ember.nonzero(from_torch(x.contiguous(), device).t().contiguous().t()), torch.nonzero(x), device)
    z = torch.tensor([0.0, -0.0, float("nan"), 2.0])
    check(torch, ember.nonzero(from_torch(z, device)), torch.nonzero(z), device)


# ---------------------------------------------------------------- sort, topk, unique

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_sort_matches_a_stable_sort(device, dtype, torch_ref, gen):
    need(device)
    torch = torch_ref
    for shape, dim in [((50,), 0), ((4, 9), 1), ((4, 9), 0), ((2, 3, 300), -1), ((3, 1), 1), ((), 0), ((0, 4), 1)]:
        x = values(torch, shape, dtype, specials=True, gen=gen)
        if dtype in ("bfloat16",):  # torch 1.13 cannot sort bfloat16 on the CPU: compare in float
            ref = x.float()
        else:
            ref = x
        xe = from_torch(x, device)
        for descending in (False, True):
            wv, wi = torch.sort(ref, dim=dim, descending=descending, stable=True)
            gv, gi = ember.sort(xe, dim=dim, descending=descending)
            check(torch, gi, wi, device)
            check(torch, gv, wv.to(x.dtype), device)
            check(torch, ember.argsort(xe, dim=dim, descending=descending, stable=True), wi, device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int16", "float16", "uint8"])
def test_topk_is_the_head_of_a_stable_sort(device, dtype, torch_ref, gen):
    need(device)
    torch = torch_ref
    x = values(torch, (3, 40), dtype, specials=True, gen=gen)
    xe = from_torch(x, device)
    for k in (0, 1, 5, 40):
        for largest in (True, False):
            wv, wi = torch.sort(x, dim=1, descending=largest, stable=True)
            gv, gi = ember.topk(xe, k, dim=1, largest=largest)
            check(torch, gv, wv[:, :k], device)
            check(torch, gi, wi[:, :k], device)
    gv, gi = ember.topk(from_torch(x.t().contiguous(), device), 3, dim=0)
    wv, wi = torch.sort(x.t(), dim=0, descending=True, stable=True)
    check(torch, gv, wv[:3], device)
    check(torch, gi, wi[:3], device)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        ember.topk(xe, 41)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "float16", "int8"])
def test_unique(device, dtype, torch_ref, gen):
    need(device)
    torch = torch_ref
    x = values(torch, (4, 6), dtype, gen=gen)
    xe = from_torch(x, device)
    ref = x.float() if dtype == "float16" else x  # torch 1.13 has no unique for Half on the CPU
    wv, wi, wc = torch.unique(ref, sorted=True, return_inverse=True, return_counts=True)
    wv = wv.to(x.dtype)
    gv, gi, gc = ember.unique(xe, sorted=True, return_inverse=True, return_counts=True)
    check(torch, gv, wv, device)
    check(torch, gi, wi, device)
    check(torch, gc, wc, device)
    check(torch, ember.unique(xe), torch.unique(ref).to(x.dtype), device)
    if dtype != "float16":  # torch 1.13 has no unique_dim for Half on the CPU
        rows = x[torch.tensor([0, 2, 0, 1, 2])]
        wv, wi, wc = torch.unique(rows, dim=0, return_inverse=True, return_counts=True)
        gv, gi, gc = ember.unique(from_torch(rows, device), dim=0, return_inverse=True, return_counts=True)
        check(torch, gv, wv, device)
        check(torch, gi, wi, device)
        check(torch, gc, wc, device)


@pytest.mark.parametrize("device", DEVICES)
def test_unique_keeps_each_nan_apart(device, torch_ref):
    need(device)
    torch = torch_ref
    x = torch.tensor([2.0, float("nan"), -0.0, 0.0, float("nan"), 2.0])
    gv, gi, gc = ember.unique(from_torch(x, device), return_inverse=True, return_counts=True)
    assert gv.cpu().tolist()[:2] == [0.0, 2.0] and all(v != v for v in gv.cpu().tolist()[2:])
    assert gc.cpu().tolist() == [2, 2, 1, 1]
    assert gi.cpu().tolist() == [1, 2, 0, 0, 3, 1]


# ---------------------------------------------------------------- searchsorted, bincount

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "float16"])
def test_searchsorted_and_bucketize(device, dtype, torch_ref, gen):
    need(device)
    torch = torch_ref
    seq = torch.sort(values(torch, (10,), dtype, gen=gen))[0]
    v = values(torch, (3, 4), dtype, specials=dtype.startswith("float") and dtype != "float16", gen=gen)
    for right in (False, True):
        for out_int32 in (False, True):
            want = torch.searchsorted(seq.float() if dtype == "float16" else seq,
                                      v.float() if dtype == "float16" else v, right=right, out_int32=out_int32)
            got = ember.searchsorted(from_torch(seq, device), from_torch(v, device), right=right, out_int32=out_int32)
            check(torch, got, want, device)
    bseq = torch.sort(values(torch, (3, 8), dtype, gen=gen), dim=1)[0]
    want = torch.searchsorted(bseq.float() if dtype == "float16" else bseq, v.float() if dtype == "float16" else v)
    check(torch, ember.searchsorted(from_torch(bseq, device), from_torch(v, device)), want, device)
    want = torch.bucketize(v.float() if dtype == "float16" else v, seq.float() if dtype == "float16" else seq)
    check(torch, ember.bucketize(from_torch(v, device), from_torch(seq, device)), want, device)


@pytest.mark.parametrize("device", DEVICES)
def test_bincount(device, torch_ref, gen):
    need(device)
    torch = torch_ref
    x = torch.randint(0, 9, (40,), generator=gen)
    w = torch.randint(-3, 4, (40,), generator=gen).double()
    for minlength in (0, 5, 20):
        check(torch, ember.bincount(from_torch(x, device), minlength=minlength), torch.bincount(x, minlength=minlength), device)
        check(torch, ember.bincount(from_torch(x, device), from_torch(w, device), minlength=minlength),
              torch.bincount(x, w, minlength=minlength), device)
        check(torch, ember.bincount(from_torch(x.int(), device), from_torch(w.float(), device)),
              torch.bincount(x.int(), w.float()), device)
    check(torch, ember.bincount(from_torch(x[:0], device), minlength=3), torch.bincount(x[:0], minlength=3), device)
    with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative integral inputs"):
        ember.bincount(from_torch(torch.tensor([1, -2]), device))


# ---------------------------------------------------------------- flip, tril, triu, joins

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "float16", "int8", "float64"])
def test_flip_tril_triu_roll(device, dtype, torch_ref, gen):
    need(device)
    torch = torch_ref
    x = values(torch, (3, 4, 5), dtype, gen=gen)
    xe = from_torch(x, device)
    xt = from_torch(x.transpose(0, 2).contiguous(), device).transpose(0, 2)  # same values, strided
    for dims in [(0,), (2,), (0, 2), (-1, 1), ()]:
        check(torch, ember.flip(xe, dims), torch.flip(x, dims), device)
        check(torch, ember.flip(xt, dims), torch.flip(x, dims), device)
    for k in (-5, -1, 0, 2, 7):
        check(torch, ember.tril(xe, k), torch.tril(x, k), device)
        check(torch, ember.triu(xt, k), torch.triu(x, k), device)
        check(torch, xe[0].tril(k), x[0].tril(k), device)
    check(torch, ember.roll(xe, (2, -1), (0, 2)), torch.roll(x, (2, -1), (0, 2)), device)
    check(torch, ember.roll(xt, 3), torch.roll(x, 3), device)
    check(torch, ember.fliplr(xe[0]), torch.fliplr(x[0]), device)
    check(torch, ember.cat([xe, xt], 1), torch.cat([x, x], 1), device)
    check(torch, ember.stack([xe, xt], 0), torch.stack([x, x], 0), device)
    check(torch, xt.repeat(2, 1, 1, 2), x.repeat(2, 1, 1, 2), device)


@pytest.mark.parametrize("device", DEVICES)
def test_joins_refuse_mixed_devices(device):
    need(device)
    if device == "cpu":
        pytest.skip("needs a second device")
    a = ember.ones(2, device="cuda")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ember.cat([a, ember.ones(2)])
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ember.stack([a, ember.ones(2)])


# ---------------------------------------------------------------- arange, linspace

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"])
def test_arange_and_linspace(device, dtype, torch_ref):
    need(device)
    torch = torch_ref
    dt = getattr(torch, dtype)
    floating = dt.is_floating_point
    cases = [(10,), (3, 50, 7), (0, 0)] + ([(20, 2, -3)] if dtype != "uint8" else [])
    cases += [(0.5, 9.5, 0.25), (-1.5, 2.0, 0.5)] if floating else []
    for args in cases:
        check(torch, ember.arange(*args, dtype=getattr(ember, dtype), device=device), torch.arange(*args, dtype=dt), device)
    for start, end, steps in [(0, 10, 11), (-3.0, 3.0, 7), (5, -5, 1), (1.0, 2.0, 0), (0, 100, 50), (-2.5, 7.25, 40)]:
        got = ember.linspace(start, end, steps, dtype=getattr(ember, dtype), device=device)
        if floating:
            # ember evaluates in double and rounds once; torch's float32/float16 arithmetic can
            # differ in the last bit, so torch is compared within rounding, the CPU exactly.
            want = torch.linspace(start, end, steps, dtype=torch.float64)
            assert got.dtype == getattr(ember, dtype) and tuple(got.shape) == (steps,)
            tol = {"float16": 1e-3, "bfloat16": 8e-3, "float32": 1e-6, "float64": 1e-15}[dtype]
            assert torch.allclose(as_torch(torch, got).double(), want, rtol=tol, atol=tol * 10)
        elif (steps <= 1 or (end - start) % (steps - 1) == 0) and not (dtype == "uint8" and min(start, end) < 0):
            # (torch 1.13 rounds other integer steps differently, and refuses negative uint8 bounds)
            check(torch, got, torch.linspace(start, end, steps, dtype=dt), device)
        assert ember.equal(got.cpu(), ember.linspace(start, end, steps, dtype=getattr(ember, dtype)))


@pytest.mark.parametrize("device", DEVICES)
def test_range_values_equal_the_cpu_bit_for_bit(device):
    """The GPU evaluates the CPU kernel's formulas (fused multiply-adds in double)."""
    need(device)
    for dt in (ember.float32, ember.float64, ember.float16):
        a = ember.arange(0.3, 1000.3, 0.1, dtype=dt, device=device).cpu()
        assert ember.equal(a, ember.arange(0.3, 1000.3, 0.1, dtype=dt))
        b = ember.linspace(0.3, 7.9, 1001, dtype=dt, device=device).cpu()
        assert ember.equal(b, ember.linspace(0.3, 7.9, 1001, dtype=dt))


# ---------------------------------------------------------------- out-of-range indices

@pytest.mark.parametrize("op", ["index_select", "gather", "scatter_", "index_add_", "getitem", "setitem"])
def test_out_of_range_index_on_the_cpu_is_an_index_error(op):
    x = ember.zeros(3, 4)
    bad = ember.tensor([0, 7])
    calls = {
        "index_select": lambda: x.index_select(1, bad),
        "gather": lambda: x.gather(1, bad.view(1, 2)),
        "scatter_": lambda: x.scatter_(1, bad.view(1, 2), 1.0),
        "index_add_": lambda: x.index_add_(1, bad, ember.ones(3, 2)),
        "getitem": lambda: x[:, bad],
        "setitem": lambda: x.__setitem__((slice(None), bad), 1.0),
    }
    with pytest.raises(IndexError, match="index 7 is out of bounds for dimension 1 with size 4"):
        calls[op]()


@pytest.mark.parametrize("op", ["x.index_select(1, bad)", "x.gather(1, bad.view(1, 2))", "x[:, bad]",
                                "x.index_put_((bad,), ember.ones(()), accumulate=True)"])
def test_out_of_range_index_on_cuda_is_a_device_side_assert(op):
    need("cuda")
    script = textwrap.dedent(f"""
        import ember
        x = ember.zeros(3, 4, device="cuda")
        bad = ember.tensor([0, 7], device="cuda")
        try:
            y = {op}
            ember.cuda.synchronize()
        except RuntimeError as e:
            print("RAISED:", e)
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    out = r.stdout + r.stderr
    assert "device-side assert triggered" in out, out
    assert "index 7 is out of bounds for dimension" in out, out
