"""ember.nn without PyTorch: module registration, state_dict, repr, modes, layer values vs NumPy,
recurrent and attention layers, init, utils and a small training loop. Differential tests against
torch are in test_nn_torch.py."""
import copy
import math
from collections import OrderedDict

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.register_buffer("steps", ember.zeros(1))
        self.scale = nn.Parameter(ember.ones(1))
        self.note = "plain attribute"

    def forward(self, x):
        return self.fc(x) * self.scale


# ---- registration ----------------------------------------------------------------------------

def test_attribute_assignment_registers_members():
    net = Net()
    assert list(net._parameters) == ["scale"]
    assert list(net._modules) == ["fc"]
    assert list(net._buffers) == ["steps"]
    assert "note" in net.__dict__ and "note" not in net._parameters
    assert [n for n, _ in net.named_parameters()] == ["scale", "fc.weight", "fc.bias"]
    assert [n for n, _ in net.named_buffers()] == ["steps"]
    assert [n for n, _ in net.named_modules()] == ["", "fc"]
    assert [n for n, _ in net.named_children()] == ["fc"]
    assert isinstance(net.fc.weight, nn.Parameter) and isinstance(net.fc.weight, ember.Tensor)


def test_assigning_none_and_replacing():
    net = Net()
    net.scale = None  # a registered parameter may become None
    assert net._parameters["scale"] is None and net.scale is None
    assert [n for n, _ in net.named_parameters()] == ["fc.weight", "fc.bias"]
    with pytest.raises(TypeError, match="cannot assign 'ember.FloatTensor' as parameter 'scale'"):
        net.scale = ember.ones(1)
    net.fc = None
    assert list(net.named_modules()) == [("", net)]
    with pytest.raises(TypeError, match="as child module 'fc'"):
        net.fc = 3
    net.steps = ember.ones(2)  # buffers accept tensors
    assert net.steps.shape == (2,)
    with pytest.raises(TypeError, match="as buffer 'steps'"):
        net.steps = 1.0
    del net.steps
    assert "steps" not in net._buffers


def test_registration_errors():
    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(ember.ones(1))

    with pytest.raises(AttributeError, match=r"cannot assign parameters before Module.__init__\(\) call"):
        Early()
    m = nn.Module()
    with pytest.raises(KeyError, match="buffer name can"):
        m.register_buffer("a.b", ember.ones(1))
    with pytest.raises(TypeError, match="cannot assign 'int' object to buffer 'b'"):
        m.register_buffer("b", 3)
    with pytest.raises(TypeError, match="cannot assign 'ember.FloatTensor' object to parameter 'p'"):
        m.register_parameter("p", ember.ones(1))
    with pytest.raises(TypeError, match="is not a Module subclass"):
        m.add_module("x", 5)
    m.x = 1
    with pytest.raises(KeyError, match="attribute 'x' already exists"):
        m.register_buffer("x", ember.ones(1))
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'nothing'"):
        m.nothing
    with pytest.raises(NotImplementedError, match=r'Module \[Module\] is missing the required "forward" function'):
        m(ember.ones(1))


def test_shared_parameters_counted_once():
    a = nn.Linear(3, 3)
    seq = nn.Sequential(a, nn.ReLU(), a)
    assert len(list(seq.parameters())) == 2
    assert [n for n, _ in seq.named_parameters()] == ["0.weight", "0.bias"]
    assert len(list(seq.modules())) == 3  # seq, a, relu
    tied = nn.Module()
    tied.enc = nn.Linear(2, 2, bias=False)
    tied.dec = nn.Linear(2, 2, bias=False)
    tied.dec.weight = tied.enc.weight
    assert len(list(tied.parameters())) == 1
    assert list(tied.state_dict().keys()) == ["enc.weight", "dec.weight"]


def test_nested_python_modules_in_containers():
    class Block(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.lin = nn.Linear(n, n)

        def forward(self, x):
            return ember.relu(self.lin(x)) + x

    model = nn.Sequential(OrderedDict(first=Block(3), rest=nn.ModuleList([Block(3), Block(3)])))
    model.heads = nn.ModuleDict({"a": nn.Linear(3, 1), "b": Block(3)})
    names = [n for n, _ in model.named_parameters()]
    assert names == ["first.lin.weight", "first.lin.bias", "rest.0.lin.weight", "rest.0.lin.bias",
                     "rest.1.lin.weight", "rest.1.lin.bias", "heads.a.weight", "heads.a.bias",
                     "heads.b.lin.weight", "heads.b.lin.bias"]
    assert model.get_submodule("rest.1.lin") is model.rest[1].lin
    with pytest.raises(AttributeError, match="Linear has no attribute `nope`"):
        model.get_submodule("first.lin.nope")
    assert model.get_parameter("heads.a.bias") is model.heads["a"].bias


def test_sequential_api():
    a, b, c = nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)
    seq = nn.Sequential(a, b, c)
    assert len(seq) == 3 and seq[0] is a and seq[-1] is c
    sub = seq[1:]
    assert isinstance(sub, nn.Sequential) and list(sub._modules) == ["1", "2"] and sub[0] is b
    with pytest.raises(IndexError, match="index 3 is out of range"):
        seq[3]
    seq.append(nn.Sigmoid())
    assert list(seq._modules) == ["0", "1", "2", "3"]
    del seq[1]
    assert list(seq._modules) == ["0", "1", "2"] and seq[1] is c
    assert list(iter(seq))[0] is a
    named = nn.Sequential(OrderedDict([("conv", nn.Conv2d(1, 1, 1)), ("act", nn.ReLU())]))
    assert named.conv is named[0]


def test_module_list_and_dict_api():
    ml = nn.ModuleList([nn.ReLU(), nn.Tanh()])
    ml.append(nn.Sigmoid())
    ml.extend([nn.ReLU()])
    ml.insert(1, nn.ELU())
    assert [type(m).__name__ for m in ml] == ["ReLU", "ELU", "Tanh", "Sigmoid", "ReLU"]
    assert isinstance(ml[1:3], nn.ModuleList) and len(ml[1:3]) == 2
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable"):
        ml.extend(nn.ReLU())
    md = nn.ModuleDict([("x", nn.ReLU()), ("y", nn.Tanh())])
    assert list(md.keys()) == ["x", "y"] and "x" in md and len(md) == 2
    md.pop("x")
    assert list(md) == ["y"]


def test_parameter_list_and_dict():
    pl = nn.ParameterList([nn.Parameter(ember.ones(2)), ember.zeros(3)])
    assert all(isinstance(p, nn.Parameter) for p in pl) and len(pl) == 2
    assert [n for n, _ in pl.named_parameters()] == ["0", "1"]
    pd = nn.ParameterDict({"b": ember.ones(1), "a": ember.ones(2)})
    assert [n for n, _ in pd.named_parameters()] == ["a", "b"]  # plain dicts are sorted, as torch 1.13
    assert "a" in pd and isinstance(pd["a"], nn.Parameter)


def test_parameter_construction_and_repr():
    data = ember.tensor([1.0, 2.0])
    p = nn.Parameter(data)
    assert p.requires_grad and p.is_leaf and not data.requires_grad
    with ember.no_grad():
        p.mul_(2)  # shares storage with data, as torch
    assert data.tolist() == [2.0, 4.0]
    assert repr(p).startswith("Parameter containing:\ntensor([2., 4.]")
    frozen = nn.Parameter(ember.ones(2), requires_grad=False)
    assert not frozen.requires_grad
    assert nn.Parameter().shape == (0,)
    c = copy.deepcopy(p)
    assert type(c) is nn.Parameter and c.requires_grad and c.tolist() == [2.0, 4.0]
    with ember.no_grad():
        c.zero_()
    assert p.tolist() == [2.0, 4.0]


# ---- state dict ------------------------------------------------------------------------------

def test_state_dict_keys_and_values():
    net = Net()
    sd = net.state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd.keys()) == ["scale", "steps", "fc.weight", "fc.bias"]
    assert not sd["fc.weight"].requires_grad  # detached unless keep_vars
    assert net.state_dict(keep_vars=True)["fc.weight"] is net.fc.weight
    bn = nn.BatchNorm1d(3)
    assert list(bn.state_dict().keys()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    bn.register_buffer("scratch", ember.zeros(1), persistent=False)
    assert "scratch" not in bn.state_dict()


def test_load_state_dict_roundtrip_and_result():
    a, b = Net(), Net()
    result = b.load_state_dict(a.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "<All keys matched successfully>"
    assert np.array_equal(b.fc.weight.detach().numpy(), a.fc.weight.detach().numpy())
    assert b.fc.weight.requires_grad  # copied in place, still a parameter


def test_load_state_dict_errors():
    net = Net()
    sd = net.state_dict()
    del sd["fc.bias"]
    sd["extra.weight"] = ember.ones(1)
    with pytest.raises(RuntimeError) as err:
        net.load_state_dict(sd)
    assert str(err.value) == ('Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: "fc.bias". '
                              '\n\tUnexpected key(s) in state_dict: "extra.weight". ')
    result = net.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["fc.bias"] and result.unexpected_keys == ["extra.weight"]
    bad = net.state_dict()
    bad["fc.weight"] = ember.ones(3, 3)
    with pytest.raises(RuntimeError, match=r"size mismatch for fc.weight: copying a param with shape "
                                           r"ember.Size\(\[3, 3\]\) from checkpoint, the shape in current model is "
                                           r"ember.Size\(\[2, 4\]\)."):
        net.load_state_dict(bad)
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        net.load_state_dict([1, 2])


# ---- repr ------------------------------------------------------------------------------------

def test_repr_matches_torch_strings():
    model = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True), nn.MaxPool2d(2),
        nn.Dropout(0.25), nn.Flatten(), nn.Linear(8 * 14 * 14, 10, bias=False), nn.LogSoftmax(dim=1))
    assert repr(model) == """Sequential(
  (0): Conv2d(1, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
  (1): BatchNorm2d(8, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)
  (2): ReLU(inplace=True)
  (3): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
  (4): Dropout(p=0.25, inplace=False)
  (5): Flatten(start_dim=1, end_dim=-1)
  (6): Linear(in_features=1568, out_features=10, bias=False)
  (7): LogSoftmax(dim=1)
)"""
    assert repr(Net()) == "Net(\n  (fc): Linear(in_features=4, out_features=2, bias=True)\n)"
    assert repr(nn.GELU(approximate="tanh")) == "GELU(approximate='tanh')"
    assert repr(nn.LeakyReLU(0.2)) == "LeakyReLU(negative_slope=0.2)"
    assert repr(nn.Embedding(10, 3, padding_idx=0)) == "Embedding(10, 3, padding_idx=0)"
    assert repr(nn.LayerNorm(4)) == "LayerNorm((4,), eps=1e-05, elementwise_affine=True)"
    assert repr(nn.CrossEntropyLoss()) == "CrossEntropyLoss()"
    assert repr(nn.Conv2d(2, 4, 3, stride=2, groups=2, bias=False, padding_mode="reflect")) == \
        "Conv2d(2, 4, kernel_size=(3, 3), stride=(2, 2), groups=2, bias=False, padding_mode=reflect)"
    assert repr(nn.LSTM(3, 5, 2, batch_first=True)) == "LSTM(3, 5, num_layers=2, batch_first=True)"
    assert repr(nn.ModuleList()) == "ModuleList()"


# ---- modes, hooks, conversions ---------------------------------------------------------------

def test_train_eval_dropout():
    drop = nn.Dropout(0.5)
    x = ember.ones(1000)
    y = drop(x).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0} and 0 < (y == 0).sum() < 1000
    drop.eval()
    assert not drop.training
    assert np.array_equal(drop(x).numpy(), x.numpy())
    seq = nn.Sequential(nn.Linear(2, 2), nn.Dropout())
    seq.eval()
    assert not seq[1].training
    seq.train()
    assert seq[1].training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        seq.train(1)


def test_batchnorm_running_stats_and_eval():
    bn = nn.BatchNorm1d(2, momentum=0.5)
    x = ember.tensor([[1.0, 10.0], [3.0, 30.0]])
    y = bn(x)
    assert np.allclose(y.detach().numpy(), [[-1, -1], [1, 1]], atol=1e-4)
    assert np.allclose(bn.running_mean.numpy(), [1.0, 10.0])  # 0.5 * 0 + 0.5 * mean
    assert np.allclose(bn.running_var.numpy(), [0.5 + 0.5 * 2.0, 0.5 + 0.5 * 200.0])  # unbiased variance
    assert bn.num_batches_tracked.item() == 1
    bn.eval()
    y = bn(x)
    expect = (x.numpy() - bn.running_mean.numpy()) / np.sqrt(bn.running_var.numpy() + 1e-5)
    assert np.allclose(y.detach().numpy(), expect, atol=1e-5)
    assert bn.num_batches_tracked.item() == 1
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.BatchNorm2d(2)(x)


def test_forward_hooks():
    lin = nn.Linear(2, 2)
    seen = []
    h1 = lin.register_forward_pre_hook(lambda m, inp: (inp[0] * 0,))
    h2 = lin.register_forward_hook(lambda m, inp, out: seen.append(out.shape) or out + 1)
    y = lin(ember.ones(1, 2))
    assert seen == [(1, 2)]
    assert np.allclose(y.detach().numpy(), lin.bias.detach().numpy() + 1)
    h1.remove()
    h2.remove()
    assert np.allclose(lin(ember.zeros(1, 2)).detach().numpy(), lin.bias.detach().numpy())


def test_to_double_and_zero_grad():
    net = Net()
    opt_view = net.fc.weight
    net.double()
    assert net.fc.weight.dtype == ember.float64 and net.steps.dtype == ember.float64
    assert net.fc.weight is opt_view  # converted in place (param.data = ...), as torch
    net.float()
    y = net(ember.ones(3, 4)).sum()
    y.backward()
    assert net.fc.weight.grad is not None
    net.zero_grad(set_to_none=False)
    assert np.array_equal(net.fc.weight.grad.numpy(), np.zeros((2, 4), np.float32))
    net.zero_grad()
    assert net.fc.weight.grad is None
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point"):
        net.to(ember.int64)
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())


def test_apply_and_deepcopy():
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))

    def init_ones(m):
        if isinstance(m, nn.Linear):
            nn.init.ones_(m.weight)

    model.apply(init_ones)
    assert all(np.all(m.weight.detach().numpy() == 1) for m in model if isinstance(m, nn.Linear))
    clone = copy.deepcopy(model)
    with ember.no_grad():
        clone[0].weight.zero_()
    assert np.all(model[0].weight.detach().numpy() == 1)
    assert isinstance(clone[0].weight, nn.Parameter)


def test_dir_lists_members():
    names = dir(Net())
    assert "fc" in names and "scale" in names and "steps" in names and "forward" in names


# ---- layer values against NumPy --------------------------------------------------------------

def test_linear_matches_numpy():
    lin = nn.Linear(4, 3)
    x = ember.randn(5, 4)
    expect = x.numpy() @ lin.weight.detach().numpy().T + lin.bias.detach().numpy()
    assert np.allclose(lin(x).detach().numpy(), expect, atol=1e-5)
    bound = 1 / math.sqrt(4)  # torch's default init bounds
    assert np.all(np.abs(lin.weight.detach().numpy()) <= bound + 1e-7)
    assert np.all(np.abs(lin.bias.detach().numpy()) <= bound + 1e-7)


def _conv2d_numpy(x, w, b, stride, pad):
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.tensordot(patch, w, axes=([1, 2, 3], [1, 2, 3])) + b
    return out


@pytest.mark.parametrize("stride,padding", [(1, 0), (1, 1), (2, 1)])
def test_conv2d_matches_numpy(stride, padding):
    conv = nn.Conv2d(2, 3, 3, stride=stride, padding=padding)
    x = ember.randn(2, 2, 5, 5)
    expect = _conv2d_numpy(x.numpy(), conv.weight.detach().numpy(), conv.bias.detach().numpy(), stride, padding)
    assert np.allclose(conv(x).detach().numpy(), expect, atol=1e-5)


def test_conv_same_padding_and_errors():
    conv = nn.Conv2d(1, 1, 3, padding="same")
    assert conv(ember.randn(1, 1, 6, 7)).shape == (1, 1, 6, 7)
    conv = nn.Conv2d(1, 1, 4, padding="same", padding_mode="circular")
    assert conv(ember.randn(1, 1, 6, 7)).shape == (1, 1, 6, 7)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        nn.Conv2d(1, 1, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    assert nn.Conv1d(2, 4, 3)(ember.randn(1, 2, 10)).shape == (1, 4, 8)


def test_activations_and_losses_numpy():
    x = ember.tensor([-2.0, -0.5, 0.0, 0.5, 2.0])
    xn = x.numpy()
    assert np.allclose(nn.ReLU()(x).numpy(), np.maximum(xn, 0))
    assert np.allclose(nn.LeakyReLU(0.1)(x).numpy(), np.where(xn > 0, xn, 0.1 * xn))
    assert np.allclose(nn.Sigmoid()(x).numpy(), 1 / (1 + np.exp(-xn)), atol=1e-6)
    assert np.allclose(nn.Hardtanh()(x).numpy(), np.clip(xn, -1, 1))
    assert np.allclose(nn.Softmax(dim=0)(x).numpy(), np.exp(xn) / np.exp(xn).sum(), atol=1e-6)
    logits = ember.tensor([[1.0, 2.0, 3.0], [1.0, 0.0, -1.0]])
    target = ember.tensor([2, 0])
    ln = logits.numpy()
    logp = ln - np.log(np.exp(ln).sum(1, keepdims=True))
    assert np.isclose(nn.CrossEntropyLoss()(logits, target).item(), -(logp[0, 2] + logp[1, 0]) / 2, atol=1e-6)
    assert np.isclose(nn.MSELoss(reduction="sum")(x, ember.zeros(5)).item(), (xn ** 2).sum())
    # the legacy size_average/reduce arguments map onto reduction
    with pytest.warns(UserWarning):
        assert nn.L1Loss(size_average=False).reduction == "sum"


def test_inplace_relu_writes_input():
    x = ember.tensor([-1.0, 1.0])
    y = F.relu(x, inplace=True)
    assert x.tolist() == [0.0, 1.0] and y.tolist() == [0.0, 1.0]


def test_embedding_padding_idx():
    emb = nn.Embedding(5, 3, padding_idx=1)
    assert np.all(emb.weight.detach().numpy()[1] == 0)
    out = emb(ember.tensor([[1, 2], [4, 1]]))
    assert out.shape == (2, 2, 3)
    out.sum().backward()
    assert np.all(emb.weight.grad.numpy()[1] == 0)  # no gradient into the padding row


def test_pooling_shapes_and_indices():
    x = ember.randn(1, 2, 6, 6)
    y, idx = nn.MaxPool2d(2, return_indices=True)(x)
    assert y.shape == (1, 2, 3, 3) and idx.dtype == ember.int64
    assert nn.AvgPool2d(3, stride=1, padding=1)(x).shape == (1, 2, 6, 6)
    assert nn.AdaptiveAvgPool2d((1, None))(x).shape == (1, 2, 1, 6)
    assert np.allclose(nn.AdaptiveAvgPool2d(1)(x).numpy().ravel(), x.numpy().mean(axis=(2, 3)).ravel(), atol=1e-6)


# ---- recurrent and attention layers (their forward calls a C++ functional) -------------------

def test_lstm_parameters_shared_with_cpp():
    lstm = nn.LSTM(3, 4, num_layers=2)
    assert [n for n, _ in lstm.named_parameters()] == [
        "weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
        "weight_ih_l1", "weight_hh_l1", "bias_ih_l1", "bias_hh_l1"]
    x = ember.randn(5, 2, 3)
    out, (h, c) = lstm(x)
    assert out.shape == (5, 2, 4) and h.shape == (2, 2, 4) and c.shape == (2, 2, 4)
    # Zeroing the Python parameters changes what the C++ forward computes: same tensors.
    with ember.no_grad():
        for p in lstm.parameters():
            p.zero_()
    out, (h, c) = lstm(x)
    assert np.all(out.detach().numpy() == 0)
    out2, _ = lstm(x, (ember.zeros(2, 2, 4), ember.zeros(2, 2, 4)))
    assert out2.shape == (5, 2, 4)


def test_cpp_module_gradients_and_dtype_conversion():
    gru = nn.GRU(2, 3, batch_first=True)
    out, h = gru(ember.randn(4, 5, 2))
    out.sum().backward()
    assert all(p.grad is not None for p in gru.parameters())
    gru.double()
    out, h = gru(ember.randn(4, 5, 2, dtype=ember.float64))
    assert out.dtype == ember.float64


def test_cpp_modules_nested_in_python():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(10, 8)
            self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 2,
                                                 norm=nn.LayerNorm(8))
            self.head = nn.Sequential(nn.Linear(8, 3), nn.LogSoftmax(-1))

        def forward(self, tokens):
            return self.head(self.encoder(self.embed(tokens)))

    model = Model()
    keys = list(model.state_dict().keys())
    assert keys[:5] == ["embed.weight", "encoder.layers.0.self_attn.in_proj_weight",
                        "encoder.layers.0.self_attn.in_proj_bias", "encoder.layers.0.self_attn.out_proj.weight",
                        "encoder.layers.0.self_attn.out_proj.bias"]
    assert "encoder.layers.1.norm2.bias" in keys and "encoder.norm.weight" in keys
    # layers are independent deep copies with equal initial weights
    l0, l1 = model.encoder.layers
    assert l0.linear1.weight is not l1.linear1.weight
    assert np.array_equal(l0.linear1.weight.detach().numpy(), l1.linear1.weight.detach().numpy())
    out = model(ember.tensor([[1, 2, 3], [4, 5, 6]]))
    assert out.shape == (2, 3, 3)
    out.sum().backward()
    assert l1.self_attn.in_proj_weight.grad is not None
    # load_state_dict copies into the tensors the C++ modules read
    other = Model()
    other.load_state_dict(model.state_dict())
    model.eval()
    other.eval()
    tokens = ember.tensor([[7, 1, 0]])
    assert np.allclose(model(tokens).detach().numpy(), other(tokens).detach().numpy(), atol=1e-6)


def test_cpp_module_train_flag_reaches_cpp():
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.5)
    x = ember.randn(4, 1, 8)
    layer.eval()
    assert not layer.self_attn.training and not layer.dropout.training
    a, b = layer(x), layer(x)
    assert np.array_equal(a.detach().numpy(), b.detach().numpy())  # no dropout in eval
    layer.train()
    a, b = layer(x), layer(x)
    assert not np.array_equal(a.detach().numpy(), b.detach().numpy())


def test_replacing_a_cpp_parameter_from_python():
    mha = nn.MultiheadAttention(4, 2)
    q = ember.randn(3, 1, 4)
    mha.out_proj.bias = nn.Parameter(ember.full((4,), 100.0))
    with ember.no_grad():
        mha.out_proj.weight.zero_()
    out, weights = mha(q, q, q)
    assert np.allclose(out.detach().numpy(), 100.0)
    assert weights.shape == (1, 3, 3)
    out, weights = mha(q, q, q, need_weights=False)
    assert weights is None


# ---- init and utils --------------------------------------------------------------------------

def test_init_functions_in_place():
    w = ember.empty(30, 20)
    assert nn.init.xavier_uniform_(w) is w
    bound = math.sqrt(6 / 50)
    assert np.all(np.abs(w.numpy()) <= bound + 1e-6)
    assert nn.init.constant_(w, 0.5) is w and np.all(w.numpy() == 0.5)
    nn.init.zeros_(w)
    assert np.all(w.numpy() == 0)
    nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert abs(w.numpy().std() - math.sqrt(2 / 30)) < 0.05
    nn.init.orthogonal_(w)
    wn = w.numpy()
    assert np.allclose(wn.T @ wn, np.eye(20), atol=1e-4)
    nn.init.trunc_normal_(w, std=0.02)
    assert np.all(np.abs(w.numpy()) <= 2.0)
    assert nn.init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert nn.init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    p = nn.Parameter(ember.empty(3))
    nn.init.normal_(p)  # allowed on a leaf that requires grad: runs under no_grad
    assert p.requires_grad and p.is_leaf


def test_clip_grad_and_vectors():
    lin = nn.Linear(3, 2)
    (lin(ember.ones(4, 3)) * 100).sum().backward()
    grads = np.concatenate([p.grad.numpy().ravel() for p in lin.parameters()])
    total = nn.utils.clip_grad_norm_(lin.parameters(), max_norm=1.0)
    assert np.isclose(total.item(), np.linalg.norm(grads), rtol=1e-5)
    clipped = np.concatenate([p.grad.numpy().ravel() for p in lin.parameters()])
    assert np.isclose(np.linalg.norm(clipped), 1.0, rtol=1e-4)
    nn.utils.clip_grad_value_(lin.parameters(), 0.01)
    assert np.all(np.abs(lin.weight.grad.numpy()) <= 0.01)
    vec = nn.utils.parameters_to_vector(lin.parameters())
    assert vec.shape == (8,)
    nn.utils.vector_to_parameters(ember.zeros(8), lin.parameters())
    assert np.all(lin.weight.detach().numpy() == 0)
    assert nn.utils.clip_grad_norm_([], 1.0).item() == 0.0


# ---- training --------------------------------------------------------------------------------

def test_tiny_training_loop_decreases_loss():
    ember.manual_seed(1)
    x = ember.randn(64, 2)
    y = ((x[:, 0] * x[:, 1]) > 0).long()
    model = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 2))
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for _ in range(150):
        loss = loss_fn(model(x), y)
        model.zero_grad()
        loss.backward()
        with ember.no_grad():
            for p in model.parameters():
                p.sub_(0.5 * p.grad)
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


def test_data_parallel_wraps_module_on_one_device():
    model = nn.Linear(3, 2)
    dp = nn.DataParallel(model, device_ids=[0, 1])
    assert dp.module is model
    assert list(dp.state_dict().keys()) == ["module.weight", "module.bias"]
    x = ember.randn(4, 3)
    assert np.array_equal(dp(x).detach().numpy(), model(x).detach().numpy())
    with pytest.raises(RuntimeError, match="process group"):
        nn.parallel.DistributedDataParallel(model)


def test_full_backward_hook_sees_module_gradients():
    lin = nn.Linear(3, 2)
    calls = []
    handle = lin.register_full_backward_hook(lambda m, gi, go: calls.append((m, gi, go)))
    x = ember.randn(4, 3, requires_grad=True)
    y = lin(x)
    (y * 3).sum().backward()
    assert len(calls) == 1
    m, gi, go = calls[0]
    assert m is lin and len(gi) == 1 and len(go) == 1
    assert np.allclose(go[0].numpy(), 3.0)
    assert np.allclose(gi[0].numpy(), 3.0 * lin.weight.detach().numpy().sum(0, keepdims=True).repeat(4, 0),
                       atol=1e-5)
    # inputs that need no gradient: the hook still runs, with grad_input None
    lin(ember.randn(4, 3)).sum().backward()
    assert len(calls) == 2 and calls[1][1] == (None,)
    handle.remove()
    lin(x).sum().backward()
    assert len(calls) == 2


def test_model_with_cpp_backed_layers_pickles():
    import pickle

    from ember import nn

    model = nn.Sequential(nn.Linear(4, 4), nn.MultiheadAttention(4, 2, batch_first=True))
    model.eval()
    back = pickle.loads(pickle.dumps(model))
    assert repr(back) == repr(model) and not back.training
    x = ember.randn(1, 3, 4)
    h = back[0](x)
    assert ember.allclose(back[1](h, h, h)[0], model[1](model[0](x), model[0](x), model[0](x))[0])
