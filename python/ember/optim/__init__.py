"""ember.optim (placeholder)."""
