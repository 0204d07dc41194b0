"""ember.save / ember.load: checkpoints in PyTorch's .pt format (a zip archive holding a pickle
of the object and one entry per tensor storage), so torch.load reads ember's files and
ember.load reads torch's. The format work is ember's C++ library (include/ember/serialize/):
this module only accepts torch's argument forms (paths or file objects, map_location).

What can be saved is what torch.load(weights_only=True) reads back: None, bool, int, float, str,
tensors (an nn.Parameter is saved as its tensor), and lists, tuples and dicts of those
(OrderedDict keeps its order; ember.Size and namedtuples become tuples). Loading such a file
never runs code.

Anything else (a whole nn.Module, an object of a user's class: `torch.save(model, "model.pth")`)
is saved as torch saves it, by pickling the object: the same zip layout with an
`ember_pickle` marker entry, tensors pickled by value.

Loading follows torch >= 2.6: weights_only=True by default. Data-only checkpoints go through the
C++ reader; a file naming other globals (NumPy arrays, argparse.Namespace, a pickled module) is
read by ember/_torch_unpickler.py, which resolves only the allowlist plus the globals given to
add_safe_globals / safe_globals, and otherwise raises torch's "Weights only load failed" error
naming the global. weights_only=False unpickles everything (it can run code: trusted files only).
"""
import io
import os
import pickle
import tempfile
import zipfile

from . import _C

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "get_unsafe_globals_in_checkpoint"]


# ---- the weights-only allowlist (torch.serialization's safe globals API) -------------------
_safe_globals_list = []


def add_safe_globals(safe_globals):
    """Allows these classes/functions (or (object, "module.name") pairs) in weights_only loads."""
    _safe_globals_list.extend(safe_globals)


def get_safe_globals():
    return list(_safe_globals_list)


def clear_safe_globals():
    _safe_globals_list.clear()


class safe_globals:
    """Context manager: the given globals are allowed in weights_only loads inside the block."""

    def __init__(self, safe_globals):
        self.safe_globals = list(safe_globals)

    def __enter__(self):
        self._saved = list(_safe_globals_list)
        _safe_globals_list.extend(self.safe_globals)

    def __exit__(self, *exc):
        _safe_globals_list[:] = self._saved
        return False


def get_unsafe_globals_in_checkpoint(f):
    """The 'module.name' globals a checkpoint refers to that a weights_only load would refuse."""
    from . import _torch_unpickler as tu
    data = _read_all(f)
    safe = tu.safe_global_names(_safe_globals_list)
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        ember_archive = _PICKLE_MARKER in z.namelist()
    out = []
    for full in tu.globals_in(data):
        module, _, name = full.rpartition(".")
        if full in safe or tu._numpy_alias(full) in safe or tu._torch_safe_global(module, name) is not None:
            continue
        if ember_archive and (full in _EMBER_TENSOR_GLOBALS or tu._numpy_alias(full) in _EMBER_TENSOR_GLOBALS):
            continue
        out.append(full)
    return out


def _read_all(f):
    if _is_path(f):
        with open(os.fsdecode(f), "rb") as fh:
            return fh.read()
    data = f.read()
    if isinstance(data, str):
        raise TypeError("ember.load: the file object must be opened in binary mode ('rb')")
    return bytes(data)


def _is_path(f):
    return isinstance(f, (str, bytes, os.PathLike))


def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Saves obj to f, a path (written atomically: a temporary file renamed over the target) or
    a binary file object with write(). pickle_module/pickle_protocol are accepted for torch
    compatibility; the file is always torch's zip format with a protocol 2 pickle."""
    if not _is_path(f) and not hasattr(f, "write"):
        raise TypeError("ember.save: f must be a path (str or os.PathLike) or a binary file object "
                        f"with write(), got {type(f).__name__}")
    try:
        if _is_path(f):
            _C._save_to_path(obj, os.fsdecode(f))
        else:
            f.write(_C._save_to_bytes(obj))
        return
    except TypeError as e:
        if "cannot save an object of type" not in str(e) or "nested more than" in str(e):
            raise
        value_error = e
    try:
        data = _pickled_archive(obj, pickle_protocol)
    except (pickle.PicklingError, AttributeError, TypeError) as e:
        raise TypeError(f"{value_error}; pickling the whole object failed too: {e}") from e
    if _is_path(f):
        _write_atomically(os.fsdecode(f), data)
    else:
        f.write(data)


_PICKLE_MARKER = "archive/ember_pickle"
# The globals ember's own pickled archives use for tensors (Tensor.__reduce_ex__ in _tensor_py).
_EMBER_TENSOR_GLOBALS = ("ember._tensor_py._rebuild_tensor", "ember.nn.parameter._rebuild_parameter",
                         "numpy.core.multiarray._reconstruct", "numpy.ndarray", "numpy.dtype")


def _pickled_archive(obj, protocol):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", pickle.dumps(obj, protocol=max(2, protocol)))
        z.writestr("archive/version", "3\n")
        z.writestr(_PICKLE_MARKER, "1\n")
    return buf.getvalue()


def _write_atomically(path, data):
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".ember-save-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _pickled_object(data, weights_only):
    """The object of an archive ember.save pickled, or None for an ordinary checkpoint."""
    if not data.startswith(b"PK"):
        return None
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            if _PICKLE_MARKER not in z.namelist():
                return None
            if weights_only:
                # Only allowlisted globals (plus how ember pickles tensors: through NumPy).
                from . import _torch_unpickler as tu
                return (tu.load_zip(data, True, _safe_globals_list, _EMBER_TENSOR_GLOBALS),)
            return (pickle.loads(z.read("archive/data.pkl")),)
    except zipfile.BadZipFile:
        return None


def _load_kwargs(map_location):
    """map_location in the C++ loader's terms: one device for every storage (map_location), torch's
    dict form as (saved location, device) pairs (map_locations), or, for a callable that maps
    them itself afterwards, storages kept on the CPU (restore_locations=False). Storages saved
    on a GPU otherwise load back onto it."""
    def as_device(d):
        return d if isinstance(d, _C.device) else _C.device(str(d))

    if map_location is None:
        return {}
    if callable(map_location) and not isinstance(map_location, (str, dict, _C.device)):
        return {"restore_locations": False}
    if isinstance(map_location, dict):
        return {"map_locations": [(str(k), as_device(v)) for k, v in map_location.items()]}
    if isinstance(map_location, (str, _C.device)):
        device = as_device(map_location)
        if device.type == "cuda":
            from . import cuda
            if not cuda.is_available():
                raise RuntimeError(
                    "Attempting to deserialize object on a CUDA device but ember.cuda.is_available() is False. "
                    "If you are running on a CPU-only machine, please use ember.load with "
                    "map_location=ember.device('cpu') to map your storages to the CPU.")
        return {"map_location": device}
    raise TypeError("ember.load: map_location should be a str, an ember.device, a dict or a callable, "
                    f"got {type(map_location).__name__}")


def _apply_callable(obj, fn):
    """torch calls map_location(storage, location) per storage; here per tensor, with 'cpu'."""
    if isinstance(obj, _C.Tensor):
        out = fn(obj, "cpu")
        return obj if out is None else out
    if isinstance(obj, dict):
        return {k: _apply_callable(v, fn) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_apply_callable(v, fn) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_apply_callable(v, fn) for v in obj)
    return obj


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Loads an object saved by ember.save or torch.save from f, a path or a binary file object
    with read(). map_location: a device (str or ember.device) to move every tensor to, a dict
    mapping saved locations to devices, or a callable(tensor, location).

    weights_only (default True, as torch >= 2.6): only data is loaded (tensors, numbers, strings,
    containers, dtypes, ...) plus the globals allowed with ember.serialization.add_safe_globals;
    a file referring to any other class or function raises pickle.UnpicklingError naming it.
    weights_only=False unpickles everything (NumPy arrays, argparse.Namespace, whole modules):
    it can run code, so only for files from a trusted source."""
    if weights_only is None:
        # torch's escape hatch for old code: the environment can restore the pre-2.6 default
        weights_only = os.environ.get("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() not in ("1", "true", "y", "yes")
    elif not weights_only and os.environ.get("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "0").lower() in ("1", "true", "y", "yes"):
        weights_only = True
    load_kwargs = _load_kwargs(map_location)
    device = load_kwargs.get("map_location")
    if _is_path(f):
        path = os.fsdecode(f)
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as z:
                pickled = _PICKLE_MARKER in z.namelist()
            if pickled:
                with open(path, "rb") as fh:
                    return _pickled_object(fh.read(), weights_only)[0]
        try:
            obj = _C._load_from_path(path, mmap=bool(mmap), **load_kwargs)
        except Exception as e:  # noqa: BLE001 - only the "needs a Python unpickler" case is retried
            if "Unsupported global" not in str(e):
                raise
            with open(path, "rb") as fh:
                obj = _load_with_python(fh.read(), weights_only, device)
    elif hasattr(f, "read"):
        data = f.read()
        if isinstance(data, str):
            raise TypeError("ember.load: the file object must be opened in binary mode ('rb')")
        data = bytes(data)
        pickled = _pickled_object(data, weights_only)
        if pickled is not None:
            return pickled[0]
        try:
            obj = _C._load_from_bytes(data, **load_kwargs)
        except Exception as e:  # noqa: BLE001
            if "Unsupported global" not in str(e):
                raise
            obj = _load_with_python(data, weights_only, device)
    else:
        raise TypeError("ember.load: f must be a path (str or os.PathLike) or a binary file object "
                        f"with read(), got {type(f).__name__}")
    if callable(map_location) and not isinstance(map_location, (str, dict, _C.device)):
        obj = _apply_callable(obj, map_location)
    return obj


def _load_with_python(data, weights_only, device):
    """torch's format through the Python unpickler (_torch_unpickler): for files holding globals
    the C++ data-only loader does not resolve."""
    from . import _torch_unpickler as tu
    obj = tu.load_zip(data, weights_only, _safe_globals_list)
    if device is not None and device.type != "cpu":
        obj = _apply_callable(obj, lambda t, loc: t.to(device))
    return obj
