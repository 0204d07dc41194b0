"""ember.signal: torch.signal (its windows submodule)."""
from . import windows

__all__ = ["windows"]
