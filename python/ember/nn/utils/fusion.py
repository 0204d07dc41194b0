"""Folding an eval-mode BatchNorm into the convolution or linear layer before it: y = BN(Wx + b)
is one layer with W' = W * gamma / sqrt(var + eps) (per output channel) and
b' = (b - mean) * gamma / sqrt(var + eps) + beta, so inference runs one op instead of two."""
import copy

from ... import _C
from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """(weight, bias) of the convolution that computes bn(conv(x)); transpose: a transposed
    convolution, whose output channels are the weight's dim 1."""
    w_dtype = conv_w.dtype
    b_dtype = conv_b.dtype if conv_b is not None else w_dtype
    conv_b = _C.zeros_like(bn_rm) if conv_b is None else conv_b
    bn_w = _C.ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = _C.zeros_like(bn_rm) if bn_b is None else bn_b
    scale = bn_w * (bn_rv + bn_eps).rsqrt()
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.dim() - 2)
    weight = (conv_w * scale.reshape(shape)).to(w_dtype)
    bias = ((conv_b - bn_rm) * scale + bn_b).to(b_dtype)
    return Parameter(weight, conv_w.requires_grad), Parameter(bias, conv_b.requires_grad)


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of `conv` computing bn(conv(x)) for both in eval mode."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused = copy.deepcopy(conv)
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("BatchNorm without running statistics cannot be fused")
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                    bn.eps, bn.weight, bn.bias, transpose)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """(weight, bias) of the linear layer that computes bn(linear(x))."""
    w_dtype = linear_w.dtype
    b_dtype = linear_b.dtype if linear_b is not None else w_dtype
    linear_b = _C.zeros_like(bn_rm) if linear_b is None else linear_b
    scale = bn_w * (bn_rv + bn_eps).rsqrt()
    weight = linear_w * scale.unsqueeze(-1).to(w_dtype)
    bias = ((linear_b - bn_rm) * scale + bn_b).to(b_dtype)
    return Parameter(weight, linear_w.requires_grad), Parameter(bias, linear_b.requires_grad)


def fuse_linear_bn_eval(linear, bn):
    """A copy of `linear` computing bn(linear(x)) for both in eval mode (BatchNorm1d over the
    linear layer's features)."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError("To fuse, linear.out_features must equal bn.num_features or bn.num_features must be 1")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("BatchNorm without running statistics cannot be fused")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                      bn.eps, bn.weight, bn.bias)
    return fused
