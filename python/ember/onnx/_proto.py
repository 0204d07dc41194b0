"""The few ONNX protobuf messages ember writes (field numbers from onnx.proto), encoded by hand:
varints, length-delimited fields, fixed32 floats. Enough for a ModelProto with one graph."""
import struct

# TensorProto.DataType
FLOAT, UINT8, INT8, INT32, INT64, BOOL, FLOAT16, DOUBLE, BFLOAT16 = 1, 2, 3, 6, 7, 9, 10, 11, 16
_ATTR_FLOAT, _ATTR_INT, _ATTR_STRING, _ATTR_FLOATS, _ATTR_INTS = 1, 2, 3, 6, 7
IR_VERSION = 8  # opset 17's


def _varint(n):
    n &= (1 << 64) - 1  # negative int64s as two's complement, ten bytes
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field, wire):
    return _varint((field << 3) | wire)


def _int(field, n):
    return _key(field, 0) + _varint(int(n))


def _bytes(field, data):
    if isinstance(data, str):
        data = data.encode()
    return _key(field, 2) + _varint(len(data)) + data


def _float(field, x):
    return _key(field, 5) + struct.pack("<f", x)


def _dtype_code(dtype):
    import ember
    codes = {ember.float32: FLOAT, ember.float64: DOUBLE, ember.int64: INT64, ember.int32: INT32, ember.bool: BOOL,
             ember.float16: FLOAT16, ember.bfloat16: BFLOAT16, ember.uint8: UINT8, ember.int8: INT8}
    if dtype not in codes:
        raise NotImplementedError(f"ember.onnx.export: dtype {dtype} has no ONNX type here")
    return codes[dtype]


def tensor(name, t):
    """TensorProto: dims (1), data_type (2), name (8), raw_data (9, little-endian)."""
    import numpy as np
    t = t.detach().contiguous()
    code = _dtype_code(t.dtype)
    if code in (BFLOAT16, FLOAT16):
        raise NotImplementedError("ember.onnx.export: half-precision constants are not written yet; export in float32")
    raw = np.ascontiguousarray(t.numpy()).astype(np.dtype(t.numpy().dtype).newbyteorder("<")).tobytes()
    out = b"".join(_int(1, d) for d in t.shape)
    return out + _int(2, code) + _bytes(8, name) + _bytes(9, raw)


def _attribute(name, value):
    out = _bytes(1, name)
    if isinstance(value, bool) or isinstance(value, int):
        return out + _int(3, int(value)) + _int(20, _ATTR_INT)
    if isinstance(value, float):
        return out + _float(2, value) + _int(20, _ATTR_FLOAT)
    if isinstance(value, str):
        return out + _bytes(4, value) + _int(20, _ATTR_STRING)
    if isinstance(value, (list, tuple)) and all(isinstance(v, int) for v in value):
        return out + b"".join(_int(8, v) for v in value) + _int(20, _ATTR_INTS)
    if isinstance(value, (list, tuple)):
        return out + b"".join(_float(7, float(v)) for v in value) + _int(20, _ATTR_FLOATS)
    raise TypeError(f"ember.onnx: attribute {name!r} of type {type(value).__name__}")


def node(op_type, inputs, outputs, name, attrs):
    """NodeProto: input (1), output (2), name (3), op_type (4), attribute (5)."""
    out = b"".join(_bytes(1, i) for i in inputs) + b"".join(_bytes(2, o) for o in outputs)
    out += _bytes(3, name) + _bytes(4, op_type)
    return out + b"".join(_bytes(5, _attribute(k, v)) for k, v in attrs.items())


def value_info(name, elem_type, sizes):
    """ValueInfoProto: name (1), type (2: TypeProto.tensor_type (1): elem_type (1), shape (2)). A size
    that is a string is a named dynamic dim."""
    # TensorShapeProto.dim: Dimension.dim_value (1) or dim_param (2)
    dims = b"".join(_bytes(1, _bytes(2, d) if isinstance(d, str) else _int(1, d)) for d in sizes)
    tensor_type = _int(1, elem_type) + _bytes(2, dims)
    return _bytes(1, name) + _bytes(2, _bytes(1, tensor_type))


def graph(nodes, name, initializers, inputs, outputs):
    """GraphProto: node (1), name (2), initializer (5), input (11), output (12)."""
    out = b"".join(_bytes(1, n) for n in nodes) + _bytes(2, name)
    out += b"".join(_bytes(5, t) for t in initializers)
    return out + b"".join(_bytes(11, i) for i in inputs) + b"".join(_bytes(12, o) for o in outputs)


def model(graph_bytes, opset):
    """ModelProto: ir_version (1), producer_name (2), producer_version (3), graph (7),
    opset_import (8: OperatorSetIdProto domain (1), version (2))."""
    from ember.version import __version__
    return (_int(1, IR_VERSION) + _bytes(2, "ember") + _bytes(3, __version__) + _bytes(7, graph_bytes) +
            _bytes(8, _bytes(1, "") + _int(2, opset)))
