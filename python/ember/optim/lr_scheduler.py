"""ember.optim.lr_scheduler: torch.optim.lr_scheduler's schedulers.

A scheduler writes the lr of each group into optimizer.param_groups (plain dicts, which the C++
optimizers read before every step), so it works with the built-in optimizers and Python ones
alike. The classes keep torch's API: its attributes (last_epoch, base_lrs, T_max, ...), step(),
get_last_lr(), state_dict() with every attribute but the optimizer, and LRScheduler to subclass
with a get_lr() of one's own. The formulas and stepping rules are ember's C++ ones
(include/ember/optim/lr_rules.h, which the C++ schedulers use too): each class passes its
attributes and the groups' values to them. Most schedulers update the current lr
multiplicatively ("chainable" form, so two schedulers can act on one optimizer); step(epoch)
uses the closed form where one exists.
"""
import types
from collections import Counter

from .. import _C
from .optimizer import Optimizer

__all__ = ["LRScheduler", "_LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR",
           "LinearLR", "ExponentialLR", "SequentialLR", "CosineAnnealingLR", "ChainedScheduler",
           "ReduceLROnPlateau", "CyclicLR", "CosineAnnealingWarmRestarts", "OneCycleLR", "PolynomialLR"]

_rules = _C._lr_rules


def _check_optimizer(optimizer):
    if not isinstance(optimizer, Optimizer):
        raise TypeError("{} is not an Optimizer".format(type(optimizer).__name__))


def _per_group(name, optimizer, value):
    """A value given once or per group (a list/tuple with one entry per group)."""
    if isinstance(value, (list, tuple)):
        _rules.check_group_count("values for " + name, len(optimizer.param_groups), len(value))
        return list(value)
    return [value] * len(optimizer.param_groups)


def _epoch_str(epoch):
    """An epoch as torch's verbose messages print it."""
    return ("%.2f" if isinstance(epoch, float) else "%.5d") % epoch


def _require_int(value, message):
    """torch's check of an argument that must be an int (the C++ rules check its value)."""
    if not isinstance(value, int):
        raise ValueError(message.format(value))


class LRScheduler:
    """Base class: subclasses give get_lr() (the lrs for self.last_epoch, usually from the
    current ones) and optionally _get_closed_form_lr() (from base_lrs, for step(epoch))."""

    def __init__(self, optimizer, last_epoch=-1, verbose=False):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError("param 'initial_lr' is not specified in param_groups[{}] when resuming an "
                                   "optimizer".format(i))
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.verbose = verbose
        self._initial_step()

    def _initial_step(self):
        self._step_count = 0
        self.step()

    def state_dict(self):
        """Every attribute but the optimizer (as torch)."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)

    def get_last_lr(self):
        """The lrs the last step() set, one per group."""
        return self._last_lr

    def get_lr(self):
        raise NotImplementedError

    def print_lr(self, is_verbose, group, lr, epoch=None):
        if not is_verbose:
            return
        if epoch is None:
            print("Adjusting learning rate of group {} to {:.4e}.".format(group, lr))
        else:
            print("Epoch {}: adjusting learning rate of group {} to {:.4e}.".format(_epoch_str(epoch), group, lr))

    def _set_lrs(self, values, epoch=None):
        for i, (group, lr) in enumerate(zip(self.optimizer.param_groups, values)):
            group["lr"] = lr
            self.print_lr(self.verbose, i, lr, epoch)
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def step(self, epoch=None):
        self._step_count += 1
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            closed = getattr(self, "_get_closed_form_lr", None)
            values = closed() if closed is not None else self.get_lr()
        self._set_lrs(values, epoch)

    def _lrs(self):
        return [group["lr"] for group in self.optimizer.param_groups]


_LRScheduler = LRScheduler


class _LambdaScheduler(LRScheduler):
    """Shared by LambdaLR and MultiplicativeLR: one function per group; state_dict keeps the
    __dict__ of callable objects (plain functions cannot be saved)."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1, verbose=False):
        self.optimizer = optimizer
        if isinstance(lr_lambda, (list, tuple)):
            _rules.check_lambda_count(len(optimizer.param_groups), len(lr_lambda))
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        super().__init__(optimizer, last_epoch, verbose)

    def state_dict(self):
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        sd["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
                            for fn in self.lr_lambdas]
        return sd

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        lambdas = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        for fn, saved in zip(self.lr_lambdas, lambdas):
            if saved is not None:
                fn.__dict__.update(saved)


class LambdaLR(_LambdaScheduler):
    """lr = initial_lr * lr_lambda(epoch)."""

    def get_lr(self):
        return _rules.lambda_lr(self.last_epoch, self.base_lrs, self.lr_lambdas)


class MultiplicativeLR(_LambdaScheduler):
    """lr *= lr_lambda(epoch) at every step after the first."""

    def get_lr(self):
        return _rules.multiplicative_lr(self.last_epoch, self._lrs(), self.lr_lambdas)


class StepLR(LRScheduler):
    """lr *= gamma every step_size epochs."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1, verbose=False):
        _rules.check_step_size(step_size)
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        return _rules.step_lr(self.last_epoch, self._lrs(), self.step_size, self.gamma)

    def _get_closed_form_lr(self):
        return _rules.step_lr_closed(self.last_epoch, self.base_lrs, self.step_size, self.gamma)


class MultiStepLR(LRScheduler):
    """lr *= gamma at each milestone (a milestone listed twice multiplies twice)."""

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1, verbose=False):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        return _rules.multistep_lr(self.last_epoch, self._lrs(), list(self.milestones.elements()), self.gamma)

    def _get_closed_form_lr(self):
        return _rules.multistep_lr_closed(self.last_epoch, self.base_lrs, list(self.milestones.elements()),
                                          self.gamma)


class ConstantLR(LRScheduler):
    """lr = initial_lr * factor until total_iters, then initial_lr."""

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1, verbose=False):
        _rules.check_constant_factor(factor)
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        return _rules.constant_lr(self.last_epoch, self._lrs(), self.factor, self.total_iters)

    def _get_closed_form_lr(self):
        return _rules.constant_lr_closed(self.last_epoch, self.base_lrs, self.factor, self.total_iters)


class LinearLR(LRScheduler):
    """lr goes linearly from initial_lr * start_factor to initial_lr * end_factor in total_iters."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5, last_epoch=-1, verbose=False):
        _rules.check_linear_factors(start_factor, end_factor)
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        return _rules.linear_lr(self.last_epoch, self._lrs(), self.start_factor, self.end_factor, self.total_iters)

    def _get_closed_form_lr(self):
        return _rules.linear_lr_closed(self.last_epoch, self.base_lrs, self.start_factor, self.end_factor,
                                       self.total_iters)


class ExponentialLR(LRScheduler):
    """lr *= gamma every epoch."""

    def __init__(self, optimizer, gamma, last_epoch=-1, verbose=False):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        return _rules.exponential_lr(self.last_epoch, self._lrs(), self.gamma)

    def _get_closed_form_lr(self):
        return _rules.exponential_lr_closed(self.last_epoch, self.base_lrs, self.gamma)


class PolynomialLR(LRScheduler):
    """lr = initial_lr * (1 - epoch / total_iters) ** power, then constant."""

    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1, verbose=False):
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        return _rules.polynomial_lr(self.last_epoch, self._lrs(), self.total_iters, self.power)

    def _get_closed_form_lr(self):
        return _rules.polynomial_lr_closed(self.last_epoch, self.base_lrs, self.total_iters, self.power)


class CosineAnnealingLR(LRScheduler):
    """Cosine from initial_lr down to eta_min over T_max epochs (and back up after, as torch's
    recursive form does)."""

    def __init__(self, optimizer, T_max, eta_min=0, last_epoch=-1, verbose=False):
        _rules.check_t_max(T_max)
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        return _rules.cosine_annealing_lr(self.last_epoch, self._lrs(), self.base_lrs, self.T_max, self.eta_min,
                                          self._step_count == 1)

    def _get_closed_form_lr(self):
        return _rules.cosine_annealing_lr_closed(self.last_epoch, self.base_lrs, self.T_max, self.eta_min)


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR: cosine annealing restarted every T_i epochs, T_i = T_0 * T_mult ** restarts.
    step(epoch) accepts fractional epochs."""

    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0, last_epoch=-1, verbose=False):
        _require_int(T_0, "Expected positive integer T_0, but got {}")
        _require_int(T_mult, "Expected integer T_mult >= 1, but got {}")
        _rules.check_warm_restarts(T_0, T_mult)
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        return _rules.warm_restarts_lr(self.base_lrs, self.T_cur, self.T_i, self.eta_min)

    def step(self, epoch=None):
        state = _rules.WarmRestartsState(self.last_epoch, self.T_cur, self.T_i)
        state = _rules.warm_restarts_step(epoch, state, self.T_0, self.T_mult)
        self.last_epoch, self.T_cur, self.T_i = state.last_epoch, state.T_cur, state.T_i
        self._set_lrs(self.get_lr(), self.last_epoch if epoch is None else epoch)


class CyclicLR(LRScheduler):
    """Cyclical lr between base_lr and max_lr (triangular, triangular2, exp_range or scale_fn),
    cycling momentum inversely when cycle_momentum."""

    def __init__(self, optimizer, base_lr, max_lr, step_size_up=2000, step_size_down=None, mode="triangular",
                 gamma=1.0, scale_fn=None, scale_mode="cycle", cycle_momentum=True, base_momentum=0.8,
                 max_momentum=0.9, last_epoch=-1, verbose=False):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        base_lrs = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = lr
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        shape = _rules.cyclic_shape(step_size_up, step_size_down, mode, scale_fn is not None, scale_mode)
        self.total_size = shape.total_size
        self.step_ratio = shape.step_ratio
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = shape.scale_mode
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            _rules.check_cycle_momentum("momentum" in optimizer.defaults)
            base_momentums = _per_group("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for m, group in zip(base_momentums, optimizer.param_groups):
                    group["momentum"] = m
            self.base_momentums = [group["momentum"] for group in optimizer.param_groups]
            self.max_momentums = _per_group("max_momentum", optimizer, max_momentum)
        super().__init__(optimizer, last_epoch, verbose)
        self.base_lrs = base_lrs

    def scale_fn(self, x):
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        return _rules.cyclic_scale(self.mode, self.gamma, x)

    def state_dict(self):
        sd = super().state_dict()
        sd.pop("_scale_fn_custom", None)
        return sd

    def get_lr(self):
        shape = _rules.CyclicShape(self.total_size, self.step_ratio, self.scale_mode)
        moms = (self.base_momentums, self.max_momentums) if self.cycle_momentum else ([], [])
        values = _rules.cyclic_lr(self.last_epoch, shape, self.scale_fn, self.base_lrs, self.max_lrs, *moms)
        for group, momentum in zip(self.optimizer.param_groups, values.momenta):
            group["momentum"] = momentum
        return values.lrs


class OneCycleLR(LRScheduler):
    """The 1cycle policy: lr warms up from max_lr/div_factor to max_lr over pct_start of the
    steps, then anneals to initial_lr/final_div_factor (three_phase: back to initial first);
    momentum (or Adam's beta1) cycles the other way."""

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None, pct_start=0.3,
                 anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85, max_momentum=0.95,
                 div_factor=25.0, final_div_factor=1e4, three_phase=False, last_epoch=-1, verbose=False):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        for name, value in (("total_steps", total_steps), ("epochs", epochs), ("steps_per_epoch", steps_per_epoch)):
            if value is not None:
                _require_int(value, "Expected positive integer " + name + ", but got {}")
        self.total_steps = _rules.one_cycle_total_steps(total_steps, epochs, steps_per_epoch)
        if not isinstance(pct_start, float):
            raise ValueError("Expected float between 0 and 1 pct_start, but got {}".format(pct_start))
        _rules.check_one_cycle(pct_start, anneal_strategy)
        self._schedule_phases = [
            dict(end_step=p.end_step, start_lr=p.start_lr, end_lr=p.end_lr, start_momentum=p.start_momentum,
                 end_momentum=p.end_momentum)
            for p in _rules.one_cycle_phases(self.total_steps, pct_start, three_phase)]
        self.anneal_strategy = anneal_strategy
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for group, hi in zip(optimizer.param_groups, max_lrs):
                lrs = _rules.one_cycle_lrs(hi, div_factor, final_div_factor)
                group["initial_lr"] = lrs.initial_lr
                group["max_lr"] = hi
                group["min_lr"] = lrs.min_lr
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            _rules.check_cycle_momentum("momentum" in optimizer.defaults or "betas" in optimizer.defaults)
            self.use_beta1 = "betas" in optimizer.defaults
            maxes = _per_group("max_momentum", optimizer, max_momentum)
            bases = _per_group("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for mm, bm, group in zip(maxes, bases, optimizer.param_groups):
                    self._set_momentum(group, mm)
                    group["max_momentum"] = mm
                    group["base_momentum"] = bm
        super().__init__(optimizer, last_epoch, verbose)

    def _set_momentum(self, group, value):
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def anneal_func(self, start, end, pct):
        return _rules.anneal(self.anneal_strategy, start, end, pct)

    def get_lr(self):
        at = _rules.one_cycle_point(self.last_epoch, self.total_steps,
                                    [phase["end_step"] for phase in self._schedule_phases])
        phase = self._schedule_phases[at.phase]
        lrs = []
        for group in self.optimizer.param_groups:
            lrs.append(self.anneal_func(group[phase["start_lr"]], group[phase["end_lr"]], at.pct))
            if self.cycle_momentum:
                self._set_momentum(group, self.anneal_func(group[phase["start_momentum"]],
                                                           group[phase["end_momentum"]], at.pct))
        return lrs


class SequentialLR(LRScheduler):
    """Runs schedulers one after the other, switching at the milestones (each restarted with
    step(0) when its turn comes)."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1, verbose=False):
        for i, s in enumerate(schedulers):
            if s.optimizer is not optimizer:
                raise ValueError("Sequential Schedulers expects all schedulers to belong to the same optimizer, but "
                                 f"got schedulers at index {i} to be different than the optimizer passed in.")
        _rules.check_sequential(len(schedulers), len(milestones))
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # Undo the constructors' initial steps and restart from the first scheduler.
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        for s in schedulers:
            s.last_epoch -= 1
        schedulers[0]._initial_step()
        self._last_lr = schedulers[0].get_last_lr()

    def step(self):
        self.last_epoch += 1
        pick = _rules.sequential_pick(self._milestones, self.last_epoch)
        s = self._schedulers[pick.index]
        if pick.restart:
            s.step(0)
        else:
            s.step()
        self._last_lr = s.get_last_lr()

    def state_dict(self):
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        sd["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return sd

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        subs = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        for s, sd in zip(self._schedulers, subs):
            s.load_state_dict(sd)


class ChainedScheduler(LRScheduler):
    """Steps several schedulers of one optimizer together (their effects multiply)."""

    def __init__(self, schedulers):
        for i in range(1, len(schedulers)):
            if schedulers[i].optimizer is not schedulers[0].optimizer:
                raise ValueError("ChainedScheduler expects all schedulers to belong to the same optimizer, but got "
                                 "schedulers at index {} and {} to be different".format(0, i))
        self._schedulers = list(schedulers)
        self.optimizer = schedulers[0].optimizer
        self._last_lr = self._lrs()

    def step(self):
        for s in self._schedulers:
            s.step()
        self._last_lr = self._lrs()

    state_dict = SequentialLR.state_dict
    load_state_dict = SequentialLR.load_state_dict


class ReduceLROnPlateau:
    """Multiplies the lr by factor when the metric given to step(metric) has not improved for
    patience epochs (then waits cooldown epochs), never below min_lr."""

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4, threshold_mode="rel",
                 cooldown=0, min_lr=0, eps=1e-8, verbose=False):
        _rules.check_plateau_factor(factor)
        self.factor = factor
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            _rules.check_group_count("min_lrs", len(optimizer.param_groups), len(min_lr))
            self.min_lrs = list(min_lr)
        else:
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.patience = patience
        self.verbose = verbose
        self.cooldown = cooldown
        self.cooldown_counter = 0
        self.eps = eps
        self.last_epoch = 0
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()

    def _reset(self):
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def step(self, metrics, epoch=None):
        current = float(metrics)
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        state = _rules.PlateauState(self.best, self.num_bad_epochs, self.cooldown_counter)
        step = _rules.plateau_step(current, state, self.mode, self.threshold_mode, self.threshold, self.patience,
                                   self.cooldown)
        self.best = step.state.best
        self.num_bad_epochs = step.state.num_bad_epochs
        self.cooldown_counter = step.state.cooldown_counter
        if step.reduce:
            self._reduce_lr(self.last_epoch)
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _reduce_lr(self, epoch):
        groups = self.optimizer.param_groups
        reduced = _rules.plateau_reduce([float(g["lr"]) for g in groups], self.factor, self.min_lrs, self.eps)
        for i, (group, new) in enumerate(zip(groups, reduced)):
            if new is not None:
                group["lr"] = new
                if self.verbose:
                    print("Epoch {}: reducing learning rate of group {} to {:.4e}.".format(_epoch_str(epoch), i, new))

    @property
    def in_cooldown(self):
        return self.cooldown_counter > 0

    def get_last_lr(self):
        return self._last_lr

    def is_better(self, a, best):
        return _rules.plateau_is_better(a, best, self.mode, self.threshold_mode, self.threshold)

    def _init_is_better(self, mode, threshold, threshold_mode):
        _rules.check_plateau_modes(mode, threshold_mode)
        self.mode_worse = _rules.plateau_worst(mode)
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)
