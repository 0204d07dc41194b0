"""ember.utils: data loading (ember.utils.data) and gradient checkpointing (ember.utils.checkpoint)."""
from . import checkpoint, data, flop_counter, hooks  # noqa: F401
