"""ember.backends.cudnn: torch's cuDNN flags. ember has no cuDNN (no CUDA backend yet), so
is_available() is False and version() None, as torch reports on a build without cuDNN; the
flags are kept so programs that set them (benchmark, deterministic) run unchanged."""
import contextlib as _contextlib

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


def is_available():
    return False


def version():
    return None


def is_acceptable(tensor):
    return False


@_contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True):
    """Sets the flags for the block and restores them after (torch.backends.cudnn.flags)."""
    g = globals()
    names = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")
    old = {k: g[k] for k in names}
    g.update(enabled=enabled, benchmark=benchmark, benchmark_limit=benchmark_limit,
             deterministic=deterministic, allow_tf32=allow_tf32)
    try:
        yield
    finally:
        g.update(old)
