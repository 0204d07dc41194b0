"""ember.compile (python/ember/_compile.py, src/compile/): compiled results equal eager ones (values
and gradients) over functions and modules from every op family; guards recapture on a new
signature; breaks run eagerly (fullgraph raises); fused kernels have the eager bits; the disk
cache survives a restart and never serves a stale kernel."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.compiler import CompileError, explain

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


@pytest.fixture(autouse=True)
def _kernel_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ember-cache"))


def stats(fn):
    c = fn._ember_compiled
    return c.captures, c.graph_runs, c.eager_runs


def chain(x, y):
    a = x * y + 1.0
    b = a.tanh().sigmoid() * 2.0 - x
    return F.gelu(b) / (y.abs() + 0.5), b.exp()


def test_elementwise_chain_is_fused_and_bitwise_equal():
    x, y = ember.randn(64, 33), ember.randn(64, 33)
    want = chain(x, y)
    fast = ember.compile(chain)
    for _ in range(3):
        got = fast(x, y)
        assert all(ember.equal(g, w) for g, w in zip(got, want))
    assert stats(fast) == (1, 2, 0)
    info = explain(fast, x, y)
    assert info.graph_count == 1 and info.graph_break_count == 0
    assert info.fused_kernels == 1
    assert "fused kernel 0:" in str(info)
    # new shapes, a broadcast operand, a float64 input (no fusion there: replayed ops)
    for a, b in [(ember.randn(7), ember.randn(7)), (ember.randn(8, 5), ember.randn(5)),
                 (ember.randn(4, 4, dtype=ember.float64), ember.randn(4, 4, dtype=ember.float64))]:
        for _ in range(2):
            got = fast(a, b)
            assert all(ember.equal(g, w) for g, w in zip(got, chain(a, b)))
    assert fast._ember_compiled.captures == 4


def test_python_scalars_and_arguments_are_guarded():
    @ember.compile
    def scale(x, s, mode):
        return x * s if mode == "mul" else x + s
    x = ember.randn(10)
    for s in (2.0, 3.0, 2.0):
        for mode in ("mul", "add"):
            want = x * s if mode == "mul" else x + s
            assert ember.equal(scale(x, s, mode), want)
            assert ember.equal(scale(x, s, mode), want)
    assert scale._ember_compiled.captures == 4


def test_module_forward_and_gradients_match_eager():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 4))
    fast = ember.compile(model)
    assert isinstance(fast, nn.Module) and fast._orig_mod is model
    assert list(fast.state_dict())[0].startswith("_orig_mod.")
    x, target = ember.randn(8, 16), ember.randn(8, 4)
    for step in range(3):
        for m in (model, fast):
            model.zero_grad()
            loss = F.mse_loss(m(x), target)
            loss.backward()
            if m is model:
                want_loss, want = loss.item(), [p.grad.clone() for p in model.parameters()]
        assert loss.item() == want_loss
        for p, w in zip(model.parameters(), want):
            assert ember.allclose(p.grad, w, rtol=0, atol=0)
    model.eval()
    with ember.no_grad():
        assert ember.equal(fast(x), model(x))
        assert ember.equal(fast(x), model(x))


def test_training_flag_and_parameter_identity_are_guarded():
    ember.manual_seed(1)
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    fast = ember.compile(model)
    x = ember.randn(16, 4)
    model.eval()
    with ember.no_grad():
        assert ember.equal(fast(x), model(x))
        model.train()
        y = fast(x)
        assert (y == 0).any().item()  # dropout is on again: a new capture, not the eval graph
        model.eval()
        model[0].weight = nn.Parameter(ember.ones(4, 4))  # a new tensor: recapture
        assert ember.equal(fast(x), model(x))
    assert fast._ember_compiled.captures == 3


def test_data_dependent_control_flow_runs_eagerly_and_fullgraph_raises():
    def f(x):
        if x.sum().item() > 0:
            return x * 2
        return x - 1
    fast = ember.compile(f)
    pos, neg = ember.ones(3), -ember.ones(3)
    for _ in range(2):
        assert ember.equal(fast(pos), pos * 2)
        assert ember.equal(fast(neg), neg - 1)
    assert fast._ember_compiled.breaks and "item()" in fast._ember_compiled.breaks[0]
    with pytest.raises(CompileError, match=r"item\(\).*test_compile.py:\d+ in f: if x.sum\(\).item\(\) > 0:"):
        ember.compile(f, fullgraph=True)(pos)
    info = explain(f, pos)
    assert info.graph_break_count == 1 and info.graph_count == 0


def test_print_and_backward_are_breaks(capsys):
    def noisy(x):
        print("hello")
        return x + 1
    fast = ember.compile(noisy)
    for _ in range(2):
        assert ember.equal(fast(ember.zeros(2)), ember.ones(2))
    assert capsys.readouterr().out.count("hello") == 2  # eager each time: the print happens
    w = ember.randn(3, requires_grad=True)

    def step(x):
        loss = (w * x).sum()
        loss.backward()
        return loss.detach()
    with pytest.raises(CompileError, match="backward"):
        ember.compile(step, fullgraph=True)(ember.ones(3))


def test_inplace_updates_tensors_built_inside_and_factories():
    def f(x, buf):
        buf.mul_(0.5).add_(x)  # an in-place update of an input, as a running average
        t = ember.tensor([1.0, 2.0, 3.0])  # data copied in outside the dispatcher
        z = ember.zeros(3)
        z += x
        return buf * t + z + ember.arange(3.0)
    fast = ember.compile(f)
    x = ember.randn(3)
    b1, b2 = ember.randn(3), None
    b2 = b1.clone()
    for _ in range(3):
        got = fast(x, b1)
        want = f(x, b2)
        assert ember.equal(got, want) and ember.equal(b1, b2)


def test_random_ops_draw_fresh_numbers_like_eager():
    def f(x):
        return x + ember.randn(4) + F.dropout(x, 0.5, training=True)
    fast = ember.compile(f)
    x = ember.ones(4)
    fast(x)
    for seed in (3, 4):
        ember.manual_seed(seed)
        got = fast(x)
        ember.manual_seed(seed)
        assert ember.equal(got, f(x))
    assert fast._ember_compiled.graph_runs == 2
    # an explicit Generator: the graph could not keep it alive, so that function runs eagerly
    gen = ember.Generator()
    seeded = ember.compile(lambda x: x + ember.randn(4, generator=gen))
    for _ in range(2):
        gen.manual_seed(5)
        got = seeded(x)
        gen.manual_seed(5)
        assert ember.equal(got, x + ember.randn(4, generator=gen))
    assert "explicit Generator" in seeded._ember_compiled.breaks[0]


def _corpus():
    conv = nn.Conv2d(3, 4, 3, padding=1)

    def views(x):
        return x.t().reshape(-1)[2:9].unsqueeze(0).expand(3, 7).contiguous() * 2
    return [
        ("reductions", lambda x: (x.sum(0), x.mean(1, keepdim=True), x.amax(1), x.softmax(-1), x.log_softmax(0))),
        ("matmul", lambda x: (x @ x.t()).relu() + ember.addmm(x[:, :1], x, x.t()[:, :1])),
        ("views", views),
        ("index_cat_where", lambda x: ember.cat([x[[0, 2]], x[x[:, 0] > 10]], 0).where(x[:2] > 0, x[:2] * 3)),
        ("norms", lambda x: (F.layer_norm(x, (x.shape[-1],)), F.normalize(x, dim=1))),
        ("conv_pool", lambda x: F.max_pool2d(conv(x.reshape(1, 3, 4, 4).repeat(2, 1, 1, 1)), 2)),
        ("losses", lambda x: (F.cross_entropy(x, ember.tensor([1, 0, 3, 2])), F.smooth_l1_loss(x, x.flip(0)))),
        ("math", lambda x: (x.clamp(-0.5, 0.5), x.pow(2) + x.pow(3) - x.abs().sqrt(), ember.atan2(x, x + 2),
                            F.silu(x) * F.softplus(x) + ember.maximum(x, x * 0.5))),
        ("scan_sort", lambda x: (x.cumsum(1), x.sort(1)[0], x.topk(2, dim=1)[1])),
    ]


@pytest.mark.parametrize("name,fn", _corpus(), ids=[c[0] for c in _corpus()])
def test_corpus_matches_eager_values_and_gradients(name, fn):
    rng = np.random.default_rng(5)
    data = rng.standard_normal((4, 12)).astype(np.float32)
    fast = ember.compile(fn)

    def run(f):
        x = ember.tensor(data, requires_grad=True)
        out = f(x)
        outs = out if isinstance(out, tuple) else (out,)
        total = sum((o.float() * (i + 1)).sum() for i, o in enumerate(outs) if o.dtype.is_floating_point)
        if isinstance(total, ember.Tensor) and total.requires_grad:
            total.backward()
        return [o.detach() for o in outs], x.grad
    want, want_grad = run(fn)
    for _ in range(2):
        got, grad = run(fast)
        for g, w in zip(got, want):
            assert ember.allclose(g, w, rtol=1e-6, atol=1e-6), name
        if want_grad is not None:
            assert ember.allclose(grad, want_grad, rtol=1e-6, atol=1e-6), name
    with ember.no_grad():  # and without autograd, where chains fuse
        x = ember.tensor(data)
        for _ in range(2):
            out = fast(x)
            outs = out if isinstance(out, tuple) else (out,)
            ref = fn(x)
            refs = ref if isinstance(ref, tuple) else (ref,)
            for g, w in zip(outs, refs):
                assert ember.allclose(g, w, rtol=1e-6, atol=1e-6), name


def test_nested_compiled_functions_and_decorator_forms():
    @ember.compile(fullgraph=True)
    def inner(x):
        return x.exp() + 1

    @ember.compile
    def outer(x):
        return inner(x) * inner(x + 1)
    x = ember.randn(5)
    want = (x.exp() + 1) * ((x + 1).exp() + 1)
    for _ in range(2):
        assert ember.allclose(outer(x), want, rtol=1e-6)
    assert ember.compile(lambda x: x, backend="eager")(x) is x
    with pytest.warns(UserWarning, match="the backend 'my_backend' is not called"):
        def my_backend(gm, example_inputs):
            return gm.forward
        assert ember.compile(lambda x: x, backend=my_backend)(x) is x
    with pytest.raises(RuntimeError, match="mode"):
        ember.compile(inner, mode="fastest")
    assert not ember.compiler.is_compiling()


def test_cache_size_limit_runs_new_signatures_eagerly():
    f = ember.compile(lambda x: x * 2, dynamic=False)  # (dynamic=None would fit the sizes)
    with pytest.warns(UserWarning, match="cache_size_limit"):
        for n in range(1, 12):
            assert ember.equal(f(ember.ones(n)), ember.full((n,), 2.0))
    assert f._ember_compiled.captures == 8 and f._ember_compiled.eager_runs == 3


_CACHE_SCRIPT = textwrap.dedent("""
    import sys, ember
    from ember.compiler import explain
    alpha, act = float(sys.argv[1]), getattr(ember, sys.argv[2])
    f = lambda x: act(x * alpha + 1.0) * 3.0
    x = ember.linspace(-2, 2, 50)
    info = explain(f, x)
    print("CACHED" if "from the disk cache" in str(info) else "BUILT", info.compile_seconds > 0)
    assert ember.equal(ember.compile(f)(x), f(x)) and ember.equal(ember.compile(f)(x), f(x))
""")


def test_disk_cache_survives_a_restart_and_is_never_stale(tmp_path):
    env = dict(os.environ, EMBER_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python"), os.path.join(ROOT, "build", "python")]))

    def run(alpha, act="tanh"):
        out = subprocess.run([sys.executable, "-c", _CACHE_SCRIPT, str(alpha), act], env=env, capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, out.stderr  # (the script also checks compiled == eager)
        return out.stdout.split()
    assert run(0.5) == ["BUILT", "True"]
    assert run(0.5) == ["CACHED", "False"]  # a new process: loaded, not compiled
    assert run(0.25) == ["CACHED", "False"]  # scalars are the kernel's arguments, not its code
    assert run(0.5, "sigmoid") == ["BUILT", "True"]  # another graph: another kernel, never the cached one
    # a corrupt file under the right name is rebuilt, not trusted
    for so in (tmp_path / "cache" / "kernels").glob("*.so"):
        so.write_bytes(b"not an object")
    assert run(0.5) == ["BUILT", "True"]


def test_training_chains_fuse_with_a_generated_backward():
    """Elementwise chains that need gradients fuse too: the forward kernel has the eager bits,
    the generated backward (intermediates recomputed, not saved) matches eager autograd."""
    def f(x, w, b, s):
        h = (x * w + b).tanh() * s - x
        return F.gelu(h).sigmoid() + ember.maximum(h, x * 0.5), h.exp().square()
    fast = ember.compile(f)
    rng = np.random.default_rng(7)
    data = [rng.standard_normal(shape).astype(np.float32) for shape in [(64, 40), (64, 40), (40,), ()]]

    def run(fn):
        x, w, b, s = (ember.tensor(d, requires_grad=True) for d in data)
        out = fn(x, w, b, s)
        (out[0] * 1.5 + out[1] * 0.25).sum().backward()
        return out, [t.grad for t in (x, w, b, s)]
    want, want_grads = run(f)
    for _ in range(2):
        got, grads = run(fast)
        assert all(ember.equal(g.detach(), w.detach()) for g, w in zip(got, want))
        for g, w in zip(grads, want_grads):
            assert g.shape == w.shape and ember.allclose(g, w, rtol=2e-5, atol=2e-6)
    text = str(explain(fast, *(ember.tensor(d, requires_grad=True) for d in data)))
    assert "with a fused backward" in text
    # only some inputs need gradients: the others get none
    x = ember.tensor(data[0], requires_grad=True)
    w, b, s = (ember.tensor(d) for d in data[1:])
    fast(x, w, b, s)[0].sum().backward()
    assert x.grad is not None and w.grad is None
    # a double backward through a fused kernel is a clear error, not a wrong answer
    x = ember.tensor(data[0], requires_grad=True)
    out = fast(x, w, b, s)[0].sum()
    with pytest.raises(RuntimeError, match="double backward"):
        ember.autograd.grad(out, x, create_graph=True)


def _module_corpus():
    ember.manual_seed(11)
    return [
        ("lstm", nn.LSTM(6, 8, num_layers=2, batch_first=True), (3, 5, 6)),
        ("gru", nn.GRU(6, 8, batch_first=True), (3, 5, 6)),
        ("batchnorm_train", nn.Sequential(nn.Conv2d(2, 4, 3), nn.BatchNorm2d(4), nn.ReLU()), (4, 2, 6, 6)),
        ("mha", nn.MultiheadAttention(8, 2, batch_first=True), (2, 7, 8)),
        ("transformer", nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True), (2, 9, 8)),
        ("upsample_pad_convT", nn.Sequential(nn.Upsample(scale_factor=2, mode="bilinear"), nn.ZeroPad2d(1),
                                             nn.ConvTranspose2d(2, 3, 3, stride=2), nn.AvgPool2d(2)), (2, 2, 5, 5)),
        ("embedding", nn.Sequential(nn.Embedding(20, 6), nn.Flatten(), nn.Linear(24, 3)), None),
    ]


def _module_inputs(shape):
    if shape is None:
        return ember.tensor([[1, 4, 19, 0], [7, 7, 2, 3]])
    return ember.randn(*shape)


@pytest.mark.parametrize("name,module,shape", _module_corpus(), ids=[m[0] for m in _module_corpus()])
def test_module_corpus_matches_eager(name, module, shape):
    """Library modules compiled: the outputs and the parameters' gradients of three steps equal
    eager ones, including modules that update buffers in place (BatchNorm's running stats)."""
    import copy
    ember.manual_seed(12)
    x = _module_inputs(shape)
    twin = copy.deepcopy(module)
    fast = ember.compile(twin)

    def first(out):
        return out[0] if isinstance(out, tuple) else out
    for _ in range(3):
        outs = []
        for m, call in ((module, module), (twin, fast)):
            m.zero_grad()
            args = (x, x, x) if name == "mha" else (x,)
            out = first(call(*args))
            out.float().pow(2).sum().backward()
            outs.append((out.detach(), [p.grad for p in m.parameters()], [b.clone() for b in m.buffers()]))
        (o1, g1, b1), (o2, g2, b2) = outs
        assert ember.allclose(o1, o2, rtol=1e-5, atol=1e-6), name
        for a, b in zip(g1, g2):
            assert (a is None) == (b is None) and (a is None or ember.allclose(a, b, rtol=1e-5, atol=1e-6)), name
        for a, b in zip(b1, b2):
            assert ember.allclose(a.double(), b.double()), name
    assert fast._ember_compiled.captures >= 1


def test_external_tensors_are_the_real_tensors():
    """Tensors a function reads from outside (a global, an optimizer's parameters) are used as
    themselves on every call: writes land on them and later changes are seen, never folded."""
    state = ember.zeros(3)
    scale = ember.full((3,), 2.0)

    def bump(x):
        state.add_(x)  # a write to an outside tensor
        return state * scale, state
    fast = ember.compile(bump)
    x = ember.ones(3)
    for i in range(1, 4):
        out, same = fast(x)
        assert same is state and ember.equal(state, ember.full((3,), float(i)))
        assert ember.equal(out, state * scale)
    scale.mul_(10)  # changed outside: the graph reads it again
    assert ember.equal(fast(x)[0], state * scale)

    ember.manual_seed(3)
    model = nn.Linear(4, 2)
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    twin = nn.Linear(4, 2)
    twin.load_state_dict(model.state_dict())
    opt_twin = ember.optim.SGD(twin.parameters(), lr=0.1, momentum=0.9)
    step = ember.compile(opt_twin.step)
    data = ember.randn(8, 4)
    for _ in range(3):
        for m, o, st in ((model, opt, opt.step), (twin, opt_twin, step)):
            o.zero_grad()
            m(data).pow(2).sum().backward()
            st()
        for p, q in zip(model.parameters(), twin.parameters()):
            assert ember.allclose(p, q, rtol=0, atol=0)
    # ember's optimizers keep their state in C++: a compiled step runs eagerly, and says why
    assert "Optimizer.step()" in step._ember_compiled.breaks[0]

    # a hand-written update keeps its state in Python: the guards see it change
    class Momentum:
        def __init__(self, params):
            self.params, self.bufs, self.lr = params, {}, 0.1

        def step(self):
            with ember.no_grad():
                for p in self.params:
                    if id(p) not in self.bufs:
                        self.bufs[id(p)] = p.grad.clone()
                    else:
                        self.bufs[id(p)].mul_(0.9).add_(p.grad)
                    p.sub_(self.bufs[id(p)] * self.lr)
    a, b = nn.Linear(4, 2), nn.Linear(4, 2)
    b.load_state_dict(a.state_dict())
    ma, mb = Momentum(list(a.parameters())), Momentum(list(b.parameters()))
    fast_step = ember.compile(mb.step)
    for i in range(4):
        if i == 2:
            ma.lr = mb.lr = 0.05  # a Python float the graph read: a new signature
        for m, st in ((a, ma.step), (b, fast_step)):
            m.zero_grad()
            m(data).pow(2).sum().backward()
            st()
        for p, q in zip(a.parameters(), b.parameters()):
            assert ember.allclose(p, q, rtol=0, atol=0)
    assert fast_step._ember_compiled.captures == 3 and fast_step._ember_compiled.graph_runs == 1


def test_gpt2_model_outputs_and_training_match_eager():
    """A model returning an output object (.logits, .loss): compiled forward and a train step's
    gradients equal eager ones; under autocast too."""
    from ember.models import GPT2Config, GPT2LMHeadModel
    ember.manual_seed(21)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=50, n_positions=32, n_embd=32, n_layer=2, n_head=2, resid_pdrop=0.0,
                                       embd_pdrop=0.0, attn_pdrop=0.0))
    fast = ember.compile(model)
    ids = ember.randint(0, 50, (2, 16))
    for _ in range(2):
        outs = []
        for m in (model, fast):
            model.zero_grad()
            out = m(ids, labels=ids)
            out.loss.backward()
            outs.append((out.logits.detach(), out.loss.item(), [p.grad.clone() for p in model.parameters()]))
        (l1, loss1, g1), (l2, loss2, g2) = outs
        assert type(out).__name__ == "CausalLMOutput"
        assert ember.allclose(l1, l2, rtol=1e-5, atol=1e-6) and abs(loss1 - loss2) < 1e-6
        for a, b in zip(g1, g2):
            assert ember.allclose(a, b, rtol=1e-4, atol=1e-6)
    assert fast._ember_compiled.graph_runs >= 1 and not fast._ember_compiled.breaks
    model.eval()
    with ember.no_grad(), ember.autocast("cpu", dtype=ember.bfloat16):
        for _ in range(2):
            assert ember.equal(fast(ids).logits, model(ids).logits)


def test_profiler_sees_fused_kernels_and_replayed_ops():
    from ember.profiler import ProfilerActivity, profile
    x = ember.randn(64, 64, requires_grad=True)
    fast = ember.compile(lambda x: ((x * 2 + 1).tanh() @ x).sigmoid() * 3)
    fast(x)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fast(x).sum().backward()
    names = {e.key for e in prof.key_averages()}
    assert any(n.endswith("ember::fused_elementwise") for n in names)
    assert any(n.endswith("ember::fused_elementwise_backward") for n in names)
    assert "FusedElementwiseBackward" in names
    assert any("mm" in n for n in names)  # the replayed matmul shows as itself


def test_aliasing_layouts_and_edge_cases_match_eager():
    cases = [
        ("view_then_write", lambda x: (x.t(), x.add_(1))[0] * 1),          # a view sees a later write
        ("write_through_view", lambda x: (x[0].mul_(2), x.sum())[1]),      # select + in-place on it
        ("same_input_twice", lambda x, y: (x * y + x).tanh()),
        ("returns_twice", lambda x: (lambda t: (t, t))(x.exp())),
        ("transposed_input", lambda x: (x * 2 + 1).sigmoid()),
        ("empty", lambda x: (x * 2).exp()),
        ("mixed_dtypes", lambda x: (x * x.double() + 1).sqrt()),
        ("bfloat16", lambda x: (x.bfloat16() * 3).tanh().float()),
        ("row_and_column_broadcast", lambda x: (x + x[:1]) * x[:, :1] + x.mean(0)),
        ("kwargs_and_defaults", lambda x, scale=2.0, *, shift=1: x * scale + shift),
    ]
    for name, fn in cases:
        fast = ember.compile(fn)
        for _ in range(3):
            base = ember.randn(4, 6)
            if name == "transposed_input":
                base = ember.randn(6, 4).t()
            if name == "empty":
                base = ember.randn(0, 6)
            a, b = base.clone(), base.clone()
            if name == "same_input_twice":
                want, got = fn(a, a), fast(b, b)
            elif name == "kwargs_and_defaults":
                want, got = fn(a, 3.0, shift=2), fast(b, 3.0, shift=2)
            else:
                want, got = fn(a), fast(b)
            want = want if isinstance(want, tuple) else (want,)
            got = got if isinstance(got, tuple) else (got,)
            for w, g in zip(want, got):
                assert g.dtype == w.dtype and g.shape == w.shape, name
                assert ember.allclose(g.double(), w.double(), rtol=1e-6, atol=1e-6), name
            assert ember.equal(a, b), name  # the same writes to the inputs
        if name == "returns_twice":
            out = fast(ember.ones(2))
            assert out[0] is not None and ember.equal(out[0], out[1])


def test_an_exception_during_capture_leaves_nothing_open():
    def fails(x):
        y = x * 2
        raise ValueError("boom")
    fast = ember.compile(fails)
    with pytest.raises(ValueError, match="boom"):
        fast(ember.ones(2))
    assert not ember.compiler.is_compiling()
    ok = ember.compile(lambda x: x + 1)
    assert ember.equal(ok(ember.ones(2)), ember.full((2,), 2.0))
    assert ember.equal(ok(ember.ones(2)), ember.full((2,), 2.0))


def test_dynamic_shapes_fit_sizes_then_stop_capturing():
    """dynamic=True: batch 1 and then four sizes are captured; the fifth size on runs the graph
    fitted over them, specialised (tests/python/test_compile_dynamic.py has the details)."""
    fn = lambda x, b: (x * 2 + b).tanh() * x  # noqa: E731
    fast = ember.compile(fn, dynamic=True)
    import warnings as w
    with w.catch_warnings():
        w.simplefilter("error")  # no cache_size_limit warning
        for n in range(1, 21):
            x, b = ember.randn(n, 16), ember.randn(16)
            assert ember.equal(fast(x, b), fn(x, b))
            assert ember.equal(fast(x, b), fn(x, b))
    c = fast._ember_compiled
    assert c.captures == 5 and c.specialisations == 15 and c.eager_runs == 0
    assert c.graph_runs == 15 + 20  # the specialised first calls, and every second call
    # one kernel source for every batch size: built once, then found in the process cache
    built = sum(e.graph.codegen_seconds > 0 for e in c.cache.values())
    assert built <= 1


def test_masked_attention_compiles_whole():
    """SDPA's math path with a mask reads nothing back (its safe softmax does not test for dead rows
    on the host), so it captures whole and equals eager, gradients too."""
    keep = ember.rand(8, 8) > 0.3
    keep[2] = False  # a fully masked row
    fast = ember.compile(lambda q: F.scaled_dot_product_attention(q, q, q, attn_mask=keep), fullgraph=True)
    for _ in range(2):
        q1 = ember.randn(1, 2, 8, 4, requires_grad=True)
        q2 = q1.detach().clone().requires_grad_()
        want, got = F.scaled_dot_product_attention(q1, q1, q1, attn_mask=keep), fast(q2)
        assert ember.allclose(got, want, atol=1e-6)
        want.sum().backward()
        got.sum().backward()
        assert ember.allclose(q2.grad, q1.grad, atol=1e-6)


def _softmax_by_hand(x):
    e = (x - x.amax(-1, keepdim=True)).exp()
    return e / e.sum(-1, keepdim=True)


def _rms_norm_by_hand(x, w):
    return x * (x.pow(2).mean(-1, keepdim=True) + 1e-6).rsqrt() * w


def _layer_norm_by_hand(x, w, b):
    m = x.mean(-1, keepdim=True)
    d = x - m
    return d * (d.pow(2).mean(-1, keepdim=True) + 1e-5).rsqrt() * w + b


def test_row_reductions_fuse_with_their_elementwise_nodes():
    """softmax, RMSNorm and layer norm written by hand: each is one kernel (reductions over the
    last dim with the elementwise nodes around them), equal to eager to float rounding."""
    for f, extra in [(_softmax_by_hand, ()), (_rms_norm_by_hand, ("w",)), (_layer_norm_by_hand, ("w", "b"))]:
        fast = ember.compile(f)
        for shape in [(4, 8), (3, 5, 37), (64, 1000), (2, 2), (6, 16)]:
            x = ember.randn(*shape) * 3
            args = (x,) + tuple(ember.randn(shape[-1]) for _ in extra)
            with ember.no_grad():
                fast(*args)  # (the capture call runs eagerly)
                got, want = fast(*args), f(*args)
            assert got.shape == want.shape and ember.allclose(got, want, rtol=1e-5, atol=1e-6), (f.__name__, shape)
        with ember.no_grad():
            info = explain(f, ember.randn(4, 8), *(ember.randn(8) for _ in extra))
        assert info.fused_kernels == 1 and "(row reductions)" in str(info), str(info)


def test_row_groups_propagate_nan_and_return_per_row_values():
    def f(x, m):
        top, low = x.amax(-1, keepdim=True), x.amin(-1, keepdim=True)
        total = (x * m).sum(-1, keepdim=True)  # m: one number per row, from outside
        return top, low, total / (top - low + 1.0)
    x = ember.randn(5, 40)
    x[1, 3] = float("nan")
    x[2, 39] = float("inf")
    x[3, 0] = float("-inf")
    m = ember.randn(5, 1)
    fast = ember.compile(f)
    with ember.no_grad():
        fast(x, m)
        got, want = fast(x, m), f(x, m)
        assert explain(f, x, m).fused_kernels == 1
    for g, w in zip(got, want):
        assert g.shape == w.shape and ember.allclose(g, w, rtol=1e-5, atol=1e-6, equal_nan=True)


def test_row_reductions_read_in_place_at_every_tail_length():
    """Reductions of an input or of a value kept for later passes read it from memory in two
    16-float vectors and a padded tail: lengths around 16 and 32, a NaN in the tail or the body,
    -inf and +inf rows, against eager."""
    def f(x):
        e = (x - x.amax(-1, keepdim=True)).exp()  # amax of an input; e kept: reduced, then read again
        return e / e.sum(-1, keepdim=True), x.amin(-1, keepdim=True), e.amax(-1, keepdim=True) * e
    fast = ember.compile(f)
    for n in (1, 15, 16, 17, 31, 32, 33, 47, 64, 100):
        x = ember.randn(6, n) * 4
        x[1, n - 1] = float("nan")  # the tail (or the only element)
        x[2, 0] = float("nan")
        x[3].fill_(float("-inf"))
        x[4, n // 2] = float("inf")
        with ember.no_grad():
            fast(x)
            got, want = fast(x), f(x)
            info = str(explain(f, x))
            # (over one element the reductions are the values themselves: no row kernel)
            assert n == 1 or "Fused Kernels: 1" in info and "(row reductions)" in info, info
        for g, w in zip(got, want):
            assert g.shape == w.shape and ember.allclose(g, w, rtol=1e-5, atol=1e-6, equal_nan=True), n


def test_row_groups_reduce_a_one_number_operand_as_itself():
    """A [1, 1] operand in a group over [1, L] rows is one number that broadcasts; reducing it over
    its last dim gives it back (it was once summed L times)."""
    def f(x, s):
        return (x * 2).sum(-1, keepdim=True) + s.sum(-1, keepdim=True) * (x + 1)
    fast = ember.compile(f)
    x, s = ember.randn(1, 8), ember.randn(1, 1)
    with ember.no_grad():
        fast(x, s)
        assert ember.allclose(fast(x, s), f(x, s))


def test_row_groups_differentiate():
    """With gradients a row group has a generated backward (reductions' gradients: sum's, mean's / L,
    amax/amin's shared among ties): values and gradients equal eager's to float rounding."""
    def rows(x, m):
        top, low = x.amax(-1, keepdim=True), x.amin(-1, keepdim=True)
        return (x * m).sum(-1, keepdim=True) / (top - low + 1.0), top

    cases = [(_softmax_by_hand, lambda s: (ember.randn(*s),)),
             (_rms_norm_by_hand, lambda s: (ember.randn(*s), ember.randn(s[-1]))),
             (_layer_norm_by_hand, lambda s: (ember.randn(*s), ember.randn(s[-1]), ember.randn(s[-1]))),
             (rows, lambda s: (ember.randint(0, 3, s).float(), ember.randn(*s[:-1], 1)))]  # ties in amax/amin
    for f, make in cases:
        fast = ember.compile(f)
        for shape in [(4, 8), (3, 5, 37), (2, 2)]:
            args = [a.requires_grad_() for a in make(shape)]
            fast(*args)  # the capture call
            got, want = fast(*args), f(*args)
            got, want = (got if isinstance(got, tuple) else (got,)), (want if isinstance(want, tuple) else (want,))
            weights = [ember.randn(*w.shape) for w in want]
            g_got = ember.autograd.grad(sum((o * w).sum() for o, w in zip(got, weights)), args)
            g_want = ember.autograd.grad(sum((o * w).sum() for o, w in zip(want, weights)), args)
            for a, b in list(zip(got, want)) + list(zip(g_got, g_want)):
                assert a.shape == b.shape and ember.allclose(a, b, rtol=1e-4, atol=1e-5), (f.__name__, shape)
        info = str(explain(f, *args))
        assert "(row reductions) (with a fused backward)" in info, info


def test_fused_kernels_write_into_dying_intermediates_only_when_nothing_else_holds_them():
    """Memory planning: a fused kernel's output takes the buffer of an operand read for the last
    time there, when only the graph holds it; an intermediate a view of which is returned (or
    that autograd saved) keeps its values."""
    w = ember.randn(16, 16)

    def f(x):
        h = x.matmul(w)  # dies in the chain below: its buffer becomes the output's
        return ((h * 1.1 + 0.3).relu() * 0.5).tanh() - h.sigmoid()

    def g(x):
        h = x.matmul(w)
        flat = h.view(-1)  # returned: h's storage must survive the chain
        return (h * 2.0 + 1.0).relu(), flat

    def rows(x):
        h = x.matmul(w)
        e = (h - h.amax(-1, keepdim=True)).exp()
        return e / e.sum(-1, keepdim=True)
    for fn in (f, g, rows):
        fast = ember.compile(fn)
        for _ in range(3):
            x = ember.randn(8, 16)
            with ember.no_grad():
                got, want = fast(x), fn(x)
            got, want = (got if isinstance(got, tuple) else (got,)), (want if isinstance(want, tuple) else (want,))
            assert all(ember.allclose(a, b, rtol=1e-6, atol=1e-6) for a, b in zip(got, want)), fn.__name__


def test_dynamo_namespace():
    """ember._dynamo (torch._dynamo): reset drops every compiled function's graphs, mark_dynamic
    makes a function keep many shapes, graph_break is a break (an error with fullgraph), config's
    cache_size_limit is ember's."""
    import ember._dynamo as dynamo
    fast = ember.compile(lambda x: x * 2 + 1)
    fast(ember.randn(3))
    assert explain(fast, ember.randn(3)).graph_count == 1
    dynamo.reset()
    assert fast._ember_compiled.cache == {} or len(fast._ember_compiled.cache) == 0
    old = dynamo.config.cache_size_limit
    try:
        dynamo.config.cache_size_limit = 2
        assert ember._compile.cache_size_limit == 2
        grow = ember.compile(lambda x: x.sin() * 2)
        for n in range(2, 8):
            x = ember.randn(n)
            dynamo.mark_dynamic(x, 0)
            assert ember.allclose(grow(x), x.sin() * 2)
        assert grow._ember_compiled.dynamic and len(grow._ember_compiled.cache) == 6  # past the limit of 2
    finally:
        dynamo.config.cache_size_limit = old

    def breaks(x):
        y = x + 1
        dynamo.graph_break()
        return y * 2
    assert ember.equal(ember.compile(breaks)(ember.ones(2)), ember.full((2,), 4.0))
    with pytest.raises(ember.compiler.CompileError, match="graph_break"):
        ember.compile(breaks, fullgraph=True)(ember.ones(2))
    assert dynamo.optimize("inductor")(lambda x: x + 1)(ember.ones(1)).item() == 2.0


def test_cond_holds_data_dependent_control_flow_without_a_break():
    """ember.cond (torch.cond): one node that reads pred and runs the branch it picks on each call,
    so fullgraph=True holds; gradients flow through the branch taken; mismatched branches are an
    error at capture; export refuses it by name."""
    def f(x):
        y = x * 2
        return ember.cond(y.sum() > 0, lambda a: a.sin(), lambda a: a.cos() * 3, (y,)) + 1
    fast = ember.compile(f, fullgraph=True)
    for sign in (1.0, -1.0, 1.0, -1.0):
        x = (ember.rand(4) + 0.1) * sign
        assert ember.allclose(fast(x), f(x))
    assert explain(f, ember.ones(4)).graph_break_count == 0
    x = ember.full((4,), -1.0, requires_grad=True)
    fast(x)
    fast(x).sum().backward()
    assert ember.allclose(x.grad, -(ember.full((4,), -2.0).sin()) * 3 * 2)
    assert ember.equal(ember.cond(False, lambda: ember.ones(1), lambda: ember.zeros(1)), ember.zeros(1))  # eager
    with pytest.raises(RuntimeError, match="same structure, shapes and dtypes"):
        ember.compile(lambda x: ember.cond(x.sum() > 0, lambda a: a, lambda a: a[:2], (x,)))(ember.ones(3))
    with pytest.raises(ember.export.ExportError, match="cond"):
        ember.export.export(f, (ember.ones(4),))


def test_fused_relu_backward_passes_nan_like_eager():
    # relu's gradient is torch's threshold_backward (zero where the output is <= 0): a NaN passes,
    # in the generated backward as in eager
    def f(x):
        return (x * 2.0).relu() * 3.0

    fast = ember.compile(f)
    grads = []
    for fn in (f, fast, fast):
        x = ember.tensor([float("nan"), -1.0, 0.0, 2.0], requires_grad=True)
        fn(x).sum().backward()
        grads.append(x.grad.tolist())
    assert grads[0] == grads[1] == grads[2] == [6.0, 0.0, 0.0, 6.0]
    assert explain(fast, ember.randn(4, requires_grad=True)).fused_kernels == 1


def test_max_pool_moves_before_relu_with_eager_values_and_gradients():
    # conv -> relu -> max pool becomes conv -> max pool -> relu (relu commutes with a max): the
    # relu runs on a quarter of the elements; values and gradients stay eager's bit for bit
    ember.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(4, 4, 3),
                          nn.ReLU(), nn.MaxPool2d(2), nn.Flatten())
    fast = ember.compile(model)
    x = ember.randn(3, 1, 12, 12)
    x[0, 0, :4, :4] = -1.0  # windows whose max is <= 0, and ties
    for _ in range(3):
        model.zero_grad()
        want = model(x)
        want.pow(2).sum().backward()
        grads = [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        got = fast(x)
        got.pow(2).sum().backward()
        assert ember.equal(got, want)
        assert all(ember.equal(p.grad, g) for p, g in zip(model.parameters(), grads))
    assert "2 max pools moved before their relu" in str(explain(fast, x))

    def with_indices(x):  # the indices are read: no rewrite (they could differ at ties <= 0)
        out, idx = F.max_pool2d(x.relu(), 2, return_indices=True)
        return out, idx

    f = ember.compile(with_indices)
    y = ember.randn(2, 3, 8, 8)
    for _ in range(2):
        assert all(ember.equal(g, w) for g, w in zip(f(y), with_indices(y)))
    assert "moved before" not in str(explain(f, y))
