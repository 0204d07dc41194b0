"""RNN/LSTM/GRU, MultiheadAttention and TransformerEncoderLayer as ordinary Python modules over
the C++ functionals: ember._VF.rnn_tanh / rnn_relu / gru / lstm and
F.multi_head_attention_forward against float64 NumPy references (including what only the
functional reaches: bias_k/bias_v, add_zero_attn, separate projection weights, static_k/v), the
modules' Parameters as real leaves, replaced and converted parameters, deepcopy, ember.save,
submodule hooks; and the same functionals and module variants against PyTorch when installed."""
import copy
import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import _VF, nn


def sig(x):
    return 1 / (1 + np.exp(-x))


def np_rnn(mode, x, params, has_biases, num_layers, bidirectional, hx=None, cx=None):
    """Per-step float64 reference for (L, N, in) input: output, h_n, c_n (LSTM)."""
    D, stride = (2 if bidirectional else 1), (4 if has_biases else 2)
    H = params[1].shape[1]
    L, N = x.shape[:2]
    hx = np.zeros((D * num_layers, N, H)) if hx is None else hx
    cx = np.zeros((D * num_layers, N, H)) if cx is None else cx
    layer_in, h_n, c_n = x, [], []
    for layer in range(num_layers):
        outs = []
        for d in range(D):
            idx = layer * D + d
            w_ih, w_hh = params[idx * stride], params[idx * stride + 1]
            b_ih, b_hh = (params[idx * stride + 2], params[idx * stride + 3]) if has_biases else (0.0, 0.0)
            h, c = hx[idx], cx[idx]
            out = np.zeros((L, N, H))
            for t in (range(L - 1, -1, -1) if d else range(L)):
                gi, gh = layer_in[t] @ w_ih.T + b_ih, h @ w_hh.T + b_hh
                if mode == "RNN_TANH":
                    h = np.tanh(gi + gh)
                elif mode == "RNN_RELU":
                    h = np.maximum(gi + gh, 0)
                elif mode == "LSTM":
                    i, f, g, o = np.split(gi + gh, 4, axis=1)
                    c = sig(f) * c + sig(i) * np.tanh(g)
                    h = sig(o) * np.tanh(c)
                else:
                    (xr, xz, xn), (hr, hz, hn) = np.split(gi, 3, axis=1), np.split(gh, 3, axis=1)
                    r, z = sig(xr + hr), sig(xz + hz)
                    n = np.tanh(xn + r * hn)
                    h = (1 - z) * n + z * h
                out[t] = h
            outs.append(out)
            h_n.append(h)
            c_n.append(c)
        layer_in = np.concatenate(outs, axis=2)
    return layer_in, np.stack(h_n), np.stack(c_n)


def np_mha(q, k, v, num_heads, w_in, b_in, w_out, b_out, attn_mask=None, kpm=None, bias_k=None, bias_v=None,
           add_zero_attn=False, qkv_w=None, static_k=None, static_v=None):
    """float64 reference of torch's multi_head_attention_forward on (L, N, E) / (S, N, kdim|vdim):
    attention output and per-head weights (N, H, L, S')."""
    L, N, E = q.shape
    H, d = num_heads, q.shape[2] // num_heads
    wq, wk, wv = np.split(w_in, 3) if qkv_w is None else qkv_w
    bq, bk, bv = np.split(b_in, 3) if b_in is not None else (0.0, 0.0, 0.0)
    Q, K, V = q @ wq.T + bq, k @ wk.T + bk, v @ wv.T + bv

    def additive(m):
        return None if m is None else (np.where(m, -np.inf, 0.0) if m.dtype == bool else m.astype(np.float64))

    def one_more_key(m):
        return None if m is None else np.concatenate([m, np.zeros(m.shape[:-1] + (1,))], axis=-1)

    am, kp = additive(attn_mask), additive(kpm)
    if bias_k is not None:
        K = np.concatenate([K, np.broadcast_to(bias_k, (1, N, E))])
        V = np.concatenate([V, np.broadcast_to(bias_v, (1, N, E))])
        am, kp = one_more_key(am), one_more_key(kp)
    heads = lambda t: t.reshape(t.shape[0], N * H, d).transpose(1, 0, 2)  # noqa: E731
    Qh = heads(Q)
    Kh = heads(K) if static_k is None else static_k
    Vh = heads(V) if static_v is None else static_v
    if add_zero_attn:
        Kh = np.concatenate([Kh, np.zeros((N * H, 1, d))], axis=1)
        Vh = np.concatenate([Vh, np.zeros((N * H, 1, d))], axis=1)
        am, kp = one_more_key(am), one_more_key(kp)
    scores = Qh @ Kh.transpose(0, 2, 1) / math.sqrt(d)
    if am is not None:
        scores = scores + am
    if kp is not None:
        scores = scores + np.repeat(kp, H, axis=0)[:, None, :]
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True)
    out = (p @ Vh).transpose(1, 0, 2).reshape(L, N, E) @ w_out.T
    if b_out is not None:
        out = out + b_out
    return out, p.reshape(N, H, L, -1)


def t64(a, grad=False):
    return ember.tensor(np.ascontiguousarray(a), dtype=ember.float64, requires_grad=grad)


def npy(t):
    return t.detach().numpy()


def flat_params(rng, mode, input_size, hidden, num_layers, bidirectional, has_biases):
    G = {"LSTM": 4, "GRU": 3}.get(mode, 1) * hidden
    D = 2 if bidirectional else 1
    out = []
    for layer in range(num_layers):
        for _ in range(D):
            in_size = input_size if layer == 0 else D * hidden
            out += [rng.standard_normal((G, in_size)) * 0.5, rng.standard_normal((G, hidden)) * 0.5]
            if has_biases:
                out += [rng.standard_normal(G) * 0.5, rng.standard_normal(G) * 0.5]
    return out


# ---- ember._VF: the recurrent functionals ------------------------------------------------------

@pytest.mark.parametrize("mode", ["RNN_TANH", "RNN_RELU", "GRU", "LSTM"])
@pytest.mark.parametrize("has_biases,bidirectional,batch_first", [(True, True, False), (False, False, True),
                                                                  (True, False, True)])
def test_vf_functions_match_numpy(mode, has_biases, bidirectional, batch_first):
    rng = np.random.default_rng(0)
    num_layers, L, N, I, H = 2, 4, 3, 5, 6
    D = 2 if bidirectional else 1
    params = flat_params(rng, mode, I, H, num_layers, bidirectional, has_biases)
    x = rng.standard_normal((L, N, I))
    h0, c0 = rng.standard_normal((D * num_layers, N, H)), rng.standard_normal((D * num_layers, N, H))
    want_out, want_h, want_c = np_rnn(mode, x, params, has_biases, num_layers, bidirectional, h0, c0)
    xe = t64(x.transpose(1, 0, 2) if batch_first else x)
    args = ([t64(p) for p in params], has_biases, num_layers, 0.0, False, bidirectional, batch_first)
    if mode == "LSTM":
        out, h, c = _VF.lstm(xe, (t64(h0), t64(c0)), *args)
        np.testing.assert_allclose(npy(c), want_c, rtol=1e-10, atol=1e-12)
    else:
        fn = {"RNN_TANH": _VF.rnn_tanh, "RNN_RELU": _VF.rnn_relu, "GRU": _VF.gru}[mode]
        out, h = fn(xe, t64(h0), *args)
    np.testing.assert_allclose(npy(out.transpose(0, 1) if batch_first else out), want_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(npy(h), want_h, rtol=1e-10, atol=1e-12)


def test_vf_zero_state_unbatched_and_errors():
    rng = np.random.default_rng(1)
    params = flat_params(rng, "LSTM", 3, 4, 1, False, True)
    x = rng.standard_normal((5, 3))
    want_out, want_h, want_c = np_rnn("LSTM", x[:, None], params, True, 1, False)
    out, h, c = _VF.lstm(t64(x), (), [t64(p) for p in params], True, 1, 0.0, False, False, False)
    assert out.shape == (5, 4) and h.shape == (1, 4)
    np.testing.assert_allclose(npy(out), want_out[:, 0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(npy(c), want_c[:, 0], rtol=1e-10, atol=1e-12)
    ps = [t64(p) for p in params]
    with pytest.raises(RuntimeError, match="incorrect number of RNN parameters: expected 4"):
        _VF.lstm(t64(x), (), ps[:3], True, 1, 0.0, False, False, False)
    with pytest.raises(RuntimeError, match=r"expected weight_hh_l0 of size \[16, 4\], got \[12, 4\]"):
        _VF.lstm(t64(x), (), [ps[0], ps[1][:12], ps[2], ps[3]], True, 1, 0.0, False, False, False)
    with pytest.raises(RuntimeError, match=r"hx must hold \(h_0, c_0\), got 1 tensors"):
        _VF.lstm(t64(x), (ember.zeros(1, 4, dtype=ember.float64),), ps, True, 1, 0.0, False, False, False)
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 2, 4\), got \[1, 3, 4\]"):
        _VF.gru(t64(rng.standard_normal((5, 2, 3))), ember.zeros(1, 3, 4, dtype=ember.float64),
                [t64(p) for p in flat_params(rng, "GRU", 3, 4, 1, False, True)], True, 1, 0.0, False, False, False)
    with pytest.raises(ValueError, match="GRU: Expected input to be 2-D or 3-D but received 4-D tensor"):
        _VF.gru(ember.zeros(1, 1, 1, 3), None, ps, True, 1, 0.0, False, False, False)


# ---- the recurrent modules -----------------------------------------------------------------------

def test_rnn_parameters_are_leaves_with_torch_names_and_shapes():
    lstm = nn.LSTM(3, 5, num_layers=2, bidirectional=True)
    shapes = {n: tuple(p.shape) for n, p in lstm.named_parameters()}
    assert shapes["weight_ih_l0"] == (20, 3) and shapes["weight_ih_l1_reverse"] == (20, 10)
    assert shapes["weight_hh_l1"] == (20, 5) and shapes["bias_hh_l0_reverse"] == (20,)
    params = list(lstm.parameters())
    assert len(params) == 16 and len({p.data_ptr() for p in params}) == 16
    for p in params:
        assert type(p) is nn.Parameter and p.is_leaf and p.requires_grad and p.grad_fn is None
    assert [id(p) for p in lstm._flat_weights] == [id(p) for p in params]
    assert [len(w) for w in lstm.all_weights] == [4, 4, 4, 4] and lstm.all_weights[1][0] is lstm.weight_ih_l0_reverse
    out, (h, c) = lstm(ember.randn(4, 2, 3))
    (out.sum() + c.sum()).backward()
    assert all(p.grad is not None and p.grad.shape == p.shape for p in params)
    assert nn.RNN(3, 4, 1, "relu").mode == "RNN_RELU"  # nonlinearity as the 4th positional, as torch
    with pytest.raises(ValueError, match="Unknown nonlinearity 'sig'"):
        nn.RNN(3, 4, nonlinearity="sig")
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        nn.GRU(3, 4, proj_size=2)


def test_rnn_forward_reads_replaced_and_converted_parameters():
    gru = nn.GRU(2, 3)
    x = np.random.default_rng(2).standard_normal((4, 1, 2))
    gru.weight_hh_l0 = nn.Parameter(ember.zeros(9, 3))
    params = [npy(p).astype(np.float64) for p in gru._flat_weights]
    assert not params[1].any()
    out, _ = gru(ember.tensor(x.astype(np.float32)))
    np.testing.assert_allclose(npy(out), np_rnn("GRU", x, params, True, 1, False)[0], atol=1e-5)
    w = gru.weight_ih_l0
    opt = ember.optim.SGD(gru.parameters(), lr=0.1)
    gru.double()
    assert gru.weight_ih_l0 is w and w.dtype == ember.float64  # the optimizer's Parameter, converted
    out, h = gru(t64(x))
    assert out.dtype == ember.float64
    np.testing.assert_allclose(npy(out), np_rnn("GRU", x, params, True, 1, False)[0], rtol=1e-6, atol=1e-7)
    out.sum().backward()
    opt.step()
    assert not np.allclose(npy(gru.weight_ih_l0), params[0])


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(3, 4, num_layers=2, dropout=0.5, batch_first=True)
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.rnn(x)[0])


def test_rnn_deepcopy_save_load_and_modes(tmp_path):
    model = Tagger()
    model.rnn.weight_hh_l1.requires_grad_(False)
    x = ember.randn(2, 5, 3)
    model.eval()
    a, b = model(x), model(x)
    assert ember.equal(a, b)
    model.train()
    assert not ember.equal(model(x), model(x))  # dropout between the layers
    twin = copy.deepcopy(model)
    assert twin.rnn.weight_ih_l0 is not model.rnn.weight_ih_l0
    assert ember.equal(twin.rnn.weight_ih_l0, model.rnn.weight_ih_l0)
    assert not twin.rnn.weight_hh_l1.requires_grad
    model.eval()
    ember.save(model, tmp_path / "tagger.pt")
    back = ember.load(tmp_path / "tagger.pt", weights_only=False)  # a whole module: torch 2.6 needs the opt-out
    assert not back.training and not back.rnn.training and not back.rnn.weight_hh_l1.requires_grad
    assert list(back.state_dict()) == list(model.state_dict())
    assert ember.equal(back(x), a)
    with ember.no_grad():
        twin.rnn.weight_ih_l0.zero_()
    twin.eval()
    assert not ember.allclose(twin(x), a)


# ---- F.multi_head_attention_forward --------------------------------------------------------------

def mha_weights(rng, E, kdim=None, vdim=None, bias=True):
    w = {"w_in": rng.standard_normal((3 * E, E)) * 0.4, "b_in": rng.standard_normal(3 * E) * 0.3 if bias else None,
         "w_out": rng.standard_normal((E, E)) * 0.4, "b_out": rng.standard_normal(E) * 0.3 if bias else None}
    if kdim is not None:
        w["qkv_w"] = (rng.standard_normal((E, E)) * 0.4, rng.standard_normal((E, kdim)) * 0.4,
                      rng.standard_normal((E, vdim)) * 0.4)
    return w


def call_mha(q, k, v, H, w, **kw):
    ours = {key: t64(val) if isinstance(val, np.ndarray) and val.dtype != bool else
            (ember.tensor(val) if isinstance(val, np.ndarray) else val) for key, val in kw.items()}
    sep = "qkv_w" in w
    if sep:
        ours.update(use_separate_proj_weight=True, q_proj_weight=t64(w["qkv_w"][0]),
                    k_proj_weight=t64(w["qkv_w"][1]), v_proj_weight=t64(w["qkv_w"][2]))
    opt = lambda a: None if a is None else t64(a)  # noqa: E731
    return F.multi_head_attention_forward(t64(q), t64(k), t64(v), q.shape[-1], H, None if sep else t64(w["w_in"]),
                                          opt(w["b_in"]), ours.pop("bias_k", None), ours.pop("bias_v", None),
                                          ours.pop("add_zero_attn", False), 0.0, t64(w["w_out"]), opt(w["b_out"]),
                                          **ours)


def test_multi_head_attention_forward_matches_numpy():
    rng = np.random.default_rng(3)
    L, S, N, E, H = 3, 4, 2, 6, 2
    q, k, v = rng.standard_normal((L, N, E)), rng.standard_normal((S, N, E)), rng.standard_normal((S, N, E))
    w = mha_weights(rng, E)
    am = np.array([[False, True, False, False], [False, False, True, True], [True, False, False, False]])
    kpm = rng.standard_normal((N, S))
    out, weights = call_mha(q, k, v, H, w, attn_mask=am, key_padding_mask=kpm, average_attn_weights=False)
    want_out, want_w = np_mha(q, k, v, H, attn_mask=am, kpm=kpm, **w)
    np.testing.assert_allclose(npy(out), want_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(npy(weights), want_w, rtol=1e-10, atol=1e-12)
    # batch_first (ember's keyword) and unbatched input; need_weights=False gives None
    out_bf, w_bf = call_mha(q.transpose(1, 0, 2), k.transpose(1, 0, 2), v.transpose(1, 0, 2), H, w, batch_first=True)
    np.testing.assert_allclose(npy(out_bf).transpose(1, 0, 2), np_mha(q, k, v, H, **w)[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(npy(w_bf), np_mha(q, k, v, H, **w)[1].mean(1), rtol=1e-10, atol=1e-12)
    out_u, w_u = call_mha(q[:, 0], k[:, 0], v[:, 0], H, w, need_weights=False)
    assert w_u is None
    np.testing.assert_allclose(npy(out_u), np_mha(q[:, :1], k[:, :1], v[:, :1], H, **w)[0][:, 0], rtol=1e-10,
                               atol=1e-12)
    with pytest.raises(ValueError, match="was expecting embedding dimension of 6, but got 4"):
        F.multi_head_attention_forward(ember.zeros(3, 2, 4), ember.zeros(3, 2, 4), ember.zeros(3, 2, 4), 6, 2,
                                       ember.zeros(18, 6), None, None, None, False, 0.0, ember.zeros(6, 6), None)


@pytest.mark.parametrize("variant", ["bias_kv", "zero_attn", "bias_kv_zero_attn", "separate", "static"])
def test_multi_head_attention_forward_extras_match_numpy(variant):
    rng = np.random.default_rng(4)
    L, S, N, E, H = 3, 4, 2, 6, 3
    kdim, vdim = (5, 7) if variant == "separate" else (E, E)
    q, k, v = rng.standard_normal((L, N, E)), rng.standard_normal((S, N, kdim)), rng.standard_normal((S, N, vdim))
    w = mha_weights(rng, E, *((kdim, vdim) if variant == "separate" else ()))
    am = rng.standard_normal((L, S))
    kpm = np.array([[False, False, True, False], [False, True, False, False]])
    extra = {}
    if "bias_kv" in variant:
        extra.update(bias_k=rng.standard_normal((1, 1, E)), bias_v=rng.standard_normal((1, 1, E)))
    if "zero_attn" in variant:
        extra.update(add_zero_attn=True)
    if variant == "static":
        extra.update(static_k=rng.standard_normal((N * H, S, E // H)), static_v=rng.standard_normal((N * H, S, E // H)))
    want_out, want_w = np_mha(q, k, v, H, attn_mask=am, kpm=kpm, **w, **extra)
    out, weights = call_mha(q, k, v, H, w, attn_mask=am, key_padding_mask=kpm, average_attn_weights=False, **extra)
    np.testing.assert_allclose(npy(out), want_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(npy(weights), want_w, rtol=1e-10, atol=1e-12)


# ---- the attention modules -----------------------------------------------------------------------

def test_mha_parameters_variants_and_gradients():
    mha = nn.MultiheadAttention(8, 2, kdim=6, vdim=5, add_bias_kv=True)
    assert [(n, tuple(p.shape)) for n, p in mha.named_parameters()] == [
        ("q_proj_weight", (8, 8)), ("k_proj_weight", (8, 6)), ("v_proj_weight", (8, 5)), ("in_proj_bias", (24,)),
        ("bias_k", (1, 1, 8)), ("bias_v", (1, 1, 8)), ("out_proj.weight", (8, 8)), ("out_proj.bias", (8,))]
    assert mha.in_proj_weight is None and type(mha.out_proj).__name__ == "NonDynamicallyQuantizableLinear"
    assert not mha.in_proj_bias.detach().numpy().any() and not mha.out_proj.bias.detach().numpy().any()
    q, k, v = ember.randn(3, 2, 8), ember.randn(4, 2, 6), ember.randn(4, 2, 5)
    out, w = mha(q, k, v)
    assert out.shape == (3, 2, 8) and w.shape == (2, 3, 5)  # one more key: bias_k
    out.sum().backward()
    for n, p in mha.named_parameters():
        assert p.is_leaf and p.grad is not None, n
    plain = nn.MultiheadAttention(8, 2, bias=False)
    assert [n for n, _ in plain.named_parameters()] == ["in_proj_weight", "out_proj.weight"]
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(6, 4)


def test_encoder_layer_runs_its_submodules():
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=F.silu, norm_first=True)
    assert layer.activation is F.silu and layer.activation_relu_or_gelu == 0
    seen = []
    layer.self_attn.register_forward_hook(lambda m, args, out: seen.append(out[0].shape))
    x = ember.randn(5, 2, 8)
    y = layer(x)
    assert seen == [(5, 2, 8)]
    with ember.no_grad():
        h = F.layer_norm(x, (8,), layer.norm1.weight, layer.norm1.bias)
        ref = x + layer.self_attn(h, h, h, need_weights=False)[0]
        h = F.layer_norm(ref, (8,), layer.norm2.weight, layer.norm2.bias)
        ref = ref + F.linear(F.silu(F.linear(h, layer.linear1.weight, layer.linear1.bias)), layer.linear2.weight,
                             layer.linear2.bias)
    assert ember.allclose(y, ref, atol=1e-6)
    # a replaced submodule takes part, as in torch
    layer.linear2 = nn.Sequential(layer.linear2, nn.Identity())
    assert ember.allclose(layer(x), y, atol=1e-6)
    layer.linear1 = nn.Linear(8, 16)
    assert not ember.allclose(layer(x), y, atol=1e-3)
    gelu_layer = nn.TransformerEncoderLayer(8, 2, 16, activation=nn.GELU())
    assert [n for n, _ in gelu_layer.named_children()][-1] == "activation"
    assert gelu_layer.activation_relu_or_gelu == 2
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")


def test_encoder_deepcopy_and_save_load(tmp_path):
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, activation="gelu", batch_first=True), 2)
    enc.eval()
    x = ember.randn(2, 4, 8)
    y = enc(x)
    ember.save(enc, tmp_path / "enc.pt")
    back = ember.load(tmp_path / "enc.pt", weights_only=False)
    assert repr(back) == repr(enc) and back.layers[1].activation is F.gelu
    assert ember.equal(back(x), y)
    twin = copy.deepcopy(enc)
    assert twin.layers[0].self_attn.in_proj_weight is not enc.layers[0].self_attn.in_proj_weight
    assert ember.equal(twin(x), y)
    enc.to(ember.float64)
    assert enc.layers[0].self_attn.out_proj.weight.dtype == ember.float64
    assert ember.allclose(enc(x.double()).float(), y, atol=1e-5)


# ---- against PyTorch -----------------------------------------------------------------------------

def test_vf_lstm_and_gru_match_torch(torch_ref):
    torch = torch_ref
    rng = np.random.default_rng(5)
    for mode in ("LSTM", "GRU"):
        params = flat_params(rng, mode, 3, 4, 2, True, True)
        x, h0, c0 = rng.standard_normal((5, 2, 3)), rng.standard_normal((4, 2, 4)), rng.standard_normal((4, 2, 4))
        tp = [torch.tensor(p, requires_grad=True) for p in params]
        ep = [t64(p, grad=True) for p in params]
        args = (True, 2, 0.0, True, True, False)
        if mode == "LSTM":
            t_out = torch._VF.lstm(torch.tensor(x), (torch.tensor(h0), torch.tensor(c0)), tp, *args)
            e_out = _VF.lstm(t64(x), (t64(h0), t64(c0)), ep, *args)
        else:
            t_out = torch._VF.gru(torch.tensor(x), torch.tensor(h0), tp, *args)
            e_out = _VF.gru(t64(x), t64(h0), ep, *args)
        for t, e in zip(t_out, e_out):
            np.testing.assert_allclose(npy(e), t.detach().numpy(), rtol=1e-10, atol=1e-12)
        sum(o.sum() for o in t_out).backward()
        sum(o.sum() for o in e_out).backward()
        for t, e in zip(tp, ep):
            np.testing.assert_allclose(npy(e.grad), t.grad.numpy(), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("variant", ["plain", "bias_kv", "zero_attn", "separate", "static"])
def test_functional_mha_matches_torch(torch_ref, variant):
    torch = torch_ref
    rng = np.random.default_rng(6)
    L, S, N, E, H = 3, 4, 2, 6, 2
    kdim, vdim = (5, 3) if variant == "separate" else (E, E)
    q, k, v = rng.standard_normal((L, N, E)), rng.standard_normal((S, N, kdim)), rng.standard_normal((S, N, vdim))
    w = mha_weights(rng, E, *((kdim, vdim) if variant == "separate" else ()))
    kw = {"attn_mask": np.triu(np.ones((L, S), dtype=bool), 1),
          "key_padding_mask": np.array([[False, False, False, True], [False, True, False, False]])}
    if variant == "bias_kv":
        kw.update(bias_k=rng.standard_normal((1, 1, E)), bias_v=rng.standard_normal((1, 1, E)))
    if variant == "zero_attn":
        kw.update(add_zero_attn=True)
    if variant == "static":
        kw = {"static_k": rng.standard_normal((N * H, S, E // H)), "static_v": rng.standard_normal((N * H, S, E // H))}

    def to_torch(a):
        return torch.tensor(a, requires_grad=a.dtype != bool) if isinstance(a, np.ndarray) else a

    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    tw = {n: (tuple(map(to_torch, a)) if isinstance(a, tuple) else to_torch(a)) for n, a in w.items()}
    tkw = {n: to_torch(a) for n, a in kw.items()}
    sep = variant == "separate"
    extra = dict(use_separate_proj_weight=True, q_proj_weight=tw["qkv_w"][0], k_proj_weight=tw["qkv_w"][1],
                 v_proj_weight=tw["qkv_w"][2]) if sep else {}
    t_out, t_w = torch.nn.functional.multi_head_attention_forward(
        tq, tk, tv, E, H, None if sep else tw["w_in"], tw["b_in"], tkw.pop("bias_k", None), tkw.pop("bias_v", None),
        tkw.pop("add_zero_attn", False), 0.0, tw["w_out"], tw["b_out"], average_attn_weights=False, **extra, **tkw)
    e_out, e_w = call_mha(q, k, v, H, w, average_attn_weights=False, **kw)
    np.testing.assert_allclose(npy(e_out), t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(npy(e_w), t_w.detach().numpy(), rtol=1e-10, atol=1e-12)


MHA_VARIANTS = [
    ("nn.MultiheadAttention(8, 2, kdim=6, vdim=5)", [(3, 2, 8), (4, 2, 6), (4, 2, 5)]),
    ("nn.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True)", [(3, 2, 8), (4, 2, 8), (4, 2, 8)]),
    ("nn.MultiheadAttention(8, 4, bias=False, batch_first=True)", [(2, 3, 8), (2, 4, 8), (2, 4, 8)]),
]


@pytest.mark.parametrize("expr,shapes", MHA_VARIANTS, ids=[e for e, _ in MHA_VARIANTS])
def test_mha_module_variants_match_torch(torch_ref, expr, shapes):
    torch = torch_ref
    tmod, emod = eval(expr, {"nn": torch.nn}), eval(expr, {"nn": nn})
    assert repr(emod) == repr(tmod)
    assert list(emod.state_dict()) == list(tmod.state_dict())
    assert [tuple(p.shape) for p in emod.parameters()] == [tuple(p.shape) for p in tmod.parameters()]
    emod.load_state_dict({n: ember.tensor(p.detach().numpy()) for n, p in tmod.state_dict().items()})
    rng = np.random.default_rng(7)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    t_in = [torch.tensor(a, requires_grad=True) for a in inputs]
    e_in = [ember.tensor(a, requires_grad=True) for a in inputs]
    (t_out, t_w), (e_out, e_w) = tmod(*t_in), emod(*e_in)
    np.testing.assert_allclose(npy(e_out), t_out.detach().numpy(), atol=1e-5, rtol=1e-4)
    np.testing.assert_allclose(npy(e_w), t_w.detach().numpy(), atol=1e-5, rtol=1e-4)
    t_out.pow(2).sum().backward()
    e_out.pow(2).sum().backward()
    for t, e in zip(t_in, e_in):
        np.testing.assert_allclose(npy(e.grad), t.grad.numpy(), atol=1e-4, rtol=1e-3)
    for (n, tp), (_, ep) in zip(tmod.named_parameters(), emod.named_parameters()):
        np.testing.assert_allclose(npy(ep.grad), tp.grad.numpy(), atol=1e-4, rtol=1e-3, err_msg=n)


def test_encoder_layer_with_activation_module_matches_torch(torch_ref):
    torch = torch_ref
    expr = "nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=nn.GELU(), norm_first=True)"
    tmod, emod = eval(expr, {"nn": torch.nn}), eval(expr, {"nn": nn})
    assert repr(emod) == repr(tmod)
    emod.load_state_dict({n: ember.tensor(p.detach().numpy()) for n, p in tmod.state_dict().items()})
    x = np.random.default_rng(8).standard_normal((5, 2, 8)).astype(np.float32)
    np.testing.assert_allclose(npy(emod(ember.tensor(x))), tmod(torch.tensor(x)).detach().numpy(), atol=1e-5,
                               rtol=1e-4)
