"""default_collate / default_convert (torch.utils.data._utils.collate, torch 1.13 rules)."""
import collections.abc
import re

from ... import _C

__all__ = ["default_collate", "default_convert"]

_NP_STR_OBJ = re.compile(r"[SaUO]")
_ERR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _is_numpy(x):
    t = type(x)
    return t.__module__ == "numpy" and t.__name__ not in ("str_", "string_", "bytes_")


def _as_tensor(x):
    return _C.as_tensor(x) if hasattr(_C, "as_tensor") else _C.tensor(x)


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(x, "_fields")


def default_convert(data):
    """Without batching: NumPy arrays become tensors, containers are converted element-wise
    (tuples become lists, as in torch), everything else is left alone."""
    if isinstance(data, _C.Tensor):
        return data
    if _is_numpy(data):
        if type(data).__name__ in ("ndarray", "memmap") and _NP_STR_OBJ.search(data.dtype.str) is not None:
            return data
        return _as_tensor(data) if type(data).__name__ in ("ndarray", "memmap") else data
    if isinstance(data, collections.abc.Mapping):
        try:
            return type(data)({k: default_convert(v) for k, v in data.items()})
        except TypeError:
            return {k: default_convert(v) for k, v in data.items()}
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def default_collate(batch):
    """Merges a list of samples into a batch: tensors are stacked on a new first dimension,
    NumPy arrays and Python numbers become tensors (floats float64, ints int64, bools bool),
    strings stay a list, dicts/namedtuples/lists/tuples are collated field by field (a tuple
    becomes a list). As in torch, strings inside containers come back as the tuple zip makes."""
    elem = batch[0]
    if isinstance(elem, _C.Tensor):
        return _C.stack(list(batch), 0)
    if _is_numpy(elem):
        kind = type(elem).__name__
        if kind in ("ndarray", "memmap"):
            if _NP_STR_OBJ.search(elem.dtype.str) is not None:
                raise TypeError(_ERR.format(elem.dtype))
            return default_collate([_as_tensor(b) for b in batch])
        if elem.shape == ():  # NumPy scalars
            import numpy
            return _as_tensor(numpy.asarray(batch))
    if isinstance(elem, float):
        return _C.tensor(list(batch), dtype=_C.float64)
    if isinstance(elem, int):  # bool included: a bool tensor
        return _C.tensor(list(batch))
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        try:
            return type(elem)({k: default_collate([d[k] for d in batch]) for k in elem})
        except TypeError:
            return {k: default_collate([d[k] for d in batch]) for k in elem}
    if _is_namedtuple(elem):
        return type(elem)(*(default_collate(s) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if not all(len(e) == size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(s) for s in transposed]
        try:
            return type(elem)([default_collate(s) for s in transposed])
        except TypeError:
            return [default_collate(s) for s in transposed]
    raise TypeError(_ERR.format(type(elem)))
