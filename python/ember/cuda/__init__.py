"""ember.cuda: this build has no CUDA backend yet (it is on the roadmap). The queries a portable
program makes (`ember.cuda.is_available()`, device_count, memory statistics) answer as torch's do
on a machine without a GPU; anything that would need a GPU raises."""


def is_available():
    return False


def device_count():
    return 0


def _no_cuda(*args, **kwargs):
    raise RuntimeError("ember was built without CUDA support (ember.cuda.is_available() is False)")


current_device = set_device = get_device_name = get_device_properties = _no_cuda


def synchronize(device=None):
    pass


def empty_cache():
    pass


def manual_seed(seed):
    pass


def manual_seed_all(seed):
    pass


def memory_allocated(device=None):
    return 0


def max_memory_allocated(device=None):
    return 0


def memory_reserved(device=None):
    return 0


def max_memory_reserved(device=None):
    return 0


def reset_peak_memory_stats(device=None):
    pass


from . import amp  # noqa: E402,F401
