"""torch.optim.RAdam (Liu et al. 2019): Adam whose adaptive step is rectified by the variance of
its learning rate, and replaced by plain momentum SGD while that variance is intractable
(rho_t <= 5); optionally with decoupled weight decay. Runs over ember tensor ops, as torch's
single-tensor path does; the state is torch's ('step', 'exp_avg', 'exp_avg_sq')."""
from .. import zeros_like
from .optimizer import (Optimizer, _check_betas_eps_decay, _check_lr, _evaluate_closure, _restore_group_flags,
                        _scalar_state, _step_tensors_after_load, _to_scalar, _use_grad_for_differentiable)

__all__ = ["RAdam"]


class RAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        _check_lr(lr)
        _check_betas_eps_decay(betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        _restore_group_flags(self, ("decoupled_weight_decay", False))
        _step_tensors_after_load(self)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """One update of every parameter with a gradient; closure (optional) re-evaluates the
        model and returns the loss, which step returns."""
        loss = _evaluate_closure(closure)
        for group in self.param_groups:
            lr, (beta1, beta2) = _to_scalar(group["lr"]), group["betas"]
            eps, wd = group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_state(0, p, group["capturable"])
                    state["exp_avg"] = zeros_like(p)
                    state["exp_avg_sq"] = zeros_like(p)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                state["step"] += 1
                step = state["step"].item()
                grad = -p.grad if group["maximize"] else p.grad
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * wd)
                    else:
                        grad = grad.add(p, alpha=wd)
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                bias_corrected_exp_avg = exp_avg / bias_correction1
                # Length of the approximated simple moving average, and its limit.
                rho_inf = 2 / (1 - beta2) - 1
                rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
                if rho_t > 5.0:
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    adaptive_lr = (bias_correction2 ** 0.5) / exp_avg_sq.sqrt().add_(eps)
                    p.add_(bias_corrected_exp_avg * lr * adaptive_lr * rect, alpha=-1.0)
                else:
                    p.add_(bias_corrected_exp_avg * lr, alpha=-1.0)
        return loss
