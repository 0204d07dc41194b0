"""torch.autograd.profiler_util for ember: the events a profiler recorded (FunctionEvent), their
averages by key (FunctionEventAvg) and the list that prints torch's table (EventList).

The recording, the grouping and the table are ember's C++ profiler (include/ember/profiler.h);
these classes give them torch's Python attributes, in microseconds as torch's are.
"""
import ast
import warnings

from .. import _C

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "Interval", "DeviceType"]

_P = _C._profiler


class DeviceType:
    """The device kinds an event can be on (torch.autograd.DeviceType's names)."""
    CPU = "cpu"
    CUDA = "cuda"


class Interval:
    def __init__(self, start, end):
        self.start = start
        self.end = end

    def elapsed_us(self):
        return self.end - self.start

    def __repr__(self):
        return f"Interval(start={self.start}, end={self.end})"


def _deprecated_cuda(name, value):
    warnings.warn(f"`{name}` is deprecated. Use `{name.replace('cuda', 'device')}` instead.", FutureWarning,
                  stacklevel=3)
    return value


class _Recording:
    """What the events of one recording share: the C++ result, its events and table rows. Events
    point here, not at their EventList, so a recording holds no reference cycle and is freed as
    soon as it is dropped (thousands of cyclic events would wait for, and slow, the collector)."""

    def __init__(self, result):
        self.result = result
        self.events = result.events
        self.use_device = result.use_device
        self._rows = None

    def rows(self):
        if self._rows is None:
            self._rows = self.result.event_rows()
        return self._rows

    def event(self, index):
        return FunctionEvent(self.events[index], index, self)


class FunctionEvent:
    """One recorded event: an op, a backward node, a user region, or GPU work. Two
    FunctionEvents are equal when they are the same event of the same recording."""

    def __init__(self, event, index, recording):
        self._e = event
        self._index = index
        self._rec = recording
        result = recording.result
        use_device = recording.use_device
        self.id = event.id
        self.name = event.name
        self.thread = event.thread
        self.fwd_thread = event.fwd_thread
        self.sequence_nr = event.sequence_nr
        self.time_range = Interval(event.start_ns / 1000.0, event.end_ns / 1000.0)
        self.count = 1
        self.flops = event.flops
        self.is_async = False
        self.is_legacy = False
        self.node_id = -1
        self.overload_name = ""
        self.trace_name = None
        self.device_index = event.device_index if event.device_index >= 0 else 0
        self.device_type = DeviceType.CUDA if event.kind in ("kernel", "gpu_memcpy", "gpu_memset") else DeviceType.CPU
        self.is_user_annotation = event.kind == "user_annotation"
        self.kind = event.kind
        self.stream = event.stream
        self.use_device = use_device or None

    key = property(lambda self: self.name)
    input_shapes = property(lambda self: self._e.input_shapes)
    input_types = property(lambda self: self._e.input_types)
    input_strides = property(lambda self: self._e.input_strides)
    concrete_inputs = property(lambda self: self._e.concrete_inputs)
    stack = property(lambda self: list(self._e.stack))
    cpu_time_total = property(lambda self: 0.0 if self.device_type != DeviceType.CPU
                              else (self._e.end_ns - self._e.start_ns) / 1000.0)
    self_cpu_time_total = property(lambda self: 0.0 if self.device_type != DeviceType.CPU
                                   else self._e.self_cpu_time_ns / 1000.0)
    cpu_time = property(lambda self: self.cpu_time_total)
    device_time_total = property(lambda self: self._e.device_time_ns / 1000.0)
    self_device_time_total = property(lambda self: self._e.self_device_time_ns / 1000.0)
    device_time = property(lambda self: self.device_time_total)
    cpu_memory_usage = property(lambda self: self._e.cpu_memory)
    self_cpu_memory_usage = property(lambda self: self._e.self_cpu_memory)
    device_memory_usage = property(lambda self: self._e.device_memory)
    self_device_memory_usage = property(lambda self: self._e.self_device_memory)
    cuda_time_total = property(lambda self: _deprecated_cuda("cuda_time_total", self.device_time_total))
    self_cuda_time_total = property(lambda self: _deprecated_cuda("self_cuda_time_total", self.self_device_time_total))
    cuda_memory_usage = property(lambda self: _deprecated_cuda("cuda_memory_usage", self.device_memory_usage))
    self_cuda_memory_usage = property(lambda self: _deprecated_cuda("self_cuda_memory_usage",
                                                                    self.self_device_memory_usage))

    @property
    def cpu_parent(self):
        p = self._e.parent
        return None if p < 0 or self.device_type != DeviceType.CPU else self._rec.event(p)

    @property
    def cpu_children(self):
        return [self._rec.event(c) for c in self._e.children]

    @property
    def kernels(self):
        """GPU work launched directly by this event."""
        return [self._rec.event(i) for i, e in enumerate(self._rec.events)
                if e.launched_by == self._index and e.kind in ("kernel", "gpu_memcpy", "gpu_memset")]

    def _row(self):
        return self._rec.rows()[self._index]

    def __eq__(self, other):
        return isinstance(other, FunctionEvent) and self._rec is other._rec and self._index == other._index

    def __hash__(self):
        return hash((id(self._rec), self._index))

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} device_type={self.device_type} "
                f"thread={self.thread} cpu_time_total={self.cpu_time_total:.3f}us "
                f"self_cpu_time_total={self.self_cpu_time_total:.3f}us device_time_total={self.device_time_total:.3f}us "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage}>")


class FunctionEventAvg:
    """The events of one key (name, and input shapes / stack when grouped by them), summed."""

    def __init__(self, avg, use_device):
        self._a = avg
        self.key = avg.key
        self.count = avg.count
        self.node_id = -1
        self.is_async = False
        self.is_legacy = False
        self.overload_name = ""
        self.use_device = use_device or None
        self.device_type = DeviceType.CUDA if avg.is_device_event else DeviceType.CPU
        self.is_user_annotation = avg.is_user_annotation
        self.flops = avg.flops
        self.cpu_parent = object() if avg.has_parent else None

    cpu_time_total = property(lambda self: self._a.cpu_time_total_ns / 1000.0)
    self_cpu_time_total = property(lambda self: self._a.self_cpu_time_total_ns / 1000.0)
    cpu_time = property(lambda self: self.cpu_time_total / self.count if self.count else 0.0)
    device_time_total = property(lambda self: self._a.device_time_total_ns / 1000.0)
    self_device_time_total = property(lambda self: self._a.self_device_time_total_ns / 1000.0)
    device_time = property(lambda self: self.device_time_total / self.count if self.count else 0.0)
    cpu_memory_usage = property(lambda self: self._a.cpu_memory)
    self_cpu_memory_usage = property(lambda self: self._a.self_cpu_memory)
    device_memory_usage = property(lambda self: self._a.device_memory)
    self_device_memory_usage = property(lambda self: self._a.self_device_memory)
    cuda_time_total = property(lambda self: _deprecated_cuda("cuda_time_total", self.device_time_total))
    self_cuda_time_total = property(lambda self: _deprecated_cuda("self_cuda_time_total", self.self_device_time_total))
    cuda_time = property(lambda self: _deprecated_cuda("cuda_time", self.device_time))
    stack = property(lambda self: list(self._a.stack))

    @property
    def input_shapes(self):
        s = self._a.input_shapes
        return ast.literal_eval(s) if s else ""

    def _row(self):
        return self._a

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total:.3f}us "
                f"cpu_time={self.cpu_time:.3f}us self_device_time={self.self_device_time_total:.3f}us "
                f"device_time={self.device_time:.3f}us input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage} device_memory_usage={self.device_memory_usage}>")


class EventList(list):
    """A list of FunctionEvent or FunctionEventAvg that prints torch's table."""

    def __init__(self, *args, result=None, profile_memory=None, with_flops=None, use_device=None, **kwargs):
        super().__init__(*args, **kwargs)
        self._result = result
        self._profile_memory = result.profile_memory if profile_memory is None and result is not None else bool(profile_memory)
        self._with_flops = result.with_flops if with_flops is None and result is not None else bool(with_flops)
        self._use_device = (result.use_device if result is not None else "") if use_device is None else use_device

    @classmethod
    def _of_result(cls, result):
        rec = _Recording(result)
        out = cls(result=result, use_device=rec.use_device)
        out.extend(FunctionEvent(e, i, rec) for i, e in enumerate(rec.events))
        return out

    @property
    def self_cpu_time_total(self):
        return sum(e.self_cpu_time_total for e in self)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None):
        """torch's table: one row per event of this list (use key_averages() for one per op)."""
        if time_unit not in (None, "s", "ms", "us"):
            raise ValueError(f"table(): time_unit must be 's', 'ms', 'us' or None, got {time_unit!r}")
        rows = [e._row() for e in self]
        return _P.table(rows, sort_by or "", row_limit, max_name_column_width or 0, max_shapes_column_width or 0,
                        max_src_column_width or 0, header or "", top_level_events_only, time_unit or "",
                        self._use_device or "", self._profile_memory, self._with_flops)

    def __str__(self):
        return self.table()

    def export_chrome_trace(self, path):
        if self._result is None:
            raise RuntimeError("export_chrome_trace(): this EventList was not produced by a profiler")
        self._result.export_chrome_trace(str(path))

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0, group_by_overload_name=False):
        """Events grouped by name (and input shapes / the top group_by_stack_n frames)."""
        if self._result is None:
            raise RuntimeError("key_averages(): this EventList was not produced by a profiler")
        rows = self._result.key_averages(bool(group_by_input_shapes), int(group_by_stack_n))
        return EventList((FunctionEventAvg(r, self._use_device) for r in rows), result=self._result)

    def total_average(self):
        """All events summed into one FunctionEventAvg-like total."""
        class _Total:
            pass
        t = _Total()
        t.key = "Total"
        t.count = sum(e.count for e in self)
        for name in ("cpu_time_total", "self_cpu_time_total", "device_time_total", "self_device_time_total",
                     "cpu_memory_usage", "self_cpu_memory_usage", "device_memory_usage", "self_device_memory_usage"):
            setattr(t, name, sum(getattr(e, name) for e in self))
        return t
