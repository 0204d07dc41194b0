"""torch.optim.NAdam: Adam with Nesterov momentum and Dozat's momentum schedule
(mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay))), optionally with decoupled (AdamW-style)
weight decay. Runs over ember tensor ops, as torch's single-tensor path does; the state is
torch's ('step', 'mu_product', 'exp_avg', 'exp_avg_sq')."""
from .. import zeros_like
from .optimizer import (Optimizer, _check_betas_eps_decay, _check_lr, _evaluate_closure, _restore_group_flags,
                        _scalar_state, _step_tensors_after_load, _to_scalar, _use_grad_for_differentiable)

__all__ = ["NAdam"]


class NAdam(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_lr(lr)
        _check_betas_eps_decay(betas, eps, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        _restore_group_flags(self, ("decoupled_weight_decay", False))
        _step_tensors_after_load(self, "mu_product")

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """One update of every parameter with a gradient; closure (optional) re-evaluates the
        model and returns the loss, which step returns."""
        loss = _evaluate_closure(closure)
        for group in self.param_groups:
            lr, (beta1, beta2) = _to_scalar(group["lr"]), group["betas"]
            eps, wd, momentum_decay = group["eps"], group["weight_decay"], group["momentum_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_state(0, p, group["capturable"])
                    state["mu_product"] = _scalar_state(1, p, group["capturable"])
                    state["exp_avg"] = zeros_like(p)
                    state["exp_avg_sq"] = zeros_like(p)
                exp_avg, exp_avg_sq, mu_product = state["exp_avg"], state["exp_avg_sq"], state["mu_product"]
                state["step"] += 1
                step = state["step"].item()
                grad = -p.grad if group["maximize"] else p.grad
                bias_correction2 = 1 - beta2 ** step
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * wd)
                    else:
                        grad = grad.add(p, alpha=wd)
                # The momentum schedule at t and t + 1; mu_product (a tensor of the scalar dtype,
                # rounded as torch rounds it) is the product of mu_1..mu_t.
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
                mu_product *= mu
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denom = exp_avg_sq.div(bias_correction2).sqrt()
                mu_prod = mu_product.item()
                if group["differentiable"] or group["capturable"]:
                    denom = denom.add(eps)
                    p.addcdiv_(grad * (-lr * (1.0 - mu) / (1.0 - mu_prod)), denom)
                    p.addcdiv_(exp_avg * (-lr * mu_next / (1.0 - mu_prod * mu_next)), denom)
                else:
                    denom.add_(eps)
                    p.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - mu_prod))
                    p.addcdiv_(exp_avg, denom, value=(-lr * mu_next) / (1.0 - mu_prod * mu_next))
        return loss
