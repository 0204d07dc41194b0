"""torch.optim.Adam (amsgrad, maximize; update in C++)."""
from .optimizer import _CppOptimizer, _check_betas_eps_decay, _check_lr

__all__ = ["Adam"]


def _check_adam(lr, betas, eps, weight_decay):
    _check_lr(lr)
    _check_betas_eps_decay(betas, eps, weight_decay)


class Adam(_CppOptimizer):
    _kind = "adam"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=False):
        _check_adam(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        if fused and differentiable:
            raise RuntimeError("`fused` cannot be `differentiable`")
