"""ember.nn.functional (torch.nn.functional): stateless layers, activations and losses.

Each function forwards to the C++ op in ember._C._nn (include/ember/nn/functional.h) and adds
what torch's Python signature has beyond it: the legacy `size_average`/`reduce` arguments,
`inplace=` variants, `return_indices`, implicit softmax dims.
"""
import warnings

from .. import _C
from .._C import _nn as _F
from ..amp.autocast_mode import _autocast_op

__all__ = [
    "linear", "bilinear", "conv1d", "conv2d", "max_pool1d", "max_pool2d", "max_pool2d_with_indices", "avg_pool1d",
    "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "pad", "layer_norm", "rms_norm", "group_norm",
    "batch_norm", "normalize", "relu", "relu_", "relu6", "leaky_relu", "leaky_relu_", "gelu", "silu", "elu", "elu_",
    "softplus", "sigmoid", "tanh", "hardtanh", "hardtanh_", "hardsigmoid", "hardswish", "mish", "logsigmoid",
    "softsign", "tanhshrink", "softmax", "softmin", "log_softmax", "dropout", "dropout1d", "dropout2d", "dropout3d", "embedding", "one_hot",
    "scaled_dot_product_attention", "multi_head_attention_forward", "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss",
    "huber_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "cosine_similarity",
]


# ---- legacy reduction arguments --------------------------------------------------------------

def _legacy_reduction(size_average, reduce, reduction="mean"):
    """torch's mapping of the deprecated (size_average, reduce) pair onto `reduction`."""
    if size_average is None and reduce is None:
        return reduction
    warnings.warn("size_average and reduce args will be deprecated, please use reduction='{}' instead.".format(
        _legacy_string(size_average, reduce)))
    return _legacy_string(size_average, reduce)


def _legacy_string(size_average, reduce):
    if size_average is None:
        size_average = True
    if reduce is None:
        reduce = True
    if size_average and reduce:
        return "mean"
    if reduce:
        return "sum"
    return "none"


def _inplace(input, result):
    """Writes `result` into `input` (autograd records the copy). Only for results whose backward
    does not read `input` (dropout's mask); activations use _inplace_apply."""
    return input.copy_(result)


def _inplace_apply(input, fn):
    """The in-place form of an activation C++ has no in-place op for: fn's backward reads its
    input, which the in-place write is about to change, so when autograd records, fn runs on a
    copy of the old value (what torch's in-place kernels save as original_self); then the result
    is written into `input`. relu and silu use their own in-place ops instead."""
    from .. import is_grad_enabled
    src = input.clone() if input.requires_grad and is_grad_enabled() else input
    return input.copy_(fn(src))


# ---- linear and convolution ------------------------------------------------------------------

linear = _F.linear


@_autocast_op("bilinear")
def bilinear(input1, input2, weight, bias=None):
    # y_k = x1^T W_k x2 + b_k, as one einsum over the batch
    out = _C.einsum("...i,kij,...j->...k", input1, weight, input2)
    return out + bias if bias is not None else out


conv1d = _F.conv1d
conv2d = _F.conv2d
conv3d = _F.conv3d
conv_transpose1d = _F.conv_transpose1d
conv_transpose2d = _F.conv_transpose2d
conv_transpose3d = _F.conv_transpose3d


# ---- pooling ---------------------------------------------------------------------------------

def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    if stride is not None and not isinstance(stride, int) and len(stride) == 0:
        stride = None
    if return_indices:
        return _F.max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return _F.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    return _F.max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    if stride is not None and not isinstance(stride, int) and len(stride) == 0:
        stride = None
    return _F.avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def _no_stride(stride):
    """torch takes an empty stride as None (= kernel_size)."""
    if stride is not None and not isinstance(stride, int) and len(stride) == 0:
        return None
    return stride


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    if return_indices:
        return _F.max_pool1d_with_indices(input, kernel_size, _no_stride(stride), padding, dilation, ceil_mode)
    return _F.max_pool1d(input, kernel_size, _no_stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    return _F.max_pool1d_with_indices(input, kernel_size, _no_stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    if return_indices:
        return _F.max_pool3d_with_indices(input, kernel_size, _no_stride(stride), padding, dilation, ceil_mode)
    return _F.max_pool3d(input, kernel_size, _no_stride(stride), padding, dilation, ceil_mode)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    return _F.max_pool3d_with_indices(input, kernel_size, _no_stride(stride), padding, dilation, ceil_mode)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    return _F.avg_pool1d(input, kernel_size, _no_stride(stride), padding, ceil_mode, count_include_pad)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return _F.avg_pool3d(input, kernel_size, _no_stride(stride), padding, ceil_mode, count_include_pad,
                         divisor_override)


def _adaptive_size(input, output_size, n):
    """torch's _list_with_default: a None entry keeps that dimension's input size."""
    if isinstance(output_size, int):
        return output_size
    return tuple(input.shape[-n + i] if s is None else s for i, s in enumerate(output_size))


def adaptive_avg_pool2d(input, output_size):
    if isinstance(output_size, (tuple, list)):
        # None keeps that dimension's input size
        output_size = tuple(input.shape[-2 + i] if s is None else s for i, s in enumerate(output_size))
    return _F.adaptive_avg_pool2d(input, output_size)


def adaptive_avg_pool1d(input, output_size):
    return _F.adaptive_avg_pool1d(input, output_size)


def adaptive_avg_pool3d(input, output_size):
    return _F.adaptive_avg_pool3d(input, _adaptive_size(input, output_size, 3))


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    return _F.adaptive_max_pool1d_with_indices(input, output_size)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return _F.adaptive_max_pool2d_with_indices(input, _adaptive_size(input, output_size, 2))


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    return _F.adaptive_max_pool3d_with_indices(input, _adaptive_size(input, output_size, 3))


def adaptive_max_pool1d(input, output_size, return_indices=False):
    out = adaptive_max_pool1d_with_indices(input, output_size)
    return out if return_indices else out[0]


def adaptive_max_pool2d(input, output_size, return_indices=False):
    out = adaptive_max_pool2d_with_indices(input, output_size)
    return out if return_indices else out[0]


def adaptive_max_pool3d(input, output_size, return_indices=False):
    out = adaptive_max_pool3d_with_indices(input, output_size)
    return out if return_indices else out[0]


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    return _F.unfold(input, kernel_size, dilation, padding, stride)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    return _F.fold(input, output_size, kernel_size, dilation, padding, stride)


__all__ += ["conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "max_pool1d_with_indices",
            "max_pool3d", "max_pool3d_with_indices", "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
            "adaptive_max_pool2d", "adaptive_max_pool3d", "adaptive_max_pool1d_with_indices",
            "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices", "fold", "unfold"]


def pad(input, pad, mode="constant", value=None):
    return _F.pad(input, pad, mode, 0.0 if value is None else value)


# ---- normalisation ---------------------------------------------------------------------------

def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    return _F.layer_norm(input, normalized_shape, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    return _F.rms_norm(input, normalized_shape, weight, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    return _F.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    return _F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    return input / denom


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    return _F.cosine_similarity(x1, x2, dim, eps)


# ---- activations -----------------------------------------------------------------------------

def relu(input, inplace=False):
    return input.relu_() if inplace else _F.relu(input)


def relu_(input):
    return input.relu_()


def relu6(input, inplace=False):
    return _inplace_apply(input, _F.relu6) if inplace else _F.relu6(input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    if inplace:
        return _inplace_apply(input, lambda x: _F.leaky_relu(x, negative_slope))
    return _F.leaky_relu(input, negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, True)


def gelu(input, approximate="none"):
    return _F.gelu(input, approximate)


def silu(input, inplace=False):
    return input.silu_() if inplace else _F.silu(input)


@_autocast_op("prelu")
def prelu(input, weight):
    """max(0, x) + weight * min(0, x), weight per channel (dim 1) or one for all."""
    if input.dim() == 0:
        raise RuntimeError("Not allow zero-dim input tensor.")
    channels = input.shape[1] if input.dim() >= 2 else 1
    n = weight.numel()
    if n != 1 and n != channels:
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = {n} "
                           f"and channel size = {channels}.")
    w = weight.reshape([n] + [1] * (input.dim() - 2)) if n != 1 and input.dim() >= 2 else weight.reshape(())
    return _C.where(input >= 0, input, w * input)


def elu(input, alpha=1.0, inplace=False):
    if inplace:
        return _inplace_apply(input, lambda x: _F.elu(x, alpha))
    return _F.elu(input, alpha)


def elu_(input, alpha=1.0):
    return elu(input, alpha, True)


def softplus(input, beta=1, threshold=20):
    return _F.softplus(input, beta, threshold)


def sigmoid(input):
    return _F.sigmoid(input)


def tanh(input):
    return _F.tanh(input)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if inplace:
        return _inplace_apply(input, lambda x: x.clamp(min_val, max_val))
    return input.clamp(min_val, max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, True)


def _hardsigmoid(x):
    return (x + 3.0).clamp(0.0, 6.0) / 6.0


def _hardswish(x):
    return x * (x + 3.0).clamp(0.0, 6.0) / 6.0


def _mish(x):
    return x * _F.tanh(_F.softplus(x))


def hardsigmoid(input, inplace=False):
    return _inplace_apply(input, _hardsigmoid) if inplace else _hardsigmoid(input)


def hardswish(input, inplace=False):
    return _inplace_apply(input, _hardswish) if inplace else _hardswish(input)


def mish(input, inplace=False):
    return _inplace_apply(input, _mish) if inplace else _mish(input)


def logsigmoid(input):
    return -_F.softplus(-input)


def softsign(input):
    return input / (input.abs() + 1)


def tanhshrink(input):
    return input - _F.tanh(input)


def _get_softmax_dim(name, ndim, stacklevel=3):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. "
                  "Change the call to include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("softmax", input.dim(), _stacklevel)
    return _F.softmax(input, dim, dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("softmin", input.dim(), _stacklevel)
    return _F.softmax(-input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.dim(), _stacklevel)
    return _F.log_softmax(input, dim, dtype)


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    out = _F.dropout(input, p, training)
    return _inplace(input, out) if inplace and training else out


def dropout2d(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    out = _F.dropout2d(input, p, training)
    return _inplace(input, out) if inplace and training else out


def _feature_dropout_unbatched(name, input, p, training, inplace, batched_dim):
    """torch's dropout1d/dropout3d: feature dropout over (N, C, ...); an unbatched input gets a
    batch dimension of 1 for the draw (one draw per channel)."""
    _check_p(p)
    if input.dim() not in (batched_dim - 1, batched_dim):
        raise RuntimeError(f"{name}: Expected {batched_dim - 1}D or {batched_dim}D input, but received a "
                           f"{input.dim()}D input. Note that {name} exists to provide channel-wise dropout on inputs "
                           f"with {batched_dim - 2} spatial dimension{'s' if batched_dim > 3 else ''}, a channel "
                           f"dimension, and an optional batch dimension (i.e. {batched_dim - 1}D or {batched_dim}D "
                           f"inputs).")
    batched = input.dim() == batched_dim
    x = input if batched else input.unsqueeze(0)
    out = _F.dropout2d(x, p, training)
    if not batched:
        out = out.squeeze(0)
    return _inplace(input, out) if inplace and training else out


def dropout1d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout_unbatched("dropout1d", input, p, training, inplace, 3)


def dropout3d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout_unbatched("dropout3d", input, p, training, inplace, 5)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    if sparse:
        raise NotImplementedError("ember: embedding(sparse=True) is not supported (ember has no sparse tensors)")
    if padding_idx is not None:
        if padding_idx > 0 and padding_idx >= weight.size(0):
            raise AssertionError("Padding_idx must be within num_embeddings")
        if padding_idx < 0:
            if padding_idx < -weight.size(0):
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = weight.size(0) + padding_idx
    return _F.embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq)


one_hot = _F.one_hot


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    return _F.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale)


# torch's signature, plus the keyword-only batch_first (ember: (N, L, E) inputs and output, what
# nn.MultiheadAttention(batch_first=True) passes). Returns (attn_output, attn_weights or None).
multi_head_attention_forward = _F.multi_head_attention_forward


# ---- losses ----------------------------------------------------------------------------------

def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _F.cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _F.nll_loss(input, target, weight, ignore_index, reduction)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _F.mse_loss(input, target, _legacy_reduction(size_average, reduce, reduction))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _F.l1_loss(input, target, _legacy_reduction(size_average, reduce, reduction))


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    return _F.smooth_l1_loss(input, target, _legacy_reduction(size_average, reduce, reduction), beta)


def huber_loss(input, target, reduction="mean", delta=1.0):
    return _F.huber_loss(input, target, reduction, delta)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    return _F.binary_cross_entropy(input, target, weight, _legacy_reduction(size_average, reduce, reduction))


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    return _F.binary_cross_entropy_with_logits(input, target, weight,
                                               _legacy_reduction(size_average, reduce, reduction), pos_weight)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    return _F.kl_div(input, target, _legacy_reduction(size_average, reduce, reduction), log_target)


# ---- issue 15 layers: interpolation, pixel shuffle, instance / local response norm, distances, glu

__all__ += ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "pixel_shuffle", "pixel_unshuffle",
            "channel_shuffle", "native_channel_shuffle", "instance_norm", "local_response_norm", "pairwise_distance",
            "glu"]


def _is_integer(x):
    return isinstance(x, int) or (isinstance(x, _C.Tensor) and not x.is_floating_point() and x.dim() == 0)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
                antialias=False):
    """torch.nn.functional.interpolate; the sizes, modes, checks and kernels are C++ (F::interpolate).
    Here only torch's Python argument forms: an int / float for every spatial dim, or a sequence."""
    dim = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {list(input.shape[2:])} and output size of {size}. "
                    "Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                    "output size in (o1, o2, ...,oK) format.")
            if not all(_is_integer(x) for x in size):
                raise TypeError("expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                                f"Tuple[int, int, int], but got size with types {[type(x) for x in size]}")
            size = [int(x) for x in size]
        else:
            size = [int(size)] * max(dim, 0)
    if scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    "Input and scale_factor must have the same number of spatial dimensions, but "
                    f"got input with spatial dimensions of {list(input.shape[2:])} and "
                    f"scale_factor of shape {scale_factor}. "
                    "Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                    "scale_factor in (s1, s2, ...,sK) format.")
            scale_factor = [float(x) for x in scale_factor]
        else:
            scale_factor = [float(scale_factor)] * max(dim, 0)
    return _F.interpolate(input, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def pixel_shuffle(input, upscale_factor):
    return _F.pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input, downscale_factor):
    return _F.pixel_unshuffle(input, downscale_factor)


def channel_shuffle(input, groups):
    return _F.channel_shuffle(input, groups)


native_channel_shuffle = channel_shuffle


def _verify_spatial_size(size):
    size_prods = 1
    for i in range(2, len(size)):
        size_prods *= size[i]
    if size_prods == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {size}")


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    if use_input_stats:
        _verify_spatial_size(input.size())  # here for torch's message, which prints the Size
    return _F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha/size * sum of x^2 over `size` neighbouring channels)^beta; the window sum is an
    average pool over the channel axis of x^2 (zero padded), as torch's."""
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = input.mul(input)
    sizes = tuple(input.shape)
    div = div.reshape(sizes[0], 1, sizes[1], -1)
    div = pad(div, (0, 0, size // 2, (size - 1) // 2))
    div = avg_pool2d(div, (size, 1), stride=1).squeeze(1).reshape(sizes)
    div = div.mul(alpha).add(k).pow(beta)
    return input / div


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return _F.pairwise_distance(x1, x2, p, eps, keepdim)


def glu(input, dim=-1):
    return _F.glu(input, dim)


from ._functional_more import *  # noqa: E402,F401,F403  (more activations, dropouts, losses, pooling)
from . import _functional_more as _more  # noqa: E402
__all__ += _more.__all__
from ._functional_gaps import *  # noqa: E402,F401,F403  (ctc_loss, fractional max pooling, lp_pool3d, max_unpool3d)
from . import _functional_gaps as _gaps  # noqa: E402
__all__ += _gaps.__all__
