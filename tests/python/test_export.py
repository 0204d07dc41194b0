"""ember.export (python/ember/export.py, src/compile/program_file.cpp): exported programs equal eager
on new inputs after a file round trip (MLP, CNN, a GPT-2 wrapper); clear errors for what cannot be
exported, for inputs of another shape, and for damaged or tampered files."""
import io
import os
import json
import zipfile

import pytest

import ember
import ember.nn as nn
from ember.export import ExportError


def _mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 10))


def _cnn():
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Dropout(0.5), nn.Linear(8 * 14 * 14, 10))


class _GPT2Logits(nn.Module):
    def __init__(self):
        super().__init__()
        from ember.models import GPT2Config, GPT2LMHeadModel
        self.gpt = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=2, n_head=2))

    def forward(self, ids):
        return self.gpt(ids).logits


@pytest.mark.parametrize("make,example", [(_mlp, lambda: ember.randn(4, 1, 28, 28)),
                                          (_cnn, lambda: ember.randn(4, 1, 28, 28)),
                                          (_GPT2Logits, lambda: ember.randint(0, 64, (2, 16)))],
                         ids=["mlp", "cnn", "gpt2"])
def test_round_trip_equals_eager(tmp_path, make, example):
    ember.manual_seed(0)
    model = make().eval()
    with ember.no_grad():
        ep = ember.export.export(model, (example(),))
    path = tmp_path / "model.ember"
    ember.export.save(ep, path)
    loaded = ember.export.load(path)
    for _ in range(3):
        x = example()
        with ember.no_grad():
            want = model(x)
        assert ember.allclose(loaded.module()(x), want, rtol=1e-5, atol=1e-6)
        assert ember.allclose(ep(x), want, rtol=1e-5, atol=1e-6)
    with zipfile.ZipFile(path) as z:  # a readable graph and safetensors constants
        graph = json.loads(z.read("program/graph.json"))
        assert graph["format"] == "ember.export" and graph["nodes"]
        assert z.read("program/constants.safetensors")[:8]


def test_what_cannot_be_exported_is_an_error():
    m = _mlp().eval()
    with pytest.raises(ExportError, match=r"item\(\)"):
        ember.export.export(lambda x: x * x.sum().item(), (ember.ones(3),))
    with pytest.raises(ExportError, match="expected Dim"):
        ember.export.export(m, (ember.randn(2, 1, 28, 28),), dynamic_shapes=({1: "channels"},))
    from ember.library import custom_op

    @custom_op("exporttest::apply", mutates_args=())
    def apply(x, fn):
        return fn(x)
    # a Python object among a custom op's arguments: the call cannot be written down
    with pytest.raises(ExportError, match="exporttest::apply.*opaque"):
        ember.export.export(lambda x: apply(x, abs) + 1, (ember.ones(3),))
    ep = ember.export.export(m, (ember.randn(2, 1, 28, 28),))
    with pytest.raises(ValueError, match=r"input 0 must be float32 on cpu of size \[2, 1, 28, 28\]"):
        ep(ember.randn(3, 1, 28, 28))
    with pytest.raises(TypeError, match="exported structure"):
        ep(ember.randn(2, 1, 28, 28), ember.randn(1))


def _saved_bytes():
    ember.manual_seed(1)
    with ember.no_grad():
        ep = ember.export.export(_mlp().eval(), (ember.randn(2, 1, 28, 28),))
    return ep._program.save_to_bytes()


def _with_graph(data, edit):
    """The archive with program/graph.json passed through edit(dict)."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for item in src.infolist():
            body = src.read(item.filename)
            if item.filename == "program/graph.json":
                g = json.loads(body)
                edit(g)
                body = json.dumps(g).encode()
            dst.writestr(item.filename, body)
    return out.getvalue()


def test_damaged_and_tampered_files_get_clear_errors():
    data = _saved_bytes()
    load = ember._C._compile.load_program_bytes
    assert load(data).num_inputs == 1
    for cut in (10, len(data) // 2, len(data) - 5):
        with pytest.raises(Exception, match="zip|archive|truncated|central|invalid|not a valid"):
            load(data[:cut])

    def op(name):
        return lambda g: g["nodes"][0].update(op=name)

    def arg(value):
        return lambda g: g["nodes"][0]["args"].__setitem__(1, value)
    cases = [
        (op("system"), "'system', which is neither an ember op"),
        (lambda g: g["nodes"][1]["args"].__setitem__(0, ["string", "x"]), "is not one tensor"),
        (lambda g: g["nodes"][0].update(inputs=[999]), "names value 999"),
        (lambda g: g["nodes"][0].update(inputs=[len(g["values"]) - 1]), "before anything defines it"),
        (lambda g: g["values"][2].update(sizes=[3, 3], strides=[3, 1]), "does not have the declared dtype and shape"),
        (lambda g: g.update(version=99), "version 99"),
        (lambda g: g["values"][0].update(dtype="float128"), "unknown dtype"),
        (lambda g: g["nodes"][0]["args"].append(["int", 1]), "arguments, the op takes"),
        (lambda g: g["nodes"][0]["args"].__setitem__(1, ["bogus", 1]), "unknown argument kind"),
        (lambda g: g.update(outputs=[len(g["values"]) + 5]), "names value"),
    ]
    for edit, message in cases:
        with pytest.raises(ValueError, match=message):
            load(_with_graph(data, edit))


def test_a_graph_that_lies_about_shapes_fails_cleanly():
    """Fused kernels trust the declared layouts, so they are checked when the program runs: a file
    declaring other shapes for an intermediate gets an error, not a read out of bounds."""
    with ember.no_grad():
        ep = ember.export.export(lambda x: ((x * 2 + 1).tanh() * 3).exp(), (ember.randn(4, 8),))
    data = ep._program.save_to_bytes()

    def shrink(g):
        for v in g["values"]:
            if v["kind"] == "node":
                v["sizes"], v["strides"] = [64, 8], [8, 1]  # larger than what the ops make
    prog = ember._C._compile.load_program_bytes(_with_graph(data, shrink))
    with pytest.raises(RuntimeError, match="not what the graph declared"):
        prog.run([ember.randn(4, 8)])


def test_the_cpp_example_classifies_with_a_program_exported_from_python(tmp_path):
    import os
    import subprocess
    import sys
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    binary = os.path.join(root, "build", "classify_exported")
    data = "/usr/share/datasets/fashion-mnist"
    if not os.path.exists(binary) or not os.path.isdir(data):
        pytest.skip("needs build/classify_exported (examples on) and Debian's dataset-fashion-mnist")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(root, "python"), os.path.join(root, "build", "python")]))
    model = str(tmp_path / "cnn.ember")
    subprocess.run([sys.executable, os.path.join(root, "examples", "export_cnn.py"), "--out", model, "--steps", "150"],
                   env=env, check=True, capture_output=True, timeout=300)
    out = subprocess.run([binary, model, data], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    accuracy = float(out.stdout.split("test accuracy ")[1].split("%")[0])
    assert accuracy > 60.0, out.stdout


def test_dynamic_batch(tmp_path):
    from ember.export import Dim
    ember.manual_seed(3)
    model = _cnn().eval()
    with ember.no_grad():
        ep = ember.export.export(model, (ember.randn(4, 1, 28, 28),), dynamic_shapes=({0: Dim("batch")},))
    ember.export.save(ep, tmp_path / "m.ember")
    loaded = ember.export.load(tmp_path / "m.ember")
    for n in (1, 3, 4, 9, 17):  # smaller, equal, larger
        x = ember.randn(n, 1, 28, 28)
        with ember.no_grad():
            assert ember.allclose(loaded(x), model(x), rtol=1e-5, atol=1e-6)
    # a statistic over the batch is computed over the batch given (no longer chunks of the example's)
    ep = ember.export.export(lambda x: x - x.mean(0), (ember.randn(4, 3),), dynamic_shapes=({0: Dim("b")},))
    x = ember.randn(11, 3)
    assert ember.allclose(ep(x), x - x.mean(0))


def test_dynamic_batch_and_sequence(tmp_path):
    """GPT-2 with batch and sequence free: the view shapes, slices and the causal mask's sizes are
    polynomials in them (batch*seq, seq^2) in the saved graph, and the program equals eager at
    sizes export never ran."""
    from ember.export import Dim
    ember.manual_seed(5)
    model = _GPT2Logits().eval()
    with ember.no_grad():
        ep = ember.export.export(model, (ember.randint(0, 64, (2, 16)),),
                                 dynamic_shapes={"ids": {0: Dim("batch"), 1: Dim("seq", max=32)}})
    ember.export.save(ep, tmp_path / "gpt.ember")
    with zipfile.ZipFile(tmp_path / "gpt.ember") as z:
        graph = json.loads(z.read("program/graph.json"))
    assert [d["name"] for d in graph["symbols"]] == ["batch", "seq"]
    exprs = {s["expr"] for s in graph["symbolic"]}
    assert {"batch", "seq", "batch*seq"} <= exprs
    loaded = ember.export.load(tmp_path / "gpt.ember")
    for b, t in ((1, 1), (2, 16), (3, 5), (1, 32), (4, 23)):
        ids = ember.randint(0, 64, (b, t))
        with ember.no_grad():
            assert ember.allclose(loaded(ids), model(ids), rtol=1e-4, atol=1e-5), (b, t)
    assert loaded.range_constraints == {"batch": (1, float("inf")), "seq": (1, 32)}
    names = loaded.state_dict
    assert "gpt.lm_head.weight" in names or "gpt.transformer.wte.weight" in names
    own = dict(model.named_parameters())
    assert all(ember.equal(t, own[n]) for n, t in names.items() if n in own)
    with pytest.raises(ValueError, match=r"'seq' is 33 .*\[1, 32\]"):
        loaded(ember.randint(0, 64, (2, 33)))
    with pytest.raises(ValueError, match="must have 2 dims"):
        loaded(ember.randint(0, 64, (2, 3, 4)))


def test_a_dynamic_program_renumbers_one_compilation_per_new_size():
    """From the second new set of sizes on, a loaded program fits its compiled graph's numbers once
    (a grid of compilations around the example, C++ only) and renumbers it per new set of sizes,
    with eager's logits; sizes of 1 (which the fit's grid never had) are compiled."""
    from ember.export import Dim
    ember.manual_seed(6)
    model = _GPT2Logits().eval()
    with ember.no_grad():
        ep = ember.export.export(model, (ember.randint(0, 64, (2, 16)),),
                                 dynamic_shapes={"ids": {0: Dim("batch"), 1: Dim("seq", max=32)}})
        ep(ember.randint(0, 64, (3, 3)))  # (export itself ran two sizes: the template is fitted here)
        before = ep._program.specialisation_stats
        sizes = [(3, 5), (2, 30), (4, 23), (3, 31), (5, 7), (2, 2), (6, 29), (1, 9), (2, 1)]
        for b, t in sizes:
            ids = ember.randint(0, 64, (b, t))
            assert ember.allclose(ep(ids), model(ids), rtol=1e-4, atol=1e-5), (b, t)
    renumbered, compiled, why = ep._program.specialisation_stats
    assert (renumbered - before[0], compiled - before[1], why) == (7, 2, ""), (before, renumbered, compiled, why)


def test_one_sequence_with_a_free_length_exports():
    """An example batch of 1 with a free sequence: export's captures at other lengths narrow the
    example, whose row stride then stayed the example's length along the batch dim of size 1 (read
    as a number of the sizes, it failed the fit); they are fresh row-major tensors now."""
    from ember.export import Dim
    ember.manual_seed(7)
    model = _GPT2Logits().eval()
    with ember.no_grad():
        ep = ember.export.export(model, (ember.randint(0, 64, (1, 16)),), dynamic_shapes={"ids": {1: Dim("seq", max=32)}})
        for t in (3, 16, 29):
            ids = ember.randint(0, 64, (1, t))
            assert ember.allclose(ep(ids), model(ids), rtol=1e-4, atol=1e-5), t


def test_a_range_too_narrow_to_fit_on_compiles_per_size():
    """seq in [2, 4] leaves no room for the grid a square of it needs (three sizes and one past them,
    from 2 up): no template, and each size is compiled as before, the reason kept."""
    from ember.export import Dim
    f = lambda x: (x.unsqueeze(-1) * x.unsqueeze(-2)).sum(-1).tanh()  # noqa: E731 (seq^2 numbers)
    ep = ember.export.export(f, (ember.randn(2, 3),), dynamic_shapes=({1: Dim("seq", min=2, max=4)},))
    for t in (2, 4, 2):
        x = ember.randn(2, t)
        assert ember.allclose(ep(x), f(x), rtol=1e-5, atol=1e-6)
    renumbered, compiled, why = ep._program.specialisation_stats
    assert renumbered == 0 and compiled >= 2 and "too narrow a range" in why, (renumbered, compiled, why)


def test_dynamic_dims_shared_and_checked():
    from ember.export import Dim
    n = Dim("n", min=2, max=50)

    def f(x, y):
        return (x + y).reshape(-1) / x.shape[0]  # a Python number from a size: a symbolic constant
    ep = ember.export.export(f, (ember.randn(4, 3), ember.randn(4, 3)), dynamic_shapes=({0: n}, {0: n}))
    x, y = ember.randn(9, 3), ember.randn(9, 3)
    assert ember.allclose(ep(x, y), f(x, y))
    with pytest.raises(ValueError, match="'n' is 9 in input 0 dim 0 but 5 in input 1 dim 0"):
        ep(x, ember.randn(5, 3))
    with pytest.raises(ValueError, match=r"outside the range it was exported for: \[2, 50\]"):
        ep(ember.randn(1, 3), ember.randn(1, 3))
    with pytest.raises(ValueError, match=r"size \[n, 3\]"):
        ep(ember.randn(9, 4), ember.randn(9, 4))


def test_what_dynamic_shapes_cannot_express():
    from ember.export import Dim

    def branch(x):
        return x * 2 if x.shape[0] > 3 else x + 1
    with pytest.raises(ExportError, match="a branch on one.*(mul.*add|add.*mul)"):
        ember.export.export(branch, (ember.randn(4, 3),), dynamic_shapes=({0: Dim("b")},))

    def inverse(x):
        return x * (1.0 / x.shape[0])
    with pytest.raises(ExportError, match="no integer polynomial fits"):
        ember.export.export(inverse, (ember.randn(4, 3),), dynamic_shapes=({0: Dim("b")},))

    def from_data(x):
        return x + ember.tensor([float(x.shape[0])] * 3)
    with pytest.raises(ExportError, match="made from Python data"):
        ember.export.export(from_data, (ember.randn(4, 3),), dynamic_shapes=({0: Dim("b")},))
    with pytest.raises(ExportError, match="example's size 4 lies outside"):
        ember.export.export(branch, (ember.randn(4, 3),), dynamic_shapes=({0: Dim("b", max=3)},))
    with pytest.raises(ExportError, match="not an argument"):
        ember.export.export(branch, (ember.randn(4, 3),), dynamic_shapes={"y": {0: Dim("b")}})


def test_dynamic_export_leaves_the_module_as_it_was():
    """Export runs the forward at several sizes: buffers it updates are put back."""
    from ember.export import Dim

    class Running(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("total", ember.zeros(3))

        def forward(self, x):
            self.total.add_(x.sum(0))
            return x - self.total
    m = Running()
    ep = ember.export.export(m, (ember.randn(8, 3),), dynamic_shapes=({0: Dim("b")},))
    assert ember.equal(m.total, ember.zeros(3))
    x = ember.randn(5, 3)
    want = x - x.sum(0)
    assert ember.allclose(ep(x), want, rtol=1e-5, atol=1e-6)


def test_tampered_symbolic_sizes(tmp_path):
    from ember.export import Dim
    ep = ember.export.export(lambda x: x.view(-1, 2) * 2, (ember.randn(4, 6),), dynamic_shapes=({0: Dim("b")},))
    ember.export.save(ep, tmp_path / "m.ember")
    with zipfile.ZipFile(tmp_path / "m.ember") as z:
        graph = json.loads(z.read("program/graph.json"))
        constants = z.read("program/constants.safetensors")

    def rewrite(change, match):
        g = json.loads(json.dumps(graph))
        change(g)
        path = tmp_path / "bad.ember"
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("program/graph.json", json.dumps(g))
            z.writestr("program/constants.safetensors", constants)
        with pytest.raises(ValueError, match=match):
            ember.export.load(path)
    rewrite(lambda g: g["symbolic"][0].update(item=999), "not a number of the graph")
    rewrite(lambda g: g["symbolic"][0].update(poly=[[2, 1]]), "at the example sizes")
    rewrite(lambda g: g["symbolic"][0].update(poly=[[1, 9]]), "power")
    rewrite(lambda g: g["symbolic"][0].update(at="elsewhere"), "symbolic size at 'elsewhere'")
    rewrite(lambda g: g["symbols"][0].update(min=7), "range")
    rewrite(lambda g: g.update(symbolic=[s for s in g["symbolic"] if s["at"] != "size" or s["item"] != g["inputs"][0]]),
            "not the size of any input")
    rewrite(lambda g: g["symbolic"].append({"at": "arg", "item": 0, "index": 1, "element": 0,
                                           "poly": [[1 << 62, 2]]}), "overflow|example")


def test_load_onto_a_device(tmp_path):
    ember.manual_seed(4)
    model = _GPT2Logits().eval()
    ids = ember.randint(0, 64, (2, 16))
    with ember.no_grad():
        ep = ember.export.export(model, (ids,))
        want = model(ids)
    ember.export.save(ep, tmp_path / "m.ember")
    on_cpu = ember.export.load(tmp_path / "m.ember", device="cpu")
    assert ember.allclose(on_cpu(ids), want, rtol=1e-5, atol=1e-6)
    if not ember.cuda.is_available():
        pytest.skip("no GPU here: the CUDA load is written but has not run")
    on_gpu = ember.export.load(tmp_path / "m.ember", device="cuda")
    assert ember.allclose(on_gpu(ids.cuda()).cpu(), want, rtol=1e-3, atol=1e-4)


def test_python_custom_ops_are_saved_by_name(tmp_path):
    """A Python custom op that writes nothing is saved as its name and arguments; a process that
    defines the op loads and runs it (dynamic sizes too); one that does not is told to import it."""
    import subprocess
    import sys
    from ember.export import Dim
    from ember.library import custom_op

    @custom_op("exporttest::scaled", mutates_args=())
    def scaled(x, scale: float, mode: str = "sin"):
        return (x.sin() if mode == "sin" else x.cos()) * scale

    def f(x):
        return scaled(x, 2.0, mode="cos") + scaled(x, 0.5)
    ep = ember.export.export(f, (ember.randn(3, 2),), dynamic_shapes=({0: Dim("n")},))
    path = tmp_path / "m.ember"
    ember.export.save(ep, path)
    loaded = ember.export.load(path)
    x = ember.randn(5, 2)
    assert ember.allclose(loaded(x), f(x))
    assert "exporttest::scaled" in loaded.graph
    # the child imports this process's ember: its package and its extension (gpu/python on a GPU machine)
    here = [os.path.dirname(os.path.dirname(m.__file__)) for m in (ember, ember._C)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(here))
    out = subprocess.run([sys.executable, "-c", f"import ember; ember.export.load({str(path)!r})"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "exporttest::scaled" in out.stderr and "import the module" in out.stderr


def _dynamic_corpus():
    from ember.export import Dim
    b, t = Dim("batch"), Dim("seq", min=2, max=40)
    ember.manual_seed(21)
    return [  # (name, module (eval), example, dynamic_shapes, other sizes to run)
        ("lstm_batch", nn.LSTM(6, 8, num_layers=2, batch_first=True), ember.randn(3, 5, 6), ({0: b},), [(1, 5, 6), (6, 5, 6)]),
        ("gru_batch", nn.GRU(6, 8, batch_first=True), ember.randn(3, 5, 6), ({0: b},), [(2, 5, 6), (7, 5, 6)]),
        ("mha", nn.MultiheadAttention(8, 2, batch_first=True), ember.randn(2, 7, 8), ({0: b, 1: t},) * 3,
         [(1, 3, 8), (4, 20, 8)]),
        ("transformer", nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True), ember.randn(2, 9, 8),
         ({0: b, 1: t},), [(1, 2, 8), (3, 33, 8)]),
        ("conv_pool_upsample", nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                                             nn.Upsample(scale_factor=2, mode="bilinear"), nn.AvgPool2d(2)),
         ember.randn(2, 2, 6, 6), ({0: b},), [(1, 2, 6, 6), (5, 2, 6, 6)]),
        ("conv1d_seq", nn.Sequential(nn.Conv1d(3, 5, 3, padding=1), nn.GELU(), nn.Conv1d(5, 2, 1)),
         ember.randn(2, 3, 12), ({0: b, 2: t},), [(1, 3, 4), (3, 3, 31)]),
        ("embedding_mean", nn.Sequential(nn.Embedding(20, 6), nn.LayerNorm(6)), ember.randint(0, 20, (2, 8)),
         ({0: b, 1: t},), [(1, 3), (4, 17)]),
    ]


@pytest.mark.parametrize("name,module,example,dynamic,sizes", _dynamic_corpus(), ids=[c[0] for c in _dynamic_corpus()])
def test_dynamic_shapes_over_library_modules(name, module, example, dynamic, sizes):
    """Library modules exported with dynamic dims run at other sizes with eager's outputs."""
    module.eval()
    args = (example,) * len(dynamic)
    with ember.no_grad():
        ep = ember.export.export(module, args, dynamic_shapes=dynamic)
        for shape in sizes:
            x = ember.randint(0, 20, shape) if example.dtype == ember.int64 else ember.randn(*shape)
            got, want = ep(*(x,) * len(dynamic)), module(*(x,) * len(dynamic))
            got, want = (got[0], want[0]) if isinstance(want, tuple) else (got, want)
            assert got.shape == want.shape and ember.allclose(got, want, rtol=1e-4, atol=1e-5), (name, shape)
