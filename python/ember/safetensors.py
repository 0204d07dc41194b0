"""safetensors files, as the `safetensors.torch` module: save_file / load_file / save / load.
The format (a JSON header of names, dtypes, shapes and offsets, then the raw data) is read and
written by ember's C++ serializer, which checks every offset and writes atomically."""
import os

from . import _C

__all__ = ["save_file", "load_file", "safe_open_metadata"]


def save_file(tensors, filename, metadata=None):
    """Writes a dict of name -> tensor (dense, no two sharing memory) to filename."""
    if not isinstance(tensors, dict):
        raise TypeError(f"save_file: expected a dict of tensors, got {type(tensors).__name__}")
    _C._safetensors_save([(k, v.contiguous()) for k, v in tensors.items()], os.fspath(filename),
                         list((metadata or {}).items()))


def load_file(filename, device="cpu"):
    """A dict of name -> tensor, in the file's order."""
    from . import device as _device
    return dict(_C._safetensors_load(os.fspath(filename), _device(device) if device is not None else None))


def safe_open_metadata(filename):
    """The file's __metadata__ (a dict of strings)."""
    return dict(_C._safetensors_metadata(os.fspath(filename)))
