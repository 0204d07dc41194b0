"""ember.autograd (placeholder until the autograd bindings land)."""
from . import grad_mode  # noqa: F401
