"""ember.library custom ops (python/ember/library.py): callable by name, device dispatch, autograd
through the registered formula (gradcheck), profiler events, and capture by ember.compile as one
opaque node (also autograd.Function, whose own backward must survive compilation)."""
import numpy as np
import pytest

import ember
from ember.library import custom_op


@custom_op("testlib::numpy_sin", mutates_args=())
def numpy_sin(x: ember.Tensor) -> ember.Tensor:
    return ember.from_numpy(np.sin(x.detach().numpy()))  # code ember cannot see into


@numpy_sin.register_fake
def _(x):
    return ember.empty_like(x)


def _setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])


def _backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return grad * x.cos()


numpy_sin.register_autograd(_backward, setup_context=_setup)


@custom_op("testlib::scale_add", mutates_args=())
def scale_add(x: ember.Tensor, y: ember.Tensor, alpha: float) -> ember.Tensor:
    return x + alpha * y


@custom_op("testlib::axpy", mutates_args=())
def axpy(x: ember.Tensor, y: ember.Tensor, alpha: float) -> ember.Tensor:
    return x + alpha * y


def _axpy_setup(ctx, inputs, output):
    ctx.alpha = inputs[2]


axpy.register_autograd(lambda ctx, g: (g, g * ctx.alpha, None), setup_context=_axpy_setup)


def test_call_by_name_shape_and_errors():
    x = ember.linspace(-2, 2, 7, dtype=ember.float64)
    assert ember.allclose(numpy_sin(x), x.sin())
    assert ember.ops.testlib.numpy_sin is numpy_sin
    assert ember.allclose(ember.ops.testlib.numpy_sin(x), x.sin())
    assert numpy_sin.infer_shape(x).shape == x.shape
    with pytest.raises(AttributeError):
        ember.ops.testlib.missing
    with pytest.raises(ValueError, match="namespace::op"):
        custom_op("no_namespace", lambda x: x, mutates_args=())
    with pytest.raises(RuntimeError, match="already registered"):
        custom_op("testlib::numpy_sin", lambda x: x, mutates_args=())
    with pytest.raises(ValueError, match="not an argument"):
        custom_op("testlib::bad", lambda x: x, mutates_args=("y",))


def test_autograd_through_the_registered_formula():
    x = ember.randn(5, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(numpy_sin, (x,))
    numpy_sin(x).sum().backward()
    assert ember.allclose(x.grad, x.detach().cos())
    y = ember.randn(3, requires_grad=True)
    out = scale_add(y, y, 2.0)
    with pytest.raises(RuntimeError, match="testlib::scale_add: no autograd formula"):
        out.sum().backward()


def test_device_dispatch():
    calls = []

    @custom_op("testlib::where_am_i", mutates_args=(), device_types="cpu")
    def where_am_i(x):
        calls.append("cpu")
        return x.clone()

    @where_am_i.register_kernel("cuda")
    def _(x):
        calls.append("cuda")
        return x.clone()
    where_am_i(ember.ones(2))
    assert calls == ["cpu"]
    if ember.cuda.is_available():
        where_am_i(ember.ones(2, device="cuda"))
        assert calls == ["cpu", "cuda"]

    @custom_op("testlib::gpu_only", mutates_args=(), device_types="cuda")
    def gpu_only(x):
        return x
    with pytest.raises(NotImplementedError, match="testlib::gpu_only: no kernel registered for device type 'cpu'"):
        gpu_only(ember.ones(2))


def test_profiler_shows_the_op():
    from ember.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        numpy_sin(ember.ones(3))
    assert any(e.name.endswith("testlib::numpy_sin") for e in prof.events())


def test_compile_records_custom_ops_and_functions_as_opaque_nodes():
    class Clip(ember.autograd.Function):  # a straight-through gradient: not what the ops would give
        @staticmethod
        def forward(ctx, x):
            return x.clamp(-1, 1)

        @staticmethod
        def backward(ctx, g):
            return g * 10

    def f(x, w):
        return Clip.apply(numpy_sin(x * w) * 3) + axpy(x, w, 0.5)
    fast = ember.compile(f, fullgraph=True)
    for _ in range(3):
        w = ember.randn(6, dtype=ember.float64)
        x1 = ember.randn(6, dtype=ember.float64, requires_grad=True)
        x2 = x1.detach().clone().requires_grad_()
        want = f(x1, w)
        got = fast(x2, w)
        assert ember.allclose(got, want)
        want.sum().backward()
        got.sum().backward()
        assert ember.allclose(x2.grad, x1.grad)  # the custom backward survived compilation
    c = fast._ember_compiled
    assert c.graph_runs == 2 and not c.breaks
    ops = next(e for e in c.cache.values() if e.graph is not None).graph.ops
    assert "testlib::numpy_sin" in ops and "testlib::axpy" in ops
    assert any(o.startswith("autograd.Function:") for o in ops)


_CPP_OP = r"""
#include "ember/ember.h"
#include "ember/library.h"
using namespace ember;
EMBER_CUSTOM_OP(testcpp, shifted_square, "(Tensor x, float shift) -> Tensor") {
  op.kernel(DeviceType::CPU, [](const std::vector<Tensor>& in, const std::vector<double>& a) {
      return std::vector<Tensor>{(in[0] + a[0]) * (in[0] + a[0])};
    })
      .autograd([](const std::vector<Tensor>& g, const std::vector<Tensor>& in, const std::vector<Tensor>&,
                   const std::vector<double>& a) { return std::vector<Tensor>{g[0] * 2.0 * (in[0] + a[0])}; });
}
"""


def test_a_cpp_custom_op_from_a_loaded_library(tmp_path):
    """A shared library with an EMBER_CUSTOM_OP, built here and loaded with ember.ops.load_library:
    the op is callable from Python, differentiates through its C++ formula and compiles."""
    import os
    import shutil
    import subprocess
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    lib = os.path.join(root, "build", "libember.so")
    cxx = shutil.which("c++") or shutil.which("g++")
    if not cxx or not os.path.exists(lib):
        pytest.skip("needs a C++ compiler and build/libember.so")
    src, so = tmp_path / "op.cpp", tmp_path / "libtestcpp.so"
    src.write_text(_CPP_OP)
    subprocess.run([cxx, "-std=c++20", "-O1", "-shared", "-fPIC", "-I", os.path.join(root, "include"), str(src),
                    "-o", str(so), "-L", os.path.dirname(lib), "-lember", "-Wl,-rpath," + os.path.dirname(lib)],
                   check=True, capture_output=True, timeout=300)
    ember.ops.load_library(so)
    op = ember.ops.testcpp.shifted_square
    assert "shift" in op.__doc__
    x = ember.randn(5, dtype=ember.float64, requires_grad=True)
    y = op(x, 1.5)
    assert ember.allclose(y, (x + 1.5) ** 2)
    y.sum().backward()
    assert ember.allclose(x.grad, 2 * (x.detach() + 1.5))
    fast = ember.compile(lambda t: op(t, 0.5) + 1, fullgraph=True)
    for _ in range(2):
        z = ember.randn(4)
        assert ember.allclose(fast(z), (z + 0.5) ** 2 + 1)
    with pytest.raises(OSError, match="no such file"):
        ember.ops.load_library(tmp_path / "missing.so")


def test_compile_never_merges_two_calls_of_opaque_python():
    """Two calls of one Python custom op on the same tensor with different Python arguments look
    alike to the graph (their arguments live in the replayed Python): they must stay two nodes."""
    fast = ember.compile(lambda x: axpy(x, x, 1.0) * axpy(x, x, 2.0), fullgraph=True)
    for _ in range(3):
        x = ember.randn(4)
        assert ember.allclose(fast(x), (x + x) * (x + 2 * x))
