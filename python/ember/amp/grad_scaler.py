"""torch.amp.GradScaler for ember: loss scaling for float16 training, torch's algorithm.

scale() multiplies the loss by the scale (a float32 tensor on the loss's device); unscale_()
divides every gradient by it in place and records, on the device, whether any gradient held an
inf or NaN (ember._amp_foreach_non_finite_check_and_unscale_, one call per device and dtype,
nothing read back); step() reads those flags once and skips optimizer.step() if one is set;
update() backs the scale off after an overflow and grows it after growth_interval clean steps
(ember._amp_update_scale_, on the device). state_dict() has torch's keys."""
import enum
import warnings
from collections import abc, defaultdict

from .. import _C
from ..autograd.grad_mode import no_grad

__all__ = ["GradScaler", "OptState"]


class OptState(enum.Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_optimizer_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class _PerDevice:
    """One tensor copied lazily to each device that asks for it."""

    def __init__(self, master):
        self.master = master
        self.copies = {}

    def get(self, device):
        t = self.copies.get(device)
        if t is None:
            t = self.master.to(device=device, non_blocking=True, copy=True)
            self.copies[device] = t
        return t


class GradScaler:
    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = str(device)
        self._enabled = enabled
        if self._device == "cuda" and enabled:
            from .. import cuda
            if not cuda.is_available():
                warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.")
                self._enabled = False
        if self._enabled:
            if not growth_factor > 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if not backoff_factor < 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_fresh_optimizer_state)

    def _check_scale_growth_tracker(self, funcname):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, device):
        self._scale = _C.full((), float(self._init_scale), dtype=_C.float32, device=device)
        self._growth_tracker = _C.full((), int(self._init_growth_tracker), dtype=_C.int32, device=device)

    def scale(self, outputs):
        """outputs (a tensor, or nested lists/tuples/iterables of tensors) times the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, _C.Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(device=outputs.device, non_blocking=True)
        per_device = []

        def apply_scale(value):
            if isinstance(value, _C.Tensor):
                if not per_device:
                    if self._scale is None:
                        self._lazy_init_scale_growth_tracker(value.device)
                    per_device.append(_PerDevice(self._scale))
                return value * per_device[0].get(value.device)
            if isinstance(value, abc.Iterable):
                scaled = map(apply_scale, value)
                return type(value)(scaled) if isinstance(value, (list, tuple)) else scaled
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        inv_scales, found_infs = _PerDevice(inv_scale), _PerDevice(found_inf)
        grouped = defaultdict(lambda: defaultdict(list))  # device -> dtype -> grads
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    grad = param.grad
                    if grad is None:
                        continue
                    if not allow_fp16 and grad.dtype == _C.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    grouped[grad.device][grad.dtype].append(grad)
            for device, by_dtype in grouped.items():
                for grads in by_dtype.values():
                    _C._amp_foreach_non_finite_check_and_unscale_(grads, found_infs.get(device),
                                                                  inv_scales.get(device))
        return found_infs.copies

    def unscale_(self, optimizer):
        """Divides optimizer's gradients by the scale in place (call before clipping them)."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = _C.full((), 0.0, dtype=_C.float32, device=self._scale.device)
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer, state, *args, **kwargs):
        if not sum(v.item() for v in state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer, *args, **kwargs):
        """Unscales (if unscale_ was not called) and steps, unless a gradient held inf/NaN."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, state, *args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None):
        """Backs the scale off if any optimizer saw inf/NaN this iteration, else counts toward
        growth; or sets it to new_scale (a float or a one-element tensor)."""
        if not self._enabled:
            return
        scale, growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                          "torch.FloatTensor with requires_grad=False.")
                if not (isinstance(new_scale, _C.Tensor) and new_scale.device.type == self._device
                        and new_scale.numel() == 1 and new_scale.requires_grad is False):
                    raise AssertionError(reason)
                self._scale.copy_(new_scale)
        else:
            found_infs = [f.to(device=scale.device, non_blocking=True)
                          for state in self._per_optimizer_states.values()
                          for f in state["found_inf_per_device"].values()]
            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            combined = found_infs[0]
            for f in found_infs[1:]:
                combined += f
            _C._amp_update_scale_(scale, growth_tracker, combined, float(self._growth_factor),
                                  float(self._backoff_factor), int(self._growth_interval))
        self._per_optimizer_states = defaultdict(_fresh_optimizer_state)

    def _get_scale_async(self):
        return self._scale

    def get_scale(self):
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale.item())

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker.item())

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self):
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning of an "
                                     "iteration, or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
            state["_per_optimizer_states"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self._enabled:
            self._per_optimizer_states = defaultdict(_fresh_optimizer_state)


def _deprecated_grad_scaler(device):
    """torch.<device>.amp.GradScaler: GradScaler(device) with the old signature, and torch 2's
    FutureWarning."""
    class GradScaler_(GradScaler):
        def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                     enabled=True):
            warnings.warn(f"`torch.{device}.amp.GradScaler(args...)` is deprecated. "
                          f"Please use `torch.amp.GradScaler('{device}', args...)` instead.", FutureWarning,
                          stacklevel=2)
            super().__init__(device, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)
    GradScaler_.__name__ = GradScaler_.__qualname__ = "GradScaler"
    return GradScaler_
