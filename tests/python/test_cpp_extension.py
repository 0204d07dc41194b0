"""ember.utils.cpp_extension (torch.utils.cpp_extension): C++ built against ember at run time and
loaded: EMBER_CUSTOM_OP ops become ember.ops.<ns>.<op>, a Python module (PyInit_<name>) is
imported, builds are reused until something they depend on changes, and errors carry the
compiler's message."""
import os

import pytest

import ember
from ember.utils import cpp_extension

_OP = r"""
EMBER_CUSTOM_OP(cppext, cube_plus, "(Tensor x, float c) -> Tensor") {
  op.kernel(ember::DeviceType::CPU, [](const std::vector<ember::Tensor>& in, const std::vector<double>& a) {
      return std::vector<ember::Tensor>{in[0] * in[0] * in[0] + a[0]};
    })
    .autograd([](const std::vector<ember::Tensor>& g, const std::vector<ember::Tensor>& in,
                 const std::vector<ember::Tensor>&, const std::vector<double>&) {
      return std::vector<ember::Tensor>{g[0] * 3.0 * in[0] * in[0]};
    });
}
"""

_MODULE = r"""
#include <Python.h>
#include "ember/ember.h"
#include "ember/library.h"
EMBER_CUSTOM_OP(cppextmod, twice, "(Tensor x) -> Tensor") {
  op.kernel(ember::DeviceType::CPU, [](const std::vector<ember::Tensor>& in, const std::vector<double>&) {
      return std::vector<ember::Tensor>{in[0] * 2.0};
    });
}
static PyObject* answer(PyObject*, PyObject*) { return PyLong_FromLong(42); }
static PyMethodDef methods[] = {{"answer", answer, METH_NOARGS, "42"}, {nullptr, nullptr, 0, nullptr}};
static PyModuleDef def = {PyModuleDef_HEAD_INIT, "cppextmod", "a test module", -1, methods};
PyMODINIT_FUNC PyInit_cppextmod() { return PyModule_Create(&def); }
"""


def test_load_inline_registers_ops_with_their_gradients_and_reuses_the_build(tmp_path):
    mod = cpp_extension.load_inline("cppext", _OP, build_directory=tmp_path)
    assert mod.__file__ == os.path.join(str(tmp_path), "cppext.so")
    x = ember.randn(5, dtype=ember.float64, requires_grad=True)
    y = ember.ops.cppext.cube_plus(x, 0.5)
    assert ember.allclose(y, x.detach() ** 3 + 0.5)
    y.sum().backward()
    assert ember.allclose(x.grad, 3 * x.detach() ** 2)
    built = os.stat(mod.__file__).st_mtime_ns
    cpp_extension.load_inline("cppext", _OP, build_directory=tmp_path)  # up to date: not rebuilt
    assert os.stat(mod.__file__).st_mtime_ns == built
    assert cpp_extension.include_paths()[0].endswith("include")
    assert os.path.exists(os.path.join(cpp_extension.library_paths()[0], "libember.so"))


def test_load_imports_a_python_module_and_registers_its_ops(tmp_path):
    src = tmp_path / "cppextmod.cpp"
    src.write_text(_MODULE)
    mod = cpp_extension.load("cppextmod", [src], build_directory=tmp_path / "build")
    assert mod.answer() == 42
    assert ember.equal(ember.ops.cppextmod.twice(ember.ones(3)), ember.full((3,), 2.0))
    assert cpp_extension.load("cppextmod", [src], build_directory=tmp_path / "build", is_python_module=False) is None


def test_errors_carry_the_compiler_message_and_name_what_is_unsupported(tmp_path):
    bad = tmp_path / "bad.cpp"
    bad.write_text("int broken = ;\n")
    with pytest.raises(RuntimeError, match=r"Error building extension 'badext':(.|\n)*broken"):
        cpp_extension.load("badext", [bad], build_directory=tmp_path)
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".so")]  # nothing half-written left
    with pytest.raises(NotImplementedError, match="pybind11"):
        cpp_extension.load_inline("fnext", "int f() { return 1; }", functions=["f"], build_directory=tmp_path)
    (tmp_path / "k.cu").write_text("")
    with pytest.raises(NotImplementedError, match="CUDA sources"):
        cpp_extension.load("cuext", [tmp_path / "k.cu"], build_directory=tmp_path)
    with pytest.raises(FileNotFoundError, match="no such source file"):
        cpp_extension.load("missing", [tmp_path / "missing.cpp"], build_directory=tmp_path)
    with pytest.raises(ValueError, match="Python identifier"):
        cpp_extension.load("not-a-name", [bad], build_directory=tmp_path)


_SETUP = """
from setuptools import setup
from ember.utils.cpp_extension import BuildExtension, CppExtension
setup(name="cppextmod", ext_modules=[CppExtension("cppextmod", ["cppextmod.cpp"], extra_compile_args={"cxx": ["-O1"]})],
      cmdclass={"build_ext": BuildExtension}, script_args=["-q", "build_ext", "--inplace"])
"""


def test_setup_py_builds_with_cpp_extension_and_build_extension(tmp_path):
    import subprocess
    import sys
    (tmp_path / "cppextmod.cpp").write_text(_MODULE)
    (tmp_path / "setup.py").write_text(_SETUP)
    # the child processes find this ember wherever it was imported from (PYTHONPATH may be relative)
    roots = {os.path.dirname(os.path.dirname(os.path.abspath(m.__file__))) for m in (ember, ember._C)}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sorted(roots)))
    done = subprocess.run([sys.executable, "setup.py"], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    check = ("import ember, cppextmod; assert cppextmod.answer() == 42; "
             "assert ember.equal(ember.ops.cppextmod.twice(ember.ones(2)), ember.full((2,), 2.0)); print('ok')")
    run = subprocess.run([sys.executable, "-c", check], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert run.stdout.strip() == "ok", run.stdout + run.stderr
