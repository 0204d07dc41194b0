"""ember.cuda.memory: torch.cuda.memory's history and snapshots of the caching allocator.

    ember.cuda.memory._record_memory_history(max_entries=100000)
    ...  # run the code to look at
    ember.cuda.memory._dump_snapshot("snapshot.pickle")
    ember.cuda.memory._record_memory_history(enabled=None)

The pickle has torch's format, so torch's viewers read it: drop it on
https://pytorch.org/memory_viz, or `python -m torch.cuda._memory_viz trace_plot snapshot.pickle
-o trace.html`. Stacks are Python frames only (torch's stacks="all" adds C++ frames; ember
records the Python ones for either setting)."""
import pickle
import re
import sys

from .. import _C
from . import (  # noqa: F401  (torch.cuda.memory re-exports the statistics too)
    empty_cache, max_memory_allocated, max_memory_reserved, mem_get_info, memory_allocated, memory_reserved,
    memory_stats, memory_summary, reset_accumulated_memory_stats, reset_peak_memory_stats,
)

_cuda = _C._cuda

__all__ = ["memory_snapshot", "_record_memory_history", "_snapshot", "_dump_snapshot"]

# torch's RecordContext levels, by the names _record_memory_history's `context` takes.
_CONTEXT_LEVELS = {None: 0, "state": 1, "alloc": 2, "all": 3}


def _record_memory_history(enabled="all", *args, **kwargs):
    """Start (enabled="all" or "state") or stop (None) recording the CUDA caching allocator's
    history, as torch.cuda.memory._record_memory_history.

    enabled: "all" keeps the newest `max_entries` allocator actions (alloc, free_requested,
        free_completed, segment_alloc, segment_free, oom, snapshot); "state" keeps only the
        stacks of live allocations; None stops recording and drops the history.
    context: which stacks are recorded: None, "state" (of live allocations), "alloc" (also on
        alloc entries), "all" (frees record their own stack too).
    stacks: "python" or "all"; ember records Python frames for both.
    max_entries: the size of the history ring (the oldest entries are dropped).
    device: ignored, as torch's: every GPU records.
    clear_history: drop the history recorded so far when enabling.

    The legacy form _record_memory_history(True/False, record_context=True,
    trace_alloc_max_entries=1, trace_alloc_record_context=False, ...) is accepted too."""
    if isinstance(enabled, bool):
        return _record_memory_history_legacy(enabled, *args, **kwargs)
    return _record_memory_history_impl(enabled, *args, **kwargs)


def _record_memory_history_impl(enabled="all", context="all", stacks="all", max_entries=sys.maxsize,
                                device=None, clear_history=False, compile_context=False,
                                global_record_annotations=False, skip_actions=None,
                                record_pinned_host_memory=False, record_cuda=True):
    # torch's checks and messages (RuntimeError, as its TORCH_CHECK).
    if enabled is not None and enabled not in ("state", "all"):
        raise RuntimeError("expected state to be 'state', 'all', or None")
    if context not in _CONTEXT_LEVELS:
        raise RuntimeError("expected context to be 'state', 'alloc', 'all', or None")
    if stacks not in ("python", "all"):
        raise RuntimeError("expected stacks to be 'python', or 'all'")
    if skip_actions:
        raise NotImplementedError("_record_memory_history: skip_actions is not supported by ember")
    if record_pinned_host_memory:
        raise NotImplementedError("_record_memory_history: record_pinned_host_memory is not supported by ember")
    max_entries = int(max_entries)
    if max_entries < 0:
        raise ValueError(f"_record_memory_history: max_entries must be non-negative, got {max_entries}")
    # "state" needs no history: torch keeps a ring of one entry then.
    if enabled != "all":
        max_entries = 1
    _cuda.record_memory_history(enabled is not None, _CONTEXT_LEVELS[context], max_entries, bool(clear_history))


def _record_memory_history_legacy(enabled, record_context=True, trace_alloc_max_entries=1,
                                  trace_alloc_record_context=False, device=None, record_context_cpp=False,
                                  clear_history=False, compile_context=False, global_record_annotations=False,
                                  skip_actions=None, record_pinned_host_memory=False, record_cuda=True):
    # torch's mapping: trace_alloc_record_context puts stacks on alloc entries, record_context
    # on live allocations only.
    level = 2 if trace_alloc_record_context else (1 if record_context else 0)
    max_entries = int(trace_alloc_max_entries)
    if max_entries < 0:
        raise ValueError(f"_record_memory_history: trace_alloc_max_entries must be non-negative, got {max_entries}")
    _cuda.record_memory_history(bool(enabled), level, max_entries, bool(clear_history))


_FRAME = re.compile(r"^(.*)\((\d+)\): (.*)$")


def _parse_frame(text):
    """One frame string as the profiler's stack provider writes it ("path/file.py(12): func")
    as torch's frame dict {"filename", "line", "name"}. The last "(digits): " splits it, so
    file names with parentheses survive; anything else keeps the text as the file name."""
    m = _FRAME.match(text)
    if m is None:
        return {"filename": text, "line": 0, "name": "??"}
    return {"filename": m.group(1), "line": int(m.group(2)), "name": m.group(3)}


def _convert_frames(frames, cache):
    # The binding hands the same list object to every entry of one capture: convert it once.
    key = id(frames)
    hit = cache.get(key)
    if hit is None or hit[0] is not frames:
        hit = (frames, [_parse_frame(f) for f in frames])
        cache[key] = hit
    return hit[1]


def _convert_snapshot(raw):
    """The binding's snapshot (frames as strings) in torch's format (frames as dicts), in place."""
    cache = {}
    for seg in raw["segments"]:
        seg["frames"] = _convert_frames(seg["frames"], cache)
        for block in seg["blocks"]:
            block["frames"] = _convert_frames(block["frames"], cache)
    for trace in raw["device_traces"]:
        for entry in trace:
            if "frames" in entry:
                entry["frames"] = _convert_frames(entry["frames"], cache)
    return raw


def _snapshot(device=None, augment_with_fx_traces=False):
    """The state of every GPU's caching allocator, as torch.cuda.memory._snapshot():

        {"segments": [{"device", "address", "total_size", "allocated_size", "active_size",
                       "requested_size", "stream", "segment_type", "segment_pool_id",
                       "is_expandable", "frames", "blocks": [{"address", "size", "requested_size",
                       "state", "frames"}]}],
         "device_traces": [[{"action", "addr", "size", "stream", "time_us", "frames"}], ...]}

    device_traces[i] is GPU i's history (empty unless _record_memory_history is on). Like
    torch's, `device` is ignored: every GPU is in it. Without a GPU both lists are empty."""
    return _convert_snapshot(_cuda.memory_snapshot())


def _dump_snapshot(filename="dump_snapshot.pickle", augment_with_fx_traces=False):
    """pickle.dump(_snapshot(), ...) into `filename`, for torch's viewers (pytorch.org/memory_viz)."""
    s = _snapshot()
    with open(filename, "wb") as f:
        pickle.dump(s, f)


def memory_snapshot(mempool_id=None, include_traces=True):
    """The segments of every GPU's caching allocator (torch.cuda.memory_snapshot()). ember has
    only the default pool (0, 0): any other mempool_id has no segments."""
    if mempool_id is not None and tuple(mempool_id) != (0, 0):
        return []
    return _snapshot()["segments"]
