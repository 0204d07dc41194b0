"""torch.optim.Adamax: Adam with the infinity norm in place of the second moment (Kingma & Ba,
sec. 7). Runs over ember tensor ops, as torch's single-tensor path does; the state is torch's
('step', 'exp_avg', 'exp_inf')."""
from .. import maximum, zeros_like
from .optimizer import (Optimizer, _check_betas_eps_decay, _check_lr, _evaluate_closure, _restore_group_flags,
                        _scalar_state, _step_tensors_after_load, _to_scalar, _use_grad_for_differentiable)

__all__ = ["Adamax"]


class Adamax(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        _check_betas_eps_decay(betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
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
            lr, (beta1, beta2) = _to_scalar(group["lr"]), group["betas"]
            eps, wd = group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_state(0, p, group["capturable"])
                    state["exp_avg"] = zeros_like(p)
                    state["exp_inf"] = zeros_like(p)
                exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
                state["step"] += 1
                grad = -p.grad if group["maximize"] else p.grad
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                exp_avg.lerp_(grad, 1 - beta1)
                # u_t = max(beta2 * u_{t-1}, |g_t| + eps)
                decayed = exp_inf.mul_(beta2)
                if group["differentiable"]:
                    decayed = decayed.clone()  # autograd must not save exp_inf, overwritten below
                exp_inf.copy_(maximum(decayed, grad.abs().add_(eps)))
                bias_correction = 1 - beta1 ** state["step"].item()
                p.addcdiv_(exp_avg, exp_inf, value=-(lr / bias_correction))
        return loss
