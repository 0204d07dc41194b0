"""ember.optim.lr_scheduler: lr sequences against closed forms (always run) and against torch
1.13's schedulers step by step (when torch is installed); state_dict round trips."""
import io
import math

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
