"""Data-movement and selection ops on complex tensors against numpy. Several CPU kernels pick
their loop by element size and had no 16-byte case: where on complex128 kept only the real
parts (imaginary parts were uninitialised memory), flip read complex128 rows as 8-byte halves,
index_select/gather refused them, masked_fill refused complex."""
import numpy as np
import pytest

import ember as t


def _pair(dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((3, 4, 5)) + 1j * rng.standard_normal((3, 4, 5))).astype(dtype)
    return a, t.tensor(a)


CASES = {
    "flip0": (lambda X: X.flip(0), lambda x: x[::-1]),
    "flip2": (lambda X: X.flip(2), lambda x: x[:, :, ::-1]),
    "flip12": (lambda X: X.flip(1, 2), lambda x: x[:, ::-1, ::-1]),
    "roll": (lambda X: X.roll(2, 1), lambda x: np.roll(x, 2, 1)),
    "repeat": (lambda X: X.repeat(2, 1, 1), lambda x: np.tile(x, (2, 1, 1))),
    "cat": (lambda X: t.cat([X, X], 1), lambda x: np.concatenate([x, x], 1)),
    "tril": (lambda X: X.tril(), lambda x: np.tril(x)),
    "permute": (lambda X: X.permute(2, 0, 1).contiguous(), lambda x: x.transpose(2, 0, 1)),
    "index_select": (lambda X: X.index_select(1, t.tensor([3, 0, 0])), lambda x: x[:, [3, 0, 0]]),
    "gather": (lambda X: X.gather(2, t.ones(3, 4, 2, dtype=t.int64)), lambda x: x[:, :, [1, 1]]),
    "advanced_index": (lambda X: X[t.tensor([2, 0]), :, t.tensor([1, 4])], lambda x: x[[2, 0], :, [1, 4]]),
    "where": (lambda X: t.where(X.real > 0, X, X * 2), lambda x: np.where(x.real > 0, x, x * 2)),
    "where_number": (lambda X: t.where(X.real > 0, X, 2j), lambda x: np.where(x.real > 0, x, 2j)),
    "masked_fill": (lambda X: X.masked_fill(X.real > 0, 3 + 1j), lambda x: np.where(x.real > 0, 3 + 1j, x)),
    "masked_select": (lambda X: X.masked_select(X.imag > 0), lambda x: x[x.imag > 0]),
    "outer_difference": (lambda X: X[:, :1] - X[:1, :], lambda x: x[:, :1] - x[:1, :]),
    "strided_clone": (lambda X: X[:, ::2, 1::2].clone(), lambda x: x[:, ::2, 1::2]),
    "diagonal": (lambda X: X.diagonal(0, 1, 2).contiguous(), lambda x: np.diagonal(x, 0, 1, 2)),
    "scatter": (lambda X: t.zeros(3, 4, 5, dtype=X.dtype).scatter_(
        2, t.arange(4, -1, -1).expand(3, 4, 5).contiguous(), X), lambda x: x[:, :, ::-1]),
}


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name", sorted(CASES))
def test_complex_data_movement_matches_numpy(dtype, name):
    a, A = _pair(dtype)
    ember_fn, numpy_fn = CASES[name]
    got = ember_fn(A).numpy()
    want = numpy_fn(a)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_cumsum_and_its_gradient(dtype):
    a, A = _pair(dtype, seed=1)
    for dim in (0, 1, 2):
        np.testing.assert_allclose(A.cumsum(dim).numpy(), np.cumsum(a, dim), rtol=1e-5 if dtype == np.complex64
                                   else 1e-12)
    X = t.tensor(a.astype(np.complex128), requires_grad=True)
    w = np.arange(60.0).reshape(3, 4, 5)
    (t.real(X.cumsum(2)) * t.tensor(w)).sum().backward()
    np.testing.assert_allclose(X.grad.numpy(), np.cumsum(w[..., ::-1], 2)[..., ::-1] + 0j)
    with pytest.raises(RuntimeError, match="not implemented for 'ComplexDouble'"):
        X.detach().cumprod(0)  # torch has it; ember's cumprod gradient has no conjugates yet
