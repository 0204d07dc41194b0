"""sort over rows of 32 or more runs a radix sort (src/cpu/radix_sort.h): the same order as the
comparison sort of shorter rows, checked here against a Python reference of PyTorch's rules: NaN
is the largest value (last ascending, first descending), -0.0 equals 0.0, and equal keys keep
their original order in both directions."""
import math
import random

import ember
import pytest


def reference_order(values, descending):
    def key(j):
        v = values[j]
        nan = isinstance(v, float) and math.isnan(v)
        if descending:
            return (0 if nan else 1, 0 if nan else -v, j)
        return (1 if nan else 0, 0 if nan else v, j)
    return sorted(range(len(values)), key=key)


def sample(dtype, n, rng):
    if dtype == ember.bool:
        return ember.tensor([rng.random() < 0.5 for _ in range(n)])
    if dtype.is_floating_point:
        specials = [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1e-30, -1e-30]
        data = [rng.choice(specials) if rng.random() < 0.1 else float(rng.randint(-20, 20)) / 4 for _ in range(n)]
        return ember.tensor(data, dtype=ember.float64).to(dtype)
    lo, hi = {ember.uint8: (0, 255), ember.int8: (-128, 127)}.get(dtype, (-40, 40))
    data = [rng.choice([lo, hi]) if rng.random() < 0.05 else rng.randint(lo, hi) for _ in range(n)]
    if dtype == ember.int64:
        data = [d * (1 << 40) if rng.random() < 0.2 else d for d in data]  # every byte in play
    return ember.tensor(data, dtype=dtype)


DTYPES = [ember.float32, ember.float64, ember.float16, ember.bfloat16, ember.int8, ember.int16, ember.int32,
          ember.int64, ember.uint8, ember.bool]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("descending", [False, True])
def test_long_rows_sort_as_pytorch_orders(dtype, descending):
    rng = random.Random(hash((str(dtype), descending)) & 0xFFFF)
    for n in (32, 256, 1000, 5000):
        x = sample(dtype, n, rng)
        values, indices = x.sort(descending=descending)
        ref = x.double() if dtype not in (ember.int64, ember.bool) else x
        plain = ref.tolist()
        want = reference_order(plain, descending)
        assert indices.tolist() == want, (dtype, n)
        assert [repr(v) for v in values.tolist()] == [repr(v) for v in x[indices].tolist()]  # (NaN: by repr)
        assert values.dtype == dtype


def test_rows_along_any_dim_and_layout():
    rng = random.Random(7)
    x = sample(ember.float32, 300 * 4, rng).reshape(300, 4)
    for t in (x, x.t().contiguous().t()):  # rows along dim 0, strided; then a transposed layout
        v, i = t.sort(0, descending=True)
        for c in range(4):
            assert i[:, c].tolist() == reference_order(t[:, c].double().tolist(), True)
    y = sample(ember.int32, 3 * 700, rng).reshape(3, 700)[:, ::2]  # non-contiguous rows of 350
    v, i = y.sort(1)
    for r in range(3):
        assert i[r].tolist() == reference_order(y[r].tolist(), False)
        assert v[r].tolist() == sorted(y[r].tolist())


def test_long_and_short_rows_agree():
    # the same data sorted as one row of 64 (radix) and as rows of 16 (comparison sort) merged
    rng = random.Random(3)
    x = sample(ember.float32, 64, rng)
    whole = x.sort(stable=True).indices
    parts = x.reshape(4, 16).sort(1).indices + ember.arange(4).reshape(4, 1) * 16
    merged = sorted(parts.flatten().tolist(), key=lambda j: reference_order(x.double().tolist(), False).index(j))
    assert whole.tolist() == merged
