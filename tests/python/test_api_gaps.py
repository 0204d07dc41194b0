"""torch names ember gained by probing dir(torch) / dir(torch.Tensor) against ember: in-place
comparisons and view ops, fill_diagonal_, gcd/lcm/nextafter, mode, histogram, the *_scatter and
*_copy forms, torch.* names of nn.functional's layers. Every case checks against numpy or an
explicit loop (CI has no torch); torch 2.x comparisons run where torch is installed."""
import itertools
import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F

try:
    import torch
except ImportError:  # CI: the independent references below still run
    torch = None


def _np(t):
    return t.detach().numpy()


def _randn(*shape, seed=0, dtype=np.float32):
    return ember.tensor(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


# ---------------------------------------------------------------- in-place comparisons and view ops
@pytest.mark.parametrize("name,ref", [("eq_", np.equal), ("ne_", np.not_equal), ("lt_", np.less),
                                      ("le_", np.less_equal), ("gt_", np.greater), ("ge_", np.greater_equal),
                                      ("greater_", np.greater), ("less_equal_", np.less_equal),
                                      ("not_equal_", np.not_equal)])
def test_comparisons_in_place_write_self_dtype(name, ref):
    a = ember.tensor([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])
    b = ember.tensor([2.0, 2.0, 2.0])
    expected = ref(_np(a), _np(b)).astype(np.float32)
    out = getattr(a, name)(b)
    assert out is a and a.dtype == ember.float32
    np.testing.assert_array_equal(_np(a), expected)
    i = ember.tensor([1, 5, 3])
    getattr(i, name)(3)
    np.testing.assert_array_equal(i.numpy(), ref(np.array([1, 5, 3]), 3).astype(np.int64))


def test_comparison_in_place_refuses_leaf_and_bigger_broadcast():
    x = ember.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.eq_(0)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        ember.zeros(3).lt_(ember.zeros(2, 3))


def test_in_place_view_ops_reshape_self_and_share_memory():
    base = ember.arange(12.0).reshape(3, 4)
    x = base.view(3, 4)
    assert x.t_() is x and x.shape == (4, 3)
    x[0, 1] = 100.0  # still base's memory
    assert base[1, 0].item() == 100.0
    y = ember.zeros(1, 3, 1)
    y.squeeze_()
    assert y.shape == (3,)
    y.unsqueeze_(0)
    assert y.shape == (1, 3)
    y.squeeze_(0)
    assert y.shape == (3,)
    z = ember.zeros(2, 3, 4)
    z.transpose_(0, 2)
    assert z.shape == (4, 3, 2) and z.stride() == (1, 4, 12)
    z.swapdims_(0, 2)
    assert z.shape == (2, 3, 4)
    w = ember.arange(6.0)
    w.as_strided_((2, 2), (1, 2), 1)
    np.testing.assert_array_equal(w.numpy(), [[1, 3], [2, 4]])


def test_in_place_view_op_inside_a_graph_keeps_gradients_right():
    x = ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    y = x * 2
    y.t_()
    assert y.shape == (3, 2) and y.grad_fn is not None
    weights = ember.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    (y * weights).sum().backward()
    # d/dx sum(2 x^T * W) = 2 W^T
    np.testing.assert_allclose(_np(x.grad), 2 * _np(weights).T)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x.unsqueeze_(0)


def test_fill_diagonal_square_tall_wrap_and_cube():
    a = ember.zeros(3, 5)
    a.fill_diagonal_(7)
    ref = np.zeros((3, 5), np.float32)
    np.fill_diagonal(ref, 7)
    np.testing.assert_array_equal(a.numpy(), ref)
    for wrap in (False, True):
        t = ember.zeros(7, 3)
        t.fill_diagonal_(1, wrap=wrap)
        ref = np.zeros((7, 3), np.float32)
        np.fill_diagonal(ref, 1, wrap=wrap)
        np.testing.assert_array_equal(t.numpy(), ref)
    c = ember.zeros(3, 3, 3)
    c.fill_diagonal_(2)
    assert c.sum().item() == 6 and c[1, 1, 1].item() == 2
    with pytest.raises(RuntimeError, match="all dimensions of input must be of equal length"):
        ember.zeros(2, 3, 3).fill_diagonal_(1)


def test_scatter_reduce_float_power_cumprod_in_place():
    x = ember.zeros(3)
    x.scatter_reduce_(0, ember.tensor([0, 0, 2]), ember.tensor([1.0, 2.0, 3.0]), "sum")
    np.testing.assert_array_equal(x.numpy(), [3, 0, 3])
    d = ember.tensor([2.0, 3.0], dtype=ember.float64)
    d.float_power_(2)
    np.testing.assert_array_equal(d.numpy(), [4, 9])
    with pytest.raises(RuntimeError, match="float_power_ has dtype Float but the operation's result requires dtype "
                                           "Double"):
        ember.tensor([2.0]).float_power_(2)
    c = ember.tensor([1.0, 2.0, 3.0])
    c.cumprod_(0)
    np.testing.assert_array_equal(c.numpy(), [1, 2, 6])


def test_torch_level_in_place_functions():
    x = ember.tensor([-2.0, 0.5, 3.0])
    assert ember.clamp_(x, 0, 1) is x
    np.testing.assert_array_equal(x.numpy(), [0, 0.5, 1])
    y = ember.tensor([0.0, 180.0])
    ember.deg2rad_(y)
    np.testing.assert_allclose(y.numpy(), [0, math.pi], rtol=1e-6)
    n = ember.tensor([float("nan"), 1.0])
    ember.nan_to_num_(n, 0.0)
    np.testing.assert_array_equal(n.numpy(), [0, 1])


# ---------------------------------------------------------------- scatters, splits, copies
def test_scatters_match_numpy_and_differentiate():
    a = _randn(3, 4, seed=1).requires_grad_()
    s = _randn(3, seed=2).requires_grad_()
    out = ember.diagonal_scatter(a, s, 1)
    ref = _np(a).copy()
    ref[[0, 1, 2], [1, 2, 3]] = _np(s)
    np.testing.assert_array_equal(_np(out), ref)
    (out * ember.arange(12.0).reshape(3, 4)).sum().backward()
    expected_a = np.arange(12.0).reshape(3, 4)
    expected_a[[0, 1, 2], [1, 2, 3]] = 0
    np.testing.assert_array_equal(_np(a.grad), expected_a)
    np.testing.assert_array_equal(_np(s.grad), [1, 6, 11])

    b = ember.arange(12.0).reshape(3, 4)
    ref = np.arange(12.0).reshape(3, 4)
    ref[1] = 0
    np.testing.assert_array_equal(ember.select_scatter(b, ember.zeros(4), 0, 1).numpy(), ref)
    ref = np.arange(12.0).reshape(3, 4)
    ref[:, 0:4:2] = -1
    np.testing.assert_array_equal(ember.slice_scatter(b, -ember.ones(3, 2), 1, 0, 4, 2).numpy(), ref)
    np.testing.assert_array_equal(ember.as_strided_scatter(ember.zeros(4), ember.ones(2), (2,), (2,), 1).numpy(),
                                  [0, 1, 0, 1])
    with pytest.raises(RuntimeError, match="expected src to have a size equal to the slice of self"):
        ember.select_scatter(b, ember.zeros(3), 0, 1)


def test_split_with_sizes_and_copies():
    x = ember.arange(10.0)
    parts = ember.split_with_sizes(x, [2, 3, 5])
    assert [p.numel() for p in parts] == [2, 3, 5]
    with pytest.raises(RuntimeError, match="split_with_sizes expects split_sizes to sum exactly to 10"):
        x.split_with_sizes([2, 3])
    m = ember.arange(6.0).reshape(2, 3)
    for copy, view in ((ember.t_copy(m), m.t()), (ember.permute_copy(m, (1, 0)), m.permute(1, 0)),
                       (ember.expand_copy(m[:1], (4, 3)), m[:1].expand(4, 3)),
                       (ember.slice_copy(m, 1, 0, 3, 2), m[:, 0:3:2]), (ember.narrow_copy(m, 1, 1, 2), m[:, 1:3]),
                       (ember.diagonal_copy(m), m.diagonal()), (ember.view_copy(m, (3, 2)), m.view(3, 2))):
        np.testing.assert_array_equal(copy.numpy(), view.numpy())
        assert copy.is_contiguous()
    c = ember.t_copy(m)
    c.zero_()
    assert m.sum().item() == 15  # the copy shares nothing
    assert len(ember.unbind_copy(m)) == 2


# ---------------------------------------------------------------- number theory, float steps, statistics
def test_gcd_lcm_match_numpy_over_random_integers():
    rng = np.random.default_rng(3)
    a = rng.integers(-10**6, 10**6, 500)
    b = rng.integers(-10**6, 10**6, 500)
    a[:5] = 0
    b[3:8] = 0
    np.testing.assert_array_equal(ember.gcd(ember.tensor(a), ember.tensor(b)).numpy(), np.gcd(a, b))
    small_a, small_b = a % 1000, b % 1000
    np.testing.assert_array_equal(ember.tensor(small_a).lcm(ember.tensor(small_b)).numpy(), np.lcm(small_a, small_b))
    with pytest.raises(RuntimeError, match="\"gcd_cpu\" not implemented for 'Float'"):
        ember.gcd(ember.tensor([1.0]), ember.tensor([2.0]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nextafter_matches_numpy(dtype):
    x = np.array([1.0, 0.0, -0.0, np.inf, np.nan, -1.5, 3.0, 1e-30, -2.0], dtype)
    y = np.array([2.0, -1.0, 1.0, 0.0, 1.0, -np.inf, 3.0, 0.0, np.nan], dtype)
    got = ember.nextafter(ember.tensor(x), ember.tensor(y)).numpy()
    np.testing.assert_array_equal(got, np.nextafter(x, y))


def test_mvlgamma_is_sum_of_lgammas():
    x = np.array([2.5, 3.0, 7.25])
    for p in (1, 2, 3):
        expected = [sum(math.lgamma(v - j / 2) for j in range(p)) + p * (p - 1) / 4 * math.log(math.pi) for v in x]
        np.testing.assert_allclose(ember.mvlgamma(ember.tensor(x), p).numpy(), expected, rtol=1e-12)


def _mode_reference(row):
    """(value, index of its last occurrence): the most frequent, the smallest on a tie, NaNs equal."""
    keyed = [("nan" if isinstance(v, float) and math.isnan(v) else v) for v in row]
    counts = {}
    for k in keyed:
        counts[k] = counts.get(k, 0) + 1
    best = max(counts.values())
    candidates = [k for k, c in counts.items() if c == best]
    numeric = sorted(k for k in candidates if k != "nan")
    value = numeric[0] if numeric else "nan"
    return value, max(i for i, k in enumerate(keyed) if k == value)


def test_mode_matches_counting_over_random_rows():
    rng = np.random.default_rng(4)
    data = rng.integers(0, 5, (40, 9))
    values, indices = ember.mode(ember.tensor(data), 1)
    for r in range(40):
        v, i = _mode_reference(list(data[r]))
        assert (values[r].item(), indices[r].item()) == (v, i)
    f = ember.tensor([2.0, 1.0, 2.0, 1.0, float("nan"), float("nan")])
    assert ember.mode(f).values.item() == 1.0 and ember.mode(f).indices.item() == 3
    v3, i3 = ember.tensor(data.reshape(4, 10, 9)).mode(1, keepdim=True)
    assert v3.shape == (4, 1, 9) and i3.shape == (4, 1, 9)
    col = data.reshape(4, 10, 9)[2, :, 5]
    assert (v3[2, 0, 5].item(), i3[2, 0, 5].item()) == _mode_reference(list(col))


def test_histogram_matches_numpy():
    x = np.random.default_rng(5).standard_normal(1000).astype(np.float32)
    for bins, rng_ in ((10, None), (7, (-1.0, 2.0))):
        hist, edges = ember.histogram(ember.tensor(x), bins, range=rng_)
        ref_hist, ref_edges = np.histogram(x, bins, range=rng_)
        np.testing.assert_array_equal(hist.numpy(), ref_hist)
        np.testing.assert_allclose(edges.numpy(), ref_edges, rtol=1e-6)
    edges = np.array([-3.0, -1.0, 0.0, 0.5, 3.0], np.float32)
    w = np.random.default_rng(6).random(1000).astype(np.float32)
    hist, _ = ember.histogram(ember.tensor(x), ember.tensor(edges), weight=ember.tensor(w), density=True)
    ref, _ = np.histogram(x, edges, weights=w, density=True)
    np.testing.assert_allclose(hist.numpy(), ref, rtol=1e-5)
    hist, edges = ember.histogram(ember.tensor([1.0, 1.0]), 2)
    np.testing.assert_array_equal(edges.numpy(), [0.5, 1.0, 1.5])


def test_combinations_unravel_vander_diagflat():
    v = ember.tensor([10, 20, 30, 40])
    for r, rep in itertools.product((1, 2, 3), (False, True)):
        pick = itertools.combinations_with_replacement if rep else itertools.combinations
        expected = [list(c) for c in pick([10, 20, 30, 40], r)]
        got = ember.combinations(v, r, rep)
        assert got.tolist() == expected
    assert ember.combinations(v, 0).numel() == 0
    flat = np.array([0, 5, 7, 23, -1, 30])
    got = ember.unravel_index(ember.tensor(flat), (2, 3, 4))
    ref = [(f // 12) % 2 for f in flat], [(f // 4) % 3 for f in flat], [f % 4 for f in flat]
    for g, r in zip(got, ref):
        np.testing.assert_array_equal(g.numpy(), r)
    with pytest.raises(TypeError, match="expected 'indices' to be integer dtype"):
        ember.unravel_index(ember.tensor([1.0]), (2, 3))
    x = ember.tensor([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(ember.vander(x).numpy(), np.vander([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(ember.vander(x, 4, increasing=True).numpy(),
                                  np.vander([1.0, 2.0, 3.0], 4, increasing=True))
    z = ember.tensor([0.0, 2.0], requires_grad=True)
    ember.vander(z, 3).sum().backward()  # d/dx (x^2 + x + 1) = 2x + 1, finite at 0
    np.testing.assert_array_equal(_np(z.grad), [1, 5])
    np.testing.assert_array_equal(ember.diagflat(ember.tensor([[1, 2], [3, 4]]), 1).numpy(),
                                  np.diagflat([[1, 2], [3, 4]], 1))


def test_index_reduce_against_a_loop():
    rng = np.random.default_rng(7)
    base = rng.standard_normal((5, 3)).astype(np.float32)
    src = rng.standard_normal((6, 3)).astype(np.float32)
    index = np.array([0, 4, 0, 2, 4, 4])
    for reduce, fold in (("prod", np.multiply), ("amax", np.maximum), ("amin", np.minimum)):
        for include_self in (True, False):
            ref = base.copy()
            touched = set()
            for j, i in enumerate(index):
                if not include_self and i not in touched:
                    ref[i] = src[j]
                else:
                    ref[i] = fold(ref[i], src[j])
                touched.add(i)
            got = ember.tensor(base).index_reduce(0, ember.tensor(index), ember.tensor(src), reduce,
                                                   include_self=include_self)
            np.testing.assert_allclose(got.numpy(), ref, rtol=1e-6)
    ref = base.copy()
    for i in set(index):
        ref[i] = (base[i] + src[index == i].sum(0)) / (1 + (index == i).sum())
    got = ember.tensor(base).index_reduce(0, ember.tensor(index), ember.tensor(src), "mean")
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-6)


def test_addbmm_addr_against_numpy():
    rng = np.random.default_rng(8)
    m, b1, b2 = rng.standard_normal((3, 5)), rng.standard_normal((4, 3, 2)), rng.standard_normal((4, 2, 5))
    got = ember.addbmm(ember.tensor(m), ember.tensor(b1), ember.tensor(b2), beta=0.5, alpha=2.0)
    np.testing.assert_allclose(got.numpy(), 0.5 * m + 2 * np.einsum("bij,bjk->ik", b1, b2), rtol=1e-12)
    v1, v2 = rng.standard_normal(3), rng.standard_normal(5)
    nan_m = np.full((3, 5), np.nan)
    np.testing.assert_allclose(ember.addr(ember.tensor(nan_m), ember.tensor(v1), ember.tensor(v2), beta=0).numpy(),
                               np.outer(v1, v2))
    t = ember.tensor(m)
    t.addr_(ember.tensor(v1), ember.tensor(v2))
    np.testing.assert_allclose(t.numpy(), m + np.outer(v1, v2))


# ---------------------------------------------------------------- small predicates, factories, norms
def test_predicates_factories_and_legacy_norms():
    assert ember.is_same_size(ember.zeros(2, 3), ember.ones(2, 3)) and not ember.zeros(2).is_same_size(ember.zeros(3))
    assert ember.is_signed(ember.zeros(1)) and not ember.is_signed(ember.zeros(1, dtype=ember.uint8))
    assert ember.zeros(1).get_device() == -1
    np.testing.assert_array_equal(ember.nonzero_static(ember.tensor([0, 1, 0, 2]), size=4).numpy(),
                                  [[1], [3], [-1], [-1]])
    assert ember.nonzero_static(ember.tensor([[0, 1], [1, 1]]), size=2).tolist() == [[0, 1], [1, 0]]
    e = ember.empty_permuted((2, 3, 4), (0, 2, 1))
    assert e.shape == (2, 3, 4) and e.stride() == (12, 1, 3)
    assert ember.zeros(2, 4, 5, 3).permute(0, 3, 1, 2).dim_order() == (0, 2, 3, 1)
    assert ember.fill(ember.zeros(2), 3.0).tolist() == [3.0, 3.0]
    m = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(ember.norm_except_dim(ember.tensor(m), 2, 0).numpy(),
                               np.linalg.norm(m, axis=1, keepdims=True))
    np.testing.assert_allclose(ember.norm_except_dim(ember.tensor(m), 2, 1).numpy(),
                               np.linalg.norm(m, axis=0, keepdims=True))
    np.testing.assert_allclose(ember.nuclear_norm(ember.tensor(m)).item(), np.linalg.norm(m, "nuc"))
    np.testing.assert_allclose(ember.frobenius_norm(ember.tensor(m), (0, 1)).item(), np.linalg.norm(m))
    s = ember.tensor([[1.0, 2.0], [3.0, 4.0]]).sum_to_size(1, 2)
    assert s.tolist() == [[4.0, 6.0]]
    assert ember.ones(2, 3, 4).sum_to_size(3, 1).tolist() == [[8.0]] * 3
    with pytest.raises(RuntimeError, match="is not expandable to size"):
        ember.ones(2, 3).sum_to_size(4)
    assert ember.zeros(1).new(2, 3).shape == (2, 3) and ember.zeros(1).new([1, 2]).tolist() == [1.0, 2.0]
    c = ember.tensor([[1.0, 2.0], [3.0, 4.0]]).cdouble()
    assert c.dtype == ember.complex128 and c.H.tolist() == [[1, 3], [2, 4]]


def test_binomial_mean_and_bounds():
    ember.manual_seed(0)
    count = ember.full((20000,), 10.0)
    draws = ember.binomial(count, ember.full((20000,), 0.3))
    assert draws.min().item() >= 0 and draws.max().item() <= 10
    assert abs(draws.mean().item() - 3.0) < 0.06 and abs(draws.var().item() - 2.1) < 0.15
    assert ember.binomial(ember.tensor([0.0, 5.0]), ember.tensor([0.9, 1.0])).tolist() == [0.0, 5.0]


def test_lu_and_lu_solve_legacy_names():
    a = ember.tensor([[4.0, 3.0], [6.0, 3.0]], dtype=ember.float64)
    lu, piv = ember.lu(a)
    b = ember.tensor([[1.0], [2.0]], dtype=ember.float64)
    x = ember.lu_solve(b, lu, piv)
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(a.numpy(), b.numpy()))
    assert len(a.lu(get_infos=True)) == 3


# ---------------------------------------------------------------- torch.* names of nn.functional layers
def test_torch_level_layer_names_use_atens_signatures():
    x = _randn(2, 3, 8, seed=9)
    w = _randn(4, 3, 3, seed=10)
    np.testing.assert_array_equal(ember.conv1d(x, w, None, 1, 1).numpy(), F.conv1d(x, w, None, 1, 1).numpy())
    g, b = ember.ones(3) * 2, ember.zeros(3)
    rm, rv = ember.zeros(3), ember.ones(3)
    out = ember.batch_norm(x, g, b, rm, rv, False, 0.1, 1e-5, False)
    np.testing.assert_allclose(out.numpy(), 2 * x.numpy() / math.sqrt(1 + 1e-5), rtol=1e-6)
    weight = _randn(5, 3, seed=11)
    idx = ember.tensor([4, 0, 4])
    np.testing.assert_array_equal(ember.embedding(weight, idx).numpy(), weight.numpy()[[4, 0, 4]])
    assert ember.dropout(x, 0.5, False) is x
    assert ember.dropout(x, 1.0, True).abs().sum().item() == 0
    logits, target = _randn(6, seed=12), ember.tensor([1.0, 0.0, 1.0, 1.0, 0.0, 0.0])
    for code, name in ((0, "none"), (1, "mean"), (2, "sum")):
        np.testing.assert_allclose(ember.binary_cross_entropy_with_logits(logits, target, None, None, code).numpy(),
                                   F.binary_cross_entropy_with_logits(logits, target, reduction=name).numpy())
    with pytest.raises(ValueError, match="reduction must be 0 \\(none\\), 1 \\(mean\\) or 2 \\(sum\\)"):
        ember.kl_div(logits, target, 3)
    y = ember.tensor([-1.0, 0.5, 2.0])
    ember.threshold_(y, 1.0, -5.0)
    assert y.tolist() == [-5.0, -5.0, 2.0]
    np.testing.assert_allclose(ember.layer_norm(x, [8]).numpy(), F.layer_norm(x, [8]).numpy())
    vals, idx = ember.max_pool1d_with_indices(x, 2)
    assert vals.shape == (2, 3, 4) and idx.dtype == ember.int64
    assert ember.constant_pad_nd(ember.ones(2), [1, 2], 5.0).tolist() == [5, 1, 1, 5, 5]
    ember.manual_seed(1)
    feature = ember.feature_dropout(ember.ones(4, 6, 5), 0.5, True)
    per_channel = feature.reshape(24, 5)
    assert bool(((per_channel == 0).all(1) | (per_channel == 2).all(1)).all())


# ---------------------------------------------------------------- against torch 2.x, where installed
@pytest.mark.skipif(torch is None or not hasattr(torch, "nonzero_static"), reason="needs torch 2.x")
def test_against_torch_2():
    rng = np.random.default_rng(13)
    data = rng.integers(0, 4, (6, 11))
    tv, ti = torch.mode(torch.tensor(data), 1)
    ev, ei = ember.mode(ember.tensor(data), 1)
    assert ev.tolist() == tv.tolist() and ei.tolist() == ti.tolist()
    f = rng.standard_normal((4, 5)).astype(np.float32)
    for name, args in (("diagonal_scatter", (np.ones(4, np.float32), 0)),
                       ("slice_scatter", (np.zeros((4, 2), np.float32), 1, 1, 5, 2))):
        t_args = [torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
        e_args = [ember.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
        np.testing.assert_array_equal(getattr(ember, name)(ember.tensor(f), *e_args).numpy(),
                                      getattr(torch, name)(torch.tensor(f), *t_args).numpy())
    th = torch.histogram(torch.tensor(f.ravel()), 5)
    eh = ember.histogram(ember.tensor(f.ravel()), 5)
    np.testing.assert_array_equal(eh.hist.numpy(), th.hist.numpy())
    np.testing.assert_allclose(eh.bin_edges.numpy(), th.bin_edges.numpy(), rtol=1e-6)
    t = torch.zeros(7, 4)
    e = ember.zeros(7, 4)
    t.fill_diagonal_(3, wrap=True)
    e.fill_diagonal_(3, wrap=True)
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    tx = torch.tensor(f, requires_grad=True)
    ex = ember.tensor(f, requires_grad=True)
    for x, mod in ((tx, torch), (ex, ember)):
        y = x * 3
        y.t_()
        y.unsqueeze_(0)
        (y * mod.arange(20.0).reshape(1, 5, 4)).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy())


# ---------------------------------------------------------------- linalg composites
def test_linalg_solve_ex_tensorinv_tensorsolve_vander_householder():
    rng = np.random.default_rng(14)
    a = rng.standard_normal((2, 4, 4))
    b = rng.standard_normal((2, 4, 3))
    x, info = ember.linalg.solve_ex(ember.tensor(a), ember.tensor(b))
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(a, b), rtol=1e-10)
    assert info.tolist() == [0, 0]
    xl, _ = ember.linalg.solve_ex(ember.tensor(a), ember.tensor(b.transpose(0, 2, 1)), left=False)
    np.testing.assert_allclose(xl.numpy() @ a, b.transpose(0, 2, 1), atol=1e-10)
    singular = np.stack([np.eye(3), np.zeros((3, 3))])
    x, info = ember.linalg.solve_ex(ember.tensor(singular), ember.ones(2, 3, dtype=ember.float64))
    assert info.tolist() == [0, 1] and x[0].tolist() == [1, 1, 1] and bool(x[1].isnan().all())
    with pytest.raises(RuntimeError, match="input matrix is singular"):
        ember.linalg.solve_ex(ember.tensor(singular), ember.ones(2, 3, dtype=ember.float64), check_errors=True)

    m = rng.standard_normal((6, 6))
    inv = ember.linalg.tensorinv(ember.tensor(m.reshape(6, 2, 3)), ind=1)
    assert inv.shape == (2, 3, 6)
    np.testing.assert_allclose(inv.numpy(), np.linalg.tensorinv(m.reshape(6, 2, 3), ind=1), rtol=1e-8)
    with pytest.raises(RuntimeError, match="prod\\(self.shape\\[ind:\\]\\) == prod\\(self.shape\\[:ind\\]\\)"):
        ember.linalg.tensorinv(ember.randn(2, 3, 4), ind=1)
    t = rng.standard_normal((2, 3, 6))
    rhs = rng.standard_normal((2, 3))
    np.testing.assert_allclose(ember.linalg.tensorsolve(ember.tensor(t), ember.tensor(rhs)).numpy(),
                               np.linalg.tensorsolve(t, rhs), rtol=1e-8)
    moved = np.moveaxis(t, 2, 0)
    np.testing.assert_allclose(ember.linalg.tensorsolve(ember.tensor(moved), ember.tensor(rhs), dims=(0,)).numpy(),
                               np.linalg.tensorsolve(moved, rhs, axes=(0,)), rtol=1e-8)

    xs = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 4.0]])
    np.testing.assert_array_equal(ember.linalg.vander(ember.tensor(xs)).numpy(),
                                  np.stack([np.vander(r, increasing=True) for r in xs]))

    # Householder reflectors of a QR (made here by hand, LAPACK's convention) rebuild its Q.
    m_, n_ = 5, 3
    A = rng.standard_normal((m_, n_))
    R, V, taus = A.copy(), np.zeros((m_, n_)), []
    for j in range(n_):
        xcol = R[j:, j].copy()
        alpha, norm = xcol[0], np.linalg.norm(xcol)
        beta = -math.copysign(norm, alpha)
        v = xcol / (alpha - beta)
        v[0] = 1.0
        tau = (beta - alpha) / beta
        R[j:, :] -= tau * np.outer(v, v @ R[j:, :])
        V[j + 1:, j] = v[1:]
        taus.append(tau)
    packed = np.triu(R[:, :n_]) + V
    Q = ember.linalg.householder_product(ember.tensor(packed), ember.tensor(np.array(taus))).numpy()
    np.testing.assert_allclose(Q.T @ Q, np.eye(n_), atol=1e-12)
    np.testing.assert_allclose(Q @ np.triu(R[:n_, :n_]), A, atol=1e-12)


def test_scaled_bessel_past_overflow_and_complex_type_names():
    x = np.array([10.0, 49.0, 50.0, 51.0, 100.0, 600.0])
    np.testing.assert_allclose(ember.special.i0e(ember.tensor(x)).numpy(), np.i0(x) * np.exp(-x), rtol=1e-13)
    big = np.array([800.0, 5e3, 1e5])

    def series(v, nu, terms=30):  # the asymptotic expansion, summed further than ember does
        total, term = 1.0, 1.0
        for k in range(1, terms):
            term *= -(4 * nu * nu - (2 * k - 1) ** 2) / (k * 8 * v)
            total += term
        return total / math.sqrt(2 * math.pi * v)

    np.testing.assert_allclose(ember.special.i0e(ember.tensor(big)).numpy(), [series(v, 0) for v in big], rtol=1e-14)
    np.testing.assert_allclose(ember.special.i1e(ember.tensor(-big)).numpy(), [-series(v, 1) for v in big],
                               rtol=1e-14)
    f32 = ember.special.i0e(ember.tensor([90.0, 200.0, 1e4]))  # float32 I0 overflows from ~88
    assert bool(f32.isfinite().all())
    xs = ember.tensor([-300.0, 30.0, 300.0], dtype=ember.float64, requires_grad=True)
    ember.special.i0e(xs).sum().backward()  # d i0e = i1e - sign(x) i0e, finite on both branches
    expected = ember.special.i1e(xs.detach()) - xs.detach().sign() * ember.special.i0e(xs.detach())
    np.testing.assert_allclose(xs.grad.numpy(), expected.numpy(), rtol=1e-10)
    assert ember.zeros(1, dtype=ember.complex64).type() == "ember.ComplexFloatTensor"
    assert ember.zeros(1, dtype=ember.complex128).type() == "ember.ComplexDoubleTensor"


def test_xlogy_gradient_in_x_at_zero_is_log_y_as_torch():
    x = ember.tensor([0.0, 0.0, 0.0, 0.0, 2.0], dtype=ember.float64, requires_grad=True)
    y = ember.tensor([2.0, 0.0, -1.0, 0.5, 3.0], dtype=ember.float64)
    out = ember.xlogy(x, y)
    assert out.tolist()[:4] == [0.0, 0.0, 0.0, 0.0]
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [math.log(2.0), 0.0, 0.0, math.log(0.5), math.log(3.0)])
    x1 = ember.tensor([0.0, 0.0, 0.0], dtype=ember.float64, requires_grad=True)
    ember.special.xlog1py(x1, ember.tensor([2.0, -1.0, -3.0], dtype=ember.float64)).sum().backward()
    np.testing.assert_allclose(x1.grad.numpy(), [math.log(3.0), 0.0, 0.0])
    # Gamma(concentration=1).log_prob's gradient in the concentration: d/da [(a-1) log v - lgamma(a) + a log r]
    a = ember.tensor(1.0, dtype=ember.float64, requires_grad=True)
    v, rate = 0.7, 2.0
    ember.distributions.Gamma(a, ember.tensor(rate, dtype=ember.float64)).log_prob(
        ember.tensor(v, dtype=ember.float64)).backward()
    digamma_1 = -0.5772156649015329
    assert a.grad.item() == pytest.approx(math.log(v) - digamma_1 + math.log(rate), rel=1e-10)


def test_python_callback_maps_resize_is_set_to_and_layout():
    x = ember.arange(6.0).reshape(2, 3)
    assert x.apply_(lambda v: v * 2) is x and x.tolist() == [[0, 2, 4], [6, 8, 10]]
    x.map_(ember.ones(3), lambda a, b: a + b)  # broadcast other
    assert x.tolist() == [[1, 3, 5], [7, 9, 11]]
    x.map2_(ember.ones(2, 3), ember.full((2, 3), 2.0), lambda a, b, c: a * c - b)
    assert x.tolist() == [[1, 5, 9], [13, 17, 21]]
    with pytest.raises(RuntimeError, match="Can't call apply_\\(\\) on Variable that requires grad"):
        ember.ones(2, requires_grad=True).apply_(lambda v: v)
    assert x.is_set_to(x) and not x.is_set_to(x.view(6)) and x[0:2].is_set_to(x)
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        assert x.resize(3, 2).shape == (3, 2)
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="can only change the shape"):
        x.resize(4)
    assert x.layout == ember.strided
    r = reversed(ember.arange(3.0))
    assert isinstance(r, ember.Tensor) and r.tolist() == [2.0, 1.0, 0.0]
    assert reversed(ember.tensor(5.0)).item() == 5.0


def test_stack_dataset_reads_datasets_side_by_side():
    from ember.utils.data import DataLoader, StackDataset, TensorDataset
    images = TensorDataset(ember.arange(10.0).reshape(5, 2))
    labels = [10, 11, 12, 13, 14]
    pairs = StackDataset(images, labels)
    assert len(pairs) == 5 and pairs[3][1] == 13 and pairs[3][0][0].tolist() == [6.0, 7.0]
    named = StackDataset(x=images, y=labels)
    assert named[1]["y"] == 11
    batch = next(iter(DataLoader(named, batch_size=2)))
    assert batch["y"].tolist() == [10, 11] and batch["x"][0].tolist() == [[0.0, 1.0], [2.0, 3.0]]
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(images, [1, 2])
    with pytest.raises(ValueError, match="but both types are given"):
        StackDataset(images, y=labels)


def test_out_keyword_writes_the_result():
    x = ember.tensor([0.0, 1.0, 1.0, 2.0])
    hist, edges = ember.empty(0), ember.empty(0)
    result = ember.histogram(x, 2, out=(hist, edges))
    assert result.hist is hist and hist.tolist() == [1.0, 3.0] and edges.tolist() == [0.0, 1.0, 2.0]
    m = ember.zeros(2, 2)
    out = ember.empty(2, 2)
    assert ember.addbmm(m, ember.ones(3, 2, 1), ember.ones(3, 1, 2), out=out) is out and out.tolist() == [[3, 3], [3, 3]]
    a, tau = ember.empty(0, dtype=ember.float64), ember.empty(0, dtype=ember.float64)
    ember.geqrf(ember.tensor([[3.0, 1.0], [4.0, 2.0]], dtype=ember.float64), out=(a, tau))
    assert a[0, 0].item() == pytest.approx(-5.0)
    q = ember.empty(0, dtype=ember.float64)
    ember.linalg.householder_product(a, tau, out=q)
    np.testing.assert_allclose(np.abs(q.numpy()), np.abs(np.linalg.qr([[3.0, 1.0], [4.0, 2.0]])[0]), atol=1e-12)
    with pytest.raises(TypeError, match="argument 'out' must be Tensor"):
        ember.linalg.tensorinv(ember.eye(4).reshape(4, 2, 2), ind=1, out=[1])
