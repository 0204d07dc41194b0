"""ember.export (torch.export): a model's forward as a program that runs without Python.

    ep = ember.export.export(model, (example,))
    ember.export.save(ep, "model.ember")
    ep2 = ember.export.load("model.ember")
    out = ep2.module()(x)                     # or from C++: ember::exporting::load(path).run({x})

export() captures what the forward runs on the example (ember.compile's capture, src/compile/);
the parameters and buffers become the program's constants, so the file stands alone. The program
is specialised to the example's shapes and dtypes: calling it with others is an error saying what
was exported (dynamic shapes are not built yet). A forward that cannot be captured whole (it reads
values back into Python, calls a Python custom op, prints, ...) is an error naming the reason and
the source line. The file is a zip of a readable graph (program/graph.json) and the constants
(program/constants.safetensors); loading runs no code from it and checks every op, argument,
value and constant (docs/issue24-export.md).
"""
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


class Dim:
    """torch.export.Dim: names a dynamic dimension (ember supports a dynamic batch: dim 0)."""

    def __init__(self, name, *, min=None, max=None):
        self.__name__, self.min, self.max = name, min, max

    def __repr__(self):
        return f"Dim({self.__name__!r})"


def _dynamic_batch(dynamic_shapes, tensors):
    """True when dynamic_shapes marks dim 0 of the inputs dynamic (and nothing else); None: static."""
    if dynamic_shapes is None:
        return False
    specs = list(dynamic_shapes.values()) if isinstance(dynamic_shapes, dict) else list(dynamic_shapes)
    dims = set()
    for spec in specs:
        if spec is None:
            continue
        if not isinstance(spec, dict):
            raise NotImplementedError("ember.export: dynamic_shapes entries must be {dim: Dim(...)} dicts")
        dims |= set(spec)
    if dims - {0}:
        raise NotImplementedError(f"ember.export: only a dynamic batch (dim 0) is supported, not dims {sorted(dims - {0})}")
    return bool(dims)


def _check_rows_independent(mod, args, kwargs, ep, batch):
    """A dynamic batch runs in chunks of the exported one: check on a larger batch that the
    forward computes every row on its own (no batch statistics, nothing mixing rows)."""
    import ember
    n = 2 * batch + 1

    def grow(t):
        if not isinstance(t, _C.Tensor):
            return t
        if t.dtype.is_floating_point:
            return ember.randn(n, *t.shape[1:], dtype=t.dtype)
        hi = int(t.max().item()) + 1 if t.numel() else 1
        return ember.randint(0, max(hi, 1), (n, *t.shape[1:]), dtype=t.dtype)
    big = tuple(grow(a) for a in args)
    with ember.no_grad():
        want = mod(*big, **kwargs)
        got = ep(*big, **kwargs)
    wants, gots = [], []
    _flatten(want, wants)
    _flatten(got, gots)
    return all(g.shape == w.shape and ember.allclose(g, w, rtol=1e-4, atol=1e-5) for g, w in zip(gots, wants))


def export(mod, args, kwargs=None, *, dynamic_shapes=None, strict=False):
    """torch.export.export: capture mod(*args, **kwargs) into an ExportedProgram. dynamic_shapes:
    only dim 0 (a batch) may be dynamic, e.g. ({0: Dim("batch")},); the program then runs any
    batch size in chunks of the example's, which export checks is what the forward computes."""
    if not isinstance(args, tuple):
        raise TypeError(f"ember.export: args must be a tuple of example inputs, got {type(args).__name__}")
    kwargs = kwargs or {}
    tensors = []
    in_spec = _flatten((args, kwargs), tensors)
    dynamic = _dynamic_batch(dynamic_shapes, tensors)
    batch = tensors[0].shape[0] if dynamic and tensors and tensors[0].dim() > 0 else None
    if dynamic and (batch is None or any(t.dim() == 0 or t.shape[0] != batch for t in tensors)):
        raise ExportError("ember.export: a dynamic batch needs every tensor input to share its first dim")
    if _cc.capturing():
        raise ExportError("ember.export: cannot export inside ember.compile or another export")
    session = _cc.CaptureSession(tensors)
    result, outputs, out_spec, reason = _run_captured(session, mod, args, kwargs)
    if reason:
        session.close()
        raise ExportError(f"ember.export: the forward cannot be exported whole: {reason}")
    name = type(mod).__qualname__ if isinstance(mod, Module) else getattr(mod, "__qualname__", "function")
    meta = {"in_spec": json.dumps(_spec_to_json(in_spec)), "out_spec": json.dumps(_spec_to_json(out_spec)),
            "exported_from": name, "dynamic_batch": "1" if dynamic else "0"}
    if dynamic and any(t.dim() == 0 or t.shape[0] != batch for t in outputs):
        session.close()
        raise ExportError("ember.export: a dynamic batch needs every output to have the batch as its first dim")
    try:
        program = session.finish_program(outputs, meta)
    except ValueError as e:
        raise ExportError(str(e)) from None
    ep = ExportedProgram(program, in_spec, out_spec)
    try:
        program.save_to_bytes()  # everything in it must be savable: fail now, not at save()
    except ValueError as e:
        raise ExportError(str(e)) from None
    if dynamic and not _check_rows_independent(mod, args, kwargs, ep, batch):
        raise ExportError("ember.export: the forward does not compute each batch row on its own (batch statistics, "
                          "a reduction over the batch, randomness), so the batch cannot be dynamic")
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
