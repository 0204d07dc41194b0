"""ember.utils.data (placeholder)."""
