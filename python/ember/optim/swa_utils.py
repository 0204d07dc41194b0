"""ember.optim.swa_utils (torch.optim.swa_utils): stochastic weight averaging and EMA.

AveragedModel keeps a copy of a model whose parameters are a running average (equal weights
by default, or an EMA via get_ema_multi_avg_fn); SWALR anneals each group's lr to its swa_lr;
update_bn recomputes BatchNorm statistics for the averaged weights with one pass over data.
"""
import copy
import itertools
import math

from .. import _C
from ..nn.modules.module import Module
from .lr_scheduler import LRScheduler

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
           "get_ema_avg_fn", "get_swa_avg_fn"]


def get_ema_multi_avg_fn(decay=0.999):
    def ema_update(ema_param_list, current_param_list, _num_averaged):
        for p_ema, p_model in zip(ema_param_list, current_param_list):
            p_ema.lerp_(p_model, 1 - decay)
    return ema_update


def get_swa_multi_avg_fn():
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        n = float(num_averaged) if isinstance(num_averaged, _C.Tensor) else num_averaged
        for p_avg, p_model in zip(averaged_param_list, current_param_list):
            p_avg.lerp_(p_model, 1.0 / (n + 1))
    return swa_update


def get_ema_avg_fn(decay=0.999):
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", _C.tensor(0, dtype=_C.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model):
        from .. import no_grad
        with no_grad():
            if self.use_buffers:
                mine = list(itertools.chain(self.module.parameters(), self.module.buffers()))
                theirs = list(itertools.chain(model.parameters(), model.buffers()))
            else:
                mine, theirs = list(self.parameters()), list(model.parameters())
            first = int(self.n_averaged) == 0
            averaged, current = [], []
            for p_avg, p_model in zip(mine, theirs):
                p_model_ = p_model.detach().to(p_avg.device)
                averaged.append(p_avg.detach())
                current.append(p_model_)
                if first:
                    p_avg.detach().copy_(p_model_)
            if not first:
                n = self.n_averaged
                if self.avg_fn is not None:
                    for p_avg, p_model in zip(averaged, current):
                        p_avg.copy_(self.avg_fn(p_avg, p_model, n.to(p_avg.device)))
                elif self.multi_avg_fn is not None:
                    groups = {}
                    for p_avg, p_model in zip(averaged, current):
                        g = groups.setdefault((str(p_avg.device), str(p_avg.dtype)), ([], []))
                        g[0].append(p_avg)
                        g[1].append(p_model)
                    for avg_list, cur_list in groups.values():
                        self.multi_avg_fn(avg_list, cur_list, n.to(avg_list[0].device))
                else:
                    # the equal-weight running mean, as torch computes it off the GPU; integer
                    # buffers (use_buffers) take the truncated mean
                    swa = get_swa_avg_fn()
                    for p_avg, p_model in zip(averaged, current):
                        p_avg.copy_(swa(p_avg, p_model, n.to(p_avg.device)))
            if not self.use_buffers:
                # buffers are not averaged: keep them in sync with the source model
                for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                    b_swa.detach().copy_(b_model.detach().to(b_swa.device))
            self.n_averaged.add_(1)


def update_bn(loader, model, device=None):
    """One pass over `loader` in training mode with cumulative BatchNorm statistics (momentum
    None), so the running mean/var are those of the averaged weights."""
    from .. import no_grad
    from ..nn.modules.normalization import _BatchNorm
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for input in loader:
            if isinstance(input, (list, tuple)):
                input = input[0]
            if device is not None:
                input = input.to(device)
            model(input)
    for bn_module, momentum in momenta.items():
        bn_module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's lr from its value to swa_lr over anneal_epochs ('cos' or
    'linear'), then holds it."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        swa_lrs = list(swa_lr) if isinstance(swa_lr, (list, tuple)) else [swa_lr] * len(optimizer.param_groups)
        if len(swa_lrs) != len(optimizer.param_groups):
            raise ValueError(f"swa_lr must have the same length as optimizer.param_groups: swa_lr has "
                             f"{len(swa_lrs)}, optimizer.param_groups has {len(optimizer.param_groups)}")
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must by one of 'cos' or 'linear', instead got {anneal_strategy}")
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha) for group, lr in zip(self.optimizer.param_groups, prev_lrs)]
