"""Megatron's four communication steps of tensor parallelism, with the gradients they need when
every rank of the tensor-parallel group computes the same loss (the replicated activations of
single-device training): each is the other's adjoint.

    copy_to      forward: identity          backward: all-reduce (sum)   (into a column-parallel layer)
    reduce_from  forward: all-reduce (sum)  backward: identity           (out of a row-parallel layer)
    gather_from  forward: all-gather dim -1 backward: this rank's chunk  (a column-parallel output made whole)
    scatter_to   forward: this rank's chunk backward: all-gather dim -1  (a whole input cut for a row-parallel layer)
"""
import ember
from ember.autograd import Function

from ... import distributed_c10d as dist


def _all_reduce(t, group):
    t = t.contiguous().clone()
    dist.all_reduce(t, group=group)
    # a new tensor object: the group's worker may still hold the one it wrote, and must never end
    # up owning the autograd graph this result joins (it would release the group on its own thread)
    return t.detach()


def _gather_last(t, group):
    return _gather_dim(t, -1, group)


def _chunk_last(t, group):
    n, r = group.size(), group.rank()
    if t.shape[-1] % n:
        raise ValueError(f"tensor parallel: the last dimension ({t.shape[-1]}) must divide by the group size {n}")
    return t.chunk(n, dim=-1)[r].contiguous()


class _CopyTo(Function):
    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return _all_reduce(g, ctx.group), None


class _ReduceFrom(Function):
    @staticmethod
    def forward(ctx, x, group):
        return _all_reduce(x, group)

    @staticmethod
    def backward(ctx, g):
        return g, None


class _GatherFrom(Function):
    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return _gather_last(x, group)

    @staticmethod
    def backward(ctx, g):
        return _chunk_last(g, ctx.group), None


class _ScatterTo(Function):
    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return _chunk_last(x, group)

    @staticmethod
    def backward(ctx, g):
        return _gather_last(g, ctx.group), None


def copy_to(x, group):
    return _CopyTo.apply(x, group)


def reduce_from(x, group):
    return _ReduceFrom.apply(x, group)


def gather_from(x, group):
    return _GatherFrom.apply(x, group)


def scatter_to(x, group):
    return _ScatterTo.apply(x, group)


def _gather_dim(t, dim, group, fused=1):
    """The whole tensor from each rank's piece along dim (of each of `fused` blocks); no gradient."""
    n = group.size()
    with ember.no_grad():
        pieces = ember.empty((n,) + tuple(t.shape), dtype=t.dtype, device=t.device)
        dist.all_gather_into_tensor(pieces, t.detach().contiguous(), group=group)
        per_rank = [p.chunk(fused, dim=dim) for p in pieces.unbind(0)]
        return ember.cat([per_rank[r][b] for b in range(fused) for r in range(n)], dim=dim)
