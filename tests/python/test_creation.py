"""Factory functions: sizes in every form torch accepts, dtype/device/requires_grad keywords,
random factories with generators, ranges, *_like and Tensor.new_*."""
import math

import numpy as np
import pytest

import ember


SIZE_FORMS = [((2, 3),), (((2, 3)),), (([2, 3]),)]


@pytest.mark.parametrize("name,value", [("zeros", 0.0), ("ones", 1.0)])
@pytest.mark.parametrize("form", ["varargs", "tuple", "list", "shape", "keyword"])
def test_constant_factories_accept_every_size_form(name, value, form):
    f = getattr(ember, name)
    x = ember.empty(2, 3)
    t = {"varargs": lambda: f(2, 3), "tuple": lambda: f((2, 3)), "list": lambda: f([2, 3]),
         "shape": lambda: f(x.shape), "keyword": lambda: f(size=(2, 3))}[form]()
    assert t.shape == (2, 3) and t.dtype == ember.float32
    np.testing.assert_array_equal(t.numpy(), np.full((2, 3), value))


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
def test_factory_keywords(name):
    f = getattr(ember, name)
    t = f(4, dtype=ember.float64, device="cpu", requires_grad=True)
    assert t.dtype == ember.float64 and t.device.type == "cpu" and t.requires_grad and t.is_leaf
    assert f(()).shape == () and f(0).shape == (0,)
    assert f(2, 3, device=ember.device("cpu")).shape == (2, 3)


def test_bad_sizes_raise_type_error_naming_the_op():
    with pytest.raises(TypeError, match="zeros"):
        ember.zeros(2, "a")
    with pytest.raises(TypeError, match="rand"):
        ember.rand((2, 1.5))
    with pytest.raises(RuntimeError):
        ember.zeros(-1)


def test_full_infers_dtype_from_fill_value():
    assert ember.full((2,), 7).dtype == ember.int64
    assert ember.full((2,), 7.5).dtype == ember.float32
    assert ember.full((2,), True).dtype == ember.bool
    t = ember.full([2, 2], 3, dtype=ember.float64)
    assert t.dtype == ember.float64 and t.tolist() == [[3.0, 3.0], [3.0, 3.0]]


@pytest.mark.parametrize("args,kwargs,expected", [
    ((5,), {}, np.arange(5)),
    ((1, 7, 2), {}, np.arange(1, 7, 2)),
    ((0.0, 1.0, 0.25), {}, np.arange(0, 1, 0.25)),
    ((3,), {"dtype": ember.float64}, np.arange(3.0)),
    ((10, 0, -3), {}, np.arange(10, 0, -3)),
])
def test_arange(args, kwargs, expected):
    t = ember.arange(*args, **kwargs)
    np.testing.assert_allclose(t.numpy(), expected)
    floating = any(isinstance(a, float) for a in args) or kwargs.get("dtype") is ember.float64
    assert t.dtype == (kwargs.get("dtype", ember.float32) if floating else ember.int64)


def test_linspace_logspace_eye():
    np.testing.assert_allclose(ember.linspace(0, 1, 5).numpy(), np.linspace(0, 1, 5), rtol=1e-6)
    np.testing.assert_allclose(ember.logspace(0, 2, 3).numpy(), [1, 10, 100], rtol=1e-5)
    np.testing.assert_allclose(ember.logspace(0, 3, 4, base=2).numpy(), [1, 2, 4, 8], rtol=1e-5)
    np.testing.assert_array_equal(ember.eye(3).numpy(), np.eye(3))
    np.testing.assert_array_equal(ember.eye(2, 4, dtype=ember.int64).numpy(), np.eye(2, 4))
    assert ember.linspace(0, 1, steps=3, dtype=ember.float64).dtype == ember.float64


def test_like_factories_take_dtype_and_shape_from_input():
    x = ember.ones(2, 3, dtype=ember.float64)
    for f in (ember.zeros_like, ember.ones_like, ember.empty_like, ember.rand_like, ember.randn_like):
        y = f(x)
        assert y.shape == (2, 3) and y.dtype == ember.float64
    assert ember.zeros_like(x, dtype=ember.int32).dtype == ember.int32
    assert ember.full_like(x, 4).tolist() == [[4.0] * 3] * 2
    r = ember.randint_like(x, 10)
    assert r.dtype == ember.float64 and 0 <= r.min().item() and r.max().item() < 10
    r = ember.randint_like(x, 5, 7)
    assert set(r.flatten().tolist()) <= {5.0, 6.0}
    assert ember.ones_like(x, requires_grad=True).requires_grad


def test_new_factories_follow_self():
    x = ember.zeros(1, dtype=ember.float64)
    for t in (x.new_zeros(2, 3), x.new_zeros((2, 3)), x.new_ones([2, 3]), x.new_empty(2, 3)):
        assert t.shape == (2, 3) and t.dtype == ember.float64
    assert x.new_ones(2).tolist() == [1.0, 1.0]
    assert x.new_full((2,), 5).tolist() == [5.0, 5.0]
    assert x.new_zeros(2, dtype=ember.int64).dtype == ember.int64
    t = x.new_tensor([1, 2])
    assert t.dtype == ember.float64 and t.tolist() == [1.0, 2.0]
    assert x.new_tensor([1, 2], dtype=ember.int32).dtype == ember.int32


def test_randint_forms():
    for t in (ember.randint(10, (100,)), ember.randint(0, 10, (100,)), ember.randint(0, 10, size=(100,)),
              ember.randint(high=10, size=(100,)), ember.randint(low=0, high=10, size=[100])):
        assert t.dtype == ember.int64 and t.shape == (100,)
        assert 0 <= t.min().item() and t.max().item() < 10
    t = ember.randint(-3, 3, (1000,), dtype=ember.int32)
    assert t.dtype == ember.int32 and set(t.tolist()) == {-3, -2, -1, 0, 1, 2}
    with pytest.raises(TypeError, match="size"):
        ember.randint(10)


def test_random_factories_are_reproducible_with_generators():
    g1, g2 = ember.Generator().manual_seed(7), ember.Generator().manual_seed(7)
    for f in (lambda g: ember.rand(3, generator=g), lambda g: ember.randn(3, generator=g),
              lambda g: ember.randint(0, 5, (3,), generator=g), lambda g: ember.randperm(6, generator=g),
              lambda g: ember.normal(0.0, 1.0, (3,), generator=g)):
        assert f(g1).tolist() == f(g2).tolist()
    ember.manual_seed(3)
    a = ember.rand(4)
    ember.manual_seed(3)
    assert ember.rand(4).tolist() == a.tolist()


def test_random_distributions_are_plausible():
    u = ember.rand(20000, dtype=ember.float64).numpy()
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.02
    n = ember.randn(20000, dtype=ember.float64).numpy()
    assert abs(n.mean()) < 0.05 and abs(n.std() - 1) < 0.05
    p = ember.randperm(50)
    assert p.dtype == ember.int64 and sorted(p.tolist()) == list(range(50))
    m = ember.normal(ember.full((20000,), 5.0), ember.full((20000,), 2.0)).numpy()
    assert abs(m.mean() - 5) < 0.1 and abs(m.std() - 2) < 0.1
    m = ember.normal(ember.zeros(2, 3), 1.0)
    assert m.shape == (2, 3)
    m = ember.normal(3.0, ember.ones(4))
    assert m.shape == (4,)


def test_inplace_random_fills_return_self():
    x = ember.empty(10000, dtype=ember.float64)
    for call in (lambda: x.uniform_(2, 3), lambda: x.normal_(0, 1), lambda: x.random_(0, 4),
                 lambda: x.bernoulli_(0.5), lambda: x.exponential_(), lambda: x.random_(5), lambda: x.random_()):
        assert call() is x
    x.uniform_(2, 3)
    assert 2 <= x.min().item() and x.max().item() < 3
    x.random_(0, 4)
    assert set(x.tolist()) == {0.0, 1.0, 2.0, 3.0}
    x.bernoulli_(0.25)
    assert set(x.tolist()) == {0.0, 1.0} and abs(x.mean().item() - 0.25) < 0.03
    x.exponential_(2.0)
    assert x.min().item() >= 0 and abs(x.mean().item() - 0.5) < 0.03
    b = ember.bernoulli(ember.full((1000,), 0.5))
    assert set(b.tolist()) <= {0.0, 1.0}
    assert ember.full((5,), 1.0).bernoulli().tolist() == [1.0] * 5


def test_multinomial():
    probs = ember.tensor([0.0, 1.0, 0.0, 3.0])
    s = ember.multinomial(probs, 100, replacement=True)
    assert s.dtype == ember.int64 and set(s.tolist()) <= {1, 3}
    s = probs.multinomial(2)
    assert sorted(s.tolist()) == [1, 3]
    # more samples than positive weights without replacement: torch returns zero-weight
    # categories after the positive ones instead of raising
    s = probs.multinomial(3).tolist()
    assert sorted(s[:2]) == [1, 3] and s[2] in (0, 2)


def test_against_torch_deterministic_factories(torch_ref):
    torch = torch_ref
    cases = [
        ("arange", (2, 11, 3), {}), ("arange", (0.5, 3.0, 0.5), {}), ("linspace", (-1, 1, 7), {}),
        ("logspace", (-1, 1, 5), {}), ("eye", (3, 2), {}), ("full", ((2, 2), 1.5), {}), ("zeros", (2, 1), {}),
        ("ones", ((3,),), {"dtype": "int32"}),
    ]
    for name, args, kwargs in cases:
        ek = {k: getattr(ember, v) for k, v in kwargs.items()}
        tk = {k: getattr(torch, v) for k, v in kwargs.items()}
        e, t = getattr(ember, name)(*args, **ek), getattr(torch, name)(*args, **tk)
        assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1], name
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6, atol=1e-6, err_msg=name)
