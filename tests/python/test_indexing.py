"""x[...] and x[...] = v against NumPy's results (the same rules for these forms) and torch's."""
import numpy as np
import pytest

import ember

BASE = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)

INDEXES = [
    1, -1, (1, 2), (slice(None), 1), slice(1, None), (slice(None), slice(None, None, 2)),
    (Ellipsis, -1), (Ellipsis, slice(1, 3)), (1, Ellipsis, 2), (None,), (slice(None), None, None, slice(None)),
    (None, 1, None, 2), (0, slice(None, None, 3), 1), ([0, 1],), ([1, 0, 1], [2, 0, 1]), (slice(None), [0, 2]),
    (slice(None), [0, 2], slice(1, 3)), (slice(None), [0, 2], slice(None), [1, 4]), (0, [[0, 1], [2, 1]]),
    (Ellipsis, [4, 0]), (slice(None), 1, [0, 3]), (None, [1], Ellipsis), (slice(2, 0), ), (slice(-100, 100),),
    ([], ), (slice(None), np.array([2, 1])),
]


@pytest.mark.parametrize("index", INDEXES, ids=[repr(i) for i in INDEXES])
def test_getitem_matches_numpy(index):
    x = ember.tensor(BASE)
    expected = BASE[index]
    got = x[index]
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got.numpy(), expected)


def test_boolean_masks():
    x = ember.tensor(BASE)
    mask = BASE > 100
    np.testing.assert_array_equal(x[ember.from_numpy(mask)].numpy(), BASE[mask])
    row_mask = np.array([True, False])
    np.testing.assert_array_equal(x[ember.from_numpy(row_mask)].numpy(), BASE[row_mask])
    m2 = BASE[0, :, :, 0] > 30
    np.testing.assert_array_equal(x[1, ember.from_numpy(m2)].numpy(), BASE[1, m2])
    assert x[True].shape == (1, 2, 3, 4, 5) and x[False].shape == (0, 2, 3, 4, 5)
    with pytest.raises(IndexError, match="The shape of the mask"):
        x[ember.from_numpy(np.array([True, False, True]))]


def test_basic_indexing_gives_views():
    x = ember.tensor(BASE.copy())
    v = x[1, :, ::2]
    assert v.data_ptr() != 0 and v.storage_offset() == 60
    v[0, 0, 0] = -5.0
    assert x[1, 0, 0, 0].item() == -5.0
    assert x[...] is not x and x[...].data_ptr() == x.data_ptr()


def test_setitem_forms():
    ref = BASE.copy()
    x = ember.tensor(ref)
    for index, value in [((0, 1), 7.0), ((Ellipsis, 0), -1.0), ((slice(None), [0, 2], 1), 3.0),
                         (([1, 0], [2, 1]), 9.0), ((1,), np.float32(2.5))]:
        ref[index] = value
        x[index] = value
    mask = ref > 50
    ref[mask] = 0
    x[ember.from_numpy(mask)] = 0
    ref[0, 0] = np.arange(20, dtype=np.float32).reshape(4, 5)
    x[0, 0] = ember.tensor(np.arange(20, dtype=np.float32).reshape(4, 5))
    ref[1, :, 0, 0] = [1, 2, 3]
    x[1, :, 0, 0] = [1, 2, 3]
    ref[:, 1] = ref[:, 1, 0:1, :]  # broadcast
    x[:, 1] = x[:, 1, 0:1, :]
    np.testing.assert_array_equal(x.numpy(), ref)


def test_index_errors_name_the_problem():
    x = ember.tensor(BASE)
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 4"):
        x[0, 0, 0, 0, 0]
    with pytest.raises(IndexError, match="out of range|out of bounds"):
        x[5]
    with pytest.raises(IndexError, match="only integers, slices"):
        x["a"]
    with pytest.raises(IndexError, match="tensors used as indices must be long"):
        x[ember.tensor([0.0])]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., ...]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    with pytest.raises(IndexError, match="invalid index of a 0-dim tensor"):
        ember.tensor(1.0)[0]


@pytest.mark.parametrize("index", INDEXES[:20], ids=[repr(i) for i in INDEXES[:20]])
def test_getitem_matches_torch(torch_ref, index):
    got = ember.tensor(BASE)[index]
    want = torch_ref.tensor(BASE)[index]
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int16", "bool", "bfloat16"])
@pytest.mark.parametrize("shape", [(7,), (3, 5, 4), (64, 8, 33, 17)])
def test_mask_compaction_matches_numpy(dtype, shape):
    # x[mask] and nonzero on dense tensors take a chunked compaction (big shapes: several chunks
    # on the pool); the same picks as NumPy's, for masks over all or only the leading dims.
    rng = np.random.default_rng(len(shape))
    base = rng.standard_normal(shape)
    x = ember.tensor(base).to(getattr(ember, dtype))
    xs = x.to(ember.float64).numpy()
    for k in range(1, len(shape) + 1):
        mask = rng.random(shape[:k]) < 0.5
        got = x[ember.tensor(mask)]
        assert got.dtype == x.dtype and tuple(got.shape) == xs[mask].shape
        np.testing.assert_array_equal(got.to(ember.float64).numpy(), xs[mask])
    nz = x.nonzero()
    np.testing.assert_array_equal(nz.numpy(), np.argwhere(xs != 0))
    # a strided tensor takes the walker; same answer
    np.testing.assert_array_equal(x.transpose(0, -1).nonzero().numpy(), np.argwhere(xs.transpose(
        [len(shape) - 1] + list(range(1, len(shape) - 1)) + [0] if len(shape) > 1 else [0]) != 0))
    assert ember.masked_select(x, x.to(ember.bool)).numel() == int((xs != 0).sum())


def test_mask_setitem_number():
    x = ember.tensor(BASE.copy())
    m = BASE > 60
    x[ember.tensor(m)] = -1.5
    expected = BASE.copy()
    expected[m] = -1.5
    np.testing.assert_array_equal(x.numpy(), expected)
    with pytest.raises(IndexError, match="shape of the mask"):
        x[ember.tensor(m[:, :2])]


@pytest.mark.parametrize("layout", ["dense", "transposed", "expanded", "sliced"])
@pytest.mark.parametrize("shape,dim", [((5, 6, 7), 0), ((5, 6, 7), 1), ((5, 6, 7), 2), ((4, 3), 1), ((8,), 0)])
def test_index_add_reads_sources_of_any_layout(shape, dim, layout):
    # index_add_ reads a source whose dims before and after `dim` each walk with one stride in
    # place (an expand from .sum()'s gradient, a transpose, a strided slice), others from a copy
    rng = np.random.default_rng(len(shape) * 10 + dim)
    base = rng.standard_normal(shape)
    idx = rng.integers(0, shape[dim], 4)
    sshape = list(shape)
    sshape[dim] = 4
    if layout == "dense":
        src = rng.standard_normal(sshape)
        t = ember.tensor(src)
    elif layout == "transposed":
        src = rng.standard_normal(sshape)
        t = ember.tensor(np.ascontiguousarray(np.swapaxes(src, 0, -1))).transpose(0, -1)
    elif layout == "expanded":
        one = rng.standard_normal([1] * len(sshape))
        src = np.broadcast_to(one, sshape)
        t = ember.tensor(one).expand(*sshape)
    else:
        big = list(sshape)
        big[-1] *= 2
        b2 = rng.standard_normal(big)
        cut = tuple([slice(None)] * (len(big) - 1) + [slice(None, None, 2)])
        src, t = b2[cut], ember.tensor(b2)[cut]
    want = np.moveaxis(base.copy(), dim, 0)
    moved = np.moveaxis(src, dim, 0)
    for k, i in enumerate(idx):
        want[i] += 1.5 * moved[k]
    got = ember.tensor(base).index_add(dim, ember.tensor(idx), t, alpha=1.5)
    np.testing.assert_allclose(got.numpy(), np.moveaxis(want, 0, dim), rtol=1e-12, atol=1e-12)
