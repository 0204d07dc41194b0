"""A validator for the Trace Event Format (the JSON Perfetto and chrome://tracing open), as the
profiler tests use it: the document's shape, each event's required fields and types per phase,
complete events properly nested on each thread, flow arrows that start before they finish, and
counters with numeric values. It knows nothing about ember; it is also run on PyTorch's own
traces so that it does not drift into accepting only what ember writes."""
import math
from collections import defaultdict

PHASES = {"X", "B", "E", "i", "I", "M", "C", "s", "t", "f", "b", "e", "n"}


class TraceFormatError(AssertionError):
    pass


def _fail(msg, event=None):
    raise TraceFormatError(msg + (f": {event}" if event is not None else ""))


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def validate_trace(doc, nest_tolerance_us=1e-3, dangling_flows_ok=False):
    """Raises TraceFormatError on the first violation; returns the events by phase.
    nest_tolerance_us: how far a child may stick out of its parent (rounding of the writer's
    timestamps; ember writes nanoseconds, PyTorch 1.13 whole microseconds).
    dangling_flows_ok: accept a flow end with no start (viewers ignore it). PyTorch's CUDA traces
    hold them: a kernel whose launch fell outside the profiled window (torch 2.11, H100)."""
    if isinstance(doc, list):
        events = doc
    elif isinstance(doc, dict):
        if "traceEvents" not in doc:
            _fail("a JSON object trace needs a 'traceEvents' list")
        events = doc["traceEvents"]
        if "displayTimeUnit" in doc and doc["displayTimeUnit"] not in ("ms", "ns"):
            _fail(f"displayTimeUnit must be 'ms' or 'ns', got {doc['displayTimeUnit']!r}")
    else:
        _fail(f"a trace is a JSON object or array, got {type(doc).__name__}")
    if not isinstance(events, list):
        _fail("traceEvents must be a list")

    by_phase = defaultdict(list)
    flows_started = {}
    for e in events:
        if not isinstance(e, dict):
            _fail("each event is a JSON object", e)
        ph = e.get("ph")
        if ph not in PHASES:
            _fail(f"unknown phase {ph!r}", e)
        if ph != "M" and not _number(e.get("ts")):
            _fail("'ts' must be a finite number", e)
        if "pid" not in e:
            _fail("every event needs a 'pid'", e)
        if ph in ("X", "B", "E", "i", "I", "s", "t", "f") and "tid" not in e and ph not in ("i", "I"):
            _fail("this phase needs a 'tid'", e)
        if ph == "X":
            if not isinstance(e.get("name"), str):
                _fail("a complete event needs a string 'name'", e)
            if not _number(e.get("dur")) or e["dur"] < 0:
                _fail("a complete event needs a non-negative 'dur'", e)
        elif ph == "M":
            if e.get("name") not in ("process_name", "process_labels", "process_sort_index", "thread_name",
                                     "thread_sort_index"):
                _fail("unknown metadata event name", e)
            if not isinstance(e.get("args"), dict) or len(e["args"]) == 0:
                _fail("a metadata event carries its value in 'args'", e)
        elif ph in ("i", "I"):
            if e.get("s", "t") not in ("g", "p", "t"):
                _fail("an instant event's scope 's' is 'g', 'p' or 't'", e)
        elif ph == "C":
            args = e.get("args")
            if not isinstance(args, dict) or not args or not all(_number(v) for v in args.values()):
                _fail("a counter event needs numeric 'args'", e)
        elif ph in ("s", "t", "f"):
            if "id" not in e or "cat" not in e:
                _fail("a flow event needs 'id' and 'cat'", e)
            if ph == "s":
                flows_started[(e["cat"], e["id"])] = e["ts"]
        if "args" in e and not isinstance(e["args"], dict):
            _fail("'args' must be an object", e)
        by_phase[ph].append(e)

    # Flows: the file's order is free (PyTorch's CUDA traces list a kernel's flow finish before
    # its launch's start), so ends are matched against every start.
    for e in by_phase["t"] + by_phase["f"]:
        key = (e["cat"], e["id"])
        if key not in flows_started:
            if dangling_flows_ok:
                continue
            _fail("a flow step/finish has no start with the same cat and id", e)
        if e["ts"] < flows_started[key]:
            _fail("a flow finishes before it starts", e)

    # Complete events on one thread nest: none starts inside another and ends after it.
    lanes = defaultdict(list)
    for e in by_phase["X"]:
        lanes[(e["pid"], e["tid"])].append(e)
    for lane, evs in lanes.items():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in evs:
            start, end = e["ts"], e["ts"] + e["dur"]
            while stack and stack[-1] <= start + nest_tolerance_us:
                stack.pop()
            if stack and end > stack[-1] + nest_tolerance_us:
                _fail(f"events on {lane} overlap without nesting (ends at {end}, enclosing ends at {stack[-1]})", e)
            stack.append(end)
    return by_phase
