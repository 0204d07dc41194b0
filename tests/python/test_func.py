"""ember.func (torch.func) and ember.vmap: functional_call, stack_module_state, vmap, grad,
grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, linearize.

Every check has a reference that needs no torch: explicit loops over the batch, closed-form
derivatives, finite differences, ember.autograd.functional, ordinary backward() calls. Error
messages are compared with the ones PyTorch 2.15 gives (recorded below). When a PyTorch 2.x
interpreter exists (EMBER_TORCH2_PYTHON, default /work/torch2/bin/python), one more test runs
the same programs under torch.func there and compares the numbers."""
import json
import os
import subprocess
import warnings

import numpy as np
import pytest

import ember
from ember import nn
from ember.func import (functional_call, stack_module_state, vmap, grad, grad_and_value, vjp, jvp, jacrev, jacfwd,
                        hessian, linearize)
import ember.nn.functional as F

TORCH2_PYTHON = os.environ.get("EMBER_TORCH2_PYTHON", "/work/torch2/bin/python")


def close(a, b, atol=1e-5, rtol=1e-5):
    a = a.detach().numpy() if isinstance(a, ember.Tensor) else np.asarray(a)
    b = b.detach().numpy() if isinstance(b, ember.Tensor) else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, atol=atol, rtol=rtol)


def t64(a):
    return ember.tensor(np.asarray(a, dtype=np.float64), dtype=ember.float64)


def fd_jacobian(f, x, eps=1e-6):
    """Central differences of f (float64 tensor -> tensor) at x: shape f(x).shape + x.shape."""
    x = x.detach()
    base = f(x)
    cols = []
    flat = x.reshape(-1)
    for k in range(flat.numel()):
        e = ember.zeros(flat.numel(), dtype=x.dtype)
        e[k] = eps
        e = e.reshape(x.shape)
        cols.append(((f(x + e) - f(x - e)) / (2 * eps)).reshape(-1))
    return ember.stack(cols, 1).reshape(list(base.shape) + list(x.shape))


def mlp():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3))


# ---- functional_call ----------------------------------------------------------------------------

def test_functional_call_replaces_params_and_restores():
    m = nn.Linear(3, 2)
    w0, b0 = m.weight, m.bias
    W, B = ember.randn(2, 3), ember.randn(2)
    x = ember.randn(4, 3)
    out = functional_call(m, {"weight": W, "bias": B}, (x,))
    close(out, x @ W.t() + B)
    assert m.weight is w0 and m.bias is b0
    close(m(x), x @ w0.t() + b0)
    # a single argument needs no tuple; a partial dict keeps the module's other tensors
    close(functional_call(m, {"weight": W}, x), x @ W.t() + b0)


def test_functional_call_buffers_kwargs_and_tuple_of_dicts():
    bn = nn.BatchNorm1d(3).eval()
    x = ember.randn(5, 3)
    mean, var = ember.randn(3), ember.rand(3) + 0.5
    params = {"weight": ember.randn(3), "bias": ember.randn(3)}
    buffers = {"running_mean": mean, "running_var": var}
    out = functional_call(bn, (params, buffers), (x,))
    close(out, (x - mean) / (var + bn.eps).sqrt() * params["weight"] + params["bias"])
    close(bn.running_mean, ember.zeros(3))
    close(bn.running_var, ember.ones(3))

    class KW(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(ember.ones(1))

        def forward(self, x, *, shift=0.0):
            return x * self.scale + shift

    close(functional_call(KW(), {"scale": ember.tensor([3.0])}, (x,), {"shift": 1.0}), x * 3 + 1)
    with pytest.raises(ValueError, match=r"\['running_mean'\] appeared in multiple dictionaries; behavior of "
                                         "functional call is ambiguous"):
        functional_call(bn, ({"running_mean": mean}, {"running_mean": mean}), (x,))
    with pytest.raises(ValueError, match="Expected all elements of parameter_and_buffer_dicts to be dictionaries"):
        functional_call(bn, ({"running_mean": mean}, 3), (x,))
    with pytest.raises(ValueError, match="Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of "
                                         "dicts, but got <class 'int'>"):
        functional_call(bn, 3, (x,))


def test_functional_call_inplace_update_reaches_dict_and_restore_on_error():
    class Counter(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("foo", ember.zeros(()))

        def forward(self, x):
            self.foo = self.foo + 1
            return x + self.foo

    m = Counter()
    a = {"foo": ember.zeros(())}
    close(functional_call(m, a, ember.ones(())), ember.tensor(2.0))
    close(m.foo, ember.tensor(0.0))  # the module keeps its own buffer
    close(a["foo"], ember.tensor(1.0))  # the dict sees the module's update (torch does the same)

    class Boom(nn.Linear):
        def forward(self, x):
            raise KeyError("boom")

    b = Boom(2, 2)
    w0 = b.weight
    with pytest.raises(KeyError, match="boom"):
        functional_call(b, {"weight": ember.zeros(2, 2)}, ember.ones(2))
    assert b.weight is w0


def test_functional_call_strict():
    m = nn.Linear(2, 2)
    full = {"weight": ember.ones(2, 2), "bias": ember.zeros(2)}
    close(functional_call(m, full, ember.ones(1, 2), strict=True), ember.full((1, 2), 2.0))
    with pytest.raises(RuntimeError) as e:
        functional_call(m, {"weight": ember.ones(2, 2), "extra": ember.ones(1)}, ember.ones(1, 2), strict=True)
    assert str(e.value) == ("Error(s) in reparametrizing for Linear:\n\tUnexpected key(s): 'extra'.\n\t"
                            "Missing key(s): 'bias'.")
    assert not hasattr(m, "extra")


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(2, 2, bias=False)
        self.l2 = nn.Linear(2, 2, bias=False)
        self.l2.weight = self.l1.weight

    def forward(self, x):
        return self.l2(self.l1(x))


def test_functional_call_tie_weights():
    m = Tied()
    w0 = m.l1.weight
    W = ember.randn(2, 2)
    x = ember.randn(3, 2)
    close(functional_call(m, {"l1.weight": W}, x), x @ W.t() @ W.t())  # both tied names use W
    close(functional_call(m, {"l1.weight": W}, x, tie_weights=False), x @ W.t() @ w0.t())
    close(functional_call(m, {"l1.weight": W, "l2.weight": W}, x), x @ W.t() @ W.t())
    with pytest.raises(ValueError, match=r"functional_call got multiple values for keys \['l1.weight', "
                                         r"'l2.weight'\], which are tied. Consider using tie_weights=False"):
        functional_call(m, {"l1.weight": W, "l2.weight": W + 1}, x)
    W2 = ember.randn(2, 2)
    close(functional_call(m, {"l1.weight": W, "l2.weight": W2}, x, tie_weights=False), x @ W.t() @ W2.t())
    assert m.l1.weight is w0 and m.l2.weight is w0
    # strict counts every tied name
    functional_call(m, {"l1.weight": W}, x, strict=True)


def test_functional_call_gradients_reach_given_tensors_and_stateless_alias():
    m = nn.Linear(3, 1)
    W = ember.randn(1, 3, requires_grad=True)
    x = ember.randn(4, 3)
    functional_call(m, {"weight": W}, x).sum().backward()
    close(W.grad, x.sum(0, keepdim=True))
    assert m.weight.grad is None
    from ember.nn.utils import stateless
    with pytest.warns(FutureWarning, match="torch.func.functional_call"):
        out = stateless.functional_call(m, {"weight": W.detach()}, (x,))
    close(out, x @ W.detach().t() + m.bias)


# ---- vmap ---------------------------------------------------------------------------------------

def loop(f, *cols, dim=0):
    return ember.stack([f(*c) for c in zip(*cols)], dim)


def test_vmap_in_dims_matches_loop():
    x, y = ember.randn(4, 3), ember.randn(3, 4)
    f = lambda a, b: (a * b).sin().sum()  # noqa: E731
    close(vmap(f, in_dims=(0, 1))(x, y), loop(f, x.unbind(0), y.unbind(1)))
    close(vmap(f, in_dims=(0, -1))(x, y), loop(f, x.unbind(0), y.unbind(1)))
    w = ember.randn(3)
    close(vmap(lambda a, b: a @ b, in_dims=(0, None))(x, w), x @ w)
    # dims of a dict argument given by a dict; kwargs are not mapped
    d = {"a": ember.randn(2, 5), "b": ember.randn(5, 2)}
    out = vmap(lambda d, k=1.0: d["a"] * d["b"] * k, in_dims=({"a": 1, "b": 0},))(d, k=2.0)
    close(out, (d["a"].t() * d["b"] * 2.0))
    # one int covers a whole nested argument
    nested = (ember.randn(3, 2), [ember.randn(3), {"z": ember.randn(3, 4)}])
    out = vmap(lambda t: t[0].sum() + t[1][0] + t[1][1]["z"].sum(), in_dims=0)(nested)
    close(out, nested[0].sum(1) + nested[1][0] + nested[1][1]["z"].sum(1))


def test_vmap_out_dims_and_pytree_outputs():
    x = ember.randn(3, 2)
    close(vmap(lambda a: a * 2, out_dims=1)(x), (x * 2).t())
    close(vmap(lambda a: a * 2, out_dims=-1)(x), (x * 2).t())
    close(vmap(lambda a: a.sum(), out_dims=-1)(x), x.sum(1))
    close(vmap(lambda a: a.sum(), out_dims=(0,))(x), x.sum(1))
    c = ember.randn(2)
    out = vmap(lambda a: [a, {"s": a.sum(), "c": c, "n": 3}], out_dims=[0, {"s": 0, "c": None, "n": None}])(x)
    close(out[0], x)
    close(out[1]["s"], x.sum(1))
    assert out[1]["c"] is c and out[1]["n"] == 3
    a, b = vmap(lambda a: (a, a.sum()), out_dims=(1, 0))(x)
    close(a, x.t())
    close(b, x.sum(1))
    # an output that does not depend on the batch is broadcast
    close(vmap(lambda a: ember.ones(2))(x), ember.ones(3, 2))


def test_vmap_nested_and_chunks():
    a, b = ember.randn(3), ember.randn(4)
    outer = vmap(vmap(lambda u, v: u * v, in_dims=(None, 0)), in_dims=(0, None))(a, b)
    close(outer, a[:, None] * b[None, :])
    x = ember.randn(2, 3, 4)
    close(vmap(vmap(lambda r: r.sum()))(x), x.sum(2))
    close(vmap(vmap(lambda r: r.sum(), in_dims=1), in_dims=2)(x), x.sum(0).t())
    close(vmap(lambda r: r * 2, chunk_size=2)(x), x * 2)


def test_vmap_keeps_autograd_and_empty_batch():
    x = ember.randn(4, 3, requires_grad=True)
    out = vmap(lambda r: (r ** 3).sum())(x)
    out.sum().backward()
    close(x.grad, 3 * x.detach() ** 2)
    close(vmap(lambda r: r * 2)(ember.zeros(0, 3)), ember.zeros(0, 3))
    close(vmap(lambda r: r.sum(), out_dims=0)(ember.zeros(0, 3)), ember.zeros(0))
    assert tuple(vmap(lambda r: r.sum(0))(ember.zeros(3, 0, 2), ).shape) == (3, 2)


# PyTorch 2.15's messages, recorded
VMAP_ERRORS = [
    (lambda: vmap(lambda x, y: x + y)(ember.randn(3, 3), ember.randn(4, 3)), ValueError,
     "vmap: Expected all tensors to have the same size in the mapped dimension, got sizes [3, 4] for the mapped "
     "dimension"),
    (lambda: vmap(lambda x, y: x + y, in_dims=(0,))(ember.randn(3, 3), ember.randn(3, 3)), ValueError,
     "vmap(<lambda>, in_dims=(0,), ...)(<inputs>): in_dims is not compatible with the structure of `inputs`. "
     "in_dims has structure TreeSpec(tuple, None, [*]) but inputs has structure TreeSpec(tuple, None, [*,\n  *])."),
    (lambda: vmap(lambda x, y: x + y, in_dims=[0, 0])(ember.randn(3, 3), ember.randn(3, 3)), ValueError,
     "vmap(<lambda>, in_dims=[0, 0], ...)(<inputs>): expected `in_dims` to be int or a (potentially nested) tuple "
     "matching the structure of inputs, got: <class 'list'>."),
    (lambda: vmap(lambda x: x, in_dims=2)(ember.randn(3, 3)), ValueError,
     "vmap(<lambda>, in_dims=2, ...)(<inputs>): Got in_dim=2 for some input, but that input is a Tensor of "
     "dimensionality 2 so expected in_dim to satisfy -2 <= in_dim < 2."),
    (lambda: vmap(lambda x: x, in_dims=None)(ember.randn(3)), ValueError,
     "vmap(<lambda>, in_dims=None, ...)(<inputs>): expected `in_dims` to be int or a (potentially nested) tuple "
     "matching the structure of inputs, got: <class 'NoneType'>."),
    (lambda: vmap(lambda x: x, in_dims=(None,))(ember.randn(3)), ValueError,
     "vmap: Expected at least one Tensor to vmap over"),
    (lambda: vmap(lambda x: x, in_dims=0)(3.0), ValueError,
     "vmap(<lambda>, in_dims=0, ...)(<inputs>): Got in_dim=0 for an input but the input is of type <class "
     "'float'>. We cannot vmap over non-Tensor arguments, please use None as the respective in_dim"),
    (lambda: vmap(lambda x: x)(), ValueError,
     "vmap(<lambda>)(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are trying to vmap over a "
     "function with no inputs. The latter is unsupported."),
    (lambda: vmap(lambda x: x, randomness="foo"), RuntimeError,
     "Only allowed values for randomness are 'error', 'different', or 'same'. Got foo"),
    (lambda: vmap(lambda x: x, out_dims="a")(ember.randn(3)), ValueError,
     "vmap(<lambda>, ..., out_dims=a): `out_dims` must be an int, None or a python collection of ints representing "
     "where in the outputs the vmapped dimension should appear."),
    (lambda: vmap(lambda x: (x, x), out_dims=(0, 0, 0))(ember.randn(3)), ValueError,
     "vmap(<lambda>, ..., out_dims=(0, 0, 0))(<inputs>): out_dims is not compatible with the structure of "
     "`outputs`. out_dims has structure TreeSpec(tuple, None, [*,\n  *,\n  *]) but outputs has structure "
     "TreeSpec(tuple, None, [*,\n  *])."),
    (lambda: vmap(lambda x: x, in_dims=(0.5,))(ember.randn(3, 2)), ValueError,
     "vmap(<lambda>, in_dims=(0.5,), ...)(<inputs>): Got in_dim=0.5 for an input but in_dim must be either an "
     "integer dimension or None."),
    (lambda: vmap(lambda x: x, in_dims=({"b": 0},))({"a": ember.randn(3, 2)}), ValueError,
     "vmap(<lambda>, in_dims=({'b': 0},), ...)(<inputs>): in_dims is not compatible with the structure of "
     "`inputs`. in_dims has structure TreeSpec(tuple, None, [TreeSpec(dict, ['b'], [*])]) but inputs has "
     "structure TreeSpec(tuple, None, [TreeSpec(dict, ['a'], [*])])."),
    (lambda: vmap(lambda x: 3)(ember.randn(2, 3)), ValueError,
     "vmap(<lambda>, ...): `<lambda>` must only return Tensors, got type <class 'int'>. Did you mean to set "
     "out_dims= to None for output?"),
    (lambda: vmap(lambda x: x, out_dims=None)(ember.randn(2, 3)), ValueError,
     "vmap(<lambda>, ...): `<lambda>` can not return a BatchedTensor when out_dim is None"),
    (lambda: vmap(lambda x: x, chunk_size=0), ValueError, "vmap: chunk_size should be None or greater than 0. (got 0)"),
    (lambda: vmap(lambda x: x + ember.rand(3))(ember.randn(2, 3)), RuntimeError,
     "vmap: called random operation while in randomness error mode. Please either use the 'same' or 'different' "
     "randomness flags on vmap or perform the randomness operation out of vmap"),
]


@pytest.mark.parametrize("i", range(len(VMAP_ERRORS)))
def test_vmap_errors_match_torch(i):
    call, exc, msg = VMAP_ERRORS[i]
    with pytest.raises(exc) as e:
        call()
    assert str(e.value) == msg


def test_vmap_error_names_function_and_different_shapes():
    def scale(x):
        return x * 2

    with pytest.raises(ValueError, match=r"vmap\(scale, in_dims=3, \.\.\.\)\(<inputs>\): Got in_dim=3"):
        vmap(scale, in_dims=3)(ember.randn(2, 2))
    with pytest.raises(RuntimeError, match=r"vmap\(<lambda>, \.\.\.\): `<lambda>` returned a Tensor of shape \[1\] "
                                           r"for sample 0 and of shape \[2\] for sample 1"):
        vmap(lambda x: x.repeat(int(x.item()) + 1))(ember.tensor([[0.0], [1.0]]))


def test_vmap_randomness_modes():
    x = ember.zeros(4, 3)
    state = ember.get_rng_state()
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vmap(lambda r: r + ember.rand(3))(x)
    assert ember.equal(ember.get_rng_state(), state)  # the draw was undone

    ember.manual_seed(7)
    same = vmap(lambda r: r + ember.rand(3), randomness="same")(x)
    ember.manual_seed(7)
    one = ember.rand(3)
    after_one = ember.rand(3)
    close(same, one.expand(4, 3))
    ember.manual_seed(7)
    vmap(lambda r: r + ember.rand(3), randomness="same")(x)
    close(ember.rand(3), after_one)  # 'same' advances the generator as one unbatched draw

    ember.manual_seed(7)
    diff = vmap(lambda r: r + ember.rand(3), randomness="different")(x)
    ember.manual_seed(7)
    close(diff, ember.stack([ember.rand(3) for _ in range(4)]))
    assert not ember.allclose(diff[0], diff[1])

    m = nn.Dropout(0.5)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vmap(m)(ember.ones(2, 8))
    m.eval()
    close(vmap(m)(ember.ones(2, 8)), ember.ones(2, 8))


# ---- grad and grad_and_value --------------------------------------------------------------------

def test_grad_closed_forms_argnums_pytrees_aux():
    x, y = ember.randn(3), ember.randn(3)
    close(grad(lambda a: (a ** 3).sum())(x), 3 * x ** 2)
    gx, gy = grad(lambda a, b: (a * b.sin()).sum(), argnums=(0, 1))(x, y)
    close(gx, y.sin())
    close(gy, x * y.cos())
    close(grad(lambda a, b: (a * b.sin()).sum(), argnums=-1)(x, y), x * y.cos())
    g = grad(lambda d: (d["w"] ** 2).sum() + d["b"][0].sum() * 3)({"w": x, "b": [y]})
    close(g["w"], 2 * x)
    close(g["b"][0], ember.full((3,), 3.0))
    g, aux = grad(lambda a: ((a ** 2).sum(), {"m": a.mean()}), has_aux=True)(x)
    close(g, 2 * x)
    close(aux["m"], x.mean())
    assert not aux["m"].requires_grad
    g, v = grad_and_value(lambda a: (a.exp()).sum())(x)
    close(g, x.exp())
    close(v, x.exp().sum())
    g, (v, aux) = grad_and_value(lambda a: (a.sum() * 2, a * 3), has_aux=True)(x)
    close(g, ember.full((3,), 2.0))
    close(v, x.sum() * 2)
    close(aux, x * 3)
    # kwargs reach f and are not differentiated
    close(grad(lambda a, *, k: (a * k).sum())(x, k=y), y)


def test_grad_nests_and_composes():
    x0 = ember.tensor(0.7)
    close(grad(grad(lambda a: a.sin()))(x0), -x0.sin())
    close(grad(grad(grad(lambda a: a ** 4)))(x0), 24 * x0)
    # the inner grad differentiates its own input only (no perturbation confusion)
    xs, ys = ember.randn(3), ember.randn(3)
    close(grad(lambda a: grad(lambda b: (a * b).sum())(ys).sum())(xs), ember.ones(3))
    close(grad(lambda a: grad(lambda b: (a * b * b).sum())(a).sum())(xs), 4 * xs)  # d/dx sum(2 x * x)
    # vmap of grad: per-row gradients
    X = ember.randn(4, 3)
    close(vmap(grad(lambda r: (r ** 3).sum()))(X), 3 * X ** 2)
    # grad of vmap
    close(grad(lambda a: vmap(lambda r: (r * a).sum())(X).sum())(xs), X.sum(0))


def test_grad_tracking_follows_torch():
    x = ember.randn(3)
    assert not grad(lambda a: (a ** 3).sum())(x).requires_grad
    xr = x.clone().requires_grad_()
    g = grad(lambda a: (a ** 3).sum())(xr)
    assert g.requires_grad
    g.sum().backward()
    close(xr.grad, 6 * x)  # the outer backward differentiates the gradient
    w = ember.randn(3, requires_grad=True)
    g = grad(lambda a: (w * a ** 2).sum())(x)  # closes over a tensor that requires grad
    assert g.requires_grad
    g.sum().backward()
    close(w.grad, 2 * x)
    with ember.no_grad():
        g = grad(lambda a: (a ** 3).sum())(xr)  # grad ignores an outer no_grad ...
    close(g, 3 * x ** 2)
    assert not g.requires_grad  # ... and its result is not tracked there

    def f(a):  # ... but obeys one inside f
        with ember.no_grad():
            c = a ** 2
        return (a - c).sum()
    close(grad(f)(x), ember.ones(3))


GRAD_ERRORS = [
    (lambda: grad(lambda x: x)(ember.randn(3)), RuntimeError,
     "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor with 1 dims. Maybe you "
     "wanted to use the vjp or jacrev APIs instead?"),
    (lambda: grad(lambda x: 3)(ember.randn(3)), RuntimeError,
     "grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got <class 'int'>"),
    (lambda: grad(lambda x: x.sum(), argnums=2)(ember.randn(3)), RuntimeError,
     "Got argnum=2, but only 1 positional inputs"),
    (lambda: grad(lambda x: x.sum(), argnums=(0, 0))(ember.randn(3)), RuntimeError,
     "argnums elements must be unique, got (0, 0)"),
    (lambda: grad(lambda x: x.sum(), argnums=[0])(ember.randn(3)), RuntimeError,
     "argnums must be int or Tuple[int, ...], got: <class 'list'>"),
    (lambda: grad(lambda x: x.sum(), argnums=())(ember.randn(3)), RuntimeError, "argnums must be non-empty"),
    (lambda: grad(lambda x: x.sum())(3.0), ValueError, "Thing passed to transform API must be Tensor, got <class "
                                                       "'float'>"),
    (lambda: grad(lambda x: x.sum(), has_aux=True)(ember.randn(3)), RuntimeError,
     "grad_and_value(f)(*args): output of function f should be a tuple: (output, aux) if has_aux is True"),
]


@pytest.mark.parametrize("i", range(len(GRAD_ERRORS)))
def test_grad_errors_match_torch(i):
    call, exc, msg = GRAD_ERRORS[i]
    with pytest.raises(exc) as e:
        call()
    assert str(e.value) == msg


# ---- vjp, jvp, linearize ------------------------------------------------------------------------

def test_vjp():
    x, y = ember.randn(3), ember.randn(3)
    out, fn = vjp(lambda a, b: (a * b, {"s": a.sin()}), x, y)
    close(out[0], x * y)
    close(out[1]["s"], x.sin())
    v1, v2 = ember.randn(3), ember.randn(3)
    gx, gy = fn((v1, {"s": v2}))
    close(gx, v1 * y + v2 * x.cos())
    close(gy, v1 * x)
    gx2, _ = fn((v1, {"s": v2}))  # vjp_fn can be called again
    close(gx2, gx)
    assert not gx.requires_grad and not out[0].requires_grad
    out, fn, aux = vjp(lambda a: (a.exp(), a.sum()), x, has_aux=True)
    close(fn(ember.ones(3))[0], x.exp())
    close(aux, x.sum())
    # a cotangent that requires grad gives a differentiable vjp (grad of a vjp)
    close(grad(lambda v: fn(v)[0].sum())(v1), x.exp())
    with pytest.raises(RuntimeError) as e:
        vjp(lambda a: (a.sin(), {"a": a}), x)[1](ember.ones(3))
    assert str(e.value) == ("Expected pytree structure of cotangents to be the same as pytree structure of outputs "
                            "to the function. cotangents: *, primal output: (*, {'a': *})")
    with pytest.raises(RuntimeError, match=r"vjp\(f, \.\.\.\): All outputs of f must be floating-point or complex "
                                           r"Tensors, got Tensor with dtype"):
        vjp(lambda a: (a > 0).long(), x)
    with pytest.raises(RuntimeError, match=r"vjp\(f, \*primals\): output of function f should be a tuple: "
                                           r"\(output, aux\) if has_aux is True"):
        vjp(lambda a: a, x, has_aux=True)


def test_jvp_closed_form_and_finite_differences():
    x, t = t64(np.random.default_rng(1).standard_normal(4)), t64(np.random.default_rng(2).standard_normal(4))
    f = lambda a: a.sin() * a.sum()  # noqa: E731
    out, tan = jvp(f, (x,), (t,))
    close(out, f(x))
    close(tan, x.cos() * t * x.sum() + x.sin() * t.sum(), atol=1e-12)
    close(tan, fd_jacobian(f, x) @ t, atol=1e-7)
    y, s = ember.randn(3), ember.randn(3)
    (o1, o2), (t1, t2) = jvp(lambda a, b: (a * b, (a ** 2).sum()), (x[:3].float(), y), (t[:3].float(), s))
    close(t1, t[:3].float() * y + x[:3].float() * s)
    close(t2, (2 * x[:3].float() * t[:3].float()).sum())
    out, tan, aux = jvp(lambda a: (a.exp(), a * 2), (y,), (s,), has_aux=True)
    close(tan, y.exp() * s)
    close(aux, y * 2)
    # an output independent of the inputs has a zero tangent, or is an error with strict
    _, tz = jvp(lambda a: (a * 2, ember.ones(2)), (y,), (s,))
    close(tz[1], ember.zeros(2))
    with pytest.raises(RuntimeError) as e:
        jvp(lambda a: ember.ones(2), (y,), (s,), strict=True)
    assert str(e.value) == ("jvp(f, primals, tangents, strict=True): The output of f is independent of the inputs. "
                            "This is not allowed with strict=True.")
    # the tangent is differentiable with respect to the primal (grad of jvp) and to the tangent
    close(grad(lambda a: jvp(ember.sin, (a,), (s,))[1].sum())(y), -y.sin() * s)
    close(grad(lambda v: jvp(ember.sin, (y,), (v,))[1].sum())(s), y.cos())


JVP_ERRORS = [
    (lambda: jvp(lambda x: x, ember.randn(3), (ember.randn(3),)),
     "jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it should be valid to call f(*primals)."),
    (lambda: jvp(lambda x: x, (ember.randn(3),), [ember.randn(3)]),
     "jvp(f, primals, tangents): Expected primals and tangents to have the same python structure. For example, if "
     "primals is a tuple of 3 tensors, tangents also must be. Got primals with structure TreeSpec(tuple, None, "
     "[*]) and tangents with structure TreeSpec(list, None, [*])"),
    (lambda: jvp(lambda x: 3, (ember.randn(3),), (ember.randn(3),)),
     "jvp(f, primals, tangents): expected f(*primals) to return only tensors, got unsupported type <class 'int'>"),
    (lambda: jvp(lambda x: x, (ember.randn(3),), (ember.randn(4),)),
     "Trying to set a forward gradient that has a different size than that of the original Tensor, this is not "
     "supported. Tensor is of size [3] while the given forward gradient is of size [4]."),
]


@pytest.mark.parametrize("i", range(len(JVP_ERRORS)))
def test_jvp_errors_match_torch(i):
    call, msg = JVP_ERRORS[i]
    with pytest.raises(RuntimeError) as e:
        call()
    assert str(e.value) == msg


def test_linearize():
    x = ember.randn(4)
    f = lambda a: a.sin() * 2  # noqa: E731
    out, fn = linearize(f, x)
    close(out, f(x))
    for _ in range(2):
        t = ember.randn(4)
        close(fn(t), 2 * x.cos() * t)
    with pytest.raises(RuntimeError) as e:
        fn(ember.ones(3))
    assert str(e.value) == ("tangent:0 with shape ember.Size([3]) in flattened pytree doesn't match the shape "
                            "ember.Size([4]) of the corresponding primal.")
    with pytest.raises(RuntimeError, match=r"Expected the tangents TreeSpec\(tuple, None, \[\*,\n  \*\]\) to have "
                                           r"the same argspec as the primals TreeSpec\(tuple, None, \[\*\]\)"):
        fn(ember.ones(4), ember.ones(4))


# ---- Jacobians and Hessians ---------------------------------------------------------------------

def _f2(a, b):
    return ember.stack([(a * b).sum(), (a.sin() * b ** 2).sum() + a[0] * a[1]])


def test_jacrev_jacfwd_against_fd_and_autograd_functional():
    rng = np.random.default_rng(3)
    a, b = t64(rng.standard_normal(3)), t64(rng.standard_normal(3))
    ja_fd = fd_jacobian(lambda u: _f2(u, b), a)
    jb_fd = fd_jacobian(lambda u: _f2(a, u), b)
    ref = ember.autograd.functional.jacobian(_f2, (a, b))
    for jac in (jacrev, jacfwd):
        close(jac(_f2)(a, b), ja_fd, atol=1e-7)
        ja, jb = jac(_f2, argnums=(0, 1))(a, b)
        close(ja, ja_fd, atol=1e-7)
        close(jb, jb_fd, atol=1e-7)
        close(ja, ref[0], atol=1e-12)
        close(jb, ref[1], atol=1e-12)
        assert not ja.requires_grad
    # pytree inputs and outputs: out leaf -> input structure, shapes out.shape + in.shape
    x = ember.randn(2, 3)
    for jac in (jacrev, jacfwd):
        J = jac(lambda d: {"p": d["w"] * 2, "q": (d["w"] * d["v"]).sum()})({"w": x, "v": x + 1})
        close(J["p"]["w"], 2 * ember.eye(6).reshape(2, 3, 2, 3))
        close(J["p"]["v"], ember.zeros(2, 3, 2, 3))
        close(J["q"]["w"], x + 1)
        close(J["q"]["v"], x)
        J, aux = jac(lambda u: (u.exp(), u.sum()), has_aux=True)(x[0])
        close(J, ember.diag(x[0].exp()))
        close(aux, x[0].sum())


def test_hessian_analytic_and_nested_jacobians():
    x = t64([0.3, -1.2, 2.0])
    f = lambda u: (u ** 3).sum() + u[0] * u[1]  # noqa: E731
    H = ember.diag(6 * x)
    H[0, 1] += 1
    H[1, 0] += 1
    close(hessian(f)(x), H, atol=1e-12)
    close(jacrev(jacrev(f))(x), H, atol=1e-12)
    close(jacfwd(jacfwd(f))(x), H, atol=1e-12)
    close(ember.autograd.functional.hessian(f, x), hessian(f)(x), atol=1e-12)
    y = t64([1.0, 2.0])
    Hxy = hessian(lambda u, v: (u[:2] * v ** 2).sum(), argnums=(0, 1))(x, y)
    close(Hxy[0][1], ember.tensor([[2.0, 0.0], [0.0, 4.0], [0.0, 0.0]], dtype=ember.float64))  # d2 f / du dv = 2 v
    close(Hxy[1][1], ember.diag(2 * x[:2]))
    # a batch of Hessians
    X = ember.randn(4, 3)
    close(vmap(hessian(lambda u: (u ** 3).sum()))(X), ember.stack([ember.diag(6 * r) for r in X]))


def test_jacobian_errors():
    with pytest.raises(ValueError, match="jacrev: `chunk_size` should be greater than 0."):
        jacrev(lambda x: x, chunk_size=0)
    with pytest.raises(RuntimeError, match="vmap: called random operation while in randomness error mode"):
        jacfwd(lambda x: x * ember.rand(3))(ember.randn(3))
    close(jacfwd(lambda x: x * 2, randomness="different")(ember.randn(2)), 2 * ember.eye(2))
    with pytest.raises(RuntimeError, match=r"vjp\(f, \*primals\): expected f\(\*primals\) to return only tensors, "
                                           "got unsupported type <class 'int'>"):
        jacrev(lambda x: 3)(ember.randn(3))
    J = jacfwd(lambda x: (x > 0).long())(ember.randn(3))  # no tangent: zeros of the output's dtype, as torch
    assert J.dtype == ember.int64 and not J.any()


# ---- per-sample gradients and ensembles ---------------------------------------------------------

def _loss(model):
    def loss(p, x, y):
        out = functional_call(model, p, (x.unsqueeze(0),))
        return F.cross_entropy(out, y.unsqueeze(0))
    return loss


def _loop_grads(model, x, y):
    ref = {k: [] for k, _ in model.named_parameters()}
    for i in range(x.shape[0]):
        model.zero_grad()
        F.cross_entropy(model(x[i:i + 1]), y[i:i + 1]).backward()
        for k, p in model.named_parameters():
            ref[k].append(p.grad.clone())
    model.zero_grad()
    return {k: ember.stack(v) for k, v in ref.items()}


def test_per_sample_gradients_match_loop_of_backward():
    model = mlp()
    x, y = ember.randn(6, 5), ember.tensor([0, 1, 2, 0, 1, 2])
    ref = _loop_grads(model, x, y)
    detached = {k: v.detach() for k, v in model.named_parameters()}
    g = vmap(grad(_loss(model)), in_dims=(None, 0, 0))(detached, x, y)
    assert set(g) == set(ref)
    for k in ref:
        close(g[k], ref[k], atol=1e-6)
        assert not g[k].requires_grad
    # with the parameters themselves the per-sample gradients stay differentiable (as torch's):
    # their sum over the batch is the batch gradient, whose backward reaches the parameters
    params = dict(model.named_parameters())
    g = vmap(grad(_loss(model)), in_dims=(None, 0, 0))(params, x, y)
    assert g["0.weight"].requires_grad
    total = sum(F.cross_entropy(model(x[i:i + 1]), y[i:i + 1]) for i in range(6))
    batch = ember.autograd.grad(total, list(params.values()), create_graph=True)
    for (k, _), b in zip(params.items(), batch):
        close(g[k].sum(0), b, atol=1e-6)
    (g["2.weight"] ** 2).sum().backward()
    # reference: double backward by hand on a copy of the model
    model2 = mlp()
    s = 0
    for i in range(6):
        li = F.cross_entropy(model2(x[i:i + 1]), y[i:i + 1])
        s = s + (ember.autograd.grad(li, model2[2].weight, create_graph=True)[0] ** 2).sum()
    s.backward()
    for (k, p), (_, p2) in zip(model.named_parameters(), model2.named_parameters()):
        close(p.grad, p2.grad, atol=1e-6)


def test_stack_module_state_ensemble():
    ember.manual_seed(1)
    models = [nn.Linear(4, 2) for _ in range(3)]
    params, buffers = stack_module_state(models)
    assert set(params) == {"weight", "bias"} and buffers == {}
    assert params["weight"].shape == (3, 2, 4) and params["weight"].is_leaf and params["weight"].requires_grad
    data = ember.randn(5, 4)
    out = vmap(lambda p, b, d: functional_call(models[0], (p, b), (d,)), in_dims=(0, 0, None))(params, buffers, data)
    close(out, ember.stack([m(data) for m in models]))
    out.sum().backward()
    close(params["weight"].grad, data.sum(0).expand(3, 2, 4))
    assert models[0].weight.grad is None
    # per-model data too
    per = ember.randn(3, 5, 4)
    out = vmap(lambda p, d: functional_call(models[0], p, (d,)))(params, per)
    close(out, ember.stack([m(d) for m, d in zip(models, per)]))
    bns = [nn.BatchNorm1d(2) for _ in range(2)]
    _, bufs = stack_module_state(bns)
    assert set(bufs) == {"running_mean", "running_var", "num_batches_tracked"}
    with pytest.raises(RuntimeError, match="stack_module_state: Expected at least one model, got 0."):
        stack_module_state([])
    with pytest.raises(RuntimeError, match="stack_module_state: Expected all models to be of the same class."):
        stack_module_state([nn.Linear(2, 2), nn.Identity()])
    with pytest.raises(RuntimeError, match="stack_module_state: Expected all models to have the same training/eval"):
        stack_module_state([nn.Linear(2, 2), nn.Linear(2, 2).eval()])


def test_namespace():
    assert ember.vmap is vmap and ember.func.grad is grad
    import ember.func as func
    assert set(func.__all__) >= {"functional_call", "stack_module_state", "vmap", "grad", "grad_and_value", "vjp",
                                 "jvp", "jacrev", "jacfwd", "hessian", "linearize"}


# ---- PyTorch 2.x, when there is one ------------------------------------------------------------

_TORCH_SCRIPT = r"""
import json, sys
import numpy as np
import torch
from torch.func import functional_call, vmap, grad, jacrev, jacfwd, hessian, jvp, vjp, linearize
inp = {k: torch.tensor(np.array(v)) for k, v in json.loads(sys.stdin.read()).items()}
model = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).double()
with torch.no_grad():
    for k, p in model.named_parameters():
        p.copy_(inp[k])
params = {k: v.detach() for k, v in model.named_parameters()}
def loss(p, x, y):
    return torch.nn.functional.cross_entropy(functional_call(model, p, (x.unsqueeze(0),)), y.unsqueeze(0))
res = {}
for k, v in vmap(grad(loss), in_dims=(None, 0, 0))(params, inp["x"], inp["y"]).items():
    res["psg." + k] = v
f = lambda a, b: torch.stack([(a * b).sum(), (a.sin() * b ** 2).sum() + a[0] * a[1]])
a, b = inp["a"], inp["b"]
res["jacrev0"], res["jacrev1"] = jacrev(f, argnums=(0, 1))(a, b)
res["jacfwd0"] = jacfwd(f)(a, b)
res["hess"] = hessian(lambda u: (u.sin() * u.sum()).sum())(a)
res["jvp"] = jvp(lambda u: u.tanh() * u.sum(), (a,), (b,))[1]
res["vjp"] = vjp(lambda u: u.tanh() * u.sum(), a)[1](b)[0]
res["lin"] = linearize(lambda u: u.exp() * u[0], a)[1](b)
res["vmap_out"] = vmap(lambda u, v: (u[:, None] * v).sum(0), in_dims=(1, None), out_dims=1)(inp["m"], b)
print(json.dumps({k: v.detach().numpy().tolist() for k, v in res.items()}))
"""


def test_against_torch2_func():
    if not os.path.exists(TORCH2_PYTHON):
        pytest.skip(f"no PyTorch 2.x interpreter at {TORCH2_PYTHON} (set EMBER_TORCH2_PYTHON)")
    rng = np.random.default_rng(5)
    model = mlp().double()
    inp = {k: p.detach().numpy().tolist() for k, p in model.named_parameters()}
    inp.update(x=rng.standard_normal((6, 5)).tolist(), y=[0, 2, 1, 1, 0, 2], a=rng.standard_normal(3).tolist(),
               b=rng.standard_normal(3).tolist(), m=rng.standard_normal((3, 4)).tolist())
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env["OMP_NUM_THREADS"] = "1"
    proc = subprocess.run([TORCH2_PYTHON, "-c", _TORCH_SCRIPT], input=json.dumps(inp), capture_output=True,
                          text=True, env=env, cwd="/", timeout=120)
    if proc.returncode != 0 and "No module named" in proc.stderr:
        pytest.skip(f"{TORCH2_PYTHON} has no torch.func: {proc.stderr.strip()[-200:]}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    ref = json.loads(proc.stdout.strip().splitlines()[-1])
    T = {k: ember.tensor(np.array(v)) for k, v in inp.items()}
    params = {k: v.detach() for k, v in model.named_parameters()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = {}
        for k, v in vmap(grad(_loss(model)), in_dims=(None, 0, 0))(params, T["x"], T["y"]).items():
            ours["psg." + k] = v
        a, b = T["a"], T["b"]
        ours["jacrev0"], ours["jacrev1"] = jacrev(_f2, argnums=(0, 1))(a, b)
        ours["jacfwd0"] = jacfwd(_f2)(a, b)
        ours["hess"] = hessian(lambda u: (u.sin() * u.sum()).sum())(a)
        ours["jvp"] = jvp(lambda u: u.tanh() * u.sum(), (a,), (b,))[1]
        ours["vjp"] = vjp(lambda u: u.tanh() * u.sum(), a)[1](b)[0]
        ours["lin"] = linearize(lambda u: u.exp() * u[0], a)[1](b)
        ours["vmap_out"] = vmap(lambda u, v: (u[:, None] * v).sum(0), in_dims=(1, None), out_dims=1)(T["m"], b)
    assert set(ours) == set(ref)
    for k in ref:
        close(ours[k], np.array(ref[k]), atol=1e-10, rtol=1e-10)
