"""One rule for CUDA test cases that reach an op whose CUDA kernel is not written yet: the case
is skipped with the dispatcher's message (which names the op), so a missing kernel shows up as
a visible skip, never as a failure or a silent pass. Any other error still fails."""
import pytest


def skip_missing_cuda_kernel(fn):
    """fn(), skipping the case when it raises the dispatcher's NotImplementedError for CUDA."""
    try:
        return fn()
    except NotImplementedError as e:
        if "'CUDA' backend" in str(e):
            pytest.skip(f"no CUDA kernel yet: {e}")
        raise
