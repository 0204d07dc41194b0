"""saved_tensors_hooks / save_on_cpu / disable_saved_tensors_hooks (torch.autograd.graph) and the
nn.utils additions (fuse_*_bn_*, get_total_norm, clip_grads_with_norm_, skip_init). References are
closed forms and the plain graph's gradients, so the tests run without torch."""
import math
import threading

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.autograd.graph import saved_tensors_hooks, save_on_cpu, disable_saved_tensors_hooks


def _grads(fn, *inputs):
    leaves = [t.detach().clone().requires_grad_() for t in inputs]
    fn(*leaves).backward()
    return [t.grad for t in leaves]


def test_pack_and_unpack_see_every_saved_tensor():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = ember.tensor([0.5, -1.0, 2.0], requires_grad=True)
    packed, unpacked = [], []

    def pack(t):
        packed.append(t.clone())
        return ("box", len(packed) - 1)

    def unpack(key):
        unpacked.append(key)
        return packed[key[1]]

    with saved_tensors_hooks(pack, unpack):
        loss = (x * w).exp().sum()
    assert len(packed) == 3 and not unpacked  # mul saved x and w, exp its result
    loss.backward()
    assert sorted(k[1] for k in unpacked) == [0, 1, 2]
    e = np.exp(np.array([0.5, -2.0, 6.0]))
    np.testing.assert_allclose(x.grad.numpy(), np.array([0.5, -1.0, 2.0]) * e, rtol=1e-5)
    np.testing.assert_allclose(w.grad.numpy(), np.array([1.0, 2.0, 3.0]) * e, rtol=1e-5)


def test_unpack_is_what_backward_uses():
    x = ember.tensor([2.0], requires_grad=True)
    with saved_tensors_hooks(lambda t: t, lambda t: t * 10):  # a wrong unpack shows in the gradient
        y = x * x
    y.backward()
    assert x.grad.item() == pytest.approx(40.0)  # d(x*x)/dx = x + x, each x unpacked as 20


def test_hooks_apply_only_inside_and_innermost_wins():
    outer, inner = [], []
    x = ember.randn(4, requires_grad=True)
    with saved_tensors_hooks(lambda t: outer.append(1) or t, lambda t: t):
        with saved_tensors_hooks(lambda t: inner.append(1) or t, lambda t: t):
            a = x.sin()
        b = x.cos()
    c = x.tanh()
    assert len(inner) == 1 and len(outer) == 1
    (a + b + c).sum().backward()
    expected = x.detach().cos() - x.detach().sin() + 1 - x.detach().tanh() ** 2
    np.testing.assert_allclose(x.grad.numpy(), expected.numpy(), rtol=1e-5)


def test_hooks_on_a_network_give_the_plain_gradients_and_custom_functions_too():
    ember.manual_seed(0)
    net = nn.Sequential(nn.Linear(5, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 1))
    x = ember.randn(6, 5)
    net(x).pow(2).sum().backward()
    plain = [p.grad.clone() for p in net.parameters()]
    net.zero_grad()
    count = [0]

    def pack(t):
        count[0] += 1
        return t.clone()

    with save_on_cpu():
        with saved_tensors_hooks(pack, lambda t: t):
            out = net(x).pow(2).sum()
    out.backward()
    assert count[0] > 5
    for p, g in zip(net.parameters(), plain):
        np.testing.assert_allclose(p.grad.numpy(), g.numpy(), rtol=1e-5, atol=1e-6)

    class Square(ember.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 2 * a * g

    seen = []
    z = ember.tensor([3.0], requires_grad=True)
    with saved_tensors_hooks(lambda t: seen.append("p") or t, lambda t: seen.append("u") or t):
        out = Square.apply(z)
    out.backward()
    assert z.grad.item() == 6.0 and "p" in seen and "u" in seen


def test_errors_and_disable():
    with pytest.raises(TypeError, match="must be callable"):
        with saved_tensors_hooks(1, lambda t: t):
            pass
    x = ember.tensor([1.0], requires_grad=True)
    with saved_tensors_hooks(lambda t: t, lambda t: None):
        y = x.exp()
    with pytest.raises(TypeError, match="the unpack hook must return a Tensor"):
        y.backward()
    with disable_saved_tensors_hooks("no hooks in here"):
        with pytest.raises(RuntimeError, match="no hooks in here"):
            with saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
    with saved_tensors_hooks(lambda t: t, lambda t: t):  # allowed again outside
        pass

    @disable_saved_tensors_hooks("decorated")
    def f():
        with saved_tensors_hooks(lambda t: t, lambda t: t):
            pass

    with pytest.raises(RuntimeError, match="decorated"):
        f()


def test_hooks_are_per_thread():
    packed = []
    x = ember.randn(3, requires_grad=True)

    def other():
        (x * 2).sum()  # another thread saves nothing through this thread's hooks

    with saved_tensors_hooks(lambda t: packed.append(1) or t, lambda t: t):
        worker = threading.Thread(target=other)
        worker.start()
        worker.join()
    assert packed == []


def test_fuse_conv_bn_and_linear_bn_match_the_pair_in_eval():
    ember.manual_seed(1)
    for conv, bn, x in ((nn.Conv2d(3, 4, 3, bias=False), nn.BatchNorm2d(4), ember.randn(2, 3, 7, 7)),
                        (nn.ConvTranspose2d(3, 4, 3), nn.BatchNorm2d(4), ember.randn(2, 3, 5, 5))):
        with ember.no_grad():
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-1, 1)
        conv.eval(), bn.eval()
        fused = nn.utils.fuse_conv_bn_eval(conv, bn, transpose=isinstance(conv, nn.ConvTranspose2d))
        np.testing.assert_allclose(fused(x).detach().numpy(), bn(conv(x)).detach().numpy(), rtol=1e-4, atol=1e-5)
        assert isinstance(fused.weight, nn.Parameter) and fused.bias is not None
    lin, bn1 = nn.Linear(5, 3), nn.BatchNorm1d(3)
    with ember.no_grad():
        bn1.running_mean.uniform_(-1, 1)
        bn1.running_var.uniform_(0.5, 2)
    lin.eval(), bn1.eval()
    x = ember.randn(4, 5)
    fused = nn.utils.fuse_linear_bn_eval(lin, bn1)
    np.testing.assert_allclose(fused(x).detach().numpy(), bn1(lin(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        nn.utils.fuse_linear_bn_eval(lin.train(), bn1)


def test_total_norm_then_clip_equals_clip_grad_norm():
    ember.manual_seed(2)
    a, b = nn.Linear(4, 3), nn.Linear(4, 3)
    b.load_state_dict(a.state_dict())
    x = ember.randn(5, 4)
    for m in (a, b):
        m(x).pow(2).sum().backward()
    grads = [p.grad for p in a.parameters()]
    total = nn.utils.get_total_norm(grads)
    expected = math.sqrt(sum(float((g ** 2).sum()) for g in grads))
    assert total.item() == pytest.approx(expected, rel=1e-5)
    nn.utils.clip_grads_with_norm_(a.parameters(), 0.5, total)
    reference = nn.utils.clip_grad_norm_(b.parameters(), 0.5, foreach=True)
    assert reference.item() == pytest.approx(expected, rel=1e-5)
    for p, q in zip(a.parameters(), b.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6)
    assert nn.utils.get_total_norm(grads, norm_type=math.inf).item() == pytest.approx(
        max(float(g.abs().max()) for g in grads))
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.get_total_norm([ember.tensor([math.nan])], error_if_nonfinite=True)


def test_skip_init_builds_the_module_and_refuses_what_torch_refuses():
    m = nn.utils.skip_init(nn.Linear, 4, 6, bias=False)
    assert isinstance(m, nn.Linear) and m.weight.shape == (6, 4) and m.bias is None
    with pytest.raises(RuntimeError, match="Expected a Module"):
        nn.utils.skip_init(int, 3)

    class NoDevice(nn.Module):
        def __init__(self, n):
            super().__init__()

    with pytest.raises(RuntimeError, match="must support a 'device' arg"):
        nn.utils.skip_init(NoDevice, 3)


# ---------------------------------------------------------------- anomaly mode's NaN check
def test_detect_anomaly_names_the_node_that_returned_nan():
    x = ember.tensor([0.0, 1.0], requires_grad=True)
    (x * 0).sqrt().sum().backward()  # off: the NaN reaches .grad silently, as in torch
    assert math.isnan(x.grad[0].item())
    x.grad = None
    with ember.autograd.detect_anomaly():
        assert ember.autograd.is_anomaly_enabled() and ember.is_anomaly_check_nan_enabled()
        y = (x * 0).sqrt().sum()
        with pytest.raises(RuntimeError, match="Function 'MulBackward0' returned nan values in its 0th output."):
            y.backward()
    assert not ember.is_anomaly_enabled()
    with ember.autograd.detect_anomaly(check_nan=False):
        (x * 0).sqrt().sum().backward()  # enabled without the check: no error
    with ember.autograd.set_detect_anomaly(True):
        with pytest.raises(RuntimeError, match="returned nan values"):
            (x * 0).sqrt().sum().backward()
    ember.set_anomaly_enabled(True, check_nan=False)
    try:
        assert ember.is_anomaly_enabled() and not ember.is_anomaly_check_nan_enabled()
        (x * 0).sqrt().sum().backward()
    finally:
        ember.set_anomaly_enabled(False)

    @ember.autograd.detect_anomaly()
    def step():
        (x * 0).sqrt().sum().backward()

    with pytest.raises(RuntimeError, match="returned nan values"):
        step()
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    with ember.autograd.detect_anomaly():  # finite gradients pass untouched
        (w * w).sum().backward()
    assert w.grad.tolist() == [2.0, 4.0]
