"""utils.flop_counter.FlopCounterMode: torch's formulas and op names, per module, forward and backward,
on CPU and meta tensors. References are the closed-form counts (and torch 2.x's own counter where
installed)."""
import pytest

import ember
from ember import nn
from ember.utils.flop_counter import FlopCounterMode


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 8 * 8, 10)
        self.blocks = nn.Sequential(nn.Linear(10, 10), nn.ReLU(), nn.Linear(10, 4))

    def forward(self, x):
        return self.blocks(self.fc(self.conv(x).flatten(1)))


CONV = 2 * 2 * 8 * 3 * 3 * 3 * 8 * 8  # 2 * N * Cout * Cin * kh * kw * Hout * Wout
FC, B0, B2 = 2 * 2 * 512 * 10, 2 * 2 * 10 * 10, 2 * 2 * 10 * 4  # 2 * M * K * N


def expected(input_requires_grad):
    return {
        "Net.conv": {"aten.convolution": CONV, "aten.convolution_backward": CONV * (2 if input_requires_grad else 1)},
        "Net.fc": {"aten.addmm": FC, "aten.mm": 2 * FC},  # backward: the input's and the weight's gradients
        "Net.blocks.0": {"aten.addmm": B0, "aten.mm": 2 * B0},
        "Net.blocks.2": {"aten.addmm": B2, "aten.mm": 2 * B2},
    }


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("input_grad", [False, True])
def test_counts_per_module_forward_and_backward(device, input_grad):
    with ember.device(device):
        model = Net()
    x = ember.empty(2, 3, 8, 8, device=device, requires_grad=input_grad)
    with FlopCounterMode(display=False) as counter:
        model(x).sum().backward()
    counts = counter.get_flop_counts()
    for name, ops in expected(input_grad).items():
        assert counts[name] == ops, name
    assert counts["Net.blocks"] == {"aten.addmm": B0 + B2, "aten.mm": 2 * (B0 + B2)}
    total = sum(sum(ops.values()) for ops in expected(input_grad).values())
    assert counter.get_total_flops() == total and sum(counts["Net"].values()) == total


def test_attention_bmm_and_table(capsys):
    q = ember.randn(2, 4, 16, 8)
    with FlopCounterMode(depth=1) as counter:
        ember.bmm(q.view(8, 16, 8), q.view(8, 16, 8).transpose(1, 2))
    assert counter.get_total_flops() == 2 * 8 * 16 * 16 * 8
    out = capsys.readouterr().out
    assert "Global" in out and "aten.bmm" in out and "100.00%" in out


def test_custom_mapping_and_mods_warning():
    with pytest.warns(UserWarning, match="mods argument is not needed"):
        FlopCounterMode(mods=nn.Linear(2, 2), display=False)
    with FlopCounterMode(display=False, custom_mapping={"aten::mm": lambda shapes, concrete: 7}) as counter:
        ember.randn(3, 4) @ ember.randn(4, 5)
    assert counter.get_flop_counts()["Global"] == {"aten::mm".replace("::", "."): 7}


def test_same_counts_as_torch():
    torch = pytest.importorskip("torch", reason="PyTorch not installed: differential test skipped")
    if int(torch.__version__.split(".")[0]) < 2:
        pytest.skip("torch.utils.flop_counter is torch 2.x")
    from torch.utils.flop_counter import FlopCounterMode as TorchCounter
    ember_net = Net()

    class Net_(torch.nn.Module):  # torch names the root module by its class: the same name below
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.fc = torch.nn.Linear(8 * 8 * 8, 10)
            self.blocks = torch.nn.Sequential(torch.nn.Linear(10, 10), torch.nn.ReLU(), torch.nn.Linear(10, 4))

        def forward(self, x):
            return self.blocks(self.fc(self.conv(x).flatten(1)))

    with TorchCounter(display=False) as t:
        torch_net = Net_()
        Net_.__name__ = "Net"
        torch_net(torch.randn(2, 3, 8, 8, requires_grad=True)).sum().backward()
    with FlopCounterMode(display=False) as e:
        ember_net(ember.randn(2, 3, 8, 8, requires_grad=True)).sum().backward()
    want = {k: {str(op): n for op, n in v.items()} for k, v in t.get_flop_counts().items()}
    assert e.get_flop_counts() == want


def test_a_gpt2_step_on_meta_matches_the_closed_form():
    """6 T (matmul weights) + 12 L T^2 d: every Linear (and the tied head) costs 2 T in out forward
    and twice that backward; attention's two products 4 L T^2 d forward, 8 backward."""
    from ember.models.gpt2 import GPT2Config, GPT2LMHeadModel
    d, layers, vocab, t = 32, 2, 67, 16
    with ember.device("meta"):
        model = GPT2LMHeadModel(GPT2Config(vocab_size=vocab, n_positions=32, n_embd=d, n_layer=layers, n_head=4))
    ids = ember.zeros(1, t, dtype=ember.int64, device="meta")
    with FlopCounterMode(display=False) as counter:
        model(ids, labels=ids).loss.backward()
    assert counter.get_total_flops() == 6 * t * (12 * d * d * layers + vocab * d) + 12 * layers * t * t * d
