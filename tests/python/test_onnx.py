"""ember.onnx.export (python/ember/onnx/): the seeds' MLP and CNN written as ONNX and run by
onnxruntime (in .venv-ort, which scripts/setup.sh makes) with the same outputs as ember; clear
errors for what is not mapped yet."""
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.nn as nn

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
ORT = os.path.join(ROOT, ".venv-ort", "bin", "python")

_RUN = """
import sys, numpy as np, onnxruntime as ort
sess = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
x = np.load(sys.argv[2])
out = sess.run(None, {sess.get_inputs()[0].name: x})[0]
np.save(sys.argv[3], out)
print(sess.get_inputs()[0].name, sess.get_outputs()[0].name)
"""


def _onnxruntime(path, x, tmp_path):
    if not os.path.exists(ORT) or subprocess.run([ORT, "-c", "import onnxruntime"], capture_output=True).returncode:
        pytest.skip("onnxruntime is not installed in .venv-ort (scripts/setup.sh installs it)")
    np.save(tmp_path / "x.npy", x)
    out = subprocess.run([ORT, "-c", _RUN, str(path), str(tmp_path / "x.npy"), str(tmp_path / "y.npy")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return np.load(tmp_path / "y.npy"), out.stdout.split()


def _mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Dropout(0.2), nn.Linear(128, 64),
                         nn.Tanh(), nn.Linear(64, 10), nn.Softmax(dim=1))


def _cnn():
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.GELU(), nn.Flatten(),
                         nn.Linear(32 * 7 * 7, 10))


@pytest.mark.parametrize("make", [_mlp, _cnn], ids=["mlp", "cnn"])
def test_onnxruntime_gives_ember_outputs(tmp_path, make):
    ember.manual_seed(0)
    model = make()
    model.train()  # export puts it in eval (torch's default) and back
    x = ember.randn(4, 1, 28, 28)
    path = tmp_path / "model.onnx"
    ember.onnx.export(model, (x,), str(path), input_names=["images"], output_names=["scores"])
    assert model.training
    model.eval()
    with ember.no_grad():
        want = model(x).numpy()
    got, names = _onnxruntime(path, x.numpy(), tmp_path)
    assert names == ["images", "scores"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_what_is_not_mapped_is_an_error(tmp_path):
    with pytest.raises(NotImplementedError, match="'cumsum' has no ONNX mapping"):
        ember.onnx.export(lambda x: x.cumsum(0), (ember.ones(3),), str(tmp_path / "m.onnx"))
    with pytest.raises(ValueError, match="dynamic_axes names 'nope'"):
        ember.onnx.export(_mlp(), (ember.ones(1, 1, 28, 28),), str(tmp_path / "m.onnx"),
                          dynamic_axes={"nope": {0: "batch"}})
    assert not (tmp_path / "m.onnx").exists()
    assert not ember.onnx.is_in_onnx_export()


@pytest.mark.parametrize("t", [16, 128], ids=["math_attention", "flash_attention"])
def test_gpt2_logits_in_onnxruntime(tmp_path, t):
    from ember.models import GPT2Config, GPT2LMHeadModel

    class Logits(nn.Module):
        def __init__(self):
            super().__init__()
            self.gpt = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=128, n_embd=32, n_layer=2, n_head=2))

        def forward(self, ids):
            return self.gpt(ids).logits
    ember.manual_seed(1)
    model = Logits().eval()
    ids = ember.randint(0, 64, (2, t))
    path = tmp_path / "gpt2.onnx"
    ember.onnx.export(model, (ids,), str(path))
    with ember.no_grad():
        want = model(ids).numpy()
    got, _ = _onnxruntime(path, ids.numpy(), tmp_path)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


_RUN_MANY = """
import sys, numpy as np, onnxruntime as ort
sess = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
print([i.shape for i in sess.get_inputs()], [o.shape for o in sess.get_outputs()])
for k in range(2, len(sys.argv)):
    np.save(sys.argv[k] + ".out.npy", sess.run(None, {sess.get_inputs()[0].name: np.load(sys.argv[k])})[0])
"""


def _onnxruntime_many(path, xs, tmp_path):
    if not os.path.exists(ORT) or subprocess.run([ORT, "-c", "import onnxruntime"], capture_output=True).returncode:
        pytest.skip("onnxruntime is not installed in .venv-ort (scripts/setup.sh installs it)")
    files = []
    for i, x in enumerate(xs):
        files.append(str(tmp_path / f"x{i}.npy"))
        np.save(files[-1], x)
    out = subprocess.run([ORT, "-c", _RUN_MANY, str(path), *files], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return [np.load(f + ".out.npy") for f in files], out.stdout


def test_dynamic_axes_cnn_batch(tmp_path):
    ember.manual_seed(2)
    model = _cnn().eval()
    path = tmp_path / "cnn.onnx"
    ember.onnx.export(model, (ember.randn(4, 1, 28, 28),), str(path), input_names=["images"], output_names=["scores"],
                      dynamic_axes={"images": {0: "batch"}, "scores": {0: "batch"}})
    xs = [ember.randn(n, 1, 28, 28) for n in (1, 7)]
    got, shapes = _onnxruntime_many(path, [x.numpy() for x in xs], tmp_path)
    assert "['batch', 1, 28, 28]" in shapes and "['batch', 10]" in shapes
    for x, g in zip(xs, got):
        with ember.no_grad():
            np.testing.assert_allclose(g, model(x).numpy(), rtol=1e-4, atol=1e-5)


def test_dynamic_axes_gpt2_batch_and_sequence(tmp_path):
    """Reshape shapes, position ids, slices and the causal mask computed from the input's shape."""
    from ember.models import GPT2Config, GPT2LMHeadModel

    class Logits(nn.Module):
        def __init__(self):
            super().__init__()
            self.gpt = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=160, n_embd=32, n_layer=2, n_head=2))

        def forward(self, ids):
            return self.gpt(ids).logits
    ember.manual_seed(1)
    model = Logits().eval()
    path = tmp_path / "gpt2.onnx"
    ember.onnx.export(model, (ember.randint(0, 64, (2, 16)),), str(path), input_names=["ids"], output_names=["logits"],
                      dynamic_axes={"ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}})
    xs = [ember.randint(0, 64, (b, t)) for b, t in ((1, 5), (3, 16), (2, 40), (1, 150))]  # math and flash sizes
    got, shapes = _onnxruntime_many(path, [x.numpy() for x in xs], tmp_path)
    assert "['batch', 'seq']" in shapes
    for x, g in zip(xs, got):
        with ember.no_grad():
            np.testing.assert_allclose(g, model(x).numpy(), rtol=1e-4, atol=1e-4)


def test_resnet_and_lstm_text_models_in_onnxruntime(tmp_path):
    """More of what models are made of: residual blocks with BatchNorm, average and adaptive
    pooling, nearest and bilinear upsampling; an embedding, an LSTM and a GRU (unrolled over their steps),
    select, cat, mean/amax over a dim, clamp, leaky_relu, silu. Dynamic batch for both."""
    import ember.nn.functional as F

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
            self.c2, self.b2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

        def forward(self, x):
            return F.relu(self.b2(self.c2(F.relu(self.b1(self.c1(x))))) + x)

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem, self.block = nn.Conv2d(3, 8, 3, padding=1), Block(8)
            self.pool, self.fc = nn.AdaptiveAvgPool2d(1), nn.Linear(16, 10)

        def forward(self, x):
            x = F.avg_pool2d(self.block(F.relu(self.stem(x))), 2)
            near = F.interpolate(x, scale_factor=2, mode="nearest")
            smooth = F.interpolate(x, size=(16, 16), mode="bilinear", align_corners=False)
            both = ember.cat([near, smooth], 1)
            return self.fc(self.pool(both).flatten(1)) + F.adaptive_avg_pool2d(both, 4).mean((2, 3)).sum(1, keepdim=True)

    class Text(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed, self.lstm, self.fc = nn.Embedding(50, 16), nn.LSTM(16, 32, batch_first=True), nn.Linear(32, 4)
            self.gru = nn.GRU(32, 8, batch_first=True)

        def forward(self, ids):
            out, (h, c) = self.lstm(self.embed(ids))
            return (self.fc(out.mean(1)) + self.fc(h[-1]).clamp(-1, 1) + F.leaky_relu(self.fc(out[:, -1]), 0.1)
                    + F.silu(self.fc(out.amax(1))) + self.gru(out)[0].mean((1, 2)).unsqueeze(1))

    ember.manual_seed(4)
    for (model, make), opset in zip([(ResNet(), lambda n: ember.randn(n, 3, 16, 16)),
                                     (Text(), lambda n: ember.randint(0, 50, (n, 7)))], (17, 18)):
        for m in model.modules():  # BatchNorm with statistics of its own
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
        model.eval()
        path = tmp_path / f"{type(model).__name__}.onnx"
        ember.onnx.export(model, (make(2),), str(path), input_names=["x"], dynamic_axes={"x": {0: "batch"}},
                          opset_version=opset)  # (18 takes the reductions' axes as inputs)
        xs = [make(1), make(5)]
        got, _ = _onnxruntime_many(path, [x.numpy() for x in xs], tmp_path)
        for x, g in zip(xs, got):
            with ember.no_grad():
                np.testing.assert_allclose(g, model(x).numpy(), rtol=1e-4, atol=1e-4)
