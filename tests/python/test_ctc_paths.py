"""F.ctc_loss on CPU runs the C++ op (src/cpu/ctc_kernels.cpp); other devices run the autograd
Function over ember ops in nn/_functional_gaps.py. Both must give the same losses and gradients
(the op-level tests in test_nn_gaps.py check the values against brute-force alignments)."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.nn import _functional_gaps as gaps


def _case(seed, T=12, N=4, C=6, S=4, blank=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((T, N, C))
    tls = rng.integers(0, S + 1, N).tolist()
    ils = [int(v) for v in rng.integers(max(tls) * 2 + 1 if max(tls) else 1, T + 1, N)]
    tg = rng.integers(0, C, (N, S))
    tg[tg == blank] = (blank + 1) % C
    tg[1, :2] = tg[1, 0]  # a repeated label: the skip rule matters
    return x, tg, ils, tls


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_cpp_op_equals_the_composite(seed, zero_infinity):
    x, tg, ils, tls = _case(seed)
    if seed == 3:
        ils[0] = 1  # too short for its target: an impossible alignment (infinite loss)
        tls[0] = 3
    a = ember.tensor(x, requires_grad=True)
    b = ember.tensor(x, requires_grad=True)
    la, lb = F.log_softmax(a, 2), F.log_softmax(b, 2)
    fast = F.ctc_loss(la, ember.tensor(tg), ils, tls, reduction="none", zero_infinity=zero_infinity)
    slow = gaps._CTCLoss.apply(lb, ember.tensor(tg)[:, :max(tls)], ils, tls, 0, zero_infinity)
    if zero_infinity:
        slow = ember.where(slow == float("inf"), ember.zeros_like(slow), slow)
    np.testing.assert_allclose(fast.detach().numpy(), slow.detach().numpy(), rtol=1e-12)
    w = ember.tensor(np.arange(1.0, 5.0))
    (fast * w).sum().backward()
    (slow * w).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_cpp_op_checks_labels_and_has_no_second_derivative():
    x, tg, ils, tls = _case(5)
    bad = tg.copy()
    bad[0, 0] = 9
    with pytest.raises(IndexError, match=r"target labels must be in \[0, 6\)"):
        F.ctc_loss(ember.tensor(x).log_softmax(2), ember.tensor(bad), ils, [4, 1, 1, 1])
    a = ember.tensor(x, requires_grad=True)
    loss = F.ctc_loss(a.log_softmax(2), ember.tensor(tg), ils, tls)
    (g,) = ember.autograd.grad(loss, a, create_graph=True)
    with pytest.raises(RuntimeError, match="_ctc_loss_backward"):
        g.sum().backward()
