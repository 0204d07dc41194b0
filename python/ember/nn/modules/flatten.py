"""torch.nn.modules.flatten's path: Flatten and Unflatten (defined in linear.py)."""
from .linear import Flatten, Unflatten  # noqa: F401

__all__ = ["Flatten", "Unflatten"]
