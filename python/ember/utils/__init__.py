"""ember.utils."""
