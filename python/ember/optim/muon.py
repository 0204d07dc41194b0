"""torch.optim.Muon (Keller Jordan 2024): momentum SGD for 2-D parameters whose update is
orthogonalised by a few Newton-Schulz iterations, as torch 2.x defines it.

Per step, with momentum mu: buf <- mu * buf + (1 - mu) * grad (a lerp, torch's form); the
direction is buf, or with nesterov (default) grad + mu * (buf - grad); it is orthogonalised by
NS (below), the parameter is decayed by 1 - lr * weight_decay, then moved by -lr' * NS(direction),
where lr' is lr scaled for the matrix shape (A, B) = param.shape: 'original' (default)
sqrt(max(1, A / B)), 'match_rms_adamw' 0.2 * sqrt(max(A, B)), 'spectral_unclamped' sqrt(A / B).

NS: X = direction in bfloat16, transposed when it has more rows than columns, divided by
max(||X||_F, eps); then ns_steps times X <- a X + (b M + c M M) X with M = X X^T, using torch's
coefficients (a, b, c) = (3.4445, -4.7750, 2.0315) by default; transposed back. All of it runs
in bfloat16 like torch's (each addmm rounds once), so the update is bfloat16 whatever the
parameter dtype.

Runs over ember tensor ops; the state is torch's ('momentum_buffer'). Only 2-D parameters are
accepted (use e.g. AdamW for biases and embeddings)."""
import math

from .. import Tensor, addmm, bfloat16, zeros_like
from .optimizer import Optimizer, _evaluate_closure, _to_scalar, _use_grad_for_differentiable

__all__ = ["Muon"]

# torch's defaults (from Keller Jordan's reference implementation).
EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5

_ADJUST_LR_FNS = ("original", "match_rms_adamw", "spectral_unclamped")


def _zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps, eps):
    """An approximately orthogonal matrix with grad's singular vectors (U S' V^T, S' roughly in
    [0.5, 1.5] rather than the identity), in bfloat16: torch's quintic Newton-Schulz iteration."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    tall = grad.size(0) > grad.size(1)
    x = grad.to(dtype=bfloat16, copy=True)
    if tall:  # iterate on the wide orientation: the Gram matrix is the smaller one
        x = x.T
    x.div_(x.norm().clamp(min=eps))  # Frobenius norm 1 bounds the spectral norm by 1
    for _ in range(ns_steps):
        gram = x @ x.T
        poly = addmm(gram, gram, gram, beta=b, alpha=c)  # b M + c M^2
        x = addmm(x, poly, x, beta=a)  # a X + (b M + c M^2) X
    return x.T if tall else x


def _adjust_lr(lr, adjust_lr_fn, param_shape):
    """lr scaled for a (fan_out, fan_in) = param_shape[:2] matrix."""
    rows, cols = param_shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    elif adjust_lr_fn == "spectral_unclamped":
        ratio = math.sqrt(rows / cols)
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(DEFAULT_A, DEFAULT_B, DEFAULT_C), eps=EPS, ns_steps=DEFAULT_NS_STEPS,
                 adjust_lr_fn=None):
        # torch's checks, in its order and with its messages.
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in _ADJUST_LR_FNS:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        # As torch, the shape is checked for the constructor's groups; a later add_param_group's
        # non-2-D parameter fails at step() instead.
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a parameter with "
                                     f"size: {p.size()}")

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """One update of every parameter with a gradient; closure (optional) re-evaluates the
        model and returns the loss, which step returns."""
        loss = _evaluate_closure(closure)
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            bufs = []
            for p in params:  # all checks and state before any update, as torch
                if p.is_complex():
                    raise RuntimeError("Muon does not support complex parameters")
                if getattr(p.grad, "is_sparse", False):
                    raise RuntimeError("Muon does not support sparse gradients")
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = zeros_like(p.grad)
                bufs.append(state["momentum_buffer"])
            lr, wd, mu = _to_scalar(group["lr"]), group["weight_decay"], group["momentum"]
            for p, buf in zip(params, bufs):
                grad = p.grad
                if grad.ndim != 2:
                    raise ValueError("Param gradient must be a 2D matrix")
                buf.lerp_(grad, 1 - mu)
                direction = grad.lerp(buf, mu) if group["nesterov"] else buf
                ortho = _zeropower_via_newtonschulz(direction, group["ns_coefficients"], group["ns_steps"],
                                                    group["eps"])
                p.mul_(1 - lr * wd)  # decoupled weight decay uses the unadjusted lr
                p.add_(ortho, alpha=-_adjust_lr(lr, group["adjust_lr_fn"], p.shape))
        return loss
