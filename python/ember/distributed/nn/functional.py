"""torch.distributed.nn.functional: collectives whose backward runs the adjoint collective, so a
loss computed from their outputs on every rank gives each rank the gradient of the sum of all
ranks' losses (ember::distributed::functional in C++ does the work)."""
import ember

from .. import distributed_c10d as c10d

__all__ = ["all_reduce", "all_gather", "reduce_scatter", "broadcast"]


def _C():
    return ember._C._distributed


def all_reduce(tensor, op=c10d.ReduceOp.SUM, group=None):
    """A new tensor: the reduction over the group (SUM or AVG); backward all-reduces the gradient."""
    return _C().functional_all_reduce(tensor, c10d._group(group)._pg, op)


def all_gather(tensor, group=None):
    """A tuple with every rank's tensor; backward reduce-scatters the gradients."""
    g = c10d._group(group)
    flat = _C().functional_all_gather(tensor.reshape(1, *tensor.shape) if tensor.dim() == 0 else tensor, g._pg)
    rows = 1 if tensor.dim() == 0 else tensor.shape[0]
    parts = [flat[r * rows:(r + 1) * rows] for r in range(g.size())]
    return tuple(p.reshape(tensor.shape) for p in parts)


def reduce_scatter(output, input_list, op=c10d.ReduceOp.SUM, group=None):
    """This rank's reduction of input_list[rank] over the group (also copied into output);
    backward all-gathers the gradients."""
    g = c10d._group(group)
    if len(input_list) != g.size():
        raise ValueError(f"reduce_scatter: input_list has {len(input_list)} tensors, the group {g.size()} ranks")
    flat = ember.cat([t.reshape(1, -1) for t in input_list])
    out = _C().functional_reduce_scatter(flat, g._pg, op).reshape(output.shape)
    with ember.no_grad():
        output.copy_(out)
    return out


def broadcast(tensor, src, group=None):
    """src's tensor on every rank; backward sums the gradients onto src."""
    g = c10d._group(group)
    return _C().functional_broadcast(tensor, c10d.get_group_rank(g, src), g._pg)
