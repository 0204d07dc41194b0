"""ember.set_flush_denormal (torch's): denormal inputs and results become 0 while it is on, on the
calling thread and in parallel ops alike; off restores IEEE behaviour."""
import numpy as np

import ember


def test_flush_denormal_on_and_off():
    tiny64 = ember.tensor([1e-323], dtype=ember.float64)
    tiny32 = ember.full((1 << 20,), 1e-40)  # large enough that the multiply runs on every thread
    try:
        assert ember.set_flush_denormal(True) is True
        assert (tiny64 * 2.0).item() == 0.0
        out = (tiny32 * 2.0).numpy()
        assert not out.any()
    finally:
        ember.set_flush_denormal(False)
    assert (tiny64 * 2.0).item() == 2e-323
    out = (tiny32 * 2.0).numpy()
    np.testing.assert_array_equal(out, np.full(1 << 20, np.float32(1e-40) * np.float32(2)))
    assert np.float32(1e-40) * np.float32(2) != 0
