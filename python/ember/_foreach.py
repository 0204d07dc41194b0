"""torch._foreach_*: the multi-tensor ops custom optimizers are written with (torch.optim's
foreach paths, Lion, Sophia, ...). Each applies one op to every tensor of a list, with a scalar,
a list of scalars, a second list, or a one-element tensor as the other operand, and returns the
list of results (the in-place forms, ending in "_", return None, as torch's). _foreach_norm and
_foreach_mul_ with one scale are C++ ops that CUDA runs a batch of tensors per launch
(ember/foreach.h); the rest are loops over ember's own ops, so they run on every device,
differentiate, and give torch's values."""
from . import _C

_UNARY = ("abs acos asin atan ceil cos cosh erf erfc exp expm1 floor frac lgamma log log10 log1p log2 neg reciprocal "
          "round rsqrt sigmoid sign sin sinh sqrt tan tanh trunc").split()
_BINARY = ("add", "sub", "mul", "div", "maximum", "minimum", "clamp_min", "clamp_max", "pow")

__all__ = []


def _check_list(name, tensors):
    if isinstance(tensors, _C.Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): argument 'self' must be a list of tensors, not {type(tensors).__name__}")
    if len(tensors) == 0:
        raise RuntimeError(f"{name}: Tensor list must have at least one tensor.")
    return list(tensors)


def _check_same(name, a, b, what="Tensor lists"):
    if len(a) != len(b):
        raise RuntimeError(f"{name}: {what} must have the same number of tensors, got {len(a)} and {len(b)}.")


def _others(name, tensors, other):
    """The second operand for each tensor: a list's entries, or the one scalar/tensor for all."""
    if isinstance(other, (list, tuple)):
        other = list(other)
        _check_same(name, tensors, other, "Tensor lists" if other and isinstance(other[0], _C.Tensor)
                    else "Tensor list and scalar list")
        return other
    if isinstance(other, _C.Tensor) and other.numel() != 1:
        raise RuntimeError(f"{name}: a tensor operand must have one element (a scalar tensor), got shape "
                           f"{tuple(other.shape)}")
    return [other] * len(tensors)


def _unary(op):
    def out_of_place(self):
        return [getattr(t, op)() for t in _check_list(f"_foreach_{op}", self)]

    def in_place(self):
        for t in _check_list(f"_foreach_{op}_", self):
            getattr(t, op + "_")()
    out_of_place.__name__, in_place.__name__ = f"_foreach_{op}", f"_foreach_{op}_"
    return out_of_place, in_place


def _call(op, t, o, alpha, inplace):
    import ember
    if op in ("add", "sub"):
        fn = getattr(t, op + ("_" if inplace else ""))
        return fn(o, alpha=alpha) if alpha != 1 else fn(o)
    if op in ("maximum", "minimum"):
        o = o if isinstance(o, _C.Tensor) else ember.tensor(o, dtype=t.dtype, device=t.device)
        r = getattr(ember, op)(t, o)
        return t.copy_(r) if inplace else r
    if op in ("clamp_min", "clamp_max"):
        r = t.clamp(min=o) if op == "clamp_min" else t.clamp(max=o)
        return t.copy_(r) if inplace else r
    return getattr(t, op + ("_" if inplace else ""))(o)


def _binary(op):
    name = f"_foreach_{op}"

    def out_of_place(self, other=None, *, alpha=1, **kw):
        if op == "pow" and not isinstance(self, (list, tuple)):  # _foreach_pow(scalar, exponents)
            import ember
            exps = _check_list(name, other)
            return [ember.pow(self, e) for e in exps]
        tensors = _check_list(name, self)
        other = kw.pop("scalar", kw.pop("scalars", kw.pop("exponent", other)))
        return [_call(op, t, o, alpha, False) for t, o in zip(tensors, _others(name, tensors, other))]

    def in_place(self, other=None, *, alpha=1, **kw):
        tensors = _check_list(name + "_", self)
        other = kw.pop("scalar", kw.pop("scalars", kw.pop("exponent", other)))
        for t, o in zip(tensors, _others(name + "_", tensors, other)):
            _call(op, t, o, alpha, True)
    out_of_place.__name__, in_place.__name__ = name, name + "_"
    return out_of_place, in_place


def _pointwise(op):
    name = f"_foreach_{op}"

    def values(tensors, value):
        if isinstance(value, _C.Tensor):  # one value per tensor, as a 1-D tensor (torch 2)
            if value.dim() != 1 or value.numel() != len(tensors):
                raise RuntimeError(f"{name}: the tensor of values must be 1-D with one entry per tensor, got shape "
                                   f"{tuple(value.shape)} for {len(tensors)} tensors")
            return value.cpu().tolist()
        return _others(name, tensors, value)

    def out_of_place(self, tensor1, tensor2, value=1):
        tensors = _check_list(name, self)
        t1, t2 = list(tensor1), list(tensor2)
        _check_same(name, tensors, t1)
        _check_same(name, tensors, t2)
        return [getattr(t, op)(a, b, value=v) for t, a, b, v in zip(tensors, t1, t2, values(tensors, value))]

    def in_place(self, tensor1, tensor2, value=1):
        tensors = _check_list(name + "_", self)
        t1, t2 = list(tensor1), list(tensor2)
        _check_same(name + "_", tensors, t1)
        _check_same(name + "_", tensors, t2)
        for t, a, b, v in zip(tensors, t1, t2, values(tensors, value)):
            getattr(t, op + "_")(a, b, value=v)
    out_of_place.__name__, in_place.__name__ = name, name + "_"
    return out_of_place, in_place


def _export(fn):
    globals()[fn.__name__] = fn
    __all__.append(fn.__name__)


for _op in _UNARY:
    for _f in _unary(_op):
        _export(_f)
for _op in _BINARY:
    for _f in _binary(_op):
        _export(_f)
for _op in ("addcmul", "addcdiv"):
    for _f in _pointwise(_op):
        _export(_f)

_mul_one = _C._foreach_mul_  # the batched C++ op: one scale for every tensor


def _foreach_mul_(self, other=None, **kw):  # noqa: F811  (replaces the loop above for one scale)
    tensors = _check_list("_foreach_mul_", self)
    other = kw.pop("scalar", kw.pop("scalars", other))
    if isinstance(other, (list, tuple)):
        for t, o in zip(tensors, _others("_foreach_mul_", tensors, other)):
            t.mul_(o)
    else:
        _others("_foreach_mul_", tensors, other)  # the one-element check
        _mul_one(tensors, other)


def _foreach_lerp(self, tensors1, weight):
    tensors, ends = _check_list("_foreach_lerp", self), list(tensors1)
    _check_same("_foreach_lerp", tensors, ends)
    return [t.lerp(e, w) for t, e, w in zip(tensors, ends, _others("_foreach_lerp", tensors, weight))]


def _foreach_lerp_(self, tensors1, weight):
    tensors, ends = _check_list("_foreach_lerp_", self), list(tensors1)
    _check_same("_foreach_lerp_", tensors, ends)
    for t, e, w in zip(tensors, ends, _others("_foreach_lerp_", tensors, weight)):
        t.lerp_(e, w)


def _foreach_zero_(self):
    for t in _check_list("_foreach_zero_", self):
        t.zero_()


def _foreach_copy_(self, src, non_blocking=False):
    tensors, srcs = _check_list("_foreach_copy_", self), list(src)
    _check_same("_foreach_copy_", tensors, srcs)
    for t, s in zip(tensors, srcs):
        t.copy_(s, non_blocking=non_blocking)


def _foreach_clone(self):
    return [t.clone() for t in _check_list("_foreach_clone", self)]


def _foreach_max(self):
    return [t.max() for t in _check_list("_foreach_max", self)]


def _foreach_norm(self, ord=2, dtype=None):  # noqa: F811
    tensors = _check_list("_foreach_norm", self)
    if dtype is not None:
        tensors = [t.to(dtype) for t in tensors]
    return _C._foreach_norm(tensors, float(ord))


for _f in (_foreach_mul_, _foreach_lerp, _foreach_lerp_, _foreach_zero_, _foreach_copy_, _foreach_clone, _foreach_max,
           _foreach_norm):
    if _f.__name__ not in __all__:
        __all__.append(_f.__name__)
