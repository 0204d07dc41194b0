"""torch.profiler.profile over ember's C++ profiler (include/ember/profiler.h): activities,
record_shapes / profile_memory / with_stack / with_flops, a schedule stepped by prof.step(),
on_trace_ready, and the results as torch's EventList."""
import gzip
import json
import os
import socket
import time
import warnings

from .. import _C
from ..autograd.profiler_util import EventList

__all__ = ["profile", "schedule", "tensorboard_trace_handler", "supported_activities", "ProfilerActivity",
           "ProfilerAction"]

_P = _C._profiler
ProfilerActivity = _P.ProfilerActivity
ProfilerAction = _P.ProfilerAction


def supported_activities():
    """The activities this build can trace: CPU always, CUDA when a GPU is there to trace."""
    acts = {ProfilerActivity.CPU}
    try:
        if _C._cuda.is_available():
            acts.add(ProfilerActivity.CUDA)
    except AttributeError:
        pass
    return acts


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """torch.profiler.schedule: skip `skip_first` steps, then cycle through `wait` idle steps,
    `warmup` steps (traced, thrown away) and `active` recorded steps; `repeat` cycles (0: until
    the profiler stops). Returns the step -> ProfilerAction function."""
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", UserWarning, stacklevel=2)
    try:
        return _P.schedule(wait, warmup, active, repeat, skip_first, skip_first_wait)
    except ValueError as e:
        raise AssertionError(str(e)) from None  # torch asserts on bad arguments


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """An on_trace_ready that writes each trace to `dir_name` as
    `<worker_name>.<time in ms>.pt.trace.json[.gz]` (TensorBoard's profiler plugin and
    Perfetto read it). worker_name defaults to "<host>_<pid>"."""
    def handler(prof):
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        # torch names files by the millisecond; two traces within one would overwrite each other.
        stamp = time.time_ns() // 1_000_000
        while True:
            file_name = f"{worker_name}.{stamp}.pt.trace.json" + (".gz" if use_gzip else "")
            if not os.path.exists(os.path.join(dir_name, file_name)):
                break
            stamp += 1
        prof.export_chrome_trace(os.path.join(dir_name, file_name))
    return handler


class _KinetoProfile:
    """The part of profile without a schedule: start(), stop() and the results."""

    def __init__(self, *, activities=None, record_shapes=False, profile_memory=False, with_stack=False,
                 with_flops=False, with_modules=False, experimental_config=None, execution_trace_observer=None,
                 acc_events=False, custom_trace_id_callback=None):
        for name, value, why in (
                ("with_modules", with_modules, "it records TorchScript module hierarchies, and ember has no TorchScript"),
                ("experimental_config", experimental_config, "Kineto's experimental options have no ember equivalent"),
                ("execution_trace_observer", execution_trace_observer, "execution traces are not implemented"),
                ("acc_events", acc_events, "events are not accumulated across schedule cycles; each cycle's "
                                           "on_trace_ready gets its own"),
                ("custom_trace_id_callback", custom_trace_id_callback, "traces carry no trace id")):
            if value:
                raise NotImplementedError(f"profile({name}=...) is not supported by ember's profiler: {why}")
        acts = set(activities) if activities else supported_activities()
        for a in acts:
            if not isinstance(a, ProfilerActivity):
                raise ValueError(f"profile(): activities must be ProfilerActivity values, got {a!r}")
        self.activities = acts
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self._schedule = None
        self._on_ready = None
        self._impl = None
        self._events = None
        self._metadata = {}

    def _make_impl(self, schedule_fn, on_ready):
        return _P._Profiler(ProfilerActivity.CPU in self.activities, ProfilerActivity.CUDA in self.activities,
                            self.record_shapes, self.profile_memory, self.with_stack, self.with_flops,
                            schedule_fn, on_ready)

    def start(self):
        if self._impl is None:
            self._impl = self._make_impl(self._schedule, self._on_ready)
        self._impl.start()

    def stop(self):
        if self._impl is None:
            raise RuntimeError("profile.stop() called before start()")
        self._impl.stop()

    def _result(self):
        r = self._impl.result if self._impl is not None else None
        if r is None:
            raise AssertionError("profile: no results yet (the profiler has not finished a recording)")
        return r

    def events(self):
        """Every recorded event of the last finished recording, as torch's EventList."""
        r = self._result()
        if self._events is None or self._events._result is not r:
            for w in r.warnings:
                warnings.warn(w, stacklevel=2)
            self._events = EventList._of_result(r)
        return self._events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        """Events grouped by name (and by input shapes, or the top group_by_stack_n frames)."""
        return self.events().key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def export_chrome_trace(self, path):
        """Writes the Trace Event Format JSON of the last recording (gzip when path ends in .gz)."""
        path = str(path)
        r = self._result()
        if path.endswith(".gz"):
            text = r.chrome_trace_json(path)
            if self._metadata:
                text = self._with_metadata(text)
            tmp = path + ".tmp"
            with gzip.open(tmp, "wt") as f:
                f.write(text)
            os.replace(tmp, path)
        elif self._metadata:
            text = self._with_metadata(r.chrome_trace_json(path))
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                f.write(text)
            os.replace(tmp, path)
        else:
            r.export_chrome_trace(path)

    def _with_metadata(self, text):
        doc = json.loads(text)
        doc.update(self._metadata)
        return json.dumps(doc)

    def add_metadata(self, key, value):
        """A string entry added to the top level of exported traces."""
        self._metadata[str(key)] = str(value)

    def add_metadata_json(self, key, value):
        """A JSON value (given as its text) added to the top level of exported traces."""
        self._metadata[str(key)] = json.loads(value)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        """Stacks with their time, one "frame;frame;... value" line each (flamegraph.pl's input);
        needs with_stack=True."""
        if metric not in ("self_cpu_time_total", "self_cuda_time_total", "self_device_time_total"):
            raise ValueError(f"export_stacks(): metric must be self_cpu_time_total or self_cuda_time_total, "
                             f"got {metric!r}")
        attr = metric.replace("cuda", "device")
        with open(path, "w") as f:
            for e in self.events():
                if e.stack and getattr(e, attr) > 0:
                    f.write(";".join(reversed(e.stack)) + " " + str(int(getattr(e, attr))) + "\n")


class profile(_KinetoProfile):
    """torch.profiler.profile: ``with profile(...) as prof:`` (or start()/stop()), prof.step()
    after each step when a schedule is given; on_trace_ready(prof) runs after each recording."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False, use_cuda=None,
                 custom_trace_id_callback=None):
        activities = set(activities) if activities else supported_activities()
        if use_cuda is not None:
            warnings.warn("`use_cuda` is deprecated, use `activities` argument instead", FutureWarning, stacklevel=2)
            if use_cuda:
                activities.add(ProfilerActivity.CUDA)
            else:
                activities.discard(ProfilerActivity.CUDA)
        super().__init__(activities=activities, record_shapes=record_shapes, profile_memory=profile_memory,
                         with_stack=with_stack, with_flops=with_flops, with_modules=with_modules,
                         experimental_config=experimental_config, execution_trace_observer=execution_trace_observer,
                         acc_events=acc_events, custom_trace_id_callback=custom_trace_id_callback)
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self._schedule = schedule
        self._on_ready = (lambda: on_trace_ready(self)) if on_trace_ready is not None else None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.stop()
        return False

    def step(self):
        """Signals the end of a step to the schedule."""
        if self._impl is None:
            raise RuntimeError("profile.step() called before start()")
        self._impl.step()

    @property
    def step_num(self):
        return self._impl.step_num if self._impl is not None else 0

    @property
    def current_action(self):
        return self._impl.current_action if self._impl is not None else ProfilerAction.NONE
