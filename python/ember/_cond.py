"""ember.cond (torch.cond): data-dependent control flow that ember.compile can hold without a
break.

    y = ember.cond(x.sum() > 0, lambda x: x.sin(), lambda x: x.cos(), (x,))

Eagerly it is `true_fn(*operands) if pred else false_fn(*operands)`. Inside ember.compile it is
one node of the graph (the rest of the function compiles around it): on each call the node reads
pred and runs the branch it picks, eagerly, with autograd as written. At capture both branches
run once (as torch traces both) to check they return the same structure, shapes and dtypes. The
branches must not write their inputs or Python state (torch's rule). A program exported with a
cond cannot be saved (the branches are Python).
"""
from . import _C
from .library import _rebuild, _tensors_of


def _flat(obj):
    out = []
    _tensors_of(obj, out)
    return out


def _as_bool(pred):
    if isinstance(pred, _C.Tensor):
        if pred.numel() != 1:
            raise RuntimeError("cond: expected pred to be a bool or a tensor with a single item, "
                               f"got a tensor of shape {tuple(pred.shape)}")
        return bool(pred.item())
    if isinstance(pred, (bool, int)):
        return bool(pred)
    raise RuntimeError(f"cond: expected pred to be a bool or a one-element tensor, got {type(pred).__name__}")


def cond(pred, true_fn, false_fn, operands=()):
    if not callable(true_fn) or not callable(false_fn):
        raise RuntimeError("cond: true_fn and false_fn must be callable")
    if isinstance(operands, list):
        operands = tuple(operands)
    if not isinstance(operands, tuple):
        raise RuntimeError(f"cond: operands must be a tuple of tensors, got {type(operands).__name__}")
    if not _C._compile.tracing():
        return true_fn(*operands) if _as_bool(pred) else false_fn(*operands)
    pred_tensors = [pred] if isinstance(pred, _C.Tensor) else []
    spec = _tensors_of(operands, [])
    in_tensors = pred_tensors + _flat(operands)
    with _C._compile.paused():
        taken = _as_bool(pred)
        result = (true_fn if taken else false_fn)(*operands)
        other = (false_fn if taken else true_fn)(*operands)
    mine, theirs = _flat(result), _flat(other)
    if len(mine) != len(theirs) or any(a.shape != b.shape or a.dtype != b.dtype for a, b in zip(mine, theirs)):
        raise RuntimeError("cond: true_fn and false_fn must return tensors of the same structure, shapes and "
                           f"dtypes; got {[(tuple(t.shape), str(t.dtype)) for t in (mine if taken else theirs)]} and "
                           f"{[(tuple(t.shape), str(t.dtype)) for t in (theirs if taken else mine)]}")
    out_spec = _tensors_of(result, [])
    constant_pred = None if pred_tensors else bool(pred)

    def replay(tensors):
        p = tensors[0] if constant_pred is None else constant_pred
        args = _rebuild(spec, tensors[len(pred_tensors):], [0])
        return _flat((true_fn if _as_bool(p) else false_fn)(*args))
    _C._compile.record_opaque("cond", in_tensors, mine, replay, False)
    return _rebuild(out_spec, mine, [0])
