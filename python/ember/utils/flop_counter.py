"""torch.utils.flop_counter: FlopCounterMode counts the floating-point operations of the matmuls,
convolutions and attention a block of code runs (forward and backward), in total and per module,
with torch's formulas and op names. It works on meta tensors too, so a model's FLOPs can be counted
without memory or compute:

    with ember.device("meta"):
        model = Transformer(cfg)
    with FlopCounterMode(display=False) as counter:
        model(ember.empty(8, 1024, dtype=ember.int64, device="meta")).sum().backward()
    counter.get_total_flops()

It records the ops with ember's profiler (input shapes) while global module hooks mark each
module's forward; a backward op is charged to the modules whose forward created its graph node
(matched by the node's sequence number, as torch's ModTracker does with backward hooks).
Elementwise ops count nothing, as in torch."""
import math
import warnings
from collections import defaultdict

from ..nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from ..profiler import profile, record_function

__all__ = ["FlopCounterMode", "register_flop_formula", "mm_flop", "bmm_flop", "conv_flop_count", "sdpa_flop_count",
           "sdpa_backward_flop_count"]

_MODULE_MARK = "## flop_counter module: "


def mm_flop(a_shape, b_shape):
    """(m, k) @ (k, n): a multiply and an add per term."""
    m, k = a_shape
    k2, n = b_shape
    if k != k2:
        raise AssertionError(f"mm_flop: inner dims differ ({k} vs {k2})")
    return 2 * m * n * k


def bmm_flop(a_shape, b_shape):
    b, m, k = a_shape
    b2, k2, n = b_shape
    if b != b2 or k != k2:
        raise AssertionError(f"bmm_flop: shapes {a_shape} and {b_shape} do not multiply")
    return 2 * b * m * n * k


def conv_flop_count(x_shape, w_shape, out_shape, transposed=False):
    """torch's count: 2 * batch * c_out * c_in/groups * prod(kernel) * prod(the spatial dims of the
    output, or of the input for a transposed convolution)."""
    batch = x_shape[0]
    conv_shape = (x_shape if transposed else out_shape)[2:]
    return 2 * batch * math.prod(w_shape) * math.prod(conv_shape)


def _heads(shape):
    """(..., T, D) -> (prod of the leading dims, T, D)."""
    return math.prod(shape[:-2]), shape[-2], shape[-1]


def sdpa_flop_count(query_shape, key_shape, value_shape):
    """scores = q k^T and out = scores v."""
    bh, s_q, d_q = _heads(query_shape)
    _, s_k, _ = _heads(key_shape)
    d_v = value_shape[-1]
    return bmm_flop((bh, s_q, d_q), (bh, d_q, s_k)) + bmm_flop((bh, s_q, s_k), (bh, s_k, d_v))


def sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape):
    """The scores recomputed, then the gradients of v, the scores, q and k: five batched products."""
    bh, s_q, d_q = _heads(query_shape)
    _, s_k, _ = _heads(key_shape)
    d_v = value_shape[-1]
    return (bmm_flop((bh, s_q, d_q), (bh, d_q, s_k)) + bmm_flop((bh, s_q, d_v), (bh, d_v, s_k)) +
            bmm_flop((bh, s_k, s_q), (bh, s_q, d_v)) + bmm_flop((bh, s_q, s_k), (bh, s_k, d_q)) +
            bmm_flop((bh, d_q, s_q), (bh, s_q, s_k)))


def _ints(value):
    """A recorded concrete argument ("[1, 2]", "3", 3, [1, 2]) as a list of ints."""
    if isinstance(value, (list, tuple)):
        return [int(v) for v in value]
    if isinstance(value, int):
        return [value]
    text = str(value).replace("[", " ").replace("]", " ").replace(",", " ")
    return [int(t) for t in text.split() if t.lstrip("-").isdigit()]


def _conv_out(x_shape, w_shape, stride, padding, dilation):
    spatial = len(w_shape) - 2
    pick = lambda v, i, d: v[min(i, len(v) - 1)] if v else d  # noqa: E731
    out = list(x_shape[:1]) + [w_shape[0]]
    for i in range(spatial):
        extent = pick(dilation, i, 1) * (w_shape[2 + i] - 1) + 1
        out.append((x_shape[2 + i] + 2 * pick(padding, i, 0) - extent) // max(1, pick(stride, i, 1)) + 1)
    return out


def _conv_forward(shapes, concrete):
    x, w = shapes[0], shapes[1]
    out = _conv_out(x, w, _ints(concrete[3]), _ints(concrete[4]), _ints(concrete[5]))
    return conv_flop_count(x, w, out)


def _conv_backward_input(shapes, concrete):  # (grad_out, weight, input_size, ...)
    grad_out, w = shapes[0], shapes[1]
    return conv_flop_count(grad_out, w, _ints(concrete[2]), transposed=True)


def _conv_backward_weight(shapes, concrete):  # (grad_out, input, weight_size, ...): as the forward
    grad_out, w = shapes[0], _ints(concrete[2])
    return 2 * grad_out[0] * math.prod(w) * math.prod(grad_out[2:])


# ember's op -> (torch's op name, formula over (input shapes, concrete inputs)).
_FORMULAS = {
    "aten::mm": ("aten.mm", lambda s, c: mm_flop(s[0], s[1])),
    "aten::addmm": ("aten.addmm", lambda s, c: mm_flop(s[1], s[2])),
    "aten::_addmm_epilogue": ("aten.addmm", lambda s, c: mm_flop(s[1], s[2])),
    "aten::bmm": ("aten.bmm", lambda s, c: bmm_flop(s[0], s[1])),
    "aten::baddbmm": ("aten.baddbmm", lambda s, c: bmm_flop(s[1], s[2])),
    "aten::conv2d_forward": ("aten.convolution", _conv_forward),
    "aten::conv3d_forward": ("aten.convolution", _conv_forward),
    "aten::conv2d_backward_input": ("aten.convolution_backward", _conv_backward_input),
    "aten::conv3d_backward_input": ("aten.convolution_backward", _conv_backward_input),
    "aten::conv2d_backward_weight": ("aten.convolution_backward", _conv_backward_weight),
    "aten::conv3d_backward_weight": ("aten.convolution_backward", _conv_backward_weight),
    "aten::_flash_attention_forward": ("aten._scaled_dot_product_flash_attention_for_cpu",
                                       lambda s, c: sdpa_flop_count(s[0], s[1], s[2])),
    "aten::_flash_attention_backward": ("aten._scaled_dot_product_flash_attention_for_cpu_backward",
                                        lambda s, c: sdpa_backward_flop_count(s[0], s[1], s[2], s[3])),
}


def register_flop_formula(targets, get_raw=False):
    """Decorator registering formula(input_shapes, concrete_inputs) -> flops for ember op names
    ("aten::name", as the profiler shows them); the op is reported under the same name."""
    if isinstance(targets, str):
        targets = [targets]

    def register(fn):
        for t in targets:
            _FORMULAS[t] = (t.replace("::", "."), fn)
        return fn
    return register


def _suffix(number):
    suffixes = ["", "K", "M", "B", "T"]
    index = max(0, min(len(suffixes) - 1, (len(str(number)) - 2) // 3))
    return f"{number / 1000 ** index:.3f}{suffixes[index]}"


class FlopCounterMode:
    def __init__(self, mods=None, depth=2, display=True, custom_mapping=None, skip_unsupported=False):
        if mods is not None:
            warnings.warn("mods argument is not needed anymore, you can stop passing it", stacklevel=2)
        self.flop_counts = defaultdict(lambda: defaultdict(int))
        self.depth = depth
        self.display = display
        self._formulas = dict(_FORMULAS)
        for op, fn in (custom_mapping or {}).items():
            self._formulas[op] = (op.replace("::", "."), fn)
        self._prof = None

    # ---- recording
    def _enter_module(self, module, args):
        parent = self._stack[-1] if self._stack else None
        name = type(module).__name__
        if parent is not None:
            name = parent[1] + "." + next((n for n, m in parent[0].named_modules() if m is module and n), name)
        mark = record_function(_MODULE_MARK + name)
        mark.__enter__()
        self._stack.append((module, name, mark))

    def _exit_module(self, module, args, output):
        while self._stack:
            m, _, mark = self._stack.pop()
            mark.__exit__(None, None, None)
            if m is module:
                break

    def __enter__(self):
        self.flop_counts.clear()
        self._stack = []
        self._hooks = [register_module_forward_pre_hook(self._enter_module),
                       register_module_forward_hook(self._exit_module)]
        self._prof = profile(record_shapes=True)
        self._prof.__enter__()
        return self

    def __exit__(self, *exc):
        for mark in reversed([s[2] for s in self._stack]):
            mark.__exit__(None, None, None)
        self._stack = []
        for h in self._hooks:
            h.remove()
        self._prof.__exit__(*exc)
        self._count(self._prof.events())
        if self.display and exc[0] is None:
            print(self.get_table(self.depth))
        return False

    def _count(self, events):
        def modules_of(e):
            names = []
            p = e.cpu_parent
            while p is not None:
                if p.name.startswith(_MODULE_MARK):
                    names.append(p.name[len(_MODULE_MARK):])
                p = p.cpu_parent
            return names

        forward_modules = {}  # sequence number of a forward op -> the modules it ran in
        for e in events:
            if e.sequence_nr >= 0 and not e.name.startswith("autograd::") and e.sequence_nr not in forward_modules:
                forward_modules[e.sequence_nr] = modules_of(e)
        for e in events:
            entry = self._formulas.get(e.name)
            if entry is None:
                continue
            parent, inside_counted, backward_seq = e.cpu_parent, False, None
            while parent is not None:
                if parent.name in self._formulas:
                    inside_counted = True  # counted by the outer op (a kernel built on another)
                    break
                if backward_seq is None and parent.name.startswith("autograd::engine::evaluate_function:"):
                    backward_seq = parent.sequence_nr
                parent = parent.cpu_parent
            if inside_counted:
                continue
            op, formula = entry
            flops = int(formula(e.input_shapes, e.concrete_inputs))
            mods = modules_of(e)
            if backward_seq is not None and backward_seq >= 0:
                mods = forward_modules.get(backward_seq, [])
            for owner in ["Global"] + mods:
                self.flop_counts[owner][op] += flops

    # ---- results
    def get_total_flops(self):
        return sum(self.flop_counts["Global"].values())

    def get_flop_counts(self):
        """{module name: {op name: flops}}, "Global" for everything."""
        return {k: dict(v) for k, v in self.flop_counts.items()}

    def get_table(self, depth=None):
        depth = 999999 if depth is None else depth
        total = self.get_total_flops()
        rows = [("Module", "FLOP", "% Total")]
        for name in ["Global"] + sorted(k for k in self.flop_counts if k != "Global"):
            level = 0 if name == "Global" else name.count(".") + 1
            if level > depth:
                continue
            counts = self.flop_counts[name]
            n = sum(counts.values())
            pct = "0%" if total == 0 else f"{n / total:.2%}"
            rows.append((" " * level + name, _suffix(n), pct))
            for op, c in counts.items():
                rows.append((" " * level + " - " + op, _suffix(c), "0%" if total == 0 else f"{c / total:.2%}"))
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        return "\n".join("  ".join(r[i].ljust(widths[i]) for i in range(3)).rstrip() for r in rows)
