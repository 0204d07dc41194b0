"""ember.profiler (torch.profiler), issue 19: events and nesting for known programs, times that
add up, the table's layout and sorting, traces that follow the Trace Event Format, memory that
matches the allocator, schedules, and the spans of DataLoader workers and optimizers."""
import gc
import json
import os
import threading

import pytest

import ember
from ember.profiler import ProfilerAction, ProfilerActivity, profile, record_function, schedule
from trace_format import TraceFormatError, validate_trace

CUDA = ember.cuda.is_available()
needs_gpu = pytest.mark.skipif(not CUDA, reason="no CUDA GPU on this machine: the CUDA profiler compiled but did not run")


def names(prof):
    return [e.name for e in prof.events()]


def one(prof, name):
    found = [e for e in prof.events() if e.name == name]
    assert len(found) == 1, (name, len(found))
    return found[0]


def test_known_program_events_and_nesting():
    a, b = ember.ones(4, 8), ember.ones(8, 3)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        with record_function("outer"):
            c = ember.mm(a, b)
            with record_function("inner"):
                d = c.relu()
    outer, inner, mm, relu = (one(prof, n) for n in ("outer", "inner", "aten::mm", "aten::relu"))
    assert mm.cpu_parent == outer and inner.cpu_parent == outer and relu.cpu_parent == inner
    assert outer.cpu_parent is None
    assert {e.name for e in outer.cpu_children} == {"aten::mm", "inner"}
    assert mm.input_shapes == [[4, 8], [8, 3]]
    assert mm.input_types == ["float", "float"]
    assert outer.is_user_annotation and not mm.is_user_annotation
    assert d.shape == (4, 3)
    # Each dispatched op is recorded once, also when autograd and autocast layers run.
    w = ember.randn(8, 3, requires_grad=True)
    with profile() as prof2:
        with ember.autocast("cpu"):
            ember.mm(a, w)
    assert names(prof2).count("aten::mm") == 1


def test_times_are_consistent():
    x = ember.randn(32, 32)
    with profile() as prof:
        for _ in range(3):
            with record_function("step"):
                x = ember.tanh(x @ x)
    for e in prof.events():
        assert 0 <= e.self_cpu_time_total <= e.cpu_time_total + 1e-9
        p = e.cpu_parent
        if p is not None:
            assert p.time_range.start <= e.time_range.start and e.time_range.end <= p.time_range.end
            assert p.thread == e.thread
        children = sum(c.cpu_time_total for c in e.cpu_children)
        assert e.self_cpu_time_total == pytest.approx(max(0.0, e.cpu_time_total - children), abs=1e-3)
    total = prof.key_averages().self_cpu_time_total
    assert total == pytest.approx(sum(e.self_cpu_time_total for e in prof.events()))


def test_backward_nodes_link_to_forward_ops():
    m = ember.nn.Linear(6, 4)
    x = ember.randn(3, 6)
    with profile() as prof:
        m(x).sum().backward()
    addmm = one(prof, "aten::addmm")
    assert addmm.sequence_nr >= 0
    node = one(prof, "AddmmBackward0")
    wrapper = one(prof, "autograd::engine::evaluate_function: AddmmBackward0")
    assert node.sequence_nr == wrapper.sequence_nr == addmm.sequence_nr
    assert node.cpu_parent == wrapper and node.fwd_thread != 0
    assert "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad" in names(prof)
    assert one(prof, "aten::linear").cpu_children[-1].name in ("aten::addmm", "aten::t", "aten::transpose")


def test_key_averages_and_table_layout():
    a = ember.randn(16, 16)
    with profile(record_shapes=True) as prof:
        for _ in range(4):
            a = ember.tanh(a @ a)
        ember.mm(ember.ones(2, 16), a)
    avg = {e.key: e for e in prof.key_averages()}
    assert avg["aten::mm"].count == 5 and avg["aten::tanh"].count == 4
    assert avg["aten::mm"].cpu_time == pytest.approx(avg["aten::mm"].cpu_time_total / 5)
    by_shape = [e for e in prof.key_averages(group_by_input_shape=True) if e.key == "aten::mm"]
    assert sorted(e.input_shapes for e in by_shape) == [[[2, 16], [16, 16]], [[16, 16], [16, 16]]]
    assert sorted(e.count for e in by_shape) == [1, 4]

    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=3)
    lines = table.splitlines()
    assert len(lines) == 8  # sep, header, sep, 3 rows, sep, total
    assert lines[0] == lines[2] == lines[6] and set(lines[0]) == {"-", " "}
    header = lines[1].split("  ")
    header = [h.strip() for h in header if h.strip()]
    assert header == ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"]
    assert all(len(line) == len(lines[0]) for line in lines[1:6])
    assert lines[7].startswith("Self CPU time total: ")
    # Rows are sorted by the column asked for.
    rows = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    assert lines[3].split()[0] == rows[0].key
    # torch's spelling of the device columns is accepted for sorting.
    prof.key_averages().table(sort_by="cuda_time_total", row_limit=2)
    with pytest.raises(ValueError, match="sort_by='nope'"):
        prof.key_averages().table(sort_by="nope")
    shaped = prof.key_averages(group_by_input_shape=True).table(row_limit=100)
    assert "Input Shapes" in shaped and "[[2, 16], [16, 16]]" in shaped


def test_table_matches_torch_layout(torch_ref):
    """The same program's table in torch and ember: the same columns in the same order (widths
    follow the longest event name, and torch records a few more ops such as resolve_conj)."""
    torch = torch_ref
    def run(lib):
        x = lib.ones(8, 8)
        with lib.profiler.profile(record_shapes=True) as prof:
            with lib.profiler.record_function("region_name"):
                lib.mm(x, x)
        return prof.key_averages().table(sort_by="cpu_time_total", row_limit=2)
    ours, theirs = run(ember).splitlines(), run(torch).splitlines()
    columns = lambda line: [c.strip() for c in line.split("  ") if c.strip()]  # noqa: E731
    assert columns(ours[1]) == columns(theirs[1])
    assert [len(c) for c in ours[0].split()][1:] == [len(c) for c in theirs[0].split()][1:]
    assert ours[-1].startswith("Self CPU time total: ") and theirs[-1].startswith("Self CPU time total: ")


def test_chrome_trace_follows_the_format(tmp_path):
    m = ember.nn.Sequential(ember.nn.Linear(8, 8), ember.nn.ReLU(), ember.nn.Linear(8, 2))
    opt = ember.optim.SGD(m.parameters(), lr=0.1)
    x = ember.randn(4, 8)
    path = tmp_path / "trace.json"
    with profile(record_shapes=True, profile_memory=True, with_stack=True) as prof:
        with record_function("train_step"):
            m(x).sum().backward()
            opt.step()
            opt.zero_grad()
    prof.export_chrome_trace(str(path))
    doc = json.loads(path.read_text())
    by_phase = validate_trace(doc)
    cats = {e.get("cat") for e in by_phase["X"]}
    assert {"cpu_op", "user_annotation"} <= cats
    names_ = {e["name"] for e in by_phase["X"]}
    assert {"train_step", "aten::addmm", "Optimizer.step#SGD.step", "Optimizer.zero_grad#SGD.zero_grad",
            "AddmmBackward0"} <= names_
    # Forward ops link to their backward nodes.
    fwdbwd = [e for e in by_phase["s"] if e["cat"] == "fwdbwd"]
    assert fwdbwd and len(fwdbwd) == len([e for e in by_phase["f"] if e["cat"] == "fwdbwd"])
    addmm = next(e for e in by_phase["X"] if e["name"] == "aten::addmm")
    assert addmm["args"]["Input Dims"] == [[8], [4, 8], [8, 8], [], []]
    assert "Sequence number" in addmm["args"]
    assert "test_profiler.py" in addmm["args"]["Call stack"]
    mem = [e for e in by_phase["i"] if e["name"] == "[memory]"]
    assert mem and all({"Bytes", "Total Allocated", "Addr", "Device Type"} <= set(e["args"]) for e in mem)
    assert by_phase["C"], "memory counter events"
    assert doc["displayTimeUnit"] == "ms" and doc["traceEvents"]


def test_validator_rejects_broken_traces():
    good = {"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0.0, "dur": 10.0},
                            {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 2.0, "dur": 3.0}]}
    validate_trace(good)
    for bad in ({"events": []},
                {"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0.0}]},
                {"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0.0, "dur": 10.0},
                                 {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 5.0, "dur": 10.0}]},
                {"traceEvents": [{"ph": "f", "id": 1, "cat": "x", "pid": 1, "tid": 1, "ts": 0.0}]},
                {"traceEvents": [{"ph": "Q", "pid": 1, "ts": 0.0}]},
                {"traceEvents": [{"ph": "C", "name": "m", "pid": 1, "ts": 0.0, "args": {"v": "1"}}]}):
        with pytest.raises(TraceFormatError):
            validate_trace(bad)


def test_validator_accepts_torch_traces(tmp_path, torch_ref):
    torch = torch_ref
    m = torch.nn.Linear(8, 4)
    with torch.profiler.profile(record_shapes=True, profile_memory=True) as prof:
        m(torch.randn(2, 8)).sum().backward()
    path = tmp_path / "torch.json"
    prof.export_chrome_trace(str(path))
    # torch 1.13 writes whole microseconds, so a child can end 1 us after its parent.
    validate_trace(json.loads(path.read_text()), nest_tolerance_us=1.0 if torch.__version__ < "2" else 1e-3,
                   dangling_flows_ok=True)


def test_memory_matches_the_allocation():
    keep = []
    with profile(profile_memory=True) as prof:
        with record_function("alloc"):
            keep.append(ember.empty(1000))       # 4000 bytes, kept
            t = ember.empty(250, dtype=ember.float64)  # 2000 bytes, freed below
            del t
    region = one(prof, "alloc")
    assert region.cpu_memory_usage == 4000
    assert region.self_cpu_memory_usage == -2000
    mem = prof.events()._result.memory_events
    assert [m[3] for m in mem] == [4000, 2000, -2000]
    running = 0
    for m in mem:
        running += m[3]
        assert m[4] == running  # Total Allocated after each event
    table = prof.key_averages().table(row_limit=5)
    assert "CPU Mem" in table and "Self CPU Mem" in table and "3.91 KB" in table


def test_with_stack_and_export_stacks(tmp_path):
    def my_function(x):
        return ember.exp(x)
    with profile(with_stack=True) as prof:
        my_function(ember.ones(3))
    exp = one(prof, "aten::exp")
    assert exp.stack and "my_function" in exp.stack[0] and "test_profiler.py" in exp.stack[0]
    out = tmp_path / "stacks.txt"
    prof.export_stacks(str(out), "self_cpu_time_total")
    lines = out.read_text().splitlines()
    assert lines and all(line.rsplit(" ", 1)[1].isdigit() for line in lines)
    table = prof.key_averages(group_by_stack_n=2).table(row_limit=3)
    assert "Source Location" in table


def test_with_flops_column():
    with profile(with_flops=True) as prof:
        ember.mm(ember.ones(64, 32), ember.ones(32, 16))
    assert one(prof, "aten::mm").flops == 2 * 64 * 32 * 16
    table = prof.key_averages().table(row_limit=5)
    assert "Total KFLOPs" in table and "65.536" in table


def test_schedule_actions_match_torch(torch_ref):
    ours = schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1)
    theirs = torch_ref.profiler.schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1)
    assert [ours(i).name for i in range(12)] == [theirs(i).name for i in range(12)]
    with pytest.raises(AssertionError):
        schedule(wait=0, warmup=1, active=0)


def test_schedule_steps_and_trace_handler(tmp_path):
    ready = []
    handler = ember.profiler.tensorboard_trace_handler(str(tmp_path / "tb"), worker_name="w0")

    def on_ready(p):
        ready.append(sorted(e.name for e in p.events() if e.name.startswith("ProfilerStep#")))
        handler(p)

    with profile(schedule=schedule(wait=1, warmup=1, active=2), on_trace_ready=on_ready) as prof:
        for _ in range(9):
            ember.ones(4).exp()
            prof.step()
    assert ready == [["ProfilerStep#2", "ProfilerStep#3"], ["ProfilerStep#6", "ProfilerStep#7"]]
    files = sorted(os.listdir(tmp_path / "tb"))
    assert len(files) == 2 and all(f.startswith("w0.") and f.endswith(".pt.trace.json") for f in files)
    for f in files:
        validate_trace(json.loads((tmp_path / "tb" / f).read_text()))
    assert prof.step_num == 9


def test_record_function_forms_and_errors():
    @record_function("decorated")
    def f(x):
        return x + 1

    with record_function("outside"):  # no profiler: nothing happens
        f(ember.ones(1))
    with profile() as prof:
        f(ember.ones(1))
        with ember.autograd.profiler.record_function("legacy_path"):
            pass
    assert "decorated" in names(prof) and "legacy_path" in names(prof) and "outside" not in names(prof)
    with pytest.raises(TypeError):
        record_function(3)
    with profile():
        with pytest.raises(RuntimeError, match="already running"):
            with profile():
                pass
    assert not ember._C._profiler.is_profiler_enabled()
    with pytest.raises(NotImplementedError, match="with_modules"):
        profile(with_modules=True)


def test_legacy_autograd_profiler():
    with ember.autograd.profiler.profile(record_shapes=True) as prof:
        ember.ones(3).exp()
    assert "aten::exp" in prof.table()
    assert prof.self_cpu_time_total > 0
    assert any(e.key == "aten::exp" for e in prof.key_averages())


def test_dataloader_and_optimizer_spans():
    ds = ember.utils.data.TensorDataset(ember.randn(16, 4), ember.randn(16, 1))
    loader = ember.utils.data.DataLoader(ds, batch_size=4, num_workers=2)
    model = ember.nn.Linear(4, 1)
    opt = ember.optim.Adam(model.parameters())
    with profile() as prof:
        for x, y in loader:
            ember.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            opt.zero_grad()
    n = names(prof)
    assert n.count("enumerate(DataLoader)#_ThreadedIter.__next__") == 5  # 4 batches and the StopIteration
    assert n.count("Optimizer.step#Adam.step") == 4 and n.count("Optimizer.zero_grad#Adam.zero_grad") == 4
    workers = [e for e in prof.events() if e.name == "DataLoader worker#fetch"]
    assert len(workers) == 4
    main_thread = next(e.thread for e in prof.events() if e.name == "Optimizer.step#Adam.step")
    assert all(w.thread != main_thread for w in workers)
    assert n.count("aten::mse_loss") == 4


def test_other_threads_are_recorded():
    def work():
        ember.ones(3).exp()
    with profile() as prof:
        t = threading.Thread(target=work)
        t.start()
        t.join()
        work()
    threads = {e.thread for e in prof.events() if e.name == "aten::exp"}
    assert len(threads) == 2


def test_profiler_off_leaves_no_hook():
    with profile():
        pass
    assert not ember._C._profiler.is_profiler_enabled()
    ember.ones(2).exp()  # nothing recorded, nothing raised


def test_cuda_activity_without_gpu_warns():
    if CUDA:
        pytest.skip("this machine has a GPU: the GPU test covers the CUDA activity")
    with pytest.warns(UserWarning, match="ProfilerActivity.CUDA"):
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            ember.ones(2).exp()
        prof.events()
    assert "aten::exp" in names(prof)


@needs_gpu
def test_cuda_kernels_are_traced(tmp_path):
    # Earlier tests' garbage (autograd cycles holding CUDA tensors) is freed now, not by a
    # collection between the profile's last memory event and the check below.
    gc.collect()
    model = ember.nn.Linear(256, 256).cuda()
    x = ember.randn(64, 256, device="cuda")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], profile_memory=True) as prof:
        with record_function("fwd"):
            y = model(x)
        y.sum().backward()
        ember.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == "cuda"]
    assert kernels, "no GPU kernels recorded"
    addmm = one(prof, "aten::addmm")
    assert addmm.device_time_total > 0
    table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=10)
    assert "Self CUDA" in table and "CUDA total" in table and "Self CUDA time total" in table
    path = tmp_path / "gpu.json"
    prof.export_chrome_trace(str(path))
    by_phase = validate_trace(json.loads(path.read_text()))
    assert any(e["cat"] == "kernel" for e in by_phase["X"])
    assert any(e["cat"] == "ac2g" for e in by_phase["s"])
    mem = [m for m in prof.events()._result.memory_events if m[6].startswith("cuda")]
    assert mem
    # The memory events' running total is the allocator's allocated bytes.
    assert mem[-1][4] == ember.cuda.memory_allocated()
    # Kernel times sit inside the profiling window and after their launch.
    for k in kernels:
        assert k.time_range.end >= k.time_range.start
