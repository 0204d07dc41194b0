"""Python-level parts of the Tensor API (placeholder)."""
__all__ = []
