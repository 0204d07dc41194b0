"""ember.onnx (torch.onnx): export a model to an ONNX file.

export() captures the forward with ember.export (the same graph a saved ember program has), maps
each node to ONNX operators (opset 17) and writes the ModelProto itself (the protobuf encoding is
in _proto.py: no onnx package needed). Covered: the seeds' MLP, CNN and GPT-2 (Linear, Conv2d,
BatchNorm in eval, ReLU/Tanh/Sigmoid/GELU both forms, MaxPool2d, Flatten, Dropout in eval,
elementwise arithmetic, softmax, embeddings (Gather), LayerNormalization, slicing, expand,
causal masks, scaled-dot-product attention (both ember paths); average/adaptive pooling, nearest and
bilinear interpolation, cat, select, reductions over dims, clamp, leaky_relu, silu, so ResNet-style
and embedding + LSTM models too); another op is an error naming it
(docs/issue24-export.md). dynamic_axes ({"input": {0: "batch", 1: "seq"}}) exports with those dims
dynamic (ember.export's dynamic_shapes): every size the graph takes from them (a reshape's shape, a
slice's end, a causal mask) is computed in the ONNX graph from its inputs' shapes (Shape, Gather,
Mul, Add, Concat), and the inputs and outputs carry the dims' names. The file is checked against
onnxruntime in tests/python/test_onnx.py.
"""
import json

from . import _proto

__all__ = ["export", "is_in_onnx_export", "OperatorExportTypes", "TrainingMode"]

_exporting = [False]


def is_in_onnx_export():
    return _exporting[0]


class OperatorExportTypes:
    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


class TrainingMode:
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


def export(model, args, f, *, export_params=True, verbose=False, training=TrainingMode.EVAL, input_names=None,
           output_names=None, opset_version=17, dynamic_axes=None, do_constant_folding=True, **unused):
    """torch.onnx.export: writes model(*args) as an ONNX graph to the path (or binary file) f."""
    import ember
    if opset_version is None:
        opset_version = 17
    if opset_version < 17:
        raise ValueError(f"ember.onnx.export: opset_version {opset_version} is not supported (17 and up)")
    if not export_params:
        raise NotImplementedError("ember.onnx.export: export_params=False is not supported")
    args = args if isinstance(args, tuple) else (args,)
    was_training = getattr(model, "training", None)
    if training == TrainingMode.EVAL and was_training:
        model.eval()
    dynamic_shapes, output_axes = _dynamic_shapes(dynamic_axes, args, input_names, output_names)
    _exporting[0] = True
    try:
        with ember.no_grad():
            program = ember.export.export(model, args, dynamic_shapes=dynamic_shapes)._program
    finally:
        _exporting[0] = False
        if training == TrainingMode.EVAL and was_training:
            model.train()
    data = _Converter(json.loads(program.graph_json()), program.constants(), input_names, output_names,
                      opset_version, output_axes).model_bytes()
    if hasattr(f, "write"):
        f.write(data)
    else:
        from ..serialization import _write_atomically
        _write_atomically(str(f), data)
    if verbose:
        print(f"ember.onnx.export: {len(data)} bytes")


def _input_name(i, input_names):
    return input_names[i] if input_names and i < len(input_names) else f"input_{i}"


def _dynamic_shapes(dynamic_axes, args, input_names, output_names):
    """torch.onnx's dynamic_axes ({name: {axis: dim name}} or {name: [axes]}, by input and output
    name) as ember.export's dynamic_shapes over the positional arguments, and the outputs' names."""
    if not dynamic_axes:
        return None, {}
    from ..export import Dim
    inputs = {_input_name(i, input_names): i for i in range(len(args))}
    outputs = {n: i for i, n in enumerate(output_names or [])}
    shapes = [None] * len(args)
    output_axes = {}
    dims = {}
    for key, axes in dynamic_axes.items():
        if isinstance(axes, (list, tuple)):
            axes = {a: f"{key}_dynamic_axes_{k + 1}" for k, a in enumerate(axes)}
        if not isinstance(axes, dict):
            raise TypeError(f"ember.onnx.export: dynamic_axes[{key!r}] must be a dict of axis -> name or a list of axes")
        if key in inputs:
            spec = shapes[inputs[key]] = {}
            for axis, name in axes.items():
                spec[axis] = dims.setdefault(name, Dim(name))
        elif key in outputs or key.startswith("output_"):
            index = outputs[key] if key in outputs else int(key.split("_", 1)[1])
            output_axes[index] = dict(axes)
        else:
            raise ValueError(f"ember.onnx.export: dynamic_axes names {key!r}, which is neither an input name "
                             f"({list(inputs)}) nor an output name ({list(outputs) or 'output_<i>'})")
    return (tuple(shapes) if any(s for s in shapes) else None), output_axes


def dynamo_export(*args, **kwargs):
    return export(*args, **kwargs)


_DTYPES = {"float32": _proto.FLOAT, "float64": _proto.DOUBLE, "int64": _proto.INT64, "int32": _proto.INT32,
           "bool": _proto.BOOL, "float16": _proto.FLOAT16, "bfloat16": _proto.BFLOAT16, "uint8": _proto.UINT8,
           "int8": _proto.INT8}
_UNARY = {"relu": "Relu", "tanh": "Tanh", "sigmoid": "Sigmoid", "exp": "Exp", "log": "Log", "neg": "Neg",
          "abs": "Abs", "sqrt": "Sqrt", "reciprocal": "Reciprocal", "erf": "Erf", "sin": "Sin", "cos": "Cos",
          "floor": "Floor", "ceil": "Ceil", "sign": "Sign", "clone": "Identity", "contiguous": "Identity"}
_BINARY = {"mul": "Mul", "div": "Div", "maximum": "Max", "minimum": "Min", "pow": "Pow"}


class _Converter:
    def __init__(self, graph, constants, input_names, output_names, opset, output_axes=None):
        self.g, self.constants, self.opset = graph, constants, opset
        self.nodes, self.initializers = [], []
        self.names = {}
        self.counter = 0
        for i, v in enumerate(graph["inputs"]):
            self.names[v] = _input_name(i, input_names)
        self.output_names = output_names
        self.output_axes = output_axes or {}
        # dynamic dims (ember.export's symbolic sizes): (at, item, index, element) -> polynomial
        self.symbols = [d["name"] for d in graph.get("symbols", [])]
        self.sites = {(s["at"], s["item"], s["index"], s["element"]): s for s in graph.get("symbolic", [])}
        self.shape_cache = {}
        self.node_index = -1

    def name(self, v):
        if v not in self.names:
            self.names[v] = f"v{v}"
            if self.g["values"][v]["kind"] == "constant":
                site = self.sites.get(("value", v, -1, -1))
                if site:  # a Python number computed from a dynamic size
                    n = self.fresh("number")
                    self.add("Cast", [self.poly(site["poly"])], [n], to=_DTYPES[self.value_dtype(v)])
                    self.add("Reshape", [n, self.const([], dims=[0])], [self.names[v]])
                else:
                    self.initializers.append(_proto.tensor(self.names[v], self.constants[v]))
        return self.names[v]

    # ---- sizes that depend on dynamic dims, computed in the graph from the inputs' shapes

    def dim(self, j):
        """An int64 [1] tensor holding dynamic dim j, read from an input's shape."""
        key = ("dim", j)
        if key not in self.shape_cache:
            for (at, item, index, _), s in self.sites.items():
                if at == "size" and item in self.g["inputs"] and s["expr"] == self.symbols[j]:
                    shape, out = self.fresh("shape"), self.fresh(self.symbols[j])
                    self.add("Shape", [self.names[item]], [shape])
                    self.add("Gather", [shape, self.const([index])], [out], axis=0)
                    self.shape_cache[key] = out
                    break
            else:
                raise ValueError(f"ember.onnx.export: dynamic dim {self.symbols[j]!r} is not an input's size")
        return self.shape_cache[key]

    def poly(self, poly):
        """An int64 [1] tensor: sum of coef * prod dims^power."""
        key = json.dumps(poly)
        if key not in self.shape_cache:
            total = None
            for coef, *powers in poly:
                term = self.const([coef])
                for j, p in enumerate(powers):
                    for _ in range(p):
                        t = self.fresh("size")
                        self.add("Mul", [term, self.dim(j)], [t])
                        term = t
                if total is None:
                    total = term
                else:
                    t = self.fresh("size")
                    self.add("Add", [total, term], [t])
                    total = t
            self.shape_cache[key] = total
        return self.shape_cache[key]

    def has_sites(self, at, item):
        return any(k[0] == at and k[1] == item for k in self.sites)

    def ints(self, arg, values):
        """An int64 tensor of this node's list argument `arg`, computed where it depends on dims."""
        values = list(values)
        if not any(("arg", self.node_index, arg, e) in self.sites for e in range(len(values))):
            return self.const(values)
        parts = [self.poly(self.sites[("arg", self.node_index, arg, e)]["poly"])
                 if ("arg", self.node_index, arg, e) in self.sites else self.const([x]) for e, x in enumerate(values)]
        out = self.fresh("shape")
        self.add("Concat", parts, [out], axis=0)
        return out

    def int1(self, arg, value):
        """An int64 [1] tensor of this node's int argument `arg`."""
        site = self.sites.get(("arg", self.node_index, arg, -1))
        return self.poly(site["poly"]) if site else self.const([value])

    def sizes(self, v):
        """An int64 tensor of value v's sizes."""
        info = self.g["values"][v]
        if not self.has_sites("size", v):
            return self.const(info["sizes"])
        parts = [self.poly(self.sites[("size", v, d, -1)]["poly"]) if ("size", v, d, -1) in self.sites
                 else self.const([x]) for d, x in enumerate(info["sizes"])]
        out = self.fresh("shape")
        self.add("Concat", parts, [out], axis=0)
        return out

    def dims_of(self, v):
        """Value v's sizes for a ValueInfo: numbers, and the dims' expressions where dynamic."""
        info = self.g["values"][v]
        return [self.sites[("size", v, d, -1)]["expr"] if ("size", v, d, -1) in self.sites else x
                for d, x in enumerate(info["sizes"])]

    def fresh(self, hint):
        self.counter += 1
        return f"{hint}_{self.counter}"

    def const(self, values, dtype="int64", dims=None):
        import ember
        t = ember.tensor(values, dtype=getattr(ember, dtype))
        return self.initializer(t if dims is None else t.reshape(dims))

    def add(self, op, inputs, outputs, **attrs):
        self.nodes.append(_proto.node(op, inputs, outputs, self.fresh(op), attrs))

    def value_dtype(self, v):
        return self.g["values"][v]["dtype"]

    _DYNAMIC_READY = {"view", "reshape", "_unsafe_view", "empty", "fill_", "arange", "slice", "expand", "select"}

    def convert(self, node):
        op, ins, outs, args = node["op"], node["inputs"], node["outputs"], node["args"]
        if op not in self._DYNAMIC_READY and self.has_sites("arg", self.node_index):
            raise NotImplementedError(f"ember.onnx.export: '{op}' with an argument that depends on a dynamic dim has "
                                      f"no ONNX mapping yet (node {', '.join('%' + str(o) for o in outs)})")
        def a(i):
            kind, value = args[i]
            return float(value) if kind == "double" and isinstance(value, str) else value  # "inf", "-inf", "nan"
        x = [self.name(v) if v >= 0 else "" for v in ins]
        y = [self.name(v) for v in outs]
        if op in _UNARY:
            return self.add(_UNARY[op], x[:1], y[:1])
        if op in _BINARY:
            return self.add(_BINARY[op], self.same_type(x, ins, outs[0]), y)
        if op in ("add", "sub"):
            alpha = a(2)
            other = x[1]
            if alpha != 1:
                scaled = self.fresh("scaled")
                self.add("Mul", [x[1], self.scalar(alpha, outs[0])], [scaled])
                other = scaled
            first, second = self.same_type([x[0], other], ins, outs[0])
            return self.add("Add" if op == "add" else "Sub", [first, second], y)
        if op == "rsqrt":
            s = self.fresh("sqrt")
            self.add("Sqrt", x, [s])
            return self.add("Reciprocal", [s], y)
        if op == "gelu":
            if a(1) == "none":
                half, one, root = self.scalar(0.5, outs[0]), self.scalar(1.0, outs[0]), self.scalar(2 ** -0.5, outs[0])
                t1, t2, t3, t4 = (self.fresh("gelu") for _ in range(4))
                self.add("Mul", [x[0], root], [t1])
                self.add("Erf", [t1], [t2])
                self.add("Add", [t2, one], [t3])
                self.add("Mul", [x[0], t3], [t4])
                return self.add("Mul", [t4, half], y)
            # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
            c, k = self.scalar(0.7978845608028654, outs[0]), self.scalar(0.044715, outs[0])
            half, one = self.scalar(0.5, outs[0]), self.scalar(1.0, outs[0])
            x2, x3, kx3, inner, scaled, th, plus, hx = (self.fresh("gelu") for _ in range(8))
            self.add("Mul", [x[0], x[0]], [x2])
            self.add("Mul", [x2, x[0]], [x3])
            self.add("Mul", [x3, k], [kx3])
            self.add("Add", [x[0], kx3], [inner])
            self.add("Mul", [inner, c], [scaled])
            self.add("Tanh", [scaled], [th])
            self.add("Add", [th, one], [plus])
            self.add("Mul", [x[0], half], [hx])
            return self.add("Mul", [hx, plus], y)
        if op == "view" or op == "reshape" or op == "_unsafe_view":
            return self.add("Reshape", [x[0], self.ints(1, a(1))], y)
        if op == "transpose":
            rank = len(self.g["values"][ins[0]]["sizes"])
            perm = list(range(rank))
            d0, d1 = a(1) % rank, a(2) % rank
            perm[d0], perm[d1] = perm[d1], perm[d0]
            return self.add("Transpose", x, y, perm=perm)
        if op == "permute":
            return self.add("Transpose", x, y, perm=list(a(1)))
        if op == "addmm":
            return self.add("Gemm", [x[1], x[2], x[0]], y, alpha=float(a(4)), beta=float(a(3)))
        if op in ("mm", "bmm", "matmul"):
            return self.add("MatMul", x[:2], y)
        if op == "conv2d_forward":
            stride, padding, dilation, groups = list(a(3)), list(a(4)), list(a(5)), a(6)
            inputs = x[:3] if ins[2] >= 0 else x[:2]
            return self.add("Conv", inputs, y, strides=stride, pads=padding + padding, dilations=dilation, group=groups)
        if op == "max_pool2d_with_indices":
            kernel, stride, padding, dilation, ceil = list(a(1)), list(a(2)), list(a(3)), list(a(4)), a(5)
            if not ceil and dilation == [1, 1]:
                return self.add("MaxPool", x[:1], y[:1], kernel_shape=kernel, strides=stride or kernel,
                                pads=padding + padding)
        if op == "channel_affine":  # y = x * scale[c] + shift[c] over dim 1
            rank = len(self.g["values"][ins[0]]["sizes"])
            shape = self.const([-1] + [1] * (rank - 2))
            sc, sh, t = self.fresh("scale"), self.fresh("shift"), self.fresh("scaled")
            self.add("Reshape", [x[1], shape], [sc])
            self.add("Reshape", [x[2], shape], [sh])
            self.add("Mul", [x[0], sc], [t])
            return self.add("Add", [t, sh], y)
        if op == "arange":  # no inputs: a constant of the values, or a Range over dynamic bounds
            import ember
            dtype = self.value_dtype(outs[0])
            if not self.has_sites("arg", self.node_index):
                return self.initializer_for(outs[0], ember.arange(a(0), a(1), a(2), dtype=getattr(ember, dtype)))
            bounds = []
            for i in range(3):
                b = self.fresh("bound")
                self.add("Squeeze", [self.int1(i, a(i)), self.const([0])], [b])
                bounds.append(b)
            r = self.fresh("range")
            self.add("Range", bounds, [r])
            return self.add("Cast", [r], y, to=_DTYPES[dtype])
        if op == "empty":  # filled by the next node, which gives its value (fill_, copy_)
            return None
        if op == "fill_":
            import ember
            info = self.g["values"][outs[0]]
            if self.has_sites("size", outs[0]):  # the scalar expanded to the dynamic shape
                return self.add("Expand", [self.const([a(1)], info["dtype"], dims=[]), self.sizes(outs[0])], y)
            return self.initializer_for(outs[0], ember.full(info["sizes"], a(1), dtype=getattr(ember, info["dtype"])))
        if op == "copy_":
            return self.add("Identity", [x[1]], y) if self._fresh(ins[0]) else self.unsupported(op, outs)
        if op == "masked_fill_" or op == "masked_fill":
            value = self.scalar(a(2), outs[0])
            return self.add("Where", [x[1], value, x[0]], y)
        if op == "unsqueeze":
            return self.add("Unsqueeze", [x[0], self.const([a(1)])], y)
        if op == "squeeze_dim":
            return self.add("Squeeze", [x[0], self.const([a(1)])], y)
        if op == "index_select":
            return self.add("Gather", [x[0], x[1]], y, axis=a(1))
        if op == "native_layer_norm":
            shape = list(a(1))
            if len(shape) != 1 or ins[1] < 0 or ins[2] < 0:
                return self.unsupported(op, outs)
            return self.add("LayerNormalization", x[:3], y[:1], axis=-1, epsilon=float(a(4)))
        if op == "slice":
            dim, start, end, step = a(1), a(2), a(3), a(4)
            big = 2 ** 62
            return self.add("Slice", [x[0], self.int1(2, 0 if start is None else start),
                                      self.int1(3, big if end is None else end), self.const([dim]),
                                      self.int1(4, step)], y)
        if op == "expand":
            return self.add("Expand", [x[0], self.ints(1, a(1))], y)
        if op == "tril" or op == "triu":
            return self.add("Trilu", [x[0], self.const([a(1)], dims=[])], y, upper=int(op == "triu"))
        if op == "logical_not":
            return self.add("Not", x, y)
        if op == "_flash_attention_forward":  # softmax(q k^T * scale [+ mask | causal]) v
            causal, scale = a(4), a(5)
            kt, s, scaled, p = (self.fresh("attn") for _ in range(4))
            rank = len(self.g["values"][ins[0]]["sizes"])
            perm = list(range(rank))
            perm[-1], perm[-2] = perm[-2], perm[-1]
            self.add("Transpose", [x[1]], [kt], perm=perm)
            self.add("MatMul", [x[0], kt], [s])
            self.add("Mul", [s, self.scalar(scale, outs[0])], [scaled])
            if causal:
                masked = self.fresh("masked")
                self.add("Where", [self.causal_mask(ins[0], ins[1], rank), scaled, self.scalar(float("-inf"), outs[0])],
                         [masked])
                scaled = masked
            elif ins[3] >= 0:  # a bool mask keeps where true; a float mask is added
                masked = self.fresh("masked")
                if self.value_dtype(ins[3]) == "bool":
                    self.add("Where", [x[3], scaled, self.scalar(float("-inf"), outs[0])], [masked])
                else:
                    self.add("Add", self.same_type([scaled, x[3]], [outs[0], ins[3]], outs[0]), [masked])
                scaled = masked
            self.add("Softmax", [scaled], [p], axis=-1)
            return self.add("MatMul", [p, x[2]], y[:1])
        if op == "_lstm_cell":  # the fused LSTM step: gates' four blocks, c' = f c + i g, h' = o tanh(c')
            hidden = self.g["values"][ins[1]]["sizes"][-1]
            acts = []
            for k, act in enumerate(("Sigmoid", "Sigmoid", "Tanh", "Sigmoid")):
                block, out = self.fresh("gate"), self.fresh("act")
                self.add("Slice", [x[0], self.const([k * hidden]), self.const([(k + 1) * hidden]), self.const([1])],
                         [block])
                self.add(act, [block], [out])
                acts.append(out)
            fc, ig, tc = self.fresh("fc"), self.fresh("ig"), self.fresh("tanh_c")
            self.add("Mul", [acts[1], x[1]], [fc])
            self.add("Mul", [acts[0], acts[2]], [ig])
            self.add("Add", [fc, ig], [y[1]])
            self.add("Tanh", [y[1]], [tc])
            return self.add("Mul", [acts[3], tc], [y[0]])
        if op == "_gru_cell":  # the fused GRU step: r, z, n from both gates, h' = n + z (h - n)
            hidden = self.g["values"][ins[2]]["sizes"][-1]

            def block(t, k):
                out = self.fresh("gate")
                self.add("Slice", [t, self.const([k * hidden]), self.const([(k + 1) * hidden]), self.const([1])], [out])
                return out

            def node(kind, inputs):
                out = self.fresh(kind.lower())
                self.add(kind, inputs, [out])
                return out
            r = node("Sigmoid", [node("Add", [block(x[0], 0), block(x[1], 0)])])
            z = node("Sigmoid", [node("Add", [block(x[0], 1), block(x[1], 1)])])
            n = node("Tanh", [node("Add", [block(x[0], 2), node("Mul", [r, block(x[1], 2)])])])
            return self.add("Add", [n, node("Mul", [z, node("Sub", [x[2], n])])], y)
        if op == "silu":  # x * sigmoid(x)
            sig = self.fresh("sigmoid")
            self.add("Sigmoid", x[:1], [sig])
            return self.add("Mul", [x[0], sig], y)
        if op == "leaky_relu":
            return self.add("LeakyRelu", x[:1], y, alpha=float(a(1)))
        if op in ("clamp", "hardtanh"):
            bounds = [self.scalar_of_type(a(i), outs[0]) if a(i) is not None else "" for i in (1, 2)]
            return self.add("Clip", [x[0]] + bounds, y)
        if op in ("mean", "sum", "amax", "amin"):
            if op in ("mean", "sum") and a(3) is not None:
                return self.unsupported(op, outs)
            rank = len(self.g["values"][ins[0]]["sizes"])
            dims = sorted(d % rank for d in a(1)) if a(1) else list(range(rank))
            keep = int(bool(a(2)))
            onnx_op = {"mean": "ReduceMean", "sum": "ReduceSum", "amax": "ReduceMax", "amin": "ReduceMin"}[op]
            if op == "sum" or self.opset >= 18:  # (axes became an input: ReduceSum at 13, the others at 18)
                return self.add(onnx_op, [x[0], self.const(dims)], y, keepdims=keep)
            return self.add(onnx_op, x[:1], y, axes=dims, keepdims=keep)
        if op == "select":
            index = self.const(a(2), dims=[])
            if ("arg", self.node_index, 2, -1) in self.sites:  # an index from a dynamic size: a 0-d tensor of it
                index = self.fresh("index")
                self.add("Squeeze", [self.int1(2, a(2)), self.const([0])], [index])
            return self.add("Gather", [x[0], index], y, axis=a(1))
        if op == "cat":
            return self.add("Concat", x, y, axis=a(1))
        if op == "avg_pool2d":
            kernel, stride, padding, ceil, include_pad = list(a(1)), list(a(2)), list(a(3)), a(4), a(5)
            if len(args) > 6 and args[6][0] != "none":
                return self.unsupported(op, outs)  # a divisor_override
            return self.add("AveragePool", x[:1], y, kernel_shape=kernel, strides=stride or kernel,
                            pads=padding + padding, ceil_mode=int(bool(ceil)), count_include_pad=int(bool(include_pad)))
        if op == "adaptive_avg_pool2d":
            insize, outsize = self.g["values"][ins[0]]["sizes"][-2:], list(a(1))
            if outsize == [1, 1]:
                return self.add("GlobalAveragePool", x[:1], y)
            rank = len(self.g["values"][ins[0]]["sizes"])
            spatial_dynamic = any(("size", ins[0], d, -1) in self.sites for d in (rank - 2, rank - 1))
            if spatial_dynamic or any(i % o for i, o in zip(insize, outsize)):
                return self.unsupported(op, outs)  # windows of different sizes
            kernel = [i // o for i, o in zip(insize, outsize)]
            return self.add("AveragePool", x[:1], y, kernel_shape=kernel, strides=kernel)
        if op == "upsample":
            scales, mode, align = list(a(2)), a(3), a(4)
            if mode not in (0, 2):
                return self.unsupported(op, outs)  # nearest-exact, bicubic, antialiased: not mapped yet
            attrs = {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"} \
                if mode == 0 else {"mode": "linear", "coordinate_transformation_mode":
                                   "align_corners" if align else "pytorch_half_pixel"}
            if scales and all(v > 0 for v in scales) and not align:  # torch computes with the given scales
                import ember
                s = self.initializer(ember.tensor([1.0, 1.0] + [float(v) for v in scales], dtype=ember.float32))
                return self.add("Resize", [x[0], "", s], y, **attrs)
            return self.add("Resize", [x[0], "", "", self.sizes(outs[0])], y, **attrs)
        if op == "softmax" or op == "_softmax":
            return self.add("Softmax", x[:1], y, axis=a(1))
        if op == "log_softmax":
            return self.add("LogSoftmax", x[:1], y, axis=a(1))
        raise NotImplementedError(f"ember.onnx.export: the op '{op}' has no ONNX mapping yet (node "
                                  f"{', '.join('%' + str(o) for o in outs)})")

    def causal_mask(self, q, k, rank):
        """keep[i, j] = j <= i over (queries, keys), computed from their sizes when those are dynamic."""
        import ember
        if not (self.has_sites("size", q) or self.has_sites("size", k)):
            tq, tk = self.g["values"][q]["sizes"][-2], self.g["values"][k]["sizes"][-2]
            return self.initializer(ember.ones(tq, tk, dtype=ember.bool).tril())
        def size_of(v):
            site = self.sites.get(("size", v, rank - 2, -1))
            return self.poly(site["poly"]) if site else self.const([self.g["values"][v]["sizes"][-2]])
        shape, ones, lower, keep = (self.fresh("causal") for _ in range(4))
        self.add("Concat", [size_of(q), size_of(k)], [shape], axis=0)
        self.add("Expand", [self.const([1], dims=[]), shape], [ones])
        self.add("Trilu", [ones], [lower], upper=0)
        self.add("Cast", [lower], [keep], to=_proto.BOOL)
        return keep

    def unsupported(self, op, outs):
        raise NotImplementedError(f"ember.onnx.export: the op '{op}' has no ONNX mapping yet in this form (node "
                                  f"{', '.join('%' + str(o) for o in outs)})")

    def _fresh(self, v):
        """Whether value v is an `empty` nobody filled yet (copy_ then just names its source)."""
        info = self.g["values"][v]
        if info["kind"] != "node":
            return False
        producer = next(n for n in self.g["nodes"] if v in n["outputs"])
        return producer["op"] == "empty"

    def initializer(self, t):
        n = self.fresh("const")
        self.initializers.append(_proto.tensor(n, t))
        return n

    def initializer_for(self, v, t):
        """Value v is the constant t."""
        self.names[v] = self.initializer(t)

    def scalar_of_type(self, value, like):
        """A 0-d constant of value v's element type (Clip's bounds)."""
        return self.const([value], self.value_dtype(like), dims=[])

    def scalar(self, value, like):
        dtype = self.value_dtype(like)
        return self.const([value], dtype if dtype in ("float32", "float64") else "float32", dims=[])

    def same_type(self, names, ins, out):
        """ONNX arithmetic wants one element type: cast operands (a float64 scalar) to the output's."""
        want = self.value_dtype(out)
        fixed = []
        for n, v in zip(names, ins):
            if v >= 0 and self.value_dtype(v) != want:
                c = self.fresh("cast")
                self.add("Cast", [n], [c], to=_DTYPES[want])
                n = c
            fixed.append(n)
        return fixed

    def model_bytes(self):
        for i, node in enumerate(self.g["nodes"]):
            self.node_index = i
            self.convert(node)
        g = self.g
        inputs = [_proto.value_info(self.names[v], _DTYPES[g["values"][v]["dtype"]], self.dims_of(v))
                  for v in g["inputs"]]
        outputs = []
        for i, v in enumerate(g["outputs"]):
            src = self.name(v)
            want = self.output_names[i] if self.output_names and i < len(self.output_names) else f"output_{i}"
            self.add("Identity", [src], [want])
            dims = self.dims_of(v)
            for axis, name in self.output_axes.get(i, {}).items():
                dims[axis] = name
            outputs.append(_proto.value_info(want, _DTYPES[g["values"][v]["dtype"]], dims))
        graph = _proto.graph(self.nodes, "ember_graph", self.initializers, inputs, outputs)
        return _proto.model(graph, self.opset)
