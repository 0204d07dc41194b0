"""ember.amp (torch.amp): autocast and GradScaler. See autocast_mode.py and grad_scaler.py; the
C++ side is include/ember/amp.h, the per-op policy src/amp/autocast_policy.h."""
from .autocast_mode import (autocast, custom_bwd, custom_fwd, is_autocast_available,  # noqa: F401
                            policy_table, _autocast_op)
from .autocast_mode import (is_autocast_enabled, set_autocast_enabled, get_autocast_dtype,  # noqa: F401
                            set_autocast_dtype, is_autocast_cache_enabled, set_autocast_cache_enabled,
                            clear_autocast_cache, autocast_increment_nesting, autocast_decrement_nesting)
from .grad_scaler import GradScaler, OptState  # noqa: F401

__all__ = ["autocast", "custom_fwd", "custom_bwd", "GradScaler", "is_autocast_available"]
