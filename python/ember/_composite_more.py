"""More torch.* functions composed of ember ops: scatters into views (diagonal_scatter, ...),
integer number theory (gcd, lcm), float neighbours (nextafter), mode, histogram, combinations,
unravel_index, vander, index_reduce, addbmm/addr, the *_copy forms of view ops, and the small
predicates (is_same_size, is_signed). Differentiable where torch's are: each is built from
differentiable ember ops."""
import itertools as _itertools
import math as _math
from collections import namedtuple as _namedtuple

from . import _C
from ._C import Tensor

__all__ = [
    "diagonal_scatter", "select_scatter", "slice_scatter", "as_strided_scatter", "split_with_sizes",
    "unsafe_split", "unsafe_chunk", "unsafe_split_with_sizes", "gcd", "lcm", "nextafter", "mvlgamma", "mode",
    "histogram", "combinations", "unravel_index", "vander", "index_reduce", "addbmm", "addr", "diagflat",
    "narrow_copy", "fill", "is_same_size", "is_signed", "get_device", "nonzero_static", "empty_permuted",
    "frobenius_norm", "nuclear_norm", "norm_except_dim", "lu_solve", "lu", "binomial",
    "alias_copy", "as_strided_copy", "detach_copy", "diagonal_copy", "expand_copy", "permute_copy", "select_copy",
    "slice_copy", "split_copy", "split_with_sizes_copy", "squeeze_copy", "t_copy", "transpose_copy",
    "unbind_copy", "unfold_copy", "unsqueeze_copy", "view_as_complex_copy", "view_as_real_copy", "view_copy",
]

def _ember():
    """The ember package (fully imported by the time any function here runs)."""
    import ember
    return ember


_mode_result = _namedtuple("mode", ["values", "indices"])
_histogram_result = _namedtuple("histogram", ["hist", "bin_edges"])


def _wrap(dim, ndim):
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


# ---------------------------------------------------------------- scatters into a view of a copy
def _scatter_into(input, src, window, op):
    """A copy of input whose `window` (a function of the copy returning a view) holds src.
    Gradients: input's flows everywhere outside the window, src's from the window."""
    out = input.clone()
    view = window(out)
    if tuple(view.shape) != tuple(src.shape):
        raise RuntimeError(f"{op}(): expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(view.shape)}")
    view.copy_(src)
    return out


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    return _scatter_into(input, src, lambda t: t.diagonal(offset, dim1, dim2), "diagonal_scatter")


def select_scatter(input, src, dim, index):
    return _scatter_into(input, src, lambda t: t.select(dim, index), "select_scatter")


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    d = _wrap(dim, input.dim())
    key = (slice(None),) * d + (slice(start, end, step),)
    return _scatter_into(input, src, lambda t: t[key], "slice_scatter")


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    return _scatter_into(input, src, lambda t: t.as_strided(size, stride, storage_offset), "as_strided_scatter")


# ---------------------------------------------------------------- splits
def split_with_sizes(input, split_sizes, dim=0):
    sizes = [int(s) for s in split_sizes]
    d = _wrap(dim, input.dim())
    if sum(sizes) != input.shape[d] or any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {input.shape[d]} (input "
                           f"tensor's size at dimension {dim}), but got split_sizes={sizes}")
    return input.split(sizes, d)


def unsafe_split(input, split_size, dim=0):
    return input.split(split_size, dim)


def unsafe_chunk(input, chunks, dim=0):
    return input.chunk(chunks, dim)


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    return split_with_sizes(input, split_sizes, dim)


# ---------------------------------------------------------------- number theory, float neighbours
_INTEGER_DTYPES = (_C.uint8, _C.int8, _C.int16, _C.int32, _C.int64)


def _integer_pair(op, a, b):
    if not isinstance(b, Tensor):
        b = _C.tensor(b, dtype=a.dtype, device=a.device)
    for t in (a, b):
        if t.dtype not in _INTEGER_DTYPES:
            raise RuntimeError(f'"{op}_cpu" not implemented for \'{t.dtype._scalar_type_name}\'')
    dtype = _C.promote_types(a.dtype, b.dtype)
    return _C.broadcast_tensors(a.to(dtype), b.to(dtype))


def gcd(input, other):
    """Euclid's algorithm on every element at once: each round replaces (a, b) by (b, a mod b)
    where b is not yet 0; at most ~92 rounds for int64."""
    a, b = _integer_pair("gcd", input, other)
    a, b = a.abs(), b.abs()
    while bool((b != 0).any()):
        live = b != 0
        safe = _C.where(live, b, _C.ones_like(b))
        a, b = _C.where(live, b, a), _C.where(live, a.remainder(safe), b)
    return a


def lcm(input, other):
    a, b = _integer_pair("lcm", input, other)
    g = gcd(a, b)
    return _C.where(g == 0, _C.zeros_like(g), (a // _C.where(g == 0, _C.ones_like(g), g) * b).abs())


def nextafter(input, other):
    """The next representable float after input towards other: one step of the integer that
    holds the float's bits (+-0 step to the smallest subnormal with other's sign)."""
    if not isinstance(other, Tensor):
        other = _C.tensor(other, dtype=input.dtype, device=input.device)
    if input.dtype not in (_C.float32, _C.float64):
        raise RuntimeError(f'"nextafter_cpu" not implemented for \'{input.dtype._scalar_type_name}\'')
    if other.dtype != input.dtype:
        raise RuntimeError(f"nextafter(): expected both inputs to have the same dtype, but got "
                           f"{input.dtype._scalar_type_name} and {other.dtype._scalar_type_name}")
    x, y = _C.broadcast_tensors(input, other)
    bits_type = _C.int32 if x.dtype == _C.float32 else _C.int64
    tiny = _C.tensor(1, dtype=bits_type).view(x.dtype)  # the smallest positive subnormal
    bits = x.contiguous().view(bits_type)
    away_from_zero = (x < y) == (x > 0)
    stepped = _C.where(away_from_zero, bits + 1, bits - 1).view(x.dtype)
    from_zero = _C.where(y > 0, tiny.expand_as(x), -tiny.expand_as(x))
    result = _C.where(x == 0, from_zero, stepped)
    result = _C.where(x == y, y, result)
    return _C.where(x.isnan() | y.isnan(), _C.full_like(x, _math.nan), result)


def mvlgamma(input, p):
    """The multivariate log-gamma: sum_j lgamma(x - j/2) for j < p, plus p(p-1)/4 log(pi)."""
    if p < 1:
        raise RuntimeError(f"p has to be greater than or equal to 1, but got {p}")
    x = input if input.is_floating_point() else input.to(_C.get_default_dtype())
    offsets = _C.arange(p, dtype=x.dtype, device=x.device) / 2
    return (x.unsqueeze(-1) - offsets).lgamma().sum(-1) + p * (p - 1) / 4 * _math.log(_math.pi)


# ---------------------------------------------------------------- statistics
def mode(input, dim=-1, keepdim=False):
    """The most frequent value along dim (the smallest on a tie; NaNs count as equal) and the index
    of its last occurrence, as torch: a stable sort makes equal values runs in index order."""
    d = _wrap(dim, input.dim())
    if input.dim() == 0:
        return _mode_result(input.clone(), _C.zeros((), dtype=_C.int64, device=input.device))
    if input.shape[d] == 0:
        raise IndexError(f"mode(): Expected reduction dim {dim} to have non-zero size.")
    x = input.detach().movedim(d, -1)
    values, order = x.sort(-1, stable=True)
    n = values.shape[-1]
    same = values[..., 1:] == values[..., :-1]
    if values.is_floating_point():
        same = same | (values[..., 1:].isnan() & values[..., :-1].isnan())
    starts = _C.cat([_C.ones_like(values[..., :1], dtype=_C.bool), ~same], -1)
    position = _C.arange(n, device=x.device).expand_as(values)
    run_start = _C.where(starts, position, _C.zeros_like(position)).cummax(-1)[0]
    run_length = position - run_start + 1
    # The end of the longest run: ties go to the earliest run (the smallest value), whose last
    # element is the run's last index in the input (the sort was stable).
    ends = _C.cat([~same, _C.ones_like(values[..., :1], dtype=_C.bool)], -1)
    score = _C.where(ends, run_length * (n + 1) + (n - position), _C.zeros_like(run_length))
    best = score.argmax(-1, keepdim=True)
    result_values = input.movedim(d, -1).gather(-1, order.gather(-1, best))
    result_indices = order.gather(-1, best)
    if keepdim:
        return _mode_result(result_values.movedim(-1, d), result_indices.movedim(-1, d))
    return _mode_result(result_values.squeeze(-1), result_indices.squeeze(-1))


def histogram(input, bins=100, *, range=None, weight=None, density=False):
    """Counts (or summed weights) of input's elements per bin: `bins` equal bins over `range`
    (or the data's min and max), or the given increasing edges; the last bin is closed."""
    if not input.is_floating_point():
        raise RuntimeError(f"torch.histogram: input tensor and bins tensors should have the same dtype, but got "
                           f"input {input.dtype._scalar_type_name} and bins {input.dtype._scalar_type_name}")
    x = input.detach().reshape(-1)
    if isinstance(bins, Tensor):
        edges = bins.to(x.dtype)
        if edges.dim() != 1 or edges.numel() < 2:
            raise RuntimeError(f"torch.histogram(): bins tensor should have one dimension and at least 2 "
                               f"elements, but got {edges.dim()} dimensions and {edges.numel()} elements")
    else:
        if bins <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
        if range is not None:
            lo, hi = float(range[0]), float(range[1])
        elif x.numel():
            lo, hi = float(x.min()), float(x.max())
        else:
            lo, hi = 0.0, 0.0
        if lo > hi:
            raise RuntimeError(f"torch.histogram(): min should not exceed max, but got min {lo} max {hi} for "
                               f"dimension 0")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = _C.linspace(lo, hi, int(bins) + 1, dtype=x.dtype, device=x.device)
    nbins = edges.numel() - 1
    inside = (x >= edges[0]) & (x <= edges[-1])
    slot = (_ember().searchsorted(edges, x, right=True) - 1).clamp(0, nbins - 1)
    w = _C.ones_like(x) if weight is None else weight.detach().reshape(-1).to(x.dtype)
    hist = _C.zeros(nbins, dtype=x.dtype, device=x.device).index_add_(0, slot[inside], w[inside])
    if density:
        hist = hist / (hist.sum() * (edges[1:] - edges[:-1]))
    return _histogram_result(hist, edges)


# ---------------------------------------------------------------- index generators and structure
def combinations(input, r=2, with_replacement=False):
    """The r-length combinations of a 1-D input's elements, one per row (itertools order)."""
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return _C.empty(0, dtype=input.dtype, device=input.device)
    pick = _itertools.combinations_with_replacement if with_replacement else _itertools.combinations
    rows = list(pick(range(input.shape[0]), r))
    if not rows:
        return _C.empty((0, r), dtype=input.dtype, device=input.device)
    return input[_C.tensor(rows, dtype=_C.int64, device=input.device)]


def unravel_index(indices, shape):
    """Flat indices as one coordinate tensor per dimension of shape (floor modulo, as torch)."""
    if not isinstance(indices, Tensor):
        indices = _C.tensor(indices)
    if indices.is_floating_point() or indices.is_complex() or indices.dtype == _C.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (int(shape),) if isinstance(shape, int) else tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(shape))
    coords = []
    rest = indices.to(_C.int64)
    for size in reversed(shape):
        if size == 0:
            coords.append(_C.zeros_like(rest))
            continue
        coords.append(rest.remainder(size))
        rest = rest.div(size, rounding_mode="floor")
    return tuple(reversed(coords))


def vander(x, N=None, increasing=False):
    """Powers of a 1-D x as columns (x^(N-1) ... x^0, or increasing), by a running product so
    x = 0 differentiates as torch does."""
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else int(N)
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if n == 0:
        return _C.empty((x.shape[0], 0), dtype=x.dtype, device=x.device)
    dtype = _C.promote_types(x.dtype, _C.int64)
    xs = x.to(dtype).unsqueeze(1)
    columns = _C.cat([_C.ones_like(xs), xs.expand(x.shape[0], n - 1)], 1).cumprod(1)
    return columns if increasing else columns.flip(1)


def diagflat(input, offset=0):
    return _C.diag(input.reshape(-1), offset)


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """input with source's slices reduced into the slices `index` names (prod, mean, amax, amin)."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    d = _wrap(dim, input.dim())
    if index.dim() > 1 or index.numel() != (source.shape[d] if source.dim() else 1):
        raise IndexError("index_reduce_(): Index should have dimension 1 or 0 (got "
                         f"{index.dim()}) and as many entries as source's dimension {dim}")
    shape = [1] * source.dim()
    if source.dim():
        shape[d] = -1
    full = index.reshape(shape).expand_as(source) if source.dim() else index.reshape(())
    return input.scatter_reduce(d, full, source, reduce, include_self=include_self)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * sum_b batch1[b] @ batch2[b], as one matrix product over the
    concatenated batch."""
    if batch1.dim() != 3 or batch2.dim() != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if batch1.dim() != 3 else "batch2 must be a 3D tensor")
    b, n, k = batch1.shape
    if batch2.shape[0] != b or batch2.shape[1] != k:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{b}, {k}] but got: "
                           f"[{batch2.shape[0]}, {batch2.shape[1]}].")
    product = batch1.transpose(0, 1).reshape(n, b * k) @ batch2.reshape(b * k, batch2.shape[2])
    return _combine(input, product, beta, alpha)


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    if vec1.dim() != 1 or vec2.dim() != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {vec1.dim()}-D" if vec1.dim() != 1 else
                           f"addr: Expected 1-D argument vec2, but got {vec2.dim()}-D")
    return _combine(input, _C.outer(vec1, vec2), beta, alpha)


def _combine(input, product, beta, alpha):
    scaled = product if alpha == 1 else product * alpha
    if beta == 0:  # torch ignores input then, NaNs included
        return scaled + _C.zeros_like(input)
    return scaled + (input if beta == 1 else input * beta)


# ---------------------------------------------------------------- small predicates and factories
def is_same_size(input, other):
    return tuple(input.shape) == tuple(other.shape)


def is_signed(input):
    return input.dtype not in (_C.uint8, _C.bool)


def get_device(input):
    return input.device.index if input.device.type != "cpu" else -1


def narrow_copy(input, dim, start, length):
    return input.narrow(dim, start, length).clone()


def fill(input, value):
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"fill only supports 0-dimension value tensor but got tensor with {value.dim()} "
                               "dimensions.")
        return value.to(input.dtype).expand_as(input).clone()
    return _C.full_like(input, value)


def nonzero_static(input, *, size, fill_value=-1):
    """nonzero() padded with fill_value (or truncated) to exactly `size` rows."""
    found = input.nonzero()
    if found.shape[0] >= size:
        return found[:size].clone()
    pad = _C.full((size - found.shape[0], input.dim()), fill_value, dtype=_C.int64, device=input.device)
    return _C.cat([found, pad], 0)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,
                   pin_memory=False):
    """An empty tensor of `size` whose memory order is physical_layout (outermost first)."""
    size = [int(s) for s in size]
    order = [int(p) for p in physical_layout]
    if sorted(order) != list(range(len(size))):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the physical_layout; "
                           f"i.e. len(size) = {len(size)} is not equal to len(physical_layout) = {len(order)}"
                           if len(order) != len(size) else f"Dimension {order} appears more than once in physical_layout")
    t = _C.empty([size[p] for p in order], dtype=dtype, device=device)
    inverse = [order.index(i) for i in range(len(order))]
    return t.permute(inverse).requires_grad_(requires_grad)


# ---------------------------------------------------------------- norms and factorizations (legacy names)
def frobenius_norm(input, dim=(-2, -1), keepdim=False):
    return _ember().linalg.vector_norm(input, 2, dim, keepdim)


def nuclear_norm(input, dim=None, keepdim=False):
    if isinstance(dim, bool):  # nuclear_norm(input, keepdim)
        dim, keepdim = None, dim
    return _ember().linalg.matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim)


def norm_except_dim(v, pow=2, dim=0):
    """The pow-norm over every dimension but dim, shaped to broadcast along dim (weight norm's g)."""
    if dim == -1:
        return v.norm(pow)
    d = _wrap(dim, v.dim())
    kept = v.movedim(d, 0).reshape(v.shape[d], -1).norm(pow, 1)
    shape = [1] * v.dim()
    shape[d] = v.shape[d]
    return kept.reshape(shape)


def lu_solve(b, LU_data, LU_pivots):
    return _ember().linalg.lu_solve(LU_data, LU_pivots, b)


def lu(A, pivot=True, get_infos=False):
    """torch.lu (deprecated): (LU, pivots) or (LU, pivots, infos), as linalg.lu_factor(_ex)."""
    LU, pivots, info = _ember().linalg.lu_factor_ex(A, pivot=pivot, check_errors=not get_infos)
    return (LU, pivots, info) if get_infos else (LU, pivots)


def binomial(count, prob, generator=None):
    """Binomial(count, prob) samples: the number of uniform draws below prob out of count, as one
    comparison over (count.max(), ...) uniforms."""
    if count.shape != prob.shape:
        count, prob = _C.broadcast_tensors(count, prob)
    n = int(count.max()) if count.numel() else 0
    if n == 0:
        return _C.zeros_like(count)
    u = _C.rand((n,) + tuple(count.shape), dtype=prob.dtype, device=prob.device, generator=generator)
    trials = _C.arange(n, device=count.device).reshape((n,) + (1,) * count.dim())
    hits = (u < prob) & (trials < count)
    return hits.sum(0).to(count.dtype)


# ---------------------------------------------------------------- the *_copy forms of view ops
def _copy_of(name):
    def op(input, *args, **kwargs):
        result = getattr(input, name)(*args, **kwargs)
        if isinstance(result, (tuple, list)):
            return type(result)(r.clone() for r in result)
        return result.clone()

    op.__name__ = op.__qualname__ = name + "_copy"
    op.__doc__ = f"torch.{name}_copy: a copy of Tensor.{name}'s view (shares no memory with input)."
    return op


for _view in ("as_strided", "detach", "diagonal", "permute", "select", "split", "squeeze", "t", "transpose",
              "unbind", "unfold", "unsqueeze", "view"):
    globals()[_view + "_copy"] = _copy_of(_view)


def alias_copy(input):
    return input.clone()


def expand_copy(input, size, *, implicit=False):
    return input.expand(size).clone()


def slice_copy(input, dim=0, start=None, end=None, step=1):
    d = _wrap(dim, input.dim())
    return input[(slice(None),) * d + (slice(start, end, step),)].clone()


def split_with_sizes_copy(input, split_sizes, dim=0):
    return [t.clone() for t in split_with_sizes(input, split_sizes, dim)]


def view_as_complex_copy(input):
    return _C.view_as_complex(input).clone()


def view_as_real_copy(input):
    return _C.view_as_real(input).clone()




# ---------------------------------------------------------------- Tensor methods
def _new(self, *args, device=None):
    """Tensor.new (legacy): an uninitialised tensor of the given size, or a tensor of the given
    data, in self's dtype and device."""
    device = self.device if device is None else device
    if len(args) == 1 and isinstance(args[0], Tensor):
        return args[0].to(self.dtype)
    if args and all(isinstance(a, int) for a in args):
        return _C.empty(args, dtype=self.dtype, device=device)
    if len(args) == 1 and isinstance(args[0], _C.Size if hasattr(_C, "Size") else tuple):
        return _C.empty(tuple(args[0]), dtype=self.dtype, device=device)
    if len(args) == 1:
        return _C.tensor(args[0], dtype=self.dtype, device=device)
    return _C.empty(0, dtype=self.dtype, device=device)


def _sum_to_size(self, *size):
    """The sum of self over the dimensions `size` broadcasts to (the reverse of expand)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)) or (len(size) == 1 and hasattr(size[0], "__len__")):
        size = tuple(size[0])
    size = tuple(int(s) for s in size)
    try:
        expandable = _C.broadcast_shapes(size, tuple(self.shape)) == tuple(self.shape)
    except RuntimeError:
        expandable = False
    if not expandable:
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(self.shape)}}}.")
    lead = self.dim() - len(size)
    dims = list(range(lead)) + [lead + i for i, s in enumerate(size) if s == 1 and self.shape[lead + i] != 1]
    result = self.sum(dims, keepdim=True) if dims else self
    return result.reshape(size) if lead else result


def _dim_order(self, *, ambiguity_check=False):
    """Dimensions from outermost to innermost in memory (strides descending, ties by index)."""
    return tuple(sorted(range(self.dim()), key=lambda d: (-self.stride(d), d)))


def _install_methods():
    for name in ("diagonal_scatter", "select_scatter", "slice_scatter", "as_strided_scatter", "split_with_sizes",
                 "unsafe_split", "unsafe_chunk", "unsafe_split_with_sizes", "gcd", "lcm", "nextafter", "mvlgamma",
                 "mode", "histogram", "index_reduce", "addbmm", "addr", "diagflat", "narrow_copy", "is_same_size",
                 "is_signed", "get_device", "nonzero_static", "lu_solve", "lu"):
        if not hasattr(Tensor, name):
            setattr(Tensor, name, globals()[name])
    Tensor.new = _new
    Tensor.sum_to_size = _sum_to_size
    Tensor.dim_order = _dim_order
    Tensor.cfloat = lambda self, memory_format=None: self.to(_C.complex64)
    Tensor.cdouble = lambda self, memory_format=None: self.to(_C.complex128)
    Tensor.H = property(lambda self: self.adjoint() if self.dim() == 2 else _matrix_only(self, "H"))
    Tensor.mH = property(lambda self: self.adjoint())
    Tensor.index_reduce_ = lambda self, dim, index, source, reduce, *, include_self=True: self.copy_(
        index_reduce(self, dim, index, source, reduce, include_self=include_self))
    Tensor.to_dense = lambda self, dtype=None, *, masked_grad=None: self if dtype is None else self.to(dtype)
    Tensor.apply_ = lambda self, callable: _python_map_(self, "apply_", callable)
    Tensor.map_ = lambda self, tensor, callable: _python_map_(self, "map_", callable, tensor)
    Tensor.map2_ = lambda self, x, y, callable: _python_map_(self, "map2_", callable, x, y)
    Tensor.resize = _resize
    Tensor.resize_as = lambda self, tensor: _resize(self, tuple(tensor.shape))
    Tensor.is_set_to = _is_set_to
    # reversed(t) is t flipped along dim 0 (a tensor, as torch's), not an iterator of rows
    Tensor.__reversed__ = lambda self: self if self.dim() == 0 else self.flip(0)
    if not hasattr(Tensor, "layout"):
        Tensor.layout = property(lambda self: _ember().strided)  # ember tensors are all strided (dense)


def _python_map_(self, name, fn, *others):
    """self[i] = fn(self[i], other[i], ...) with Python numbers, in place (CPU tensors only)."""
    if self.requires_grad and _C.is_grad_enabled():
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() instead.")
    if self.device.type != "cpu":
        raise TypeError(f"{name} is only implemented on CPU tensors")
    flat = [self.reshape(-1).tolist()] + [o.expand_as(self).reshape(-1).tolist() for o in others]
    values = [fn(*vals) for vals in zip(*flat)]
    with _ember().no_grad():
        self.copy_(_C.tensor(values, dtype=self.dtype).reshape(self.shape) if values else self)
    return self


def _resize(self, *sizes):
    """Tensor.resize (deprecated, not in place): a reshape that keeps the number of elements."""
    import warnings
    warnings.warn("non-inplace resize is deprecated", stacklevel=2)
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    n = 1
    for s_ in sizes:
        n *= int(s_)
    if n != self.numel():
        shape = "x".join(str(d) for d in self.shape)
        raise RuntimeError(f"requested resize to {'x'.join(str(int(d)) for d in sizes)} ({n} elements in total), but "
                           f"the given tensor has a size of {shape} ({self.numel()} elements). autograd's resize can "
                           "only change the shape of a given tensor, while preserving the number of elements.")
    return self.reshape(tuple(int(d) for d in sizes))


def _is_set_to(self, other):
    """Whether both tensors are the same window of the same memory (start, sizes and strides)."""
    return (self.data_ptr() == other.data_ptr() and tuple(self.shape) == tuple(other.shape)
            and tuple(self.stride()) == tuple(other.stride()) and self.dtype == other.dtype)


def _matrix_only(self, name):
    raise RuntimeError(f"tensor.{name} is only supported on matrices (2-D tensors). Got {self.dim()}-D tensor.")


_install_methods()
