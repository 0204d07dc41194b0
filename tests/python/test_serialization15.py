"""ember.load of files torch.save wrote holding more than tensors (NumPy arrays, argparse
Namespaces, whole modules): refused by default (weights_only=True, as torch >= 2.6) with torch's
message naming the global, loaded with weights_only=False or once the globals are allowlisted
(ember.serialization.add_safe_globals / safe_globals). Files are written by torch (skipped without it)."""
import argparse
import collections
import io
import pickle

import numpy as np
import pytest

import ember
from ember import serialization

torch = pytest.importorskip("torch", reason="PyTorch not installed: checkpoints written by torch.save")


@pytest.fixture(autouse=True)
def _clean_safe_globals():
    serialization.clear_safe_globals()
    yield
    serialization.clear_safe_globals()


def torch_file(obj):
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def test_numpy_and_namespace_refused_by_default_with_torch_message(tmp_path):
    path = tmp_path / "ckpt.pt"
    path.write_bytes(torch_file({"arr": np.arange(4.0), "w": torch.ones(2)}))
    with pytest.raises(pickle.UnpicklingError) as info:
        ember.load(path)
    msg = str(info.value)
    assert "Weights only load failed" in msg and "weights_only" in msg
    assert "Unsupported global: GLOBAL numpy" in msg and "add_safe_globals" in msg
    with pytest.raises(pickle.UnpicklingError, match="argparse.Namespace"):
        ember.load(io.BytesIO(torch_file({"args": argparse.Namespace(lr=0.1)})))


def test_weights_only_false_loads_everything(tmp_path):
    lin = torch.nn.Linear(3, 2)
    obj = {"arr": np.arange(6, dtype=np.int32).reshape(2, 3), "args": argparse.Namespace(lr=0.1, name="x"),
           "model": lin, "param": torch.nn.Parameter(torch.arange(3.0)), "half": torch.ones(4, dtype=torch.float16)[1:],
           "bf16": torch.tensor([1.5, -2.25], dtype=torch.bfloat16), "dtype": torch.float64, "size": torch.Size([2, 3]),
           "device": torch.device("cpu"), "set": {1, 2}, "od": collections.OrderedDict(a=1)}
    base = torch.arange(6.0)
    obj["shared_a"], obj["shared_b"] = base[1:4], base.view(2, 3)
    path = tmp_path / "full.pt"
    path.write_bytes(torch_file(obj))
    for source in (path, io.BytesIO(path.read_bytes())):
        d = ember.load(source, weights_only=False)
        np.testing.assert_array_equal(d["arr"], obj["arr"])
        assert d["args"].lr == 0.1 and d["args"].name == "x"
        assert isinstance(d["model"], ember.nn.Linear) and d["model"].in_features == 3
        np.testing.assert_array_equal(d["model"].weight.detach().numpy(), lin.weight.detach().numpy())
        x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
        np.testing.assert_allclose(d["model"](ember.tensor(x)).detach().numpy(),
                                   lin(torch.tensor(x)).detach().numpy(), rtol=1e-6)
        assert isinstance(d["param"], ember.nn.Parameter) and d["param"].requires_grad
        assert d["half"].dtype == ember.float16 and d["half"].tolist() == [1.0, 1.0, 1.0]
        assert d["bf16"].dtype == ember.bfloat16 and d["bf16"].float().tolist() == [1.5, -2.25]
        assert d["dtype"] == ember.float64 and d["size"] == ember.Size([2, 3]) and d["device"] == ember.device("cpu")
        assert d["set"] == {1, 2} and d["od"] == collections.OrderedDict(a=1)
        assert d["shared_a"].tolist() == [1.0, 2.0, 3.0] and d["shared_b"].shape == (2, 3)
        d["shared_b"][0, 1] = 42.0  # views of one storage share memory, as in torch
        assert d["shared_a"][0].item() == 42.0


def test_safe_globals_allow_listed_classes():
    data = torch_file({"args": argparse.Namespace(lr=0.5), "w": torch.ones(2)})
    assert serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(data)) == ["argparse.Namespace"]
    with serialization.safe_globals([argparse.Namespace]):
        assert argparse.Namespace in serialization.get_safe_globals()
        d = ember.load(io.BytesIO(data))
        assert d["args"].lr == 0.5 and d["w"].tolist() == [1.0, 1.0]
        assert serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(data)) == []
    assert serialization.get_safe_globals() == []
    with pytest.raises(pickle.UnpicklingError):
        ember.load(io.BytesIO(data))
    serialization.add_safe_globals([argparse.Namespace])
    assert ember.load(io.BytesIO(data))["args"].lr == 0.5
    serialization.clear_safe_globals()
    assert serialization.get_safe_globals() == []


def test_safe_globals_numpy_and_torch_module_names():
    # numpy 2 writes numpy._core.*, numpy 1 numpy.core.*: allowlisting either object works;
    # torch.nn.modules.linear.Linear is allowed through ember's Linear.
    data = torch_file({"arr": np.arange(3.0), "model": torch.nn.Linear(2, 1)})
    allowed = [np.core.multiarray._reconstruct, np.ndarray, np.dtype, ember.nn.Linear]
    allowed += [type(np.dtype("float64"))] if type(np.dtype("float64")) is not np.dtype else []
    with serialization.safe_globals(allowed):
        d = ember.load(io.BytesIO(data))
    assert d["arr"].tolist() == [0.0, 1.0, 2.0] and isinstance(d["model"], ember.nn.Linear)


def test_plain_state_dicts_still_load_by_default():
    sd = torch.nn.Linear(3, 2).state_dict()
    d = ember.load(io.BytesIO(torch_file(sd)))
    assert list(d) == ["weight", "bias"] and d["weight"].shape == (2, 3)


def test_ember_pickled_archive_under_weights_only():
    model = ember.nn.Sequential(ember.nn.Linear(2, 2))
    buf = io.BytesIO()
    ember.save({"m": model}, buf)
    with pytest.raises(pickle.UnpicklingError, match="Sequential"):
        ember.load(io.BytesIO(buf.getvalue()))
    assert serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(buf.getvalue())) == [
        "ember.nn.modules.container.Sequential", "ember.nn.modules.linear.Linear"]
    with serialization.safe_globals([ember.nn.Sequential]):
        with pytest.raises(pickle.UnpicklingError, match="GLOBAL ember.nn.modules.linear.Linear"):
            ember.load(io.BytesIO(buf.getvalue()))
    with serialization.safe_globals([ember.nn.Sequential, ember.nn.Linear]):
        back = ember.load(io.BytesIO(buf.getvalue()))
    assert ember.equal(back["m"][0].weight, model[0].weight) and back["m"][0].weight.requires_grad
    back = ember.load(io.BytesIO(buf.getvalue()), weights_only=False)
    assert ember.equal(back["m"][0].weight, model[0].weight)
    buf = io.BytesIO()
    ember.save({1, 2}, buf)  # builtins.set is allowed by default
    buf.seek(0)
    assert ember.load(buf) == {1, 2}


def test_environment_overrides_like_torch(monkeypatch):
    data = torch_file({"args": argparse.Namespace(lr=0.5)})
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    assert ember.load(io.BytesIO(data))["args"].lr == 0.5  # the default becomes weights_only=False
    monkeypatch.delenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")
    monkeypatch.setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(pickle.UnpicklingError):
        ember.load(io.BytesIO(data), weights_only=False)
