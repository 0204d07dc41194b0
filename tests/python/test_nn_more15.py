"""The rest of torch.nn's activations, dropouts, losses, LP pooling and max-unpooling
(ember/nn/_functional_more.py), in-place activations on non-leaf tensors, and PyTorch 2.x's
gradients at kinks (clamp's bounds). Differential tests against torch skip without it; the 2.x
kink values are written out (recorded from torch 2.x) so they hold whichever torch is installed.
"""
import math

import numpy as np
import pytest

import ember

F = ember.nn.functional
nn = ember.nn

rng = np.random.RandomState(0)
X1, X2, X3 = (rng.randn(4, 5) for _ in range(3))
SIGN = np.where(rng.randn(4) >= 0, 1.0, -1.0)
SIGN45 = np.where(X3 >= 0, 1.0, -1.0)
MULTI = rng.randint(0, 2, (4, 5)).astype(np.float64)
CLS = rng.randint(0, 5, 4)
MLT = np.array([[1, 3, -1, 0, 0], [0, -1, 2, 2, 2], [4, 3, 2, 1, 0], [-1, 0, 0, 0, 0]])

# name -> f(T, a, b, c) with T the library (ember or torch) and a, b, c float64 leaves
CASES = {
    "selu": lambda T, a, b, c: T.nn.functional.selu(a),
    "selu_inplace": lambda T, a, b, c: T.nn.functional.selu(a * 1, inplace=True),
    "celu": lambda T, a, b, c: T.nn.functional.celu(a, 0.7),
    "rrelu_eval": lambda T, a, b, c: T.nn.functional.rrelu(a),
    "threshold": lambda T, a, b, c: T.nn.functional.threshold(a, 0.1, 20.0),
    "hardshrink": lambda T, a, b, c: T.nn.functional.hardshrink(a),
    "softshrink": lambda T, a, b, c: T.nn.functional.softshrink(a, 0.5),
    "margin_ranking": lambda T, a, b, c: T.nn.functional.margin_ranking_loss(a[:, 0], b[:, 0], T.tensor(SIGN), 0.1,
                                                                            reduction="none"),
    "hinge_embedding": lambda T, a, b, c: T.nn.functional.hinge_embedding_loss(a, T.tensor(SIGN45), 0.5,
                                                                              reduction="none"),
    "soft_margin": lambda T, a, b, c: T.nn.functional.soft_margin_loss(a, T.tensor(SIGN45)),
    "multilabel_soft_margin": lambda T, a, b, c: T.nn.functional.multilabel_soft_margin_loss(
        a, T.tensor(MULTI), reduction="none"),
    "multilabel_soft_margin_weight": lambda T, a, b, c: T.nn.functional.multilabel_soft_margin_loss(
        a, T.tensor(MULTI), weight=T.tensor(np.arange(5.0))),
    "cosine_embedding": lambda T, a, b, c: T.nn.functional.cosine_embedding_loss(a, b, T.tensor(SIGN), 0.2,
                                                                                reduction="none"),
    "triplet": lambda T, a, b, c: T.nn.functional.triplet_margin_loss(a, b, c, reduction="none"),
    "triplet_swap_p1": lambda T, a, b, c: T.nn.functional.triplet_margin_loss(a, b, c, p=1, swap=True),
    "triplet_distance": lambda T, a, b, c: T.nn.functional.triplet_margin_with_distance_loss(a, b, c, margin=2.0),
    "multi_margin": lambda T, a, b, c: T.nn.functional.multi_margin_loss(a, T.tensor(CLS), reduction="none"),
    "multi_margin_p2_weight": lambda T, a, b, c: T.nn.functional.multi_margin_loss(
        a, T.tensor(CLS), p=2, margin=0.5, weight=T.tensor(np.arange(1.0, 6.0))),
    "multilabel_margin": lambda T, a, b, c: T.nn.functional.multilabel_margin_loss(a, T.tensor(MLT),
                                                                                  reduction="none"),
    "gaussian_nll": lambda T, a, b, c: T.nn.functional.gaussian_nll_loss(a, b, c.abs(), reduction="none"),
    "gaussian_nll_full_homoscedastic": lambda T, a, b, c: T.nn.functional.gaussian_nll_loss(a, b, c.abs()[:, 0],
                                                                                           full=True),
    "poisson_nll": lambda T, a, b, c: T.nn.functional.poisson_nll_loss(a, b.abs(), reduction="none"),
    "poisson_nll_full": lambda T, a, b, c: T.nn.functional.poisson_nll_loss(a.abs(), b.abs() * 3, log_input=False,
                                                                           full=True),
    "lp_pool1d": lambda T, a, b, c: T.nn.functional.lp_pool1d(a.unsqueeze(0), 2, 2),
    "lp_pool2d": lambda T, a, b, c: T.nn.functional.lp_pool2d(a.reshape(1, 1, 4, 5), 3, (2, 2), 1),
    "max_unpool1d": lambda T, a, b, c: T.nn.functional.max_unpool1d(
        *T.nn.functional.max_pool1d(a.reshape(1, 4, 5), 2, return_indices=True), 2, output_size=[5]),
    "max_unpool2d": lambda T, a, b, c: T.nn.functional.max_unpool2d(
        *T.nn.functional.max_pool2d(a.reshape(1, 1, 4, 5), 2, return_indices=True), 2, output_size=[4, 5]),
    "elu_inplace": lambda T, a, b, c: T.nn.functional.elu(a * 1, inplace=True),
    "leaky_relu_inplace": lambda T, a, b, c: T.nn.functional.leaky_relu(a * 1, 0.2, inplace=True),
    "hardtanh_inplace": lambda T, a, b, c: T.nn.functional.hardtanh(a * 1, -0.5, 0.5, inplace=True),
    "relu6_inplace": lambda T, a, b, c: T.nn.functional.relu6(a * 6, inplace=True),
    "hardswish_inplace": lambda T, a, b, c: T.nn.functional.hardswish(a * 3, inplace=True),
    "hardsigmoid_inplace": lambda T, a, b, c: T.nn.functional.hardsigmoid(a * 3, inplace=True),
    "mish_inplace": lambda T, a, b, c: T.nn.functional.mish(a * 1, inplace=True),
    "LeakyReLU_module_inplace": lambda T, a, b, c: T.nn.LeakyReLU(inplace=True)(a * 1),
    "ReLU6_module_inplace": lambda T, a, b, c: T.nn.ReLU6(inplace=True)(a * 6),
    "ELU_module_inplace": lambda T, a, b, c: T.nn.ELU(inplace=True)(a * 1),
    "Hardtanh_module_inplace": lambda T, a, b, c: T.nn.Hardtanh(inplace=True)(a * 2),
}


def run(T, f):
    a, b, c = (T.tensor(x, requires_grad=True) for x in (X1, X2, X3))
    out = f(T, a, b, c)
    weights = T.tensor(np.linspace(0.5, 1.5, out.numel()).reshape(tuple(out.shape)))
    (out * weights).sum().backward()
    return (np.asarray(out.detach().tolist(), dtype=np.float64),
            [np.asarray(t.grad.tolist()) if t.grad is not None else None for t in (a, b, c)])


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name, torch_ref):
    out_e, grads_e = run(ember, CASES[name])
    out_t, grads_t = run(torch_ref, CASES[name])
    np.testing.assert_allclose(out_e, out_t, rtol=1e-6, atol=1e-7)
    for ge, gt in zip(grads_e, grads_t):
        assert (ge is None) == (gt is None)
        if ge is not None:
            np.testing.assert_allclose(ge, gt, rtol=1e-6, atol=1e-7)


def grad_of(f, values):
    x = ember.tensor(values, dtype=ember.float64, requires_grad=True)
    y = x * 1.0  # a non-leaf, so in-place forms apply
    f(y).sum().backward()
    return x.grad.tolist()


def test_gradients_at_kinks_follow_torch_2():
    # Recorded from torch 2.x; 1.13 passed the gradient on clamp's bounds.
    x = [-3.0, -1.0, -0.25, 0.0, 0.5, 1.0, 2.0, 3.0]
    assert grad_of(lambda t: t.clamp(-1.0, 1.0), x) == [0, 0, 1, 1, 1, 0, 0, 0]
    assert grad_of(lambda t: t.clamp(min=1.0), x) == [0, 0, 0, 0, 0, 0, 1, 1]
    assert grad_of(lambda t: t.clamp(max=-1.0), x) == [1, 0, 0, 0, 0, 0, 0, 0]
    assert grad_of(lambda t: F.hardtanh(t), x) == [0, 0, 1, 1, 1, 0, 0, 0]
    assert grad_of(lambda t: F.relu6(t * 3), x) == [0, 0, 0, 0, 3, 3, 0, 0]
    assert grad_of(lambda t: F.hardswish(t), [-3.0, 3.0]) == [0.0, 1.0]
    np.testing.assert_allclose(grad_of(lambda t: F.hardsigmoid(t), [-3.0, 0.0, 3.0]), [0, 1 / 6, 0])
    assert grad_of(lambda t: F.elu(t), [0.0]) == [1.0]
    assert grad_of(lambda t: F.elu(t, inplace=True), [0.0]) == [1.0]
    np.testing.assert_allclose(grad_of(lambda t: F.selu(t), [0.0]), [1.0507009873554805 * 1.6732632423543772])
    np.testing.assert_allclose(grad_of(lambda t: F.softplus(t, 1, 2.0), [2.0]), [1 / (1 + math.exp(-2.0))])
    assert grad_of(lambda t: F.hinge_embedding_loss(t, ember.tensor([-1.0]), 0.5, reduction="sum"), [0.5]) == [0.0]
    # Tensor bounds: a tie splits the gradient between x and the bound.
    lo = ember.tensor([-1.0, -1.0], requires_grad=True)
    hi = ember.tensor([1.0, 1.0], requires_grad=True)
    xt = ember.tensor([-1.0, 1.0], requires_grad=True)
    xt.clamp(lo, hi).sum().backward()
    assert xt.grad.tolist() == [0.5, 0.5] and lo.grad.tolist() == [0.5, 0.0] and hi.grad.tolist() == [0.0, 0.5]


INPLACE = ["leaky_relu", "elu", "hardtanh", "relu6", "hardsigmoid", "hardswish", "mish", "selu", "celu", "silu",
           "relu", "threshold"]


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_activation_on_non_leaf_has_the_out_of_place_gradient(name):
    args = {"threshold": (0.1, 20.0)}.get(name, ())
    fn = getattr(F, name)
    values = [-2.5, -0.7, -0.1, 0.3, 0.9, 2.2, 4.0, 6.5]
    want = grad_of(lambda t: fn(t, *args), values)
    got = grad_of(lambda t: fn(t, *args, inplace=True), values)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # the module forms
    x = ember.tensor(values, requires_grad=True)
    y = x * 2
    out = nn.LeakyReLU(0.1, inplace=True)(y)
    assert out is y or out.data_ptr() == y.data_ptr()


def test_inplace_on_leaf_requiring_grad_is_refused():
    x = ember.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        F.elu(x, inplace=True)


def test_alpha_dropout_keeps_mean_and_variance():
    ember.manual_seed(1)
    x = ember.randn(200000)
    y = F.alpha_dropout(x, 0.2, training=True)
    assert abs(float(y.mean())) < 0.02 and abs(float(y.std()) - 1.0) < 0.02
    assert F.alpha_dropout(x, 0.2, training=False) is x
    feat = F.feature_alpha_dropout(ember.ones(8, 16, 5, 5), 0.5, training=True)
    per_channel = feat.reshape(8, 16, 25)
    assert bool((per_channel == per_channel[:, :, :1]).all())  # one draw per channel
    assert len(set(np.round(np.asarray(per_channel[:, :, 0].tolist()).ravel(), 6))) == 2


def test_feature_dropouts_zero_whole_channels_and_check_rank():
    ember.manual_seed(2)
    y = F.dropout3d(ember.ones(4, 6, 2, 3, 3), 0.5, training=True).reshape(4, 6, -1)
    assert bool(((y == 0).all(-1) | (y == 2).all(-1)).all())
    y1 = F.dropout1d(ember.ones(6, 10), 0.5, training=True)  # unbatched (C, L)
    assert bool(((y1 == 0).all(-1) | (y1 == 2).all(-1)).all())
    with pytest.raises(RuntimeError, match="dropout3d: Expected 4D or 5D input"):
        F.dropout3d(ember.ones(3, 3), 0.5)


def test_bad_arguments():
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        F.multi_margin_loss(ember.randn(2, 3), ember.tensor([0, 1]), p=3)
    with pytest.raises(ValueError, match="expected margin to be greater than 0"):
        nn.TripletMarginLoss(margin=0)
    with pytest.raises(ValueError, match="var has negative entry"):
        F.gaussian_nll_loss(ember.randn(3), ember.randn(3), -ember.ones(3))
    with pytest.raises(RuntimeError, match="Found an invalid max index"):
        F.max_unpool2d(ember.ones(1, 1, 2, 2), ember.full((1, 1, 2, 2), 99, dtype=ember.int64), 2)


MODULES = ["nn.SELU()", "nn.SELU(True)", "nn.CELU(0.5)", "nn.RReLU(0.1, 0.3)", "nn.Threshold(0.1, 2.0)",
           "nn.Hardshrink(0.3)", "nn.Softshrink()", "nn.Softmax2d()", "nn.AlphaDropout(0.2)",
           "nn.FeatureAlphaDropout()", "nn.Dropout3d(0.1)", "nn.LPPool1d(2, 3, 2)", "nn.LPPool2d(2, 3)",
           "nn.MaxUnpool1d(3, 2, 1)", "nn.MaxUnpool2d(2)", "nn.TripletMarginLoss()", "nn.MultiMarginLoss()",
           "nn.GaussianNLLLoss()", "nn.PoissonNLLLoss()", "nn.CosineEmbeddingLoss(0.2)", "nn.MarginRankingLoss()",
           "nn.MultiLabelSoftMarginLoss()", "nn.HingeEmbeddingLoss()", "nn.SoftMarginLoss()",
           "nn.MultiLabelMarginLoss()"]


@pytest.mark.parametrize("expr", MODULES)
def test_module_repr_matches_torch(expr, torch_ref):
    assert repr(eval(expr, {"nn": nn})) == repr(eval(expr, {"nn": torch_ref.nn}))


def test_batchnorm3d_matches_torch(torch_ref):
    x = rng.randn(2, 3, 2, 3, 4).astype(np.float32)
    e, t = nn.BatchNorm3d(3), torch_ref.nn.BatchNorm3d(3)
    np.testing.assert_allclose(np.asarray(e(ember.tensor(x)).tolist()),
                               t(torch_ref.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(e.running_var.tolist()), t.running_var.numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="expected 5D input"):
        e(ember.randn(2, 3, 4))


# ---- spatial transformer pieces, embedding bags, pdist, gumbel-softmax ------------------------

GRID_IN = rng.randn(2, 3, 5, 6)
GRID = rng.uniform(-1.3, 1.3, (2, 4, 7, 2))  # past the borders on purpose: padding modes matter
THETA = np.array([[[0.9, 0.2, 0.1], [-0.3, 1.1, -0.2]], [[1.2, -0.1, 0.3], [0.1, 0.8, 0.05]]])


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_matches_torch(mode, padding_mode, align_corners, torch_ref):
    def run(T):
        x = T.tensor(GRID_IN, requires_grad=True)
        g = T.tensor(GRID, requires_grad=True)
        out = T.nn.functional.grid_sample(x, g, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
        (out * T.tensor(np.linspace(0.5, 1.5, out.numel()).reshape(tuple(out.shape)))).sum().backward()
        return [np.asarray(t.tolist()) for t in (out.detach(), x.grad, g.grad)]
    for e, t in zip(run(ember), run(torch_ref)):
        np.testing.assert_allclose(e, t, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_kernel_on_bigger_float32_batches(mode, padding_mode, torch_ref):
    """The grid_sampler_2d kernel (bilinear, nearest) over several samples and channels in float32,
    planes split across tasks, grid points past the borders and on pixel centres, against torch;
    a second derivative is refused by name, as torch refuses it."""
    r = np.random.RandomState(5)
    x = r.randn(5, 7, 9, 11).astype(np.float32)
    g = r.uniform(-1.4, 1.4, (5, 6, 13, 2)).astype(np.float32)
    g[0, 0, :5, 0] = [-1, 1, 0, 0.5, -0.5]  # borders and pixel positions exactly
    up = r.randn(5, 7, 6, 13).astype(np.float32)
    for align_corners in (False, True):
        def run(T):
            xt, gt = T.tensor(x, requires_grad=True), T.tensor(g, requires_grad=True)
            out = T.nn.functional.grid_sample(xt, gt, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
            (out * T.tensor(up)).sum().backward()
            return [np.asarray(t.tolist()) for t in (out.detach(), xt.grad, gt.grad)]
        for e, t in zip(run(ember), run(torch_ref)):
            np.testing.assert_allclose(e, t, rtol=2e-5, atol=2e-5)
    xe, ge = ember.tensor(x, requires_grad=True), ember.tensor(g, requires_grad=True)
    out = F.grid_sample(xe, ge, mode=mode, padding_mode=padding_mode, align_corners=False)
    gx, = ember.autograd.grad(out.sum(), xe, create_graph=True)
    with pytest.raises(RuntimeError, match="derivative for grid_sampler_2d_backward is not implemented"):
        ember.autograd.grad(gx.sum(), ge) if gx.requires_grad else gx.sum().backward()


@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_matches_torch(align_corners, torch_ref):
    def run(T):
        theta = T.tensor(THETA, requires_grad=True)
        grid = T.nn.functional.affine_grid(theta, [2, 3, 4, 7], align_corners=align_corners)
        (grid * grid).sum().backward()
        return np.asarray(grid.detach().tolist()), np.asarray(theta.grad.tolist())
    for e, t in zip(run(ember), run(torch_ref)):
        np.testing.assert_allclose(e, t, rtol=1e-7, atol=1e-10)
    theta3 = rng.randn(1, 3, 4)
    np.testing.assert_allclose(
        np.asarray(F.affine_grid(ember.tensor(theta3), [1, 1, 2, 3, 4], align_corners=align_corners).tolist()),
        torch_ref.nn.functional.affine_grid(torch_ref.tensor(theta3), [1, 1, 2, 3, 4],
                                            align_corners=align_corners).numpy(), rtol=1e-7)


BAGS = [
    dict(input=[1, 2, 4, 5, 4, 3, 2, 9], offsets=[0, 4, 4], mode="sum", padding_idx=2),
    dict(input=[1, 2, 4, 5, 4, 3, 2, 9], offsets=[0, 4, 4], mode="mean", padding_idx=2),
    dict(input=[1, 2, 4, 5, 4, 3, 2, 9], offsets=[0, 4, 4], mode="max"),
    dict(input=[1, 2, 4, 5, 4, 3], offsets=[0, 2, 6], mode="mean", include_last_offset=True),
    dict(input=[[1, 2, 4], [4, 3, 2]], mode="sum", per_sample_weights=[[1.0, 2, 3], [0.5, 1, 2]]),
    dict(input=[[1, 2, 4], [4, 3, 2]], mode="max"),
    # empty bags first, in the middle and last; weights per position
    dict(input=[1, 2, 4, 5, 4, 3, 2, 9], offsets=[0, 0, 3, 3, 8], mode="sum",
         per_sample_weights=[1.0, 2, 3, 0.5, 1, 2, -1, 4]),
    dict(input=[1, 2, 4, 5, 4, 3, 2, 9], offsets=[0, 0, 3, 3, 8], mode="mean"),
]


@pytest.mark.parametrize("case", range(len(BAGS)))
def test_embedding_bag_matches_torch(case, torch_ref):
    spec = dict(BAGS[case])
    weight = rng.randn(10, 4)

    def run(T):
        w = T.tensor(weight, requires_grad=True)
        kw = dict(spec)
        inp = T.tensor(kw.pop("input"))
        if "offsets" in kw:
            kw["offsets"] = T.tensor(kw["offsets"])
        if "per_sample_weights" in kw:
            kw["per_sample_weights"] = T.tensor(kw["per_sample_weights"], dtype=T.float64)
        out = T.nn.functional.embedding_bag(inp, w, **kw)
        (out * T.tensor(np.linspace(0.5, 1.5, out.numel()).reshape(tuple(out.shape)))).sum().backward()
        return np.asarray(out.detach().tolist()), np.asarray(w.grad.tolist())
    for e, t in zip(run(ember), run(torch_ref)):
        np.testing.assert_allclose(e, t, rtol=1e-7, atol=1e-12)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_kernel_on_random_bags(mode, torch_ref):
    """The _embedding_bag op over many bags of random lengths (empty ones too), rows shared
    between bags (the backward's additions into one weight row), padding_idx and, for sum,
    per-sample weights, in float32 against torch; the max rule (first entry, then larger ones) on
    a NaN; a second derivative refused by name; out-of-range indices named."""
    r = np.random.RandomState(9)
    lengths = r.randint(0, 9, 300)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    idx = r.randint(0, 50, int(lengths.sum()))
    w = r.randn(50, 24).astype(np.float32)
    psw = r.randn(idx.size).astype(np.float32) if mode == "sum" else None
    up = r.randn(300, 24).astype(np.float32)

    def run(T):
        wt = T.tensor(w, requires_grad=True)
        pt = None if psw is None else T.tensor(psw, requires_grad=True)
        out = T.nn.functional.embedding_bag(T.tensor(idx), wt, T.tensor(offsets), mode=mode, per_sample_weights=pt,
                                            padding_idx=7)
        (out * T.tensor(up)).sum().backward()
        got = [out.detach(), wt.grad] + ([] if pt is None else [pt.grad])
        return [np.asarray(t.tolist()) for t in got]
    for e, t in zip(run(ember), run(torch_ref)):
        np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-5)
    if mode == "max":
        wn = ember.tensor([[float("nan"), 1.0], [2.0, float("nan")], [0.0, 5.0]])
        first = F.embedding_bag(ember.tensor([0, 1, 2]), wn, ember.tensor([0]), mode="max")
        later = F.embedding_bag(ember.tensor([2, 0, 1]), wn, ember.tensor([0]), mode="max")
        assert np.isnan(first[0, 0].item()) and first[0, 1].item() == 5.0
        assert later.tolist() == [[2.0, 5.0]]
    we = ember.tensor(w, requires_grad=True)
    out = F.embedding_bag(ember.tensor(idx), we, ember.tensor(offsets), mode=mode)
    gw, = ember.autograd.grad((out * out).sum(), we, create_graph=True)
    with pytest.raises(RuntimeError, match="derivative for _embedding_bag_backward is not implemented"):
        gw.sum().backward()
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding_bag(ember.tensor([1, 50]), we, ember.tensor([0]), mode=mode)


def test_embedding_bag_module_and_errors():
    # torch 2.x's repr (1.13 printed mode=sum without quotes)
    assert repr(nn.EmbeddingBag(10, 3, mode="sum", padding_idx=2)) == "EmbeddingBag(10, 3, mode='sum', padding_idx=2)"
    bag = nn.EmbeddingBag(10, 3)
    assert list(bag(ember.tensor([1, 2, 3, 4]), ember.tensor([0, 2])).shape) == [2, 3]
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        bag(ember.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
        bag(ember.tensor([1, 2]), ember.tensor([1]))
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for mode='sum'"):
        bag(ember.tensor([1, 2]), ember.tensor([0]), ember.ones(2))
    # (torch raises "Expected i < index_size to be true" here)
    with pytest.raises(RuntimeError, match=r"offsets must be non-decreasing, but got offsets\[1\] = 3 > offsets\[2\] = 2"):
        bag(ember.tensor([1, 2, 3, 4]), ember.tensor([0, 3, 2]))


def test_pdist_matches_torch(torch_ref):
    x = rng.randn(5, 3)
    for p in (1, 2, 3.5):
        xe, xt = ember.tensor(x, requires_grad=True), torch_ref.tensor(x, requires_grad=True)
        de, dt = F.pdist(xe, p), torch_ref.nn.functional.pdist(xt, p)
        de.sum().backward()
        dt.sum().backward()
        np.testing.assert_allclose(np.asarray(de.tolist()), dt.detach().numpy(), rtol=1e-10)
        np.testing.assert_allclose(np.asarray(xe.grad.tolist()), xt.grad.numpy(), rtol=1e-9)


def test_gumbel_softmax():
    ember.manual_seed(0)
    logits = ember.randn(64, 5, requires_grad=True)
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(np.asarray(soft.sum(1).tolist()), 1.0, rtol=1e-6)
    hard = F.gumbel_softmax(logits, tau=0.5, hard=True)
    assert bool(((hard == 0) | (hard == 1)).all()) and bool((hard.sum(1) == 1).all())
    (hard * ember.arange(5.0)).sum().backward()  # straight-through: the soft sample's gradient
    assert float(logits.grad.abs().sum()) > 0
    # the argmax of many samples follows softmax(logits)
    ember.manual_seed(3)
    base = ember.tensor([[0.0, 1.0, 2.0]]).expand(20000, 3)
    freq = np.asarray(F.gumbel_softmax(base, hard=True).mean(0).tolist())
    np.testing.assert_allclose(freq, np.exp([0, 1, 2]) / np.exp([0, 1, 2]).sum(), atol=0.015)
