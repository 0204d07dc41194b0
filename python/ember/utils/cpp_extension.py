"""torch.utils.cpp_extension for ember: build C++ sources against ember with the system compiler at
run time and load them into this process.

    ember.utils.cpp_extension.load(name="my_ops", sources=["my_ops.cpp"], is_python_module=False)
    y = ember.ops.mylib.scaled_tanh(x, 2.0)     # an op my_ops.cpp defined with EMBER_CUSTOM_OP

An ember extension registers ops with EMBER_CUSTOM_OP (ember/library.h): loading the library runs
its registrations, and the ops are then ember.ops.<namespace>.<name> from Python (with autograd,
devices, ember.compile and export) and ember::library::find from C++. A library that also
defines a Python module (PyInit_<name>, e.g. written against Python's C API) is imported and
returned, as torch's default is_python_module=True does; one that does not is returned as a
module object naming the library. PyTorch's pybind11 bindings (load_inline's `functions=`,
TORCH_EXTENSION_NAME) and CUDA sources are not supported: an error says so.

setup.py builds work as torch's do: CppExtension(name, sources) is a setuptools Extension that
compiles against ember and links libember, and BuildExtension (cmdclass={"build_ext": ...})
adds the C++20 flag ember's headers need:

    setup(name="my_ops", ext_modules=[CppExtension("my_ops", ["my_ops.cpp"])],
          cmdclass={"build_ext": BuildExtension})

Builds go to build_directory (default $EMBER_EXTENSIONS_DIR, else $EMBER_CACHE_DIR/extensions,
else ~/.cache/ember/extensions, one directory per name). A library is rebuilt only when its
sources, flags, compiler or ember's library change; it is written under a temporary name and
renamed, so a build interrupted or run by two processes never leaves a torn library.
"""
import ctypes
import hashlib
import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import sysconfig
import tempfile
import types

from setuptools.command.build_ext import build_ext

__all__ = ["load", "load_inline", "include_paths", "library_paths", "CppExtension", "BuildExtension"]


def _toolchain():
    from .._C import _compile
    return _compile.toolchain()


def include_paths(cuda=False):
    """The include directories an ember extension compiles with (ember's public headers, Python's)."""
    return [_toolchain()["include"], sysconfig.get_paths()["include"]]


def library_paths(cuda=False):
    """The directories of the libraries an ember extension links (libember's)."""
    return [os.path.dirname(_toolchain()["library"])]


def _build_root(build_directory, name):
    if build_directory:
        return os.fspath(build_directory)
    base = os.environ.get("EMBER_EXTENSIONS_DIR")
    if not base:
        cache = os.environ.get("EMBER_CACHE_DIR")
        base = os.path.join(cache, "extensions") if cache else os.path.join(os.path.expanduser("~"), ".cache", "ember",
                                                                              "extensions")
    return os.path.join(base, name)


def _check_name(name):
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"ember.utils.cpp_extension: the extension name must be a Python identifier, got {name!r}")


def _build(name, sources, extra_cflags, extra_ldflags, extra_include_paths, build_directory, verbose):
    tc = _toolchain()
    if not tc["library"]:
        raise RuntimeError("ember.utils.cpp_extension: cannot locate the loaded libember to link against")
    sources = [os.path.abspath(os.fspath(s)) for s in sources]
    if not sources:
        raise ValueError(f"ember.utils.cpp_extension.load: extension '{name}' has no sources")
    for s in sources:
        if not os.path.exists(s):
            raise FileNotFoundError(f"ember.utils.cpp_extension.load: no such source file: {s}")
        if s.endswith((".cu", ".cuh")):
            raise NotImplementedError(f"ember.utils.cpp_extension.load: CUDA sources ({os.path.basename(s)}) are not "
                                      "supported yet; build the .cu into a shared library with nvcc and load it with "
                                      "ember.ops.load_library")
    lib = tc["library"]
    cmd = ([tc["cxx"], "-std=c++20", "-O2", "-fPIC", "-shared", "-I", tc["include"], "-I",
            sysconfig.get_paths()["include"]]
           + [f"-I{os.fspath(p)}" for p in (extra_include_paths or [])] + list(extra_cflags or []) + sources
           + [lib, f"-Wl,-rpath,{os.path.dirname(lib)}"] + list(extra_ldflags or []))
    key = hashlib.sha256()
    for part in cmd:
        key.update(part.encode() + b"\0")
    for s in sources:
        with open(s, "rb") as f:
            key.update(f.read())
    st = os.stat(lib)
    key.update(f"{st.st_size}:{st.st_mtime_ns}".encode())
    digest = key.hexdigest()
    root = _build_root(build_directory, name)
    os.makedirs(root, exist_ok=True)
    target = os.path.join(root, f"{name}.so")
    stamp = target + ".key"
    if os.path.exists(target) and os.path.exists(stamp):
        with open(stamp) as f:
            if f.read().strip() == digest:
                if verbose:
                    print(f"ember.utils.cpp_extension: {name} is up to date ({target})")
                return target
    fd, tmp = tempfile.mkstemp(prefix=f".{name}-", suffix=".so", dir=root)
    os.close(fd)
    if verbose:
        print("ember.utils.cpp_extension: " + " ".join(cmd + ["-o", tmp]))
    try:
        done = subprocess.run(cmd + ["-o", tmp], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"Error building extension '{name}':\n{done.stdout}{done.stderr}")
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    with open(stamp + ".tmp", "w") as f:
        f.write(digest)
    os.replace(stamp + ".tmp", stamp)
    return target


def _load_built(name, path, is_python_module):
    from .. import ops
    ops.load_library(path)  # its op registrations run here
    if not is_python_module:
        return None
    if hasattr(ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL), f"PyInit_{name}"):  # (the loaded library's handle)
        spec = importlib.util.spec_from_file_location(name, path,
                                                      loader=importlib.machinery.ExtensionFileLoader(name, path))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[name] = module
        return module
    module = types.ModuleType(name, f"ember extension {name} ({path}): its EMBER_CUSTOM_OPs are registered and "
                                    "callable as ember.ops.<namespace>.<op>")
    module.__file__ = path
    return module


def load(name, sources, extra_cflags=None, extra_cuda_cflags=None, extra_ldflags=None, extra_include_paths=None,
         build_directory=None, verbose=False, with_cuda=None, is_python_module=True, is_standalone=False,
         keep_intermediates=True):
    """Builds `sources` (C++ files) into <build_directory>/<name>.so against ember, unless an
    up-to-date build is there, and loads it: returns its Python module (is_python_module, see the
    module's doc), or None (is_python_module=False: the library's ops are registered)."""
    _check_name(name)
    if is_standalone:
        raise NotImplementedError("ember.utils.cpp_extension.load: is_standalone=True (an executable) is not supported")
    path = _build(name, [sources] if isinstance(sources, (str, os.PathLike)) else sources, extra_cflags, extra_ldflags,
                  extra_include_paths, build_directory, verbose)
    return _load_built(name, path, is_python_module)


def load_inline(name, cpp_sources, cuda_sources=None, functions=None, extra_cflags=None, extra_cuda_cflags=None,
                extra_ldflags=None, extra_include_paths=None, build_directory=None, verbose=False, with_cuda=None,
                is_python_module=True, with_pytorch_error_handling=True, keep_intermediates=True):
    """load() of C++ source text: written to <build_directory>/main.cpp after ember's headers
    (ember/ember.h, ember/library.h; torch prepends torch/extension.h)."""
    _check_name(name)
    if functions:
        raise NotImplementedError("ember.utils.cpp_extension.load_inline: functions= generates pybind11 bindings, which "
                                  "ember does not use; define the functions as ops with EMBER_CUSTOM_OP (ember/library.h) "
                                  "and call them as ember.ops.<namespace>.<op>")
    if cuda_sources:
        raise NotImplementedError("ember.utils.cpp_extension.load_inline: CUDA sources are not supported yet")
    if isinstance(cpp_sources, str):
        cpp_sources = [cpp_sources]
    root = _build_root(build_directory, name)
    os.makedirs(root, exist_ok=True)
    text = '#include "ember/ember.h"\n#include "ember/library.h"\n\n' + "\n".join(cpp_sources) + "\n"
    src = os.path.join(root, "main.cpp")
    old = None
    if os.path.exists(src):
        with open(src) as f:
            old = f.read()
    if old != text:  # (an unchanged file keeps its contents, and the build its key)
        with open(src + ".tmp", "w") as f:
            f.write(text)
        os.replace(src + ".tmp", src)
    return load(name, [src], extra_cflags=extra_cflags, extra_ldflags=extra_ldflags,
                extra_include_paths=extra_include_paths, build_directory=root, verbose=verbose,
                is_python_module=is_python_module)


def CppExtension(name, sources, *args, **kwargs):
    """A setuptools.Extension for C++ sources built against ember (torch's CppExtension): ember's and
    Python's headers, libember linked with its directory as the run path, C++20."""
    from setuptools import Extension
    kwargs["include_dirs"] = list(kwargs.get("include_dirs", [])) + include_paths()
    lib_dirs = library_paths()
    kwargs["library_dirs"] = list(kwargs.get("library_dirs", [])) + lib_dirs
    kwargs["runtime_library_dirs"] = list(kwargs.get("runtime_library_dirs", [])) + lib_dirs
    kwargs["libraries"] = list(kwargs.get("libraries", [])) + ["ember"]
    kwargs["language"] = "c++"
    return Extension(name, sources, *args, **kwargs)


class BuildExtension(build_ext):
    """torch's BuildExtension: setuptools' build_ext with the C++20 flag ember's headers need (a
    torch-style {"cxx": [...]} extra_compile_args is read too)."""

    def build_extensions(self):
        for ext in self.extensions:
            args = ext.extra_compile_args
            if isinstance(args, dict):
                args = args.get("cxx", [])
            if not any(a.startswith("-std=") for a in args):
                args = list(args) + ["-std=c++20"]
            ext.extra_compile_args = args
        super().build_extensions()

    @classmethod
    def with_options(cls, **options):
        return cls
