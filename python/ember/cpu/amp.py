"""ember.cpu.amp: torch.cpu.amp's names, deprecated in torch 2 in favour of ember.amp with
device_type "cpu" (same FutureWarnings)."""
from ..amp.autocast_mode import _deprecated_autocast
from ..amp.grad_scaler import _deprecated_grad_scaler

__all__ = ["autocast", "GradScaler"]

autocast = _deprecated_autocast("cpu", "bfloat16")
GradScaler = _deprecated_grad_scaler("cpu")
