"""ember.export (torch.export): a model's forward as a program that runs without Python.

    ep = ember.export.export(model, (example,))
    ember.export.save(ep, "model.ember")
    ep2 = ember.export.load("model.ember")
    out = ep2.module()(x)                     # or from C++: ember::exporting::load(path).run({x})

export() captures what the forward runs on the example (ember.compile's capture, src/compile/);
the parameters and buffers become the program's constants, so the file stands alone. The program
is specialised to the example's shapes and dtypes, except the dims dynamic_shapes names, which take
any size in their range; other shapes are an error saying what was exported. A forward that cannot be captured whole (it reads
values back into Python, calls a Python custom op, prints, ...) is an error naming the reason and
the source line. The file is a zip of a readable graph (program/graph.json) and the constants
(program/constants.safetensors); loading runs no code from it and checks every op, argument,
value and constant (docs/issue24-export.md).
"""
import contextlib
import json

from . import _C
from ._compile import _flatten, _run_captured, _unflatten
from .nn.modules.module import Module

_cc = _C._compile


class ExportError(RuntimeError):
    """The forward cannot be exported whole."""


class ExportedProgram:
    """torch.export.ExportedProgram: call .module() (or the program itself) with inputs shaped as
    the example."""

    def __init__(self, program, in_spec, out_spec):
        self._program, self._in_spec, self._out_spec = program, in_spec, out_spec

    def module(self):
        return _ProgramModule(self)

    def __call__(self, *args, **kwargs):
        tensors = []
        spec = _flatten((args, kwargs), tensors)
        if spec != self._in_spec:
            raise TypeError("exported program: the arguments do not have the exported structure (tensor positions, "
                            f"non-tensor values); exported with {_describe(self._in_spec)}, got {_describe(spec)}")
        return _unflatten(self._out_spec, self._program.run(tensors))

    @property
    def graph(self):
        return self._program.describe()

    def run_decompositions(self, decomp_table=None):
        """torch's ExportedProgram.run_decompositions: ember's programs are already made of ember's
        own ops (what its C++ loader runs), so the program is returned as it is."""
        return self

    @property
    def state_dict(self):
        """The module's parameters and buffers the program holds, by their names in the module."""
        names = json.loads(self._program.metadata.get("constant_names", "{}"))
        constants = self._program.constants()
        return {name: constants[int(v)] for v, name in names.items() if int(v) in constants}

    @property
    def range_constraints(self):
        """Each dynamic dim's name -> (min, max); max is inf where unbounded."""
        symbols = json.loads(self._program.graph_json()).get("symbols", [])
        return {d["name"]: (d["min"], float("inf") if d["max"] == -1 else d["max"]) for d in symbols}

    def __str__(self):
        return "ExportedProgram:\n" + self.graph


class _ProgramModule(Module):
    def __init__(self, ep):
        super().__init__()
        object.__setattr__(self, "_ep", ep)

    def forward(self, *args, **kwargs):
        return self._ep(*args, **kwargs)


def _describe(spec):
    return json.dumps(spec, default=str)[:200]


class _DimHint:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"Dim.{self.name}"


class Dim:
    """torch.export.Dim: names a dynamic dimension, optionally with its range (min, max). The same
    name in two places is one size. Dim.AUTO / Dim.DYNAMIC: a dynamic dim named for you;
    Dim.STATIC: static (as None)."""
    AUTO = _DimHint("AUTO")
    DYNAMIC = _DimHint("DYNAMIC")
    STATIC = _DimHint("STATIC")

    def __init__(self, name, *, min=None, max=None):
        self.__name__, self.min, self.max = name, min, max

    def __repr__(self):
        return f"Dim({self.__name__!r})"


def dims(*names, min=None, max=None):
    """torch.export.dims: several Dims with one range."""
    return tuple(Dim(n, min=min, max=max) for n in names)


@contextlib.contextmanager
def _module_state_kept(mod):
    """Export runs the forward several times with dynamic shapes: the module's buffers (BatchNorm's
    running statistics) and the random state are put back after each, so export changes nothing."""
    import ember
    rng = ember.get_rng_state()
    buffers = [(b, b.detach().clone()) for b in mod.buffers()] if isinstance(mod, Module) else []
    try:
        yield
    finally:
        with ember.no_grad():
            for b, saved in buffers:
                if b.shape == saved.shape:
                    b.copy_(saved)
        ember.set_rng_state(rng)


def export(mod, args, kwargs=None, *, dynamic_shapes=None, strict=False):
    """torch.export.export: capture mod(*args, **kwargs) into an ExportedProgram. dynamic_shapes
    (torch's forms, e.g. ({0: Dim("batch"), 1: Dim("seq")},) or {"x": {0: Dim("batch")}}) makes
    those sizes free within their ranges: export learns how the graph depends on them from
    captures at several sizes (ember/_dynamic_shapes.py)."""
    from . import _dynamic_shapes
    if not isinstance(args, tuple):
        raise TypeError(f"ember.export: args must be a tuple of example inputs, got {type(args).__name__}")
    kwargs = kwargs or {}
    tensors = []
    in_spec = _flatten((args, kwargs), tensors)
    if _cc.capturing():
        raise ExportError("ember.export: cannot export inside ember.compile or another export")
    dims = _dynamic_shapes.parse(dynamic_shapes, mod, args, kwargs, tensors, ExportError)
    name = type(mod).__qualname__ if isinstance(mod, Module) else getattr(mod, "__qualname__", "function")
    meta = {"in_spec": json.dumps(_spec_to_json(in_spec)), "exported_from": name}

    def with_out_spec(out_spec):
        return {**meta, "out_spec": json.dumps(_spec_to_json(out_spec))}
    if dims:
        program, out_spec = _dynamic_shapes.export_dynamic(mod, in_spec, tensors, dims, with_out_spec, ExportError,
                                                           lambda: _module_state_kept(mod))
    else:
        session = _cc.CaptureSession(tensors)
        result, outputs, out_spec, reason = _run_captured(session, mod, args, kwargs)
        if reason:
            session.close()
            raise ExportError(f"ember.export: the forward cannot be exported whole: {reason}")
        try:
            program = session.finish_program(outputs, with_out_spec(out_spec))
        except ValueError as e:
            raise ExportError(str(e)) from None
    if isinstance(mod, Module):  # the constants that are the module's own tensors, by name (ep.state_dict)
        by_impl = {}
        for name, t in list(mod.named_parameters()) + list(mod.named_buffers()):
            by_impl.setdefault(_cc.impl_id(t), name)
        names = {str(v): by_impl[_cc.impl_id(t)] for v, t in program.constants().items() if _cc.impl_id(t) in by_impl}
        program.set_metadata("constant_names", json.dumps(names))
    ep = ExportedProgram(program, in_spec, out_spec)
    try:
        program.save_to_bytes()  # everything in it must be savable: fail now, not at save()
    except ValueError as e:
        raise ExportError(str(e)) from None
    return ep


# specs (ember._compile's) as JSON: ("T", i) / (list|tuple, items) / ("dict", pairs) / ("V", type, value);
# a result object ("obj") is not supported in files (its class would have to be imported by name)
def _spec_to_json(spec):
    kind = spec[0]
    if kind == "T":
        return ["T", spec[1]]
    if kind in ("list", "tuple"):
        return [kind, [_spec_to_json(s) for s in spec[1]]]
    if kind == "dict":
        return ["dict", [[k, _spec_to_json(s)] for k, s in spec[1]]]
    if kind == "V":
        return ["V", spec[1], spec[2]]
    raise ExportError("ember.export: the forward returns an object (a model output class); return tensors, "
                      "tuples, lists or dicts of them")


def _spec_from_json(j):
    if not isinstance(j, list) or not j:
        raise ValueError("export: not a valid ember program: a bad argument spec")
    kind = j[0]
    if kind == "T":
        return ("T", int(j[1]))
    if kind in ("list", "tuple"):
        return (kind, tuple(_spec_from_json(s) for s in j[1]))
    if kind == "dict":
        return ("dict", tuple((k, _spec_from_json(s)) for k, s in j[1]))
    if kind == "V":
        if j[1] not in ("NoneType", "bool", "int", "float", "str"):
            raise ValueError(f"export: not a valid ember program: a value of type {j[1]!r}")
        return ("V", j[1], j[2])
    raise ValueError(f"export: not a valid ember program: spec kind {kind!r}")


def save(ep, f):
    """Writes the program to the path f (atomically)."""
    if not isinstance(ep, ExportedProgram):
        raise TypeError(f"ember.export.save: expected an ExportedProgram, got {type(ep).__name__}")
    ep._program.save(str(f))


def load(f, *, device=None):
    """Reads a program written by save (or by C++); runs no code from the file. device: run it
    there (e.g. "cuda") instead of where it was exported."""
    import ember
    program = _cc.load_program(str(f), None if device is None else ember.device(device))
    meta = program.metadata
    try:
        in_spec = _spec_from_json(json.loads(meta["in_spec"]))
        out_spec = _spec_from_json(json.loads(meta["out_spec"]))
    except (KeyError, json.JSONDecodeError, TypeError, IndexError) as e:
        raise ValueError(f"export: not a valid ember program: its input/output specs are missing or malformed ({e})")
    return ExportedProgram(program, in_spec, out_spec)
