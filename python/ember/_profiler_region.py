"""A profiler region for ember's own Python code (DataLoader, optimizers): one check when no
profiler runs, and no import of the profiler package."""
from . import _C


class profiler_region:
    """``with profiler_region("name"):`` records a user_annotation span while a profiler runs."""
    __slots__ = ("name", "handle")

    def __init__(self, name):
        self.name = name
        self.handle = -1

    def __enter__(self):
        if _C._profiler.is_profiler_enabled():
            self.handle = _C._profiler.record_function_enter(self.name)
        return self

    def __exit__(self, *exc):
        if self.handle >= 0:
            _C._profiler.record_function_exit(self.handle)
            self.handle = -1
