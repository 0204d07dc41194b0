"""ember.cuda: torch.cuda's API over ember's CUDA backend (C++: include/ember/cuda.h).

Without a GPU (or in a build without the CUDA backend) the queries a portable program makes
answer as torch's do on such a machine: is_available() is False, device_count() 0, memory
statistics 0; calls that need a GPU raise RuntimeError."""
from .. import _C

_cuda = _C._cuda
OutOfMemoryError = _C.OutOfMemoryError

__all__ = [
    "is_available", "device_count", "current_device", "set_device", "device", "device_of", "synchronize",
    "get_device_name", "get_device_properties", "get_device_capability", "manual_seed", "manual_seed_all",
    "initial_seed", "seed", "seed_all", "memory_allocated", "max_memory_allocated", "memory_reserved",
    "max_memory_reserved", "reset_peak_memory_stats", "reset_max_memory_allocated", "reset_accumulated_memory_stats",
    "memory_stats", "memory_summary", "empty_cache", "mem_get_info", "Stream", "Event", "current_stream",
    "default_stream", "stream", "set_stream", "StreamContext", "OutOfMemoryError", "is_initialized", "init",
    "get_rng_state", "set_rng_state", "get_rng_state_all", "set_rng_state_all", "default_generators",
    "is_bf16_supported", "CUDAGraph", "graph", "graph_pool_handle", "is_current_stream_capturing",
    "make_graphed_callables",
]


def is_available():
    return _cuda.is_available()


def device_count():
    return _cuda.device_count()


def is_initialized():
    return _cuda.is_available()


def is_bf16_supported(including_emulation=True):
    """Whether the current GPU computes in bfloat16 (compute capability 8.0 or newer, as torch;
    ember's CUDA kernels do not emulate it on older GPUs). False without a GPU."""
    if not _cuda.is_available():
        return False
    return get_device_capability()[0] >= 8


def init():
    pass


def _index(device, optional=True):
    """torch's _get_device_index: None -> the current device (-1), int, 'cuda:1', device('cuda', 1)."""
    if device is None:
        return -1
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        device = _C.device(device)
    if isinstance(device, _C.device):
        if device.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {device}")
        return -1 if device.index is None else device.index
    raise ValueError(f"Expected a cuda device, but got: {device!r}")


def current_device():
    return _cuda.current_device()


def set_device(device):
    index = _index(device)
    if index >= 0:
        _cuda.set_device(index)


class device:
    """Context manager that changes the current device (torch.cuda.device)."""

    def __init__(self, device):
        self.idx = _index(device)
        self.prev_idx = -1

    def __enter__(self):
        if self.idx >= 0:
            self.prev_idx = _cuda.current_device()
            if self.prev_idx != self.idx:
                _cuda.set_device(self.idx)

    def __exit__(self, *exc):
        if self.idx >= 0 and self.prev_idx != self.idx:
            _cuda.set_device(self.prev_idx)
        return False


class device_of(device):
    def __init__(self, obj):
        super().__init__(obj.get_device() if obj.is_cuda else -1)


def synchronize(device=None):
    _cuda.synchronize(_index(device))


class _CudaDeviceProperties:
    def __init__(self, d):
        self.__dict__.update(d)

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // (1024 * 1024)}MB, "
                f"multi_processor_count={self.multi_processor_count}, uuid={self.uuid}, "
                f"L2_cache_size={self.L2_cache_size // (1024 * 1024)}MB)")


def get_device_properties(device=None):
    return _CudaDeviceProperties(_cuda.get_device_properties(_index(device)))


def get_device_name(device=None):
    return get_device_properties(device).name


def get_device_capability(device=None):
    p = get_device_properties(device)
    return (p.major, p.minor)


# ---- random numbers: without a GPU these do nothing, as torch's lazy seeding
def manual_seed(seed):
    _cuda.manual_seed(int(seed))


def manual_seed_all(seed):
    _cuda.manual_seed_all(int(seed))


def initial_seed():
    return _cuda.initial_seed(current_device())


def _generator(device):
    idx = _index(device)
    return _cuda.default_generator(current_device() if idx < 0 else idx)


def get_rng_state(device="cuda"):
    """The device's generator state as torch's: 16 bytes (seed, Philox offset) in a uint8 tensor."""
    return _generator(device).get_state()


def set_rng_state(new_state, device="cuda"):
    _generator(device).set_state(new_state)


def get_rng_state_all():
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states):
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


def __getattr__(name):
    # torch.cuda.default_generators: one per GPU (an empty tuple without one).
    if name == "default_generators":
        return tuple(_cuda.default_generator(i) for i in range(device_count()))
    raise AttributeError(f"module 'ember.cuda' has no attribute {name!r}")


def seed():
    import random as _random
    manual_seed(_random.getrandbits(63))


def seed_all():
    import random as _random
    manual_seed_all(_random.getrandbits(63))


# ---- memory: the caching allocator's statistics (torch's names and meanings)
def memory_stats(device=None):
    return _cuda.memory_stats(_index(device))


def _stat(device, key):
    return memory_stats(device).get(key, 0)


def memory_allocated(device=None):
    return _stat(device, "allocated_bytes.all.current")


def max_memory_allocated(device=None):
    return _stat(device, "allocated_bytes.all.peak")


def memory_reserved(device=None):
    return _stat(device, "reserved_bytes.all.current")


def max_memory_reserved(device=None):
    return _stat(device, "reserved_bytes.all.peak")


def memory_cached(device=None):
    return memory_reserved(device)


def max_memory_cached(device=None):
    return max_memory_reserved(device)


def reset_peak_memory_stats(device=None):
    _cuda.reset_peak_memory_stats(_index(device))


def reset_max_memory_allocated(device=None):
    reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device=None):
    _cuda.reset_accumulated_memory_stats(_index(device))


def memory_summary(device=None, abbreviated=False):
    return _cuda.memory_summary(_index(device), abbreviated)


def empty_cache():
    _cuda.empty_cache()


def mem_get_info(device=None):
    return _cuda.mem_get_info(_index(device))


# ---- streams and events
class Stream:
    """A CUDA stream (torch.cuda.Stream): ember pools streams per device and priority."""

    def __init__(self, device=None, priority=0, _handle=None):
        if _handle is None:
            _handle = _cuda.new_stream(_index(device), priority)
        self.device_index, self.stream_id = _handle

    @property
    def device(self):
        return _C.device("cuda", self.device_index)

    @property
    def priority(self):
        return _cuda.stream_priority(self.device_index, self.stream_id)

    def query(self):
        return _cuda.query_stream(self.device_index, self.stream_id)

    def synchronize(self):
        _cuda.synchronize_stream(self.device_index, self.stream_id)

    def wait_event(self, event):
        event.wait(self)

    def wait_stream(self, stream):
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        if event is None:
            event = Event()
        event.record(self)
        return event

    def __eq__(self, other):
        return isinstance(other, Stream) and (self.device_index, self.stream_id) == (other.device_index, other.stream_id)

    def __hash__(self):
        return hash((self.device_index, self.stream_id))

    def __repr__(self):
        return f"<ember.cuda.Stream device=cuda:{self.device_index} id={self.stream_id}>"


class Event:
    """A CUDA event (torch.cuda.Event): created on the device of its first record()."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self._event = _cuda.Event(enable_timing, blocking, interprocess)

    def record(self, stream=None):
        stream = current_stream() if stream is None else stream
        self._event.record(stream.device_index, stream.stream_id)

    def wait(self, stream=None):
        stream = current_stream() if stream is None else stream
        self._event.wait(stream.device_index, stream.stream_id)

    def query(self):
        return self._event.query()

    def synchronize(self):
        self._event.synchronize()

    def elapsed_time(self, end_event):
        return self._event.elapsed_time(end_event._event)

    def __repr__(self):
        return f"<ember.cuda.Event {'recorded' if self._event.recorded else 'unrecorded'}>"


def current_stream(device=None):
    return Stream(_handle=_cuda.current_stream(_index(device)))


def default_stream(device=None):
    return Stream(_handle=_cuda.default_stream(_index(device)))


def set_stream(stream):
    if stream is not None:
        _cuda.set_stream(stream.device_index, stream.stream_id)


class StreamContext:
    """Makes `stream` (and its device) current inside the block (torch.cuda.StreamContext)."""

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        if self.stream is None:
            return None
        self._prev_device = _cuda.current_device()
        _cuda.set_device(self.stream.device_index)
        self._prev_stream = current_stream(self.stream.device_index)
        set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc):
        if self.stream is not None:
            set_stream(self._prev_stream)
            _cuda.set_device(self._prev_device)
        return False


def stream(stream):
    return StreamContext(stream)


def _record_stream(tensor, stream):
    tensor._record_stream(stream.device_index, stream.stream_id)


_C.Tensor.record_stream = _record_stream


from . import amp  # noqa: E402,F401
from . import memory  # noqa: E402,F401
from .memory import memory_snapshot  # noqa: E402,F401
from .graphs import (CUDAGraph, graph, graph_pool_handle, is_current_stream_capturing,  # noqa: E402,F401
                     make_graphed_callables)
from . import graphs  # noqa: E402,F401
