"""torch.* functions that compose existing ember ops (issue 15): index generators, binning and
searching, products and splits, statistics (quantile, cov, corrcoef), integration. Each is
built from differentiable ember ops, so gradients flow where torch has them."""
import math as _math

from . import _C
from ._C import Tensor
from .amp.autocast_mode import _autocast_op

__all__ = ["cartesian_prod", "tril_indices", "triu_indices", "bucketize", "searchsorted", "histc", "isin", "kron",
           "block_diag", "tensordot", "tensor_split", "hsplit", "vsplit", "dsplit", "diag_embed", "quantile",
           "nanquantile", "cov", "corrcoef", "renorm", "dist", "trapezoid", "trapz", "cumulative_trapezoid",
           "scatter_reduce", "poisson", "e", "pi", "inf", "nan", "nanmean", "is_nonzero", "asarray", "frombuffer",
           "unique_consecutive", "ldexp", "frexp", "gradient", "set_num_interop_threads", "get_num_interop_threads"]

e = _math.e
pi = _math.pi
inf = _math.inf
nan = _math.nan


def _wrap(dim, ndim):
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


# ---------------------------------------------------------------- index generators
def cartesian_prod(*tensors):
    """Every combination of the 1-D inputs' elements, one row each (itertools.product order)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for t in tensors:
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = _C.meshgrid(*tensors, indexing="ij")
    return _C.stack([g.flatten() for g in grids], 1)


def _tri_indices(row, col, offset, dtype, device, lower):
    r = _C.arange(row, device=device).unsqueeze(1)
    c = _C.arange(col, device=device).unsqueeze(0)
    mask = (c - r <= offset) if lower else (c - r >= offset)
    return mask.nonzero().t().contiguous().to(dtype)


def tril_indices(row, col, offset=0, *, dtype=_C.int64, device=None, layout=None):
    return _tri_indices(row, col, offset, dtype, device, True)


def triu_indices(row, col, offset=0, *, dtype=_C.int64, device=None, layout=None):
    return _tri_indices(row, col, offset, dtype, device, False)


# ---------------------------------------------------------------- searching and binning
def _as_tensor_like(x, like):
    if isinstance(x, Tensor):
        return x
    return _C.tensor(x, device=like.device if isinstance(like, Tensor) else None)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    """Index of the first sorted element >= value (left) / > value (right) along the last dim."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    scalar = not isinstance(input, Tensor)
    values = _as_tensor_like(input, sorted_sequence)
    seq = sorted_sequence
    if sorter is not None:
        seq = seq.gather(-1, sorter)
    out = _C._searchsorted(seq, values, out_int32, right)  # binary search per value (C++)
    return out.reshape(()) if scalar else out


def bucketize(input, boundaries, *, out_int32=False, right=False):
    if boundaries.dim() != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def histc(input, bins=100, min=0, max=0):
    """Histogram of bins equal-width bins over [min, max] (the data's range when both are 0);
    elements outside are ignored, max itself counts in the last bin."""
    if not input.is_floating_point():
        raise RuntimeError(f"\"histogram_cpu\" not implemented for '{str(input.dtype).split('.')[-1].capitalize()}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histc(): bins must be > 0, but got {bins} for dimension 0")
    lo, hi = float(min), float(max)
    if lo > hi:
        raise RuntimeError(f"torch.histc(): max must be larger than min")
    if lo == hi and input.numel() > 0:
        lo, hi = float(input.min()), float(input.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    x = input.detach().flatten().double()
    x = x[(x >= lo) & (x <= hi)]
    idx = ((x - lo) * (bins / (hi - lo))).floor().long().clamp(0, bins - 1)
    return _C.bincount(idx, minlength=bins)[:bins].to(input.dtype)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin() expects at least one Tensor argument")
    like = elements if isinstance(elements, Tensor) else test_elements
    e = _as_tensor_like(elements, like)
    t = _as_tensor_like(test_elements, like).flatten()
    if t.numel() == 0:
        found = _C.zeros(e.shape, dtype=_C.bool, device=e.device)
    else:
        # O((N + M) log M): each element's insertion point in the sorted test set, then one compare
        dtype = _C.promote_types(e.dtype, t.dtype)
        table, _ = t.to(dtype).sort()
        pos = _C._searchsorted(table, e.to(dtype).reshape(-1), False, False).clamp(max=table.numel() - 1)
        found = (table[pos] == e.to(dtype).reshape(-1)).reshape(e.shape)
    return found.logical_not() if invert else found


# ---------------------------------------------------------------- products and block matrices
def kron(input, other):
    nd = _max(input.dim(), other.dim())
    a = input.reshape((1,) * (nd - input.dim()) + tuple(input.shape))
    b = other.reshape((1,) * (nd - other.dim()) + tuple(other.shape))
    a_shape = [s for d in a.shape for s in (d, 1)]
    b_shape = [s for d in b.shape for s in (1, d)]
    out = a.reshape(a_shape) * b.reshape(b_shape)
    return out.reshape([x * y for x, y in zip(a.shape, b.shape)])


def _max(a, b):
    return a if a >= b else b


def block_diag(*tensors):
    """The inputs (0-, 1- or 2-D) as blocks down the diagonal of one matrix, zeros elsewhere."""
    from .nn import functional as F
    blocks = []
    for i, t in enumerate(tensors):
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.dim()} dimensions")
        blocks.append(t.reshape(1, 1) if t.dim() == 0 else t.reshape(1, -1) if t.dim() == 1 else t)
    if not blocks:
        return _C.empty(1, 0)
    dtype = blocks[0].dtype
    for b in blocks[1:]:
        dtype = _C.promote_types(dtype, b.dtype)
    total_cols = sum(b.shape[1] for b in blocks)
    rows, col = [], 0
    for b in blocks:
        w = b.shape[1]
        rows.append(F.pad(b.to(dtype), (col, total_cols - col - w)))
        col += w
    return _C.cat(rows, 0)


@_autocast_op("tensordot")
def tensordot(a, b, dims=2, out=None):
    """Sum over the products of a's dims_a and b's dims_b: dims = n (a's last n with b's first
    n) or a pair of lists."""
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        dims_a = list(range(a.dim() - dims, a.dim()))
        dims_b = list(range(dims))
    else:
        dims_a, dims_b = dims
        dims_a = [dims_a] if isinstance(dims_a, int) else list(dims_a)
        dims_b = [dims_b] if isinstance(dims_b, int) else list(dims_b)
    if len(dims_a) != len(dims_b):
        raise RuntimeError("both dimension lists should have same length")
    dims_a = [_wrap(d, a.dim()) for d in dims_a]
    dims_b = [_wrap(d, b.dim()) for d in dims_b]
    for da, db in zip(dims_a, dims_b):
        if a.shape[da] != b.shape[db]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[da]} in dim {da} "
                               f"and second has size {b.shape[db]} in dim {db}")
    free_a = [d for d in range(a.dim()) if d not in dims_a]
    free_b = [d for d in range(b.dim()) if d not in dims_b]
    k = 1
    for d in dims_a:
        k *= a.shape[d]
    left = a.permute(free_a + dims_a).reshape(-1, k)
    right = b.permute(dims_b + free_b).reshape(k, -1)
    result = (left @ right).reshape([a.shape[d] for d in free_a] + [b.shape[d] for d in free_b])
    if out is not None:
        if tuple(out.shape) != tuple(result.shape):
            raise RuntimeError(f"tensordot: out has shape {list(out.shape)}, expected {list(result.shape)}")
        out.copy_(result)
        return out
    return result


# ---------------------------------------------------------------- splits
def tensor_split(input, indices_or_sections, dim=0):
    """Views of input split along dim into n near-equal parts (the first size % n one longer) or
    at the given indices."""
    d = _wrap(dim, input.dim())
    if input.dim() == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    size = input.shape[d]
    if isinstance(indices_or_sections, Tensor):
        if indices_or_sections.dim() == 0:
            indices_or_sections = int(indices_or_sections)
        else:
            indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        base, extra = divmod(size, n)
        bounds, start = [], 0
        for i in range(n):
            length = base + (1 if i < extra else 0)
            bounds.append((start, start + length))
            start += length
    else:
        points = [0] + [int(i) for i in indices_or_sections] + [size]
        bounds = []
        for s, e in zip(points[:-1], points[1:]):
            s = _min(_max(s if s >= 0 else s + size, 0), size)
            e = _min(_max(e if e >= 0 else e + size, 0), size)
            bounds.append((s, _max(s, e)))
    return tuple(input.narrow(d, s, e - s) for s, e in bounds)


def _min(a, b):
    return a if a <= b else b


def _direction_split(name, input, indices_or_sections, dim, min_dims):
    if input.dim() < min_dims:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} dimension, but got a tensor "
                           f"with {input.dim()} dimensions!")
    if isinstance(indices_or_sections, int):
        size = input.shape[dim]
        if indices_or_sections == 0 or size % indices_or_sections != 0:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the size of the dimension "
                               f"{size} is not divisible by the split_size {indices_or_sections}!")
    return tensor_split(input, indices_or_sections, dim)


def hsplit(input, indices_or_sections):
    return _direction_split("hsplit", input, indices_or_sections, 1 if input.dim() > 1 else 0, 1)


def vsplit(input, indices_or_sections):
    return _direction_split("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input, indices_or_sections):
    return _direction_split("dsplit", input, indices_or_sections, 2, 3)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Batches of diagonal matrices: the last dim of input becomes the offset-th diagonal of the
    planes spanned by output dims dim1 and dim2."""
    from .nn import functional as F
    out_dims = input.dim() + 1
    d1, d2 = _wrap(dim1, out_dims), _wrap(dim2, out_dims)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = input.shape[-1]
    eye = _C.eye(n, dtype=input.dtype, device=input.device)
    square = input.unsqueeze(-1) * eye  # (..., n, n), input on the main diagonal
    k = abs(offset)
    if offset > 0:
        square = F.pad(square, (k, 0, 0, k))
    elif offset < 0:
        square = F.pad(square, (0, k, k, 0))
    return square.movedim((-2, -1), (d1, d2))


# ---------------------------------------------------------------- statistics
def _quantile(name, input, q, dim, keepdim, interpolation, ignore_nan):
    if not input.is_floating_point():
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if interpolation not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise ValueError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest. "
                         f"Got {interpolation}")
    scalar_q = not isinstance(q, Tensor)
    qt = _C.tensor(q, dtype=input.dtype, device=input.device) if scalar_q else q
    if qt.dim() > 1:
        raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
    if qt.dtype != input.dtype:
        raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
    if qt.numel() and (bool((qt < 0).any()) or bool((qt > 1).any())):
        raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    if input.numel() == 0 and dim is None:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    q1 = qt.reshape(-1)
    if dim is None:
        x = input.reshape(-1)
        d = 0
    else:
        d = _wrap(dim, input.dim())
        x = input if input.dim() > 0 else input.reshape(1)
    moved = x.movedim(d, -1)
    sorted_vals, _ = moved.sort(-1)  # NaN sorts last
    n = moved.shape[-1]
    nan_mask = moved.isnan()
    if ignore_nan:
        count = (~nan_mask).sum(-1, keepdim=True).to(input.dtype)
    else:
        count = _C.full(moved.shape[:-1] + (1,), float(n), dtype=input.dtype, device=input.device)
    ranks = q1 * (count - 1)  # (..., Q)
    if interpolation == "lower":
        ranks = ranks.floor()
    elif interpolation == "higher":
        ranks = ranks.ceil()
    elif interpolation == "nearest":
        ranks = ranks.round()
    ranks = ranks.clamp(min=0)
    lo = ranks.floor().long().clamp(0, _max(n - 1, 0))
    hi = ranks.ceil().long().clamp(0, _max(n - 1, 0))
    v_lo = sorted_vals.gather(-1, lo)
    v_hi = sorted_vals.gather(-1, hi)
    if interpolation == "midpoint":
        result = v_lo + (v_hi - v_lo) * 0.5
    else:
        result = v_lo + (v_hi - v_lo) * (ranks - ranks.floor())
    if ignore_nan:
        result = _C.where(count == 0, _C.full_like(result, float("nan")), result)
    else:
        result = _C.where(nan_mask.any(-1, keepdim=True), _C.full_like(result, float("nan")), result)
    result = result.movedim(-1, 0)  # (Q, ...)
    if keepdim:
        if dim is None:
            result = result.reshape((q1.numel(),) + (1,) * input.dim())
        else:
            result = result.unsqueeze(d + 1) if input.dim() > 0 else result
    if scalar_q or qt.dim() == 0:
        result = result.squeeze(0)
    return result


@_autocast_op("quantile")
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


@_autocast_op("nanquantile")
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


def cov(input, *, correction=1, fweights=None, aweights=None):
    """Covariance of the rows (variables) over the columns (observations), optionally weighted."""
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    x = input.reshape(1, -1) if input.dim() < 2 else input
    if not x.is_floating_point():
        x = x.to(_C.get_default_dtype())
    n_obs = x.shape[1]
    w = None
    if fweights is not None:
        if fweights.is_floating_point():
            raise RuntimeError("cov(): expected fweights to have integral dtype")
        if fweights.dim() > 1 or fweights.numel() != n_obs:
            raise RuntimeError(f"cov(): expected fweights to have the same numel as there are observations in the "
                               f"input but got {fweights.numel()} != {n_obs}")
        if bool((fweights < 0).any()):
            raise RuntimeError(f"cov(): fweights cannot be negative")
        w = fweights.to(x.dtype)
    if aweights is not None:
        if not aweights.is_floating_point():
            raise RuntimeError("cov(): expected aweights to have floating point dtype")
        if aweights.dim() > 1 or aweights.numel() != n_obs:
            raise RuntimeError(f"cov(): expected aweights to have the same numel as there are observations in the "
                               f"input but got {aweights.numel()} != {n_obs}")
        if bool((aweights < 0).any()):
            raise RuntimeError(f"cov(): aweights cannot be negative")
        w = aweights.to(x.dtype) if w is None else w * aweights.to(x.dtype)
    if w is None:
        w_sum = _C.tensor(float(n_obs), dtype=x.dtype, device=x.device)
        avg = x.mean(1)
    else:
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
    if w is None or aweights is None:
        norm = w_sum - correction
    else:
        norm = w_sum - correction * (w * aweights.to(x.dtype)).sum() / w_sum
    norm = norm.clamp(min=0)
    centered = x - avg.unsqueeze(1)
    weighted = centered if w is None else centered * w
    c = (weighted @ centered.t()) / norm
    return c.squeeze()


def corrcoef(input):
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = c.diagonal()
    stddev = d.sqrt()
    c = c / stddev.unsqueeze(1)
    c = c / stddev.unsqueeze(0)
    return c.clamp(-1, 1)


@_autocast_op("renorm")
def renorm(input, p, dim, maxnorm):
    """Each slice along dim whose p-norm exceeds maxnorm is scaled down to norm maxnorm."""
    d = _wrap(dim, input.dim())
    if p <= 0:
        raise RuntimeError(f"renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    others = [i for i in range(input.dim()) if i != d]
    norms = input.norm(p, others, keepdim=True) if others else input.abs()
    factor = _C.where(norms > maxnorm, maxnorm / (norms + 1e-7), _C.ones_like(norms))
    return input * factor


@_autocast_op("dist")
def dist(input, other, p=2):
    return (input - other).norm(p)


# ---------------------------------------------------------------- integration
def _spacing(y, x, dx, dim):
    d = _wrap(dim, y.dim())
    if x is None:
        return (1.0 if dx is None else dx), d
    if isinstance(x, (int, float)):
        return float(x), d
    if x.dim() == 1:
        if x.numel() != y.shape[d]:
            raise RuntimeError(f"trapezoid: There must be one `x` value for each sample point")
        spacing = x.diff()
        shape = [1] * y.dim()
        shape[d] = spacing.numel()
        return spacing.reshape(shape), d
    return x.diff(dim=d), d


def trapezoid(y, x=None, *, dx=None, dim=-1):
    spacing, d = _spacing(y, x, dx, dim)
    n = y.shape[d]
    if n == 0:
        return y.sum(d)
    avg = (y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)) * 0.5
    return (avg * spacing).sum(d)


def trapz(y, x=None, *, dx=None, dim=-1):
    if isinstance(x, (int, float)) and dx is None:
        return trapezoid(y, dx=x, dim=dim)
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    spacing, d = _spacing(y, x, dx, dim)
    n = y.shape[d]
    avg = (y.narrow(d, 1, _max(n - 1, 0)) + y.narrow(d, 0, _max(n - 1, 0))) * 0.5
    return (avg * spacing).cumsum(d)


# ---------------------------------------------------------------- scatter_reduce
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """out[..., index[i], ...] = reduce(over i, of src[i]) along dim, starting from input's value
    (include_self) or from the reduced values alone. reduce: sum, prod, mean, amax, amin."""
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    d = _wrap(dim, input.dim())
    src = src.to(input.dtype)
    if tuple(index.shape) != tuple(src.shape):
        src = src[tuple(slice(0, s) for s in index.shape)]
    hit = _C.zeros(input.shape, dtype=input.dtype, device=input.device).scatter_add(
        d, index, _C.ones(index.shape, dtype=input.dtype, device=input.device))
    touched = hit > 0
    if reduce in ("sum", "mean"):
        base = input if include_self else _C.where(touched, _C.zeros_like(input), input)
        total = base.scatter_add(d, index, src)
        if reduce == "sum":
            return total
        count = hit + (1 if include_self else 0)
        mean = total / count.clamp(min=1)
        if not input.is_floating_point():
            mean = (total.div(count.clamp(min=1), rounding_mode="floor"))
        return _C.where(touched, mean.to(input.dtype), input)
    # amax / amin / prod: visit the (target, value) pairs grouped by target through one sort.
    pos = _target_positions(input, d, index)
    flat_src = src.reshape(-1)
    out = input.reshape(-1).clone()
    if reduce == "prod":
        order = pos.argsort(stable=True)
        p, v = pos[order], flat_src[order]
        result = out if include_self else _C.where(touched.reshape(-1), _C.ones_like(out), out)
        # one multiply per position (the position's count-th pass handles its count-th element)
        rank = _C.arange(p.numel(), device=p.device) - _first_index(p)
        for r in range(int(rank.max()) + 1 if rank.numel() else 0):
            sel = rank == r
            result = result.index_put((p[sel],), result[p[sel]] * v[sel])
        return result.reshape(input.shape)
    descending = reduce == "amax"
    by_value = flat_src.argsort(descending=descending, stable=True)
    order = by_value[pos[by_value].argsort(stable=True)]
    p, v = pos[order], flat_src[order]
    first = _C.ones(p.shape, dtype=_C.bool, device=p.device)
    if p.numel() > 1:
        first[1:] = p[1:] != p[:-1]
    best_pos, best_val = p[first], v[first]
    current = out[best_pos]
    if include_self:
        best_val = _C.maximum(best_val, current) if descending else _C.minimum(best_val, current)
    out = out.index_put((best_pos,), best_val)
    return out.reshape(input.shape)


def _first_index(p):
    """For sorted positions p, the index where each run of equal values starts, per element."""
    starts = _C.ones(p.shape, dtype=_C.bool, device=p.device)
    if p.numel() > 1:
        starts[1:] = p[1:] != p[:-1]
    idx = _C.where(starts, _C.arange(p.numel(), device=p.device), _C.zeros_like(p))
    return idx.cummax(0)[0]


def _target_positions(input, d, index):
    """Flat position in input of every element's target (index along d, own coordinates elsewhere)."""
    strides = input.contiguous().stride()
    pos = index.long() * strides[d]
    for k in range(index.dim()):
        if k == d:
            continue
        shape = [1] * index.dim()
        shape[k] = index.shape[k]
        pos = pos + (_C.arange(index.shape[k], device=index.device) * strides[k]).reshape(shape)
    return pos.reshape(-1)



# ---------------------------------------------------------------- poisson sampling
def poisson(input, generator=None):
    """One Poisson(rate) draw per element of input (rates >= 0), in input's dtype, without
    gradient (as torch). Rates below 10: Knuth's product of uniforms; from 10 up: Hoermann's
    transformed rejection with squeeze (PTRS, 1993). Both loop only over undecided elements."""
    from .autograd.grad_mode import no_grad
    if not input.is_floating_point():
        raise RuntimeError(f"\"poisson_cpu\" not implemented for '{str(input.dtype).split('.')[-1].capitalize()}'")
    with no_grad():
        lam = input.detach().double().flatten()
        if bool((lam < 0).any()) or bool(lam.isnan().any()):
            raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
        out = _C.zeros_like(lam)
        dev = lam.device

        def uniform(n):
            return _C.rand(n, dtype=_C.float64, device=dev, generator=generator)

        small = (lam < 10).nonzero().flatten()
        if small.numel():
            limit = (-lam[small]).exp()
            prod = uniform(small.numel())
            count = _C.zeros(small.numel(), dtype=_C.float64, device=dev)
            running = prod > limit
            while bool(running.any()):
                idx = running.nonzero().flatten()
                prod[idx] = prod[idx] * uniform(idx.numel())
                count[idx] = count[idx] + 1
                running = prod > limit
            out[small] = count
        pending = (lam >= 10).nonzero().flatten()
        if pending.numel():
            rate = lam[pending]
            slam, loglam = rate.sqrt(), rate.log()
            b = 0.931 + 2.53 * slam
            a = -0.059 + 0.02483 * b
            invalpha = 1.1239 + 1.1328 / (b - 3.4)
            vr = 0.9277 - 3.6224 / (b - 2)
            todo = _C.arange(pending.numel(), device=dev)
            while todo.numel():
                n = todo.numel()
                u = uniform(n) - 0.5
                v = uniform(n)
                us = 0.5 - u.abs()
                k = ((2 * a[todo] / us + b[todo]) * u + rate[todo] + 0.43).floor()
                quick = (us >= 0.07) & (v <= vr[todo])
                possible = (k >= 0) & ~((us < 0.013) & (v > us))
                log_ratio = v.log() + invalpha[todo].log() - (a[todo] / (us * us) + b[todo]).log()
                target = -rate[todo] + k * loglam[todo] - _C.lgamma(k.clamp(min=0) + 1)
                accept = quick | (possible & (log_ratio <= target))
                out[pending[todo[accept]]] = k[accept]
                todo = todo[~accept]
        return out.reshape(input.shape).to(input.dtype)

# Tensor methods torch has for these (x.quantile(0.5), x.tensor_split(3), ...), unless the C++
# binding already provides one.
for _name in ("tensor_split", "hsplit", "vsplit", "dsplit", "kron", "diag_embed", "quantile", "nanquantile", "cov",
              "corrcoef", "renorm", "dist", "histc", "scatter_reduce"):
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, globals()[_name])


# ---------------------------------------------------------------- small torch.* odds and ends
def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """The mean of the non-NaN elements (NaN where there are none)."""
    if not input.is_floating_point():
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got {input.dtype}")
    x = input if dtype is None else input.to(dtype)
    count = x.isnan().logical_not().sum(dim, keepdim) if dim is not None else x.isnan().logical_not().sum()
    total = x.nansum(dim, keepdim) if dim is not None else x.nansum()
    return total / count


def is_nonzero(input):
    if input.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if input.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item() != 0)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """torch.asarray: shares a tensor's memory unless a copy, dtype or device change is asked for."""
    if isinstance(obj, Tensor):
        out = obj
        if dtype is not None or device is not None:
            out = out.to(device=device if device is not None else out.device, dtype=dtype or out.dtype)
        if copy and out is obj:
            out = out.clone()
    else:
        out = _C.as_tensor(obj, dtype=dtype, device=device) if not copy else _C.tensor(obj, dtype=dtype,
                                                                                         device=device)
    if requires_grad:
        out.requires_grad_(True)
    return out


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor over a Python buffer's bytes (the bytes are copied: ember tensors own their
    memory; torch shares them)."""
    import numpy as _np
    np_dtype = {_C.float32: _np.float32, _C.float64: _np.float64, _C.float16: _np.float16, _C.int64: _np.int64,
                _C.int32: _np.int32, _C.int16: _np.int16, _C.int8: _np.int8, _C.uint8: _np.uint8,
                _C.bool: _np.bool_}.get(dtype)
    if np_dtype is None:
        raise TypeError(f"frombuffer: unsupported dtype {dtype}")
    mem = memoryview(buffer)
    nbytes = mem.nbytes - offset
    item = _np.dtype(np_dtype).itemsize
    if offset < 0 or offset >= mem.nbytes:
        raise ValueError(f"both buffer length ({mem.nbytes}) and offset ({offset}) must be greater than 0 and "
                         "offset must be smaller than buffer length")
    if count <= 0 and nbytes % item != 0:
        raise ValueError(f"buffer length ({nbytes} bytes) after offset ({offset} bytes) must be a multiple of "
                         f"element size ({item})")
    arr = _np.frombuffer(buffer, dtype=np_dtype, count=count, offset=offset)
    out = _C.tensor(arr.copy(), dtype=dtype)
    if requires_grad:
        out.requires_grad_(True)
    return out


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Removes runs of equal consecutive elements (flattened, or along `dim`)."""
    if dim is None:
        x = input.reshape(-1)
        n = x.numel()
        if n == 0:
            out = x.clone()
            extras = [_C.zeros([0] if dim is None else list(input.shape), dtype=_C.int64, device=input.device)]
            res = [out]
            if return_inverse:
                res.append(_C.zeros(list(input.shape), dtype=_C.int64, device=input.device))
            if return_counts:
                res.append(extras[0])
            return res[0] if len(res) == 1 else tuple(res)
        starts = _C.ones([n], dtype=_C.bool, device=input.device)
        if n > 1:
            starts[1:] = x[1:] != x[:-1]
        out = x[starts]
        group = starts.to(_C.int64).cumsum(0) - 1
        res = [out]
        if return_inverse:
            res.append(group.reshape(input.shape))
        if return_counts:
            res.append(_C.zeros([out.numel()], dtype=_C.int64, device=input.device).index_add_(
                0, group, _C.ones([n], dtype=_C.int64, device=input.device)))
        return res[0] if len(res) == 1 else tuple(res)
    d = _wrap(dim, input.dim())
    x = input.movedim(d, 0)
    n = x.size(0)
    flat = x.reshape(n, -1)
    starts = _C.ones([n], dtype=_C.bool, device=input.device)
    if n > 1:
        starts[1:] = (flat[1:] != flat[:-1]).any(1)
    out = x[starts].movedim(0, d)
    group = starts.to(_C.int64).cumsum(0) - 1
    res = [out]
    if return_inverse:
        res.append(group)
    if return_counts:
        res.append(_C.zeros([int(starts.sum())], dtype=_C.int64, device=input.device).index_add_(
            0, group, _C.ones([n], dtype=_C.int64, device=input.device)))
    return res[0] if len(res) == 1 else tuple(res)


def ldexp(input, other):
    """input * 2 ** other."""
    return input * _C.pow(2.0, other.to(input.dtype if input.is_floating_point() else _C.float32))


def _torch_range(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """Deprecated torch.range: [start, end] inclusive, in the default float dtype."""
    import warnings as _warnings
    _warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior is "
                   "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                   "[start, end).", UserWarning, stacklevel=2)
    if end is None:
        start, end = 0, start
    n = int(_math.floor((end - start) / step)) + 1
    out = _C.arange(n, dtype=dtype or _C.get_default_dtype(), device=device) * step + start
    if requires_grad:
        out.requires_grad_(True)
    return out


_interop_threads = [1]


def set_num_interop_threads(n):
    """ember runs ops one after another on the calling thread (there is no inter-op pool); the
    value is kept for get_num_interop_threads, as torch's setting."""
    if not isinstance(n, int) or n <= 0:
        raise RuntimeError("Expected positive number of threads")
    _interop_threads[0] = n


def get_num_interop_threads():
    return _interop_threads[0]


def frexp(input):
    """(mantissa, exponent) with input = mantissa * 2 ** exponent, 0.5 <= |mantissa| < 1
    (zero: (0, 0); inf and nan keep their value with exponent 0), as C's frexp."""
    if not input.is_floating_point():
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    x = input.to(_C.float64)
    finite = x.isfinite().logical_and(x != 0)
    safe = _C.where(finite, x.abs(), _C.ones_like(x))
    e = (safe.log2().floor() + 1)
    m = safe / _C.pow(2.0, e)
    # log2 can land one off next to a power of two: bring the mantissa into [0.5, 1)
    up = m >= 1
    e = _C.where(up, e + 1, e)
    m = _C.where(up, m / 2, m)
    down = m < 0.5
    e = _C.where(down, e - 1, e)
    m = _C.where(down, m * 2, m)
    mantissa = _C.where(finite, m * x.sign(), x).to(input.dtype)
    exponent = _C.where(finite, e, _C.zeros_like(e)).to(_C.int32)
    return mantissa, exponent


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Estimates the gradient of a sampled function along each dim (torch.gradient): central
    differences inside (second-order accurate, also for uneven coordinates), one-sided ones
    of order edge_order at the ends. Returns one tensor per differentiated dim."""
    if edge_order not in (1, 2):
        raise RuntimeError(f"torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = list(range(input.dim())) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    dims = [_wrap(d, input.dim()) for d in dims]
    if isinstance(spacing, (int, float)) or (isinstance(spacing, Tensor) and spacing.dim() == 0):
        spacing = [spacing] * len(dims)
    elif isinstance(spacing, (list, tuple)) and len(spacing) == 1 and len(dims) > 1 and \
            not isinstance(spacing[0], Tensor):
        spacing = list(spacing) * len(dims)
    if len(spacing) != len(dims):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
                           f"arguments to have the same length, but got a spacing argument of length "
                           f"{len(spacing)} and a dim argument of length {len(dims)}.")
    x = input if input.is_floating_point() else input.to(_C.get_default_dtype())
    out = []
    for d, h in zip(dims, spacing):
        n = x.size(d)
        if n < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
        f = x.movedim(d, -1)
        if isinstance(h, Tensor) and h.dim() == 1:
            c = h.to(x.dtype)
            if c.numel() != n:
                raise RuntimeError(f"torch.gradient expected each tensor to be on the same device and the same "
                                   f"size as the input along dim {d}")
            dx = c[1:] - c[:-1]
            hl, hr = dx[:-1], dx[1:]
            inner = (hl * hl * f[..., 2:] - hr * hr * f[..., :-2] + (hr * hr - hl * hl) * f[..., 1:-1]) / \
                (hl * hr * (hl + hr))
            if edge_order == 1:
                first = (f[..., 1:2] - f[..., 0:1]) / dx[0]
                last = (f[..., -1:] - f[..., -2:-1]) / dx[-1]
            else:
                a, b = dx[0], dx[1]
                first = (-(2 * a + b) / (a * (a + b)) * f[..., 0:1] + (a + b) / (a * b) * f[..., 1:2]
                         - a / (b * (a + b)) * f[..., 2:3])
                a, b = dx[-1], dx[-2]
                last = ((2 * a + b) / (a * (a + b)) * f[..., -1:] - (a + b) / (a * b) * f[..., -2:-1]
                        + a / (b * (a + b)) * f[..., -3:-2])
        else:
            hv = float(h)
            inner = (f[..., 2:] - f[..., :-2]) / (2 * hv)
            if edge_order == 1:
                first = (f[..., 1:2] - f[..., 0:1]) / hv
                last = (f[..., -1:] - f[..., -2:-1]) / hv
            else:
                first = (-1.5 * f[..., 0:1] + 2 * f[..., 1:2] - 0.5 * f[..., 2:3]) / hv
                last = (0.5 * f[..., -3:-2] - 2 * f[..., -2:-1] + 1.5 * f[..., -1:]) / hv
        out.append(_C.cat([first, inner, last], -1).movedim(-1, d))
    return tuple(out)
