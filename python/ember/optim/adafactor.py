"""torch.optim.Adafactor (Shazeer & Stern 2018), as torch 2.x defines it: a second-moment
estimate with sublinear memory and a relative step size.

For a parameter with two or more dims the squared gradient's running average is kept factored
over the last two dims: 'row_var' (the mean over the last dim, shape [..., m, 1]) and 'col_var'
(the mean over the second-to-last dim, shape [..., 1, n]); the estimate is their outer product
divided by the mean of row_var (clamped to eps1). A vector keeps the full average ('variance').
The averages decay with beta2_t = 1 - t^beta2_decay. The step is
alpha_t = max(eps2, RMS(param)) * min(lr, 1/sqrt(t)), applied to the update
U = grad / max(sqrt(V), eps1) after dividing U by max(1, RMS(U)/d) (update clipping); lr also
scales the decoupled weight decay, param *= 1 - lr * weight_decay. eps1 = None means the
machine epsilon of the group's first parameter with a gradient (as torch).

Runs over ember tensor ops, as torch's single-tensor path does; the state is torch's ('step', a
0-dim tensor of the scalar dtype on the CPU, then 'row_var' and 'col_var', or 'variance')."""
from .. import Tensor, zeros_like
from .._dtype_info import finfo
from .optimizer import (Optimizer, _evaluate_closure, _scalar_state, _step_tensors_after_load, _to_scalar,
                        _use_grad_for_differentiable)

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False):
        # torch's checks, in its order and with its messages.
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        # Only 'foreach' is back-filled (torch's Adafactor has no capturable/differentiable).
        for group in self.param_groups:
            group.setdefault("foreach", None)
        _step_tensors_after_load(self)

    def _state_for(self, p):
        if p.is_complex():
            raise RuntimeError("Adafactor does not support complex parameters")
        if getattr(p.grad, "is_sparse", False):
            raise RuntimeError("Adafactor does not support sparse gradients")
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _scalar_state(0, p, False)
            g = p.grad
            if g.dim() > 1:
                # Running means of grad**2 over the last dim (rows) and the one before (columns).
                state["row_var"] = g.new_zeros(list(g.shape[:-1]) + [1])
                state["col_var"] = g.new_zeros(list(g.shape[:-2]) + [1, g.shape[-1]])
            else:
                state["variance"] = zeros_like(g)
        return state

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """One update of every parameter with a gradient; closure (optional) re-evaluates the
        model and returns the loss, which step returns."""
        from ..linalg import vector_norm  # ember.linalg is imported after ember.optim
        loss = _evaluate_closure(closure)
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            states = [self._state_for(p) for p in params]  # all checks before any update, as torch
            lr = _to_scalar(group["lr"])
            eps1, eps2 = group["eps"]
            d, wd, decay = group["d"], group["weight_decay"], group["beta2_decay"]
            for p, state in zip(params, states):
                grad = -p.grad if group["maximize"] else p.grad
                if eps1 is None:  # fixed by the first parameter for the rest of the group (as torch)
                    eps1 = finfo(p.dtype).eps
                state["step"] += 1
                t = state["step"].item()
                # Weight of the new squared gradient in the running averages: 1 - beta2_t.
                new_weight = t ** decay
                rho = min(lr, 1 / (t ** 0.5))
                # Relative step: the parameter's RMS before weight decay, at least eps2.
                alpha = max(eps2, p.norm(2).item() / (p.numel() ** 0.5)) * rho
                if wd != 0:
                    p.mul_(1 - lr * wd)
                if grad.dim() > 1:
                    row_var, col_var = state["row_var"], state["col_var"]
                    row_var.lerp_(vector_norm(grad, dim=-1, keepdim=True).square_().div_(grad.size(-1)),
                                  new_weight)
                    col_var.lerp_(vector_norm(grad, dim=-2, keepdim=True).square_().div_(grad.size(-2)),
                                  new_weight)
                    v_hat = row_var @ col_var  # [..., m, 1] @ [..., 1, n]: the rank-1 estimate
                    v_hat.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
                else:
                    variance = state["variance"]
                    variance.lerp_(grad * grad, new_weight)
                    v_hat = variance.clone()
                # max(sqrt(v), eps1) == sqrt(max(v, eps1^2)).
                update = v_hat.clamp_(min=eps1 * eps1).rsqrt_().mul_(grad)
                clip = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * d))
                p.add_(update, alpha=-alpha / clip)
        return loss
