"""ember.nn against PyTorch 1.13: the same constructor is evaluated with both `nn`s, torch's
initialised weights are copied into the ember module via NumPy, then outputs, input gradients and
parameter gradients are compared; reprs and state_dict keys must be equal strings. Every test is
skipped, with the reason shown, when torch is not installed."""
import numpy as np
import pytest

import ember
from ember import nn as enn
import ember.nn.functional as EF

torch = pytest.importorskip("torch", reason="PyTorch not installed: differential test skipped")
tnn = torch.nn
TF = torch.nn.functional


def copy_weights(tmod, emod):
    state = {k: ember.from_numpy(v.detach().numpy().copy()) for k, v in tmod.state_dict().items()}
    emod.load_state_dict(state)


def as_np(t):
    if isinstance(t, (tuple, list)):
        return [as_np(x) for x in t]
    return t.detach().numpy()


def make_pair(expr):
    return eval(expr, {"nn": tnn}), eval(expr, {"nn": enn})


def run_both(tmod, emod, inputs, grad=True):
    """inputs: NumPy arrays; floating ones get requires_grad. Returns outputs and grads."""
    t_in = [torch.tensor(x, requires_grad=grad and x.dtype.kind == "f") for x in inputs]
    e_in = [ember.tensor(x, requires_grad=grad and x.dtype.kind == "f") for x in inputs]
    t_out, e_out = tmod(*t_in), emod(*e_in)
    return t_in, e_in, t_out, e_out


def flat(out):
    if isinstance(out, (tuple, list)):
        res = []
        for o in out:
            res.extend(flat(o))
        return res
    return [out] if out is not None else []


def check_module(expr, *shapes, train=True, int_inputs=None, atol=1e-5, rtol=1e-4):
    tmod, emod = make_pair(expr)
    copy_weights(tmod, emod)
    tmod.train(train)
    emod.train(train)
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    if int_inputs is not None:
        inputs = int_inputs
    t_in, e_in, t_out, e_out = run_both(tmod, emod, inputs)
    t_flat, e_flat = flat(t_out), flat(e_out)
    assert len(t_flat) == len(e_flat)
    for t, e in zip(t_flat, e_flat):
        assert tuple(t.shape) == tuple(e.shape)
        np.testing.assert_allclose(as_np(e), as_np(t), atol=atol, rtol=rtol)
    # gradients of a fixed random projection of every output
    weights = [rng.standard_normal(tuple(t.shape)).astype(np.float32) for t in t_flat]
    t_loss = sum((t * torch.tensor(w)).sum() for t, w in zip(t_flat, weights) if t.dtype.is_floating_point)
    e_loss = sum((e * ember.tensor(w)).sum() for e, w in zip(e_flat, weights) if e.dtype.is_floating_point)
    t_loss.backward()
    e_loss.backward()
    for t, e in zip(t_in, e_in):
        if t.grad is not None:
            np.testing.assert_allclose(as_np(e.grad), as_np(t.grad), atol=atol * 10, rtol=rtol * 10)
    for (tn, tp), (en, ep) in zip(tmod.named_parameters(), emod.named_parameters()):
        assert tn == en
        if tp.grad is not None:
            assert ep.grad is not None, en
            np.testing.assert_allclose(as_np(ep.grad), as_np(tp.grad), atol=atol * 10, rtol=rtol * 10, err_msg=en)
    if train:
        for (tn, tb), (en, eb) in zip(tmod.named_buffers(), emod.named_buffers()):
            np.testing.assert_allclose(as_np(eb), as_np(tb), atol=atol, rtol=rtol, err_msg=en)
    return tmod, emod


LAYERS = [
    ("nn.Linear(4, 3)", [(5, 4)]),
    ("nn.Linear(4, 3, bias=False)", [(2, 6, 4)]),
    ("nn.Bilinear(3, 4, 2)", [(5, 3), (5, 4)]),
    ("nn.Conv1d(2, 4, 3, stride=2, padding=1)", [(2, 2, 9)]),
    ("nn.Conv2d(2, 4, 3)", [(2, 2, 7, 6)]),
    ("nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)", [(1, 4, 8, 8)]),
    ("nn.Conv2d(2, 2, 3, padding='same', bias=False)", [(1, 2, 5, 5)]),
    ("nn.Conv2d(2, 3, 3, padding=1, padding_mode='reflect')", [(1, 2, 5, 5)]),
    ("nn.Conv2d(2, 3, 3, padding=2, padding_mode='circular')", [(1, 2, 5, 5)]),
    ("nn.MaxPool2d(2)", [(2, 3, 6, 6)]),
    ("nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True)", [(1, 2, 7, 7)]),
    ("nn.MaxPool1d(2)", [(2, 3, 8)]),
    ("nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False)", [(1, 2, 7, 7)]),
    ("nn.AvgPool1d(3)", [(1, 2, 9)]),
    ("nn.AdaptiveAvgPool2d((2, 3))", [(2, 3, 7, 8)]),
    ("nn.BatchNorm1d(3)", [(8, 3)]),
    ("nn.BatchNorm1d(3, momentum=None)", [(4, 3, 5)]),
    ("nn.BatchNorm2d(3, affine=False)", [(4, 3, 2, 2)]),
    ("nn.BatchNorm2d(3, track_running_stats=False)", [(4, 3, 2, 2)]),
    ("nn.LayerNorm((3, 4))", [(2, 3, 4)]),
    ("nn.GroupNorm(2, 4)", [(3, 4, 5)]),
    ("nn.ReLU()", [(3, 4)]),
    ("nn.ReLU6()", [(3, 4)]),
    ("nn.LeakyReLU(0.2)", [(3, 4)]),
    ("nn.GELU()", [(3, 4)]),
    ("nn.GELU(approximate='tanh')", [(3, 4)]),
    ("nn.SiLU()", [(3, 4)]),
    ("nn.ELU(alpha=0.5)", [(3, 4)]),
    ("nn.Softplus(beta=2, threshold=5)", [(3, 4)]),
    ("nn.Sigmoid()", [(3, 4)]),
    ("nn.Tanh()", [(3, 4)]),
    ("nn.Softmax(dim=1)", [(3, 4)]),
    ("nn.LogSoftmax(dim=-1)", [(3, 4)]),
    ("nn.Softmin(dim=0)", [(3, 4)]),
    ("nn.Hardtanh(-0.5, 0.5)", [(3, 4)]),
    ("nn.Hardswish()", [(3, 4)]),
    ("nn.Hardsigmoid()", [(3, 4)]),
    ("nn.Mish()", [(3, 4)]),
    ("nn.LogSigmoid()", [(3, 4)]),
    ("nn.Softsign()", [(3, 4)]),
    ("nn.PReLU(3)", [(2, 3, 4)]),
    ("nn.Flatten()", [(2, 3, 4)]),
    ("nn.Unflatten(1, (2, 2))", [(3, 4)]),
    ("nn.Identity(54, unused='x')", [(3, 4)]),
]


@pytest.mark.parametrize("expr,shapes", LAYERS, ids=[e for e, _ in LAYERS])
def test_layer_matches_torch(expr, shapes):
    check_module(expr, *shapes)


@pytest.mark.parametrize("expr", ["nn.BatchNorm1d(3)", "nn.BatchNorm2d(3)"])
def test_batchnorm_eval_after_training(expr):
    tmod, emod = make_pair(expr)
    x = np.random.default_rng(1).standard_normal((6, 3, 2, 2) if "2d" in expr else (6, 3)).astype(np.float32)
    for _ in range(3):
        tmod(torch.tensor(x * 2 + 1))
        emod(ember.tensor(x * 2 + 1))
    tmod.eval()
    emod.eval()
    np.testing.assert_allclose(as_np(emod(ember.tensor(x))), as_np(tmod(torch.tensor(x))), atol=1e-5)
    assert emod.num_batches_tracked.item() == 3


def test_dropout_eval_is_identity_like_torch():
    check_module("nn.Dropout(0.3)", (4, 5), train=False)
    check_module("nn.Dropout2d(0.3)", (2, 3, 4, 4), train=False)


def test_embedding_matches_torch():
    idx = np.array([[0, 2, 4], [1, 1, 3]], dtype=np.int64)
    check_module("nn.Embedding(5, 3, padding_idx=1)", int_inputs=[idx])


RNNS = [
    ("nn.LSTM(3, 4)", [(5, 2, 3)]),
    ("nn.LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True)", [(2, 5, 3)]),
    ("nn.GRU(3, 4, num_layers=2)", [(5, 2, 3)]),
    ("nn.RNN(3, 4, nonlinearity='relu', bias=False)", [(5, 2, 3)]),
    ("nn.RNN(3, 4)", [(5, 3)]),
]


@pytest.mark.parametrize("expr,shapes", RNNS, ids=[e for e, _ in RNNS])
def test_rnn_matches_torch(expr, shapes):
    check_module(expr, *shapes, atol=1e-5)


def test_lstm_with_initial_state_matches_torch():
    tmod, emod = make_pair("nn.LSTM(3, 4, num_layers=2)")
    copy_weights(tmod, emod)
    rng = np.random.default_rng(2)
    x, h0, c0 = (rng.standard_normal(s).astype(np.float32) for s in [(5, 2, 3), (2, 2, 4), (2, 2, 4)])
    t_out, (t_h, t_c) = tmod(torch.tensor(x), (torch.tensor(h0), torch.tensor(c0)))
    e_out, (e_h, e_c) = emod(ember.tensor(x), (ember.tensor(h0), ember.tensor(c0)))
    for t, e in [(t_out, e_out), (t_h, e_h), (t_c, e_c)]:
        np.testing.assert_allclose(as_np(e), as_np(t), atol=1e-5)


def test_multihead_attention_matches_torch():
    tmod, emod = make_pair("nn.MultiheadAttention(8, 2, batch_first=True)")
    copy_weights(tmod, emod)
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((2, s, 8)).astype(np.float32) for s in (3, 4, 4))
    kpm = np.array([[False, False, True, False], [False, False, False, False]])
    mask = np.triu(np.ones((3, 4), dtype=bool), 1)
    t_out, t_w = tmod(torch.tensor(q), torch.tensor(k), torch.tensor(v), key_padding_mask=torch.tensor(kpm),
                      attn_mask=torch.tensor(mask))
    e_out, e_w = emod(ember.tensor(q), ember.tensor(k), ember.tensor(v), key_padding_mask=ember.tensor(kpm),
                      attn_mask=ember.tensor(mask))
    np.testing.assert_allclose(as_np(e_out), as_np(t_out), atol=1e-5)
    np.testing.assert_allclose(as_np(e_w), as_np(t_w), atol=1e-5)
    check_module("nn.MultiheadAttention(8, 2)", (3, 2, 8), (4, 2, 8), (4, 2, 8))


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["'relu'", "'gelu'"])
def test_transformer_encoder_matches_torch(norm_first, activation):
    expr = (f"nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation={activation}, "
            f"norm_first={norm_first}), 2, norm=nn.LayerNorm(8))")
    tmod, emod = make_pair(expr)
    assert list(tmod.state_dict().keys()) == list(emod.state_dict().keys())
    copy_weights(tmod, emod)
    # torch's eval fast path is a different kernel; compare in training mode (dropout 0)
    check_module_pair(tmod, emod, (5, 2, 8))


def check_module_pair(tmod, emod, shape):
    x = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
    tx, ex = torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
    t_out, e_out = tmod(tx), emod(ex)
    np.testing.assert_allclose(as_np(e_out), as_np(t_out), atol=1e-5, rtol=1e-4)
    t_out.pow(2).sum().backward()
    e_out.pow(2).sum().backward()
    np.testing.assert_allclose(as_np(ex.grad), as_np(tx.grad), atol=1e-4, rtol=1e-3)
    for (tn, tp), (en, ep) in zip(tmod.named_parameters(), emod.named_parameters()):
        assert tn == en
        np.testing.assert_allclose(as_np(ep.grad), as_np(tp.grad), atol=1e-4, rtol=1e-3, err_msg=en)


# ---- losses ----------------------------------------------------------------------------------

def _loss_inputs(kind, rng):
    x = rng.standard_normal((4, 3)).astype(np.float32)
    if kind == "index":
        return x, np.array([0, 2, 1, 2], dtype=np.int64)
    if kind == "logprob":
        x = x - np.log(np.exp(x).sum(1, keepdims=True))
        return x, np.array([0, 2, 1, 2], dtype=np.int64)
    if kind == "prob":
        return 1 / (1 + np.exp(-x)), rng.uniform(size=(4, 3)).astype(np.float32)
    if kind == "dist":
        p = np.exp(x) / np.exp(x).sum(1, keepdims=True)
        return np.log(p), (np.exp(-x) / np.exp(-x).sum(1, keepdims=True)).astype(np.float32)
    return x, rng.standard_normal((4, 3)).astype(np.float32)


LOSSES = [
    ("nn.CrossEntropyLoss()", "index"),
    ("nn.CrossEntropyLoss(reduction='sum', label_smoothing=0.1)", "index"),
    ("nn.CrossEntropyLoss(ignore_index=2, reduction='none')", "index"),
    ("nn.CrossEntropyLoss()", "dist"),
    ("nn.NLLLoss()", "logprob"),
    ("nn.NLLLoss(reduction='sum')", "logprob"),
    ("nn.MSELoss()", "real"),
    ("nn.L1Loss(reduction='none')", "real"),
    ("nn.SmoothL1Loss(beta=0.5)", "real"),
    ("nn.HuberLoss(delta=0.7)", "real"),
    ("nn.BCELoss()", "prob"),
    ("nn.BCEWithLogitsLoss()", "real_prob"),
    ("nn.KLDivLoss(reduction='batchmean')", "dist"),
    ("nn.KLDivLoss(reduction='sum', log_target=True)", "dist_log"),
]


@pytest.mark.parametrize("expr,kind", LOSSES, ids=[f"{e}-{k}" for e, k in LOSSES])
def test_loss_matches_torch(expr, kind):
    rng = np.random.default_rng(5)
    if kind == "real_prob":
        x, _ = _loss_inputs("real", rng)
        y = rng.uniform(size=x.shape).astype(np.float32)
    elif kind == "dist_log":
        x, y = _loss_inputs("dist", rng)
        y = np.log(y)
    else:
        x, y = _loss_inputs(kind, rng)
    check_module(expr, int_inputs=[x, y])


def test_weighted_losses_match_torch():
    rng = np.random.default_rng(6)
    w = np.array([0.2, 1.0, 3.0], dtype=np.float32)
    x, y = _loss_inputs("index", rng)
    for cls in ("CrossEntropyLoss", "NLLLoss"):
        tl = getattr(tnn, cls)(weight=torch.tensor(w))
        el = getattr(enn, cls)(weight=ember.tensor(w))
        t_in = torch.tensor(x, requires_grad=True)
        e_in = ember.tensor(x, requires_grad=True)
        tv, ev = tl(t_in, torch.tensor(y)), el(e_in, ember.tensor(y))
        np.testing.assert_allclose(ev.item(), tv.item(), rtol=1e-5)
        tv.backward()
        ev.backward()
        np.testing.assert_allclose(as_np(e_in.grad), as_np(t_in.grad), atol=1e-6)
    pw = np.array([1.0, 2.0, 0.5], dtype=np.float32)
    target = rng.uniform(size=(4, 3)).astype(np.float32)
    tv = tnn.BCEWithLogitsLoss(pos_weight=torch.tensor(pw))(torch.tensor(x), torch.tensor(target))
    ev = enn.BCEWithLogitsLoss(pos_weight=ember.tensor(pw))(ember.tensor(x), ember.tensor(target))
    np.testing.assert_allclose(ev.item(), tv.item(), rtol=1e-5)


# ---- functional ------------------------------------------------------------------------------

def test_functional_ops_match_torch():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)
    t, e = torch.tensor(x), ember.tensor(x)
    pairs = [
        (TF.pad(t, (1, 2, 0, 1)), EF.pad(e, (1, 2, 0, 1))),
        (TF.pad(t, (1, 1, 2, 2), mode="reflect"), EF.pad(e, (1, 1, 2, 2), mode="reflect")),
        (TF.pad(t, (1, 1, 1, 1), mode="replicate"), EF.pad(e, (1, 1, 1, 1), mode="replicate")),
        (TF.pad(t, (1, 1), value=3.0), EF.pad(e, (1, 1), value=3.0)),
        (TF.softmax(t, dim=1), EF.softmax(e, dim=1)),
        (TF.log_softmax(t, 1, dtype=torch.float64), EF.log_softmax(e, 1, dtype=ember.float64)),
        (TF.normalize(t, dim=1), EF.normalize(e, dim=1)),
        (TF.max_pool2d(t, 2, 1), EF.max_pool2d(e, 2, 1)),
        (TF.avg_pool2d(t, (2, 3)), EF.avg_pool2d(e, (2, 3))),
        (TF.adaptive_avg_pool2d(t, 3), EF.adaptive_avg_pool2d(e, 3)),
        (TF.layer_norm(t, (5,)), EF.layer_norm(e, (5,))),
        (TF.group_norm(t, 3), EF.group_norm(e, 3)),
        (TF.dropout(t, 0.5, training=False), EF.dropout(e, 0.5, training=False)),
        (TF.cosine_similarity(t, t.flip(1)), EF.cosine_similarity(e, e.flip(1))),
    ]
    for tv, ev in pairs:
        assert tuple(tv.shape) == tuple(ev.shape)
        np.testing.assert_allclose(as_np(ev), as_np(tv), atol=1e-5, rtol=1e-5)
    idx = np.array([3, 0, 2], dtype=np.int64)
    assert EF.one_hot(ember.tensor(idx)).tolist() == TF.one_hot(torch.tensor(idx)).tolist()
    assert EF.one_hot(ember.tensor(idx), 5).tolist() == TF.one_hot(torch.tensor(idx), 5).tolist()
    q = rng.standard_normal((2, 2, 4, 8)).astype(np.float32)
    k = rng.standard_normal((2, 2, 6, 8)).astype(np.float32)
    v = rng.standard_normal((2, 2, 6, 8)).astype(np.float32)
    # torch 1.13 has only the private kernel; the formula is softmax(q k^T / sqrt(E)) v
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(8)
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    out = EF.scaled_dot_product_attention(ember.tensor(q), ember.tensor(k), ember.tensor(v))
    np.testing.assert_allclose(as_np(out), probs @ v, atol=1e-5)


def test_functional_errors_follow_torch():
    x = ember.ones(2, 3)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        EF.dropout(x, 1.5)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        enn.Dropout(-0.1)
    with pytest.raises(RuntimeError):
        EF.linear(x, ember.ones(4, 5))
    with pytest.raises(TypeError, match="padding"):
        EF.conv2d(ember.ones(1, 1, 3, 3), ember.ones(1, 1, 2, 2), padding=1.5)


# ---- repr and state_dict keys ----------------------------------------------------------------

REPRS = [e for e, _ in LAYERS + RNNS] + [e for e, _ in LOSSES] + [
    "nn.Sequential(nn.Linear(2, 3), nn.ReLU(inplace=True), nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.2)))",
    "nn.ModuleList([nn.Linear(2, 2), nn.ModuleDict({'a': nn.Tanh(), 'b': nn.Conv2d(1, 2, 3)})])",
    "nn.Embedding(10, 4, padding_idx=-1)",
    "nn.MultiheadAttention(8, 2)",
    "nn.TransformerEncoderLayer(8, 2, 16)",
    "nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2)",
    "nn.ParameterList([nn.Parameter(torch.ones(2, 3)), nn.Parameter(torch.zeros(4))])",
    "nn.Conv2d(1, 2, 3, padding='valid')",
    "nn.Conv2d(1, 2, 3, padding='same', dilation=2)",
    "nn.GroupNorm(2, 4, affine=False)",
    "nn.LayerNorm([3, 4], eps=1e-6, elementwise_affine=False)",
    "nn.ELU(inplace=True)",
    "nn.SiLU(inplace=True)",
    "nn.LeakyReLU(0.2, inplace=True)",
    "nn.Softmax()",
    "nn.MaxPool2d((2, 3), stride=(1, 2))",
    "nn.AdaptiveAvgPool2d((None, 7))",
]


@pytest.mark.parametrize("expr", REPRS)
def test_repr_and_keys_equal_torch(expr):
    tmod = eval(expr, {"nn": tnn, "torch": torch})
    emod = eval(expr, {"nn": enn, "torch": ember})
    assert repr(emod).replace("ember.", "torch.") == repr(tmod)
    assert list(emod.state_dict().keys()) == list(tmod.state_dict().keys())
    assert [n for n, _ in emod.named_modules()] == [n for n, _ in tmod.named_modules()]


def test_load_state_dict_messages_equal_torch():
    def both(fn):
        msgs = []
        for nn_ in (tnn, enn):
            with pytest.raises(RuntimeError) as err:
                fn(nn_)
            msgs.append(str(err.value).replace("ember.", "torch."))
        assert msgs[0] == msgs[1]

    def missing(nn_):
        m = nn_.Sequential(nn_.Linear(2, 2), nn_.BatchNorm1d(2))
        sd = m.state_dict()
        del sd["0.bias"]
        sd["2.weight"] = sd["0.weight"]
        m.load_state_dict(sd)

    def size(nn_):
        m = nn_.Linear(2, 3)
        big = nn_.Linear(3, 3)
        m.load_state_dict(big.state_dict())

    both(missing)
    both(size)


def test_default_init_distribution_matches_torch():
    # Same scheme (kaiming_uniform(a=sqrt(5)) and the fan-in bias bound): compare the bounds.
    # The largest |value| is a bound only for uniform inits; Embedding's N(0, 1) is compared by
    # its spread alone (the max of 1000 normal draws varies by 30% between seeds). torch is
    # seeded so the comparison is the same every run.
    torch.manual_seed(0)
    for expr in ["nn.Linear(50, 40)", "nn.Conv2d(6, 8, 5)", "nn.LSTM(10, 20)", "nn.Embedding(100, 10)"]:
        tmod, emod = make_pair(expr)
        for (tn, tp), (en, ep) in zip(tmod.named_parameters(), emod.named_parameters()):
            tv, ev = as_np(tp), as_np(ep)
            if tv.size < 200:  # too few samples for a stable spread
                continue
            if "Embedding" not in expr:
                assert abs(np.abs(ev).max() - np.abs(tv).max()) < 0.15 * np.abs(tv).max() + 1e-6, en
            assert abs(ev.std() - tv.std()) < 0.2 * tv.std() + 1e-6, en


def test_init_gains_equal_torch():
    for args in [("linear",), ("sigmoid",), ("tanh",), ("relu",), ("leaky_relu",), ("leaky_relu", 0.3),
                 ("selu",), ("conv2d",)]:
        assert enn.init.calculate_gain(*args) == pytest.approx(tnn.init.calculate_gain(*args))


def test_clip_grad_norm_matches_torch():
    rng = np.random.default_rng(8)
    grads = [rng.standard_normal(s).astype(np.float32) for s in [(3, 4), (5,)]]
    for norm_type in (2.0, 1.0, float("inf")):
        tps = [torch.zeros(g.shape, requires_grad=True) for g in grads]
        eps = [enn.Parameter(ember.zeros(g.shape)) for g in grads]
        for tp, ep, g in zip(tps, eps, grads):
            tp.grad = torch.tensor(g)
            ep.grad = ember.tensor(g)
        tn = tnn.utils.clip_grad_norm_(tps, 0.5, norm_type)
        en = enn.utils.clip_grad_norm_(eps, 0.5, norm_type)
        np.testing.assert_allclose(en.item(), tn.item(), rtol=1e-5)
        for tp, ep in zip(tps, eps):
            np.testing.assert_allclose(as_np(ep.grad), as_np(tp.grad), rtol=1e-5, atol=1e-7)
