"""ember.library (torch.library): custom operators written in Python.

    @ember.library.custom_op("mylib::numpy_sin", mutates_args=())
    def numpy_sin(x: ember.Tensor) -> ember.Tensor:
        return ember.from_numpy(np.sin(x.numpy()))

    @numpy_sin.register_fake
    def _(x):
        return ember.empty_like(x)

    numpy_sin.register_autograd(backward, setup_context=setup_context)
    numpy_sin.register_kernel("cuda")(cuda_version)

    ember.ops.mylib.numpy_sin(x)        # the same op, by name

An op dispatches by the device of its tensor arguments (a kernel registered for that device type,
else the default one), differentiates through its registered backward (without one, a backward
through it is an error naming the op), shows in the profiler under its name, and inside
ember.compile becomes one node of the graph that is not traced into (its body runs as written,
neither traced into nor lost), so compiled functions replay it and its gradient. An op that writes
nothing, called with plain arguments (tensors, numbers, strings, dtypes, lists of them), is saved
in exported programs by name and arguments; loading such a program needs the op defined in the
loading process (import the module that defines it), and a C++ program without Python cannot.
"""
import functools
import inspect
import json

from . import _C
from .autograd.function import Function
from .profiler import record_function

_registry = {}  # "ns::name" -> CustomOpDef


def _is_tensor(x):
    return isinstance(x, _C.Tensor)


def _tensors_of(obj, out):
    """The tensors in obj (nested lists/tuples/dicts), in order; returns a spec to put new ones
    back in their places."""
    if _is_tensor(obj):
        out.append(obj)
        return ("T",)
    if isinstance(obj, (list, tuple)):
        return (type(obj), [_tensors_of(o, out) for o in obj])
    if isinstance(obj, dict):
        return (dict, [(k, _tensors_of(v, out)) for k, v in obj.items()])
    return ("V", obj)


def _rebuild(spec, tensors, pos):
    if spec[0] == "T":
        pos[0] += 1
        return tensors[pos[0] - 1]
    if spec[0] in (list, tuple):
        items = [_rebuild(s, tensors, pos) for s in spec[1]]
        return items if spec[0] is list else tuple(items)
    if spec[0] is dict:
        return {k: _rebuild(s, tensors, pos) for k, s in spec[1]}
    return spec[1]


def _call_to_json(spec):
    """A call's structure (_tensors_of's spec) with its other arguments as JSON, for a saved
    program; None when an argument is not plain data (numbers, strings, None, dtypes, lists,
    tuples, dicts with string keys)."""
    import ember

    def enc(s):
        if s[0] == "T":
            return ["T"]
        if s[0] in (list, tuple):
            return ["list" if s[0] is list else "tuple", [enc(x) for x in s[1]]]
        if s[0] is dict:
            if not all(isinstance(k, str) for k, _ in s[1]):
                raise TypeError
            return ["dict", [[k, enc(v)] for k, v in s[1]]]
        v = s[1]
        if v is None or isinstance(v, (bool, int, float, str)):
            return ["V", v]
        if isinstance(v, ember.dtype):
            return ["dtype", str(v).replace("ember.", "")]
        raise TypeError
    try:
        return json.dumps(enc(spec))
    except TypeError:
        return None


def _call_from_json(text):
    import ember

    def dec(j):
        kind = j[0]
        if kind == "T":
            return ("T",)
        if kind in ("list", "tuple"):
            return (list if kind == "list" else tuple, [dec(x) for x in j[1]])
        if kind == "dict":
            return (dict, [(k, dec(v)) for k, v in j[1]])
        if kind == "dtype":
            return ("V", getattr(ember, j[1]))
        return ("V", j[1])
    return dec(json.loads(text))


def _saved_runner(name):
    """How a loaded program re-runs a call of custom op `name` (registered with the op)."""
    def run(call, tensors):
        args, kwargs = _rebuild(_call_from_json(call), tensors, [0])
        out = []
        _tensors_of(_registry[name]._call_eager(*args, **kwargs), out)
        return out
    return run


def _run_opaque(name, run, args, kwargs, mutates, savable=False):
    """Runs `run(*args, **kwargs)` inside an ember.compile capture as one node the graph cannot
    see into: its own ops stay out of the graph (the Tracer layer is paused), and the graph gets a
    callable that re-runs it on the new tensors of a later call. `savable` (a custom op that writes
    nothing): the call's other arguments go into the node too, so exported programs can hold it."""
    in_tensors = []
    spec = _tensors_of((args, kwargs), in_tensors)
    with _C._compile.paused():
        result = run(*args, **kwargs)
    out_tensors = []
    out_spec = _tensors_of(result, out_tensors)

    def replay(tensors):
        a, k = _rebuild(spec, tensors, [0])
        out = []
        _tensors_of(run(*a, **k), out)
        return out
    call = _call_to_json(spec) if savable and not mutates else None
    _C._compile.record_opaque(name, in_tensors, out_tensors, replay, mutates, call)
    return _rebuild(out_spec, out_tensors, [0])


class CustomOpDef:
    """What custom_op returns: call it like the function it wraps."""

    def __init__(self, name, fn, mutates_args, device_types):
        ns, sep, op = name.partition("::")
        if not sep or not ns.isidentifier() or not op.isidentifier():
            raise ValueError(f"custom_op: expected a name 'namespace::op' of identifiers, got {name!r}")
        if name in _registry or name in _C._library.registered():
            raise RuntimeError(f"custom_op: an op named {name!r} is already registered")
        if isinstance(mutates_args, str) and mutates_args != "unknown":
            raise ValueError("custom_op: mutates_args must be 'unknown' or an iterable of argument names")
        self._name, self._ns, self._op = name, ns, op
        self._fn = fn
        self._signature = inspect.signature(fn)
        self._mutates = mutates_args == "unknown" or bool(tuple(mutates_args))
        params = set(self._signature.parameters)
        if mutates_args != "unknown":
            for a in mutates_args:
                if a not in params:
                    raise ValueError(f"custom_op {name}: mutates_args names {a!r}, which is not an argument")
        self._kernels = {}
        if device_types is not None:
            for d in ([device_types] if isinstance(device_types, str) else device_types):
                self._kernels[d] = fn
            self._default = None
        else:
            self._default = fn
        self._fake = None
        self._backward = None
        self._setup_context = None
        functools.update_wrapper(self, fn)
        _registry[name] = self
        _C._compile.register_saved_op(name, _saved_runner(name))

    def __repr__(self):
        return f"<CustomOpDef({self._name})>"

    # ---- registration (torch.library's names)
    def register_kernel(self, device_types, fn=None):
        """The kernel for tensors on these device types ("cpu", "cuda", ...); as a decorator too."""
        def register(f):
            for d in ([device_types] if isinstance(device_types, str) else device_types):
                self._kernels[d] = f
            return f
        return register(fn) if fn is not None else register

    def register_fake(self, fn):
        """The shape function: given the arguments, returns tensors of the outputs' shapes and
        dtypes (no data needed); infer_shape(*args) calls it."""
        self._fake = fn
        return fn

    def register_autograd(self, backward, *, setup_context=None):
        """backward(ctx, *grads) -> one gradient per argument (None where there is none);
        setup_context(ctx, inputs, output) saves what backward needs."""
        if not callable(backward):
            raise TypeError("register_autograd: backward must be callable")
        self._backward, self._setup_context = backward, setup_context

    def infer_shape(self, *args, **kwargs):
        if self._fake is None:
            raise RuntimeError(f"{self._name}: no fake (shape) function; use register_fake")
        return self._fake(*args, **kwargs)

    # ---- calling
    def _kernel_for(self, args, kwargs):
        tensors = []
        _tensors_of((args, kwargs), tensors)
        devices = {t.device.type for t in tensors}
        if len(devices) > 1:
            raise RuntimeError(f"{self._name}: expected all tensor arguments on one device, got {sorted(devices)}")
        device = devices.pop() if devices else "cpu"
        fn = self._kernels.get(device, self._default)
        if fn is None:
            raise NotImplementedError(f"{self._name}: no kernel registered for device type '{device}' "
                                      f"(registered: {sorted(self._kernels) or 'none'})")
        return fn

    def _call_eager(self, *args, **kwargs):
        kernel = self._kernel_for(args, kwargs)
        tensors = []
        _tensors_of((args, kwargs), tensors)
        wants_grad = _C.is_grad_enabled() and any(t.requires_grad for t in tensors)
        if not wants_grad:
            return kernel(*args, **kwargs)
        return _autograd_function(self).apply(kernel, args, kwargs)

    def __call__(self, *args, **kwargs):
        with record_function(self._name):
            if _C._compile.tracing():
                return _run_opaque(self._name, self._call_eager, args, kwargs, self._mutates, savable=True)
            return self._call_eager(*args, **kwargs)


def _autograd_function(op):
    """An autograd.Function running op's kernel forward and op's registered backward: apply(kernel,
    args, kwargs), with the positional arguments as the differentiable inputs."""
    cached = op.__dict__.get("_function")
    if cached is not None:
        return cached

    class _CustomOpFunction(Function):
        @staticmethod
        def forward(ctx, kernel, kwargs, *args):
            out = kernel(*args, **kwargs)  # (Function.apply runs forward without grad)
            ctx.num_args = len(args)
            if op._setup_context is not None:
                op._setup_context(ctx, args, out)
            return out

        @staticmethod
        def backward(ctx, *grads):
            if op._backward is None:
                raise RuntimeError(f"{op._name}: no autograd formula is registered (register_autograd), so "
                                   "it cannot be differentiated")
            g = op._backward(ctx, *grads)
            g = g if isinstance(g, tuple) else (g,)
            if len(g) != ctx.num_args:
                raise RuntimeError(f"{op._name}: backward returned {len(g)} gradients for {ctx.num_args} "
                                   "arguments")
            return (None, None, *g)

    _CustomOpFunction.__qualname__ = _CustomOpFunction.__name__ = op._name.replace("::", "_")

    class _Apply:
        @staticmethod
        def apply(kernel, args, kwargs):
            return _CustomOpFunction.apply(kernel, kwargs, *args)
    op._function = _Apply
    return _Apply


def custom_op(name, fn=None, /, *, mutates_args, device_types=None, schema=None):
    """torch.library.custom_op: registers fn as the op `name` ("namespace::op"); as a decorator
    too. mutates_args: the names of the arguments it writes (or "unknown")."""
    def wrap(f):
        return CustomOpDef(name, f, mutates_args, device_types)
    return wrap(fn) if fn is not None else wrap


def _cpp_op(name):
    """A C++ custom op as a Python function: tensors positionally, then numbers (its attrs)."""
    def call(*args):
        tensors = [a for a in args if _is_tensor(a)]
        attrs = [float(a) for a in args if not _is_tensor(a)]
        out = _C._library.call(name, tensors, attrs)
        return out[0] if len(out) == 1 else tuple(out)
    call.__name__ = name.split("::")[1]
    call.__doc__ = f"{name}{_C._library.schema(name)} (a C++ custom op)"
    return call


class _Namespace:
    def __init__(self, ns):
        self._ns = ns

    def __getattr__(self, op):
        name = f"{self._ns}::{op}"
        found = _registry.get(name)
        if found is not None:
            return found
        if name in _C._library.registered():  # a C++ custom op (ember/library.h)
            return _cpp_op(name)
        raise AttributeError(f"'_OpNamespace' '{self._ns}' object has no attribute '{op}'")


class _Ops:
    """ember.ops: custom ops by namespace (ember.ops.mylib.numpy_sin); load_library(path) loads a
    shared library whose EMBER_CUSTOM_OP definitions register C++ ops (torch.ops.load_library)."""

    loaded_libraries = set()

    def load_library(self, path):
        import ctypes
        import os
        path = os.path.abspath(os.fspath(path))
        if not os.path.exists(path):
            raise OSError(f"ember.ops.load_library: no such file: {path}")
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)  # its static initialisers register the ops
        self.loaded_libraries.add(path)

    def __getattr__(self, ns):
        if ns.startswith("__"):
            raise AttributeError(ns)
        return _Namespace(ns)


ops = _Ops()
