"""The last pieces of torch.nn.functional, composed from ember's ops: ctc_loss, fractional max
pooling (2-D, 3-D, with indices), lp_pool3d and max_unpool3d. Re-exported by functional.py.

ctc_loss on CPU float tensors is the C++ op (src/nn/functional/ctc_loss.cpp, cpu/ctc_kernels.cpp);
elsewhere (CUDA, ...) it is an autograd Function over ember ops: the forward runs the CTC alpha
recursion in log space (one loop over time, vectorised over the batch and the extended-label
positions), the backward the beta recursion, and the gradient is torch's (see _CTCLoss.backward). Fractional max pooling
computes torch's pooling intervals in the input's dtype, so the same _random_samples give
torch's output and indices; its gradient flows through a gather.
"""
import math

from .. import _C
from ..autograd import Function
from ..autograd.function import once_differentiable

__all__ = ["ctc_loss", "fractional_max_pool2d", "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
           "fractional_max_pool3d_with_indices", "lp_pool3d", "max_unpool3d"]

_CHECKING = " (while checking arguments for ctc_loss_allocate_outputs)"


# ---- CTC loss -----------------------------------------------------------------------------------

def _lengths(v, name):
    """input_lengths / target_lengths as a list of ints (a tensor, a sequence or, unbatched, an int)."""
    if isinstance(v, _C.Tensor):
        return [int(x) for x in v.reshape(-1).tolist()]
    if isinstance(v, (int, float)):
        return [int(v)]
    try:
        return [int(x) for x in v]
    except TypeError:
        raise TypeError(f"ctc_loss(): {name} must be a Tensor or a sequence of ints, not {type(v).__name__}") \
            from None


def _logaddexp3(a, b, c):
    """log(e^a + e^b + e^c) elementwise; -inf when all three are -inf."""
    return _C.logsumexp(_C.stack([a, b, c]), 0)


class _CTCLoss(Function):
    """Per-sample negative log likelihoods (N,) of padded targets (N, S).

    The gradient is torch's: d/d log_probs[t, n, c] = grad_n * (exp(log_probs[t, n, c]) -
    sum over the positions s labelled c of exp(alpha_t(s) + beta_t(s) + nll_n - log_probs[t, n, c]))
    for t < input_length[n], zero after. The exp(log_probs) term is the gradient of the loss with
    respect to the logits of a log_softmax (the case ctc_loss is made for): summed over c it is 1,
    which is what log_softmax's backward then removes, so through log_softmax the result is the
    exact gradient (the term alone is what torch returns as log_probs.grad).
    """

    @staticmethod
    def forward(ctx, log_probs, targets, input_lengths, target_lengths, blank, zero_infinity):
        T, N, C = log_probs.shape
        S = targets.shape[1]
        L = 2 * S + 1
        dev = log_probs.device
        neg = float("-inf")
        il = _C.tensor(input_lengths, dtype=_C.int64, device=dev)
        tl = _C.tensor(target_lengths, dtype=_C.int64, device=dev)
        pos = _C.arange(L, device=dev).unsqueeze(0)                        # (1, L)
        valid = pos < (2 * tl + 1).unsqueeze(1)                              # (N, L)
        # the extended labels: blank, l1, blank, l2, ..., blank (blank past each target's end)
        ext = _C.full((N, L), blank, dtype=_C.int64, device=dev)
        if S:
            ext[:, 1::2] = targets
        ext = _C.where(valid, ext, _C.full_like(ext, blank))
        lp_ext = log_probs.gather(2, ext.unsqueeze(0).expand(T, N, L))      # (T, N, L)
        # the skip s-2 -> s: into a label that differs from the label two positions back
        skip = _C.zeros((N, L), dtype=_C.bool, device=dev)
        if S > 1:
            skip[:, 3::2] = ext[:, 3::2] != ext[:, 1:-2:2]
        neg_n1 = _C.full((N, 1), neg, dtype=log_probs.dtype, device=dev)
        neg_n2 = _C.full((N, 2), neg, dtype=log_probs.dtype, device=dev)
        neg_nl = _C.full((N, L), neg, dtype=log_probs.dtype, device=dev)

        skip_add = _C.where(skip, _C.zeros_like(neg_nl), neg_nl)  # 0 where the skip is allowed, else -inf
        alphas = []
        if T:
            lp_rows = lp_ext.unbind(0)
            start = (pos == 0) | ((pos == 1) & (tl > 0).unsqueeze(1))
            alpha = _C.where(start, lp_rows[0], neg_nl)
            alphas.append(alpha)
            first_end = min(input_lengths)
            for t in range(1, T):
                a_pad = _C.cat([neg_n2, alpha], 1)
                new = _logaddexp3(alpha, a_pad[:, 1:L + 1], a_pad[:, :L] + skip_add) + lp_rows[t]
                if t >= first_end:  # a sequence that has ended keeps its last alpha
                    new = _C.where((il > t).unsqueeze(1), new, alpha)
                alpha = new
                alphas.append(alpha)
            # log p = logaddexp(alpha(L_n - 1), alpha(L_n - 2)) at t = T_n - 1
            last = (2 * tl).unsqueeze(1)
            a_last = alpha.gather(1, last)
            a_prev = _C.where((tl > 0).unsqueeze(1), alpha.gather(1, (last - 1).clamp_min(0)), neg_n1)
            ll = _C.logsumexp(_C.cat([a_last, a_prev], 1), 1)
        else:
            ll = _C.full((N,), neg, dtype=log_probs.dtype, device=dev)
        # an empty input: probability 1 for an empty target, 0 otherwise
        ll = _C.where(il == 0, _C.where(tl == 0, _C.zeros_like(ll), _C.full_like(ll, neg)), ll)
        nll = -ll
        ctx.save_for_backward(log_probs, nll)
        ctx.state = (alphas, lp_ext, ext, skip, il, tl, zero_infinity, input_lengths)
        return nll

    @staticmethod
    @once_differentiable  # as torch's: no derivative of the CTC backward
    def backward(ctx, grad_nll):
        log_probs, nll = ctx.saved_tensors
        alphas, lp_ext, ext, skip, il, tl, zero_infinity, input_lengths = ctx.state
        ctx.state = None
        T, N, C = log_probs.shape
        L = ext.shape[1]
        dev = log_probs.device
        neg = float("-inf")
        if T == 0:
            return _C.zeros_like(log_probs), None, None, None, None, None
        neg_n2 = _C.full((N, 2), neg, dtype=log_probs.dtype, device=dev)
        neg_nl = _C.full((N, L), neg, dtype=log_probs.dtype, device=dev)
        pos = _C.arange(L, device=dev).unsqueeze(0)
        final = (pos == (2 * tl).unsqueeze(1)) | ((pos == (2 * tl - 1).unsqueeze(1)) & (tl > 0).unsqueeze(1))
        skip_up = _C.cat([skip, _C.zeros((N, 2), dtype=_C.bool, device=dev)], 1)[:, 2:]  # s -> s+2
        skip_up_add = _C.where(skip_up, _C.zeros_like(neg_nl), neg_nl)
        ends = (il - 1).unsqueeze(1)
        end_steps = set(v - 1 for v in input_lengths)
        lp_rows = lp_ext.unbind(0)
        # beta_t(s): log probability of emitting the rest from position s at t (including t's
        # emission); -inf after a sequence's end, which the recursion keeps until t = end
        betas = [None] * T
        beta = neg_nl
        for t in range(T - 1, -1, -1):
            b_pad = _C.cat([beta, neg_n2], 1)
            beta = _logaddexp3(beta, b_pad[:, 1:L + 1], b_pad[:, 2:] + skip_up_add) + lp_rows[t]
            if t in end_steps:
                beta = _C.where(ends == t, _C.where(final, lp_rows[t], neg_nl), beta)
            betas[t] = beta
        ab = _C.stack(alphas) + _C.stack(betas)                                  # (T, N, L)
        # log sum over the positions of each label c of exp(alpha + beta)
        m = ab.amax(2, keepdim=True)
        m = _C.where(m == neg, _C.zeros_like(m), m)
        summed = _C.zeros((T, N, C), dtype=log_probs.dtype, device=dev).scatter_add(
            2, ext.unsqueeze(0).expand(T, N, L), (ab - m).exp())
        lcab = summed.log() + m
        grad = (log_probs.exp() - (lcab + nll.view(1, N, 1) - log_probs).exp()) * grad_nll.view(1, N, 1)
        keep = _C.arange(T, device=dev).unsqueeze(1) < il.unsqueeze(0)          # (T, N)
        if zero_infinity:
            keep = keep & (nll != float("inf")).unsqueeze(0)
        grad = _C.where(keep.unsqueeze(2), grad, _C.zeros_like(grad))
        return grad, None, None, None, None, None


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    r"""The Connectionist Temporal Classification loss (torch.nn.functional.ctc_loss).

    log_probs: (T, N, C) or unbatched (T, C) log-probabilities (normally log_softmax outputs);
    targets: padded (N, S) or concatenated 1-D labels (never `blank`); input_lengths and
    target_lengths: tensors or sequences of N ints. reduction 'mean' divides each sample's loss by
    its target length (at least 1) and averages over the batch; zero_infinity replaces infinite
    losses (no alignment is possible) and their gradients by zeros.
    """
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_probs.device.type == "cpu" and log_probs.dtype in (_C.float32, _C.float64) \
            and isinstance(targets, _C.Tensor):
        # The C++ op (F::ctc_loss: the same checks, recursions per sample on every thread).
        il = _C.tensor(_lengths(input_lengths, "input_lengths"), dtype=_C.int64)
        tl = _C.tensor(_lengths(target_lengths, "target_lengths"), dtype=_C.int64)
        return _C._nn.ctc_loss(log_probs, targets, il, tl, int(blank), reduction, bool(zero_infinity))
    batched = log_probs.dim() == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)
    if lp.dim() != 3:
        raise RuntimeError(f"Expected 3-dimensional tensor, but got {lp.dim()}-dimensional tensor for argument #1 "
                           f"'log_probs'{_CHECKING}")
    if not batched:
        targets = targets.unsqueeze(0)
    if lp.dtype not in (_C.float32, _C.float64):
        raise NotImplementedError(f"\"ctc_loss_cpu\" not implemented for '{lp.dtype._scalar_type_name}'")
    T, N, C = lp.shape
    if not (0 <= blank < C):
        raise RuntimeError("blank must be in label range")
    il = _lengths(input_lengths, "input_lengths")
    tls = _lengths(target_lengths, "target_lengths")
    if len(il) != N:
        raise RuntimeError("input_lengths must be of size batch_size")
    if len(tls) != N:
        raise RuntimeError("target_lengths must be of size batch_size")
    if targets.dim() not in (1, 2):
        raise RuntimeError(f"Expected 1 to 2 dimensions, but got {targets.dim()}-dimensional tensor for argument "
                           f"#2 'targets'{_CHECKING}")
    for v in tls:
        if v < 0:
            raise RuntimeError(f"Expected target_lengths to have value at least 0, but got value {v}{_CHECKING}")
    targets = targets.to(_C.int64) if targets.dtype != _C.int64 else targets
    S = max(tls) if tls else 0
    if targets.dim() == 1:  # concatenated: cut into a padded (N, S) batch
        total = sum(tls)
        if targets.shape[0] != total:
            raise RuntimeError(f"Expected tensor to have size {total} at dimension 0, but got size "
                               f"{targets.shape[0]} for argument #2 'targets'{_CHECKING}")
        padded = _C.full((N, S), blank, dtype=_C.int64, device=targets.device)
        offset = 0
        for n, v in enumerate(tls):
            if v:
                padded[n, :v] = targets[offset:offset + v]
            offset += v
        targets = padded
    else:
        if targets.shape[1] < S:
            raise RuntimeError(f"Expected tensor to have size at least {S} at dimension 1, but got size "
                               f"{targets.shape[1]} for argument #2 'targets'{_CHECKING}")
        targets = targets[:, :S]
    for v in il:
        if v < 0:
            raise RuntimeError(f"Expected input_lengths to have value at least 0, but got value {v}{_CHECKING}")
        if v > T:
            raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value {v}{_CHECKING}")
    targets = targets.to(lp.device)
    nll = _CTCLoss.apply(lp, targets, il, tls, int(blank), bool(zero_infinity))
    if zero_infinity:
        nll = _C.where(nll == float("inf"), _C.zeros_like(nll), nll)
    if reduction == "mean":
        divisor = _C.tensor(tls, dtype=nll.dtype, device=nll.device).clamp_min(1)
        return (nll / divisor).mean()
    if reduction == "sum":
        return nll.sum()
    return nll if batched else nll.squeeze(0)




# ---- fractional max pooling -------------------------------------------------------------------------

def _tuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def _intervals(samples, in_size, out_size, pool, dtype):
    """torch's generate_intervals for every plane: the start of each of out_size windows,
    int((i + u) * alpha) - int(u * alpha) with alpha = (in - pool) / (out - 1), computed in the
    input's dtype (float32 rounding included), the last window ending at the input's end.
    samples: (N, C) of u in [0, 1). Returns (N, C, out_size) int64."""
    N, C = samples.shape
    dev = samples.device
    if out_size <= 0:
        return _C.zeros((N, C, 0), dtype=_C.int64, device=dev)
    if out_size == 1:
        return _C.full((N, C, 1), in_size - pool, dtype=_C.int64, device=dev)
    alpha = _C.tensor(float(in_size - pool), dtype=dtype, device=dev) / _C.tensor(float(out_size - 1), dtype=dtype,
                                                                                 device=dev)
    u = samples.unsqueeze(2)
    i = _C.arange(out_size, dtype=dtype, device=dev)
    seq = ((i + u) * alpha).to(_C.int64) - (u * alpha).to(_C.int64)
    seq[:, :, out_size - 1] = in_size - pool
    return seq


def _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, n):
    name = f"fractional_max_pool{n}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        if isinstance(output_ratio, (tuple, list)) and len(output_ratio) > n and n == 2:
            raise ValueError(f"{name} requires output_ratio to either be a single Int or tuple of Ints.")
        ratio = _tuple(output_ratio, n)
        output_size = [int(input.size(d - n) * ratio[d]) for d in range(n)]
    if _random_samples is None:
        n_batch = 1 if input.dim() == n + 1 else input.size(0)
        _random_samples = _C.rand((n_batch, input.size(-n - 1), n), dtype=input.dtype, device=input.device)
    # ---- torch's checks (the C++ kernel's)
    kernel = _tuple(kernel_size, n)
    if isinstance(output_size, (tuple, list)) and len(output_size) not in (1, n):
        which = "a single Int or tuple of Ints" if n == 2 else "a single Int or tuple of three Ints"
        raise RuntimeError(f"{name}: output_size must either be {which}")
    out = [int(v) for v in _tuple(output_size, n)] if not (isinstance(output_size, (tuple, list))
                                                          and len(output_size) == 1) else [int(output_size[0])] * n
    what = name if n == 2 else name + "_out"
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"{name}(): kernel size should be greater than zero, but got "
                           + "x".join(str(k) for k in kernel))
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"{what}(): Expected {n + 1}D or {n + 2}D tensor, but got: {list(input.shape)}")
    if n == 2:
        for d in range(1, input.dim()):
            if input.size(d) <= 0:
                raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, but "
                                   f"got{list(input.shape)} with dimension {d} being empty.")
    if _random_samples.dtype != input.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if _random_samples.dim() != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {_random_samples.dim()}")
    batched = input.dim() == n + 2
    x = input if batched else input.unsqueeze(0)
    N, C = x.shape[0], x.shape[1]
    sizes = list(x.shape[2:])
    if _random_samples.size(0) < N:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if _random_samples.size(1) != C:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if _random_samples.size(2) != n:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {n}; got {_random_samples.size(2)}.")
    names = ("height", "width") if n == 2 else ("time", "height", "width")
    for d in range(n):
        # torch's 3-D kernel refuses a window that would end exactly at the input's end (a strict <)
        fits = out[d] + kernel[d] - 1 <= sizes[d] if n == 2 else out[d] + kernel[d] - 1 < sizes[d]
        if not fits:
            raise RuntimeError(f"{what}(): pool {names[d]} {kernel[d]} too large relative to input "
                               f"{names[d]} {sizes[d]}")
    if any(o < 0 for o in out):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(out)}: {[N, C] + out}")
    samples = _random_samples[:N].to(x.device)
    # torch's sample order: 2-D (width, height); 3-D (time, height, width)
    which = (1, 0) if n == 2 else (0, 1, 2)
    starts = [_intervals(samples[:, :, which[d]], sizes[d], out[d], kernel[d], x.dtype) for d in range(n)]
    # the flat input index of every element of every window: (N, C, *out, *kernel)
    strides = [1] * n
    for d in range(n - 2, -1, -1):
        strides[d] = strides[d + 1] * sizes[d + 1]
    index = None
    for d in range(n):
        p = starts[d].unsqueeze(-1) + _C.arange(kernel[d], device=x.device)      # (N, C, out_d, k_d)
        shape = [N, C] + [1] * (2 * n)
        shape[2 + d] = out[d]
        shape[2 + n + d] = kernel[d]
        p = (p * strides[d]).reshape(shape)
        index = p if index is None else index + p
    K = math.prod(kernel)
    n_out = math.prod(out)
    index = index.reshape(N, C, n_out, K)
    flat = x.reshape(N, C, -1)
    with _no_grad():
        vals = flat.gather(2, index.reshape(N, C, n_out * K)).reshape(N, C, n_out, K)
        # torch's scan: the first maximum, unless a NaN comes later (the last NaN wins)
        k = _C.arange(K, device=x.device)
        first = _C.where(vals == vals.amax(3, keepdim=True), k, K).amin(3, keepdim=True)
        last_nan = _C.where(vals != vals, k, -1).amax(3, keepdim=True)
        choice = _C.where(last_nan >= 0, last_nan, first) if K else first
        indices = index.gather(3, choice).reshape(N, C, n_out)
    output = flat.gather(2, indices).reshape([N, C] + out)
    indices = indices.reshape([N, C] + out)
    if not batched:
        output, indices = output.squeeze(0), indices.squeeze(0)
    return output, indices


def _no_grad():
    from ..autograd.grad_mode import no_grad
    return no_grad()


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """Fractional max pooling over (H, W) (Graham 2014) with torch's pseudo-random intervals;
    returns (output, indices), indices into each flattened H*W plane as max_pool2d's."""
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, 2)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """Fractional max pooling over (T, H, W); returns (output, indices into each T*H*W volume)."""
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, 3)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """torch.nn.functional.fractional_max_pool2d: the output, or (output, indices) with return_indices."""
    result = _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, 2)
    return result if return_indices else result[0]


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """torch.nn.functional.fractional_max_pool3d: the output, or (output, indices) with return_indices."""
    result = _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, 3)
    return result if return_indices else result[0]


# ---- LP pooling and max-unpooling in 3-D ------------------------------------------------------------

def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x^p)^(1/p), as torch: p = inf is a max pool of |x|, p = -inf a min
    pool of |x|, p = 0 is refused."""
    from .functional import avg_pool3d, max_pool3d, relu
    kd, kw, kh = _tuple(kernel_size, 3)
    if isinstance(norm_type, (int, float)):
        if norm_type == 0:
            raise ValueError(f"norm_type must be a non-zero value, but got {norm_type}")
        if norm_type == float("inf"):
            return max_pool3d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -float("inf"):
            return -max_pool3d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if stride is not None:
        out = avg_pool3d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = avg_pool3d(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    return (out.sign() * relu(out.abs())).mul(kd * kw * kh).pow(1.0 / norm_type)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of max_pool3d: each value goes to its index in a zero (D, H, W) volume."""
    from ._functional_more import _unpool
    return _unpool("max_unpool3d", input, indices, kernel_size, stride, padding, output_size, 3)
