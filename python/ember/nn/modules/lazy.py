"""Lazy modules (torch.nn.modules.lazy): LazyModuleMixin and the layers that infer their input size
at the first forward -- LazyLinear, LazyConv1d/2d/3d, LazyConvTranspose1d/2d/3d,
LazyBatchNorm1d/2d/3d, LazyInstanceNorm1d/2d/3d.

Until that forward they hold UninitializedParameter / UninitializedBuffer placeholders (empty
tensors of the requested device and dtype); a forward pre-hook materializes them from the input's
shape, runs the layer's reset_parameters, removes itself and turns the module into the concrete
class (`cls_to_become`: LazyConv2d -> Conv2d), as torch does. A state_dict of an initialized layer
loads into a lazy one (the placeholders take the checkpoint's shapes).
"""
import itertools

from ... import _C
from ..._C import Tensor
from ...autograd.grad_mode import no_grad
from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from . import conv as _conv
from . import instancenorm as _instancenorm
from . import normalization as _normalization
from .linear import Linear

__all__ = ["LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class LazyModuleMixin:
    r"""A mixin for modules that initialize their parameters from the first input (torch's).

    Subclasses implement `initialize_parameters(*inputs)`; `cls_to_become` (if not None) is the
    class the module takes once every placeholder is materialized."""

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        # The placeholders go in as they are (torch's state_dict shows <UninitializedParameter>).
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if (is_lazy(param) or keep_vars) else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if (is_lazy(buf) or keep_vars) else buf.detach()

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                        error_msgs):
        """Loading an initialized state into a lazy module materializes its placeholders with the
        checkpoint's shapes (the values are then copied by the ordinary loading)."""
        for name, param in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key in state_dict and param is not None:
                input_param = state_dict[key]
                if is_lazy(param) and not is_lazy(input_param) and isinstance(input_param, Tensor):
                    with no_grad():
                        param.materialize(input_param.shape)

    def initialize_parameters(self, *args, **kwargs):
        raise NotImplementedError(f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def has_uninitialized_params(self):
        for param in itertools.chain(self._parameters.values(), self._buffers.values()):
            if is_lazy(param):
                return True
        return False

    def _infer_parameters(self, module, args, kwargs=None):
        kwargs = kwargs if kwargs else {}
        module.initialize_parameters(*args, **kwargs)
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        delattr(module, "_initialize_hook")
        delattr(module, "_load_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with `DataParallel`. "
                           "Run a dummy forward pass to correctly initialize the modules")


# ---- Linear ----------------------------------------------------------------------------------

class LazyLinear(LazyModuleMixin, Linear):
    """Linear whose in_features is inferred from input.shape[-1]."""

    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        # bias=False: no tensor is made that the placeholder would replace at once
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()
        if self.in_features == 0:
            if input.shape[-1] != self.weight.shape[-1]:
                raise AssertionError(f"The in_features inferred from input: {input.shape[-1]} is not equal to "
                                     f"in_features from self.weight: {self.weight.shape[-1]}")
            self.in_features = input.shape[-1]


# ---- convolutions ----------------------------------------------------------------------------

class _LazyConvXdMixin(LazyModuleMixin):
    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            with no_grad():
                if self.transposed:
                    self.weight.materialize((self.in_channels, self.out_channels // self.groups, *self.kernel_size))
                else:
                    self.weight.materialize((self.out_channels, self.in_channels // self.groups, *self.kernel_size))
                if self.bias is not None:
                    self.bias.materialize((self.out_channels,))
                self.reset_parameters()

    def _get_in_channels(self, input):
        num_dims_no_batch = self._get_num_spatial_dims() + 1
        num_dims_batch = num_dims_no_batch + 1
        if input.dim() not in (num_dims_no_batch, num_dims_batch):
            raise RuntimeError(f"Expected {num_dims_no_batch}D (unbatched) or {num_dims_batch}D (batched) input "
                               f"to {self.__class__.__name__}, but got input of size: {input.shape}")
        return input.shape[1] if input.dim() == num_dims_batch else input.shape[0]

    def _get_num_spatial_dims(self):
        return self._n


class _LazyConvNd(_LazyConvXdMixin):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        # in/out channels 0 and bias=False: no tensors are made that placeholders would replace
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode, device, dtype)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)


class _LazyConvTransposeNd(_LazyConvXdMixin):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                 dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode,
                         device, dtype)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)


class LazyConv1d(_LazyConvNd, _conv.Conv1d):
    """Conv1d whose in_channels is inferred from the input (input.size(1), or size(0) unbatched)."""
    cls_to_become = _conv.Conv1d


class LazyConv2d(_LazyConvNd, _conv.Conv2d):
    """Conv2d whose in_channels is inferred from the input (input.size(1), or size(0) unbatched)."""
    cls_to_become = _conv.Conv2d


class LazyConv3d(_LazyConvNd, _conv.Conv3d):
    """Conv3d whose in_channels is inferred from the input (input.size(1), or size(0) unbatched)."""
    cls_to_become = _conv.Conv3d


class LazyConvTranspose1d(_LazyConvTransposeNd, _conv.ConvTranspose1d):
    """ConvTranspose1d whose in_channels is inferred from the input."""
    cls_to_become = _conv.ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTransposeNd, _conv.ConvTranspose2d):
    """ConvTranspose2d whose in_channels is inferred from the input."""
    cls_to_become = _conv.ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTransposeNd, _conv.ConvTranspose3d):
    """ConvTranspose3d whose in_channels is inferred from the input."""
    cls_to_become = _conv.ConvTranspose3d


# ---- batch and instance norms ------------------------------------------------------------------

class _LazyNormBase(LazyModuleMixin):
    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None):
        # affine and track_running_stats False: no tensors are made that placeholders would replace
        super().__init__(0, eps, momentum, False, False, device, dtype)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        if self.track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = _C.tensor(0, dtype=_C.int64, device=device)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            with no_grad():
                if self.affine:
                    self.weight.materialize((self.num_features,))
                    if self.bias is not None:
                        self.bias.materialize((self.num_features,))
                if self.track_running_stats:
                    self.running_mean.materialize((self.num_features,))
                    self.running_var.materialize((self.num_features,))
                self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase, _normalization.BatchNorm1d):
    """BatchNorm1d whose num_features is inferred from input.size(1)."""
    cls_to_become = _normalization.BatchNorm1d


class LazyBatchNorm2d(_LazyNormBase, _normalization.BatchNorm2d):
    """BatchNorm2d whose num_features is inferred from input.size(1)."""
    cls_to_become = _normalization.BatchNorm2d


class LazyBatchNorm3d(_LazyNormBase, _normalization.BatchNorm3d):
    """BatchNorm3d whose num_features is inferred from input.size(1)."""
    cls_to_become = _normalization.BatchNorm3d


# torch's lazy instance norms default to affine=True, track_running_stats=True (_LazyNormBase's
# defaults, unlike InstanceNorm*d's) and, like torch's, read num_features from input.size(1).
class LazyInstanceNorm1d(_LazyNormBase, _instancenorm.InstanceNorm1d):
    """InstanceNorm1d whose num_features is inferred from input.size(1)."""
    cls_to_become = _instancenorm.InstanceNorm1d


class LazyInstanceNorm2d(_LazyNormBase, _instancenorm.InstanceNorm2d):
    """InstanceNorm2d whose num_features is inferred from input.size(1)."""
    cls_to_become = _instancenorm.InstanceNorm2d


class LazyInstanceNorm3d(_LazyNormBase, _instancenorm.InstanceNorm3d):
    """InstanceNorm3d whose num_features is inferred from input.size(1)."""
    cls_to_become = _instancenorm.InstanceNorm3d
