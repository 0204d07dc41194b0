"""torch.autograd.profiler for ember: record_function and the classic profile context.

torch.profiler.profile (ember.profiler) is the modern interface; this module's profile keeps
torch's older one (use_cuda / use_device, function_events, self_cpu_time_total) over the same
C++ profiler.
"""
import functools
import warnings

from .. import _C
from .profiler_util import EventList, FunctionEvent, FunctionEventAvg  # noqa: F401

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg"]

_P = _C._profiler


class record_function:
    """Labels a region: inside a profiler, a "user_annotation" event named `name` spans it.

    Use it as a context manager (``with record_function("forward"):``) or as a decorator.
    Outside a profiler it costs one check. `args` is kept for torch's signature (an optional
    string torch attaches to the event)."""

    def __init__(self, name, args=None):
        if not isinstance(name, str):
            raise TypeError(f"record_function(): name must be a str, got {type(name).__name__}")
        if args is not None and not isinstance(args, str):
            raise TypeError(f"record_function(): args must be a str or None, got {type(args).__name__}")
        self.name = name
        self.args = args
        self._handle = -1

    def __enter__(self):
        self._handle = _P.record_function_enter(self.name) if _P.is_profiler_enabled() else -1
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if self._handle >= 0:
            _P.record_function_exit(self._handle)
            self._handle = -1
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)
        return wrapper


class profile:
    """The classic profiler context: ``with profile(record_shapes=True) as prof: ...`` then
    ``prof.key_averages().table(...)``, ``prof.export_chrome_trace(path)``."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False, with_flops=False,
                 profile_memory=False, with_stack=False, with_modules=False, use_kineto=False, use_cpu=True,
                 experimental_config=None, acc_events=False, custom_trace_id_callback=None):
        if use_cuda:
            warnings.warn("The attribute `use_cuda` will be deprecated soon, please use ``use_device = 'cuda'`` "
                          "instead.", FutureWarning, stacklevel=2)
            use_device = "cuda"
        if use_device not in (None, "cuda", "cpu"):
            raise ValueError(f"profile(): use_device={use_device!r} is not supported (ember traces 'cuda')")
        if with_modules or experimental_config is not None or acc_events or custom_trace_id_callback is not None:
            raise NotImplementedError("profile(): with_modules, experimental_config, acc_events and "
                                      "custom_trace_id_callback are not supported by ember's profiler")
        if not use_cpu and use_device is None:
            raise ValueError("profile(): use_cpu=False needs a device to profile (use_device='cuda')")
        self.enabled = enabled
        self.use_device = use_device if use_device != "cpu" else None
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self._profiler = None
        self.function_events = None
        self.entered = False

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._profiler = _P._Profiler(True, self.use_device == "cuda", self.record_shapes, self.profile_memory,
                                      self.with_stack, self.with_flops, None, None)
        self._profiler.start()
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if not self.enabled:
            return False
        self._profiler.stop()
        result = self._profiler.result
        for w in result.warnings:
            warnings.warn(w, stacklevel=2)
        self.function_events = EventList._of_result(result)
        return False

    def _check_finish(self):
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")

    def __repr__(self):
        return "<unfinished torch.autograd.profile>" if self.function_events is None else repr(self.function_events)

    def __str__(self):
        return "<unfinished torch.autograd.profile>" if self.function_events is None else self.function_events.table()

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None):
        self._check_finish()
        return self.function_events.table(sort_by, row_limit, max_src_column_width, max_name_column_width,
                                          max_shapes_column_width, header, top_level_events_only, time_unit)

    def export_chrome_trace(self, path):
        self._check_finish()
        self.function_events.export_chrome_trace(path)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        self._check_finish()
        return self.function_events.key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def total_average(self):
        self._check_finish()
        return self.function_events.total_average()

    @property
    def self_cpu_time_total(self):
        self._check_finish()
        return self.function_events.self_cpu_time_total
