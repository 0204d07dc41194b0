"""Conv1d/2d/3d and ConvTranspose1d/2d/3d (torch's _ConvNd attributes, initialisation, padding modes and
repr)."""

from ... import _C
from ..._C import _nn as _F
from .. import functional as F
from ..parameter import Parameter
from .linear import _reset_fan_in_uniform
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]


def _ntuple(v, n):
    if isinstance(v, (tuple, list)):
        return tuple(v)
    return (v,) * n


class _ConvNd(Module):
    _n = 2

    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        n = self._n
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        kernel_size, stride, dilation = _ntuple(kernel_size, n), _ntuple(stride, n), _ntuple(dilation, n)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        else:
            padding = _ntuple(padding, n)
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError("padding_mode must be one of {}, but got padding_mode='{}'".format(
                ["zeros", "reflect", "replicate", "circular"], padding_mode))
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = self._transposed
        self.output_padding = (0,) * n  # a transposed convolution sets its own
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad's argument (last dim first) for the non-zero padding modes.
        if isinstance(padding, str):
            pads = [0, 0] * n
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(n - 1, -1, -1)):
                    total = d * (k - 1)
                    left = total // 2
                    pads[2 * i] = left
                    pads[2 * i + 1] = total - left
            self._reversed_padding_repeated_twice = pads
        else:
            self._reversed_padding_repeated_twice = [p for p in reversed(padding) for _ in range(2)]
        # a transposed convolution's weight is (in, out / groups, k...), the adjoint's layout
        w_shape = (in_channels, out_channels // groups) if self._transposed else (out_channels, in_channels // groups)
        self.weight = Parameter(_C.empty((*w_shape, *kernel_size), device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(_C.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_fan_in_uniform(self.weight, self.bias)

    def extra_repr(self):
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "padding_mode"):
            self.padding_mode = "zeros"

    def _conv_forward(self, input, weight, bias):
        conv = (F.conv1d, F.conv2d, F.conv3d)[self._n - 1]
        stride = self.stride[0] if self._n == 1 else self.stride
        dilation = self.dilation[0] if self._n == 1 else self.dilation
        if self.padding_mode != "zeros":
            mode = "constant" if self.padding_mode == "zeros" else self.padding_mode
            return conv(F.pad(input, self._reversed_padding_repeated_twice, mode=mode), weight, bias, stride,
                        0, dilation, self.groups)
        return conv(input, weight, bias, stride, self.padding, dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_ConvNd):
    _n = 1


class Conv2d(_ConvNd):
    _n = 2


class Conv3d(_ConvNd):
    _n = 3


class _ConvTransposeNd(_ConvNd):
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError('Only "zeros" padding mode is supported for {}'.format(self.__class__.__name__))
        if isinstance(padding, str):
            raise TypeError(f"{self.__class__.__name__}: padding must be an int or a tuple of ints, not {padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype)
        self.output_padding = _ntuple(output_padding, self._n)

    def _output_padding(self, input, output_size, stride, padding, kernel_size, num_spatial_dims=None,
                        dilation=None):
        """torch's: the output_padding that gives `output_size` (None: the module's own)."""
        if output_size is None:
            return self.output_padding
        n = self._n
        dilation = (1,) * n if dilation is None else dilation
        return tuple(_F._conv_transpose_output_padding(tuple(input.shape), [int(s) for s in output_size],
                                                       stride, padding, kernel_size, dilation))

    def forward(self, input, output_size=None):
        if self.padding_mode != "zeros":
            raise ValueError(f"Only `zeros` padding mode is supported for {self.__class__.__name__}")
        output_padding = self._output_padding(input, output_size, self.stride, self.padding, self.kernel_size,
                                              self._n, self.dilation)
        conv = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[self._n - 1]
        return conv(input, self.weight, self.bias, self.stride, self.padding, output_padding, self.groups,
                    self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    _n = 1


class ConvTranspose2d(_ConvTransposeNd):
    _n = 2


class ConvTranspose3d(_ConvTransposeNd):
    _n = 3


def __getattr__(name):
    # torch's path for the lazy variants, defined in lazy.py (which imports this module)
    if name in ("LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
                "LazyConvTranspose3d"):
        from . import lazy
        return getattr(lazy, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
