"""A compiled module whose graph breaks (a print, .item() control flow, an unrepresentable return)
splits: its own forward runs eagerly and the submodules it calls run compiled, each with its own
guards; a submodule that breaks in turn splits the same way (python/ember/_compile.py,
_Compiled._submodule_routes). Results and gradients equal eager ones; counters show which calls
ran graphs, so a split that silently ran everything eagerly would fail."""
import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.compiler import CompileError, explain
from ember.nn.modules import module as module_mod


@pytest.fixture(autouse=True)
def _kernel_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ember-cache"))


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.ln = nn.LayerNorm(d)

    def forward(self, x):
        return x + F.gelu(self.ln(self.fc(x))) * 0.5


class Noisy(nn.Module):
    """Two blocks in a ModuleList with a print and a data-dependent branch between them."""

    def __init__(self, d=16):
        super().__init__()
        self.blocks = nn.ModuleList([Block(d), Block(d)])
        self.head = nn.Linear(d, 4)

    def forward(self, x):
        x = self.blocks[0](x)
        print("between blocks")
        if x.mean().item() > 100.0:  # never true: a branch on a value read into Python
            x = x * 0.0
        x = self.blocks[1](x)
        return self.head(x)


def _runs(compiled):
    return [(c.name, c.captures, c.graph_runs, c.eager_runs) for c in compiled._all()]


def test_a_broken_module_runs_its_submodules_compiled(capsys):
    ember.manual_seed(0)
    model = Noisy()
    fast = ember.compile(model)
    x = ember.randn(8, 16)
    want = model(x)
    for _ in range(4):
        assert ember.allclose(fast(x), want, rtol=1e-5, atol=1e-6)
    # the print runs on every call, as eager's (the module's own code is not captured)
    assert capsys.readouterr().out.count("between blocks") == 5
    c = fast._ember_compiled
    assert len(c.breaks) == 1 and "print()" in c.breaks[0]
    # call 1 captured the module (and broke), call 2 captured each submodule, calls 3-4 ran graphs
    assert c.split_runs == 3 and c.eager_runs == 0
    # the ModuleList was looked through: both blocks and the head compiled, each captured once
    # (the blocks share a class, not a cache: each has its own parameters)
    subs = [s for s in c._all() if s is not c]
    assert sorted(s.name for s in subs) == ["Block.forward", "Block.forward", "Linear.forward"]
    assert all(s.captures == 1 and s.graph_runs == 2 and s.eager_runs == 0 for s in subs)
    assert not module_mod._forward_routes  # routing lasts only as long as the call
    info = explain(fast, x)
    assert info.graph_count == 3 and info.graph_break_count == 1
    text = str(info)
    assert "3 modules it calls run compiled:" in text and text.count("  Block.forward") == 2, text
    assert info.fused_kernels >= 2  # each block's layer_norm/gelu/residual chain


def test_split_training_matches_eager_gradients():
    ember.manual_seed(1)
    model = Noisy()
    twin = Noisy()
    twin.load_state_dict(model.state_dict())
    fast = ember.compile(model)
    opt_fast = ember.optim.SGD(model.parameters(), lr=0.1)
    opt_eager = ember.optim.SGD(twin.parameters(), lr=0.1)
    x, y = ember.randn(8, 16), ember.randint(0, 4, (8,))
    for _ in range(4):
        for m, opt, f in ((model, opt_fast, fast), (twin, opt_eager, twin)):
            opt.zero_grad()
            F.cross_entropy(f(x), y).backward()
            opt.step()
        for (name, a), b in zip(model.named_parameters(), twin.parameters()):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
    subs = [s for s in fast._ember_compiled._all() if s is not fast._ember_compiled]
    assert all(s.graph_runs == 2 for s in subs)


class Gate(nn.Module):
    """A submodule that breaks itself: .item() on its input picks a branch."""

    def __init__(self, d):
        super().__init__()
        self.up = nn.Linear(d, d)
        self.down = nn.Linear(d, d)

    def forward(self, x):
        h = self.up(x)
        if h.sum().item() >= 0:
            return self.down(h.relu())
        return self.down(-h)


class Outer(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.gate = Gate(d)
        self.out = nn.Linear(d, d)

    def forward(self, x):
        return {"y": self.out(self.gate(x)), "note": object()}  # an object a graph cannot return


def test_a_submodule_that_breaks_splits_in_turn():
    ember.manual_seed(2)
    model = Outer()
    fast = ember.compile(model)
    for x in (ember.randn(4, 8), -ember.randn(4, 8).abs() * 10, ember.randn(4, 8).abs() * 10):
        for _ in range(2):
            assert ember.allclose(fast(x)["y"], model(x)["y"], rtol=1e-5, atol=1e-6)
    runs = _runs(fast._ember_compiled)
    c = fast._ember_compiled
    assert "item()" in c.breaks[0]  # met inside gate, before the unrepresentable return
    gate = c._routes[model.gate]
    assert gate.breaks and "item()" in gate.breaks[0]
    # Gate's own code runs eagerly; its Linear layers compiled (one signature each, whichever
    # branch): call 1 captured Outer, call 2 Gate, call 3 the Linears, calls 4-6 ran their graphs
    leaves = [s for s in gate._all() if s is not gate]
    assert len(leaves) == 2 and all(s.captures == 1 and s.graph_runs == 3 for s in leaves), runs
    assert explain(fast, ember.randn(4, 8)).graph_break_count == 2


def test_fullgraph_still_raises_and_functions_still_run_eagerly():
    model = Noisy()
    with pytest.raises(CompileError, match="print"):
        ember.compile(model, fullgraph=True)(ember.randn(2, 16))

    def f(x):
        print("f")
        return x + 1
    fast = ember.compile(f)
    for _ in range(2):
        fast(ember.zeros(2))
    assert fast._ember_compiled.eager_runs == 1 and fast._ember_compiled.split_runs == 0


def test_routes_are_removed_when_the_forward_raises():
    class Fails(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)

        def forward(self, x, fail):
            y = self.fc(x)
            print("before")
            if fail:
                raise ValueError("boom")
            return y
    model = Fails()
    fast = ember.compile(model)
    x = ember.randn(2, 3)
    fast(x, False)
    with pytest.raises(ValueError, match="boom"):
        fast(x, True)
    fast(x, False)  # the split signature: fc routed
    with pytest.raises(ValueError, match="boom"):
        fast(x, True)
    assert not module_mod._forward_routes
    assert ember.equal(model.fc(x), fast(x, False))  # called directly: not routed, eager


def test_a_replaced_submodule_gets_its_own_compiled_graph_and_reset_forgets_them():
    ember.manual_seed(3)
    model = Noisy()
    fast = ember.compile(model)
    x = ember.randn(2, 16)
    fast(x)
    fast(x)
    model.head = nn.Linear(16, 4)
    for _ in range(2):  # (a new parameter: Noisy is captured again, and splits again)
        assert ember.allclose(fast(x), model(x), rtol=1e-5, atol=1e-6)
    c = fast._ember_compiled
    assert model.head in c._routes and c._routes[model.head].captures == 1
    assert c._routes[model.blocks[0]].captures == 1  # the blocks kept their graphs
    ember.compiler.reset(fast)
    assert all(not s.cache for s in c._all())
    assert ember.allclose(fast(x), model(x), rtol=1e-5, atol=1e-6)


def _adamw_step(m, x, y):
    """A train step over m (AdamW, cross entropy of m(x) against y): backward() and step() break it."""
    opt = ember.optim.AdamW(m.parameters(), lr=1e-2)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def test_a_train_step_function_runs_the_model_compiled_around_backward_and_step():
    """backward() and the optimizer's step() break a compiled train step: the step runs eagerly and
    the model it calls runs compiled (forward graph, its backward through autograd), so the
    parameters after five steps equal eager's."""
    ember.manual_seed(4)
    model, twin = Noisy(), Noisy()
    twin.load_state_dict(model.state_dict())
    x, y = ember.randn(8, 16), ember.randint(0, 4, (8,))
    fast, eager = ember.compile(_adamw_step(model, x, y)), _adamw_step(twin, x, y)
    for _ in range(5):
        np.testing.assert_allclose(fast().item(), eager().item(), rtol=1e-5)
    for (name, a), b in zip(model.named_parameters(), twin.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
    c = fast._ember_compiled
    assert c.breaks and c.split_runs == 4 and list(c._routes) == [model]
    # Noisy breaks too (its print): it splits in turn, its blocks and head run compiled
    inner = c._routes[model]
    assert inner.breaks and sum(s.graph_runs for s in inner._all() if s is not inner) >= 3 * 2


@pytest.mark.skipif(not ember.cuda.is_available(), reason="no CUDA GPU on this machine: split graphs on the GPU "
                    "run in scripts/gpu_check.sh's cudapy stage")
def test_a_split_train_step_on_the_gpu():
    """A train step that breaks splits on the GPU as on the CPU: the model runs compiled around
    backward() and step(), and five AdamW steps leave eager's parameters."""
    ember.manual_seed(3)
    make = lambda: nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4)).cuda()  # noqa: E731
    model, twin = make(), make()
    twin.load_state_dict(model.state_dict())
    x, y = ember.randn(8, 16, device="cuda"), ember.randint(0, 4, (8,), device="cuda")
    fast, eager = ember.compile(_adamw_step(model, x, y)), _adamw_step(twin, x, y)
    for _ in range(5):
        np.testing.assert_allclose(fast().item(), eager().item(), rtol=1e-4)
    for a, b in zip(model.parameters(), twin.parameters()):
        np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().cpu().numpy(), rtol=1e-4, atol=1e-5)
    c = fast._ember_compiled
    assert c.breaks and c.split_runs == 4 and sum(s.graph_runs for s in c._all() if s is not c) >= 3


def test_a_split_step_is_found_without_walking_the_optimizer_state():
    """Once a train step has split, its later calls find the split by their arguments alone (the
    optimizer's state, which the guard walks object by object, cannot make an eager run wrong), so
    a change to that state -- a new learning rate -- is simply read by the eager step. A call with
    other arguments takes the full path (a capture)."""
    ember.manual_seed(5)
    model, twin = nn.Linear(6, 3), nn.Linear(6, 3)
    twin.load_state_dict(model.state_dict())

    def make_step(m):
        opt = ember.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)

        def step(x):
            opt.zero_grad()
            loss = m(x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss
        return step, opt
    (fast, opt), (eager, opt_e) = make_step(model), make_step(twin)
    fast = ember.compile(fast)
    for i in range(6):
        if i == 3:
            opt.param_groups[0]["lr"] = opt_e.param_groups[0]["lr"] = 0.5
        x = ember.randn(4, 6)
        np.testing.assert_allclose(fast(x).item(), eager(x).item(), rtol=1e-6)
        for a, b in zip(model.parameters(), twin.parameters()):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-7)
    c = fast._ember_compiled
    assert c.split_runs == 5 and len(c._split_calls) == 1
    fast(ember.randn(2, 6))  # another signature: captured (and split) on its own
    assert c.captures == 2 and len(c._split_calls) == 1
    fast(ember.randn(2, 6))
    assert len(c._split_calls) == 2
    ember.compiler.reset(fast)
    assert not c._split_calls


def test_a_function_routes_the_modules_it_reaches_later():
    """A module the capture call did not reach (another branch) is routed once a split call meets it."""
    ember.manual_seed(5)
    enc, dec_a, dec_b = nn.Linear(6, 6), nn.Linear(6, 3), nn.Linear(6, 3)

    def f(x):
        h = enc(x).relu()
        return dec_a(h) if x.sum().item() > 0 else dec_b(h)
    fast = ember.compile(f)
    pos, neg = ember.ones(2, 6), -ember.ones(2, 6)
    with ember.no_grad():
        for x in (pos, pos, neg, neg, neg, pos):
            assert ember.allclose(fast(x), f(x), rtol=1e-6, atol=1e-6)
    routes = fast._ember_compiled._routes
    assert set(routes) == {enc, dec_a, dec_b}
    assert routes[enc].graph_runs >= 3 and routes[dec_b].captures == 1


def test_a_backward_after_a_break_is_not_recorded():
    """backward() under a capture is a break; the ops after it run as eager, unrecorded. (Recorded,
    a layer norm's backward over an input without gradient returned an undefined gradient, which
    crashed the capture.)"""
    ember.manual_seed(6)
    model, twin = nn.Sequential(nn.LayerNorm(8), nn.Linear(8, 2)), nn.Sequential(nn.LayerNorm(8), nn.Linear(8, 2))
    twin.load_state_dict(model.state_dict())
    x = ember.randn(4, 8)  # no gradient wanted for the layer norm's input

    def make_step(m):
        opt = ember.optim.AdamW(m.parameters(), lr=1e-2)

        def step():
            opt.zero_grad()
            m(x).pow(2).mean().backward()
            opt.step()
        return step
    fast, eager = ember.compile(make_step(model)), make_step(twin)
    for _ in range(3):
        fast()
        eager()
    for a, b in zip(model.parameters(), twin.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert "backward" in fast._ember_compiled.breaks[0]


def test_sampling_generate_splits_and_draws_eager_tokens():
    """GPT-2's generate with sampling and an EOS check reads values back (a break): it runs eagerly
    and the model it calls runs compiled (fitted over the growing KV cache); under one seed the
    tokens are eager's."""
    from ember.models.gpt2 import GPT2Config, GPT2LMHeadModel
    ember.manual_seed(7)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=97, n_positions=64, n_embd=32, n_layer=2, n_head=2)).eval()
    ids = ember.randint(0, 97, (1, 5))
    gen = ember.compile(model.generate)
    with ember.no_grad():
        for seed in (1, 2):
            ember.manual_seed(seed)
            want = model.generate(ids, max_new_tokens=12, do_sample=True, top_k=10, eos_token_id=3)
            ember.manual_seed(seed)
            got = gen(ids, max_new_tokens=12, do_sample=True, top_k=10, eos_token_id=3)
            assert ember.equal(got, want), seed
    c = gen._ember_compiled
    assert c.breaks and list(c._routes) == [model] and c._routes[model].graph_runs > 0
