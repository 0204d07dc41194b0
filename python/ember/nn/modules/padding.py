"""Padding layers (torch.nn's ConstantPad / ZeroPad / ReflectionPad / ReplicationPad / CircularPad
1d, 2d, 3d): each holds its padding tuple (left, right[, top, bottom[, front, back]]) and calls
F.pad, whose C++ checks give torch's messages for inputs of the wrong rank or too-large pads."""
from .. import functional as F
from .module import Module

__all__ = ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d"]


def _ntuple(padding, n):
    if isinstance(padding, (tuple, list)):
        return tuple(padding)
    return (padding,) * n


class _PadNd(Module):
    __constants__ = ["padding"]
    _n = 2
    _mode = "constant"

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, self._n)

    def forward(self, input):
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    __constants__ = ["padding", "value"]

    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    _n = 2


class ConstantPad2d(_ConstantPadNd):
    _n = 4


class ConstantPad3d(_ConstantPadNd):
    _n = 6


class ZeroPad1d(ConstantPad1d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ReflectionPad1d(_PadNd):
    _n, _mode = 2, "reflect"


class ReflectionPad2d(_PadNd):
    _n, _mode = 4, "reflect"


class ReflectionPad3d(_PadNd):
    _n, _mode = 6, "reflect"


class ReplicationPad1d(_PadNd):
    _n, _mode = 2, "replicate"


class ReplicationPad2d(_PadNd):
    _n, _mode = 4, "replicate"


class ReplicationPad3d(_PadNd):
    _n, _mode = 6, "replicate"


class CircularPad1d(_PadNd):
    _n, _mode = 2, "circular"


class CircularPad2d(_PadNd):
    _n, _mode = 4, "circular"


class CircularPad3d(_PadNd):
    _n, _mode = 6, "circular"
