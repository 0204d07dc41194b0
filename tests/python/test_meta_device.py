"""The meta device: build a model without memory, then give it real tensors (to_empty, or
load_state_dict(assign=True)); shapes and dtypes of the common ops; errors where data is needed."""

import numpy as np
import pytest

import ember
from ember import nn


def test_factories_and_repr():
    m = ember.empty(2, 3, device="meta")
    assert m.is_meta and not m.is_cpu and m.device == ember.device("meta")
    assert m.data_ptr() == 0
    assert repr(m) == "tensor(..., device='meta', size=(2, 3))"
    assert repr(ember.arange(5, device="meta")) == "tensor(..., device='meta', size=(5,), dtype=ember.int64)"
    assert ember.zeros((), device="meta").shape == ()
    assert ember.tensor([1, 2], device="meta").shape == (2,)
    assert ember.ones(2, 3).to("meta").is_meta
    # Sizes far past this machine's memory cost nothing.
    huge = ember.empty(1 << 20, 1 << 20, device="meta")
    assert huge.numel() == 1 << 40 and huge.stride() == (1 << 20, 1)


def test_device_context_builds_a_meta_model_without_memory():
    with ember.device("meta"):
        # 64 x (8192 x 8192) float32 = 16 GiB, more than this machine has
        model = nn.Sequential(*[nn.Linear(8192, 8192) for _ in range(64)])
        inner = ember.empty(3)
    assert inner.is_meta
    assert ember.empty(3).is_cpu  # the block restored the default device
    assert all(p.is_meta for p in model.parameters())
    assert sum(p.numel() for p in model.parameters()) == 64 * (8192 * 8192 + 8192)
    y = model(ember.empty(4, 8192, device="meta"))
    assert y.is_meta and y.shape == (4, 8192)


def test_nested_device_contexts_restore_in_order():
    with ember.device("meta"):
        with ember.device("cpu"):
            assert ember.empty(1).is_cpu
        assert ember.empty(1).is_meta
    assert ember.empty(1).is_cpu


def _mlp():
    return nn.Sequential(nn.Linear(6, 8), nn.LayerNorm(8), nn.GELU(), nn.Linear(8, 3))


def test_to_empty_then_load_state_dict_matches_the_source_model():
    ember.manual_seed(1)
    source = _mlp()
    with ember.device("meta"):
        model = _mlp()
    assert all(t.is_meta for t in model.state_dict().values())
    model.to_empty(device="cpu")
    model.load_state_dict(source.state_dict())
    x = ember.randn(5, 6)
    np.testing.assert_array_equal(model(x).detach().numpy(), source(x).detach().numpy())


def test_load_state_dict_assign_takes_the_checkpoints_tensors():
    ember.manual_seed(2)
    source = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.Linear(8, 3))
    state = source.state_dict()
    with ember.device("meta"):
        model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.Linear(8, 3))
    model.load_state_dict(state, assign=True)
    assert model[0].weight.data_ptr() == state["0.weight"].data_ptr()  # no copy
    assert isinstance(model[0].weight, nn.Parameter) and model[0].weight.requires_grad
    assert model[1].running_mean.data_ptr() == state["1.running_mean"].data_ptr()
    assert not any(t.is_meta for t in model.state_dict().values())
    model.eval(), source.eval()
    x = ember.randn(4, 6)
    np.testing.assert_array_equal(model(x).detach().numpy(), source(x).detach().numpy())
    # and it trains
    model.train()
    model(x).sum().backward()
    assert model[0].weight.grad.shape == (8, 6)


def test_loading_into_meta_without_assign_warns_and_changes_nothing():
    with ember.device("meta"):
        model = nn.Linear(2, 2)
    with pytest.warns(UserWarning, match="Did you mean to pass `assign=True`"):
        model.load_state_dict(nn.Linear(2, 2).state_dict())
    assert model.weight.is_meta


def test_elementwise_reductions_and_matmul_shapes():
    a = ember.empty(2, 1, 3, device="meta")
    b = ember.empty(4, 1, dtype=ember.int64, device="meta")
    assert (a + b).shape == (2, 4, 3) and (a + b).dtype == ember.float32
    assert (b / b).dtype == ember.float32 and (b // b).dtype == ember.int64
    assert (a < 0).dtype == ember.bool
    assert (a * 2.5).is_meta  # a Python number keeps the result on meta
    assert a.sum(dim=1, keepdim=True).shape == (2, 1, 3)
    assert b.sum().dtype == ember.int64 and b.sum().shape == ()
    assert a.softmax(-1).shape == a.shape
    w = ember.empty(3, 5, device="meta")
    assert (a @ w).shape == (2, 1, 5)
    assert ember.cat([a, a], dim=1).shape == (2, 2, 3)
    assert a.transpose(0, 2).reshape(3, -1).shape == (3, 2)


def test_gradients_are_meta_too():
    x = ember.empty(3, 4, device="meta", requires_grad=True)
    (ember.nn.functional.gelu(x @ ember.empty(4, 2, device="meta")).sum()).backward()
    assert x.grad.is_meta and x.grad.shape == (3, 4)
    q = ember.empty(2, 4, 8, 16, device="meta", requires_grad=True)
    nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True).sum().backward()
    assert q.grad.is_meta and q.grad.shape == q.shape


def test_reading_data_raises():
    m = ember.empty(2, 3, device="meta")
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
        m.cpu()
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor"):
        m.tolist()
    with pytest.raises(RuntimeError, match="Tensor.item\\(\\) cannot be called on meta tensors"):
        bool(ember.ones(1, device="meta"))
    with pytest.raises((RuntimeError, TypeError), match="can't convert meta device type tensor to numpy"):
        m.numpy()
    with pytest.raises(RuntimeError, match="Tensor on device cpu is not on the expected device meta!"):
        m + ember.ones(2, 3)
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor"):
        nn.Linear(2, 2, device="meta").to("cpu")
    # an op without a meta kernel names itself instead of reading missing data
    with pytest.raises(NotImplementedError, match="'Meta' backend"):
        m.nonzero()  # data-dependent: torch refuses it on meta too
    with pytest.raises(NotImplementedError, match="'Meta' backend"):
        m[m > 0]  # a mask's result size depends on its values


def test_shapes_and_dtypes_agree_with_torch_meta():
    torch = pytest.importorskip("torch", reason="PyTorch not installed: differential test skipped")
    cases = [
        lambda T, d: T.empty(2, 1, 3, device=d) + T.empty(4, 1, dtype=T.int64, device=d),
        lambda T, d: T.empty(4, 1, dtype=T.int32, device=d) * 2.5,
        lambda T, d: T.empty(3, 5, dtype=T.int64, device=d).sum(1),
        lambda T, d: T.empty(3, 5, device=d).mean((0, 1), keepdim=True),
        lambda T, d: T.empty(3, 5, device=d).argmax(1),
        lambda T, d: T.empty(2, 3, 4, device=d) @ T.empty(4, 6, device=d),
        lambda T, d: T.empty(7, 2, 3, device=d).bmm(T.empty(7, 3, 5, device=d)),
        lambda T, d: T.where(T.empty(3, dtype=T.bool, device=d), T.empty(2, 1, device=d), 0),
        lambda T, d: T.arange(0, 1, 0.125, device=d),
        lambda T, d: T.empty(5, dtype=T.int64, device=d).sqrt(),
        lambda T, d: T.empty(3, 4, device=d).cumsum(0, dtype=T.float64),
        lambda T, d: T.cat([T.empty(2, 3, device=d), T.empty(2, 1, dtype=T.float64, device=d)], 1),
        lambda T, d: T.empty(3, 4, device=d).amax(-1),
    ]
    for case in cases:
        want, got = case(torch, "meta"), case(ember, "meta")
        assert tuple(got.shape) == tuple(want.shape)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]


def _same_forward_shapes(build, make_input):
    """The model's output on meta has the shapes and dtypes of the same model's output on the CPU."""
    ember.manual_seed(3)
    cpu_model = build()
    cpu_out = cpu_model(make_input("cpu"))
    with ember.device("meta"):
        meta_model = build()
    meta_out = meta_model(make_input("meta"))
    cpu_outs = cpu_out if isinstance(cpu_out, tuple) else (cpu_out,)
    meta_outs = meta_out if isinstance(meta_out, tuple) else (meta_out,)
    for c, m in zip(cpu_outs, meta_outs):
        if c is None:
            continue
        assert m.is_meta and m.shape == c.shape and m.dtype == c.dtype


def test_a_cnn_forward_runs_on_shapes():
    def build():
        return nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(8, 16, 3, dilation=2), nn.AvgPool2d(2, ceil_mode=True),
                             nn.AdaptiveAvgPool2d((3, 2)), nn.Flatten(), nn.Dropout(0.1), nn.Linear(96, 10))
    _same_forward_shapes(build, lambda d: ember.empty(4, 3, 37, 41, device=d).normal_())
    with ember.device("meta"):
        model = build().eval()  # eval: batch norm from running statistics
    assert model(ember.empty(2, 3, 37, 41, device="meta")).shape == (2, 10)


def test_a_transformer_forward_and_loss_run_on_shapes():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(100, 32)
            self.norm = nn.LayerNorm(32)
            self.attn = nn.MultiheadAttention(32, 4, batch_first=True)
            self.rms = nn.RMSNorm(32)
            self.head = nn.Linear(32, 100)

        def forward(self, tokens):
            x = self.emb(tokens)
            h = self.norm(x)
            x = x + self.attn(h, h, h, need_weights=False)[0]
            q = x.view(2, 7, 4, 8).transpose(1, 2)
            x = x + nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True).transpose(1, 2).reshape(2, 7, 32)
            return self.head(self.rms(x))

    def make_tokens(d):
        return ember.randint(0, 100, (2, 7)).to(d)

    _same_forward_shapes(Block, make_tokens)
    with ember.device("meta"):
        block = Block()
    logits = block(make_tokens("meta"))
    loss = nn.functional.cross_entropy(logits.view(-1, 100), ember.randint(0, 100, (14,)).to("meta"))
    assert loss.is_meta and loss.shape == ()
    per_token = nn.functional.cross_entropy(logits.view(-1, 100), ember.zeros(14, dtype=ember.int64, device="meta"),
                                            reduction="none")
    assert per_token.shape == (14,)


def test_a_training_step_backward_runs_on_shapes():
    with ember.device("meta"):
        cnn = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                            nn.AvgPool2d(2), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 5))
        lm = nn.Sequential(nn.Embedding(50, 16), nn.LayerNorm(16), nn.Linear(16, 50))
    loss = nn.functional.cross_entropy(cnn(ember.empty(4, 3, 16, 16, device="meta")),
                                       ember.zeros(4, dtype=ember.int64, device="meta"))
    loss.backward()
    tokens = ember.zeros(2, 6, dtype=ember.int64, device="meta")
    nn.functional.cross_entropy(lm(tokens).view(-1, 50), tokens.view(-1)).backward()
    for model in (cnn, lm):
        for name, p in model.named_parameters():
            assert p.grad is not None and p.grad.is_meta and p.grad.shape == p.shape, name


def test_more_ops_match_the_cpu_shapes():
    F = nn.functional
    x4, x5 = ember.randn(2, 3, 9, 10), ember.randn(2, 3, 6, 7, 8)
    idx = ember.randint(0, 9, (2, 3, 4, 10))
    cases = [
        lambda d: x4.to(d).sort(dim=2),
        lambda d: x4.to(d).topk(4, dim=-1),
        lambda d: x4.to(d).cummax(1),
        lambda d: x4.to(d).logcumsumexp(3),
        lambda d: x4.to(d).gather(2, idx.to(d)),
        lambda d: x4.to(d).scatter_add(2, idx.to(d), ember.ones(2, 3, 4, 10).to(d)),
        lambda d: F.conv3d(x5.to(d), ember.randn(4, 3, 3, 2, 3).to(d), stride=(1, 2, 1), padding=1),
        lambda d: F.max_pool3d(x5.to(d), 2, ceil_mode=True),
        lambda d: F.avg_pool3d(x5.to(d), (2, 3, 2)),
        lambda d: F.adaptive_avg_pool3d(x5.to(d), (2, 3, 1)),
        lambda d: F.interpolate(x4.to(d), scale_factor=2, mode="bilinear", align_corners=False),
        lambda d: F.pad(x4.to(d), (1, 2, -1, 3), mode="reflect"),
        lambda d: ember.special.polygamma(2, x4.to(d)),
        lambda d: x4.to(d)[(idx[0, 0, :, :3] % 2).to(d), :, 2],  # separated indices: broadcast dims first
        lambda d: x4.to(d)[:, ember.tensor([0, 2]).to(d), ember.tensor([[1], [3]]).to(d)],
        lambda d: x4.to(d).index_put_((ember.tensor([1]).to(d),), ember.zeros(3, 9, 10).to(d)),
        lambda d: F.embedding_bag(ember.tensor([1, 2, 4, 5, 4, 3]).to(d), ember.randn(10, 3).to(d),
                                  ember.tensor([0, 2, 2]).to(d), mode="max"),
        lambda d: F.embedding_bag(ember.tensor([[1, 2], [4, 5]]).to(d), ember.randn(10, 3).to(d), mode="mean"),
        lambda d: F.grid_sample(x4.to(d), (ember.rand(2, 5, 7, 2) * 2 - 1).to(d), align_corners=False),
    ]
    for case in cases:
        want, got = case("cpu"), case("meta")
        want = want if isinstance(want, tuple) else (want,)
        got = got if isinstance(got, tuple) else (got,)
        for w, g in zip(want, got):
            assert g.is_meta and g.shape == w.shape and g.dtype == w.dtype, (case, g.shape, w.shape)
    # and their gradients
    x = x5.to("meta").requires_grad_()
    w = ember.empty(4, 3, 3, 3, 3, device="meta", requires_grad=True)
    y = F.interpolate(F.max_pool3d(F.conv3d(F.pad(x, (1, 1, 1, 1, 1, 1)), w), 2), scale_factor=2)
    y.sum().backward()
    assert x.grad.shape == x.shape and w.grad.shape == w.shape
    img = x4.to("meta").requires_grad_()
    grid = ember.empty(2, 5, 7, 2, device="meta", requires_grad=True)
    bag_w = ember.empty(10, 3, device="meta", requires_grad=True)
    (F.grid_sample(img, grid, align_corners=True).sum() + F.embedding_bag(
        ember.zeros(2, 4, dtype=ember.int64, device="meta"), bag_w).sum()).backward()
    assert img.grad.shape == img.shape and grid.grad.shape == grid.shape and bag_w.grad.shape == bag_w.shape


def test_torchs_big_checkpoint_recipe_meta_mmap_assign(tmp_path):
    """with device('meta'): build; load(mmap=True); load_state_dict(assign=True): no copy of the weights."""
    ember.manual_seed(4)
    source = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 2)).eval()
    path = str(tmp_path / "model.pt")
    ember.save(source.state_dict(), path)
    with ember.device("meta"):
        model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 2))
    state = ember.load(path, mmap=True, weights_only=True)
    model.load_state_dict(state, assign=True)
    assert model[0].weight.data_ptr() == state["0.weight"].data_ptr()
    x = ember.randn(3, 4)
    np.testing.assert_array_equal(model.eval()(x).detach().numpy(), source(x).detach().numpy())
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    model.train()(x).sum().backward()
    opt.step()  # the mmapped weights are private copies on write: the file is untouched
    np.testing.assert_array_equal(ember.load(path)["0.weight"].numpy(), source[0].weight.detach().numpy())


@pytest.mark.parametrize("opt_name", ["AdamW", "Adam", "SGD", "RMSprop", "Adagrad"])
def test_a_whole_training_step_is_a_dry_run_on_meta(opt_name):
    with ember.device("meta"):
        model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4))
    kwargs = {"lr": 0.1, "momentum": 0.9} if opt_name == "SGD" else {"lr": 0.1}
    opt = getattr(ember.optim, opt_name)(model.parameters(), **kwargs)
    for _ in range(2):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(ember.empty(8, 16, device="meta")),
                                           ember.zeros(8, dtype=ember.int64, device="meta"))
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    assert norm.is_meta and norm.shape == ()
    for p in model.parameters():
        assert p.is_meta and p.grad.is_meta
    assert all(t.is_meta for s in opt.state.values() for t in s.values() if isinstance(t, ember.Tensor))


def test_linalg_shapes_and_orthogonal_init_on_meta():
    a, b = ember.randn(3, 5, 4), ember.randn(3, 5, 2)
    sq = a[..., :4, :] @ a[..., :4, :].mT + 4 * ember.eye(4)
    cases = [
        lambda d: ember.linalg.qr(a.to(d)), lambda d: ember.linalg.qr(a.to(d), mode="complete"),
        lambda d: ember.linalg.qr(a.to(d), mode="r")[1], lambda d: ember.linalg.svd(a.to(d), full_matrices=False),
        lambda d: ember.linalg.svd(a.to(d)), lambda d: ember.linalg.svdvals(a.to(d)),
        lambda d: ember.linalg.eigh(sq.to(d)), lambda d: ember.linalg.eigvalsh(sq.to(d)),
        lambda d: ember.linalg.inv(sq.to(d)), lambda d: ember.linalg.cholesky(sq.to(d)),
        lambda d: ember.linalg.det(sq.to(d)), lambda d: ember.linalg.slogdet(sq.to(d)),
        lambda d: ember.linalg.solve(sq.to(d), b[..., :4, :].to(d)), lambda d: ember.linalg.lu_factor(a.to(d)),
        lambda d: ember.linalg.eig(sq.to(d)),
    ]
    for case in cases:
        want, got = case("cpu"), case("meta")
        want = tuple(want) if isinstance(want, tuple) else (want,)
        got = tuple(got) if isinstance(got, tuple) else (got,)
        for w, g in zip(want, got):
            assert g.is_meta and g.shape == w.shape and g.dtype == w.dtype, (case, g.shape, w.shape, g.dtype, w.dtype)
    with ember.device("meta"):
        w = ember.empty(6, 3)
        nn.init.orthogonal_(w)
    assert w.is_meta and w.shape == (6, 3)


def test_fft_shapes_on_meta():
    x = ember.randn(4, 6, 10)
    cases = [lambda d: ember.fft.fft(x.to(d)), lambda d: ember.fft.rfft(x.to(d)), lambda d: ember.fft.irfft(
        ember.fft.rfft(x.to(d)), n=10), lambda d: ember.fft.fft2(x.to(d)), lambda d: ember.fft.rfftn(x.to(d), dim=(0, 2)),
        lambda d: ember.fft.ifft(x.to(d), n=16, dim=1), lambda d: ember.fft.hfft(ember.fft.rfft(x.to(d)))]
    for case in cases:
        want, got = case("cpu"), case("meta")
        assert got.is_meta and got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape)
