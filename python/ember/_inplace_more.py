"""The in-place forms torch has and ember's C++ ops lack: comparisons written into the tensor
(x.eq_(y)), in-place view ops (x.t_(), squeeze_, unsqueeze_, transpose_), and fill_diagonal_,
scatter_reduce_, float_power_, cumprod_; plus the torch.<op>_ functions (torch.clamp_(x, 0)) that
call the Tensor method of the same name.

Each writes the out-of-place result into the tensor with copy_, so autograd records the write as
any other in-place op (a leaf that requires grad refuses it, with torch's message)."""
from . import _C
from ._C import Tensor

__all__ = []  # everything here is a Tensor method or a torch.<op>_ installed by install(namespace)

_LEAF_IN_PLACE = "a leaf Variable that requires grad is being used in an in-place operation."


def _check_in_place(self):
    if self.requires_grad and self.is_leaf and _C.is_grad_enabled():
        raise RuntimeError(_LEAF_IN_PLACE)


def _write(self, result):
    """self with result's values (result broadcast to self's shape, cast to self's dtype)."""
    if tuple(result.shape) != tuple(self.shape):
        try:
            shape = _C.broadcast_shapes(tuple(result.shape), tuple(self.shape))
        except RuntimeError:
            shape = None
        if shape != tuple(self.shape):
            raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                               f"{list(result.shape)}")
    return self.copy_(result)


# ---------------------------------------------------------------- comparisons in place
def _comparison_(name, op):
    def method(self, other):
        _check_in_place(self)
        return _write(self, getattr(self, op)(other))

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"Tensor.{name}(other): self.{op}(other) written into self, in self's dtype."
    return method


for _name, _op in (("eq_", "eq"), ("ne_", "ne"), ("lt_", "lt"), ("le_", "le"), ("gt_", "gt"), ("ge_", "ge"),
                   ("greater_", "gt"), ("greater_equal_", "ge"), ("less_", "lt"), ("less_equal_", "le"),
                   ("not_equal_", "ne")):
    setattr(Tensor, _name, _comparison_(_name, _op))


# ---------------------------------------------------------------- in-place view ops
def _become(self, view):
    """self turned into `view` (a view of self) in place: its shape, strides and, inside a graph,
    its history, so a later backward sees the view op (C++ Tensor._become_view_)."""
    _check_in_place(self)
    return self._become_view_(view)


def _t_(self):
    return _become(self, self.t())


def _transpose_(self, dim0, dim1):
    return _become(self, self.transpose(dim0, dim1))


def _squeeze_(self, dim=None):
    return _become(self, self.squeeze() if dim is None else self.squeeze(dim))


def _unsqueeze_(self, dim):
    return _become(self, self.unsqueeze(dim))


def _as_strided_(self, size, stride, storage_offset=None):
    return _become(self, self.as_strided(size, stride, storage_offset))


Tensor.t_ = _t_
Tensor.transpose_ = _transpose_
Tensor.swapaxes_ = _transpose_
Tensor.swapdims_ = _transpose_
Tensor.squeeze_ = _squeeze_
Tensor.unsqueeze_ = _unsqueeze_
Tensor.as_strided_ = _as_strided_


# ---------------------------------------------------------------- other in-place forms
def _fill_diagonal_(self, fill_value, wrap=False):
    """The main diagonal (i, i, ..., i) set to fill_value; for a tall matrix with wrap=True the
    diagonal restarts every (columns + 1) rows, as numpy's fill_diagonal."""
    _check_in_place(self)
    if self.dim() < 2:
        raise RuntimeError(f"dimensions must larger than 1, but got {self.dim()}")
    if self.dim() > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    n = min(self.shape)
    rows = self.shape[0]
    if self.dim() == 2 and wrap and rows > self.shape[1] + 1:
        step = self.shape[1] + 1
        index = [i for start in range(0, rows, step) for i in range(start, min(start + self.shape[1], rows))]
        row = _C.tensor(index, dtype=_C.int64, device=self.device)
        col = row - _C.tensor([i - i % step for i in index], dtype=_C.int64, device=self.device)
    else:
        row = _C.arange(n, device=self.device)
        col = row
    positions = (row,) + (col,) * (self.dim() - 1)
    self.index_put_(positions, _C.tensor(fill_value, dtype=self.dtype, device=self.device))
    return self


def _scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    _check_in_place(self)
    return self.copy_(self.scatter_reduce(dim, index, src, reduce, include_self=include_self))


def _float_power_(self, exponent):
    _check_in_place(self)
    if self.dtype not in (_C.float64, _C.complex128):
        result = "ComplexDouble" if self.is_complex() or (isinstance(exponent, Tensor) and exponent.is_complex()) \
            else "Double"
        raise RuntimeError(f"the base given to float_power_ has dtype {self.dtype._scalar_type_name} but the "
                           f"operation's result requires dtype {result}")
    return self.copy_(self.float_power(exponent))




def _cumprod_(self, dim, *, dtype=None):
    _check_in_place(self)
    return self.copy_(self.cumprod(dim, dtype=dtype))


def _same_inplace(name):
    """Tensor.<name>_ from Tensor.<name>: the result copied into self."""
    def method(self, *args, **kwargs):
        _check_in_place(self)
        return _write(self, getattr(self, name)(*args, **kwargs))

    method.__name__ = method.__qualname__ = name + "_"
    method.__doc__ = f"Tensor.{name}_: Tensor.{name}'s result written into self."
    return method


Tensor.fill_diagonal_ = _fill_diagonal_
Tensor.scatter_reduce_ = _scatter_reduce_
Tensor.float_power_ = _float_power_
Tensor.cumprod_ = _cumprod_
for _name in ("addr", "addbmm", "renorm", "conj_physical", "addmv", "baddbmm", "gcd", "lcm", "nextafter",
              "mvlgamma", "ldexp"):
    if hasattr(Tensor, _name) and not hasattr(Tensor, _name + "_"):
        setattr(Tensor, _name + "_", _same_inplace(_name))

# torch.<op>_(tensor, ...) for the in-place methods torch also has as functions.
_TORCH_INPLACE_FUNCTIONS = (
    "acosh_", "arccosh_", "arcsinh_", "arctanh_", "asinh_", "atanh_", "clamp_", "clamp_max_", "clamp_min_",
    "clip_", "conj_physical_", "deg2rad_", "rad2deg_", "detach_", "nan_to_num_", "xlogy_", "logit_", "ldexp_",
    "addmv_", "as_strided_", "resize_as_", "fill_", "zero_", "index_put_",
)


def _torch_function(name):
    def function(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"torch.{name}(input, ...): input.{name}(...)."
    return function


def install(namespace):
    """torch.<op>_ functions (and torch.detach) into the ember namespace, where missing."""
    for name in _TORCH_INPLACE_FUNCTIONS + ("detach",):
        if name not in namespace and hasattr(Tensor, name):
            namespace[name] = _torch_function(name)
