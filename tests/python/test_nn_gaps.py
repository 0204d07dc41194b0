"""torch.nn pieces ember lacked (part 1): nn.Buffer, the lazy modules, F.ctc_loss / nn.CTCLoss.

Each behaviour is checked against an independent reference -- brute-force enumeration of CTC
alignments, finite differences, closed forms, the concrete layer the lazy one becomes -- and,
where PyTorch is installed, against torch as well (skipped otherwise; torch 2.x-only APIs are
gated on their presence). Part 2 is test_nn_gaps2.py."""
import copy
import itertools
import math
import pickle
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


# ---- nn.Buffer ----------------------------------------------------------------------------------

class _WithBuffers(nn.Module):
    def __init__(self):
        super().__init__()
        self.kept = nn.Buffer(ember.ones(2))
        self.scratch = nn.Buffer(ember.zeros(3), persistent=False)
        self.plain = ember.arange(2.0)  # a plain tensor attribute is not a buffer


def test_buffer_marks_a_tensor_and_registers_it():
    b = nn.Buffer(ember.ones(2), persistent=False)
    assert type(b) is ember.Tensor and isinstance(b, nn.Buffer) and b.persistent is False
    assert not isinstance(ember.ones(1), nn.Buffer) and not isinstance(3, nn.Buffer)
    assert isinstance(nn.Buffer(), nn.Buffer) and tuple(nn.Buffer().shape) == (0,)
    leaf = ember.ones(2, requires_grad=True)
    kept = nn.Buffer(leaf * 2)  # detached, keeps requires_grad as torch's
    assert kept.grad_fn is None and kept.requires_grad

    m = _WithBuffers()
    assert [n for n, _ in m.named_buffers()] == ["kept", "scratch"]
    assert list(m.state_dict()) == ["kept"]  # non-persistent stays out
    assert list(m.parameters()) == [] and "plain" not in m._buffers
    # re-assigning a plain tensor to a buffer keeps its persistence; a Buffer sets it
    m.scratch = ember.ones(1)
    assert "scratch" not in m.state_dict() and m.scratch.tolist() == [1.0]
    m.scratch = nn.Buffer(ember.ones(1), persistent=True)
    assert list(m.state_dict()) == ["kept", "scratch"]
    m2 = _WithBuffers()
    m2.load_state_dict({"kept": ember.full((2,), 5.0)})
    assert m2.kept.tolist() == [5.0, 5.0]
    moved = _WithBuffers().double()
    assert moved.kept.dtype == ember.float64 and moved.scratch.dtype == ember.float64


def test_buffer_errors_match_torch():
    m = _WithBuffers()
    m.c = 3
    with pytest.raises(KeyError, match="attribute 'c' already exists"):
        m.c = nn.Buffer(ember.ones(1))
    with pytest.raises(TypeError, match=r"cannot assign 'int' as buffer 'kept' \(torch.nn.Buffer, torch.Tensor "
                                        r"or None expected\)"):
        m.kept = 3

    class Early(nn.Module):
        def __init__(self):
            self.x = nn.Buffer(ember.ones(1))

    with pytest.raises(AttributeError, match="cannot assign buffer before Module.__init__"):
        Early()

    class OldStyle(nn.Module):  # a register_buffer without `persistent` (torch's compatibility path)
        def register_buffer(self, name, tensor):
            super().register_buffer(name, tensor)

    o = OldStyle()
    o.a = nn.Buffer(ember.ones(1))
    assert "a" in o.state_dict()
    with pytest.raises(RuntimeError, match="non-persistent buffer"):
        o.b = nn.Buffer(ember.ones(1), persistent=False)


# ---- lazy modules -------------------------------------------------------------------------------

def test_uninitialized_parameter_and_buffer():
    p = nn.UninitializedParameter(dtype=ember.float64)
    assert repr(p) == "<UninitializedParameter>" and p.requires_grad and p.dtype == ember.float64
    assert isinstance(p, nn.Parameter) and nn.parameter.is_lazy(p)
    assert not nn.parameter.is_lazy(nn.Parameter(ember.ones(1)))
    b = nn.UninitializedBuffer()
    assert repr(b) == "<UninitializedBuffer>" and not b.requires_grad and nn.parameter.is_lazy(b)
    assert isinstance(b, nn.Buffer) and b.persistent
    p.materialize((2, 3))
    assert type(p) is nn.Parameter and tuple(p.shape) == (2, 3) and p.dtype == ember.float64 and p.requires_grad
    b.materialize((4,), dtype=ember.float32)
    assert type(b) is ember.Tensor and tuple(b.shape) == (4,)
    q = copy.deepcopy(nn.UninitializedParameter(requires_grad=False))
    assert type(q) is nn.UninitializedParameter and not q.requires_grad
    r = pickle.loads(pickle.dumps(nn.UninitializedParameter()))
    assert type(r) is nn.UninitializedParameter and r.requires_grad
    with pytest.raises(RuntimeError, match="Can't share memory on an uninitialized parameter"):
        nn.UninitializedParameter().share_memory_()


def test_lazy_linear_becomes_linear_keeping_its_parameters():
    m = nn.LazyLinear(3)
    assert repr(m) == "LazyLinear(in_features=0, out_features=3, bias=True)"
    assert list(m.state_dict().keys()) == ["weight", "bias"]
    assert all(nn.parameter.is_lazy(v) for v in m.state_dict().values())
    held = list(m.parameters())  # what an optimizer built before the dry run holds
    x = ember.randn(4, 5)
    y = m(x)
    assert type(m) is nn.Linear and repr(m) == "Linear(in_features=5, out_features=3, bias=True)"
    assert held[0] is m.weight and held[1] is m.bias and type(m.weight) is nn.Parameter
    assert tuple(m.weight.shape) == (3, 5) and m.weight.requires_grad and m.weight.is_leaf
    assert not m._forward_pre_hooks and not hasattr(m, "_initialize_hook")
    # Linear's initialisation: kaiming_uniform(a=sqrt(5)) and bias both in +-1/sqrt(in_features)
    bound = 1 / math.sqrt(5)
    assert float(m.weight.abs().max()) <= bound and float(m.bias.abs().max()) <= bound
    assert float(m.weight.std()) > 0.1 * bound
    np.testing.assert_allclose(y.detach().numpy(), x.numpy() @ m.weight.detach().numpy().T + m.bias.detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    y.sum().backward()
    assert tuple(held[0].grad.shape) == (3, 5)
    with pytest.raises(RuntimeError):
        m(ember.randn(4, 6))  # a Linear now, with in_features 5
    nb = nn.LazyLinear(2, bias=False, dtype=ember.float64)
    nb(ember.randn(1, 4, dtype=ember.float64))
    assert nb.bias is None and nb.weight.dtype == ember.float64


@pytest.mark.parametrize("lazy,concrete,shape,kwargs", [
    (nn.LazyConv1d, nn.Conv1d, (2, 4, 9), dict(kernel_size=3, stride=2, padding=1)),
    (nn.LazyConv2d, nn.Conv2d, (2, 4, 6, 7), dict(kernel_size=(3, 2), groups=2, bias=False)),
    (nn.LazyConv3d, nn.Conv3d, (1, 2, 4, 5, 3), dict(kernel_size=2, dilation=(1, 2, 1))),
    (nn.LazyConvTranspose1d, nn.ConvTranspose1d, (2, 4, 5), dict(kernel_size=3, stride=2, output_padding=1)),
    (nn.LazyConvTranspose2d, nn.ConvTranspose2d, (2, 4, 3, 4), dict(kernel_size=2, groups=2)),
    (nn.LazyConvTranspose3d, nn.ConvTranspose3d, (1, 3, 2, 3, 2), dict(kernel_size=(1, 2, 2), padding=(0, 1, 0))),
])
def test_lazy_convolutions_infer_in_channels(lazy, concrete, shape, kwargs):
    m = lazy(6, **kwargs)
    assert m.in_channels == 0 and repr(m).startswith(f"{lazy.__name__}(0, 6, kernel_size=")
    x = ember.randn(*shape)
    y = m(x)
    assert type(m) is concrete and m.in_channels == shape[1]
    transposed = concrete.__name__.startswith("ConvTranspose")
    g = m.groups
    want = (shape[1], 6 // g) if transposed else (6, shape[1] // g)
    assert tuple(m.weight.shape) == want + tuple(m.kernel_size)
    assert (m.bias is None) == (kwargs.get("bias") is False)
    # the same layer built directly, given the materialised weights, computes the same thing
    ref = concrete(shape[1], 6, **kwargs)
    ref.load_state_dict(m.state_dict())
    np.testing.assert_array_equal(y.detach().numpy(), ref(x).detach().numpy())
    assert repr(m) == repr(ref)
    # the default initialisation's bound, 1/sqrt(fan_in)
    fan_in = m.weight.shape[1] * math.prod(m.kernel_size)
    assert float(m.weight.abs().max()) <= 1 / math.sqrt(fan_in) + 1e-7
    # unbatched input takes in_channels from dim 0
    u = lazy(6, **kwargs)
    u(x[0])
    assert u.in_channels == shape[1]


def test_lazy_convolution_errors():
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input to LazyConv2d, "
                                           r"but got input of size: ember.Size\(\[4, 6, 6, 6, 6\]\)"):
        nn.LazyConv2d(8, 3)(ember.randn(4, 6, 6, 6, 6))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.LazyConvTranspose2d(8, 3, groups=2)(ember.randn(2, 3, 6, 6))
    assert repr(nn.LazyConvTranspose1d(3, 2, stride=2, output_padding=1)) == \
        "LazyConvTranspose1d(0, 3, kernel_size=(2,), stride=(2,), output_padding=(1,))"
    assert repr(nn.LazyConv3d(2, 1, bias=False)) == \
        "LazyConv3d(0, 2, kernel_size=(1, 1, 1), stride=(1, 1, 1), bias=False)"


@pytest.mark.parametrize("lazy,concrete,shape", [
    (nn.LazyBatchNorm1d, nn.BatchNorm1d, (6, 3)), (nn.LazyBatchNorm2d, nn.BatchNorm2d, (2, 3, 4, 4)),
    (nn.LazyBatchNorm3d, nn.BatchNorm3d, (2, 3, 2, 3, 2)), (nn.LazyInstanceNorm1d, nn.InstanceNorm1d, (2, 3, 5)),
    (nn.LazyInstanceNorm2d, nn.InstanceNorm2d, (2, 3, 4, 4)),
    (nn.LazyInstanceNorm3d, nn.InstanceNorm3d, (2, 3, 2, 3, 2)),
])
def test_lazy_norms_infer_num_features(lazy, concrete, shape):
    m = lazy(momentum=0.3)
    assert repr(m) == f"{lazy.__name__}(0, eps=1e-05, momentum=0.3, affine=True, track_running_stats=True)"
    sd = m.state_dict()
    assert list(sd) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    assert [repr(v) for v in list(sd.values())[:4]] == ["<UninitializedParameter>"] * 2 + \
        ["<UninitializedBuffer>"] * 2
    x = ember.randn(*shape) * 2 + 1
    y = m(x)
    assert type(m) is concrete and m.num_features == 3 and type(m.running_mean) is ember.Tensor
    assert m.weight.tolist() == [1.0] * 3 and m.bias.tolist() == [0.0] * 3
    assert int(m.num_batches_tracked) == (1 if concrete.__name__.startswith("Batch") else 0)  # as torch's
    # the running statistics after one step: 0.7 * (0, 1) + 0.3 * (batch mean, unbiased batch variance)
    dims = (0,) + tuple(range(2, len(shape))) if concrete.__name__.startswith("Batch") else tuple(range(2, len(shape)))
    xn = x.numpy().astype(np.float64)
    mean = xn.mean(axis=dims)
    var = xn.var(axis=dims, ddof=1)
    if not concrete.__name__.startswith("Batch"):
        mean, var = mean.mean(0), var.mean(0)  # instance norm averages the per-sample statistics
    np.testing.assert_allclose(m.running_mean.numpy(), 0.3 * mean, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(m.running_var.numpy(), 0.7 + 0.3 * var, rtol=1e-4, atol=1e-5)
    # the output is normalised per channel (batch norm) or per sample and channel (instance norm)
    out = y.detach().numpy().astype(np.float64)
    np.testing.assert_allclose(out.mean(axis=dims), 0, atol=1e-5)


def test_lazy_instance_norm_without_affine_or_stats():
    m = nn.LazyInstanceNorm2d(affine=False, track_running_stats=False)
    assert list(m.state_dict()) == [] and not m.has_uninitialized_params()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m(ember.randn(2, 3, 4, 4))
    assert type(m) is nn.InstanceNorm2d and m.num_features == 0  # nothing to infer: torch keeps 0


def test_lazy_modules_load_state_dicts_and_chain():
    # an initialized state loads into a lazy module (the placeholders take its shapes)
    src = nn.Linear(4, 3)
    m = nn.LazyLinear(3)
    m.load_state_dict(src.state_dict())
    assert type(m) is nn.LazyLinear and tuple(m.weight.shape) == (3, 4) and m.in_features == 0
    np.testing.assert_array_equal(m.weight.detach().numpy(), src.weight.detach().numpy())
    x = ember.randn(2, 4)
    np.testing.assert_array_equal(m(x).detach().numpy(), src(x).detach().numpy())  # not re-initialised
    assert type(m) is nn.Linear and m.in_features == 4
    bn = nn.LazyBatchNorm2d()
    bn.load_state_dict(nn.BatchNorm2d(5).state_dict())
    assert tuple(bn.running_mean.shape) == (5,)
    # a lazy state_dict loads into a lazy module (nothing to copy)
    lazy2 = nn.LazyLinear(3)
    lazy2.load_state_dict(nn.LazyLinear(3).state_dict())
    assert lazy2.has_uninitialized_params()
    seq = nn.Sequential(nn.LazyConv1d(4, 3), nn.LazyBatchNorm1d(), nn.ReLU(), nn.Flatten(), nn.LazyLinear(2))
    out = seq(ember.randn(3, 2, 7))
    assert tuple(out.shape) == (3, 2)
    assert [type(s).__name__ for s in seq] == ["Conv1d", "BatchNorm1d", "ReLU", "Flatten", "Linear"]
    assert seq[4].in_features == 20 and seq[0].in_channels == 2 and seq[1].num_features == 4
    clone = copy.deepcopy(nn.LazyConv2d(4, 1))
    assert type(clone.weight) is nn.UninitializedParameter
    clone(ember.randn(1, 2, 3, 3))
    assert type(clone) is nn.Conv2d


def test_lazy_modules_match_torch():
    torch = _torch()
    if torch is None or not hasattr(torch.nn, "LazyConv2d"):
        pytest.skip("PyTorch with lazy modules not installed")
    for ctor in ("LazyConv2d(8, 3)", "LazyConvTranspose3d(4, 2, groups=2)", "LazyLinear(3)"):
        assert repr(eval("nn." + ctor)) == repr(eval("torch.nn." + ctor))
    t, e = torch.nn.LazyConv2d(8, 3), nn.LazyConv2d(8, 3)
    t(torch.randn(2, 4, 6, 6))
    e(ember.randn(2, 4, 6, 6))
    assert repr(t) == repr(e) and list(t.state_dict()) == list(e.state_dict())
    for name in ("weight", "bias"):
        assert tuple(t.state_dict()[name].shape) == tuple(e.state_dict()[name].shape)


# ---- CTC loss: references ---------------------------------------------------------------------------

def _collapse(path, blank):
    out, prev = [], None
    for c in path:
        if c != prev and c != blank:
            out.append(c)
        prev = c
    return out


def _ctc_brute(lp, target, blank):
    """-log p(target) and the alignment posterior (T, C) by enumerating every path of lp (T, C)."""
    T, C = lp.shape
    total = 0.0
    post = np.zeros((T, C))
    for path in itertools.product(range(C), repeat=T):
        if _collapse(path, blank) == list(target):
            p = math.exp(sum(lp[t, c] for t, c in enumerate(path)))
            total += p
            for t, c in enumerate(path):
                post[t, c] += p
    if total == 0:
        return math.inf, np.full((T, C), np.nan)
    return -math.log(total), post / total


def _log_softmax(a, axis=-1):
    a = a - a.max(axis=axis, keepdims=True)
    return a - np.log(np.exp(a).sum(axis=axis, keepdims=True))


def _case(seed, T, N, C, tls, ils, blank=0):
    rng = np.random.default_rng(seed)
    lp = _log_softmax(rng.standard_normal((T, N, C)))
    labels = [c for c in range(C) if c != blank]
    S = max(tls)
    tg = np.array([[labels[rng.integers(len(labels))] for _ in range(S)] for _ in range(N)], dtype=np.int64)
    return lp, tg, ils, tls


def test_ctc_loss_and_gradient_equal_brute_force_enumeration():
    lp, tg, ils, tls = _case(1, T=5, N=3, C=3, tls=[2, 1, 3], ils=[5, 4, 5])
    tg[2] = [1, 1, 2]  # a repeated label needs a blank between its copies
    x = ember.tensor(lp, requires_grad=True)
    loss = F.ctc_loss(x, ember.tensor(tg), ember.tensor(ils), ember.tensor(tls), reduction="none")
    w = np.array([0.5, -1.0, 2.0])
    (loss * ember.tensor(w)).sum().backward()
    grad = x.grad.numpy()
    for n in range(3):
        T_n = ils[n]
        nll, post = _ctc_brute(lp[:T_n, n], tg[n, :tls[n]], 0)
        assert loss[n].item() == pytest.approx(nll, rel=1e-12)
        # torch's gradient: exp(log_probs) - alignment posterior, zero after the input's end
        want = np.zeros_like(lp[:, n])
        want[:T_n] = w[n] * (np.exp(lp[:T_n, n]) - post)
        np.testing.assert_allclose(grad[:, n], want, atol=1e-12)


def test_ctc_gradient_through_log_softmax_equals_finite_differences():
    """Through log_softmax (what ctc_loss is made for) the gradient is the exact derivative of the
    loss: compared with central differences of the brute-force loss."""
    rng = np.random.default_rng(2)
    T, N, C = 4, 2, 3
    logits = rng.standard_normal((T, N, C))
    tg, ils, tls = np.array([[1, 2], [2, 0]]), [4, 3], [2, 1]

    def brute(lg):
        lp = _log_softmax(lg)
        return sum(_ctc_brute(lp[:ils[n], n], tg[n, :tls[n]], 0)[0] for n in range(N))

    x = ember.tensor(logits, requires_grad=True)
    F.ctc_loss(F.log_softmax(x, 2), ember.tensor(tg), ils, tls, reduction="sum").backward()
    num = np.zeros_like(logits)
    h = 1e-6
    for idx in np.ndindex(*logits.shape):
        up, down = logits.copy(), logits.copy()
        up[idx] += h
        down[idx] -= h
        num[idx] = (brute(up) - brute(down)) / (2 * h)
    np.testing.assert_allclose(x.grad.numpy(), num, atol=1e-7)
    assert np.abs(num[3, 1]).max() == 0  # past the second input's end: no influence


def test_ctc_reductions_target_layouts_blank_and_unbatched():
    lp, tg, ils, tls = _case(3, T=6, N=3, C=4, tls=[3, 0, 2], ils=[6, 5, 6], blank=2)
    nlls = [_ctc_brute(lp[:ils[n], n], tg[n, :tls[n]], 2)[0] for n in range(3)]
    x = ember.tensor(lp)
    none = F.ctc_loss(x, ember.tensor(tg), ils, tls, blank=2, reduction="none")
    np.testing.assert_allclose(none.numpy(), nlls, rtol=1e-12)
    # 'mean': each loss over its target length (at least 1), then the batch mean
    mean = F.ctc_loss(x, ember.tensor(tg), ils, tls, blank=2)
    assert mean.item() == pytest.approx(np.mean([v / max(t, 1) for v, t in zip(nlls, tls)]), rel=1e-12)
    assert F.ctc_loss(x, ember.tensor(tg), ils, tls, blank=2, reduction="sum").item() == \
        pytest.approx(sum(nlls), rel=1e-12)
    # concatenated 1-D targets and tuple/list/tensor lengths give the same losses
    cat = np.concatenate([tg[n, :tls[n]] for n in range(3)])
    for il_arg, tl_arg in ((tuple(ils), tuple(tls)), (ember.tensor(ils), ember.tensor(tls))):
        got = F.ctc_loss(x, ember.tensor(cat), il_arg, tl_arg, blank=2, reduction="none")
        np.testing.assert_allclose(got.numpy(), nlls, rtol=1e-12)
    # padding past a target's length is ignored, whatever it holds
    tg2 = tg.copy()
    tg2[1, :] = 3
    tg2[2, 2] = 0
    np.testing.assert_allclose(F.ctc_loss(x, ember.tensor(tg2), ils, tls, blank=2, reduction="none").numpy(), nlls,
                               rtol=1e-12)
    # unbatched (T, C) input with (S,) targets: a scalar per reduction
    u = F.ctc_loss(x[:, 0], ember.tensor(tg[0]), ember.tensor(ils[0]), ember.tensor(tls[0]), blank=2,
                   reduction="none")
    assert u.dim() == 0 and u.item() == pytest.approx(nlls[0], rel=1e-12)
    # the module
    crit = nn.CTCLoss(blank=2, reduction="sum")
    assert crit.blank == 2 and crit.zero_infinity is False and crit.reduction == "sum"
    assert crit(x, ember.tensor(tg), ils, tls).item() == pytest.approx(sum(nlls), rel=1e-12)
    # float32 agrees to float32 precision
    f32 = F.ctc_loss(x.float(), ember.tensor(tg), ils, tls, blank=2, reduction="none")
    np.testing.assert_allclose(f32.numpy(), nlls, rtol=1e-5)


def test_ctc_impossible_alignments_and_zero_infinity():
    lp = _log_softmax(np.random.default_rng(4).standard_normal((3, 2, 3)))
    tg = np.array([[1, 1], [1, 2]])  # sample 0: "1 1" needs 3 frames but gets 2
    ils, tls = [2, 3], [2, 2]
    x = ember.tensor(lp, requires_grad=True)
    loss = F.ctc_loss(x, ember.tensor(tg), ils, tls, reduction="none")
    assert loss[0].item() == math.inf and math.isfinite(loss[1].item())
    loss.sum().backward()
    assert np.isnan(x.grad.numpy()[:2, 0]).all() and (x.grad.numpy()[2, 0] == 0).all()  # torch's NaNs
    assert np.isfinite(x.grad.numpy()[:, 1]).all()
    x.grad = None
    zi = F.ctc_loss(x, ember.tensor(tg), ils, tls, reduction="none", zero_infinity=True)
    assert zi[0].item() == 0 and zi[1].item() == loss[1].item()
    zi.sum().backward()
    assert (x.grad.numpy()[:, 0] == 0).all()
    nll1, post1 = _ctc_brute(lp[:, 1], [1, 2], 0)
    np.testing.assert_allclose(x.grad.numpy()[:, 1], np.exp(lp[:, 1]) - post1, atol=1e-12)
    # an empty input: probability 1 for an empty target, 0 otherwise
    empty = F.ctc_loss(ember.tensor(lp), ember.tensor(tg), [0, 0], [0, 1], reduction="none")
    assert empty.tolist() == [0.0, math.inf]


def test_ctc_errors_match_torch():
    x = ember.randn(5, 2, 4).log_softmax(2)
    tg = ember.tensor([[1, 2], [1, 1]])
    chk = r" \(while checking arguments for ctc_loss_allocate_outputs\)"
    cases = [
        (dict(il=[6, 5], tl=[2, 2]), RuntimeError, "Expected input_lengths to have value at most 5, but got value 6"
         + chk),
        (dict(il=[-1, 5], tl=[1, 2]), RuntimeError, "Expected input_lengths to have value at least 0, but got value -1"
         + chk),
        (dict(il=[5, 5], tl=[3, 2]), RuntimeError, "Expected tensor to have size at least 3 at dimension 1, but got "
         "size 2 for argument #2 'targets'" + chk),
        (dict(il=[5, 5], tl=[-1, 2]), RuntimeError, "Expected target_lengths to have value at least 0, but got value -1"
         + chk),
        (dict(il=[5], tl=[2, 2]), RuntimeError, "input_lengths must be of size batch_size"),
        (dict(il=[5, 5, 5], tl=[2, 2]), RuntimeError, "input_lengths must be of size batch_size"),
        (dict(il=[5, 5], tl=[2]), RuntimeError, "target_lengths must be of size batch_size"),
        (dict(il=[5, 5], tl=[2, 2], blank=4), RuntimeError, "blank must be in label range"),
        (dict(il=[5, 5], tl=[2, 2], tg=ember.tensor([1, 2, 1])), RuntimeError,
         "Expected tensor to have size 4 at dimension 0, but got size 3 for argument #2 'targets'" + chk),
        (dict(il=[5, 5], tl=[2, 2], tg=ember.zeros(1, 1, 1, dtype=ember.int64)), RuntimeError,
         "Expected 1 to 2 dimensions, but got 3-dimensional tensor for argument #2 'targets'" + chk),
        (dict(il=[5, 5], tl=[2, 2], reduction="foo"), ValueError, "foo is not a valid value for reduction"),
        (dict(il=[5, 5], tl=[2, 2], x=x.unsqueeze(0)), RuntimeError,
         "Expected 3-dimensional tensor, but got 5-dimensional tensor for argument #1 'log_probs'" + chk),
        (dict(il=[5, 5], tl=[2, 2], x=x.half()), NotImplementedError, "\"ctc_loss_cpu\" not implemented for 'Half'"),
    ]
    for kw, exc, msg in cases:
        with pytest.raises(exc) as info:
            F.ctc_loss(kw.get("x", x), kw.get("tg", tg), kw["il"], kw["tl"], kw.get("blank", 0),
                       kw.get("reduction", "mean"))
        assert str(info.value) == msg.replace("\\", ""), (str(info.value), msg)


def test_ctc_loss_matches_torch_on_random_batches():
    torch = _torch()
    if torch is None:
        pytest.skip("PyTorch not installed")
    rng = np.random.default_rng(5)
    lo = 0 if int(torch.__version__.split(".")[0]) >= 2 else 1  # torch 1.13 mishandles empty inputs
    for trial in range(24):
        T, N, C = int(rng.integers(1, 10)), int(rng.integers(1, 4)), int(rng.integers(2, 6))
        dt = (np.float32, np.float64)[trial % 2]
        blank = int(rng.integers(0, C))
        labels = [c for c in range(C) if c != blank]
        tls = [int(rng.integers(0, 5)) for _ in range(N)]
        ils = [int(rng.integers(lo, T + 1)) for _ in range(N)] if trial % 3 else [T] * N
        S = max(tls)
        tg = np.array([[labels[rng.integers(len(labels))] for _ in range(S)] for _ in range(N)],
                      dtype=np.int64).reshape(N, S)
        lp = _log_softmax(rng.standard_normal((T, N, C))).astype(dt)
        red, zi = ("none", "mean", "sum")[trial % 3], trial % 4 == 0
        xt, xe = torch.tensor(lp, requires_grad=True), ember.tensor(lp, requires_grad=True)
        lt = torch.nn.functional.ctc_loss(xt, torch.tensor(tg), torch.tensor(ils), torch.tensor(tls), blank, red, zi)
        le = F.ctc_loss(xe, ember.tensor(tg), ember.tensor(ils), ember.tensor(tls), blank, red, zi)
        tol = 1e-4 if dt == np.float32 else 1e-10
        np.testing.assert_allclose(le.detach().numpy(), lt.detach().numpy(), rtol=tol, atol=tol)
        lt.sum().backward()
        le.sum().backward()
        np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=10 * tol, atol=10 * tol)


def test_ctc_loss_runs_a_realistic_size():
    """T=50, N=16, C=20, S=10 (the size docs/issue15-layers.md times against torch)."""
    rng = np.random.default_rng(6)
    T, N, C, S = 50, 16, 20, 10
    lp = ember.tensor(_log_softmax(rng.standard_normal((T, N, C))).astype(np.float32), requires_grad=True)
    tg = ember.tensor(rng.integers(1, C, (N, S)))
    tls = rng.integers(5, S + 1, N).tolist()
    loss = F.ctc_loss(lp, tg, [T] * N, tls)
    loss.backward()
    g = lp.grad.numpy()
    assert math.isfinite(loss.item()) and np.isfinite(g).all()
    # exp(lp) - posterior sums to zero over the labels at every step (the posterior sums to one)
    np.testing.assert_allclose(g.sum(2), 0, atol=1e-5)


def test_ctc_loss_has_no_second_derivative_like_torch():
    x = ember.randn(5, 2, 4, dtype=ember.float64).log_softmax(2).detach().requires_grad_()
    loss = F.ctc_loss(x, ember.tensor([[1, 2], [1, 1]]), [5, 5], [2, 2])
    (g,) = ember.autograd.grad(loss, x, create_graph=True)
    # as torch 2.x: the gradient is recorded, and differentiating it raises
    assert g.requires_grad
    with pytest.raises(RuntimeError, match="_ctc_loss_backward"):
        g.sum().backward()
