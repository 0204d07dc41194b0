"""ember.export (python/ember/export.py, src/compile/program_file.cpp): exported programs equal eager
on new inputs after a file round trip (MLP, CNN, a GPT-2 wrapper); clear errors for what cannot be
exported, for inputs of another shape, and for damaged or tampered files."""
import io
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
    with pytest.raises(NotImplementedError, match="dim 0"):
        ember.export.export(m, (ember.randn(2, 1, 28, 28),), dynamic_shapes={"x": {1: "channels"}})
    from ember.library import custom_op

    @custom_op("exporttest::twice", mutates_args=())
    def twice(x):
        return x * 2
    with pytest.raises(ExportError, match="exporttest::twice.*opaque"):
        ember.export.export(lambda x: twice(x) + 1, (ember.ones(3),))
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
        (op("system"), "'system', which is not an ember op"),
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
    for n in (1, 3, 4, 9, 17):  # smaller, equal, larger, not a multiple of the exported 4
        x = ember.randn(n, 1, 28, 28)
        with ember.no_grad():
            assert ember.allclose(loaded(x), model(x), rtol=1e-5, atol=1e-6)
    with pytest.raises(NotImplementedError, match="only a dynamic batch"):
        ember.export.export(model, (ember.randn(4, 1, 28, 28),), dynamic_shapes=({2: Dim("h")},))
    # rows that see each other (a batch statistic) cannot have a dynamic batch
    with pytest.raises(ExportError, match="each batch row on its own"):
        ember.export.export(lambda x: x - x.mean(0), (ember.randn(4, 3),), dynamic_shapes=({0: Dim("b")},))


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
