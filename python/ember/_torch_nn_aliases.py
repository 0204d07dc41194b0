"""torch.* names for nn.functional's layers (torch.conv2d, torch.layer_norm, torch.dropout, ...).

torch exposes its ATen ops at the top level with their ATen signatures, which differ from
nn.functional's in ways programs depend on: torch.batch_norm takes weight and bias before the
running statistics and wants every argument, torch.embedding takes the weight first, the losses
take reduction as an int (0 none, 1 mean, 2 sum), dropout's third argument is `train` with no
default. Each function here takes torch's signature and calls the nn.functional function, so
there is one implementation of each layer."""
from . import _C
from .nn import functional as _F

__all__ = [
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "avg_pool1d",
    "max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "adaptive_avg_pool1d",
    "adaptive_max_pool1d", "batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm", "dropout",
    "dropout_", "alpha_dropout", "alpha_dropout_", "feature_alpha_dropout", "feature_alpha_dropout_",
    "feature_dropout", "feature_dropout_", "embedding", "bilinear", "binary_cross_entropy_with_logits", "celu",
    "celu_", "selu", "selu_", "threshold", "threshold_", "rrelu", "rrelu_", "hardshrink", "cosine_similarity",
    "pairwise_distance", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle",
    "kl_div", "hinge_embedding_loss", "margin_ranking_loss", "poisson_nll_loss", "triplet_margin_loss",
    "cosine_embedding_loss", "constant_pad_nd",
]

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(op, value):
    """ATen's Reduction enum as nn.functional's string."""
    if isinstance(value, str) and value in _REDUCTIONS.values():
        return value
    try:
        return _REDUCTIONS[int(value)]
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"{op}(): reduction must be 0 (none), 1 (mean) or 2 (sum), but got {value!r}") from None


def _same_args(name):
    """torch.<name> whose arguments are nn.functional's (conv, pooling, pixel shuffles, ...)."""
    fn = getattr(_F, name)

    def op(*args, **kwargs):
        return fn(*args, **kwargs)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"torch.{name}: nn.functional.{name} under its torch.* name."
    return op


for _name in ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
              "adaptive_avg_pool1d", "bilinear", "celu", "selu", "hardshrink", "cosine_similarity",
              "pairwise_distance", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle"):
    globals()[_name] = _same_args(_name)


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True):
    return _F.avg_pool1d(input, kernel_size, stride or None, padding, ceil_mode, count_include_pad)


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _F.max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _F.max_pool2d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _F.max_pool3d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _F.max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode, return_indices=True)


def adaptive_max_pool1d(input, output_size):
    """(values, indices), as torch.adaptive_max_pool1d returns both."""
    return _F.adaptive_max_pool1d(input, output_size, return_indices=True)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    return _F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    return _F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    return _F.group_norm(input, num_groups, weight, bias, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
    return _F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    return _F.rms_norm(input, normalized_shape, weight, eps)


def _dropout_pair(name, functional):
    def op(input, p, train):
        if not train:  # torch hands back the input itself
            return input
        return functional(input, p, train)

    def op_(input, p, train):
        return functional(input, p, train, inplace=True)

    for f, n in ((op, name), (op_, name + "_")):
        f.__name__ = f.__qualname__ = n
        f.__doc__ = f"torch.{n}(input, p, train): nn.functional.{functional.__name__} with ATen's arguments."
    return op, op_


dropout, dropout_ = _dropout_pair("dropout", _F.dropout)
alpha_dropout, alpha_dropout_ = _dropout_pair("alpha_dropout", _F.alpha_dropout)
feature_alpha_dropout, feature_alpha_dropout_ = _dropout_pair("feature_alpha_dropout", _F.feature_alpha_dropout)


def _feature_dropout(input, p, train, inplace=False):
    """Whole channels zeroed (dim 1 of a batched input, dim 0 of an unbatched one), as ATen's
    feature_dropout: the rank decides, so 3-D input is (N, C, L) here, unlike F.dropout2d."""
    if p < 0 or p > 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not train or p == 0:
        return input
    if input.dim() < 2:
        raise RuntimeError(f"Feature dropout requires at least 2 dimensions in the input, got {input.dim()}")
    shape = list(input.shape[:2]) + [1] * (input.dim() - 2)
    keep = _C.empty(shape, dtype=input.dtype, device=input.device).bernoulli_(1 - p)
    mask = keep / (1 - p) if p < 1 else keep
    return input.mul_(mask) if inplace else input * mask


feature_dropout, feature_dropout_ = _dropout_pair("feature_dropout", _feature_dropout)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return _F.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                        scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=1):
    return _F.binary_cross_entropy_with_logits(input, target, weight, pos_weight=pos_weight,
                                               reduction=_reduction("binary_cross_entropy_with_logits", reduction))


def celu_(input, alpha=1.0):
    return _F.celu(input, alpha, inplace=True)


def selu_(input):
    return _F.selu(input, inplace=True)


def threshold(input, threshold, value):
    return _F.threshold(input, threshold, value)


def threshold_(input, threshold, value):
    return _F.threshold(input, threshold, value, inplace=True)


def rrelu(input, lower=0.125, upper=1.0 / 3.0, training=False, generator=None):
    return _F.rrelu(input, lower, upper, training)


def rrelu_(input, lower=0.125, upper=1.0 / 3.0, training=False, generator=None):
    return _F.rrelu(input, lower, upper, training, inplace=True)


def kl_div(input, target, reduction=1, *, log_target=False):
    return _F.kl_div(input, target, reduction=_reduction("kl_div", reduction), log_target=log_target)


def hinge_embedding_loss(input, target, margin=1.0, reduction=1):
    return _F.hinge_embedding_loss(input, target, margin, reduction=_reduction("hinge_embedding_loss", reduction))


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=1):
    return _F.margin_ranking_loss(input1, input2, target, margin,
                                  reduction=_reduction("margin_ranking_loss", reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return _F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                               reduction=_reduction("poisson_nll_loss", reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-06, swap=False, reduction=1):
    return _F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                  reduction=_reduction("triplet_margin_loss", reduction))


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=1):
    return _F.cosine_embedding_loss(input1, input2, target, margin,
                                    reduction=_reduction("cosine_embedding_loss", reduction))


def constant_pad_nd(input, pad, value=0):
    return _F.pad(input, pad, "constant", value)
