"""ember.optim.lr_scheduler: lr sequences against closed forms (always run) and against torch
1.13's schedulers step by step (when torch is installed); state_dict round trips."""
import io
import math
import re

import pytest

import ember
from ember import optim
from ember.optim import lr_scheduler as S


def _torch():
    return pytest.importorskip("torch", reason="PyTorch not installed: differential test skipped")


def make_opt(lr=0.1, groups=1, cls=optim.SGD, **kw):
    params = [{"params": [ember.zeros(1, requires_grad=True)], "lr": lr * (i + 1)} for i in range(groups)]
    return cls(params, lr=lr, **kw)


def lrs_of(sched, opt, n, metric=None):
    out = []
    for i in range(n):
        out.append([g["lr"] for g in opt.param_groups])
        opt.step()
        if metric is None:
            sched.step()
        else:
            sched.step(metric(i))
    return out


# -- closed forms -----------------------------------------------------------------------------

def test_step_lr_closed_form():
    opt = make_opt(0.1)
    got = lrs_of(S.StepLR(opt, step_size=3, gamma=0.5), opt, 10)
    assert [g[0] for g in got] == pytest.approx([0.1 * 0.5 ** (e // 3) for e in range(10)])


def test_multistep_exponential_lambda_multiplicative():
    opt = make_opt(1.0)
    got = lrs_of(S.MultiStepLR(opt, milestones=[2, 5, 5], gamma=0.1), opt, 7)
    assert [g[0] for g in got] == pytest.approx([1, 1, 0.1, 0.1, 0.1, 0.001, 0.001])
    opt = make_opt(1.0)
    got = lrs_of(S.ExponentialLR(opt, gamma=0.9), opt, 5)
    assert [g[0] for g in got] == pytest.approx([0.9 ** e for e in range(5)])
    opt = make_opt(1.0, groups=2)
    got = lrs_of(S.LambdaLR(opt, [lambda e: 1 / (e + 1), lambda e: 2.0]), opt, 4)
    assert got == [pytest.approx([1 / (e + 1), 4.0]) for e in range(4)]
    opt = make_opt(1.0)
    got = lrs_of(S.MultiplicativeLR(opt, lambda e: 0.5), opt, 4)
    assert [g[0] for g in got] == pytest.approx([1, 0.5, 0.25, 0.125])


def test_constant_linear_polynomial():
    opt = make_opt(1.0)
    got = lrs_of(S.ConstantLR(opt, factor=0.5, total_iters=3), opt, 5)
    assert [g[0] for g in got] == pytest.approx([0.5, 0.5, 0.5, 1, 1])
    opt = make_opt(1.0)
    got = lrs_of(S.LinearLR(opt, start_factor=0.25, end_factor=1.0, total_iters=3), opt, 6)
    assert [g[0] for g in got] == pytest.approx([0.25, 0.5, 0.75, 1, 1, 1])
    opt = make_opt(1.0)
    got = lrs_of(S.PolynomialLR(opt, total_iters=4, power=2.0), opt, 6)
    assert [g[0] for g in got] == pytest.approx([(1 - min(e, 4) / 4) ** 2 for e in range(6)])


def test_cosine_annealing_closed_form():
    opt = make_opt(1.0)
    got = lrs_of(S.CosineAnnealingLR(opt, T_max=10, eta_min=0.1), opt, 11)
    want = [0.1 + 0.9 * (1 + math.cos(math.pi * e / 10)) / 2 for e in range(11)]
    assert [g[0] for g in got] == pytest.approx(want)


def test_warm_restarts_closed_form():
    opt = make_opt(1.0)
    got = lrs_of(S.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2), opt, 8)
    # periods 2, 4, 8: T_cur = 0,1 | 0,1,2,3 | 0,1
    tc = [(0, 2), (1, 2), (0, 4), (1, 4), (2, 4), (3, 4), (0, 8), (1, 8)]
    assert [g[0] for g in got] == pytest.approx([(1 + math.cos(math.pi * c / t)) / 2 for c, t in tc])
    with pytest.raises(ValueError, match="Expected positive integer T_0, but got 0"):
        S.CosineAnnealingWarmRestarts(opt, T_0=0)


def test_one_cycle_shape_and_momentum():
    opt = make_opt(0.1, momentum=0.9)
    sched = S.OneCycleLR(opt, max_lr=1.0, total_steps=10, anneal_strategy="linear")
    got = [g[0] for g in lrs_of(sched, opt, 10)]
    assert got[0] == pytest.approx(1.0 / 25)
    assert max(got) == pytest.approx(1.0) and got.index(max(got)) == 2
    assert got[-1] == pytest.approx(1.0 / 25 / 1e4)
    with pytest.raises(ValueError, match="Tried to step 12 times"):
        sched.step()
    opt = make_opt(0.1, cls=optim.Adam)
    S.OneCycleLR(opt, max_lr=1.0, total_steps=10)
    assert opt.param_groups[0]["betas"][0] == pytest.approx(0.95)
    with pytest.raises(ValueError, match="total_steps OR"):
        S.OneCycleLR(make_opt(), max_lr=1.0)


def test_reduce_on_plateau():
    opt = make_opt(1.0)
    sched = S.ReduceLROnPlateau(opt, factor=0.5, patience=1, cooldown=1, min_lr=0.2)
    metrics = [5, 4, 4, 4, 4, 4, 4, 4, 4]
    got = []
    for m in metrics:
        sched.step(m)
        got.append(opt.param_groups[0]["lr"])
    # bad epochs: idx2 (1), idx3 (2 > patience) -> 0.5, cooldown idx4, idx5 (1), idx6 -> 0.25, ... floor 0.2
    assert got == pytest.approx([1, 1, 1, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25])
    assert sched.get_last_lr() == pytest.approx([0.25])
    with pytest.raises(ValueError, match="Factor should be < 1.0."):
        S.ReduceLROnPlateau(opt, factor=1.0)


def test_sequential_and_chained():
    opt = make_opt(1.0)
    s1 = S.ConstantLR(opt, factor=0.1, total_iters=2)
    s2 = S.ExponentialLR(opt, gamma=0.9)
    got = [g[0] for g in lrs_of(S.SequentialLR(opt, [s1, s2], milestones=[2]), opt, 5)]
    assert got == pytest.approx([0.1, 0.1, 1.0, 0.9, 0.81])
    opt = make_opt(1.0)
    s1 = S.ConstantLR(opt, factor=0.5, total_iters=2)
    s2 = S.ExponentialLR(opt, gamma=0.9)
    got = [g[0] for g in lrs_of(S.ChainedScheduler([s1, s2]), opt, 4)]
    assert got == pytest.approx([0.5, 0.45, 0.81, 0.729])


def test_scheduler_drives_cpp_optimizer_step():
    p = ember.ones(1, requires_grad=True)
    opt = optim.SGD([p], lr=1.0)
    sched = S.StepLR(opt, step_size=1, gamma=0.5)
    for _ in range(3):
        p.grad = ember.ones(1)
        opt.step()
        sched.step()
    assert float(p.detach()) == pytest.approx(1 - 1 - 0.5 - 0.25)
    assert opt.param_groups[0]["initial_lr"] == 1.0 and sched.get_last_lr() == [0.125]


def test_state_dict_round_trip_and_resume():
    opt = make_opt(1.0)
    sched = S.StepLR(opt, step_size=2, gamma=0.5)
    for _ in range(3):
        opt.step()
        sched.step()
    buf = io.BytesIO()
    ember.save(sched.state_dict(), buf)  # scheduler state is plain data
    buf.seek(0)
    opt2 = make_opt(1.0)
    sched2 = S.StepLR(opt2, step_size=5, gamma=0.1)
    sched2.load_state_dict(ember.load(buf))
    assert sched2.last_epoch == 3 and sched2.step_size == 2 and sched2.get_last_lr() == sched.get_last_lr()
    opt2.param_groups[0]["lr"] = sched.get_last_lr()[0]
    sched.step(), sched2.step()
    assert sched2.get_last_lr() == pytest.approx(sched.get_last_lr())


def test_resume_requires_initial_lr_and_type_checks():
    with pytest.raises(KeyError, match="initial_lr"):
        S.StepLR(make_opt(), step_size=1, last_epoch=3)
    with pytest.raises(TypeError, match="is not an Optimizer"):
        S.StepLR(object(), step_size=1)


def test_step_with_epoch_uses_closed_form():
    opt = make_opt(1.0)
    sched = S.StepLR(opt, step_size=2, gamma=0.5)
    sched.step(5)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.25)


def test_python_subclass_scheduler():
    class Halving(S.LRScheduler):
        def get_lr(self):
            return [b * 0.5 ** self.last_epoch for b in self.base_lrs]

    opt = make_opt(1.0)
    got = [g[0] for g in lrs_of(Halving(opt), opt, 3)]
    assert got == [1.0, 0.5, 0.25]


# -- against torch ----------------------------------------------------------------------------

def _cases(torch_mod):
    return [
        ("StepLR", dict(step_size=3, gamma=0.3), {}),
        ("MultiStepLR", dict(milestones=[2, 4, 4, 9], gamma=0.5), {}),
        ("ExponentialLR", dict(gamma=0.8), {}),
        ("ConstantLR", dict(factor=0.3, total_iters=4), {}),
        ("LinearLR", dict(start_factor=0.1, end_factor=0.9, total_iters=7), {}),
        ("PolynomialLR", dict(total_iters=6, power=1.5), {}),
        ("CosineAnnealingLR", dict(T_max=5, eta_min=0.01), {}),
        ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=2, eta_min=0.001), {}),
        ("OneCycleLR", dict(max_lr=0.5, total_steps=20), {}),
        ("OneCycleLR", dict(max_lr=[0.5, 1.0], total_steps=20, three_phase=True, anneal_strategy="linear"), {}),
        ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=3, mode="triangular2"), {}),
        ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=2, step_size_down=5, mode="exp_range",
                          gamma=0.9), {}),
    ]


@pytest.mark.parametrize("idx", range(12))
def test_matches_torch(idx):
    torch = _torch()
    name, kw, _ = _cases(None)[idx]
    e_opt = make_opt(0.1, groups=2, momentum=0.9)
    t_opt = torch.optim.SGD([{"params": [torch.zeros(1, requires_grad=True)], "lr": 0.1 * (i + 1)} for i in range(2)],
                            lr=0.1, momentum=0.9)
    e = getattr(S, name)(e_opt, **kw)
    t = getattr(torch.optim.lr_scheduler, name)(t_opt, **kw)
    for _ in range(19):
        assert [g["lr"] for g in e_opt.param_groups] == pytest.approx([g["lr"] for g in t_opt.param_groups], rel=1e-12)
        assert [g["momentum"] for g in e_opt.param_groups] == pytest.approx([g["momentum"] for g in t_opt.param_groups])
        assert e.get_last_lr() == pytest.approx(t.get_last_lr(), rel=1e-12)
        e_opt.step(), t_opt.step()
        e.step(), t.step()
    assert e.last_epoch == t.last_epoch


def test_cosine_beyond_t_max_and_plateau_match_torch():
    torch = _torch()
    e_opt, t_opt = make_opt(1.0), torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    e, t = S.CosineAnnealingLR(e_opt, T_max=3), torch.optim.lr_scheduler.CosineAnnealingLR(t_opt, T_max=3)
    for _ in range(12):
        e_opt.step(), t_opt.step(), e.step(), t.step()
        assert e_opt.param_groups[0]["lr"] == pytest.approx(t_opt.param_groups[0]["lr"], abs=1e-12)
    e_opt, t_opt = make_opt(1.0), torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    kw = dict(mode="max", factor=0.3, patience=2, threshold=0.1, threshold_mode="abs", cooldown=2, min_lr=0.01)
    e, t = S.ReduceLROnPlateau(e_opt, **kw), torch.optim.lr_scheduler.ReduceLROnPlateau(t_opt, **kw)
    for m in [1, 1.05, 1.2, 1.2, 1.2, 1.2, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5]:
        e.step(m), t.step(m)
        assert e_opt.param_groups[0]["lr"] == pytest.approx(t_opt.param_groups[0]["lr"])
    assert e.state_dict() == {k: v for k, v in t.state_dict().items()}


def test_sequential_matches_torch():
    torch = _torch()
    e_opt, t_opt = make_opt(1.0), torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    e = S.SequentialLR(e_opt, [S.LinearLR(e_opt, start_factor=0.1, total_iters=3),
                               S.CosineAnnealingLR(e_opt, T_max=6)], milestones=[3])
    TS = torch.optim.lr_scheduler
    t = TS.SequentialLR(t_opt, [TS.LinearLR(t_opt, start_factor=0.1, total_iters=3),
                                TS.CosineAnnealingLR(t_opt, T_max=6)], milestones=[3])
    for _ in range(10):
        assert e_opt.param_groups[0]["lr"] == pytest.approx(t_opt.param_groups[0]["lr"], abs=1e-12)
        e_opt.step(), t_opt.step(), e.step(), t.step()


def test_torch_state_dict_keys_match():
    torch = _torch()
    e = S.StepLR(make_opt(), step_size=2)
    t = torch.optim.lr_scheduler.StepLR(torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1), step_size=2)
    assert set(e.state_dict()) <= set(t.state_dict())
    t.step()
    e.load_state_dict(t.state_dict())  # torch's state loads into ember's scheduler
    assert e.last_epoch == 1


# -- the Python layer over the C++ rules ------------------------------------------------------

def test_subclass_with_own_get_lr_and_closed_form_round_trips():
    class Warmup(S.LRScheduler):
        def __init__(self, optimizer, warmup, last_epoch=-1):
            self.warmup = warmup
            super().__init__(optimizer, last_epoch)

        def get_lr(self):
            return [b * min(1.0, (self.last_epoch + 1) / self.warmup) for b in self.base_lrs]

        def _get_closed_form_lr(self):
            return [-1.0 for _ in self.base_lrs]  # marks that step(epoch) took this path

    opt = make_opt(1.0, groups=2)
    sched = Warmup(opt, warmup=4)
    got = lrs_of(sched, opt, 5)
    assert got == [pytest.approx([min(1, (e + 1) / 4), 2 * min(1, (e + 1) / 4)]) for e in range(5)]
    sd = sched.state_dict()
    assert "optimizer" not in sd and sd["warmup"] == 4 and sd["last_epoch"] == 5
    other = Warmup(make_opt(1.0, groups=2), warmup=9)
    other.load_state_dict(sd)
    assert other.warmup == 4 and other.get_last_lr() == sched.get_last_lr()
    sched.step(7)
    assert sched.get_last_lr() == [-1.0, -1.0] and sched.last_epoch == 7


class _Decay:
    """A callable object: LambdaLR's state_dict keeps its __dict__."""

    def __init__(self, rate):
        self.rate, self.calls = rate, 0

    def __call__(self, epoch):
        self.calls += 1
        return self.rate ** epoch


def test_lambda_schedulers_call_python_callables():
    opt = make_opt(1.0, groups=2)
    fn = _Decay(0.5)
    sched = S.LambdaLR(opt, [fn, lambda e: 1])  # an int factor is fine
    lrs_of(sched, opt, 3)
    assert fn.calls == 4 and sched.get_last_lr() == [0.125, 2.0]
    sd = sched.state_dict()
    assert sd["lr_lambdas"] == [{"rate": 0.5, "calls": 4}, None]
    fn2 = _Decay(0.9)
    S.LambdaLR(make_opt(1.0, groups=2), [fn2, lambda e: 1]).load_state_dict(sd)
    assert fn2.rate == 0.5 and fn2.calls == 4

    fn3 = _Decay(0.5)
    sched = S.MultiplicativeLR(make_opt(1.0), fn3)
    assert fn3.calls == 0  # not called for the constructor's step (epoch 0)
    sched.step()
    assert fn3.calls == 1 and sched.get_last_lr() == [0.5]

    def boom(epoch):
        raise RuntimeError("lambda failed at epoch {}".format(epoch))

    with pytest.raises(RuntimeError, match="lambda failed at epoch 0"):
        S.LambdaLR(make_opt(), boom)


def test_cyclic_scale_fn_gets_ints_and_subclass_override():
    seen = []
    opt = make_opt(0.1, momentum=0.9)
    S.CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=2, scale_fn=lambda x: seen.append(x) or 1.0)
    assert seen and all(type(x) is int for x in seen)

    class Flat(S.CyclicLR):
        def scale_fn(self, x):
            return 0.0

    opt = make_opt(0.1, momentum=0.9)
    sched = Flat(opt, base_lr=0.01, max_lr=0.1, step_size_up=2, base_momentum=0.8, max_momentum=0.9)
    got = lrs_of(sched, opt, 4)
    assert [g[0] for g in got] == pytest.approx([0.01] * 4)
    assert opt.param_groups[0]["momentum"] == pytest.approx(0.9)


def test_warm_restarts_fractional_epochs():
    opt = make_opt(1.0)
    sched = S.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2, eta_min=0.0)
    for epoch, (t_cur, t_i) in [(0.5, (0.5, 2)), (2.25, (0.25, 4)), (7.5, (1.5, 8)), (1.75, (1.75, 2))]:
        sched.step(epoch)
        assert (sched.T_cur, sched.T_i, sched.last_epoch) == (pytest.approx(t_cur), t_i, math.floor(epoch))
        assert sched.get_last_lr() == pytest.approx([(1 + math.cos(math.pi * t_cur / t_i)) / 2])
    sched.step()  # an epoch on from 1.75 crosses into the next period
    assert (sched.T_cur, sched.T_i, sched.last_epoch) == (pytest.approx(0.75), 4, 2)


def test_verbose_prints_torch_messages(capsys):
    opt = make_opt(1.0)
    sched = S.StepLR(opt, step_size=1, gamma=0.5, verbose=True)
    sched.step()
    sched.step(3)
    plateau = S.ReduceLROnPlateau(opt, patience=0, verbose=True)
    plateau.step(1.0), plateau.step(2.0)
    assert capsys.readouterr().out.splitlines() == [
        "Adjusting learning rate of group 0 to 1.0000e+00.",
        "Adjusting learning rate of group 0 to 5.0000e-01.",
        "Epoch 00003: adjusting learning rate of group 0 to 1.2500e-01.",
        "Epoch 00002: reducing learning rate of group 0 to 1.2500e-02.",
    ]


def _saved_and_loaded(sd):
    buf = io.BytesIO()
    ember.save(sd, buf)
    buf.seek(0)
    return ember.load(buf)


@pytest.mark.parametrize("make", [
    lambda o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.01),
    lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=12, three_phase=True),
    lambda o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2, mode="triangular2"),
    lambda o: S.PolynomialLR(o, total_iters=8, power=2.0),
    lambda o: S.SequentialLR(o, [S.LinearLR(o, start_factor=0.1, total_iters=3), S.CosineAnnealingLR(o, T_max=6)],
                             milestones=[3]),
], ids=["warm_restarts", "one_cycle", "cyclic", "polynomial", "sequential"])
def test_state_dict_round_trip_continues_the_sequence(make):
    opt = make_opt(0.1, groups=2, momentum=0.9)
    sched = make(opt)
    lrs_of(sched, opt, 5)
    sd = _saved_and_loaded(sched.state_dict())
    groups = [dict(g) for g in opt.param_groups]
    opt2 = make_opt(0.1, groups=2, momentum=0.9)
    sched2 = make(opt2)
    for g2, g in zip(opt2.param_groups, groups):  # a resumed run loads the optimizer's groups too
        g2.update({k: v for k, v in g.items() if k != "params"})
    sched2.load_state_dict(sd)
    want = lrs_of(sched, opt, 5)
    assert lrs_of(sched2, opt2, 5) == want


def test_plateau_state_dict_round_trip():
    opt = make_opt(1.0)
    sched = S.ReduceLROnPlateau(opt, mode="max", factor=0.5, patience=1, cooldown=1)
    for m in [1, 2, 2, 2]:
        sched.step(m)
    opt2 = make_opt(opt.param_groups[0]["lr"])
    sched2 = S.ReduceLROnPlateau(opt2)
    sched2.load_state_dict(_saved_and_loaded(sched.state_dict()))
    assert (sched2.mode, sched2.best, sched2.num_bad_epochs, sched2.cooldown_counter) == ("max", 2.0, 0, 1)
    for m in [2, 2, 2, 3]:
        sched.step(m), sched2.step(m)
        assert opt2.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
    assert sched2.is_better(3.1, 3.0) and not sched2.is_better(3.0, 3.0)


@pytest.mark.parametrize("make, error, message", [
    (lambda o: S.StepLR(o, step_size=0), ValueError, "step_size must be positive"),
    (lambda o: S.CosineAnnealingLR(o, T_max=0), ValueError, "T_max must be positive"),
    (lambda o: S.ConstantLR(o, factor=1.5), ValueError, "Constant multiplicative factor expected to be between 0 and 1."),
    (lambda o: S.LinearLR(o, end_factor=-1), ValueError, "Ending multiplicative factor expected to be between 0 and 1."),
    (lambda o: S.CosineAnnealingWarmRestarts(o, T_0=2.0), ValueError, "Expected positive integer T_0, but got 2.0"),
    (lambda o: S.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0), ValueError,
     "Expected integer T_mult >= 1, but got 0"),
    (lambda o: S.CosineAnnealingWarmRestarts(o, T_0=2).step(-1), ValueError, "Expected non-negative epoch, but got -1"),
    (lambda o: S.LambdaLR(o, [lambda e: 1.0] * 3), ValueError, "Expected 2 lr_lambdas, but got 3"),
    (lambda o: S.CyclicLR(o, 0.01, 0.1, mode="sawtooth"), ValueError, "mode is invalid and scale_fn is None"),
    (lambda o: S.CyclicLR(o, [0.01], 0.1), ValueError, "expected 2 values for base_lr, got 1"),
    (lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=10, pct_start=1), ValueError,
     "Expected float between 0 and 1 pct_start, but got 1"),
    (lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=10, pct_start=1.5), ValueError,
     "Expected float between 0 and 1 pct_start, but got 1.5"),
    (lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=10, anneal_strategy="exp"), ValueError,
     "anneal_strategy must by one of 'cos' or 'linear', instead got exp"),
    (lambda o: S.OneCycleLR(o, max_lr=1.0, epochs=2), ValueError, "total_steps OR"),
    (lambda o: S.OneCycleLR(o, max_lr=1.0, epochs=0, steps_per_epoch=3), ValueError,
     "Expected positive integer epochs, but got 0"),
    (lambda o: S.ReduceLROnPlateau(o, mode="avg"), ValueError, "mode avg is unknown!"),
    (lambda o: S.ReduceLROnPlateau(o, threshold_mode="x"), ValueError, "threshold mode x is unknown!"),
    (lambda o: S.ReduceLROnPlateau(o, min_lr=[0.1]), ValueError, "expected 2 min_lrs, got 1"),
    (lambda o: S.SequentialLR(o, [S.StepLR(o, 2)], milestones=[3]), ValueError,
     "got number of schedulers 1 and the number of milestones to be equal to 1"),
    (lambda o: S.SequentialLR(o, [S.StepLR(o, 2), S.StepLR(make_opt(), 2)], milestones=[3]), ValueError,
     "schedulers at index 1 to be different than the optimizer passed in"),
    (lambda o: S.ChainedScheduler([S.StepLR(o, 2), S.StepLR(make_opt(), 2)]), ValueError,
     "schedulers at index 0 and 1 to be different"),
])
def test_bad_arguments_raise_torch_errors(make, error, message):
    with pytest.raises(error, match=re.escape(message)):
        make(make_opt(0.1, groups=2, momentum=0.9))
    with pytest.raises(ValueError, match="must support momentum"):
        S.CyclicLR(make_opt(0.1, cls=optim.Adam), 0.01, 0.1)


def test_lambda_and_fractional_restarts_match_torch():
    torch = _torch()
    TS = torch.optim.lr_scheduler
    e_opt = make_opt(0.1, groups=2)
    t_opt = torch.optim.SGD([{"params": [torch.zeros(1, requires_grad=True)], "lr": 0.1 * (i + 1)} for i in range(2)],
                            lr=0.1)
    fns = [lambda e: 0.9 ** e, lambda e: 1 / (e + 1)]
    pairs = [(S.LambdaLR(e_opt, fns), TS.LambdaLR(t_opt, fns)),
             (S.MultiplicativeLR(e_opt, fns), TS.MultiplicativeLR(t_opt, fns))]
    for _ in range(8):
        for e, t in pairs:
            e.step(), t.step()
        assert [g["lr"] for g in e_opt.param_groups] == [g["lr"] for g in t_opt.param_groups]
    e_opt, t_opt = make_opt(1.0), torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    e, t = S.CosineAnnealingWarmRestarts(e_opt, T_0=3, T_mult=2), TS.CosineAnnealingWarmRestarts(t_opt, T_0=3, T_mult=2)
    for epoch in [0.5, 2.9, 3.0, 8.25, None, None, 1.5, 40.75, None]:
        e.step(epoch), t.step(epoch)
        assert (e.T_cur, e.T_i, e.last_epoch) == (t.T_cur, t.T_i, t.last_epoch)
        assert e_opt.param_groups[0]["lr"] == t_opt.param_groups[0]["lr"]
