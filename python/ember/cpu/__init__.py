"""ember.cpu (torch.cpu): the CPU's device module; amp holds torch.cpu.amp's names."""
from . import amp  # noqa: F401


def is_available():
    return True


def device_count():
    return 1


def current_device():
    return "cpu"


def synchronize(device=None):
    """The CPU runs ops synchronously: nothing to wait for."""
