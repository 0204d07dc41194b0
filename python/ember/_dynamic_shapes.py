"""Symbolic sizes for ember.export's dynamic_shapes (ember/compile/symbolic.h).

ember's tensors have concrete sizes, so a forward is never traced with symbols. Instead export
captures it at several sizes of each dynamic dim (a grid of three sizes per dim), checks that every
capture is the same graph node for node, and fits each number that changed (a view's shape, a
slice's end, a value's size or stride) with an integer polynomial of degree up to 2 per dim:
"batch*seq", "768*seq", "12*seq^2". One more capture at sizes outside the grid must match the
fit exactly, and the program specialised to those sizes must give the eager outputs; so must the
program at size 1 when the range includes it. What does not fit (a branch on a size, a float made
from a size such as 1/seq, a constant built from Python data that depends on a size) is an
ExportError naming the node or value.
"""
import copy
import itertools
import json
from fractions import Fraction

from . import _C
from ._compile import _flatten, _run_captured, _unflatten

_cc = _C._compile

_MAX_DIMS = 3  # 3**k captures: 27 at most


class DimSpec:
    """One dynamic dim: its name, range, the example's size and where it appears
    ((flattened tensor index, dim) pairs)."""

    def __init__(self, name, lo, hi):
        self.name, self.min, self.max = name, lo, hi
        self.example = None
        self.places = []

    def describe(self):
        return f"Dim({self.name!r}, min={self.min}, max={'inf' if self.max is None else self.max})"


def parse(dynamic_shapes, fn, args, kwargs, tensors, error):
    """The DimSpecs dynamic_shapes names (torch.export's forms: a tuple/list over the positional
    arguments or a dict by parameter name; per tensor a {dim: Dim} dict or a per-dim list of Dim or
    None)."""
    from .export import Dim
    if dynamic_shapes is None:
        return []
    index_of = {}
    for i, t in enumerate(tensors):
        index_of.setdefault(id(t), i)
    if isinstance(dynamic_shapes, dict):
        import inspect
        target = fn.forward if hasattr(fn, "forward") else fn
        try:
            bound = inspect.signature(target).bind(*args, **kwargs)
        except (TypeError, ValueError) as e:
            raise error(f"ember.export: dynamic_shapes is keyed by argument name, but the arguments do not bind: {e}")
        pairs = []
        for key, spec in dynamic_shapes.items():
            if key not in bound.arguments:
                raise error(f"ember.export: dynamic_shapes names {key!r}, which is not an argument of the forward "
                            f"(its arguments: {list(bound.arguments)})")
            pairs.append((bound.arguments[key], spec, key))
    else:
        specs = list(dynamic_shapes)
        if len(specs) != len(args):
            raise error(f"ember.export: dynamic_shapes has {len(specs)} entries for {len(args)} positional arguments")
        pairs = [(a, s, f"args[{i}]") for i, (a, s) in enumerate(zip(args, specs))]
    dims = {}

    def dim_named(d, where):
        if d is Dim.STATIC or d is None:
            return None
        if d is Dim.AUTO or d is Dim.DYNAMIC:
            d = Dim(f"s{len(dims)}")
        if not isinstance(d, Dim):
            raise error(f"ember.export: dynamic_shapes at {where}: expected Dim, None or Dim.AUTO, got {d!r}")
        lo = 1 if d.min is None else int(d.min)
        if lo < 1:
            raise error(f"ember.export: {d!r} at {where}: min must be at least 1 (a dynamic dim of size 0 is not "
                        "supported)")
        hi = None if d.max is None or d.max == float("inf") else int(d.max)
        have = dims.get(d.__name__)
        if have is None:
            have = dims[d.__name__] = DimSpec(d.__name__, lo, hi)
        elif (have.min, have.max) != (lo, hi):
            raise error(f"ember.export: Dim {d.__name__!r} is given two different ranges")
        return have

    def walk(value, spec, where):
        if spec is None:
            return
        if isinstance(value, _C.Tensor):
            if isinstance(spec, dict):
                items = spec.items()
            elif isinstance(spec, (list, tuple)):
                items = enumerate(spec)
            else:
                raise error(f"ember.export: dynamic_shapes at {where}: a tensor takes a {{dim: Dim}} dict or a "
                            f"list of Dim/None per dim, got {spec!r}")
            for d, dim in items:
                if not isinstance(d, int) or not -value.dim() <= d < value.dim():
                    raise error(f"ember.export: dynamic_shapes at {where}: dim {d!r} is out of range for a tensor of "
                                f"{value.dim()} dims")
                spec_dim = dim_named(dim, f"{where} dim {d}")
                if spec_dim is None:
                    continue
                d %= value.dim()
                size = value.shape[d]
                if spec_dim.example is not None and spec_dim.example != size:
                    raise error(f"ember.export: Dim {spec_dim.name!r} is {spec_dim.example} in one input and {size} "
                                f"at {where} dim {d}")
                spec_dim.example = size
                spec_dim.places.append((index_of[id(value)], d))
        elif isinstance(value, (list, tuple)) and isinstance(spec, (list, tuple)):
            if len(value) != len(spec):
                raise error(f"ember.export: dynamic_shapes at {where} has {len(spec)} entries for {len(value)}")
            for i, (v, s) in enumerate(zip(value, spec)):
                walk(v, s, f"{where}[{i}]")
        elif isinstance(value, dict) and isinstance(spec, dict):
            for k, s in spec.items():
                if k not in value:
                    raise error(f"ember.export: dynamic_shapes at {where} names key {k!r}, which the argument lacks")
                walk(value[k], s, f"{where}[{k!r}]")
        else:
            raise error(f"ember.export: dynamic_shapes at {where} does not match the argument ({type(value).__name__})")

    for value, spec, where in pairs:
        walk(value, spec, where)
    out = list(dims.values())
    if len(out) > _MAX_DIMS:
        raise NotImplementedError(f"ember.export: {len(out)} dynamic dims; at most {_MAX_DIMS} are supported "
                                  f"(each costs 3x the captures)")
    for d in out:
        if d.example < d.min or (d.max is not None and d.example > d.max):
            raise error(f"ember.export: the example's size {d.example} lies outside {d.describe()}")
    return out


def _grid_values(dims):
    """Three sizes per dim (the example first, unless it is 0 or 1, which broadcasting and
    squeezing treat specially) and one more for the check, all in range and >= 2 where the range
    allows, kept apart from other dims' sizes so no two coincide by chance. The first of each is
    where the program's graph is captured."""
    used = {d.example for d in dims}
    grids, checks = [], []
    for d in dims:
        lo = max(d.min, 2)

        def ok(v):
            return v >= lo and (d.max is None or v <= d.max) and v not in used
        order = []
        for step in range(1, 64):
            order += [d.example - step, d.example + step]
        candidates = [v for v in order if ok(v)]
        grid = [d.example] + candidates[:2] if d.example >= 2 else candidates[:3]
        used.update(grid)
        rest = [v for v in candidates[2:] if v not in used]
        check = rest[0] if rest else None
        if check is not None:
            used.add(check)
        grids.append(grid)
        checks.append(check)
    return grids, checks


def _resized(t, dim, n):
    """t with `n` entries along dim: its first n, or itself repeated (so ids stay valid indices)."""
    size = t.shape[dim]
    if n <= size:
        out = t.narrow(dim, 0, n)
    else:
        import ember
        reps = [1] * t.dim()
        reps[dim] = -(-n // size)
        out = t.repeat(reps).narrow(dim, 0, n)
    # (a fresh row-major tensor: contiguous() keeps a narrowed view whose only other dims are 1,
    # and its strides there, which the fit would then read as numbers of the sizes)
    import ember
    out = ember.empty(tuple(out.shape), dtype=out.dtype, device=out.device).copy_(out).detach()
    if t.requires_grad:
        out.requires_grad_(True)
    return out


def _inputs_at(dims, sizes, tensors):
    """The inputs with each dynamic dim at its size in `sizes` (one tensor passed twice stays one)."""
    by_tensor = {}
    for d, n in zip(dims, sizes):
        for i, axis in d.places:
            by_tensor.setdefault(i, []).append((axis, n))
    replaced = {}
    for i, changes in by_tensor.items():
        r = tensors[i]
        for axis, n in changes:
            r = _resized(r, axis, n)
        replaced[id(tensors[i])] = r
    return [replaced.get(id(t), t) for t in tensors]


def _leaves(graph, in_place=False):
    """{place: number} for every number that may depend on a size, and the graph with them blanked
    (`graph` itself with in_place: ember.compile's dynamic captures do not keep it)."""
    leaves = {}
    skeleton = {k: graph[k] for k in ("inputs", "outputs", "values", "nodes")}
    if not in_place:
        skeleton = copy.deepcopy(skeleton)
    for v, info in enumerate(skeleton["values"]):
        for key in ("sizes", "strides"):
            for d, x in enumerate(info[key]):
                leaves[("size" if key == "sizes" else "stride", v, d, -1)] = x
                info[key][d] = None
    for n, node in enumerate(skeleton["nodes"]):
        for a, (kind, value) in enumerate(node["args"]):
            if kind in ("int", "double") and not isinstance(value, str):
                leaves[("arg", n, a, -1)] = value
                node["args"][a] = [kind, None]
            elif kind in ("ints", "doubles"):
                for e, x in enumerate(value):
                    if not isinstance(x, str):
                        leaves[("arg", n, a, e)] = x
                        value[e] = None
    return leaves, skeleton


def _where(graph, place):
    kind, item, index, element = place
    if kind == "arg":
        node = graph["nodes"][item]
        return (f"node {item} ({node['op']} -> {', '.join('%' + str(o) for o in node['outputs'])}) argument {index}"
                + (f" element {element}" if element >= 0 else ""))
    if kind == "value":
        return f"the number %{item} (a Python number in the forward)"
    producer = next((n["op"] for n in graph["nodes"] if item in n["outputs"]), graph["values"][item]["kind"])
    return f"the {kind} of %{item} ({producer}) at dim {index}"


def _first_difference(a, b):
    if len(a["nodes"]) != len(b["nodes"]):
        return f"{len(a['nodes'])} ops against {len(b['nodes'])}"
    for i, (x, y) in enumerate(zip(a["nodes"], b["nodes"])):
        if x != y:
            return f"node {i}: {x['op']}{x['inputs']} against {y['op']}{y['inputs']}"
    return "the values differ (dtypes, ranks or kinds)"


class _Capture:
    def __init__(self, sizes, program, outputs, out_spec):
        self.sizes, self.program, self.outputs, self.out_spec = sizes, program, outputs, out_spec
        self.graph = json.loads(program.graph_json())
        self.leaves, self.skeleton = _leaves(self.graph)
        for v, t in program.constants().items():  # a Python number in the forward (x / x.shape[1])
            if self.graph["values"][v]["wrapped"] and t.dim() == 0:
                self.leaves[("value", v, -1, -1)] = t.item()


def _capture(fn, in_spec, dims, sizes, tensors, meta_for, error):
    inputs = _inputs_at(dims, sizes, tensors)
    args, kwargs = _unflatten(in_spec, inputs)
    session = _cc.CaptureSession(inputs)
    at = ", ".join(f"{d.name}={n}" for d, n in zip(dims, sizes))
    try:
        _, outputs, out_spec, reason = _run_captured(session, fn, args, kwargs)
    except Exception as e:
        raise error(f"ember.export: the forward fails with {at} (export runs it at several sizes of each dynamic dim "
                    f"to learn how the graph depends on them; give Dim min/max where it works): "
                    f"{type(e).__name__}: {e}") from None
    if reason:
        session.close()
        raise error(f"ember.export: the forward cannot be exported whole (with {at}): {reason}")
    try:
        program = session.finish_program(outputs, meta_for(out_spec), simplify=False)
    except ValueError as e:
        raise error(str(e)) from None
    return _Capture(sizes, program, outputs, out_spec), inputs


def invert(rows):
    """The inverse of a square matrix of Fractions (Gauss-Jordan, exact); rows must be independent."""
    n = len(rows)
    m = [list(r) + [Fraction(int(i == j)) for j in range(n)] for i, r in enumerate(rows)]
    for c in range(n):
        pivot = next(r for r in range(c, n) if m[r][c] != 0)
        m[c], m[pivot] = m[pivot], m[c]
        m[c] = [x / m[c][c] for x in m[c]]
        for r in range(n):
            if r != c and m[r][c] != 0:
                m[r] = [x - m[r][c] * y for x, y in zip(m[r], m[c])]
    return [row[n:] for row in m]


def _solve(grids, values):
    """Integer coefficients of sum c[p] prod dims^p (p over the grid's powers) through `values`
    ({sizes: number}); None if some coefficient is not an integer."""
    # the inverse of each dim's Vandermonde matrix
    inverses = [invert([[Fraction(v) ** p for p in range(len(grid))] for v in grid]) for grid in grids]
    powers = list(itertools.product(*[range(len(g)) for g in grids]))
    points = list(itertools.product(*[range(len(g)) for g in grids]))
    coefs = {}
    for p in powers:
        c = Fraction(0)
        for q in points:
            w = Fraction(1)
            for j, (pj, qj) in enumerate(zip(p, q)):
                w *= inverses[j][pj][qj]
            if w:
                c += w * Fraction(values[tuple(grids[j][qj] for j, qj in enumerate(q))])
        if c.denominator != 1:
            return None
        if c:
            coefs[p] = int(c)
    return coefs


def _eval(coefs, sizes):
    total = 0
    for p, c in coefs.items():
        term = c
        for s, e in zip(sizes, p):
            term *= s ** e
        total += term
    return total


def export_dynamic(fn, in_spec, tensors, dims, meta_for, error, mod_state):
    """The program of fn over tensors with dims dynamic (a Program with symbolic sizes), after
    the captures and checks described above; returns (program, out_spec). Attention picks its
    CPU path (flash or math) without looking at the sizes meanwhile, so that every capture runs
    the same ops (ember/sdp_flags.h)."""
    was = _C._cuda.set_sdp_choice_ignores_sizes(True)
    try:
        return _export_dynamic(fn, in_spec, tensors, dims, meta_for, error, mod_state)
    finally:
        _C._cuda.set_sdp_choice_ignores_sizes(was)


def _export_dynamic(fn, in_spec, tensors, dims, meta_for, error, mod_state):
    import ember
    grids, checks = _grid_values(dims)
    captures = {}
    with mod_state():
        for sizes in itertools.product(*grids):
            captures[sizes], _ = _capture(fn, in_spec, dims, sizes, tensors, meta_for, error)
    base_sizes = tuple(g[0] for g in grids)
    base = captures[base_sizes]
    for sizes, c in captures.items():
        if c.skeleton != base.skeleton:
            at = ", ".join(f"{d.name}={n}" for d, n in zip(dims, sizes))
            raise error(f"ember.export: the graph depends on the dynamic sizes beyond their arithmetic (a Python "
                        f"loop over a size, a branch on one?): with {at} it differs from the example's: "
                        f"{_first_difference(c.graph, base.graph)}")
        if c.out_spec != base.out_spec:
            raise error("ember.export: the forward's output structure depends on the dynamic sizes")
    _check_constants(captures, base, dims, error)
    sites = []
    for place, x in base.leaves.items():
        values = {s: c.leaves[place] for s, c in captures.items()}
        if all(v == x for v in values.values()):
            continue
        if place[0] in ("size", "stride") and base.graph["values"][place[1]]["kind"] == "constant":
            continue  # a constant nobody reads any more (a live one that changes failed above)
        coefs = _solve(grids, values)
        if coefs is None:
            samples = ", ".join(f"{v} at {s}" for s, v in list(values.items())[:4])
            raise error(f"ember.export: {_where(base.graph, place)} changes with the dynamic sizes in a way no integer "
                        f"polynomial fits ({samples}, sizes as ({', '.join(d.name for d in dims)})); a float made from "
                        f"a size (1/seq), a floor division (a strided convolution or pooling over the dim) or a size "
                        f"from data cannot be dynamic")
        sites.append((place, coefs))
    symbolic = {
        "symbols": [{"name": d.name, "min": d.min, "max": -1 if d.max is None else d.max, "example": n}
                    for d, n in zip(dims, base_sizes)],
        "symbolic": [{"at": place[0], "item": place[1], "index": place[2], "element": place[3],
                      "poly": [[c, *p] for p, c in coefs.items()]}
                     for place, coefs in sites],
    }
    try:
        program = base.program.with_symbolic(json.dumps(symbolic))
    except ValueError as e:
        raise error(f"ember.export: the fitted sizes do not hold: {e}") from None
    fitted = dict(sites)
    # the check: sizes outside the grid must give the graph the fit predicts, and the eager results
    check_sizes = [tuple(c if c is not None else n for c, n in zip(checks, base_sizes))]
    ones = tuple(1 if d.min <= 1 else n for d, n in zip(dims, base_sizes))
    for sizes in check_sizes:
        if sizes in captures:
            continue
        with mod_state():
            c, inputs = _capture(fn, in_spec, dims, sizes, tensors, meta_for, error)
        at = ", ".join(f"{d.name}={n}" for d, n in zip(dims, sizes))
        if c.skeleton != base.skeleton:
            raise error(f"ember.export: with {at} the graph differs from the example's "
                        f"({_first_difference(c.graph, base.graph)}); narrow the Dims' ranges")
        for place, x in c.leaves.items():
            want = _eval(fitted[place], sizes) if place in fitted else base.leaves[place]
            if want != x:
                raise error(f"ember.export: with {at}, {_where(base.graph, place)} is {x}, not the {want} fitted "
                            f"from the other sizes; export cannot make it dynamic")
        with mod_state():
            _check_results(program, inputs, c.outputs, at, error)
    if ones != base_sizes:
        inputs = _inputs_at(dims, ones, tensors)
        args, kwargs = _unflatten(in_spec, inputs)
        with mod_state(), ember.no_grad():
            want = []
            _flatten(fn(*args, **kwargs), want)
        with mod_state():
            _check_results(program, inputs, want, ", ".join(f"{d.name}={n}" for d, n in zip(dims, ones)), error,
                           hint="; give the Dim min=2")
    return program, base.out_spec


def _check_results(program, inputs, want, at, error, hint=""):
    import ember
    with ember.no_grad():
        try:
            got = program.run(inputs)
        except Exception as e:
            raise error(f"ember.export: the program with dynamic sizes fails with {at}: {e}{hint}") from None
    for g, w in zip(got, want):
        if g.shape != w.shape or not ember.allclose(g.detach(), w.detach(), rtol=1e-4, atol=1e-5, equal_nan=True):
            raise error(f"ember.export: the program with dynamic sizes does not give the eager result with {at} "
                        f"(shape {tuple(g.shape)} against {tuple(w.shape)}){hint}")


def differing_constant(base, other):
    """(value id, base's tensor) of the first constant of `other`'s program whose contents differ
    from base's (one made from Python data that depends on a size), or None. A constant that is
    the same tensor in both, or a number the fit treats as a leaf, does not count. Shared by
    export and ember.compile's dynamic shapes."""
    import ember
    mine = base.program.constants()
    for v, t in other.program.constants().items():
        b = mine.get(v)
        if b is None or _cc.impl_id(b) == _cc.impl_id(t) or ("value", v, -1, -1) in base.leaves:
            continue
        if b.shape != t.shape or b.dtype != t.dtype or not ember.equal(b, t):
            return v, b
    return None


def _check_constants(captures, base, dims, error):
    for sizes, c in captures.items():
        found = None if c is base else differing_constant(base, c)
        if found is not None:
            v, b = found
            at = ", ".join(f"{d.name}={n}" for d, n in zip(dims, sizes))
            raise error(f"ember.export: constant %{v} (shape {tuple(b.shape)}) differs with {at}: it was made from "
                        f"Python data that depends on a dynamic size; build it with tensor ops (arange, ones) from "
                        f"the sizes instead")
