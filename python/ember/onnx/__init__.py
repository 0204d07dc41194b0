"""ember.onnx (torch.onnx): export a model to an ONNX file.

export() captures the forward with ember.export (the same graph a saved ember program has), maps
each node to ONNX operators (opset 17) and writes the ModelProto itself (the protobuf encoding is
in _proto.py: no onnx package needed). Covered: the seeds' MLP, CNN and GPT-2 (Linear, Conv2d,
BatchNorm in eval, ReLU/Tanh/Sigmoid/GELU both forms, MaxPool2d, Flatten, Dropout in eval,
elementwise arithmetic, softmax, embeddings (Gather), LayerNormalization, slicing, expand,
causal masks, scaled-dot-product attention (both ember paths)); another op is an error naming it
(docs/issue24-export.md). The graph is specialised to the example's shapes (dynamic_axes is not
supported yet). The file is checked against onnxruntime in
tests/python/test_onnx.py.
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
    if dynamic_axes:
        raise NotImplementedError("ember.onnx.export: dynamic_axes is not supported yet (the graph is specialised "
                                  "to the example's shapes)")
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
    _exporting[0] = True
    try:
        with ember.no_grad():
            program = ember.export.export(model, args)._program
    finally:
        _exporting[0] = False
        if training == TrainingMode.EVAL and was_training:
            model.train()
    data = _Converter(json.loads(program.graph_json()), program.constants(), input_names, output_names,
                      opset_version).model_bytes()
    if hasattr(f, "write"):
        f.write(data)
    else:
        from ..serialization import _write_atomically
        _write_atomically(str(f), data)
    if verbose:
        print(f"ember.onnx.export: {len(data)} bytes")


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
    def __init__(self, graph, constants, input_names, output_names, opset):
        self.g, self.constants, self.opset = graph, constants, opset
        self.nodes, self.initializers = [], []
        self.names = {}
        self.counter = 0
        for i, v in enumerate(graph["inputs"]):
            self.names[v] = (input_names[i] if input_names and i < len(input_names) else f"input_{i}")
        self.output_names = output_names

    def name(self, v):
        if v not in self.names:
            self.names[v] = f"v{v}"
            if self.g["values"][v]["kind"] == "constant":
                t = self.constants[v]
                self.initializers.append(_proto.tensor(self.names[v], t))
        return self.names[v]

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

    def convert(self, node):
        op, ins, outs, args = node["op"], node["inputs"], node["outputs"], node["args"]
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
            return self.add("Reshape", [x[0], self.const(list(a(1)))], y)
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
        if op == "arange":  # no inputs: a constant of the values
            import ember
            return self.initializer_for(outs[0], ember.arange(a(0), a(1), a(2), dtype=ember.int64))
        if op == "empty":  # filled by the next node, which gives its value (fill_, copy_)
            return None
        if op == "fill_":
            import ember
            info = self.g["values"][outs[0]]
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
            return self.add("Slice", [x[0], self.const([0 if start is None else start]),
                                      self.const([big if end is None else end]), self.const([dim]),
                                      self.const([step])], y)
        if op == "expand":
            return self.add("Expand", [x[0], self.const(list(a(1)))], y)
        if op == "tril" or op == "triu":
            return self.add("Trilu", [x[0], self.const([a(1)], dims=[])], y, upper=int(op == "triu"))
        if op == "logical_not":
            return self.add("Not", x, y)
        if op == "_flash_attention_forward":  # softmax(q k^T * scale [+ mask | causal]) v
            if ins[3] >= 0:
                return self.unsupported(op, outs)
            causal, scale = a(4), a(5)
            kt, s, scaled, p = (self.fresh("attn") for _ in range(4))
            rank = len(self.g["values"][ins[0]]["sizes"])
            perm = list(range(rank))
            perm[-1], perm[-2] = perm[-2], perm[-1]
            self.add("Transpose", [x[1]], [kt], perm=perm)
            self.add("MatMul", [x[0], kt], [s])
            self.add("Mul", [s, self.scalar(scale, outs[0])], [scaled])
            if causal:
                tq, tk = self.g["values"][ins[0]]["sizes"][-2], self.g["values"][ins[1]]["sizes"][-2]
                import ember
                keep = ember.ones(tq, tk, dtype=ember.bool).tril()
                masked = self.fresh("masked")
                self.add("Where", [self.initializer(keep), scaled, self.scalar(float("-inf"), outs[0])], [masked])
                scaled = masked
            self.add("Softmax", [scaled], [p], axis=-1)
            return self.add("MatMul", [p, x[2]], y[:1])
        if op == "softmax" or op == "_softmax":
            return self.add("Softmax", x[:1], y, axis=a(1))
        if op == "log_softmax":
            return self.add("LogSoftmax", x[:1], y, axis=a(1))
        raise NotImplementedError(f"ember.onnx.export: the op '{op}' has no ONNX mapping yet (node "
                                  f"{', '.join('%' + str(o) for o in outs)})")

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
        for node in self.g["nodes"]:
            self.convert(node)
        g = self.g
        inputs = [_proto.value_info(self.names[v], _DTYPES[g["values"][v]["dtype"]], g["values"][v]["sizes"])
                  for v in g["inputs"]]
        outputs = []
        for i, v in enumerate(g["outputs"]):
            src = self.name(v)
            want = self.output_names[i] if self.output_names and i < len(self.output_names) else f"output_{i}"
            self.add("Identity", [src], [want])
            outputs.append(_proto.value_info(want, _DTYPES[g["values"][v]["dtype"]], g["values"][v]["sizes"]))
        graph = _proto.graph(self.nodes, "ember_graph", self.initializers, inputs, outputs)
        return _proto.model(graph, self.opset)
