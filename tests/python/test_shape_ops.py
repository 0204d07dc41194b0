"""Shape and view ops: torch's varargs forms, functions and methods, views sharing storage,
joins and splits, against NumPy."""
import numpy as np
import pytest

import ember


def arr(*shape, dtype=np.float32):
    return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)


def T(a):
    return ember.tensor(a)


# (ember call on x, numpy result on a) over a 2x3x4 tensor
CASES = {
    "view_varargs": (lambda x: x.view(6, 4), lambda a: a.reshape(6, 4)),
    "view_tuple": (lambda x: x.view((4, -1)), lambda a: a.reshape(4, -1)),
    "view_shape": (lambda x: x.view(ember.zeros(24).shape), lambda a: a.reshape(24)),
    "reshape_varargs": (lambda x: x.reshape(3, 8), lambda a: a.reshape(3, 8)),
    "reshape_fn": (lambda x: ember.reshape(x, (-1,)), lambda a: a.reshape(-1)),
    "permute_varargs": (lambda x: x.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),
    "permute_fn": (lambda x: ember.permute(x, (1, 2, 0)), lambda a: a.transpose(1, 2, 0)),
    "transpose": (lambda x: x.transpose(0, 2), lambda a: a.swapaxes(0, 2)),
    "swapaxes": (lambda x: ember.swapaxes(x, 0, 1), lambda a: a.swapaxes(0, 1)),
    "swapdims": (lambda x: x.swapdims(-1, 0), lambda a: a.swapaxes(-1, 0)),
    "movedim_int": (lambda x: x.movedim(0, -1), lambda a: np.moveaxis(a, 0, -1)),
    "movedim_tuple": (lambda x: ember.movedim(x, (0, 1), (2, 0)), lambda a: np.moveaxis(a, (0, 1), (2, 0))),
    "moveaxis": (lambda x: ember.moveaxis(x, 2, 0), lambda a: np.moveaxis(a, 2, 0)),
    "flatten": (lambda x: x.flatten(), lambda a: a.reshape(-1)),
    "flatten_range": (lambda x: ember.flatten(x, 1), lambda a: a.reshape(2, 12)),
    "flatten_kw": (lambda x: x.flatten(start_dim=0, end_dim=1), lambda a: a.reshape(6, 4)),
    "ravel": (lambda x: x.ravel(), lambda a: a.ravel()),
    "unflatten": (lambda x: x.unflatten(2, (2, 2)), lambda a: a.reshape(2, 3, 2, 2)),
    "unsqueeze": (lambda x: x.unsqueeze(1), lambda a: a[:, None]),
    "unsqueeze_neg": (lambda x: ember.unsqueeze(x, -1), lambda a: a[..., None]),
    "squeeze_noop": (lambda x: x.squeeze(), lambda a: a),
    "expand_varargs": (lambda x: x[:, :1].expand(2, 5, 4), lambda a: np.broadcast_to(a[:, :1], (2, 5, 4))),
    "expand_minus1": (lambda x: x[:, :1].expand(-1, 3, -1), lambda a: np.broadcast_to(a[:, :1], (2, 3, 4))),
    "broadcast_to": (lambda x: ember.broadcast_to(x[0, 0], (3, 4)), lambda a: np.broadcast_to(a[0, 0], (3, 4))),
    "repeat": (lambda x: x.repeat(1, 2, 1), lambda a: np.tile(a, (1, 2, 1))),
    "repeat_tuple": (lambda x: x.repeat((2, 1, 1, 1)), lambda a: np.tile(a, (2, 1, 1, 1))),
    "tile": (lambda x: ember.tile(x, (2,)), lambda a: np.tile(a, (2,))),
    "flip_varargs": (lambda x: x.flip(0, 2), lambda a: a[::-1, :, ::-1]),
    "flip_fn": (lambda x: ember.flip(x, [1]), lambda a: a[:, ::-1]),
    "fliplr": (lambda x: x.fliplr(), lambda a: np.fliplr(a)),
    "flipud": (lambda x: ember.flipud(x), lambda a: np.flipud(a)),
    "rot90": (lambda x: ember.rot90(x, 1, (1, 2)), lambda a: np.rot90(a, 1, (1, 2))),
    "rot90_3": (lambda x: x.rot90(3, [0, 1]), lambda a: np.rot90(a, 3, (0, 1))),
    "narrow": (lambda x: x.narrow(2, 1, 2), lambda a: a[:, :, 1:3]),
    "select": (lambda x: ember.select(x, 1, -1), lambda a: a[:, -1]),
    "roll_int": (lambda x: x.roll(1), lambda a: np.roll(a, 1)),
    "roll_dims": (lambda x: ember.roll(x, (1, -1), (0, 2)), lambda a: np.roll(a, (1, -1), (0, 2))),
    "diagonal": (lambda x: x.diagonal(0, 1, 2), lambda a: np.diagonal(a, 0, 1, 2)),
    "diagonal_off": (lambda x: ember.diagonal(x, offset=1, dim1=1, dim2=2), lambda a: np.diagonal(a, 1, 1, 2)),
    "tril": (lambda x: x.tril(), lambda a: np.tril(a)),
    "triu_k": (lambda x: ember.triu(x, 1), lambda a: np.triu(a, 1)),
    "tril_neg": (lambda x: ember.tril(x, diagonal=-1), lambda a: np.tril(a, -1)),
    "repeat_interleave": (lambda x: x.repeat_interleave(2, dim=1), lambda a: np.repeat(a, 2, axis=1)),
    "repeat_interleave_flat": (lambda x: ember.repeat_interleave(x, 2), lambda a: np.repeat(a, 2)),
    "repeat_interleave_tensor": (lambda x: x.repeat_interleave(T([1, 0, 2]), dim=1),
                                 lambda a: np.repeat(a, [1, 0, 2], axis=1)),
    "as_strided": (lambda x: x.as_strided((2, 2), (1, 2), 1), lambda a: np.lib.stride_tricks.as_strided(
        a.ravel()[1:], (2, 2), (4, 8))),
    "unfold": (lambda x: x.unfold(2, 2, 1), lambda a: np.lib.stride_tricks.sliding_window_view(a, 2, axis=2)),
    "t_of_2d": (lambda x: x[0].t(), lambda a: a[0].T),
    "adjoint": (lambda x: x.adjoint(), lambda a: a.swapaxes(-1, -2)),
    "contiguous": (lambda x: x.transpose(0, 1).contiguous(), lambda a: a.swapaxes(0, 1)),
    "clone": (lambda x: ember.clone(x), lambda a: a),
    "view_as": (lambda x: x.view_as(ember.zeros(4, 6)), lambda a: a.reshape(4, 6)),
    "reshape_as": (lambda x: x.transpose(0, 1).reshape_as(ember.zeros(24)), lambda a: a.swapaxes(0, 1).ravel()),
    "expand_as": (lambda x: x[:1].expand_as(x), lambda a: np.broadcast_to(a[:1], a.shape)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_shape_op_matches_numpy(name):
    f, ref = CASES[name]
    a = arr(2, 3, 4)
    out = f(T(a))
    expected = ref(a)
    assert tuple(out.shape) == expected.shape, name
    np.testing.assert_array_equal(out.numpy(), expected)


@pytest.mark.parametrize("name", ["view_varargs", "permute_varargs", "transpose", "narrow", "select", "diagonal",
                                  "expand_varargs", "unsqueeze", "unfold", "t_of_2d"])
def test_views_share_storage(name):
    x = T(arr(2, 3, 4))
    v = CASES[name][0](x)
    x.add_(100)
    np.testing.assert_array_equal(v.numpy(), CASES[name][1](arr(2, 3, 4) + 100))


def test_squeeze_forms():
    x = ember.zeros(1, 3, 1, 2)
    assert x.squeeze().shape == (3, 2)
    assert x.squeeze(0).shape == (3, 1, 2)
    assert ember.squeeze(x, dim=2).shape == (1, 3, 2)
    assert x.squeeze(1).shape == (1, 3, 1, 2)
    assert x.squeeze((0, 2)).shape == (3, 2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.squeeze(4)


def test_view_dtype_reinterprets_the_bytes_as_numpy_does():
    a = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    x = ember.from_numpy(a.copy())
    for dt, npdt in [(ember.int32, np.int32), (ember.float16, np.float16), (ember.float64, np.float64),
                     (ember.uint8, np.uint8), (ember.complex64, np.complex64), (ember.float32, np.float32)]:
        v = x.view(dt)
        assert v.dtype == dt and np.array_equal(v.numpy().view(np.uint8), a.view(npdt).view(np.uint8))
        assert v.data_ptr() == x.data_ptr() and not v.requires_grad
    # a write through the view is a write to the tensor (one storage, one version counter)
    v = x.view(ember.int32)
    v[0, 0] = 0x3F800000
    assert x[0, 0].item() == 1.0
    # strided windows: the last dim scales, the other strides and the offset follow
    w = x[1:, 2:6].view(ember.float16)
    assert w.shape == (3, 8) and w.stride() == (12, 1) and w.storage_offset() == 16
    assert x[:, 2:6].view(ember.float64).stride() == (3, 1)
    assert not ember.randn(3, requires_grad=True).view(ember.float32).requires_grad  # torch: never differentiable
    assert ember.zeros(4, dtype=ember.bool).view(ember.uint8).tolist() == [0, 0, 0, 0]
    # a bit trick through ember.compile: the captured graph replays the two views
    clear_sign = ember.compile(lambda t: (t.view(ember.int32) & 0x7FFFFFFF).view(ember.float32))
    for _ in range(2):
        assert ember.equal(clear_sign(x), x.abs())


def test_view_dtype_errors_name_the_sizes_as_torch():
    x = ember.zeros(2, 6)
    with pytest.raises(RuntimeError, match=r"self.stride\(-1\) must be 1 to view Float as Half \(different element "
                                           r"sizes\), but got 6"):
        x.t().view(ember.float16)
    with pytest.raises(RuntimeError, match=r"self.size\(-1\) must be divisible by 2 to view Float as Double"):
        x[:, :5].view(ember.float64)
    with pytest.raises(RuntimeError, match=r"self.storage_offset\(\) must be divisible by 2 .* but got 1"):
        x[:, 1:5].view(ember.float64)
    with pytest.raises(RuntimeError, match=r"self.stride\(0\) must be divisible by 2 .* but got 5"):
        ember.zeros(2, 5)[:, :4].view(ember.float64)
    with pytest.raises(RuntimeError, match=r"self.dim\(\) cannot be 0 to view Float as Half"):
        ember.tensor(1.0).view(ember.float16)


def test_view_dtype_and_errors():
    x = ember.zeros(2, 3)
    assert x.view(ember.float32).shape == (2, 3)
    with pytest.raises(RuntimeError):
        x.t().view(6)  # not viewable: needs reshape
    assert x.t().reshape(6).shape == (6,)
    with pytest.raises(RuntimeError):
        x.view(4, 2)
    with pytest.raises(IndexError):
        x.transpose(0, 2)
    with pytest.raises(IndexError):
        x.unsqueeze(5)


def test_split_chunk_unbind_return_tuples():
    x = T(arr(5, 2))
    parts = ember.split(x, 2)
    assert isinstance(parts, tuple) and [p.shape[0] for p in parts] == [2, 2, 1]
    parts = x.split([1, 4])
    assert [p.shape[0] for p in parts] == [1, 4]
    parts = x.split(1, dim=1)
    assert len(parts) == 2 and parts[1].shape == (5, 1)
    np.testing.assert_array_equal(ember.split(x, [3, 2], dim=0)[1].numpy(), arr(5, 2)[3:])
    chunks = x.chunk(3)
    assert isinstance(chunks, tuple) and [c.shape[0] for c in chunks] == [2, 2, 1]
    assert len(ember.chunk(x, 2, dim=1)) == 2
    rows = x.unbind()
    assert isinstance(rows, tuple) and len(rows) == 5 and rows[4].tolist() == [8.0, 9.0]
    cols = ember.unbind(x, dim=1)
    assert cols[1].tolist() == [1.0, 3.0, 5.0, 7.0, 9.0]


def test_cat_stack_and_friends():
    a, b = arr(2, 3), arr(2, 3) + 10
    ta, tb = T(a), T(b)
    for fn in (ember.cat, ember.concat, ember.concatenate):
        np.testing.assert_array_equal(fn([ta, tb]).numpy(), np.concatenate([a, b]))
        np.testing.assert_array_equal(fn((ta, tb), dim=1).numpy(), np.concatenate([a, b], 1))
    np.testing.assert_array_equal(ember.stack([ta, tb]).numpy(), np.stack([a, b]))
    np.testing.assert_array_equal(ember.stack((ta, tb), dim=-1).numpy(), np.stack([a, b], -1))
    np.testing.assert_array_equal(ember.hstack([ta, tb]).numpy(), np.hstack([a, b]))
    np.testing.assert_array_equal(ember.vstack([ta, tb]).numpy(), np.vstack([a, b]))
    np.testing.assert_array_equal(ember.dstack([ta, tb]).numpy(), np.dstack([a, b]))
    v = arr(3)
    np.testing.assert_array_equal(ember.hstack([T(v), T(v)]).numpy(), np.hstack([v, v]))
    np.testing.assert_array_equal(ember.vstack([T(v), T(v)]).numpy(), np.vstack([v, v]))
    np.testing.assert_array_equal(ember.column_stack([T(v), T(v)]).numpy(), np.column_stack([v, v]))
    with pytest.raises(RuntimeError):
        ember.cat([ta, T(arr(2, 4))])
    with pytest.raises(TypeError, match="cat"):
        ember.cat([ta, 1])
    with pytest.raises(RuntimeError):
        ember.stack([ta, T(arr(3, 2))])


def test_broadcasting_helpers():
    a, b = ember.zeros(3, 1), ember.zeros(1, 4)
    x, y = ember.broadcast_tensors(a, b)
    assert x.shape == (3, 4) and y.shape == (3, 4)
    s = ember.broadcast_shapes((3, 1), (4,), (2, 1, 1))
    assert s == (2, 3, 4) and isinstance(s, ember.Size)
    with pytest.raises(RuntimeError):
        ember.broadcast_shapes((3,), (4,))
    gx, gy = ember.meshgrid(ember.arange(3), ember.arange(2), indexing="ij")
    ex, ey = np.meshgrid(np.arange(3), np.arange(2), indexing="ij")
    np.testing.assert_array_equal(gx.numpy(), ex)
    np.testing.assert_array_equal(gy.numpy(), ey)
    gx, gy = ember.meshgrid([ember.arange(3), ember.arange(2)], indexing="xy")
    ex, ey = np.meshgrid(np.arange(3), np.arange(2), indexing="xy")
    np.testing.assert_array_equal(gx.numpy(), ex)
    np.testing.assert_array_equal(gy.numpy(), ey)
    assert ember.atleast_2d(ember.tensor(1.0)).shape == (1, 1)
    assert [t.shape for t in ember.atleast_1d(ember.tensor(1.0), ember.zeros(2))] == [(1,), (2,)]


def test_diag_trace_and_inplace_triangles():
    v = T(arr(3))
    np.testing.assert_array_equal(ember.diag(v).numpy(), np.diag(arr(3)))
    np.testing.assert_array_equal(v.diag(1).numpy(), np.diag(arr(3), 1))
    m = T(arr(3, 3))
    np.testing.assert_array_equal(m.diag().numpy(), np.diag(arr(3, 3)))
    assert m.trace().item() == np.trace(arr(3, 3))
    y = m.clone()
    assert y.tril_() is y
    np.testing.assert_array_equal(y.numpy(), np.tril(arr(3, 3)))
    assert y.triu_(1) is y and y.sum().item() == 0


def test_contiguous_returns_self_when_already_contiguous():
    x = ember.zeros(2, 3)
    assert x.contiguous() is x
    y = x.t().contiguous()
    assert y is not x and y.is_contiguous()


def test_non_contiguous_and_zero_dim_inputs():
    a = arr(4, 3)
    x = T(a).t()  # non-contiguous
    np.testing.assert_array_equal(x.reshape(12).numpy(), a.T.reshape(12))
    np.testing.assert_array_equal(x.flip(0).numpy(), a.T[::-1])
    np.testing.assert_array_equal(ember.cat([x, x], 1).numpy(), np.concatenate([a.T, a.T], 1))
    s = ember.tensor(5.0)
    assert s.reshape(1, 1).shape == (1, 1) and s.unsqueeze(0).shape == (1,) and s.flatten().shape == (1,)
    assert s.view(()).shape == () and s.expand(3).tolist() == [5.0] * 3


SHAPE_TORCH_CASES = [
    ("view", (4, 6)), ("reshape", (-1, 2)), ("permute", (2, 1, 0)), ("repeat", (1, 2, 2)), ("flip", (0, 1)),
    ("transpose", (1, 2)), ("movedim", ((0, 1), (1, 2))), ("squeeze", ()), ("unsqueeze", (0,)),
    ("flatten", (1,)), ("narrow", (1, 0, 2)), ("roll", (2,)), ("roll", ((1, 2), (0, 2))), ("tril", (1,)),
    ("triu", (-1,)), ("diagonal", (1, 0, 2)), ("repeat_interleave", (3,)), ("unfold", (1, 2, 1)),
    ("chunk", (2, 2)), ("split", ([1, 2], 1)), ("unbind", (1,)), ("rot90", (2, [0, 2])), ("tile", ((2, 1),)),
]


@pytest.mark.parametrize("name,args", SHAPE_TORCH_CASES, ids=[f"{n}{i}" for i, (n, _) in enumerate(SHAPE_TORCH_CASES)])
def test_shape_ops_against_torch(torch_ref, name, args):
    a = arr(2, 3, 4)
    e = getattr(ember.tensor(a), name)(*args)
    t = getattr(torch_ref.tensor(a), name)(*args)
    if isinstance(t, tuple):
        assert isinstance(e, tuple) and len(e) == len(t)
        for x, y in zip(e, t):
            np.testing.assert_array_equal(x.numpy(), y.numpy())
    else:
        assert tuple(e.shape) == tuple(t.shape) and e.stride() == t.stride()
        np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_transposed_copies_equal_numpy():
    """.contiguous() of a transpose: whole 32x32 tiles go through the CPU's 16x16 register
    transpose for 4-byte types, edges and other sizes through the tile loop; batched and strided
    batches too."""
    rng = np.random.default_rng(0)
    for shape in [(32, 32), (64, 96), (33, 70), (3, 48, 80), (2, 5, 128, 64), (100, 17)]:
        a = rng.standard_normal(shape)
        for dt in (ember.float32, ember.int32, ember.float64, ember.bfloat16):
            t = ember.tensor(a).to(dt)
            got = t.transpose(-1, -2).contiguous().to(ember.float64).numpy()
            assert np.array_equal(got, np.swapaxes(t.to(ember.float64).numpy(), -1, -2)), (shape, dt)
    b = ember.tensor(rng.standard_normal((4, 64, 48))).float()[::2]
    assert np.array_equal(b.transpose(1, 2).contiguous().numpy(), np.swapaxes(b.numpy(), 1, 2))


def test_transposed_casts_equal_the_cast_then_transpose():
    """float32 <-> bfloat16/float16 casts of a transposed tensor (what autocast does to a weight's
    transpose) go through the register transpose with the conversion: the same values as casting
    first, exactly."""
    rng = np.random.default_rng(1)
    for shape in [(64, 96), (33, 70), (2, 48, 64)]:
        x = ember.tensor(rng.standard_normal(shape) * 100).float()
        for half in (ember.bfloat16, ember.float16):
            h = x.to(half)
            assert ember.equal(h.transpose(-1, -2).to(ember.float32), h.to(ember.float32).transpose(-1, -2))
            assert ember.equal(x.transpose(-1, -2).to(half), x.to(half).transpose(-1, -2))
            assert x.transpose(-1, -2).to(half).is_contiguous()
