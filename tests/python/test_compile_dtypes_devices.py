"""ember.compile beyond float32 on the CPU: bfloat16 and float16 (autocast) chains fused with eager's bits, and
the CUDA kernels NVRTC builds (src/compile/codegen_device_source.cpp, src/cuda/nvrtc_codegen.cpp),
which run only where a GPU is present (their source is compiled without one by
tests/cpp/test_compile_device_source.cpp)."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.compiler import explain



def chain(x, y):  # ten elementwise ops, every one fusible, two results
    a = (x * y + 1.0).tanh().sigmoid() * 2.0 - x
    return F.gelu(a) / (y.abs() + 0.5), a.exp()


@pytest.fixture(autouse=True)
def _kernel_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ember-cache"))


# ---------------------------------------------------------------- CUDA kernels (NVRTC)
cuda_only = pytest.mark.skipif(not ember.cuda.is_available(), reason="no CUDA GPU on this machine: the fused CUDA "
                               "kernels (NVRTC) were compiled here without running (tests/cpp/test_compile_device_source)")


def _close(a, b, tol=1e-5):
    return (a.cpu().double() - b.cpu().double()).abs().max().item() <= tol * max(1.0, b.abs().max().item())


@cuda_only
def test_cuda_chain_runs_as_one_generated_kernel():
    x, y = ember.randn(300, 257, device="cuda"), ember.randn(300, 257, device="cuda")
    fast = ember.compile(chain)
    for _ in range(3):
        got, want = fast(x, y), chain(x, y)
        assert all(_close(g, w) for g, w in zip(got, want))
        assert got[0].device == x.device
    info = explain(fast, x, y)
    assert info.fused_kernels == 1 and "fused kernel 0:" in str(info), str(info)
    # a bias over the last dim, a number on the GPU, a Python number, another shape
    bias, s = ember.randn(257, device="cuda"), ember.tensor(0.25, device="cuda")
    f2 = ember.compile(lambda a, b, c: ((a * b + c).tanh() * s).relu() - a.sigmoid())
    for a in (x, ember.randn(5000, 257, device="cuda")):
        want = ((a * bias + 0.5).tanh() * s).relu() - a.sigmoid()
        assert _close(f2(a, bias, 0.5), want)
    # 16-bit values: computed in float, rounded where made (CUDA's eager rounding may differ in NaN payloads only)
    for dt in (ember.bfloat16, ember.float16):
        xb, yb = x.to(dt), y.to(dt)
        got, want = fast(xb, yb), chain(xb, yb)
        assert all(g.dtype == dt and _close(g, w, 1e-2) for g, w in zip(got, want))


@cuda_only
def test_cuda_generated_backward_matches_eager():
    def f(x, w, b):
        return F.gelu(x * w + b, approximate="tanh").tanh() * 2.0 - x.sigmoid()

    x0, w0, b0 = (ember.randn(*s, device="cuda") for s in [(128, 96), (128, 96), (96,)])
    grads = []
    for fn in (f, ember.compile(f)):
        x, w, b = (t.clone().requires_grad_() for t in (x0, w0, b0))
        for _ in range(2):
            x.grad = w.grad = b.grad = None
            out = fn(x, w, b)
            (out * out).sum().backward()
        grads.append([out.detach(), x.grad, w.grad, b.grad])
        if fn is not f:
            assert "FusedElementwiseBackward" in out.grad_fn.name()
    for got, want in zip(grads[1], grads[0]):
        assert _close(got, want, 1e-4)


@cuda_only
def test_cuda_kernels_come_from_the_disk_cache_in_a_new_process(tmp_path):
    script = textwrap.dedent("""
        import ember
        f = ember.compile(lambda x: (x * 2.0 + 1.0).tanh().exp())
        x = ember.randn(1000, device="cuda")
        assert (f(x) - (x * 2.0 + 1.0).tanh().exp()).abs().max().item() < 1e-5
        print("cached" if "from the disk cache" in str(ember.compiler.explain(f, x)) else "built")
    """)
    env = dict(os.environ, EMBER_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr + runs[1].stderr
    assert [r.stdout.strip() for r in runs] == ["built", "cached"]
    assert any(p.suffix == ".cubin" for p in (tmp_path / "kernels").iterdir())


@cuda_only
def test_cuda_dynamic_sizes_renumber_one_compilation():
    """dynamic=True on the GPU: the fitted graph's NVRTC kernels take their sizes as arguments, so
    one compilation is renumbered for every new length (compiled_template.h), with eager's values
    and gradients; an exported program does the same from its C++ fit."""
    w = ember.randn(32, 32, device="cuda", requires_grad=True)

    def fn(x):
        h = (x @ w + 1.0).tanh() * 2.0 - x
        return (h - h.amax(-1, keepdim=True)).exp().sum(-1)
    fast = ember.compile(fn, dynamic=True)
    for t in [5, 6, 7, 8, 9, 40, 3, 300, 11]:
        x = ember.randn(t, 32, device="cuda", requires_grad=True)
        got, want = fast(x), fn(x)
        assert _close(got, want, 1e-4), t
        gx, gw = ember.autograd.grad(got.sum(), [x, w])
        ex, ew = ember.autograd.grad(want.sum(), [x, w])
        assert _close(gx, ex, 1e-4) and _close(gw, ew, 1e-4), t
    (group,) = fast._ember_compiled.groups.values()
    (regime,) = group.regimes.values()
    assert (regime.renumbered, regime.specialised, regime.no_template) == (5, 0, None)
    from ember.export import Dim
    with ember.no_grad():
        ep = ember.export.export(lambda x: (x * 2.0 + 1.0).tanh().softmax(-1), (ember.randn(4, 16, device="cuda"),),
                                 dynamic_shapes=({1: Dim("n", max=4096)},))
        for n in (5, 17, 100, 1000, 4096):
            x = ember.randn(4, n, device="cuda")
            assert _close(ep(x), (x * 2.0 + 1.0).tanh().softmax(-1)), n
    renumbered, compiled, why = ep._program.specialisation_stats
    assert renumbered >= 3 and why == "", (renumbered, compiled, why)


@pytest.mark.parametrize("dt", [ember.bfloat16, ember.float16])
def test_half_chains_fuse_with_the_eager_bits(dt):
    # 16-bit values compute in float and round where they are made, as eager's kernels do, so
    # a fused bfloat16 or float16 chain (casts to and from float32 included) keeps eager's bits.
    def f(x, y):
        a = (x * y + 1.0).tanh()
        return F.gelu(a.to(ember.float32)) * 2.0, (a * 3.0).sigmoid()

    fast = ember.compile(f)
    for shape in [(64, 33), (1000,), (7, 3, 5)]:
        x, y = ember.randn(*shape, dtype=dt), ember.randn(*shape, dtype=dt)
        for _ in range(2):
            got, want = fast(x, y), f(x, y)
            assert [g.dtype for g in got] == [ember.float32, dt]
            assert all(ember.equal(g, w) for g, w in zip(got, want))
    info = explain(fast, x, y)
    assert info.fused_kernels == info.graph_count == 3  # one kernel per shape's graph
    assert "mul add tanh to_dtype gelu mul mul sigmoid" in str(info)

    def g(x, w, b):  # autocast: a 16-bit matmul, then float32 and 16-bit values mixed
        with ember.autocast("cpu", dtype=dt):
            h = x @ w
            return F.gelu(h + b, approximate="tanh") * 0.5 + h

    x, w, b = ember.randn(64, 128), ember.randn(128, 256), ember.randn(256)
    fast = ember.compile(g)
    for _ in range(2):
        assert ember.equal(fast(x, w, b), g(x, w, b))
    assert explain(fast, x, w, b).fused_kernels == 1


def test_every_float16_value_rounds_as_eager():
    # every finite float16 (subnormals, the largest values) through a chain whose results round
    # up to inf, down into the subnormals and to zero
    every = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    x = ember.from_numpy(every[np.isfinite(every)].copy())

    def f(x):
        return (x * 1.875).sigmoid() * x + x * 0.0078125, x * 65504.0

    fast = ember.compile(f)
    for _ in range(2):
        assert all(ember.equal(g.isnan(), w.isnan()) and ember.equal(g.nan_to_num(), w.nan_to_num())
                   for g, w in zip(fast(x), f(x)))
    assert explain(fast, x).fused_kernels == 1


@pytest.mark.parametrize("dt", [ember.bfloat16, ember.float16])
def test_half_chain_gradients_match_eager(dt):
    # the generated backward computes in float (eager's 16-bit backward rounds every step):
    # close, not equal
    def f(x, w):
        return (x * w + 0.5).tanh() * x.to(ember.float32).sigmoid().to(dt)

    x0, w0 = ember.randn(96, 80, dtype=dt), ember.randn(80, dtype=dt)
    grads = []
    for fn in (f, ember.compile(f)):
        x, w = x0.clone().requires_grad_(), w0.clone().requires_grad_()
        for _ in range(2):
            x.grad = w.grad = None
            fn(x, w).float().pow(2).sum().backward()
        grads.append((x.grad, w.grad))
    for got, want in zip(grads[1], grads[0]):
        assert got.dtype == dt
        assert (got.float() - want.float()).abs().max().item() <= 0.02 * max(1.0, want.float().abs().max().item())
