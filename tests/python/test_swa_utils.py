"""optim.swa_utils (AveragedModel, EMA, SWALR, update_bn) against torch on the same run."""
import math

import numpy as np
import pytest

import ember


def run(T):
    nn = T.nn
    rng = np.random.RandomState(0)

    def from_np(a):
        return T.tensor(np.asarray(a, dtype=np.float32))
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))
    with T.no_grad():
        for p in model.parameters():
            p.copy_(from_np(rng.randn(*p.shape) * 0.3))
    opt = T.optim.SGD(model.parameters(), lr=0.1)
    swa = T.optim.swa_utils.AveragedModel(model)
    ema = T.optim.swa_utils.AveragedModel(model, multi_avg_fn=T.optim.swa_utils.get_ema_multi_avg_fn(0.9))
    ema1 = T.optim.swa_utils.AveragedModel(model, avg_fn=T.optim.swa_utils.get_ema_avg_fn(0.8), use_buffers=True)
    sched = T.optim.swa_utils.SWALR(opt, swa_lr=0.02, anneal_epochs=3, anneal_strategy="cos")
    lrs = []
    for _ in range(6):
        x, y = from_np(rng.randn(16, 4)), from_np(rng.randn(16, 2))
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
        for m in (swa, ema, ema1):
            m.update_parameters(model)
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    T.optim.swa_utils.update_bn([(from_np(rng.randn(8, 4)), 0) for _ in range(3)], swa)
    out = {"lrs": np.array(lrs), "n": int(swa.n_averaged)}
    for name, m in (("swa", swa), ("ema", ema), ("ema1", ema1)):
        for k, v in m.state_dict().items():
            out[f"{name}.{k}"] = np.asarray(v.tolist(), dtype=np.float64)
    return out


def test_matches_torch(torch_ref):
    if not hasattr(torch_ref.optim.swa_utils, "get_ema_multi_avg_fn"):
        pytest.skip("this torch (< 2.1) has no multi_avg_fn/EMA helpers in swa_utils")
    e, t = run(ember), run(torch_ref)
    assert e.keys() == t.keys()
    for k in t:
        np.testing.assert_allclose(e[k], t[k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_swa_is_the_mean_and_swalr_reaches_swa_lr():
    m = ember.nn.Linear(1, 1, bias=False)
    avg = ember.optim.swa_utils.AveragedModel(m)
    for v in (1.0, 2.0, 6.0):
        with ember.no_grad():
            m.weight.fill_(v)
        avg.update_parameters(m)
    assert math.isclose(float(avg.module.weight), 3.0, rel_tol=1e-6)
    opt = ember.optim.SGD(m.parameters(), lr=1.0)
    sched = ember.optim.swa_utils.SWALR(opt, swa_lr=0.1, anneal_epochs=4, anneal_strategy="linear")
    for _ in range(6):
        sched.step()
    assert math.isclose(opt.param_groups[0]["lr"], 0.1, rel_tol=1e-9)
    with pytest.raises(ValueError, match="anneal_strategy must by one of 'cos' or 'linear'"):
        ember.optim.swa_utils.SWALR(opt, 0.1, anneal_strategy="step")
