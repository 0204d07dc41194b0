"""More of torch.nn.functional, composed from ember's differentiable ops: the remaining
activations (selu, celu, rrelu, threshold, shrinks), alpha and feature dropouts, the margin,
embedding and likelihood losses, LP pooling and max-unpooling. Re-exported by functional.py.

Each follows torch 2.x's formula (the same terms in the same order where rounding could show)
so values and gradients match torch's; the gradients come from autograd through the parts.
"""
import math

from .. import _C
from .._C import _nn as _F
from ..autograd import Function
from ..amp.autocast_mode import _autocast_op

__all__ = [
    "selu", "selu_", "celu", "celu_", "rrelu", "rrelu_", "threshold", "threshold_", "hardshrink", "softshrink",
    "alpha_dropout", "feature_alpha_dropout", "margin_ranking_loss",
    "hinge_embedding_loss", "soft_margin_loss", "multilabel_soft_margin_loss", "cosine_embedding_loss",
    "triplet_margin_loss", "triplet_margin_with_distance_loss", "multi_margin_loss", "multilabel_margin_loss",
    "gaussian_nll_loss", "poisson_nll_loss", "lp_pool1d", "lp_pool2d", "max_unpool1d", "max_unpool2d",
    "affine_grid", "grid_sample", "embedding_bag", "gumbel_softmax", "pdist",
]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _apply(input, fn, inplace):
    from .functional import _inplace_apply
    return _inplace_apply(input, fn) if inplace else fn(input)


def _reduce(loss, reduction):
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


# ---- activations ------------------------------------------------------------------------------

def selu(input, inplace=False):
    return _apply(input, lambda x: _F.elu(x, _SELU_ALPHA) * _SELU_SCALE, inplace)


def selu_(input):
    return selu(input, True)


def celu(input, alpha=1.0, inplace=False):
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: celu: alpha must not be 0")
    return _apply(input, lambda x: _F.elu(x / alpha, 1.0) * alpha, inplace)


def celu_(input, alpha=1.0):
    return celu(input, alpha, True)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU: in training each non-positive element is scaled by its own slope
    drawn from U(lower, upper); in eval by the mean slope (lower + upper) / 2."""
    if not training:
        return _apply(input, lambda x: _F.leaky_relu(x, (lower + upper) / 2), inplace)
    slopes = _C.empty_like(input.detach()).uniform_(lower, upper)
    return _apply(input, lambda x: x * _C.where(x > 0, _C.ones_like(x), slopes), inplace)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, True)


def threshold(input, threshold, value, inplace=False):
    return _apply(input, lambda x: _C.where(x > threshold, x, _C.full_like(x, value)), inplace)


def threshold_(input, threshold, value):
    return globals()["threshold"](input, threshold, value, True)


def hardshrink(input, lambd=0.5):
    return _C.where(input.abs() > lambd, input, _C.zeros_like(input))


def softshrink(input, lambd=0.5):
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    zero = _C.zeros_like(input)
    return _C.where(input > lambd, input - lambd, _C.where(input < -lambd, input + lambd, zero))


# ---- dropouts ---------------------------------------------------------------------------------

def _noise_shape(input, feature):
    if not feature:
        return list(input.shape)
    return list(input.shape[:2]) + [1] * (input.dim() - 2)


def _alpha_dropout(input, p, training, inplace, feature):
    from .functional import _check_p
    _check_p(p)
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        return _apply(input, lambda x: x * 0.0, inplace)
    # torch's alpha dropout: dropped units take SELU's negative saturation value, then an affine
    # map a * x + b restores zero mean and unit variance.
    alpha = 1.7580993408473766
    a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    keep = _C.empty(_noise_shape(input, feature), dtype=input.dtype, device=input.device).bernoulli_(1 - p)
    b = (keep - 1) * (alpha * a) + alpha * a * p
    noise = keep * a
    return _apply(input, lambda x: x * noise + b, inplace)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _alpha_dropout(input, p, training, inplace, False)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _alpha_dropout(input, p, training, inplace, True)


# ---- losses -----------------------------------------------------------------------------------

def _legacy(size_average, reduce, reduction):
    from .functional import _legacy_reduction
    return _legacy_reduction(size_average, reduce, reduction)


@_autocast_op("margin_ranking_loss")
def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {tuple(input1.shape)}, input2: {tuple(input2.shape)}, "
                           f"target: {tuple(target.shape)} ")
    loss = (-target * (input1 - input2) + margin).clamp_min(0)
    return _reduce(loss, _legacy(size_average, reduce, reduction))


@_autocast_op("hinge_embedding_loss")
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    zeros = _C.zeros_like(input)
    margin_clamp = (margin - input).clamp_min(0)
    output_margin = _C.where(target != 1, margin_clamp, zeros)
    output_self = _C.where(target != -1, input, zeros)
    return _reduce(output_margin + output_self, _legacy(size_average, reduce, reduction))


@_autocast_op("soft_margin_loss")
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    loss = (-input * target).exp().log1p()
    return _reduce(loss, _legacy(size_average, reduce, reduction))


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy(size_average, reduce, reduction)
    from .functional import logsigmoid
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(dim=input.dim() - 1) / input.size(-1)
    return _reduce(loss, reduction)


@_autocast_op("cosine_embedding_loss")
def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    if input1.dim() != input2.dim():
        raise RuntimeError(f"cosine_embedding_loss: input1 and input2 must have the same number of dimensions, "
                           f"but got {input1.dim()} and {input2.dim()}")
    dim = input1.dim() - 1
    eps = 1e-12
    prod_sum = (input1 * input2).sum(dim)
    mag1 = (input1 * input1).sum(dim) + eps
    mag2 = (input2 * input2).sum(dim) + eps
    cos = prod_sum / (mag1 * mag2).sqrt()
    zeros = _C.zeros_like(cos)
    pos = 1 - cos
    neg = (cos - margin).clamp_min(0)
    out = _C.where(target == 1, pos, zeros) + _C.where(target == -1, neg, zeros)
    return _reduce(out, _legacy(size_average, reduce, reduction))


@_autocast_op("triplet_margin_loss")
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    if not (anchor.dim() == positive.dim() == negative.dim()):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {anchor.dim()}D, positive {positive.dim()}D, and "
                           f"negative {negative.dim()}D inputs")
    d_pos = _F.pairwise_distance(anchor, positive, p, eps)
    d_neg = _F.pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = _C.minimum(d_neg, _F.pairwise_distance(positive, negative, p, eps))
    loss = (margin + d_pos - d_neg).clamp_min(0)
    return _reduce(loss, _legacy(size_average, reduce, reduction))


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean"):
    if margin <= 0:
        raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} instead")
    dist = distance_function if distance_function is not None else _F.pairwise_distance
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = _C.minimum(d_neg, dist(positive, negative))
    return _reduce((margin + d_pos - d_neg).clamp_min(0), reduction)


@_autocast_op("multi_margin_loss")
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    reduction = _legacy(size_average, reduce, reduction)
    unbatched = input.dim() <= 1
    x = input.reshape(1, -1) if unbatched else input
    y = target.reshape(-1)
    if x.dim() != 2 or y.numel() != x.size(0):
        raise RuntimeError(f"inconsistent target size, expected {x.size(0)} but got {tuple(target.shape)}")
    C = x.size(1)
    x_y = x.gather(1, y.unsqueeze(1))
    z = (margin - x_y + x).clamp_min(0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight.index_select(0, y).unsqueeze(1)
    not_target = _C.arange(C, device=x.device).unsqueeze(0) != y.unsqueeze(1)
    loss = _C.where(not_target, z, _C.zeros_like(z)).sum(1) / C
    if unbatched and reduction == "none":
        loss = loss.reshape(target.shape)
    return _reduce(loss, reduction)


@_autocast_op("multilabel_margin_loss")
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy(size_average, reduce, reduction)
    unbatched = input.dim() <= 1
    x = input.reshape(1, -1) if unbatched else input
    y = target.reshape(1, -1) if unbatched else target
    if y.shape != x.shape:
        raise RuntimeError(f"inconsistent target size: {tuple(target.shape)} for input of size: "
                           f"{tuple(input.shape)}")
    C = x.size(1)
    # the targets of a row are its indices before the first -1
    listed = (y >= 0).to(_C.int64).cumprod(1) > 0
    classes = _C.arange(C, device=x.device)
    is_target = (y.unsqueeze(2) == classes).logical_and(listed.unsqueeze(2)).any(1)
    hinge = (1 - (x.unsqueeze(2) - x.unsqueeze(1))).clamp_min(0)
    pair = is_target.unsqueeze(2).logical_and(is_target.logical_not().unsqueeze(1))
    loss = _C.where(pair, hinge, _C.zeros_like(hinge)).sum((1, 2)) / C
    if unbatched:
        loss = loss.reshape(()) if reduction == "none" else loss
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    if isinstance(var, (int, float)):
        var = _C.full_like(input, float(var))
    if var.shape != input.shape:
        if input.shape[:-1] == var.shape:  # homoscedastic: one variance per sample
            var = var.unsqueeze(-1)
        elif input.shape[:-1] == var.shape[:-1] and var.size(-1) == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    var = var.clone()
    from .. import no_grad
    with no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


@_autocast_op("poisson_nll_loss")
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    reduction = _legacy(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        loss = loss + _C.where(target > 1, stirling, _C.zeros_like(stirling))
    return _reduce(loss, reduction)


# ---- LP pooling and max-unpooling -------------------------------------------------------------

def _pair(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    from .functional import avg_pool1d
    k = kernel_size[0] if isinstance(kernel_size, (tuple, list)) else kernel_size
    if stride is not None:
        out = avg_pool1d(input.pow(norm_type), k, stride, 0, ceil_mode)
    else:
        out = avg_pool1d(input.pow(norm_type), k, padding=0, ceil_mode=ceil_mode)
    return (out.sign() * _F.relu(out.abs())).mul(k).pow(1.0 / norm_type)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    from .functional import avg_pool2d
    kh, kw = _pair(kernel_size, 2)
    if stride is not None:
        out = avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = avg_pool2d(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    return (out.sign() * _F.relu(out.abs())).mul(kh * kw).pow(1.0 / norm_type)


def _unpool(name, input, indices, kernel_size, stride, padding, output_size, n):
    k = _pair(kernel_size, n)
    s = _pair(stride if stride is not None else kernel_size, n)
    p = _pair(padding, n)
    spatial = list(input.shape[-n:])
    default = [(spatial[i] - 1) * s[i] - 2 * p[i] + k[i] for i in range(n)]
    if output_size is None:
        size = default
    else:
        if len(output_size) == n + 2:
            output_size = output_size[2:]
        if len(output_size) != n:
            raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} elements, but it has a "
                             f"length of '{len(output_size)}'")
        size = [int(v) for v in output_size]
        for i in range(n):
            lo, hi = default[i] - s[i], default[i] + s[i]
            if not lo < size[i] < hi:
                raise ValueError(f"invalid output_size \"{output_size}\" (dim {i} must be between {lo} and {hi})")
    if indices.shape != input.shape:
        raise RuntimeError(f"{name}: Expected shape of indices to be same as that of the input tensor "
                           f"({tuple(input.shape)}) but got indices tensor with shape: {tuple(indices.shape)}")
    lead = list(input.shape[:-n])
    plane = 1
    for v in size:
        plane *= v
    flat_in = input.reshape(lead + [-1])
    flat_idx = indices.reshape(lead + [-1])
    if flat_idx.numel() and (bool((flat_idx < 0).any()) or bool((flat_idx >= plane).any())):
        raise RuntimeError(f"Found an invalid max index: {int(flat_idx.max())} "
                           f"(output volumes are of size {'x'.join(map(str, size))})")
    out = _C.zeros(lead + [plane], dtype=input.dtype, device=input.device)
    out = out.scatter(-1, flat_idx, flat_in)
    return out.reshape(lead + size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _unpool("max_unpool1d", input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _unpool("max_unpool2d", input, indices, kernel_size, stride, padding, output_size, 2)


# ---- spatial transformers: affine_grid and grid_sample (2-D) ----------------------------------

def _base_coords(n, align_corners, like):
    """The normalized coordinate of each of n pixel centres (torch's linspace_from_neg_one)."""
    if n <= 1:
        return _C.zeros([max(n, 0)], dtype=like.dtype, device=like.device)
    c = _C.linspace(-1.0, 1.0, n, dtype=like.dtype, device=like.device)
    return c if align_corners else c * ((n - 1) / n)


def affine_grid(theta, size, align_corners=None):
    if align_corners is None:
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = list(size)
    if len(size) == 4:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {tuple(size)}. "
                             f"Got {tuple(theta.shape)}.")
        N, _, H, W = size
        xs = _base_coords(W, align_corners, theta)
        ys = _base_coords(H, align_corners, theta)
        base = _C.stack([xs.reshape(1, W).expand(H, W), ys.reshape(H, 1).expand(H, W),
                         _C.ones([H, W], dtype=theta.dtype, device=theta.device)], -1)
        grid = base.reshape(1, H * W, 3).matmul(theta.transpose(1, 2))  # (N, H*W, 2)
        return grid.reshape(N, H, W, 2)
    if len(size) == 5:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {tuple(size)}. "
                             f"Got {tuple(theta.shape)}.")
        N, _, D, H, W = size
        xs = _base_coords(W, align_corners, theta).reshape(1, 1, W).expand(D, H, W)
        ys = _base_coords(H, align_corners, theta).reshape(1, H, 1).expand(D, H, W)
        zs = _base_coords(D, align_corners, theta).reshape(D, 1, 1).expand(D, H, W)
        one = _C.ones([D, H, W], dtype=theta.dtype, device=theta.device)
        base = _C.stack([xs, ys, zs, one], -1)
        return base.reshape(1, D * H * W, 4).matmul(theta.transpose(1, 2)).reshape(N, D, H, W, 3)
    raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                              f"respectively. Got size {tuple(size)}.")


def _unnormalize(coord, size, align_corners):
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord, lo, hi):
    """Reflects coordinates into [lo, hi] by folding at both ends (mirror padding)."""
    if hi == lo:
        return _C.zeros_like(coord) + lo
    span = hi - lo
    x = (coord - lo).abs()
    flips = (x / span).floor()
    extra = x - flips * span
    even = (flips.remainder(2) == 0)
    return _C.where(even, extra + lo, span - extra + lo)


def _source_coord(coord, size, padding_mode, align_corners):
    x = _unnormalize(coord, size, align_corners)
    if padding_mode == "border":
        x = x.clamp(0, size - 1)
    elif padding_mode == "reflection":
        x = _reflect(x, 0, size - 1) if align_corners else _reflect(x, -0.5, size - 0.5)
        x = x.clamp(0, size - 1)
    return x


def _gather2d(flat, W, H, ix, iy):
    """input values at integer pixel (ix, iy) (N, Ho, Wo) of flat (N, C, H*W), zero outside."""
    N, C = flat.shape[0], flat.shape[1]
    inside = (ix >= 0).logical_and(ix <= W - 1).logical_and(iy >= 0).logical_and(iy <= H - 1)
    idx = (iy.clamp(0, H - 1) * W + ix.clamp(0, W - 1)).to(_C.int64).reshape(N, 1, -1).expand(N, C, -1)
    vals = flat.gather(2, idx).reshape(N, C, *ix.shape[1:])
    return vals * inside.unsqueeze(1).to(flat.dtype)


def _cubic_weights(t, A=-0.75):
    def near(x):
        return ((A + 2) * x - (A + 3)) * x * x + 1

    def far(x):
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


@_autocast_op("grid_sample")
def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        align_corners = False
    if input.dim() != 4 or grid.dim() != 4 or grid.size(-1) != 2:
        raise RuntimeError(f"grid_sampler(): expected 4D input and grid with same number of dimensions and last "
                           f"dimension 2 (ember samples 2-D images), but got input with sizes "
                           f"{list(input.shape)} and grid with sizes {list(grid.shape)}")
    if input.size(0) != grid.size(0):
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if mode != "bicubic" and input.device.type == "cpu" and grid.device.type == "cpu" and input.dtype == grid.dtype:
        # one kernel (torch's grid_sampler_2d): the composite below was 10x behind torch
        return _C._nn.grid_sample(input, grid, mode, padding_mode, align_corners)
    N, C, H, W = input.shape
    flat = input.reshape(N, C, H * W)
    gx, gy = grid[..., 0], grid[..., 1]
    if mode == "bicubic":
        # bicubic reads a 4x4 neighbourhood of the unclamped coordinate; padding applies per tap
        x = _unnormalize(gx, W, align_corners)
        y = _unnormalize(gy, H, align_corners)
        x0, y0 = x.floor(), y.floor()
        wx, wy = _cubic_weights(x - x0), _cubic_weights(y - y0)
        out = None
        for j in range(4):
            row = None
            for i in range(4):
                ix, iy = x0 - 1 + i, y0 - 1 + j
                if padding_mode != "zeros":
                    ix = _pad_tap(ix, W, padding_mode, align_corners)
                    iy = _pad_tap(iy, H, padding_mode, align_corners)
                term = _gather2d(flat, W, H, ix, iy) * wx[i].unsqueeze(1)
                row = term if row is None else row + term
            term = row * wy[j].unsqueeze(1)
            out = term if out is None else out + term
        return out
    x = _source_coord(gx, W, padding_mode, align_corners)
    y = _source_coord(gy, H, padding_mode, align_corners)
    if mode == "nearest":
        return _ZeroGridGrad.apply(_gather2d(flat, W, H, x.round(), y.round()), grid)
    x0, y0 = x.floor(), y.floor()
    tx, ty = (x - x0).unsqueeze(1), (y - y0).unsqueeze(1)
    v00 = _gather2d(flat, W, H, x0, y0)
    v01 = _gather2d(flat, W, H, x0 + 1, y0)
    v10 = _gather2d(flat, W, H, x0, y0 + 1)
    v11 = _gather2d(flat, W, H, x0 + 1, y0 + 1)
    return v00 * (1 - tx) * (1 - ty) + v01 * tx * (1 - ty) + v10 * (1 - tx) * ty + v11 * tx * ty


class _ZeroGridGrad(Function):
    """Passes the sampled output through and gives the grid a zero gradient: nearest sampling is
    piecewise constant in the grid, and torch returns zeros for it rather than no gradient."""

    @staticmethod
    def forward(ctx, out, grid):
        ctx.grid_shape = list(grid.shape)
        return out.view_as(out)

    @staticmethod
    def backward(ctx, grad):
        return grad, _C.zeros(ctx.grid_shape, dtype=grad.dtype, device=grad.device)


def _pad_tap(i, size, padding_mode, align_corners):
    if padding_mode == "border":
        return i.clamp(0, size - 1)
    r = _reflect(i, 0, size - 1) if align_corners else _reflect(i, -0.5, size - 0.5)
    return r.clamp(0, size - 1)


# ---- embedding_bag, gumbel_softmax, pdist -----------------------------------------------------

def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sums, means or maxes of bags of embeddings. A 2-D input is one bag per row; a 1-D input is
    cut into bags at `offsets`. CPU tensors run one op (F::embedding_bag in C++); elsewhere the
    bags are padded to one (B, L) index matrix and reduced with a mask, so autograd gives torch's
    gradients (padding_idx rows and padding get none)."""
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, but got {mode}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                                  f"on GitHub.")
    if max_norm is not None or scale_grad_by_freq or sparse:
        from .functional import embedding
        if max_norm is not None:  # renormalise the looked-up rows in place, as embedding does
            embedding(input.reshape(-1), weight, None, max_norm, norm_type)
    num = weight.size(0)
    if padding_idx is not None:
        if padding_idx < 0:
            padding_idx += num
        if not 0 <= padding_idx < num:
            raise AssertionError("padding_idx must be within the number of embeddings")
    if input.dim() == 2 and offsets is not None:
        raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed "
                         "length sequences. However, found offsets of type {}".format(type(offsets)))
    if input.dim() == 1 and offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if input.dim() == 1 and offsets.dim() != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    if input.dim() not in (1, 2):
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if input.device.type == weight.device.type and input.device.type in ("cpu", "meta"):
        # one op (_embedding_bag, C++; meta has its shapes): the composite below was 3.7x behind torch
        return _C._nn.embedding_bag(input, weight, offsets, mode, per_sample_weights, include_last_offset,
                                    padding_idx)
    if input.dim() == 2:  # (the argument checks above hold for this path too)
        idx = input
        valid = _C.ones(list(input.shape), dtype=_C.bool, device=input.device)
        psw = per_sample_weights
    else:
        n = input.size(0)
        offs = offsets.to(_C.int64)
        bounds = offs if include_last_offset else _C.cat([offs, _C.tensor([n], dtype=_C.int64, device=offs.device)])
        if offs.numel() and int(offs[0]) != 0:
            raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
                               f"from position 0. However, got {int(offs[0])}")
        if offs.numel() and int(offs[-1]) > n:
            raise RuntimeError(f"offsets[-1] can not be greater than input's length ({n}), but got "
                               f"offsets[-1] of {int(offs[-1])}")
        B = max(bounds.numel() - 1, 0)
        # The (B, L) matrix of each bag's positions, L the longest bag, built with tensor ops (a
        # Python loop over the bags cost 18x torch's whole embedding_bag for 256 bags of 16).
        lengths = bounds[1:] - bounds[:-1]
        if B and bool((lengths < 0).any()):
            i = int((lengths < 0).nonzero()[0, 0])
            raise RuntimeError(f"embedding_bag: offsets must be non-decreasing, but got offsets[{i}] = "
                               f"{int(bounds[i])} > offsets[{i + 1}] = {int(bounds[i + 1])}")
        L = max(int(lengths.max()) if B else 0, 1)
        steps = _C.arange(L, dtype=_C.int64, device=offs.device).unsqueeze(0)
        inside = steps < lengths.unsqueeze(1)
        pos_t = _C.where(inside, bounds[:-1].unsqueeze(1) + steps, _C.full_like(inside, -1, dtype=_C.int64))
        valid = pos_t >= 0
        take = pos_t.clamp_min(0).reshape(-1)
        idx = input.index_select(0, take).reshape(B, L) if n else _C.zeros([B, L], dtype=_C.int64,
                                                                          device=input.device)
        psw = None if per_sample_weights is None else per_sample_weights.index_select(0, take).reshape(B, L)
    if padding_idx is not None:
        valid = valid.logical_and(idx != padding_idx)
    emb = weight.index_select(0, idx.reshape(-1)).reshape(*idx.shape, weight.size(1))
    mask = valid.unsqueeze(-1).to(weight.dtype)
    if mode == "max":
        neg = _C.full_like(emb, float("-inf"))
        out = _C.where(valid.unsqueeze(-1), emb, neg).amax(1)
        return _C.where(valid.any(1).unsqueeze(-1), out, _C.zeros_like(out))
    if psw is not None:
        emb = emb * psw.unsqueeze(-1)
    total = (emb * mask).sum(1)
    if mode == "sum":
        return total
    count = valid.sum(1).to(weight.dtype).clamp_min(1).unsqueeze(-1)
    return total / count


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """Samples from the Gumbel-softmax distribution; hard=True returns one-hot samples whose
    gradient is the soft sample's (straight-through)."""
    gumbels = -_C.empty_like(logits.detach()).exponential_().log()
    y_soft = _F.softmax((logits + gumbels) / tau, dim, None)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim, keepdim=True)
    y_hard = _C.zeros_like(logits.detach()).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def pdist(input, p=2):
    """The p-norm distance between every pair of rows of an (N, M) input (torch.pdist, C++)."""
    return _C.pdist(input, p)
