"""torch.cuda.memory's history and snapshots (ember.cuda.memory): the frame parser, the option
checks, the snapshot format as torch's own viewers read it (checked with PyTorch 2.x's
torch.cuda._memory_viz, run in its own interpreter when there is one), and on a GPU the
recorded history itself."""
import itertools
import os
import pickle
import subprocess
import sys

import pytest

import ember
from ember.cuda import memory

NO_GPU = "no CUDA GPU on this machine: the CUDA backend compiled but did not run"
# A Python with PyTorch 2.x, whose torch.cuda._memory_viz reads the pickles (the test venv may
# have an older torch, or none).
TORCH2_PYTHON = os.environ.get("EMBER_TORCH2_PYTHON", "/work/torch2/bin/python")

THIS_FILE = os.path.basename(__file__)


def _require_gpu():
    if not ember.cuda.is_available():
        pytest.skip(NO_GPU)


def _require_torch2():
    if not os.path.exists(TORCH2_PYTHON):
        pytest.skip(f"no PyTorch 2.x interpreter at {TORCH2_PYTHON} (set EMBER_TORCH2_PYTHON)")
    probe = subprocess.run([TORCH2_PYTHON, "-c", "import torch.cuda._memory_viz"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"{TORCH2_PYTHON} cannot import torch.cuda._memory_viz: {probe.stderr.strip()[-300:]}")


# Runs every reader of torch.cuda._memory_viz that works offline on the pickle: the text reports
# (stats, trace), the flamegraph inputs (segments, memory, compare), and the HTML viewers
# (trace_plot, segment_plot: they embed the pickle for pytorch.org/memory_viz's script).
_VIEWER_SCRIPT = r"""
import contextlib, copy, io, pickle, sys
from torch.cuda import _memory_viz as mv
with open(sys.argv[1], "rb") as f:
    data = pickle.load(f)
same = lambda lines: lines
print(mv.segsum(data))
print(mv.trace(data))
print(mv.segments(data, format_flamegraph=same))
print(mv.memory(data, format_flamegraph=same))
with contextlib.redirect_stdout(io.StringIO()):
    mv.compare(data["segments"], [], format_flamegraph=same)
for html in (mv.trace_plot(copy.deepcopy(data)), mv.trace_plot(copy.deepcopy(data), plot_segments=True),
             mv.trace_plot(copy.deepcopy(data), filter_freed=True), mv.segment_plot(copy.deepcopy(data))):
    assert "snapshot.pickle" in html and "add_local_files" in html
print("VIEWER-OK")
"""


def _run_torch2_viewers(path, tmp_path):
    r = subprocess.run([TORCH2_PYTHON, "-c", _VIEWER_SCRIPT, str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "VIEWER-OK" in r.stdout
    # The command line the docs point to.
    for cmd in ("trace_plot", "segment_plot"):
        out = tmp_path / f"{cmd}.html"
        r2 = subprocess.run([TORCH2_PYTHON, "-m", "torch.cuda._memory_viz", cmd, str(path), "-o", str(out)],
                            capture_output=True, text=True)
        assert r2.returncode == 0, r2.stderr[-3000:]
        assert out.stat().st_size > 0
    return r.stdout


# ---- frames and the snapshot format (no GPU needed)

def test_parse_frame():
    assert memory._parse_frame("/src/train.py(12): step") == {"filename": "/src/train.py", "line": 12, "name": "step"}
    assert memory._parse_frame("main.py(3): <module>") == {"filename": "main.py", "line": 3, "name": "<module>"}
    # The last "(digits): " splits, so parentheses in the path survive.
    assert memory._parse_frame("/tmp/run (2)/m.py(7): f") == {"filename": "/tmp/run (2)/m.py", "line": 7, "name": "f"}
    assert memory._parse_frame("/x/a.py(1): <lambda>") == {"filename": "/x/a.py", "line": 1, "name": "<lambda>"}
    # Not in the provider's format: the text is kept as the file name, torch's "??" as the name.
    assert memory._parse_frame("<frozen importlib>") == {"filename": "<frozen importlib>", "line": 0, "name": "??"}


SEG = 0x7F3A00000000
STACK0 = ["/src/train.py(10): setup", "/src/main.py(3): <module>"]
STACK1 = ["/src/train.py(12): step", "/src/main.py(3): <module>"]
STACK2 = ["/src/train.py(15): step", "/src/main.py(3): <module>"]


def _raw_snapshot():
    """What the binding returns (frames still strings) for one 2 MiB segment on GPU 0: a freed
    block, a live one, one waiting for a record_stream, and the rest free; GPU 1 did nothing."""
    s0, s1, s2 = list(STACK0), list(STACK1), list(STACK2)  # one list per capture, shared
    blocks = [
        {"address": SEG, "size": 512, "requested_size": 0, "state": "inactive", "frames": []},
        {"address": SEG + 512, "size": 1024, "requested_size": 1000, "state": "active_allocated", "frames": s1},
        {"address": SEG + 1536, "size": 512, "requested_size": 500, "state": "active_pending_free", "frames": s2},
        {"address": SEG + 2048, "size": 2097152 - 2048, "requested_size": 0, "state": "inactive", "frames": []},
    ]
    segment = {"device": 0, "address": SEG, "total_size": 2097152, "allocated_size": 1024, "active_size": 1536,
               "requested_size": 1500, "stream": 0, "segment_type": "small", "segment_pool_id": (0, 0),
               "is_expandable": False, "frames": s0, "blocks": blocks}

    clock = itertools.count(1700000000000000, 5)  # time_us: microseconds since the epoch

    def entry(action, addr, size, frames=None):
        e = {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": next(clock)}
        if frames is not None:
            e["frames"] = frames
        return e

    trace = [
        entry("segment_alloc", SEG, 2097152, s0),
        entry("alloc", SEG, 400, s0),
        entry("alloc", SEG + 512, 1000, s1),
        entry("alloc", SEG + 1536, 500, s2),
        entry("free_requested", SEG, 400, s0),
        entry("free_completed", SEG, 400, s0),
        entry("free_requested", SEG + 1536, 500, s2),
        {"action": "oom", "device_free": 1000, "size": 4194304, "stream": 0, "time_us": next(clock)},
        entry("snapshot", 0, 1536),
    ]
    return {"segments": [segment], "device_traces": [trace, []]}


def test_convert_snapshot_gives_torch_frames():
    s = memory._convert_snapshot(_raw_snapshot())
    seg = s["segments"][0]
    assert seg["frames"][0] == {"filename": "/src/train.py", "line": 10, "name": "setup"}
    live = seg["blocks"][1]
    assert live["frames"] == [{"filename": "/src/train.py", "line": 12, "name": "step"},
                              {"filename": "/src/main.py", "line": 3, "name": "<module>"}]
    assert seg["blocks"][0]["frames"] == []
    trace = s["device_traces"][0]
    assert trace[2]["frames"] is live["frames"]  # one capture, converted once
    assert "frames" not in trace[-1]  # entries without a stack have no "frames", as torch's
    assert s["device_traces"][1] == []


def test_torch_memory_viz_reads_our_format(tmp_path):
    _require_torch2()
    path = tmp_path / "snapshot.pickle"
    with open(path, "wb") as f:
        pickle.dump(memory._convert_snapshot(_raw_snapshot()), f)
    out = _run_torch2_viewers(path, tmp_path)
    assert "cudaMalloc(" in out  # trace: the segment_alloc
    assert "raise OutOfMemoryError" in out  # trace: the oom entry
    assert "train.py:12:step" in out  # segments/memory: the live block's stack
    assert "active_pending_free" in out
    assert "total_reserved: 2.0MiB" in out  # stats


def test_options_are_checked_as_torch():
    with pytest.raises(RuntimeError, match="expected state to be 'state', 'all', or None"):
        memory._record_memory_history(enabled="some")
    with pytest.raises(RuntimeError, match="expected context to be 'state', 'alloc', 'all', or None"):
        memory._record_memory_history(context="everything")
    with pytest.raises(RuntimeError, match="expected stacks to be 'python', or 'all'"):
        memory._record_memory_history(stacks="cpp")
    with pytest.raises(ValueError, match="max_entries must be non-negative, got -1"):
        memory._record_memory_history(max_entries=-1)


def test_without_gpu_snapshots_are_empty_and_recording_raises():
    if ember.cuda.is_available():
        pytest.skip("checks the behaviour on a machine without a GPU")
    assert memory._snapshot() == {"segments": [], "device_traces": []}
    assert memory.memory_snapshot() == []
    assert ember.cuda.memory_snapshot() == []
    with pytest.raises(RuntimeError):
        memory._record_memory_history()


# ---- on a GPU

@pytest.fixture
def recording():
    """Runs the test with history on (torch's defaults) and always turns it off afterwards."""
    _require_gpu()
    memory._record_memory_history(max_entries=100000, clear_history=True)
    try:
        yield
    finally:
        memory._record_memory_history(enabled=None)


def _frames_name_this_file(frames):
    return any(f["filename"].endswith(THIS_FILE) for f in frames)


def test_history_records_allocations_and_frees_with_python_frames(recording):
    dev = ember.cuda.current_device()
    x = ember.empty(1000, device="cuda")  # 4000 bytes
    addr = x.data_ptr()
    line = sys._getframe().f_lineno - 2
    del x
    s = memory._snapshot()
    trace = s["device_traces"][dev]
    allocs = [e for e in trace if e["action"] == "alloc" and e["addr"] == addr]
    assert allocs, trace[-10:]
    alloc = allocs[-1]
    assert alloc["size"] == 4000
    assert alloc["stream"] == 0
    assert alloc["time_us"] > 1577836800 * 10**6
    inner = [f for f in alloc["frames"] if f["filename"].endswith(THIS_FILE)]
    assert inner and inner[0]["line"] == line and inner[0]["name"] == sys._getframe().f_code.co_name, inner
    after = trace[trace.index(alloc):]
    actions = [e["action"] for e in after if e.get("addr") == addr]
    assert actions[:3] == ["alloc", "free_requested", "free_completed"], actions
    assert all(e["size"] == 4000 for e in after if e.get("addr") == addr and e["action"].startswith("free"))


def test_snapshot_blocks_carry_allocation_frames(recording):
    x = ember.empty(1000, device="cuda")
    segments = memory.memory_snapshot()
    blocks = [b for seg in segments for b in seg["blocks"] if b["address"] == x.data_ptr()]
    assert len(blocks) == 1
    b = blocks[0]
    assert b["state"] == "active_allocated"
    assert b["requested_size"] == 4000 and b["size"] == 4096
    assert _frames_name_this_file(b["frames"])
    seg = next(seg for seg in segments if any(bb is b for bb in seg["blocks"]))
    assert seg["device"] == ember.cuda.current_device()
    assert seg["segment_type"] == "small" and seg["segment_pool_id"] == (0, 0) and seg["is_expandable"] is False
    assert seg["total_size"] == sum(bb["size"] for bb in seg["blocks"])
    assert seg["address"] == seg["blocks"][0]["address"]


def test_disabling_drops_the_history():
    _require_gpu()
    memory._record_memory_history()
    x = ember.empty(10, device="cuda")
    assert any(memory._snapshot()["device_traces"])
    memory._record_memory_history(enabled=None)
    assert not any(memory._snapshot()["device_traces"])
    del x
    assert not any(memory._snapshot()["device_traces"])


def test_state_mode_keeps_stacks_of_live_blocks_only():
    _require_gpu()
    memory._record_memory_history(enabled="state")
    try:
        x = ember.empty(1000, device="cuda")
        ember.empty(3000, device="cuda")
        s = memory._snapshot()
    finally:
        memory._record_memory_history(enabled=None)
    assert all(len(t) <= 1 for t in s["device_traces"])  # a ring of one entry, as torch's
    blocks = [b for seg in s["segments"] for b in seg["blocks"] if b["address"] == x.data_ptr()]
    assert blocks and _frames_name_this_file(blocks[0]["frames"])


def test_legacy_bool_form():
    _require_gpu()
    memory._record_memory_history(True, trace_alloc_max_entries=1000, trace_alloc_record_context=True)
    try:
        x = ember.empty(1000, device="cuda")
        trace = memory._snapshot()["device_traces"][ember.cuda.current_device()]
    finally:
        memory._record_memory_history(False)
    allocs = [e for e in trace if e["action"] == "alloc" and e["addr"] == x.data_ptr()]
    assert allocs and _frames_name_this_file(allocs[-1]["frames"])


def test_dump_snapshot_is_read_by_torch_viewers(tmp_path, recording):
    x = ember.randn(256, 256, device="cuda")
    y = x @ x
    del x
    path = tmp_path / "dump_snapshot.pickle"
    memory._dump_snapshot(str(path))
    with open(path, "rb") as f:
        s = pickle.load(f)
    assert set(s) >= {"segments", "device_traces"}
    assert len(s["device_traces"]) == ember.cuda.device_count()
    live = [b for seg in s["segments"] for b in seg["blocks"] if b["address"] == y.data_ptr()]
    assert live and live[0]["state"] == "active_allocated"
    _require_torch2()
    out = _run_torch2_viewers(path, tmp_path)
    assert THIS_FILE in out  # segments/memory name the stacks of live blocks
