"""torch.optim.Rprop (resilient backpropagation): each coordinate has its own step size, grown by
etaplus while the gradient keeps its sign and shrunk by etaminus when it flips (that step is then
skipped); only the gradient's sign is used. Runs over ember tensor ops, as torch's single-tensor
path does; the state is torch's ('step', 'prev', 'step_size')."""
from .. import full_like, zeros_like
from .optimizer import (Optimizer, _check_lr, _evaluate_closure, _restore_group_flags, _scalar_state,
                        _step_tensors_after_load, _to_scalar, _use_grad_for_differentiable)

__all__ = ["Rprop"]


class Rprop(Optimizer):
    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
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
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_state(0, p, group["capturable"])
                    state["prev"] = zeros_like(p)
                    state["step_size"] = full_like(p.grad, _to_scalar(group["lr"]))
                prev, step_size = state["prev"], state["step_size"]
                state["step"] += 1
                grad = -p.grad if group["maximize"] else p.grad
                sign = grad.mul(prev.clone() if group["differentiable"] else prev).sign()
                # Same sign as last time: grow; flipped: shrink; a zero on either side: keep.
                # (Masked writes, so the factors have the parameter's dtype.)
                sign[sign.gt(0)] = etaplus
                sign[sign.lt(0)] = etaminus
                sign[sign.eq(0)] = 1
                step_size.mul_(sign).clamp_(step_size_min, step_size_max)
                # After a sign flip the step is skipped and the gradient forgotten, so the next
                # step keeps its size.
                grad = grad.clone()
                grad[sign.eq(etaminus)] = 0
                p.addcmul_(grad.sign(), step_size, value=-1)
                prev.copy_(grad)
        return loss
