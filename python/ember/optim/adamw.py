"""torch.optim.AdamW: Adam with decoupled weight decay (amsgrad, maximize; update in C++)."""
from .adam import _check_adam
from .optimizer import _CppOptimizer

__all__ = ["AdamW"]


class AdamW(_CppOptimizer):
    _kind = "adamw"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False):
        _check_adam(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        foreach=foreach, maximize=maximize, capturable=capturable)
        super().__init__(params, defaults)
