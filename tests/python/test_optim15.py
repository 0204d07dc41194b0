"""ember.optim's Python optimizers (Adadelta, Adamax, NAdam, RAdam, Rprop, ASGD, LBFGS) against
torch on identical models: parameter trajectories, state_dict layout and values, save/load
resumption, argument errors; and the Optimizer base features (hooks, named parameters,
load_state_dict casting, lr schedulers). Runs with torch 1.13 or 2.x: options and state that only
torch 2 has are checked where the installed torch has them, and by hand otherwise."""
import copy
import inspect
import io

import numpy as np
import pytest

import ember
from ember import optim


def _torch():
    return pytest.importorskip("torch", reason="PyTorch not installed: differential test skipped")


def _torch2(torch):
    return int(torch.__version__.split(".")[0]) >= 2


def _arr(t):
    return t.detach().numpy().copy() if hasattr(t, "detach") else np.asarray(t)


_RNG = np.random.default_rng(0)
_W, _B = _RNG.standard_normal((4, 3)), _RNG.standard_normal(3)
_X, _Y = _RNG.standard_normal((8, 4)), _RNG.standard_normal((8, 3))


def _make(lib, dtype):
    dt = getattr(lib, dtype)
    w = lib.tensor(_W, dtype=dt, requires_grad=True)
    b = lib.tensor(_B, dtype=dt, requires_grad=True)
    return [w, b], lib.tensor(_X, dtype=dt), lib.tensor(_Y, dtype=dt)


def _train(lib, opt, params, x, y, steps):
    """steps updates of a tanh regression; the parameters after each step."""
    w, b = params
    traj = []
    for _ in range(steps):
        opt.zero_grad()
        ((lib.tanh(x @ w + b) - y) ** 2).mean().backward()
        opt.step()
        traj.append(np.concatenate([_arr(p).ravel() for p in params]))
    return np.array(traj)


CASES = [
    ("Adadelta", {}),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1, maximize=True)),
    ("Adamax", {}),
    ("Adamax", dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.1)),
    ("Adamax", dict(lr=0.01, maximize=True)),
    ("NAdam", {}),
    ("NAdam", dict(lr=0.01, betas=(0.85, 0.99), weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", {}),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, betas=(0.9, 0.9))),  # rho_t > 5 from step 6 on
    ("RAdam", dict(lr=0.01, weight_decay=0.1, betas=(0.9, 0.9), decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01, betas=(0.9, 0.9), maximize=True)),
    ("Rprop", {}),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2), maximize=True)),
    ("ASGD", {}),
    ("ASGD", dict(lr=0.05, lambd=1e-2, alpha=0.5, t0=5, weight_decay=0.1)),
    ("ASGD", dict(lr=0.05, t0=3, maximize=True)),
]


def _torch_opt(torch, name, kw):
    cls = getattr(torch.optim, name)
    missing = set(kw) - set(inspect.signature(cls).parameters)
    if missing:
        pytest.skip(f"torch {torch.__version__} {name} has no {sorted(missing)}")
    return cls


def _case_id(case):
    return case[0] + "-" + "-".join(f"{k}={v}" for k, v in case[1].items())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_trajectory_and_state_match_torch(case, dtype):
    torch = _torch()
    name, kw = case
    tcls = _torch_opt(torch, name, kw)
    if name == "NAdam" and not _torch2(torch):
        pytest.skip("torch 1.13's NAdam counts mu twice in mu_product_next (fixed in torch 2; see "
                    "test_trajectory_matches_recorded_torch2)")
    tparams, tx, ty = _make(torch, dtype)
    eparams, ex, ey = _make(ember, dtype)
    topt, eopt = tcls(tparams, **kw), getattr(optim, name)(eparams, **kw)
    tt = _train(torch, topt, tparams, tx, ty, 20)
    et = _train(ember, eopt, eparams, ex, ey, 20)
    rtol, atol = (2e-6, 1e-6) if dtype == "float32" else (1e-12, 1e-13)
    np.testing.assert_allclose(et, tt, rtol=rtol, atol=atol)
    assert not np.allclose(et[-1], et[0])  # the parameters did move

    tsd, esd = topt.state_dict(), eopt.state_dict()
    assert list(esd["state"]) == list(tsd["state"]) == [0, 1]
    for i in (0, 1):
        ts, es = tsd["state"][i], esd["state"][i]
        assert list(es) == list(ts)
        for k in ts:
            if not isinstance(ts[k], torch.Tensor):  # torch 1.13 keeps some steps as ints
                assert float(es[k]) == float(ts[k])
                continue
            assert isinstance(es[k], ember.Tensor)
            assert str(es[k].dtype).split(".")[-1] == str(ts[k].dtype).split(".")[-1], k
            assert tuple(es[k].shape) == tuple(ts[k].shape), k
            np.testing.assert_allclose(_arr(es[k]), _arr(ts[k]), rtol=1e-5 if dtype == "float32" else 1e-11,
                                       atol=1e-6 if dtype == "float32" else 1e-12)
    tg, eg = tsd["param_groups"][0], esd["param_groups"][0]
    if _torch2(torch):
        assert eg == tg and list(eg) == list(tg)
    else:
        assert {k: eg[k] for k in tg} == tg


# Parameters after 20 float64 steps of torch 2.15 (its NAdam fixed a torch 1.13 bug that counted
# mu twice in mu_product_next; decoupled_weight_decay is new in torch 2): checked without torch.
TORCH2_FINAL_FLOAT64 = {
    'NAdam-': [
        0.09001567349081126, -0.16675277265350372, 0.675805073436823, 0.1408354673517187,
        -0.5697968468614993, 0.32064976576871024, 1.336952898223619, 0.9121910551603639,
        -0.6663255364337706, -1.300268197674116, -0.589056164326639, 0.07660408978378608,
        -2.290368374667168, -0.21081239856797648, -1.2111312770327858
    ],
    'NAdam-lr=0.01-betas=(0.85, 0.99)-weight_decay=0.1-momentum_decay=0.01': [
        -0.0225675608760474, -0.31803554215241836, 0.8916323869684148, -0.05451609209316799,
        -0.7030542010214136, 0.13068504541732456, 1.1375722194593936, 0.7601260623134494,
        -0.4862749512547894, -1.1033458453088647, -0.4454498322710029, 0.25387472254189297,
        -2.140800277220471, -0.18921603059881978, -1.053425157563532
    ],
    'NAdam-lr=0.01-weight_decay=0.1-decoupled_weight_decay=True-maximize=True': [
        0.1655671894454788, 0.04243405079936739, 0.4717787956023854, 0.003091482291260211,
        -0.3533023414263314, 0.23863941359928653, 1.069961246905617, 1.0946011975463708,
        -0.7942057766134477, -1.0751367948218422, -0.7767474063111403, -0.12396400162860931,
        -2.44843750987792, 0.017527775749246997, -1.38493094280867
    ],
    'RAdam-lr=0.01-weight_decay=0.1-betas=(0.9, 0.9)-decoupled_weight_decay=True': [
        0.03688781630433409, -0.221085368104608, 0.7167893663212037, 0.18827624075555033,
        -0.6204650755744325, 0.27409624682782074, 1.364138521238242, 0.8392032353947968,
        -0.6048678771751853, -1.3291673154321453, -0.5168138195100953, 0.12888670017947418,
        -2.1888915953795194, -0.2189402620523605, -1.1275840925815963
    ],
}


@pytest.mark.parametrize("key", sorted(TORCH2_FINAL_FLOAT64))
def test_trajectory_matches_recorded_torch2(key):
    name, kw = next(c for c in CASES if _case_id(c) == key)
    params, x, y = _make(ember, "float64")
    traj = _train(ember, getattr(optim, name)(params, **kw), params, x, y, 20)
    np.testing.assert_allclose(traj[-1], TORCH2_FINAL_FLOAT64[key], rtol=1e-12, atol=1e-14)


# The torch 2 state layout, by hand (so it is checked with torch 1.13 too).
STATE_KEYS = {
    "Adadelta": ["step", "square_avg", "acc_delta"],
    "Adamax": ["step", "exp_avg", "exp_inf"],
    "NAdam": ["step", "mu_product", "exp_avg", "exp_avg_sq"],
    "RAdam": ["step", "exp_avg", "exp_avg_sq"],
    "Rprop": ["step", "prev", "step_size"],
    "ASGD": ["step", "eta", "mu", "ax"],
}


@pytest.mark.parametrize("name", sorted(STATE_KEYS))
def test_state_layout_by_hand(name):
    params, x, y = _make(ember, "float64")
    opt = getattr(optim, name)(params)
    _train(ember, opt, params, x, y, 3)
    st = opt.state_dict()["state"][0]
    assert list(st) == STATE_KEYS[name]
    assert isinstance(st["step"], ember.Tensor) and st["step"].dim() == 0
    assert st["step"].dtype == ember.float32 and float(st["step"]) == 3.0
    for k in ("mu_product", "eta", "mu"):
        if k in st:
            assert st[k].dim() == 0 and st[k].dtype == ember.float32
    for k, v in st.items():
        if v.dim() > 0:
            assert v.dtype == ember.float64 and tuple(v.shape) == (4, 3)


def test_first_steps_by_hand():
    # Adadelta, step 1: square_avg = (1-rho) g^2; delta = sqrt(eps)/sqrt(square_avg+eps) * g.
    p = ember.tensor([1.0, -2.0], dtype=ember.float64, requires_grad=True)
    opt = optim.Adadelta([p], lr=0.5, rho=0.9, eps=1e-6)
    p.grad = ember.tensor([0.5, 4.0], dtype=ember.float64)
    opt.step()
    g = np.array([0.5, 4.0])
    delta = np.sqrt(1e-6) / np.sqrt(0.1 * g * g + 1e-6) * g
    np.testing.assert_allclose(_arr(p), np.array([1.0, -2.0]) - 0.5 * delta, rtol=1e-12)
    np.testing.assert_allclose(_arr(opt.state[p]["acc_delta"]), 0.1 * delta * delta, rtol=1e-12)
    # Rprop: the first step moves by lr * sign(g); a sign flip shrinks the step and skips it.
    p = ember.tensor([1.0, 1.0], dtype=ember.float64, requires_grad=True)
    opt = optim.Rprop([p], lr=0.1)
    p.grad = ember.tensor([2.0, -3.0], dtype=ember.float64)
    opt.step()
    np.testing.assert_allclose(_arr(p), [0.9, 1.1])
    p.grad = ember.tensor([-1.0, -1.0], dtype=ember.float64)
    opt.step()  # coordinate 0 flipped: step size 0.05, no move; coordinate 1: 0.12
    np.testing.assert_allclose(_arr(p), [0.9, 1.22])
    np.testing.assert_allclose(_arr(opt.state[p]["step_size"]), [0.05, 0.12])
    np.testing.assert_allclose(_arr(opt.state[p]["prev"]), [0.0, -1.0])
    # ASGD with t0 = 0: ax is the iterate after step 2, then averages the later ones.
    p = ember.tensor([1.0], dtype=ember.float64, requires_grad=True)
    opt = optim.ASGD([p], lr=0.1, lambd=0.0, t0=0)
    seen = []
    for _ in range(3):
        p.grad = ember.tensor([1.0], dtype=ember.float64)
        opt.step()
        seen.append(float(p))
    # (eta is a float32 tensor, as in torch: 0.1 is rounded to float32 even for float64 params.)
    np.testing.assert_allclose(seen, [0.9, 0.8, 0.7], rtol=1e-7)
    np.testing.assert_allclose(float(opt.state[p]["ax"][0]), 0.75, rtol=1e-7)  # (0.8 + 0.7) / 2


@pytest.mark.parametrize("case", [c for c in CASES if c[1]], ids=[_case_id(c) for c in CASES if c[1]])
def test_save_load_resumes_identically(case):
    name, kw = case
    cls = getattr(optim, name)
    params, x, y = _make(ember, "float32")
    opt = cls(params, **kw)
    _train(ember, opt, params, x, y, 7)
    buf = io.BytesIO()
    ember.save({"params": [p.detach() for p in params], "opt": opt.state_dict()}, buf)
    expected = _train(ember, opt, params, x, y, 6)

    buf.seek(0)
    ckpt = ember.load(buf)
    params2 = [p.clone().requires_grad_(True) for p in ckpt["params"]]
    opt2 = cls(params2)  # default options: load_state_dict brings the saved ones
    opt2.load_state_dict(ckpt["opt"])
    assert opt2.param_groups[0]["lr"] == kw.get("lr", opt2.defaults["lr"])
    np.testing.assert_array_equal(_train(ember, opt2, params2, x, y, 6), expected)


@pytest.mark.parametrize("case", [c for c in CASES if c[1]], ids=[_case_id(c) for c in CASES if c[1]])
def test_torch_state_dict_loads_into_ember(case):
    torch = _torch()
    name, kw = case
    tcls = _torch_opt(torch, name, kw)
    if name == "NAdam" and not _torch2(torch):
        pytest.skip("torch 1.13's NAdam counts mu twice in mu_product_next (fixed in torch 2)")
    tparams, tx, ty = _make(torch, "float64")
    topt = tcls(tparams, **kw)
    _train(torch, topt, tparams, tx, ty, 5)
    sd = topt.state_dict()
    conv = {"param_groups": sd["param_groups"],
            "state": {i: {k: ember.tensor(v.numpy()) if isinstance(v, torch.Tensor) else v for k, v in s.items()}
                      for i, s in sd["state"].items()}}
    eparams = [ember.tensor(_arr(p), requires_grad=True) for p in tparams]
    eopt = getattr(optim, name)(eparams, **kw)
    eopt.load_state_dict(conv)
    topt.load_state_dict(copy.deepcopy(sd))  # so torch casts its state as ember did (ASGD's eta to float64)
    st = eopt.state[eparams[0]]
    assert isinstance(st["step"], ember.Tensor) and float(st["step"]) == 5.0  # int steps (1.13) become tensors
    np.testing.assert_allclose(_train(ember, eopt, eparams, ember.tensor(_X), ember.tensor(_Y), 5),
                               _train(torch, topt, tparams, tx, ty, 5),
                               rtol=1e-11, atol=1e-12)


BAD = [
    ("Adadelta", dict(lr=-1.0), "Invalid learning rate: -1.0"),
    ("Adadelta", dict(rho=1.5), "Invalid rho value: 1.5"),
    ("Adadelta", dict(eps=-1e-6), "Invalid epsilon value: -1e-06"),
    ("Adadelta", dict(weight_decay=-0.1), "Invalid weight_decay value: -0.1"),
    ("Adamax", dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    ("Adamax", dict(betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    ("Adamax", dict(eps=-1.0), "Invalid epsilon value: -1.0"),
    ("NAdam", dict(momentum_decay=-1.0), "Invalid momentum_decay value: -1.0"),
    ("NAdam", dict(lr=-0.5), "Invalid learning rate: -0.5"),
    ("NAdam", dict(weight_decay=-2), "Invalid weight_decay value: -2"),
    ("RAdam", dict(betas=(0.5, 1.0)), "Invalid beta parameter at index 1: 1.0"),
    ("RAdam", dict(lr=-1e-3), "Invalid learning rate: -0.001"),
    ("Rprop", dict(etas=(1.5, 1.2)), "Invalid eta values: 1.5, 1.2"),
    ("Rprop", dict(etas=(0.5, 0.9)), "Invalid eta values: 0.5, 0.9"),
    ("Rprop", dict(lr=-0.1), "Invalid learning rate: -0.1"),
    ("ASGD", dict(lambd=-1.0), "Invalid lambd value: -1.0"),
    ("ASGD", dict(alpha=-0.5), "Invalid alpha value: -0.5"),
    ("ASGD", dict(weight_decay=-1.0), "Invalid weight_decay value: -1.0"),
    ("LBFGS", dict(lr=-1.0), "Invalid learning rate: -1.0"),
]


@pytest.mark.parametrize("name,kw,msg", BAD, ids=[f"{b[0]}-{b[2]}" for b in BAD])
def test_bad_arguments(name, kw, msg):
    p = ember.zeros(2, requires_grad=True)
    with pytest.raises(ValueError) as e:
        getattr(optim, name)([p], **kw)
    assert str(e.value) == msg
    try:
        import torch
    except ImportError:
        return
    if _torch2(torch):  # torch 1.13 lacks some of these checks
        with pytest.raises(ValueError) as te:
            getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kw)
        assert str(te.value) == msg


def test_defaults_and_flags_accepted():
    p = ember.zeros(2, requires_grad=True)
    expect = {
        "Adadelta": dict(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0),
        "Adamax": dict(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0),
        "NAdam": dict(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                      decoupled_weight_decay=False),
        "RAdam": dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False),
        "Rprop": dict(lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50)),
        "ASGD": dict(lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0),
        "LBFGS": dict(lr=1, max_iter=20, max_eval=25, tolerance_grad=1e-7, tolerance_change=1e-9,
                      history_size=100, line_search_fn=None),
    }
    for name, d in expect.items():
        opt = getattr(optim, name)([p])
        assert {k: opt.defaults[k] for k in d} == d, name
        if name != "LBFGS":
            opt = getattr(optim, name)([p], foreach=False, maximize=True, differentiable=False, capturable=False)
            assert opt.param_groups[0]["maximize"] is True
    # A one-element tensor lr is accepted; a longer one is not.
    optim.NAdam([p], lr=ember.tensor(0.01))
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        optim.RAdam([p], lr=ember.tensor([0.1, 0.2]))


def test_param_groups_and_lr_scheduler_drive_the_new_optimizers():
    torch = _torch()
    for name in ("Adadelta", "Adamax", "NAdam", "RAdam", "Rprop", "ASGD"):
        if name == "NAdam" and not _torch2(torch):
            continue  # torch 1.13's NAdam differs (see test_trajectory_and_state_match_torch)
        out = []
        for lib, mod in ((torch, torch.optim), (ember, optim)):
            (w, b), x, y = _make(lib, "float64")
            opt = getattr(mod, name)([{"params": [w]}, {"params": [b], "lr": 0.003}], lr=0.02)
            sched = mod.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
            traj = []
            for _ in range(8):
                traj.append(_train(lib, opt, [w, b], x, y, 1)[0])
                sched.step()
            assert [g["lr"] for g in opt.param_groups] == [0.02 * 0.5 ** 2, 0.003 * 0.5 ** 2]
            out.append(np.array(traj))
        np.testing.assert_allclose(out[1], out[0], rtol=1e-11, atol=1e-12, err_msg=name)


def test_add_param_group_and_zero_grad():
    (w, b), x, y = _make(ember, "float32")
    opt = optim.NAdam([w], lr=0.01)
    _train(ember, opt, [w, b], x, y, 2)
    assert b not in opt.state and float(opt.state[w]["step"]) == 2
    opt.add_param_group({"params": [b], "lr": 0.1, "decoupled_weight_decay": True})
    assert opt.param_groups[1]["betas"] == (0.9, 0.999) and opt.param_groups[1]["lr"] == 0.1
    _train(ember, opt, [w, b], x, y, 1)
    assert float(opt.state[b]["step"]) == 1 and float(opt.state[w]["step"]) == 3
    opt.zero_grad()
    assert w.grad is None and b.grad is None
    _train(ember, opt, [w, b], x, y, 1)
    opt.zero_grad(set_to_none=False)
    assert float(w.grad.abs().sum()) == 0.0
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [w]})


# -- LBFGS --------------------------------------------------------------------------------------

def _rosenbrock(x):
    return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()


def _lbfgs_run(lib, problem, dtype, kw, steps):
    dt = getattr(lib, dtype)
    if problem == "rosenbrock":
        x = lib.tensor([-1.5, 2.0, 0.5, -0.3], dtype=dt, requires_grad=True)
        params, f = [x], (lambda: _rosenbrock(x))
    else:
        rng = np.random.default_rng(1)
        xs = lib.tensor(rng.standard_normal((20, 3)), dtype=dt)
        ys = lib.tensor(rng.standard_normal((20, 2)), dtype=dt)
        w = lib.tensor(rng.standard_normal((3, 2)) * 0.1, dtype=dt, requires_grad=True)
        b = lib.tensor(np.zeros(2), dtype=dt, requires_grad=True)
        params, f = [w, b], (lambda: ((lib.tanh(xs @ w + b) - ys) ** 2).mean())
    opt = (optim.LBFGS if lib is ember else lib.optim.LBFGS)(params, **kw)
    traj, losses = [], []

    def closure():
        opt.zero_grad()
        loss = f()
        loss.backward()
        return loss
    for _ in range(steps):
        losses.append(float(opt.step(closure).detach()))
        traj.append(np.concatenate([_arr(p).ravel() for p in params]))
    return np.array(traj), losses, opt, params


LBFGS_CASES = [
    {},
    dict(line_search_fn="strong_wolfe"),
    dict(lr=0.5, history_size=3, max_iter=7),
    dict(line_search_fn="strong_wolfe", history_size=2, max_iter=10, max_eval=12, tolerance_change=1e-6),
]


@pytest.mark.parametrize("problem", ["rosenbrock", "regression"])
@pytest.mark.parametrize("kw", LBFGS_CASES, ids=[_case_id(("LBFGS", k)) for k in LBFGS_CASES])
def test_lbfgs_matches_torch_float64(kw, problem):
    torch = _torch()
    tt, tl, topt, _ = _lbfgs_run(torch, problem, "float64", kw, 5)
    et, el, eopt, _ = _lbfgs_run(ember, problem, "float64", kw, 5)
    np.testing.assert_allclose(et, tt, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(el, tl, rtol=1e-9, atol=1e-12)
    ts, es = topt.state_dict()["state"][0], eopt.state_dict()["state"][0]
    assert list(es) == list(ts)
    assert es["func_evals"] == ts["func_evals"] and es["n_iter"] == ts["n_iter"]
    for k in ("d", "prev_flat_grad", "H_diag", "t"):
        np.testing.assert_allclose(_arr(es[k]), _arr(ts[k]), rtol=1e-8, atol=1e-12)
        assert isinstance(es[k], ember.Tensor) == isinstance(ts[k], torch.Tensor), k
    assert len(es["old_dirs"]) == len(ts["old_dirs"]) == len(es["ro"])
    assert len(es["al"]) == len(ts["al"]) == kw.get("history_size", 100)
    assert es["prev_loss"] == pytest.approx(ts["prev_loss"], rel=1e-9)


def test_lbfgs_float32_regression_close_to_torch():
    # float32 iterates agree while the problem is well conditioned: ember's reductions (dot, sum)
    # round differently from torch's BLAS, and L-BFGS amplifies such differences on Rosenbrock.
    torch = _torch()
    for kw in LBFGS_CASES[:2]:
        tt, _, _, _ = _lbfgs_run(torch, "regression", "float32", dict(kw, max_iter=4), 2)
        et, _, _, _ = _lbfgs_run(ember, "regression", "float32", dict(kw, max_iter=4), 2)
        np.testing.assert_allclose(et, tt, rtol=1e-5, atol=1e-6)


def _rosenbrock_2d(maximize=False, **kw):
    """L-BFGS from the classic start (-1.2, 1) (the 4-d start above ends in a local minimum)."""
    x = ember.tensor([-1.2, 1.0], dtype=ember.float64, requires_grad=True)
    opt = optim.LBFGS([x], max_iter=200, max_eval=400, maximize=maximize, **kw)

    def closure():
        opt.zero_grad()
        loss = -_rosenbrock(x) if maximize else _rosenbrock(x)
        loss.backward()
        return loss
    first = float(opt.step(closure))
    for _ in range(2):
        opt.step(closure)
    return x, first


def test_lbfgs_converges_on_rosenbrock():
    for kw in ({"lr": 0.1}, dict(line_search_fn="strong_wolfe")):
        x, first = _rosenbrock_2d(**kw)
        np.testing.assert_allclose(_arr(x), np.ones(2), atol=1e-3)
        assert first > 1 and float(_rosenbrock(x)) < 1e-8


def test_lbfgs_maximize_and_history():
    traj, losses, opt, (x,) = _lbfgs_run(ember, "rosenbrock", "float64", dict(history_size=2), 2)
    st = opt.state[x]
    assert len(st["old_dirs"]) == len(st["old_stps"]) == len(st["ro"]) == 2
    # maximize: the maximum of -f is the minimum of f.
    x, first = _rosenbrock_2d(maximize=True, line_search_fn="strong_wolfe")
    np.testing.assert_allclose(_arr(x), np.ones(2), atol=1e-4)
    assert first < -1


def test_lbfgs_state_dict_round_trip_and_errors():
    _, _, opt, params = _lbfgs_run(ember, "regression", "float64", dict(line_search_fn="strong_wolfe", max_iter=3), 2)
    sd = opt.state_dict()
    assert list(sd["state"]) == [0]
    assert list(sd["state"][0]) == ["func_evals", "n_iter", "al", "d", "t", "old_dirs", "old_stps", "ro", "H_diag",
                                    "prev_flat_grad", "prev_loss"]
    buf = io.BytesIO()
    ember.save({"p": [p.detach() for p in params], "opt": sd}, buf)
    buf.seek(0)
    ckpt = ember.load(buf)
    # Continue the original and a reloaded copy: the same iterates.
    rng = np.random.default_rng(1)
    xs = ember.tensor(rng.standard_normal((20, 3)), dtype=ember.float64)
    ys = ember.tensor(rng.standard_normal((20, 2)), dtype=ember.float64)

    def go(o, ps):
        w, b = ps

        def closure():
            o.zero_grad()
            loss = ((ember.tanh(xs @ w + b) - ys) ** 2).mean()
            loss.backward()
            return loss
        for _ in range(2):
            o.step(closure)
        return np.concatenate([_arr(p).ravel() for p in ps])
    params2 = [p.clone().requires_grad_(True) for p in ckpt["p"]]
    opt2 = optim.LBFGS(params2, line_search_fn="strong_wolfe", max_iter=3)
    opt2.load_state_dict(ckpt["opt"])
    np.testing.assert_array_equal(go(opt2, params2), go(opt, params))

    w = ember.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="LBFGS doesn't support per-parameter options"):
        optim.LBFGS([{"params": [w]}, {"params": [ember.zeros(1, requires_grad=True)]}])
    w.grad = ember.ones(2)
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        optim.LBFGS([w], line_search_fn="armijo").step(lambda: (w * w).sum())


# -- Optimizer base features --------------------------------------------------------------------

@pytest.mark.parametrize("cls", [optim.NAdam, optim.Adam, optim.SGD])
def test_step_hooks(cls):
    (w, b), x, y = _make(ember, "float32")
    opt = cls([w, b], lr=0.01)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", o is opt)))
    h2 = opt.register_step_post_hook(lambda o, a, k: calls.append(("post", o is opt)))
    g1 = optim.optimizer.register_optimizer_step_pre_hook(lambda o, a, k: calls.append(("gpre", type(o))))
    g2 = optim.optimizer.register_optimizer_step_post_hook(lambda o, a, k: calls.append(("gpost", type(o))))
    _train(ember, opt, [w, b], x, y, 1)
    assert calls == [("gpre", cls), ("pre", True), ("post", True), ("gpost", cls)]
    for h in (h1, h2, g1, g2):
        h.remove()
    calls.clear()
    _train(ember, opt, [w, b], x, y, 1)
    assert calls == []
    # A pre hook may replace the arguments: here it supplies a closure whose loss step returns.
    h = opt.register_step_pre_hook(lambda o, a, k: ((a[0],), {"closure": lambda: 42.0}))
    assert opt.step() == 42.0
    h.remove()
    h = opt.register_step_pre_hook(lambda o, a, k: "bad")
    with pytest.raises(RuntimeError, match="must return None or a tuple"):
        opt.step()
    h.remove()


@pytest.mark.parametrize("cls", [optim.RAdam, optim.Adam])
def test_state_dict_hooks(cls):
    (w, b), x, y = _make(ember, "float32")
    opt = cls([w, b], lr=0.01)
    _train(ember, opt, [w, b], x, y, 1)
    seen = []
    opt.register_state_dict_pre_hook(lambda o: seen.append("pre"))
    opt.register_state_dict_pre_hook(lambda o: seen.append("pre0"), prepend=True)
    opt.register_state_dict_post_hook(lambda o, sd: dict(sd, extra=1))
    sd = opt.state_dict()
    assert seen == ["pre0", "pre"] and sd["extra"] == 1
    opt.register_load_state_dict_pre_hook(lambda o, sd: {k: v for k, v in sd.items() if k != "extra"})
    opt.register_load_state_dict_post_hook(lambda o: seen.append("loaded"))
    sd["param_groups"][0]["lr"] = 0.5
    opt.load_state_dict(sd)
    assert seen[-1] == "loaded" and opt.param_groups[0]["lr"] == 0.5


def test_named_parameters():
    model = ember.nn.Linear(3, 2)
    for cls in (optim.Adamax, optim.SGD):
        opt = cls(model.named_parameters(), lr=0.1)
        assert opt.param_groups[0]["param_names"] == ["weight", "bias"]
        assert opt.param_groups[0]["params"][0] is model.weight
        assert opt.state_dict()["param_groups"][0]["param_names"] == ["weight", "bias"]
        with pytest.raises(ValueError, match="all optimizer param groups should be with/without names"):
            opt.add_param_group({"params": [ember.zeros(1, requires_grad=True)]})
    with pytest.raises(ValueError, match="Some param names are missing"):
        optim.Adamax([("w", model.weight), model.bias])
    with pytest.warns(FutureWarning, match="ordered collections"):
        optim.Adamax({model.weight})


def test_load_state_dict_casts_like_torch2():
    # float64 state into float32 parameters: cast, except 'step'; tensors whose dtype already
    # matches are shared, not copied (torch 2).
    (w, b), x, y = _make(ember, "float64")
    opt = optim.Adamax([w, b])
    _train(ember, opt, [w, b], x, y, 2)
    sd = opt.state_dict()
    (w32, b32), _, _ = _make(ember, "float32")
    opt32 = optim.Adamax([w32, b32])
    opt32.load_state_dict(sd)
    st = opt32.state[w32]
    assert st["exp_avg"].dtype == ember.float32 and st["step"].dtype == ember.float32
    assert st["step"] is sd["state"][0]["step"]
    opt64 = optim.Adamax([w.detach().clone().requires_grad_(True), b.detach().clone().requires_grad_(True)])
    opt64.load_state_dict(sd)
    p0 = opt64.param_groups[0]["params"][0]
    assert opt64.state[p0]["exp_avg"].data_ptr() == sd["state"][0]["exp_avg"].data_ptr()
    # capturable groups keep 'step' as float32 on the parameter's device.
    sd["param_groups"][0]["capturable"] = True
    sd["state"][0]["step"] = ember.tensor(2.0, dtype=ember.float64)
    opt32.load_state_dict(sd)
    assert opt32.state[w32]["step"].dtype == ember.float32


DIFFERENTIABLE = [("Adadelta", dict(weight_decay=0.1)), ("Adamax", dict(weight_decay=0.1)),
                  ("NAdam", dict(weight_decay=0.1)), ("RAdam", dict(weight_decay=0.1, betas=(0.9, 0.9))),
                  ("Rprop", {}), ("ASGD", dict(weight_decay=0.1))]


@pytest.mark.parametrize("case", DIFFERENTIABLE, ids=[c[0] for c in DIFFERENTIABLE])
def test_differentiable_step_matches_torch(case):
    # differentiable=True: the update is recorded by autograd, so d(new param)/d(old param)
    # (here 1 - lr * weight_decay-like factors) flows back as in torch.
    torch = _torch()
    name, kw = case
    _torch_opt(torch, name, dict(kw, differentiable=True))
    grads = []
    for lib, mod in ((torch, torch.optim), (ember, optim)):
        w = lib.tensor([1.0, -2.0], dtype=lib.float64, requires_grad=True)
        p = w.clone()
        opt = getattr(mod, name)([p], lr=0.1, differentiable=True, **kw)
        p.grad = lib.tensor([0.3, 0.4], dtype=lib.float64)
        opt.step()
        (p * lib.tensor([1.0, 3.0], dtype=lib.float64)).sum().backward()
        grads.append(_arr(w.grad))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)


@pytest.mark.parametrize("name", ["ASGD", "NAdam", "LBFGS"])
def test_reload_with_module_parameters_keeps_scalar_state(name):
    # nn.Parameter-held state: the reloaded scalars ('eta', 'mu_product', ...) keep the values
    # and dtype load_state_dict gave them, and the optimizer goes on as the original.
    ember.manual_seed(3)
    model = ember.nn.Linear(3, 2).double()
    model2 = ember.nn.Linear(3, 2).double()
    model2.load_state_dict(model.state_dict())
    x, y = ember.randn(5, 3, dtype=ember.float64), ember.randn(5, 2, dtype=ember.float64)
    opts = [getattr(optim, name)(m.parameters(), lr=0.05) for m in (model, model2)]

    def run(m, o, n):
        for _ in range(n):
            def closure():
                o.zero_grad()
                loss = ((m(x) - y) ** 2).mean()
                loss.backward()
                return loss
            o.step(closure)
    run(model, opts[0], 3)
    run(model2, opts[1], 3)
    opts[1].load_state_dict(copy.deepcopy(opts[0].state_dict()))
    for k, v in opts[1].state[model2.weight].items():
        if isinstance(v, ember.Tensor) and k != "step":
            assert v.dtype == ember.float64, k
    run(model, opts[0], 3)
    run(model2, opts[1], 3)
    # (As in torch 2, the reload casts 'eta'/'mu'/'mu_product' to float64, so from then on they
    # round differently from the original's float32 ones.)
    np.testing.assert_allclose(_arr(model2.weight), _arr(model.weight), rtol=0 if name == "LBFGS" else 1e-7)
