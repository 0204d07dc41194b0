"""torch.optim.Adadelta (Zeiler 2012): per-coordinate steps scaled by the ratio of running RMS of
past updates to running RMS of gradients. Runs over ember tensor ops, as torch's single-tensor
path does; the state is torch's ('step', 'square_avg', 'acc_delta')."""
from .. import zeros_like
from .optimizer import (Optimizer, _check_lr, _evaluate_closure, _restore_group_flags, _scalar_state,
                        _step_tensors_after_load, _to_scalar, _use_grad_for_differentiable)

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        _restore_group_flags(self)
        _step_tensors_after_load(self)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """One update of every parameter with a gradient; closure (optional) re-evaluates the
        model and returns the loss, which step returns."""
        loss = _evaluate_closure(closure)
        for group in self.param_groups:
            lr, rho, eps, wd = _to_scalar(group["lr"]), group["rho"], group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_state(0, p, group["capturable"])
                    state["square_avg"] = zeros_like(p)
                    state["acc_delta"] = zeros_like(p)
                square_avg, acc_delta = state["square_avg"], state["acc_delta"]
                state["step"] += 1
                grad = -p.grad if group["maximize"] else p.grad
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
                std = square_avg.add(eps).sqrt_()
                # The step: RMS of past updates over RMS of gradients, times the gradient.
                delta = acc_delta.add(eps).sqrt_()
                if group["differentiable"]:
                    delta = delta.clone()
                delta.div_(std).mul_(grad)
                acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
                p.add_(delta, alpha=-lr)
        return loss
