"""Symbolic sizes for ember.compile (dynamic=True, torch._dynamo.mark_dynamic).

ember's tensors have concrete sizes, so a function is never traced with symbols. Instead every call
at a new shape is captured as before, and the captures of one function that differ only in their
sizes are compared: when they are the same graph node for node, every number that changed (a
value's size or stride, a view's shape, a slice's end, a Python int in the forward) is fitted with
an integer polynomial of the sizes that vary between calls (total degree <= 2: "seq", "768*seq",
"batch*seq", "12*seq^2"), from one capture more than the polynomials have coefficients, so the
last one checks the fit. From then on a call at new sizes is not captured: the fitted graph is
specialised to its sizes (ember/compile/symbolic.h, what ember.export's dynamic programs run) and
replayed. A function of one varying size is captured at four sizes; the fifth runs specialised.
The compilation is not redone per size: the fitted graph is compiled at the captured sizes once,
the compiled numbers that differ are fitted the same way, and each new size renumbers that one
compilation (Regime.specialise, ember/compile/compiled_template.h).

What could make the fitted graph wrong at sizes it was not captured at is guarded:
- Python that reads a size and decides something from it. During a dynamic capture Tensor.shape,
  size(), stride(), numel() return `SymSize`s: ints that record every comparison made with them
  (`if seq > 512`, min, max, ==) and stay SymSizes through +, -, * and **. A call's sizes must give
  every recorded comparison its captured result. A size turned into anything else -- a float,
  a string, a hash, int(), //, %, len(tensor) -- is pinned: it must keep its captured value, so a
  graph built from `seq // 2` or `1 / seq` is never fitted over seq (each size is captured).
- C++ composites whose recorded ops depend on a size beyond arithmetic note that size, which is
  then pinned the same way: split(k), chunk and unbind record one node per piece; a slice bound
  cut back to the size (x[:, :512] of a shorter x) and a non-square diagonal make a result's size
  piecewise in it.
- Sizes 0 and 1 (broadcasting, squeezing) are never fitted: those calls are captured.
Python int arguments are symbols too (they are passed to the function as SymSizes while it is
captured). Not seen: a size used as a list index (`table[t]`) and loops over range(t) that run no
tensor op; Python offers no hook there.
Slices and indices are recorded as written (`x[:, :512]` keeps 512; negative indices stay
negative), so the replay clamps and wraps them for the new size as eager would.
Fitted sizes that do not hold at a call (bind's checks) send it to capture; sizes that cannot be
fitted at all run eagerly past cache_size_limit captures (_compile._Compiled.__call__).
"""
import hashlib
import itertools
import json
import os
import threading
from fractions import Fraction

from . import _C
from ._dynamic_shapes import differing_constant, invert

_local = threading.local()  # .events: the open dynamic capture's size events on this thread

MAX_SYMBOLS = 3       # sizes varying independently between calls (batch, seq, ...)
MAX_OBSERVATIONS = 24  # captures kept per group of signatures
_COMPARE = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, "==": lambda a, b: a == b,
            "!=": lambda a, b: a != b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}
_plain = int.__int__  # a SymSize's value as a plain int, recording nothing


def _note(op, operands, result=None):
    events = getattr(_local, "events", None)
    if events is not None:
        events.append((op, operands, result))


def _pin(*values):
    for v in values:
        if isinstance(v, SymSize):
            _note("pin", (_plain(v),))


class SymSize(int):
    """A size read while a dynamic capture is open (see the module's docstring)."""
    __slots__ = ()

    def _arith(self, other, op):
        if isinstance(other, int):
            return SymSize(op(_plain(self), _plain(other)))
        if isinstance(other, (float, complex)):
            _pin(self)
            return op(_plain(self), other)
        return NotImplemented  # a tensor: its reflected operator takes the size as a number

    def __add__(self, o): return self._arith(o, lambda a, b: a + b)
    def __radd__(self, o): return self._arith(o, lambda a, b: b + a)
    def __sub__(self, o): return self._arith(o, lambda a, b: a - b)
    def __rsub__(self, o): return self._arith(o, lambda a, b: b - a)
    def __mul__(self, o): return self._arith(o, lambda a, b: a * b)
    def __rmul__(self, o): return self._arith(o, lambda a, b: b * a)
    def __neg__(self): return SymSize(-_plain(self))
    def __pos__(self): return self
    def __abs__(self): return SymSize(abs(_plain(self)))

    def __pow__(self, o, mod=None):
        if mod is None and isinstance(o, int) and not isinstance(o, SymSize) and 0 <= o <= 4:
            return SymSize(_plain(self) ** o)
        return self._pinned(lambda a, b: pow(a, b, mod) if mod is not None else a ** b, o)

    def _pinned(self, op, other):
        """An operation whose result is no polynomial of the size: pin both sides."""
        _pin(self, other)
        return op(_plain(self), _plain(other) if isinstance(other, SymSize) else other)

    def __floordiv__(self, o): return self._pinned(lambda a, b: a // b, o)
    def __rfloordiv__(self, o): return self._pinned(lambda a, b: b // a, o)
    def __truediv__(self, o): return self._pinned(lambda a, b: a / b, o)
    def __rtruediv__(self, o): return self._pinned(lambda a, b: b / a, o)
    def __mod__(self, o): return self._pinned(lambda a, b: a % b, o)
    def __rmod__(self, o): return self._pinned(lambda a, b: b % a, o)
    def __divmod__(self, o): return self._pinned(divmod, o)
    def __rpow__(self, o): return self._pinned(lambda a, b: b ** a, o)
    def __and__(self, o): return self._pinned(lambda a, b: a & b, o)
    def __or__(self, o): return self._pinned(lambda a, b: a | b, o)
    def __xor__(self, o): return self._pinned(lambda a, b: a ^ b, o)
    def __lshift__(self, o): return self._pinned(lambda a, b: a << b, o)
    def __rshift__(self, o): return self._pinned(lambda a, b: a >> b, o)

    def _compare(self, other, op):
        if not isinstance(other, (int, float)):
            return NotImplemented
        a = _plain(self)
        b = _plain(other) if isinstance(other, SymSize) else other
        result = _COMPARE[op](a, b)
        _note(op, (a, b), result)
        return result

    def __lt__(self, o): return self._compare(o, "<")
    def __le__(self, o): return self._compare(o, "<=")
    def __eq__(self, o): return self._compare(o, "==")
    def __ne__(self, o): return self._compare(o, "!=")
    def __gt__(self, o): return self._compare(o, ">")
    def __ge__(self, o): return self._compare(o, ">=")

    def __bool__(self):
        result = _plain(self) != 0
        _note("!=", (_plain(self), 0), result)
        return result

    def _pinned_value(self):
        _pin(self)
        return _plain(self)

    def __hash__(self): return hash(self._pinned_value())
    def __int__(self): return self._pinned_value()
    def __index__(self): return self._pinned_value()
    def __float__(self): return float(self._pinned_value())
    def __complex__(self): return complex(self._pinned_value())
    def __round__(self, n=None): return round(self._pinned_value(), n) if n is not None else self._pinned_value()
    def __trunc__(self): return self._pinned_value()
    def __floor__(self): return self._pinned_value()
    def __ceil__(self): return self._pinned_value()
    def __str__(self): return str(self._pinned_value())
    def __repr__(self): return repr(self._pinned_value())
    def __format__(self, spec): return format(self._pinned_value(), spec)
    def __reduce__(self): return (int, (self._pinned_value(),))


# ---- the Tensor accessors that hand sizes to Python, swapped while a dynamic capture is open -----
_patch_lock = threading.Lock()
_patch_depth = [0]
_originals = {}


def _tracking():
    return getattr(_local, "events", None) is not None


def _sym_tuple(values):
    from ._size import Size
    return Size(SymSize(v) for v in values)


def _make_accessors():
    o = _originals

    def shape(self):
        s = o["shape"].__get__(self)
        return _sym_tuple(s) if _tracking() else s

    def size(self, dim=None):
        s = o["size"](self, dim)
        if not _tracking():
            return s
        return SymSize(s) if dim is not None else _sym_tuple(s)

    def stride(self, dim=None):
        s = o["stride"](self, dim)
        if not _tracking():
            return s
        return SymSize(s) if dim is not None else _sym_tuple(s)

    def numel(self):
        n = o["numel"](self)
        return SymSize(n) if _tracking() else n

    def length(self):
        n = o["__len__"](self)
        if _tracking():
            _note("pin", (n,))  # len() must return a plain int: the size is fixed for the graph
        return n
    return {"shape": property(shape), "size": size, "stride": stride, "numel": numel, "nelement": numel,
            "__len__": length}


class tracking:
    """Records the size events of a capture on this thread: `with tracking() as events:`."""

    def __enter__(self):
        T = _C.Tensor
        with _patch_lock:
            if _patch_depth[0] == 0:
                if not _originals:
                    for name in ("shape", "size", "stride", "numel", "nelement", "__len__"):
                        _originals[name] = T.__dict__[name]
                for name, f in _make_accessors().items():
                    setattr(T, name, f)
            _patch_depth[0] += 1
        self.events = []
        _local.events = self.events
        return self.events

    def __exit__(self, *exc):
        _local.events = None
        T = _C.Tensor
        with _patch_lock:
            _patch_depth[0] -= 1
            if _patch_depth[0] == 0:
                for name, f in _originals.items():
                    setattr(T, name, f)
        return False


# ---- Python int arguments: symbols too ------------------------------------------------------
def erase_ints(spec, ints):
    """The call's spec (_compile._flatten_call's) with the value of each int argument -- given
    directly, by keyword, or in a plain list or tuple -- taken out into `ints`: calls that differ
    only in those share a group, and the ints are fitted like sizes."""
    def walk(s):
        if s[0] == "V" and s[1] == "int":
            ints.append(s[2])
            return ("V", "int", None)
        if s[0] in ("list", "tuple"):
            return (s[0], tuple(walk(x) for x in s[1]))
        return s
    if spec[0] != "tuple" or len(spec[1]) != 2 or spec[1][1][0] != "dict":
        return spec
    args, kwargs = spec[1]
    return ("tuple", (walk(args), ("dict", tuple((k, walk(v)) for k, v in kwargs[1]))))


def with_sym_ints(args, kwargs):
    """The arguments with the ints erase_ints takes out as SymSizes, so that what the function
    does with them is recorded as with sizes."""
    def walk(obj):
        if type(obj) is int:
            return SymSize(obj)
        if type(obj) in (list, tuple):
            return type(obj)(walk(o) for o in obj)
        return obj
    return walk(tuple(args)), {k: walk(v) for k, v in kwargs.items()}


# ---- fitting --------------------------------------------------------------------------------
def _monomials(k):
    """Exponent tuples of total degree <= 2 over k sizes."""
    return [e for e in itertools.product(range(3), repeat=k) if sum(e) <= 2]


def _mono(point, e):
    v = 1
    for x, p in zip(point, e):
        v *= x ** p
    return v


class _Fitter:
    """Integer polynomials (total degree <= 2) through the values seen at `points` (one tuple of
    sizes per capture), determined by as many captures as coefficients and checked by the rest;
    None from fit() when no such polynomial goes through all of them."""

    def __init__(self, points):
        self.points = points
        self.monos = _monomials(len(points[0]))
        rows = [[Fraction(_mono(p, e)) for e in self.monos] for p in points]
        chosen, echelon = [], []
        for i, row in enumerate(rows):  # the first captures that determine every coefficient
            v = list(row)
            for piv, r in echelon:
                if v[piv]:
                    f = v[piv] / r[piv]
                    v = [a - f * b for a, b in zip(v, r)]
            piv = next((j for j, x in enumerate(v) if x), None)
            if piv is not None:
                echelon.append((piv, v))
                chosen.append(i)
            if len(chosen) == len(self.monos):
                break
        self.ready = len(chosen) == len(self.monos) and len(points) > len(self.monos)
        if self.ready:
            self.chosen = chosen
            self.inverse = invert([rows[i] for i in chosen])
        self._memo = {}

    def fit(self, values):
        values = tuple(values)
        if values in self._memo:
            return self._memo[values]
        coefs = {}
        for e, inv_row in zip(self.monos, self.inverse):
            c = sum((w * Fraction(values[i]) for w, i in zip(inv_row, self.chosen)), Fraction(0))
            if c.denominator != 1:
                coefs = None
                break
            if c:
                coefs[e] = int(c)
        if coefs is not None and any(evaluate(coefs, p) != v for p, v in zip(self.points, values)):
            coefs = None
        self._memo[values] = coefs
        return coefs


def evaluate(coefs, dims):
    return sum(c * _mono(dims, e) for e, c in coefs.items())


# ---- observations, regimes ---------------------------------------------------------------------
class Observation:
    """One capture of a dynamic function: its sizes, its raw graph's numbers, its size events."""

    def __init__(self, tensors, ints, events, structure_sizes, program, out_spec, externals):
        self.shapes = [tuple(t.shape) for t in tensors]
        self.ints = tuple(ints)  # the call's Python int arguments, in order
        self.program, self.out_spec, self.externals = program, out_spec, externals
        # the raw graph's numbers (sizes, strides, arguments, Python numbers such as x * seq) and
        # the rest of it (symbolic.h: graph_numbers); captures with one key have the same places in
        # the same order, so fit compares the values position by position
        skeleton, self.places, self.values, self.inputs, constants = program.numbers()
        self.constant_values = set(constants)
        self._leaves = None
        events = list(events) + [("pin", (s,), None) for s in structure_sizes]
        for i, (op, operands, _) in enumerate(events):
            for j, x in enumerate(operands):
                self.places.append(("guard", i, j, -1))
                self.values.append(x)
        self.events = [(op, result) for op, _, result in events]
        # the structure: captures with equal keys are the same graph up to their numbers
        self.key = hashlib.sha256(skeleton + (repr(out_spec) + repr(self.events)).encode()).hexdigest()

    @property
    def leaves(self):
        """{place: number}"""
        if self._leaves is None:
            self._leaves = dict(zip(self.places, self.values))
        return self._leaves


def _expression(number):
    """Python source for a bind number (coefficients or None, the fixed value) of the dims `d`."""
    coefs, fixed = number
    if coefs is None:
        return repr(fixed)
    terms = ["*".join([str(c)] + [f"d[{j}]" + (f"**{p}" if p > 1 else "") for j, p in enumerate(e) if p])
             for e, c in coefs.items()]
    return "(" + (" + ".join(terms) or "0") + ")"


def _size_at(tensors, ints, position):
    """_value_at read from the tensors themselves (one size, not every shape)."""
    return ints[position[1]] if position[0] == "int" else tensors[position[0]].size(position[1])


def _value_at(shapes, ints, position):
    """A position's number: ("int", k) is the k-th int argument, (i, d) tensor i's size at dim d."""
    return ints[position[1]] if position[0] == "int" else shapes[position[0]][position[1]]


class Regime:
    """A fitted graph: which input dims (and int arguments) are which symbol, the polynomials,
    the guards."""

    def __init__(self, base, symbols, fitted, program, points):
        self.base, self.symbols, self.fitted, self.program = base, symbols, fitted, program
        self.points = points  # the symbols' sizes at each capture fitted over (the base's last)
        self.templates = {}  # fuse -> CompiledTemplate, or False where the compilations differ
        self.no_template = None  # why there is none
        self.renumbered = self.specialised = 0  # calls run from the template, from a new compilation
        self.inputs = base.inputs
        moving = {p[1] for ps in symbols for p in ps if p[0] == "int"}
        self.static_ints = [k for k in range(len(base.ints)) if k not in moving]
        # what bind checks, worked out once: inputs whose sizes and strides the fit leaves alone
        # compare whole (a model's parameters), the others dim by dim; the comparisons' operands
        number = lambda place: (fitted.get(place), base.leaves[place])  # noqa: E731
        self.fixed_inputs, self.moving_inputs = [], []
        for i, v in enumerate(self.inputs):
            rank = len(base.shapes[i])
            sizes = [number(("size", v, d, -1)) for d in range(rank)]
            strides = [number(("stride", v, d, -1)) for d in range(rank)]
            if all(c is None for c, _ in sizes + strides):
                self.fixed_inputs.append((i, tuple(x for _, x in sizes), tuple(x for _, x in strides)))
            else:
                self.moving_inputs.append((i, sizes, strides))
        self._fixed_columns = tuple(list(c) for c in zip(*self.fixed_inputs))  # (indices, sizes, strides)
        self.guards = [(_COMPARE[op], result, number(("guard", k, 0, -1)), number(("guard", k, 1, -1)))
                       for k, (op, result) in enumerate(base.events) if op != "pin"]  # (pins are fixed)
        # ... and, for a call's dims d, the moving inputs' sizes and strides and whether every
        # guard holds, as one generated function each (bind runs on every new size)
        self._moving_which = [i for i, _, _ in self.moving_inputs]
        layouts = ", ".join(f"[{', '.join(_expression(x) for x in xs)}]" for _, xs, _ in self.moving_inputs)
        strides = ", ".join(f"[{', '.join(_expression(x) for x in xs)}]" for _, _, xs in self.moving_inputs)
        self._moving_layouts = eval(f"lambda d: ([{layouts}], [{strides}])")  # noqa: S307 (numbers only)
        held = " and ".join(f"(({_expression(a)} {op} {_expression(b)}) == {result!r})"
                            for (op, result), (_, _, a, b) in zip([e for e in base.events if e[0] != "pin"], self.guards))
        self._guards_hold = eval(f"lambda d: {held or 'True'}")  # noqa: S307

    def bind(self, tensors, ints):
        """The symbols' sizes in this call, or None when this graph does not hold for it."""
        if len(ints) != len(self.base.ints):
            return None
        dims = []
        for positions in self.symbols:
            n = _size_at(tensors, ints, positions[0])
            if n < 2 or any(_size_at(tensors, ints, p) != n for p in positions[1:]):
                return None
            dims.append(n)
        for k in self.static_ints:
            if ints[k] != self.base.ints[k]:
                return None
        if self.fixed_inputs and not _C._compile.layouts_match(tensors, *self._fixed_columns):
            return None
        if self.moving_inputs:  # sizes and strides as the graph has them at these dims
            try:
                if not _C._compile.layouts_match(tensors, self._moving_which, *self._moving_layouts(dims)):
                    return None
            except (TypeError, OverflowError):  # a size past int64 at these dims: not this graph
                return None
        return dims if self._guards_hold(dims) else None

    def specialise(self, dims, fuse):
        """The compiled graph at these sizes (bind's): the template renumbered where one holds,
        else the fitted graph specialised and compiled anew."""
        template = self.templates.get(fuse)
        if template is None and os.environ.get("EMBER_COMPILE_TEMPLATES", "1") == "0":  # (to compare)
            template = self.templates[fuse] = False
            self.no_template = "EMBER_COMPILE_TEMPLATES=0"
        if template is None:
            why = []
            template = self.templates[fuse] = _template(self, fuse, why) or False
            self.no_template = why[0] if why else None
        renumbered = template.at(dims) if template else None  # (None: a size the template had >= 2 is 0 or 1 here)
        if renumbered is not None:
            self.renumbered += 1
            return renumbered
        self.specialised += 1
        return self.program.specialise(dims, fuse)


def _template(regime, fuse, why):
    """A CompiledTemplate (ember/compile/compiled_template.h) from the fitted graph compiled at the
    sizes of the captures it was fitted over, or None with the reason appended to `why`:
    compilations that differ beyond their numbers (fusion, the buffer plan or a pass decided
    something from a size), or a number no polynomial fits. The compiled graph's numbers are
    fitted as the captured graph's were."""
    try:
        compiled = [regime.program.specialise(list(p), fuse) for p in regime.points]
    except Exception as e:  # (a size the fitted graph cannot take: its calls compile per size, and fail there)
        why.append(f"compiling at the captured sizes failed: {e}")
        return None
    if len({c.structure_key() for c in compiled}) != 1:
        why.append("its kernels, buffer plan or graph differ between the captured sizes")
        return None
    fitter = _Fitter(regime.points)
    sites = {}
    for place, values in _C._compile.differing_numbers(compiled):
        if any(isinstance(v, float) and not v.is_integer() for v in values):
            why.append(f"a compiled number is not an integer polynomial of the sizes ({place})")
            return None
        coefs = fitter.fit([int(v) for v in values])
        if coefs is None:
            why.append(f"a compiled number fits no integer polynomial of the sizes ({place})")
            return None
        sites[place] = coefs
    try:  # (C++ checks the sites, and that every kernel's sizes can be read back from its values)
        return _C._compile.CompiledTemplate(compiled[-1], json.dumps(_symbolic_json(regime.points[-1], sites)))
    except Exception as e:
        why.append(str(e))
        return None


def _symbolic_json(example, sites):
    """export's "symbols" and "symbolic" members: symbols s0, s1, ... (sizes from 2 up) at these
    example sizes, and each site {place: coefficients} of the graph as a polynomial of them."""
    return {
        "symbols": [{"name": f"s{j}", "min": 2, "max": -1, "example": x} for j, x in enumerate(example)],
        "symbolic": [{"at": p[0], "item": p[1], "index": p[2], "element": p[3],
                      "poly": [[c, *e] for e, c in coefs.items()]} for p, coefs in sites.items()],
    }


def fit(observations, error_out):
    """A Regime over `observations` (captures of one structure), or None: not enough captures yet,
    or (with a reason appended to error_out) sizes that no polynomial fits."""
    last = observations[-1]
    positions = [(i, d) for i, s in enumerate(last.shapes) for d in range(len(s))]
    positions += [("int", k) for k in range(len(last.ints))]

    def varying_over(obs):
        varying = {}
        for p in positions:
            values = tuple(_value_at(o.shapes, o.ints, p) for o in obs)
            if len(set(values)) > 1:
                varying.setdefault(values, []).append(p)
        return varying
    # sizes 0 and 1 are not fitted (broadcasting, squeezing; an int argument alike): captures with
    # one where sizes vary stay captures of their own
    moving = {p for ps in varying_over(observations).values() for p in ps}
    usable = [o for o in observations if all(_value_at(o.shapes, o.ints, p) >= 2 for p in moving)]
    if len(usable) < 2:
        return None
    base = usable[-1]
    varying = varying_over(usable)
    if not varying:
        return None
    if len(varying) > MAX_SYMBOLS:
        error_out.append(f"{len(varying)} sizes vary independently (at most {MAX_SYMBOLS} are fitted)")
        return None
    # (a symbol named by a tensor dim first: that is where the graph sees it)
    symbols = [sorted(ps, key=lambda p: p[0] == "int") for ps in varying.values()]
    points = [tuple(_value_at(o.shapes, o.ints, pos[0]) for pos in symbols) for o in usable]
    fitter = _Fitter(points)
    if not fitter.ready:
        return None
    fitted = {}
    pinned = {("guard", i, 0, -1) for i, (op, _) in enumerate(base.events) if op == "pin"}
    varied = []
    for k, values in enumerate(zip(*(o.values for o in usable))):
        if values.count(values[-1]) != len(values):
            varied.append((base.places[k], values))
    if any(place in pinned for place, _ in varied):  # a pinned number must not vary (the clearest reason first)
        error_out.append("a size that varies was read as a plain number (len(), int(), //, a float, a string) or "
                         "shaped the graph (split, chunk, unbind, a clamped slice)")
        return None
    for place, values in varied:
        if place[0] in ("size", "stride") and place[1] in base.constant_values:
            continue
        if any(v is None or isinstance(v, bool) or (isinstance(v, float) and not v.is_integer()) for v in values):
            error_out.append(f"a number changes with the sizes in a way no polynomial fits ({place})")
            return None
        coefs = fitter.fit(values)
        if coefs is None:
            error_out.append(f"a number changes with the sizes in a way no integer polynomial fits ({place}: "
                             f"{values[:4]} at {points[:4]})")
            return None
        fitted[place] = coefs
    if not _same_constants(usable, base, error_out):
        return None
    symbolic = _symbolic_json(points[-1], {p: c for p, c in fitted.items() if p[0] != "guard"})
    try:
        program = base.program.with_symbolic(json.dumps(symbolic), caller_binds=True)
    except ValueError as e:
        error_out.append(f"the fitted sizes do not hold: {e}")
        return None
    return Regime(base, symbols, fitted, program, points)


def _same_constants(observations, base, error_out):
    for o in observations:
        found = None if o is base else differing_constant(base, o)
        if found is not None:
            error_out.append(f"constant %{found[0]} was made from Python data that depends on a size")
            return False
    return True


class Group:
    """The captures of one function whose signatures differ only in sizes, and the graphs fitted
    over them."""

    def __init__(self):
        self.captures = 0
        self.observations = []
        self.regimes = {}  # structure key -> Regime
        self.failed = {}   # structure key -> why it cannot be fitted

    def describe(self):
        """A line per fitted graph (its symbols and polynomials' count) and per structure that could
        not be fitted (why), for explain()."""
        lines = []
        for regime in self.regimes.values():
            where = ", ".join(f"s{j} = " + (f"int argument {p[0][1]}" if p[0][0] == "int" else
                                            f"input {p[0][0]} dim {p[0][1]}") for j, p in enumerate(regime.symbols))
            guards = sum(op != "pin" for op, _ in regime.base.events)
            lines.append(f"fitted: {where}; {len(regime.fitted)} numbers follow them, {guards} comparisons guarded")
            if regime.renumbered or regime.specialised:
                lines.append(f"  new sizes: {regime.renumbered} renumbered the compiled graph, "
                             f"{regime.specialised} compiled it anew" +
                             (f" ({regime.no_template})" if regime.no_template else ""))
        lines += [f"not fitted: {why}" for why in self.failed.values()]
        return lines

    def specialise(self, tensors, ints, fuse):
        """(the compiled graph for these tensors' sizes and int arguments, the regime) from a
        fitted graph, or None."""
        for regime in self.regimes.values():
            dims = regime.bind(tensors, ints)
            if dims is not None:
                return regime.specialise(dims, fuse), regime
        return None

    def observe(self, observation):
        """Adds a capture; returns a note when it makes a new fitted graph or rules one out."""
        key = observation.key
        self.captures += 1
        self.observations.append(observation)
        if len(self.observations) > MAX_OBSERVATIONS:
            self.observations.pop(0)
        if key in self.failed:
            return None
        # (a fitted structure captured again: its sizes moved in a way it did not bind, such as two
        # sizes that had been equal in every capture, or a fixed one; fitted anew over all of them,
        # the old fit kept until the new one holds)
        same = [o for o in self.observations if o.key == key]
        why = []
        regime = fit(same, why)
        if regime is not None:
            self.regimes[key] = regime
            return f"sizes fitted over {len(same)} captures: " + self.describe()[len(self.regimes) - 1]
        if why and key not in self.regimes:
            self.failed[key] = why[0]
            return "no symbolic sizes: " + why[0]
        return None
