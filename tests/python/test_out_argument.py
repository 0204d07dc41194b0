"""torch's out= keyword on the ember namespace's functions (python/ember/_out.py), against torch
1.13 where it is installed: the result written into out, out returned, resized (with torch's
warning), dtype casting rules, factories taking out's dtype, (values, indices) pairs, autograd
refused; Tensor.resize_."""
import warnings

import pytest

import ember

torch = pytest.importorskip("torch")


def test_out_receives_the_result_and_is_returned():
    x, y = ember.randn(3, 4), ember.randn(3, 4)
    for name, args in [("add", (x, y)), ("mul", (x, 2.0)), ("exp", (x,)), ("sigmoid", (x,)), ("clamp", (x, -0.5, 0.5)),
                       ("maximum", (x, y)), ("where", (x > 0, x, y)), ("matmul", (x, y.t())), ("mm", (x, y.t()))]:
        fn = getattr(ember, name)
        out = ember.empty(0)
        assert fn(*args, out=out) is out, name
        assert ember.allclose(out, fn(*args)), name
    out = ember.empty(4)
    assert ember.sum(x, 0, out=out) is out and ember.allclose(out, x.sum(0))
    out = ember.empty(0)
    ember.cat([x, y], 1, out=out)
    assert out.shape == (3, 8) and ember.equal(out, ember.cat([x, y], 1))  # (cat used to ignore out)
    ember.stack([x, y], out=out.resize_(0))
    assert out.shape == (2, 3, 4)


def test_factories_fill_out_with_its_dtype():
    out = ember.empty(0, dtype=ember.int64)
    ember.zeros(2, 3, out=out)
    t = torch.zeros(2, 3, out=torch.empty(0, dtype=torch.int64))
    assert out.dtype == ember.int64 and out.tolist() == t.tolist()
    ember.arange(5, out=out.resize_(0))
    assert out.tolist() == list(range(5))
    ember.manual_seed(3)
    want = ember.randn(4)
    ember.manual_seed(3)
    got = ember.randn(4, out=ember.empty(4))
    assert ember.equal(got, want)


def test_pairs_and_errors_match_torch():
    x = ember.randn(3, 5)
    values, indices = ember.empty(0), ember.empty(0, dtype=ember.int64)
    r = ember.max(x, 1, out=(values, indices))
    assert ember.equal(values, x.max(1).values) and ember.equal(indices, x.max(1).indices)
    assert r[0] is values and r[1] is indices
    with pytest.raises(RuntimeError) as mine:
        ember.exp(x, out=ember.empty(3, 5, dtype=ember.int64))
    with pytest.raises(RuntimeError) as theirs:
        torch.exp(torch.randn(3, 5), out=torch.empty(3, 5, dtype=torch.int64))
    assert "result type Float can't be cast to the desired output type Long" in str(mine.value)
    assert "result type Float can't be cast to the desired output type Long" in str(theirs.value)
    a = ember.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        ember.mul(a, 2, out=ember.empty(3))
    with ember.no_grad():
        ember.mul(a, 2, out=ember.empty(3))  # fine without grad mode
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = ember.empty(5)
        ember.add(ember.ones(2), 1, out=out)
    assert out.tolist() == [2.0, 2.0] and any("was resized" in str(w.message) for w in caught)


def test_resize_keeps_the_leading_values_as_torch():
    e, t = ember.arange(6.0), torch.arange(6.0)
    e.resize_(2, 2)
    t.resize_(2, 2)
    assert e.tolist() == t.tolist()
    e.resize_(3, 3)
    assert e.shape == (3, 3) and e.reshape(-1)[:4].tolist() == [0.0, 1.0, 2.0, 3.0]
    e.resize_as_(ember.empty(2))
    assert e.shape == (2,)
    with pytest.raises(RuntimeError, match="require grad"):
        ember.ones(2, requires_grad=True).resize_(3)
