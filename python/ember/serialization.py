"""ember.save / ember.load: checkpoints in PyTorch's .pt format (a zip archive holding a pickle
of the object and one entry per tensor storage), so torch.load reads ember's files and
ember.load reads torch's. The format work is ember's C++ library (include/ember/serialize/):
this module only accepts torch's argument forms (paths or file objects, map_location).

What can be saved is what torch.load(weights_only=True) reads back: None, bool, int, float, str,
tensors (an nn.Parameter is saved as its tensor), and lists, tuples and dicts of those
(OrderedDict keeps its order; ember.Size and namedtuples become tuples). Loading never runs code.
"""
import os

from . import _C

__all__ = ["save", "load"]


def _is_path(f):
    return isinstance(f, (str, bytes, os.PathLike))


def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Saves obj to f, a path (written atomically: a temporary file renamed over the target) or
    a binary file object with write(). pickle_module/pickle_protocol are accepted for torch
    compatibility; the file is always torch's zip format with a protocol 2 pickle."""
    if _is_path(f):
        _C._save_to_path(obj, os.fsdecode(f))
    elif hasattr(f, "write"):
        f.write(_C._save_to_bytes(obj))
    else:
        raise TypeError("ember.save: f must be a path (str or os.PathLike) or a binary file object "
                        f"with write(), got {type(f).__name__}")


def _device_for(map_location):
    """map_location as one device for the C++ loader, or None (keep where saved / post-process)."""
    if map_location is None or callable(map_location):
        return None
    if isinstance(map_location, dict):
        # {'cuda:0': 'cpu'}: this build's checkpoints live on the CPU; only a 'cpu' entry applies.
        target = map_location.get("cpu")
        return None if target is None else _C.device(str(target) if not isinstance(target, _C.device) else target)
    if isinstance(map_location, (str, _C.device)):
        return _C.device(map_location) if isinstance(map_location, str) else map_location
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


def load(f, map_location=None, pickle_module=None, *, weights_only=False, mmap=None, **pickle_load_args):
    """Loads an object saved by ember.save or torch.save from f, a path or a binary file object
    with read(). map_location: a device (str or ember.device) to move every tensor to, a dict
    mapping saved locations to devices, or a callable(tensor, location). Only data is ever
    loaded (as weights_only=True): a pickle referring to other classes or functions is refused."""
    device = _device_for(map_location)
    if _is_path(f):
        obj = _C._load_from_path(os.fsdecode(f), device, bool(mmap))
    elif hasattr(f, "read"):
        data = f.read()
        if isinstance(data, str):
            raise TypeError("ember.load: the file object must be opened in binary mode ('rb')")
        obj = _C._load_from_bytes(bytes(data), device)
    else:
        raise TypeError("ember.load: f must be a path (str or os.PathLike) or a binary file object "
                        f"with read(), got {type(f).__name__}")
    if callable(map_location) and not isinstance(map_location, (str, dict, _C.device)):
        obj = _apply_callable(obj, map_location)
    return obj
