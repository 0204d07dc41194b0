"""ember.accelerator: the device-generic queries of torch 2.x. ember's accelerator would be CUDA
(ember.cuda); without a GPU current_accelerator() is None and is_available() False."""
from . import _C, cuda as _cuda

__all__ = ["current_accelerator", "is_available", "device_count", "current_device_index", "set_device_index",
           "synchronize"]


def is_available():
    return _cuda.is_available()


def current_accelerator(check_available=False):
    if _cuda.is_available():
        return _C.device("cuda")
    return None


def device_count():
    return _cuda.device_count() if _cuda.is_available() else 0


def current_device_index():
    if not is_available():
        raise RuntimeError("ember.accelerator: no accelerator is available")
    return _cuda.current_device()


current_device_idx = current_device_index


def set_device_index(device):
    if not is_available():
        raise RuntimeError("ember.accelerator: no accelerator is available")
    _cuda.set_device(device)


set_device_idx = set_device_index


def synchronize(device=None):
    if is_available():
        _cuda.synchronize(device)
