"""torch.optim.ASGD (averaged SGD, Polyak & Juditsky 1992): SGD with a decaying step
eta_t = lr / (1 + lambd * lr * t)^alpha, and a running average 'ax' of the iterates from step t0
on. Runs over ember tensor ops, as torch's single-tensor path does; the state is torch's
('step', 'eta', 'mu', 'ax'), eta and mu being 0-dim tensors of the scalar dtype."""
from .. import Tensor, tensor, zeros_like
from .optimizer import (Optimizer, _check_lr, _evaluate_closure, _restore_group_flags, _scalar_state,
                        _step_tensors_after_load, _to_scalar, _use_grad_for_differentiable)

__all__ = ["ASGD"]


class ASGD(Optimizer):
    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        if not 0.0 <= lambd:
            raise ValueError(f"Invalid lambd value: {lambd}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        _restore_group_flags(self)
        # ASGD keeps all its scalars on the parameter's device (as torch).
        for group in self.param_groups:
            for p in group["params"]:
                st = self.state.get(p, None)
                for key in ("step", "eta", "mu"):
                    if st and key in st and not isinstance(st[key], Tensor):
                        st[key] = _scalar_state(st[key], p, True)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """One update of every parameter with a gradient; closure (optional) re-evaluates the
        model and returns the loss, which step returns."""
        loss = _evaluate_closure(closure)
        for group in self.param_groups:
            lr, lambd, alpha = _to_scalar(group["lr"]), group["lambd"], group["alpha"]
            t0, wd = group["t0"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_state(0, p, True)
                    state["eta"] = _scalar_state(lr, p, True)
                    state["mu"] = _scalar_state(1, p, True)
                    state["ax"] = zeros_like(p)
                eta, mu, ax = state["eta"], state["mu"], state["ax"]
                state["step"] += 1
                grad = -p.grad if group["maximize"] else p.grad
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                # eta is read back from its tensor, so the update uses the value torch rounds it to.
                eta_value = eta.item()
                p.mul_(1 - lambd * eta_value)
                p.add_(grad, alpha=-eta_value)
                if group["capturable"] or mu.item() != 1:
                    ax.add_(p.sub(ax).mul_(mu))
                else:
                    ax.copy_(p)
                step = state["step"].item()
                # Via a tensor of the default dtype, as torch.as_tensor: a float64 eta (a state
                # loaded into float64 parameters) holds the float32-rounded value, as in torch.
                eta.copy_(tensor(lr / ((1 + lambd * lr * step) ** alpha)))
                mu.copy_(tensor(1 / max(1, step - t0)))
        return loss
