"""ember.nn (placeholder)."""
