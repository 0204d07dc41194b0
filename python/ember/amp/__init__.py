"""ember.amp: autocast and GradScaler with torch's API.

ember has no CUDA backend or autocast kernels yet (mixed precision is a later roadmap item). On
such a machine torch itself disables CUDA autocast and the CUDA GradScaler with a warning and runs
in float32; these do the same, so portable programs (`if torch.cuda.is_available(): ...` or plain
`with autocast():`) run unchanged. CPU autocast (device_type="cpu"), which in torch really computes
in bfloat16, warns that ember does not implement it yet and runs in float32."""
import functools
import warnings

from .. import _C


class autocast:
    def __init__(self, device_type="cuda", dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if device_type not in ("cuda", "cpu"):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self.device_type = device_type
        self.fast_dtype = dtype if dtype is not None else (_C.float16 if device_type == "cuda" else _C.bfloat16)
        self._enabled = False
        if enabled and device_type == "cuda":
            warnings.warn("User provided device_type of 'cuda', but CUDA is not available. Disabling")
        elif enabled:
            warnings.warn("ember has no CPU autocast kernels yet: autocast(device_type='cpu') runs in float32")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapper


def is_autocast_enabled():
    return False


class GradScaler:
    """torch.cuda.amp.GradScaler on a machine without CUDA: disabled (scale() returns the loss,
    step() is optimizer.step(), update() does nothing), with torch's warning."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        if enabled:
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.")
        self._enabled = False
        self._init_scale = init_scale

    def is_enabled(self):
        return self._enabled

    def scale(self, outputs):
        return outputs

    def unscale_(self, optimizer):
        pass

    def step(self, optimizer, *args, **kwargs):
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        pass

    def get_scale(self):
        return 1.0

    def state_dict(self):
        return {}

    def load_state_dict(self, state_dict):
        pass
