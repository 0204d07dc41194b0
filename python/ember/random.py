"""torch.random: the default CPU generator's seed and state, and fork_rng.

The CPU generator is torch's mt19937 (docs/issue15-random.md), and its state is torch's
5056-byte layout, so states move between ember and torch in both directions."""
import contextlib

from . import _C

__all__ = ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "fork_rng", "default_generator"]

default_generator = _C.default_generator


def manual_seed(seed):
    return _C.manual_seed(int(seed))


def seed():
    return _C.default_generator.seed()


def initial_seed():
    return _C.default_generator.initial_seed()


def get_rng_state():
    return _C.default_generator.get_state()


def set_rng_state(new_state):
    _C.default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type="cuda"):
    """Restores the CPU generator's state, and those of `devices` (every GPU when None), on exit."""
    if not enabled:
        yield
        return
    from . import cuda
    if device_type != "cuda" or not cuda.is_available():
        devices = []
    elif devices is None:
        devices = range(cuda.device_count())
    devices = list(devices)
    state = get_rng_state()
    device_states = [cuda.get_rng_state(d) for d in devices]
    try:
        yield
    finally:
        set_rng_state(state)
        for d, s in zip(devices, device_states):
            cuda.set_rng_state(s, d)
