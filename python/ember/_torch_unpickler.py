"""Python reader of PyTorch's .pt zip format for the files the C++ loader (data only) refuses:
checkpoints holding NumPy arrays, argparse.Namespace, whole nn.Modules or other pickled
objects. Two modes, as torch 2.x's torch.load:

- weights_only=True: only allowlisted globals are resolved (the tensor rebuilders, storages,
  dtypes, Size, device, OrderedDict, set, ...) plus those the user allowed with
  ember.serialization.add_safe_globals / safe_globals; anything else raises
  pickle.UnpicklingError naming the global and how to allow it.
- weights_only=False: a full unpickle (it can run code: only for trusted files). torch.* names
  resolve to ember's (torch.nn.modules.linear.Linear -> ember.nn.modules.linear.Linear).

Tensors: storages are read from <archive>/data/<key> as raw little-endian bytes, one ember
tensor per storage, and each tensor is a strided view of it (tensors sharing a storage share
memory, as in torch)."""
import importlib
import io
import pickle
import sys
import zipfile

import numpy as np

from . import _C

# storage class name -> (ember dtype name, numpy dtype for the raw bytes)
_STORAGE_TYPES = {
    "FloatStorage": ("float32", np.float32), "DoubleStorage": ("float64", np.float64),
    "HalfStorage": ("float16", np.float16), "BFloat16Storage": ("bfloat16", np.uint16),
    "LongStorage": ("int64", np.int64), "IntStorage": ("int32", np.int32), "ShortStorage": ("int16", np.int16),
    "CharStorage": ("int8", np.int8), "ByteStorage": ("uint8", np.uint8), "BoolStorage": ("bool", np.bool_),
}


class _StorageType:
    """What `GLOBAL torch FloatStorage` resolves to: the storage's element type."""

    def __init__(self, name):
        self.name = name
        self.dtype_name, self.np_dtype = _STORAGE_TYPES[name]

    def __repr__(self):
        return f"torch.{self.name}"


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                       metadata=None):
    t = storage.as_strided(tuple(size), tuple(stride), storage_offset)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_tensor(storage, storage_offset, size, stride):
    return _rebuild_tensor_v2(storage, storage_offset, size, stride)


def _rebuild_parameter(data, requires_grad, backward_hooks=None):
    from .nn.parameter import Parameter
    return Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    p = _rebuild_parameter(data, requires_grad)
    for k, v in (state or {}).items():
        setattr(p, k, v)
    return p


def _rebuild_from_type_v2(func, new_type, args, state):
    ret = func(*args)
    if new_type is not None and new_type is not type(ret) and isinstance(new_type, type) and \
            issubclass(new_type, _C.Tensor) and new_type is not _C.Tensor:
        data, ret = ret, new_type.__new__(new_type)
        _C.Tensor.__init__(ret, data)
    if state:
        if isinstance(state, tuple):
            state = state[0] or {}
        for k, v in state.items():
            setattr(ret, k, v)
    return ret


def _get_layout(name):
    from . import _tensor_py
    return getattr(_tensor_py, name.split(".")[-1])


# Globals a weights-only load resolves without asking: torch's defaults (data, never code).
_TORCH_SAFE = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter_with_state,
    ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
    ("torch.serialization", "_get_layout"): _get_layout,
    ("collections", "OrderedDict"): __import__("collections").OrderedDict,
    ("collections", "Counter"): __import__("collections").Counter,
    ("builtins", "set"): set, ("builtins", "bytearray"): bytearray, ("builtins", "complex"): complex,
    ("_codecs", "encode"): __import__("codecs").encode,
}


def _torch_safe_global(module, name):
    """Allowlisted torch.* names: storages, dtypes, Size, device, Tensor, Parameter."""
    if module in ("torch", "ember", "ember._C"):
        if name in _STORAGE_TYPES:
            return _StorageType(name)
        if name == "Size":
            return _C.Size if hasattr(_C, "Size") else __import__("ember").Size
        if name in ("device", "Tensor"):
            return getattr(_C, name)
        obj = getattr(_C, name, None)
        if isinstance(obj, _C.dtype):
            return obj
    if (module, name) in (("torch.nn.parameter", "Parameter"), ("ember.nn.parameter", "Parameter")):
        from .nn.parameter import Parameter
        return Parameter
    return _TORCH_SAFE.get((module, name))


def _import_global(module, name):
    """module.name with torch.* mapped onto ember.* (and numpy 2's numpy._core onto numpy.core)."""
    if module == "torch" or module.startswith("torch."):
        safe = _torch_safe_global(module, name)
        if safe is not None:
            return safe
        target = "ember" + module[len("torch"):]
        try:
            mod = importlib.import_module(target)
            return _getattr_path(mod, name)
        except (ImportError, AttributeError) as e:
            raise pickle.UnpicklingError(f"ember.load: the checkpoint refers to {module}.{name}, which ember does not "
                                         f"have ({target}.{name}: {e})") from e
    if module.startswith("numpy._core"):
        try:
            importlib.import_module(module)
        except ImportError:
            module = "numpy.core" + module[len("numpy._core"):]
    mod = importlib.import_module(module)
    return _getattr_path(mod, name)


def _numpy_alias(full):
    """numpy 2 writes numpy._core.*, numpy 1 numpy.core.*: either spelling names the same global."""
    if full.startswith("numpy._core."):
        return "numpy.core." + full[len("numpy._core."):]
    if full.startswith("numpy.core."):
        return "numpy._core." + full[len("numpy.core."):]
    return full


def _getattr_path(obj, dotted):
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def _qualified(obj):
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', getattr(obj, '__name__', repr(obj)))}"


def safe_global_names(safe_globals):
    """{'module.name': object} for the user's allowlist (objects or (object, 'module.name') pairs)."""
    names = {}
    for entry in safe_globals:
        if isinstance(entry, tuple):
            obj, name = entry
            names[name] = obj
        else:
            names[_qualified(entry)] = entry
    return names


def weights_only_error(detail):
    return pickle.UnpicklingError(
        "Weights only load failed. This file can still be loaded, to do so you have two options, do those steps "
        "only if you trust the source of the checkpoint.\n"
        "\t(1) Re-running `ember.load` with `weights_only` set to `False` will likely succeed, but it can result in "
        "arbitrary code execution. Do it only if you got the file from a trusted source.\n"
        "\t(2) Alternatively, to load with `weights_only=True` please check the recommended steps in the following "
        f"error message.\n\tWeightsUnpickler error: {detail}")


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, zip_file, prefix, weights_only, safe_globals, extra_allowed=()):
        super().__init__(file)
        self._zip = zip_file
        self._prefix = prefix
        self._weights_only = weights_only
        self._safe = safe_global_names(safe_globals)
        self._extra_allowed = set(extra_allowed)
        self._storages = {}

    def find_class(self, module, name):
        if module == "__builtin__":
            module = "builtins"
        if not self._weights_only:
            return _import_global(module, name)
        full = f"{module}.{name}"
        if full in self._safe:
            return self._safe[full]
        alias = _numpy_alias(full)
        if alias in self._safe:
            return self._safe[alias]
        if module.startswith("torch."):
            # torch.nn.modules.linear.Linear is allowed when its ember counterpart is.
            try:
                obj = _import_global(module, name)
            except pickle.UnpicklingError:
                obj = None
            if obj is not None and any(obj is v for v in self._safe.values()):
                return obj
        if full in self._extra_allowed or alias in self._extra_allowed:
            return _import_global(module, name)
        safe = _torch_safe_global(module, name)
        if safe is not None:
            return safe
        shown = full
        raise weights_only_error(
            f"Unsupported global: GLOBAL {shown} was not an allowed global by default. Please use "
            f"`ember.serialization.add_safe_globals([{name}])` or the "
            f"`ember.serialization.safe_globals([{name}])` context manager to allowlist this global if you trust "
            "this class/function.")

    def persistent_load(self, pid):
        if not isinstance(pid, tuple) or not pid or pid[0] != "storage":
            raise pickle.UnpicklingError(f"ember.load: unknown persistent id {pid!r}")
        _, storage_type, key, location, numel = pid[:5]
        if isinstance(storage_type, _StorageType):
            dtype_name, np_dtype = storage_type.dtype_name, storage_type.np_dtype
        else:
            raise pickle.UnpicklingError(f"ember.load: unsupported storage type {storage_type!r}")
        cache_key = (key, dtype_name)
        if cache_key not in self._storages:
            raw = self._zip.read(f"{self._prefix}data/{key}")
            arr = np.frombuffer(raw, dtype=np_dtype).copy()
            if dtype_name == "bfloat16":  # bfloat16 is the high half of a float32
                t = _C.from_numpy((arr.astype(np.uint32) << 16).view(np.float32)).to(_C.bfloat16)
            else:
                t = _C.from_numpy(arr)
            self._storages[cache_key] = t
        return self._storages[cache_key]


def _archive_prefix(z):
    for n in z.namelist():
        if n.endswith("data.pkl"):
            return n[: -len("data.pkl")]
    raise pickle.UnpicklingError("ember.load: not a PyTorch checkpoint (no data.pkl in the zip archive)")


def load_zip(data, weights_only, safe_globals, extra_allowed=()):
    """The object in the zip archive `data` (bytes), tensors on the CPU."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        prefix = _archive_prefix(z)
        byteorder = z.read(prefix + "byteorder").decode() if prefix + "byteorder" in z.namelist() else "little"
        if byteorder != sys.byteorder:
            raise RuntimeError(f"ember.load: the checkpoint is {byteorder}-endian; this machine is {sys.byteorder}")
        pkl = z.read(prefix + "data.pkl")
        return _Unpickler(io.BytesIO(pkl), z, prefix, weights_only, safe_globals, extra_allowed).load()


def globals_in(data):
    """Every 'module.name' global the archive's pickle refers to (torch's get_unsafe_globals_in_checkpoint)."""
    import pickletools
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        pkl = z.read(_archive_prefix(z) + "data.pkl")
    found, strings = [], []
    for op, arg, _ in pickletools.genops(pkl):
        if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE"):
            strings.append(arg)
        if op.name == "GLOBAL":
            mod, name = arg.split(" ", 1)
            found.append(f"{'builtins' if mod == '__builtin__' else mod}.{name}")
        elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
            found.append(f"{strings[-2]}.{strings[-1]}")
    return list(dict.fromkeys(found))
