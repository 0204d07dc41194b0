"""CatTransform and StackTransform (torch.distributions.transforms): a list of transforms applied to
consecutive slices of one dimension, concatenated (Cat, slices of given lengths) or stacked (Stack,
one index each). Re-exported by transforms.py."""
import ember

from . import constraints
from .transforms import Transform
from .utils import _sum_rightmost, lazy_property

__all__ = ["CatTransform", "StackTransform"]


def _init_parts(self, tseq, cache_size):
    """The shared start of both constructors: the parts checked, cached as asked, stored."""
    if not all(isinstance(t, Transform) for t in tseq):
        raise AssertionError("All elements of tseq must be Transform instances")
    if cache_size:
        tseq = [t.with_cache(cache_size) for t in tseq]
    Transform.__init__(self, cache_size=cache_size)
    self.transforms = list(tseq)


class CatTransform(Transform):
    """The transforms tseq applied to consecutive slices of lengths `lengths` along dim."""

    def __init__(self, tseq, dim=0, lengths=None, cache_size=0):
        _init_parts(self, tseq, cache_size)
        if lengths is None:
            lengths = [1] * len(self.transforms)
        self.lengths = list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match transforms ({len(self.transforms)})")
        self.dim = dim

    @lazy_property
    def event_dim(self):
        return max(t.event_dim for t in self.transforms)

    @lazy_property
    def length(self):
        return sum(self.lengths)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _check(self, t, name):
        if not (-t.dim() <= self.dim < t.dim()):
            raise AssertionError(f"dim {self.dim} out of range for {name} with {t.dim()} dimensions")
        if t.size(self.dim) != self.length:
            raise AssertionError(f"{name}.size({self.dim}) = {t.size(self.dim)} must equal length {self.length}")

    def _call(self, x):
        self._check(x, "x")
        yslices = []
        start = 0
        for trans, length in zip(self.transforms, self.lengths):
            yslices.append(trans(x.narrow(self.dim, start, length)))
            start = start + length
        return ember.cat(yslices, dim=self.dim)

    def _inverse(self, y):
        self._check(y, "y")
        xslices = []
        start = 0
        for trans, length in zip(self.transforms, self.lengths):
            xslices.append(trans.inv(y.narrow(self.dim, start, length)))
            start = start + length
        return ember.cat(xslices, dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        self._check(x, "x")
        self._check(y, "y")
        logdetjacs = []
        start = 0
        for trans, length in zip(self.transforms, self.lengths):
            xslice = x.narrow(self.dim, start, length)
            yslice = y.narrow(self.dim, start, length)
            logdetjac = trans.log_abs_det_jacobian(xslice, yslice)
            if trans.event_dim < self.event_dim:
                logdetjac = _sum_rightmost(logdetjac, self.event_dim - trans.event_dim)
            logdetjacs.append(logdetjac)
            start = start + length
        # concatenate when dim is a batch dim, else sum
        dim = self.dim
        if dim >= 0:
            dim = dim - x.dim()
        dim = dim + self.event_dim
        if dim < 0:
            return ember.cat(logdetjacs, dim=dim)
        return sum(logdetjacs)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """The transforms tseq applied to the slices x.select(dim, i)."""

    def __init__(self, tseq, dim=0, cache_size=0):
        _init_parts(self, tseq, cache_size)
        self.dim = dim

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slice(self, z):
        return [z.select(self.dim, i) for i in range(z.size(self.dim))]

    def _check(self, t, name):
        if not (-t.dim() <= self.dim < t.dim()):
            raise AssertionError(f"dim {self.dim} out of range for {name} with {t.dim()} dimensions")
        if t.size(self.dim) != len(self.transforms):
            raise AssertionError(f"{name}.size({self.dim}) = {t.size(self.dim)} must equal len(transforms) "
                                 f"{len(self.transforms)}")

    def _call(self, x):
        self._check(x, "x")
        return ember.stack([trans(xs) for xs, trans in zip(self._slice(x), self.transforms)], dim=self.dim)

    def _inverse(self, y):
        self._check(y, "y")
        return ember.stack([trans.inv(ys) for ys, trans in zip(self._slice(y), self.transforms)], dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        self._check(x, "x")
        self._check(y, "y")
        logdetjacs = [trans.log_abs_det_jacobian(xs, ys)
                      for xs, ys, trans in zip(self._slice(x), self._slice(y), self.transforms)]
        return ember.stack(logdetjacs, dim=self.dim)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)
