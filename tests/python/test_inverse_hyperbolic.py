"""asinh/acosh/atanh (and the arc* aliases), copysign, index_copy, F.prelu: values, edge cases and
gradients against PyTorch (issue 18 found them missing while sweeping ops in half precision)."""
import math

import pytest

import ember

torch = pytest.importorskip("torch")

VALUES = [0.0, -0.0, 1e-8, -1e-8, -0.5, 0.5, 0.999, -0.999, 1.0, -1.0, 1.0000001, 2.0, 3.0, 1e10, 1e20, -1e30,
          float("inf"), -float("inf"), float("nan")]


@pytest.mark.parametrize("name", ["asinh", "acosh", "atanh", "arcsinh", "arccosh", "arctanh"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_values_match_torch(name, dtype):
    e = getattr(ember, name)(ember.tensor(VALUES, dtype=getattr(ember, dtype))).tolist()
    t = getattr(torch, name)(torch.tensor(VALUES, dtype=getattr(torch, dtype))).tolist()
    tol = 1e-14 if dtype == "float64" else 2e-7
    for v, a, b in zip(VALUES, e, t):
        if math.isnan(b):
            assert math.isnan(a), (name, v, a)
        elif math.isinf(b):
            assert a == b, (name, v, a)
        else:
            assert abs(a - b) <= tol * max(1.0, abs(b)), (name, v, a, b)
            assert math.copysign(1, a) == math.copysign(1, b) or a != 0, (name, v, a, b)


@pytest.mark.parametrize("name", ["asinh", "acosh", "atanh"])
def test_gradients_and_methods(name):
    pts = {"asinh": [-3.0, -0.2, 0.0, 0.7, 5.0], "acosh": [1.5, 2.0, 10.0], "atanh": [-0.9, 0.0, 0.3, 0.8]}[name]
    x = ember.tensor(pts, dtype=ember.float64, requires_grad=True)
    getattr(x, name)().sum().backward()
    tx = torch.tensor(pts, dtype=torch.float64, requires_grad=True)
    getattr(tx, name)().sum().backward()
    assert ember.allclose(x.grad, ember.tensor(tx.grad.tolist(), dtype=ember.float64), rtol=1e-12, atol=1e-12)
    y = ember.tensor(pts, dtype=ember.float64)
    getattr(y, name + "_")()
    assert ember.allclose(y, getattr(ember, name)(ember.tensor(pts, dtype=ember.float64)))
    assert getattr(ember, name)(ember.tensor([1, 2])).dtype == ember.float32  # integers -> default float


def test_copysign():
    a, b = [1.0, -2.0, 3.0, 0.0, 4.0], [-0.0, 1.0, float("nan"), -1.0, -float("inf")]
    e = ember.copysign(ember.tensor(a), ember.tensor(b))
    t = torch.copysign(torch.tensor(a), torch.tensor(b))
    assert e.tolist() == t.tolist()
    assert [math.copysign(1, v) for v in e.tolist()] == [math.copysign(1, v) for v in t.tolist()]
    assert ember.copysign(ember.tensor([1, 2]), -1.0).tolist() == [-1.0, -2.0]


def test_index_copy():
    x = ember.zeros(4, 3)
    src = ember.arange(6.0).reshape(2, 3)
    out = ember.index_copy(x, 0, ember.tensor([3, 1]), src)
    ref = torch.index_copy(torch.zeros(4, 3), 0, torch.tensor([3, 1]), torch.arange(6.0).reshape(2, 3))
    assert out.tolist() == ref.tolist() and x.abs().sum().item() == 0
    y = ember.zeros(2, 5)
    y.index_copy_(1, ember.tensor([0, 4]), ember.ones(2, 2))
    assert y.tolist() == torch.zeros(2, 5).index_copy_(1, torch.tensor([0, 4]), torch.ones(2, 2)).tolist()
    s = ember.ones(2, 3, requires_grad=True)
    ember.index_copy(ember.zeros(4, 3), 0, ember.tensor([0, 2]), s).sum().backward()
    assert s.grad.tolist() == [[1.0] * 3] * 2
    with pytest.raises(IndexError, match="Number of indices"):
        x.index_copy(0, ember.tensor([0]), src)
    with pytest.raises(RuntimeError, match="Expected a long tensor for index"):
        x.index_copy(0, ember.tensor([0, 1], dtype=ember.int32), src)


def test_prelu():
    x = ember.tensor([[-2.0, 1.0, -0.5], [3.0, -1.0, 0.0]]).reshape(2, 3, 1)
    w = ember.tensor([0.1, 0.2, 0.3])
    t = torch.prelu(torch.tensor(x.tolist()), torch.tensor(w.tolist()))
    assert ember.allclose(ember.prelu(x, w), ember.tensor(t.tolist()))
    assert ember.allclose(ember.nn.functional.prelu(x, ember.tensor([0.25])), ember.where(x >= 0, x, 0.25 * x))
    m = ember.nn.PReLU(3)
    assert ember.allclose(m(x), ember.where(x >= 0, x, 0.25 * x))
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers and input channel size"):
        ember.prelu(x, ember.ones(2))
    with ember.autocast("cpu"):
        assert ember.prelu(x, w).dtype == ember.bfloat16  # torch's lists cast prelu to the lower precision
