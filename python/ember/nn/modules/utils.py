"""torch.nn.modules.utils: the argument-expanding helpers layer code imports (_pair & co)."""
import collections.abc as _abc
from itertools import repeat as _repeat

__all__ = ["_single", "_pair", "_triple", "_quadruple", "_ntuple", "_reverse_repeat_tuple"]


def _ntuple(n, name="parse"):
    def parse(x):
        if isinstance(x, _abc.Iterable):
            return tuple(x)
        return tuple(_repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n):
    """(a, b) with n=2 -> (b, b, a, a): F.pad's order for a per-dim padding."""
    return tuple(x for x in reversed(t) for _ in range(n))
