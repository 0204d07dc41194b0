"""ember.optim: built-in optimizers (C++ updates) against hand-computed steps and against torch
1.13 on identical parameters and gradients; param_groups edits, per-group options,
add_param_group, state / state_dict (round trips and torch interop), Python subclasses."""
import io
import math

import numpy as np
import pytest

import ember
from ember import optim


def _torch():
    return pytest.importorskip("torch", reason="PyTorch not installed: differential test skipped")


def param(values, dtype=ember.float32):
    return ember.tensor(values, dtype=dtype, requires_grad=True)


def set_grad(p, values):
    p.grad = ember.tensor(values, dtype=p.dtype)


def arr(t):
    return t.detach().numpy().copy()


# -- hand-computed steps (always run) ---------------------------------------------------------

def test_sgd_plain_and_momentum_by_hand():
    p = param([1.0, -2.0])
    opt = optim.SGD([p], lr=0.1)
    set_grad(p, [2.0, 1.0])
    opt.step()
    np.testing.assert_allclose(arr(p), [0.8, -2.1], rtol=1e-6)

    p = param([1.0])
    opt = optim.SGD([p], lr=0.1, momentum=0.9, dampening=0.5, weight_decay=0.1)
    set_grad(p, [2.0])
    opt.step()  # d = 2 + 0.1*1 = 2.1; buf = d (first step); p = 1 - 0.21
    np.testing.assert_allclose(arr(p), [0.79], rtol=1e-6)
    set_grad(p, [2.0])
    opt.step()  # d = 2 + 0.079 = 2.079; buf = 0.9*2.1 + 0.5*2.079; p -= 0.1*buf
    buf = 0.9 * 2.1 + 0.5 * 2.079
    np.testing.assert_allclose(arr(p), [0.79 - 0.1 * buf], rtol=1e-6)
    np.testing.assert_allclose(arr(opt.state[p]["momentum_buffer"]), [buf], rtol=1e-6)


def test_sgd_nesterov_and_maximize_by_hand():
    p = param([1.0])
    opt = optim.SGD([p], lr=0.1, momentum=0.5, nesterov=True)
    set_grad(p, [1.0])
    opt.step()  # buf = 1; d = 1 + 0.5 * 1
    np.testing.assert_allclose(arr(p), [1.0 - 0.15], rtol=1e-6)
    p = param([1.0])
    opt = optim.SGD([p], lr=0.1, maximize=True)
    set_grad(p, [1.0])
    opt.step()
    np.testing.assert_allclose(arr(p), [1.1], rtol=1e-6)


def test_adam_family_first_step_by_hand():
    # The first bias-corrected Adam step moves every coordinate by lr * sign(grad).
    for cls, kw, decay in [(optim.Adam, {}, 1.0), (optim.AdamW, {"weight_decay": 0.1}, 1 - 0.01 * 0.1),
                           (optim.Adam, {"amsgrad": True}, 1.0)]:
        p = param([1.0, -1.0, 3.0])
        opt = cls([p], lr=0.01, **kw)
        set_grad(p, [0.5, -2.0, 4.0])
        opt.step()
        np.testing.assert_allclose(arr(p), np.array([1.0, -1.0, 3.0]) * decay - 0.01 * np.array([1, -1, 1]),
                                   rtol=1e-5)
        st = opt.state[p]
        assert float(st["step"]) == 1.0
        np.testing.assert_allclose(arr(st["exp_avg"]), 0.1 * np.array([0.5, -2.0, 4.0]), rtol=1e-6)
        if kw.get("amsgrad"):
            assert "max_exp_avg_sq" in st


def test_rmsprop_and_adagrad_first_step_by_hand():
    p = param([1.0, 1.0])
    opt = optim.RMSprop([p], lr=0.01, alpha=0.99)
    set_grad(p, [2.0, -0.5])
    opt.step()  # v = 0.01 g^2 -> step = lr * g / (0.1 |g|) = 0.1 sign(g)
    np.testing.assert_allclose(arr(p), [0.9, 1.1], rtol=1e-5)
    assert opt.state[p]["step"] == 1

    p = param([1.0, 1.0])
    opt = optim.Adagrad([p], lr=0.1, initial_accumulator_value=1.0)
    assert set(opt.state[p].keys()) == {"step", "sum"}  # created at construction, as torch
    set_grad(p, [2.0, 0.0])
    opt.step()  # sum = 1 + g^2; p -= lr * g / sqrt(sum)
    np.testing.assert_allclose(arr(p), [1 - 0.1 * 2 / math.sqrt(5), 1.0], rtol=1e-5)


def test_param_without_grad_is_skipped():
    a, b = param([1.0]), param([1.0])
    opt = optim.Adam([a, b], lr=0.1)
    set_grad(a, [1.0])
    opt.step()
    assert arr(b)[0] == 1.0 and b not in opt.state and a in opt.state and len(opt.state) == 1


# -- param_groups -----------------------------------------------------------------------------

def test_lr_edit_takes_effect_on_next_step():
    p = param([1.0])
    opt = optim.SGD([p], lr=0.1)
    for g in opt.param_groups:
        g["lr"] = 0.01
    set_grad(p, [1.0])
    opt.step()
    np.testing.assert_allclose(arr(p), [0.99], rtol=1e-6)
    opt.param_groups[0]["momentum"] = 0.5  # any option, not only lr
    set_grad(p, [1.0])
    opt.step()
    set_grad(p, [1.0])
    opt.step()  # buf = 1 then 1.5
    np.testing.assert_allclose(arr(p), [0.99 - 0.01 - 0.015], rtol=1e-6)


def test_per_group_options_and_add_param_group():
    a, b, c = param([1.0]), param([1.0]), param([1.0])
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5, "momentum": 0.9}], lr=0.1)
    assert opt.param_groups[1]["params"][0] is b and opt.param_groups[0]["momentum"] == 0
    set_grad(a, [1.0]), set_grad(b, [1.0])
    opt.step()
    np.testing.assert_allclose([arr(a)[0], arr(b)[0]], [0.9, 0.5], rtol=1e-6)
    assert a not in opt.state or opt.state[a].get("momentum_buffer") is None
    opt.add_param_group({"params": [c], "lr": 1.0})
    assert opt.param_groups[2]["momentum"] == 0 and opt.param_groups[2]["lr"] == 1.0
    set_grad(c, [0.25])
    opt.step()
    np.testing.assert_allclose(arr(c), [0.75], rtol=1e-6)
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})


def test_group_params_list_edit_is_seen():
    a, b = param([1.0]), param([1.0])
    opt = optim.SGD([a], lr=0.1)
    opt.param_groups[0]["params"].append(b)
    set_grad(a, [1.0]), set_grad(b, [1.0])
    opt.step()
    np.testing.assert_allclose([arr(a)[0], arr(b)[0]], [0.9, 0.9], rtol=1e-6)


def test_adagrad_added_group_gets_state():
    a, b = param([1.0]), param([1.0])
    opt = optim.Adagrad([a], lr=0.1, initial_accumulator_value=0.5)
    opt.add_param_group({"params": [b]})
    np.testing.assert_allclose(arr(opt.state[b]["sum"]), [0.5])


# -- errors -----------------------------------------------------------------------------------

@pytest.mark.parametrize("make, msg", [
    (lambda p: optim.SGD(p, lr=-1.0), "Invalid learning rate: -1.0"),
    (lambda p: optim.SGD(p, lr=0.1, momentum=-0.5), "Invalid momentum value: -0.5"),
    (lambda p: optim.SGD(p, lr=0.1, nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
    (lambda p: optim.Adam(p, betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    (lambda p: optim.AdamW(p, eps=-1e-3), "Invalid epsilon value: -0.001"),
    (lambda p: optim.RMSprop(p, alpha=-0.1), "Invalid alpha value: -0.1"),
    (lambda p: optim.Adagrad(p, lr_decay=-1), "Invalid lr_decay value: -1"),
    (lambda p: optim.Adam(p, weight_decay=-1), "Invalid weight_decay value: -1"),
])
def test_bad_hyper_parameters(make, msg):
    with pytest.raises(ValueError) as e:
        make([param([1.0])])
    assert str(e.value) == msg


def test_bad_params():
    p = param([1.0])
    with pytest.raises(TypeError, match="iterable of Tensors or dicts"):
        optim.SGD(p, lr=0.1)
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.Adam([])
    with pytest.raises(TypeError, match="can only optimize Tensors, but one of the params is int"):
        optim.Adam([1])
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([p * 2], lr=0.1)
    with pytest.raises(ValueError, match="required optimization parameter lr"):
        optim.SGD([p])
    with pytest.raises(TypeError, match="ordered collections"):
        optim.SGD([p], lr=0.1).add_param_group({"params": {param([1.0])}})


# -- zero_grad, closure, repr, state ----------------------------------------------------------

def test_zero_grad():
    p = param([1.0, 2.0])
    opt = optim.SGD([p], lr=0.1)
    set_grad(p, [1.0, 1.0])
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(arr(p.grad), [0.0, 0.0])
    opt.zero_grad()
    assert p.grad is None


def test_step_closure_runs_with_grad_and_returns_loss():
    p = param([3.0])
    opt = optim.SGD([p], lr=0.1)
    calls = []

    def closure():
        opt.zero_grad()
        calls.append(ember.is_grad_enabled())
        loss = (p * p).sum()
        loss.backward()
        return loss

    with ember.no_grad():
        loss = opt.step(closure)
    assert calls == [True]
    assert float(loss) == 9.0
    np.testing.assert_allclose(arr(p), [3.0 - 0.6], rtol=1e-6)
    assert opt.step() is None


def test_repr_as_torch():
    opt = optim.SGD([param([1.0])], lr=0.1)
    assert repr(opt) == ("SGD (\nParameter Group 0\n    dampening: 0\n    differentiable: False\n    foreach: None\n"
                         "    lr: 0.1\n    maximize: False\n    momentum: 0\n    nesterov: False\n"
                         "    weight_decay: 0\n)")


def test_state_entries_share_tensors_and_write_back():
    p = param([1.0])
    opt = optim.Adam([p], lr=0.1)
    set_grad(p, [1.0])
    opt.step()
    st = opt.state[p]
    st["exp_avg"].zero_()  # shared with the C++ state
    assert float(opt.state[p]["exp_avg"]) == 0.0
    st["step"] = ember.tensor(10.0)  # written back
    assert float(opt.state[p]["step"]) == 10.0
    assert list(opt.state) == [p] and list(opt.state.keys())[0] is p
    opt.state.clear()
    assert len(opt.state) == 0


# -- Python subclass --------------------------------------------------------------------------

class PlainSGD(optim.Optimizer):
    def __init__(self, params, lr=0.1, momentum=0.0):
        super().__init__(params, dict(lr=lr, momentum=momentum))

    @ember.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                d = p.grad
                if group["momentum"]:
                    st = self.state[p]
                    buf = st.get("buf")
                    st["buf"] = d.clone() if buf is None else buf * group["momentum"] + d
                    d = st["buf"]
                p.add_(d, alpha=-group["lr"])
        return None


def test_python_subclass_optimizer_matches_builtin():
    a, b = param([1.0, -1.0]), param([1.0, -1.0])
    mine, ref = PlainSGD([a], lr=0.1, momentum=0.9), optim.SGD([b], lr=0.1, momentum=0.9)
    for g in ([1.0, 2.0], [0.5, -1.0], [3.0, 0.0]):
        set_grad(a, g), set_grad(b, g)
        mine.step(), ref.step()
    np.testing.assert_allclose(arr(a), arr(b), rtol=1e-6)
    sd = mine.state_dict()
    assert list(sd["state"].keys()) == [0] and sd["param_groups"][0]["params"] == [0]
    np.testing.assert_allclose(arr(sd["state"][0]["buf"]), arr(ref.state[b]["momentum_buffer"]), rtol=1e-6)
    # round trip into a fresh instance
    c = param([0.0, 0.0])
    other = PlainSGD([c], lr=0.5)
    other.load_state_dict(sd)
    assert other.param_groups[0]["lr"] == 0.1 and other.param_groups[0]["params"][0] is c
    np.testing.assert_allclose(arr(other.state[c]["buf"]), arr(sd["state"][0]["buf"]))
    assert other.state[c]["buf"] is not sd["state"][0]["buf"]  # copied, as torch


# -- state_dict -------------------------------------------------------------------------------

GRADS = [np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.25, -0.75]), np.array([-2.0, 1.0, 0.1]),
         np.array([0.3, 0.3, -3.0])]

CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.5, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("Adam", dict(lr=0.01, maximize=True, amsgrad=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.2, amsgrad=True)),
    ("AdamW", dict(lr=0.01, maximize=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, maximize=True, momentum=0.5)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.1)),
    ("Adagrad", dict(lr=0.1, maximize=True)),
]


def run_ember(name, kw, steps, start=None, dtype=ember.float32):
    p = param([1.0, -2.0, 0.5], dtype=dtype)
    opt = getattr(optim, name)([p], **kw)
    for g in GRADS[:steps]:
        set_grad(p, g)
        opt.step()
    return p, opt


@pytest.mark.parametrize("name, kw", CONFIGS)
def test_state_dict_round_trip_continues_identically(name, kw):
    p, opt = run_ember(name, kw, 2)
    buf = io.BytesIO()
    ember.save(opt.state_dict(), buf)
    buf.seek(0)
    q = param(arr(p).tolist())
    opt2 = getattr(optim, name)([q], **kw)
    opt2.load_state_dict(ember.load(buf))
    for g in GRADS[2:]:
        set_grad(p, g), set_grad(q, g)
        opt.step(), opt2.step()
    np.testing.assert_array_equal(arr(p), arr(q))


def test_load_state_dict_checks_and_takes_group_options():
    p, opt = run_ember("SGD", dict(lr=0.1, momentum=0.9), 1)
    sd = opt.state_dict()
    sd["param_groups"][0]["lr"] = 0.5
    q = param([0.0, 0.0, 0.0])
    opt2 = optim.SGD([q], lr=0.1, momentum=0.9)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.5 and opt2.param_groups[0]["params"][0] is q
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optim.SGD([{"params": [param([1.0])]}, {"params": [param([1.0])]}], lr=0.1).load_state_dict(sd)
    with pytest.raises(ValueError, match="doesn't match the size"):
        optim.SGD([param([1.0]), param([1.0])], lr=0.1).load_state_dict(sd)


def test_state_dict_layout_matches_torch_names():
    p, opt = run_ember("Adam", dict(lr=0.01, amsgrad=True), 1)
    sd = opt.state_dict()
    assert list(sd["state"][0].keys()) == ["step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"]
    assert list(sd["param_groups"][0].keys()) == ["lr", "betas", "eps", "weight_decay", "amsgrad", "maximize",
                                                  "foreach", "capturable", "differentiable", "fused", "params"]


# -- against torch ----------------------------------------------------------------------------

def run_torch(torch, name, kw, steps, dtype):
    p = torch.tensor([1.0, -2.0, 0.5], dtype=dtype, requires_grad=True)
    opt = getattr(torch.optim, name)([p], **kw)
    for g in GRADS[:steps]:
        p.grad = torch.tensor(g, dtype=dtype)
        opt.step()
    return p, opt


@pytest.mark.parametrize("name, kw", CONFIGS)
def test_matches_torch(name, kw):
    torch = _torch()
    for e_dtype, t_dtype, rtol in ((ember.float32, torch.float32, 2e-6), (ember.float64, torch.float64, 1e-12)):
        p, _ = run_ember(name, kw, 4, dtype=e_dtype)
        t, _ = run_torch(torch, name, kw, 4, t_dtype)
        np.testing.assert_allclose(arr(p), t.detach().numpy(), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("name, kw", CONFIGS)
def test_torch_state_dict_into_ember(name, kw, tmp_path):
    torch = _torch()
    t, topt = run_torch(torch, name, kw, 2, torch.float32)
    torch.save(topt.state_dict(), tmp_path / "t.pt")
    p = param(t.detach().numpy().tolist())
    opt = getattr(optim, name)([p], **kw)
    opt.load_state_dict(ember.load(tmp_path / "t.pt"))
    for g in GRADS[2:]:
        set_grad(p, g)
        opt.step()
        t.grad = torch.tensor(g, dtype=torch.float32)
        topt.step()
    np.testing.assert_allclose(arr(p), t.detach().numpy(), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("name, kw", CONFIGS)
def test_ember_state_dict_into_torch(name, kw, tmp_path):
    torch = _torch()
    p, opt = run_ember(name, kw, 2)
    ember.save(opt.state_dict(), tmp_path / "e.pt")
    t = torch.tensor(arr(p), requires_grad=True)
    topt = getattr(torch.optim, name)([t], **kw)
    topt.load_state_dict(torch.load(tmp_path / "e.pt"))
    for g in GRADS[2:]:
        set_grad(p, g)
        opt.step()
        t.grad = torch.tensor(g, dtype=torch.float32)
        topt.step()
    np.testing.assert_allclose(arr(p), t.detach().numpy(), rtol=2e-6, atol=2e-6)


def test_repr_matches_torch():
    torch = _torch()
    for name, kw in CONFIGS:
        if name == "SGD" or name == "Adam":
            e = getattr(optim, name)([param([1.0])], **kw)
            t = getattr(torch.optim, name)([torch.ones(1, requires_grad=True)], **kw)
            assert repr(e) == repr(t)
