"""ember.cuda (issue 16). Without a GPU the tests that need one skip with the reason shown; the
others check what a build must do on a CPU-only machine: answer torch's queries, keep statistics
at zero and fail with torch's messages."""
import numpy as np
import pytest

import ember

requires_gpu = pytest.mark.skipif(not ember.cuda.is_available(),
                                  reason="no CUDA GPU on this machine: the CUDA backend compiled but did not run")
no_gpu = pytest.mark.skipif(ember.cuda.is_available(), reason="this machine has a GPU")


@no_gpu
def test_queries_without_a_gpu():
    assert ember.cuda.is_available() is False
    assert ember.cuda.device_count() == 0
    assert ember.cuda.memory_allocated() == 0 and ember.cuda.max_memory_allocated() == 0
    assert ember.cuda.memory_reserved() == 0 and ember.cuda.max_memory_reserved() == 0
    assert ember.cuda.memory_stats() == {}
    assert "memory summary, device ID 0" in ember.cuda.memory_summary()
    ember.cuda.empty_cache()
    ember.cuda.manual_seed(0)
    ember.cuda.manual_seed_all(0)


@no_gpu
def test_calls_that_need_a_gpu_raise_torchs_message():
    if ember.version.cuda is None:
        pytest.skip("built without the CUDA backend")
    assert ember.version.cuda.count(".") == 1
    for call in (ember.cuda.current_device, ember.cuda.get_device_name, ember.cuda.Stream,
                 lambda: ember.zeros(2, device="cuda"), lambda: ember.ones(2).cuda(),
                 lambda: ember.ones(2).pin_memory()):
        with pytest.raises(RuntimeError, match="No CUDA GPUs are available|no CUDA GPU is available"):
            call()
    assert ember.ones(2).is_pinned() is False


def test_out_of_memory_error_is_a_runtime_error():
    assert issubclass(ember.OutOfMemoryError, RuntimeError)
    assert ember.cuda.OutOfMemoryError is ember.OutOfMemoryError


def test_dataloader_pin_memory_without_a_gpu_still_loads():
    if ember.cuda.is_available():
        pytest.skip("this machine has a GPU")
    ds = ember.utils.data.TensorDataset(ember.arange(6.0))
    batches = list(ember.utils.data.DataLoader(ds, batch_size=4, pin_memory=True))
    assert [b[0].tolist() for b in batches] == [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0]]


# ---------------------------------------------------------------- with a GPU
@requires_gpu
def test_devices_and_properties():
    p = ember.cuda.get_device_properties(0)
    assert p.total_memory > 0 and p.multi_processor_count > 0 and p.major >= 7
    assert ember.cuda.get_device_name() == p.name
    assert ember.cuda.get_device_capability() == (p.major, p.minor)
    with ember.cuda.device(0):
        assert ember.cuda.current_device() == 0


@requires_gpu
def test_memory_statistics_exact():
    ember.cuda.synchronize()
    ember.cuda.empty_cache()
    base, base_reserved = ember.cuda.memory_allocated(), ember.cuda.memory_reserved()
    ember.cuda.reset_peak_memory_stats()
    x = ember.empty(1000, device="cuda")  # 4000 bytes -> 4096
    assert ember.cuda.memory_allocated() - base == 4096
    assert ember.cuda.memory_reserved() - base_reserved == 2 << 20
    y = ember.empty(3 << 20, device="cuda")  # 12 MiB, its own segment
    assert ember.cuda.max_memory_allocated() - base == 4096 + (12 << 20)
    del x, y
    assert ember.cuda.memory_allocated() == base
    stats = ember.cuda.memory_stats()
    assert stats["allocated_bytes.all.current"] == base and "segment.large_pool.peak" in stats
    ember.cuda.empty_cache()
    assert ember.cuda.memory_reserved() == base_reserved


@requires_gpu
def test_out_of_memory():
    free, total = ember.cuda.mem_get_info()
    with pytest.raises(ember.OutOfMemoryError, match="Tried to allocate"):
        ember.empty(total, dtype=ember.uint8, device="cuda")


@requires_gpu
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16, ember.bfloat16, ember.int64])
def test_copies_and_conversion(dtype):
    x = ember.randn(17, 9).to(dtype)
    g = x.cuda()
    assert g.is_cuda and g.device == ember.device("cuda:0")
    assert ember.equal(g.cpu(), x)
    assert ember.equal(x.t().cuda().cpu(), x.t())
    assert ember.equal(g.t().cpu(), x.t())
    assert ember.equal(g.to(ember.float64).cpu(), x.to(ember.float64))
    p = x.pin_memory()
    assert p.is_pinned()
    a = p.to("cuda", non_blocking=True)
    ember.cuda.synchronize()
    assert ember.equal(a.cpu(), x)


@requires_gpu
@pytest.mark.parametrize("op", ["exp", "log1p", "tanh", "sigmoid", "sqrt", "abs", "neg", "floor", "relu", "sin"])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16, ember.bfloat16])
def test_unary_matches_cpu(op, dtype):
    x = (ember.rand(31, 33) * 4 - 1).to(dtype)
    tol = {ember.float16: 2e-3, ember.bfloat16: 2e-2}.get(dtype, 1e-5)
    for t in (x, x.t()):
        got = getattr(t.cuda(), op)().cpu().to(ember.float64).numpy()
        want = getattr(t, op)().to(ember.float64).numpy()
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@requires_gpu
@pytest.mark.parametrize("dtype", [ember.float32, ember.float16, ember.int32, ember.int64])
def test_binary_broadcast_scalars_and_inplace(dtype):
    a = (ember.randn(8, 1, 5) * 10).to(dtype)
    b = (ember.randn(3, 1) * 10).to(dtype)
    ga, gb = a.cuda(), b.cuda()
    for fn in (lambda u, v: u + v, lambda u, v: u - 2 * v, lambda u, v: u * v, ember.maximum,
               lambda u, v: u > v, lambda u, v: u == v, lambda u, v: u + 3, lambda u, v: 2.5 * u):
        np.testing.assert_allclose(fn(ga, gb).cpu().double().numpy(), fn(a, b).double().numpy(), rtol=2e-3)
    c = ga.clone()
    c.mul_(2)
    assert ember.equal(c.cpu(), a * 2)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ga + b.expand(3, 5)


@requires_gpu
def test_where_masked_fill_clamp_and_fill():
    x = ember.randn(40, 7)
    g = x.cuda()
    assert ember.equal(ember.where(g > 0, g, 0.0).cpu(), ember.where(x > 0, x, 0.0))
    assert ember.equal(g.masked_fill(g < 0, -1.5).cpu(), x.masked_fill(x < 0, -1.5))
    assert ember.equal(g.clamp(-0.5, 0.5).cpu(), x.clamp(-0.5, 0.5))
    assert ember.full((3, 3), 7, device="cuda").cpu().tolist() == [[7.0] * 3] * 3


@requires_gpu
def test_streams_and_events():
    s = ember.cuda.Stream()
    start, end = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
    with ember.cuda.stream(s):
        assert ember.cuda.current_stream() == s
        start.record()
        y = ember.ones(1 << 20, device="cuda") * 3
        end.record()
    end.synchronize()
    assert end.query() and start.elapsed_time(end) >= 0
    assert ember.cuda.current_stream() == ember.cuda.default_stream()
    y.record_stream(s)
    assert y.cpu()[:3].tolist() == [3.0, 3.0, 3.0]
