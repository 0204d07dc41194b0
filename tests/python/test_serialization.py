"""ember.save / ember.load: round trips of nested containers, paths and file objects, errors,
and interop with torch's .pt files in both directions (when torch is installed)."""
import collections
import io
import os
import pathlib

import numpy as np
import pytest

import ember


def _torch():
    return pytest.importorskip("torch", reason="PyTorch not installed: differential test skipped")


def assert_same(a, b):
    """Structural equality with tensors compared by dtype, shape and values."""
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, ember.Tensor):
        assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape)
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    elif isinstance(a, dict):
        assert list(a.keys()) == list(b.keys())
        for k in a:
            assert_same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    else:
        assert a == b


def nested():
    return {
        "epoch": 3,
        "loss": 0.25,
        "flag": True,
        "nothing": None,
        "name": "run-1 ✓",
        "weights": ember.arange(12, dtype=ember.float32).reshape(3, 4),
        "ints": ember.tensor([1, -2, 3], dtype=ember.int64),
        "mask": ember.tensor([True, False]),
        "list": [1, [2.5, "x"], (ember.ones(2), None)],
        "tuple": (1, 2),
        7: "int key",
        "empty": {},
    }


def test_round_trip_path(tmp_path):
    obj = nested()
    ember.save(obj, tmp_path / "ckpt.pt")  # os.PathLike
    out = ember.load(str(tmp_path / "ckpt.pt"))
    assert_same(obj, out)


def test_round_trip_file_objects(tmp_path):
    obj = nested()
    buf = io.BytesIO()
    ember.save(obj, buf)
    buf.seek(0)
    assert_same(obj, ember.load(buf))
    with open(tmp_path / "f.pt", "wb") as f:
        ember.save(obj, f)
    with open(tmp_path / "f.pt", "rb") as f:
        assert_same(obj, ember.load(f))


def test_ordered_dict_size_and_namedtuple_become_plain():
    Point = collections.namedtuple("Point", "x y")
    od = collections.OrderedDict([("z", 1), ("a", 2), ("m", 3)])
    buf = io.BytesIO()
    ember.save({"od": od, "size": ember.Size([2, 3]), "pt": Point(1, 2)}, buf)
    buf.seek(0)
    out = ember.load(buf)
    assert list(out["od"].keys()) == ["z", "a", "m"]  # order kept
    assert out["size"] == (2, 3) and type(out["size"]) is tuple
    assert out["pt"] == (1, 2) and type(out["pt"]) is tuple


def test_tensor_views_and_shared_storage_round_trip():
    base = ember.arange(6, dtype=ember.float64).reshape(2, 3)
    buf = io.BytesIO()
    ember.save({"t": base.t(), "row": base[1]}, buf)
    buf.seek(0)
    out = ember.load(buf)
    np.testing.assert_array_equal(out["t"].numpy(), base.numpy().T)
    np.testing.assert_array_equal(out["row"].numpy(), [3.0, 4.0, 5.0])


def test_unsupported_type_names_it(tmp_path):
    class Thing:
        pass

    with pytest.raises(TypeError, match="Thing"):
        ember.save({"a": [1, Thing()]}, tmp_path / "bad.pt")
    assert not (tmp_path / "bad.pt").exists()  # nothing half-written
    # Objects outside the checkpoint types but picklable are pickled, as torch.save does.
    buf = io.BytesIO()
    ember.save({1, 2}, buf)
    buf.seek(0)
    assert ember.load(buf) == {1, 2}


def test_recursive_container_is_an_error_not_a_crash():
    a = []
    a.append(a)
    with pytest.raises(TypeError, match="nested"):
        ember.save(a, io.BytesIO())


def test_bad_f_and_text_mode(tmp_path):
    with pytest.raises(TypeError, match="path"):
        ember.save(1, 12)
    with pytest.raises(TypeError, match="path"):
        ember.load(12)
    (tmp_path / "x.pt").write_bytes(b"")
    with open(tmp_path / "x.pt", "r") as f:
        with pytest.raises(TypeError, match="binary"):
            ember.load(f)


def test_save_is_atomic_overwrite(tmp_path):
    p = tmp_path / "c.pt"
    ember.save({"v": 1}, p)
    ember.save({"v": 2}, p)
    assert ember.load(p) == {"v": 2}
    assert sorted(os.listdir(tmp_path)) == ["c.pt"]  # no temp files left behind


def test_load_garbage_is_a_clear_error(tmp_path):
    p = tmp_path / "junk.pt"
    p.write_bytes(b"not a zip file at all")
    with pytest.raises(Exception) as e:
        ember.load(p)
    assert not isinstance(e.value, (SystemError, MemoryError))
    with pytest.raises(Exception):
        ember.load(tmp_path / "missing.pt")


def test_map_location_forms():
    buf = io.BytesIO()
    ember.save({"w": ember.ones(2)}, buf)
    for loc in ("cpu", ember.device("cpu"), {"cuda:0": "cpu"}, lambda storage, loc: storage):
        buf.seek(0)
        out = ember.load(buf, map_location=loc)
        np.testing.assert_array_equal(out["w"].numpy(), [1.0, 1.0])
    seen = []
    buf.seek(0)
    ember.load(buf, map_location=lambda t, loc: seen.append(loc))
    assert seen == ["cpu"]


def test_parameter_saved_as_tensor():
    nn = pytest.importorskip("ember.nn")
    if not hasattr(nn, "Parameter"):
        pytest.skip("ember.nn.Parameter not bound yet")
    p = nn.Parameter(ember.ones(3))
    buf = io.BytesIO()
    ember.save({"p": p}, buf)
    buf.seek(0)
    out = ember.load(buf)["p"]
    assert isinstance(out, ember.Tensor)
    np.testing.assert_array_equal(out.numpy(), [1.0, 1.0, 1.0])


def test_torch_loads_ember_file(tmp_path):
    torch = _torch()
    obj = nested()
    ember.save(obj, tmp_path / "e.pt")
    t = torch.load(tmp_path / "e.pt")
    assert t["epoch"] == 3 and t["loss"] == 0.25 and t["flag"] is True and t["nothing"] is None
    assert t["name"] == "run-1 ✓" and t[7] == "int key" and t["tuple"] == (1, 2) and t["empty"] == {}
    assert t["weights"].dtype == torch.float32
    np.testing.assert_array_equal(t["weights"].numpy(), obj["weights"].numpy())
    assert t["ints"].dtype == torch.int64 and t["ints"].tolist() == [1, -2, 3]
    assert t["mask"].dtype == torch.bool and t["mask"].tolist() == [True, False]
    assert t["list"][1] == [2.5, "x"] and t["list"][2][1] is None
    assert t["list"][2][0].tolist() == [1.0, 1.0]
    # torch's weights_only loader accepts ember's files (only allowlisted globals are used). Its
    # 1.13 version cannot read Python floats (opcode BINFLOAT) even from torch's own files, so
    # this part uses a float-free object.
    ember.save({"w": obj["weights"], "n": [1, "a", None, True]}, tmp_path / "w.pt")
    t2 = torch.load(tmp_path / "w.pt", weights_only=True)
    assert t2["n"] == [1, "a", None, True] and t2["w"].shape == (3, 4)


def test_ember_loads_torch_file(tmp_path):
    torch = _torch()
    model = torch.nn.Linear(3, 2)
    with torch.no_grad():
        model.weight.copy_(torch.arange(6.0).reshape(2, 3))
        model.bias.fill_(0.5)
    torch.save({"model": model.state_dict(), "step": 10, "lr": 1e-3, "names": ["a", "b"],
                "half": torch.ones(2, dtype=torch.float16), "t": torch.arange(6).reshape(2, 3).t(),
                "param": torch.nn.Parameter(torch.ones(2))}, tmp_path / "t.pt")
    out = ember.load(tmp_path / "t.pt")
    assert out["step"] == 10 and out["lr"] == 1e-3 and out["names"] == ["a", "b"]
    assert list(out["model"].keys()) == ["weight", "bias"]
    np.testing.assert_array_equal(out["model"]["weight"].numpy(), np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(out["model"]["bias"].numpy(), [0.5, 0.5])
    assert out["half"].dtype == ember.float16
    np.testing.assert_array_equal(out["t"].numpy(), np.arange(6).reshape(2, 3).T)
    assert out["param"].requires_grad  # a saved nn.Parameter loads as a leaf that requires grad, as in torch
    np.testing.assert_array_equal(out["param"].detach().numpy(), [1.0, 1.0])
    # and through a file object
    buf = io.BytesIO(pathlib.Path(tmp_path / "t.pt").read_bytes())
    assert ember.load(buf)["step"] == 10


def test_torch_file_with_arbitrary_object_is_refused(tmp_path):
    torch = _torch()
    torch.save({"fn": collections.defaultdict(int)}, tmp_path / "obj.pt")
    with pytest.raises(Exception, match="collections.defaultdict"):
        ember.load(tmp_path / "obj.pt")
    # torch 2.x's weights-only allowlist has Counter (and set, complex, bytearray): so does ember's
    torch.save({"fn": collections.Counter(a=1)}, tmp_path / "counter.pt")
    assert ember.load(tmp_path / "counter.pt") == {"fn": collections.Counter(a=1)}


def test_whole_module_save_and_load(tmp_path):
    """torch.save(model) pickles the object; ember does the same, and weights_only refuses it."""
    import pickle as _pickle
    from ember import nn

    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    path = tmp_path / "model.pth"
    ember.save(model, path)
    loaded = ember.load(path, weights_only=False)  # torch >= 2.6: whole objects need the opt-out
    assert isinstance(loaded, nn.Sequential) and repr(loaded) == repr(model)
    x = ember.ones(1, 3)
    assert ember.equal(loaded(x), model(x))
    with pytest.raises(_pickle.UnpicklingError, match="Weights only load failed"):
        ember.load(path, weights_only=True)
    import io
    buf = io.BytesIO()
    ember.save({"model": model, "step": 3}, buf)
    buf.seek(0)
    back = ember.load(buf, weights_only=False)
    assert back["step"] == 3 and ember.equal(back["model"][0].weight, model[0].weight)


def test_torch_parameter_keeps_requires_grad(tmp_path, torch_ref):
    path = tmp_path / "p.pt"
    torch_ref.save({"w": torch_ref.nn.Parameter(torch_ref.ones(2)), "t": torch_ref.ones(2, requires_grad=True),
                    "plain": torch_ref.ones(2)}, path)
    back = ember.load(path)
    assert back["w"].requires_grad and back["t"].requires_grad and not back["plain"].requires_grad
    assert back["w"].is_leaf


def test_map_location_cuda_without_gpu_says_so(tmp_path):
    if ember.cuda.is_available():
        pytest.skip("this machine has a GPU: map_location='cuda' works here (test_cuda16_train covers it)")
    path = tmp_path / "t.pt"
    ember.save({"a": ember.ones(1)}, path)
    with pytest.raises(RuntimeError, match="CUDA device but ember.cuda.is_available\\(\\) is False"):
        ember.load(path, map_location="cuda")
    assert ember.load(path, map_location="cpu")["a"].tolist() == [1.0]
