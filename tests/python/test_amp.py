"""ember.amp / ember.cuda.amp without CUDA: disabled with torch's warnings, computations in float32."""
import pytest

import ember
from ember import nn


def test_cuda_autocast_warns_and_is_disabled():
    x = ember.ones(2, 3)
    with pytest.warns(UserWarning, match="CUDA is not available. Disabling"):
        ctx = ember.cuda.amp.autocast()
    with ctx:
        y = x @ x.T
    assert y.dtype == ember.float32


def test_autocast_checks_device_type():
    with pytest.raises(RuntimeError, match="unsupported autocast device_type"):
        ember.autocast(device_type="tpu")
    with pytest.warns(UserWarning, match="no CPU autocast kernels yet"):
        ember.autocast(device_type="cpu", dtype=ember.bfloat16)


def test_grad_scaler_without_cuda_passes_through():
    model = nn.Linear(3, 1)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    with pytest.warns(UserWarning, match="GradScaler is enabled, but CUDA is not available"):
        scaler = ember.cuda.amp.GradScaler()
    before = model.weight.detach().clone()
    loss = model(ember.ones(4, 3)).sum()
    assert scaler.scale(loss) is loss
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    assert not ember.equal(before, model.weight.detach())
    assert not scaler.is_enabled()
