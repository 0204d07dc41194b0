"""GradScaler (issue 18) and ember.cuda.amp without CUDA.

The scale / skipped-step sequence with injected inf and NaN gradients equals PyTorch 2.15's
torch.amp.GradScaler("cpu") exactly (recorded below; compared live where torch >= 2.4 is
importable). The device kernels (ember._amp_*) are checked against their definitions."""
import copy
import pickle

import pytest

import ember
from ember import nn

try:
    import torch as _torch
    _TORCH2 = tuple(int(x) for x in _torch.__version__.split(".")[:2]) >= (2, 4)
except Exception:  # noqa: BLE001
    _torch, _TORCH2 = None, False

NO_GPU = "no CUDA GPU on this machine: the CUDA backend compiled but did not run"


def _devices():
    return ["cpu", "cuda"]


def _skip_without(device):
    if device == "cuda" and not ember.cuda.is_available():
        pytest.skip(NO_GPU)


# (scale after update, stepped, growth tracker) per iteration; torch 2.15, see _scaler_run.
TORCH_SEQUENCE = [(1024.0, True, 1), (1024.0, True, 2), (512.0, False, 0), (256.0, False, 0), (256.0, True, 1),
                  (256.0, True, 2), (512.0, True, 0), (256.0, False, 0), (256.0, True, 1), (128.0, False, 0),
                  (128.0, True, 1), (128.0, True, 2)]
TORCH_FINAL_P = [0.19999992847442627, -0.5999999642372131, -1.399999976158142]


def _scaler_run(t, device="cpu"):
    p = t.nn.Parameter(t.ones(3, device=device))
    q = t.nn.Parameter(t.ones(2, dtype=t.float64, device=device))
    opt = t.optim.SGD([p, q], lr=0.1)
    scaler = t.amp.GradScaler(device, init_scale=1024.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=3)
    out = []
    for i in range(12):
        opt.zero_grad()
        loss = scaler.scale((p * t.arange(1., 4., device=device)).sum() + q.sum())
        loss.backward()
        if i in (2, 3, 7):
            p.grad[1] = float("inf") if i != 3 else float("nan")
        if i == 9:
            q.grad[0] = float("-inf")
        before = p.detach().clone()
        scaler.step(opt)
        scaler.update()
        out.append((scaler.get_scale(), bool((p.detach() != before).any()), scaler._get_growth_tracker()))
    return out, p.detach().cpu().tolist(), scaler.state_dict()


@pytest.mark.parametrize("device", _devices())
def test_scale_sequence_equals_torch(device):
    _skip_without(device)
    seq, final_p, sd = _scaler_run(ember, device)
    assert seq == TORCH_SEQUENCE
    assert final_p == pytest.approx(TORCH_FINAL_P, rel=1e-6)
    assert sd == {"scale": 128.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 3,
                  "_growth_tracker": 2}


@pytest.mark.skipif(not _TORCH2, reason="needs PyTorch >= 2.4 to compare live (the recorded sequence still runs)")
def test_scale_sequence_live_against_torch():
    assert _scaler_run(_torch)[0] == _scaler_run(ember)[0]


def test_unscale_before_clipping_and_state_errors():
    model = nn.Linear(3, 2)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    scaler = ember.amp.GradScaler("cpu", init_scale=8.0)
    x = ember.randn(4, 3)
    ref = copy.deepcopy(model)
    ref(x).sum().backward()
    scaler.scale(model(x).sum()).backward()
    assert ember.allclose(model.weight.grad, 8 * ref.weight.grad)
    scaler.unscale_(opt)
    assert ember.allclose(model.weight.grad, ref.weight.grad)
    ember.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) has already been called on this optimizer"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match=r"step\(\) has already been called since the last update\(\)"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) is being called after step\(\)"):
        scaler.unscale_(opt)
    scaler.update()
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(opt, closure=lambda: 0)


def test_errors_before_scale_and_for_fp16_grads():
    model = nn.Linear(3, 2)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    scaler = ember.amp.GradScaler("cpu")
    with pytest.raises(AssertionError, match="Attempted step but _scale is None"):
        scaler.step(opt)
    half = nn.Linear(3, 2).half()
    opt16 = ember.optim.SGD(half.parameters(), lr=0.1)
    scaler.scale(half(ember.randn(2, 3).half()).float().sum()).backward()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        scaler.unscale_(opt16)
    with pytest.raises(AssertionError, match="growth factor must be > 1.0"):
        ember.amp.GradScaler("cpu", growth_factor=1.0)


def test_several_optimizers_and_outputs():
    a, b = nn.Linear(3, 1), nn.Linear(3, 1)
    oa, ob = ember.optim.SGD(a.parameters(), lr=0.1), ember.optim.Adam(b.parameters(), lr=0.1)
    scaler = ember.amp.GradScaler("cpu", init_scale=4.0, growth_interval=1)
    x = ember.randn(2, 3)
    la, lb = scaler.scale([a(x).sum(), b(x).sum()])
    (la + lb).backward()
    b.weight.grad[0, 0] = float("inf")
    wa, wb = a.weight.detach().clone(), b.weight.detach().clone()
    scaler.step(oa)
    scaler.step(ob)
    scaler.update()
    assert not ember.equal(wa, a.weight.detach())  # a's gradients were finite
    assert ember.equal(wb, b.weight.detach())      # b's step was skipped
    assert scaler.get_scale() == 2.0              # one inf anywhere backs the scale off


def test_state_dict_round_trip_and_pickle():
    scaler = ember.amp.GradScaler("cpu", init_scale=64.0, growth_interval=5)
    assert scaler.get_scale() == 64.0
    p = nn.Parameter(ember.ones(2))
    opt = ember.optim.SGD([p], lr=0.1)
    for _ in range(3):
        scaler.scale(p.sum()).backward()
        scaler.step(opt)
        scaler.update()
    sd = scaler.state_dict()
    assert sd == {"scale": 64.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 5, "_growth_tracker": 3}
    other = ember.amp.GradScaler("cpu")
    other.load_state_dict(sd)
    assert other.state_dict() == sd
    clone = pickle.loads(pickle.dumps(scaler))
    assert clone.state_dict() == sd
    saved = ember.save(sd, __import__("io").BytesIO())  # plain numbers: ember.save takes it
    del saved
    with pytest.raises(RuntimeError, match="The source state dict is empty"):
        other.load_state_dict({})
    scaler.update(16.0)
    assert scaler.get_scale() == 16.0


@pytest.mark.parametrize("device", _devices())
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
def test_non_finite_check_and_unscale_kernel(device, dtype):
    _skip_without(device)
    dt = getattr(ember, dtype)
    g1 = ember.tensor([2.0, -4.0, 8.0], dtype=dt, device=device)
    g2 = ember.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=dt, device=device).t()  # not contiguous
    found = ember.zeros((), device=device)
    inv = ember.full((), 0.5, device=device)
    ember._amp_foreach_non_finite_check_and_unscale_([g1, g2], found, inv)
    assert g1.cpu().float().tolist() == [1.0, -2.0, 4.0]
    assert g2.cpu().float().tolist() == [[0.5, 1.5], [1.0, 2.0]]
    assert found.item() == 0.0
    g3 = ember.tensor([1.0, float("nan"), 3.0], dtype=dt, device=device)
    ember._amp_foreach_non_finite_check_and_unscale_([g3], found, inv)
    assert found.item() == 1.0


@pytest.mark.parametrize("device", _devices())
def test_update_scale_kernel(device):
    _skip_without(device)
    scale = ember.full((), 4.0, device=device)
    tracker = ember.zeros((), dtype=ember.int32, device=device)
    clean, inf = ember.zeros((), device=device), ember.ones((), device=device)
    seq = []
    for f in (clean, clean, inf, clean, clean):
        ember._amp_update_scale_(scale, tracker, f, 2.0, 0.5, 2)
        seq.append((scale.item(), tracker.item()))
    assert seq == [(4.0, 1), (8.0, 0), (4.0, 0), (4.0, 1), (8.0, 0)]
    big = ember.full((), 3e38, device=device)
    tracker.zero_()
    ember._amp_update_scale_(big, tracker, clean, 2.0, 0.5, 1)
    assert big.item() == pytest.approx(3e38, rel=1e-6)  # growing past float32's range is not kept


def test_kernel_argument_errors():
    with pytest.raises(RuntimeError, match="found_inf must be a 1-element tensor"):
        ember._amp_foreach_non_finite_check_and_unscale_([ember.ones(2)], ember.zeros(2), ember.ones(()))
    with pytest.raises(RuntimeError, match="inv_scale must be a float tensor"):
        ember._amp_foreach_non_finite_check_and_unscale_([ember.ones(2)], ember.zeros(()), ember.ones((), dtype=ember.float64))
    with pytest.raises(RuntimeError, match="scaled_grads must be floating point tensors"):
        ember._amp_foreach_non_finite_check_and_unscale_([ember.ones(2, dtype=ember.int64)], ember.zeros(()), ember.ones(()))
    with pytest.raises(RuntimeError, match="growth_tracker must be a int tensor|growth_tracker must be an int tensor"):
        ember._amp_update_scale_(ember.ones(()), ember.zeros(()), ember.zeros(()), 2.0, 0.5, 10)


@pytest.mark.skipif(ember.cuda.is_available(), reason="checks the no-GPU behaviour")
def test_cuda_scaler_without_gpu_passes_through():
    model = nn.Linear(3, 1)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    with pytest.warns(UserWarning, match="GradScaler is enabled, but CUDA is not available"):
        with pytest.warns(FutureWarning, match="torch.cuda.amp.GradScaler"):
            scaler = ember.cuda.amp.GradScaler()
    before = model.weight.detach().clone()
    loss = model(ember.ones(4, 3)).sum()
    assert scaler.scale(loss) is loss
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    assert not ember.equal(before, model.weight.detach())
    assert not scaler.is_enabled() and scaler.get_scale() == 1.0 and scaler.state_dict() == {}
