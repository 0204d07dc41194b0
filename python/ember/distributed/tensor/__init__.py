"""Distributed tensors (torch.distributed.tensor): a global tensor laid over a DeviceMesh.

Each mesh dimension has a placement: Shard(d) (the tensor's dim d split in torch.chunk's pieces,
the last ones shorter or empty), Replicate() (the whole extent on every rank of that mesh
dimension) or Partial() (each rank holds a summand). A DTensor is this rank's local tensor plus
that layout; `redistribute` moves between layouts with collectives, `full_tensor()` gathers the
whole tensor everywhere.

Here a DTensor is a container, not a Tensor subclass: ember has no tensor-subclass dispatch, so
math on DTensors is done on `to_local()` pieces (tensor parallelism's plans do exactly that) and
the layout travels with state dicts and distributed checkpoints. redistribute and full_tensor are
not differentiable.
"""
import ember

from ..device_mesh import DeviceMesh, init_device_mesh

__all__ = ["DTensor", "DeviceMesh", "Placement", "Shard", "Replicate", "Partial", "distribute_tensor",
           "init_device_mesh", "chunk_bounds", "local_box", "window"]


class Placement:
    def is_shard(self, dim=None):
        return False

    def is_replicate(self):
        return False

    def is_partial(self, reduce_op=None):
        return False


class Shard(Placement):
    def __init__(self, dim):
        self.dim = dim

    def is_shard(self, dim=None):
        return dim is None or dim == self.dim

    def __eq__(self, other):
        return isinstance(other, Shard) and other.dim == self.dim

    def __hash__(self):
        return hash(("Shard", self.dim))

    def __repr__(self):
        return f"Shard(dim={self.dim})"


class Replicate(Placement):
    def is_replicate(self):
        return True

    def __eq__(self, other):
        return isinstance(other, Replicate)

    def __hash__(self):
        return hash("Replicate")

    def __repr__(self):
        return "Replicate()"


class Partial(Placement):
    def __init__(self, reduce_op="sum"):
        if reduce_op not in ("sum", "avg", "max", "min"):
            raise ValueError(f"Partial: unsupported reduce_op {reduce_op!r}")
        self.reduce_op = reduce_op

    def is_partial(self, reduce_op=None):
        return reduce_op is None or reduce_op == self.reduce_op

    def __eq__(self, other):
        return isinstance(other, Partial) and other.reduce_op == self.reduce_op

    def __hash__(self):
        return hash(("Partial", self.reduce_op))

    def __repr__(self):
        return f"Partial({self.reduce_op})"


def chunk_bounds(n, parts, index):
    """[start, end) of piece `index` when n elements are cut as torch.chunk cuts them."""
    size = -(-n // parts) if n else 0
    start = min(n, index * size)
    return start, min(n, start + size)


def _norm_placements(placements, mesh, ndim):
    placements = list(placements) if placements is not None else [Replicate()] * mesh.ndim
    if len(placements) != mesh.ndim:
        raise ValueError(f"DTensor: expected {mesh.ndim} placements (one per mesh dimension), got {placements}")
    out = []
    for p in placements:
        if not isinstance(p, Placement):
            raise TypeError(f"DTensor: expected Shard/Replicate/Partial placements, got {p!r}")
        if isinstance(p, Shard):
            d = p.dim + ndim if p.dim < 0 else p.dim
            if not 0 <= d < max(ndim, 1):
                raise IndexError(f"DTensor: Shard(dim={p.dim}) is out of range for a {ndim}-d tensor")
            p = Shard(d)
        out.append(p)
    return out


def local_box(shape, mesh, placements, coordinate):
    """(offsets, sizes) of the local piece of a tensor of global `shape` at mesh `coordinate`."""
    offsets, sizes = [0] * len(shape), list(shape)
    for i, p in enumerate(placements):
        if isinstance(p, Shard):
            start, end = chunk_bounds(sizes[p.dim], mesh.size(i), coordinate[i])
            offsets[p.dim] += start
            sizes[p.dim] = end - start
    return offsets, sizes


def window(t, offsets, sizes):
    """t's box at offsets of the given sizes (a view)."""
    for d, (o, s) in enumerate(zip(offsets, sizes)):
        if o != 0 or s != t.shape[d]:
            t = t.narrow(d, o, s)
    return t


_REDUCE = {"sum": "SUM", "avg": "AVG", "max": "MAX", "min": "MIN"}


class DTensor:
    __slots__ = ("_local_tensor", "device_mesh", "placements", "_shape")

    def __init__(self, local_tensor, device_mesh, placements, shape):
        self._local_tensor = local_tensor
        self.device_mesh = device_mesh
        self.placements = tuple(placements)
        self._shape = tuple(shape)

    # ---- construction ------------------------------------------------------------------------

    @staticmethod
    def from_local(local_tensor, device_mesh=None, placements=None, *, run_check=False, shape=None, stride=None):
        mesh = device_mesh
        if mesh is None:
            raise ValueError("DTensor.from_local: pass a device_mesh")
        placements = _norm_placements(placements, mesh, local_tensor.dim())
        if shape is None:  # even pieces: each mesh dimension multiplies its sharded dim
            shape = list(local_tensor.shape)
            for i, p in enumerate(placements):
                if isinstance(p, Shard):
                    shape[p.dim] *= mesh.size(i)
        expected = local_box(list(shape), mesh, placements, mesh.get_coordinate())[1]
        if list(local_tensor.shape) != list(expected):
            raise ValueError(f"DTensor.from_local: the local tensor of shape {tuple(local_tensor.shape)} is not this "
                             f"rank's piece {tuple(expected)} of a global {tuple(shape)} with placements {placements}")
        return DTensor(local_tensor, mesh, placements, shape)

    @staticmethod
    def _from_full(full, mesh, placements):
        """This rank's piece of a tensor every rank holds whole (no communication)."""
        placements = _norm_placements(placements, mesh, full.dim())
        offsets, sizes = local_box(list(full.shape), mesh, placements, mesh.get_coordinate())
        local = window(full, offsets, sizes).clone()
        for i, p in enumerate(placements):
            if isinstance(p, Partial) and mesh.get_coordinate()[i] != 0:
                local.zero_()  # the whole value counted once: on local rank 0 of that mesh dimension
        return DTensor(local, mesh, placements, full.shape)

    # ---- views of the layout -----------------------------------------------------------------

    def to_local(self, *, grad_placements=None):
        return self._local_tensor

    @property
    def shape(self):
        return ember.Size(self._shape)

    def size(self, dim=None):
        return self.shape if dim is None else self._shape[dim]

    def dim(self):
        return len(self._shape)

    @property
    def ndim(self):
        return len(self._shape)

    def numel(self):
        n = 1
        for s in self._shape:
            n *= s
        return n

    @property
    def dtype(self):
        return self._local_tensor.dtype

    @property
    def device(self):
        return self._local_tensor.device

    @property
    def requires_grad(self):
        return self._local_tensor.requires_grad

    def local_offsets(self):
        return local_box(list(self._shape), self.device_mesh, self.placements, self.device_mesh.get_coordinate())[0]

    def detach(self):
        return DTensor(self._local_tensor.detach(), self.device_mesh, self.placements, self._shape)

    def clone(self):
        return DTensor(self._local_tensor.clone(), self.device_mesh, self.placements, self._shape)

    def to(self, *args, **kwargs):
        return DTensor(self._local_tensor.to(*args, **kwargs), self.device_mesh, self.placements, self._shape)

    def cpu(self):
        return self.to("cpu")

    def __repr__(self):
        return (f"DTensor(local_tensor={self._local_tensor!r}, device_mesh={self.device_mesh!r}, "
                f"placements={self.placements})")

    # ---- communication -----------------------------------------------------------------------

    def full_tensor(self, *, grad_placements=None):
        return self.redistribute(self.device_mesh, [Replicate()] * self.device_mesh.ndim).to_local()

    def redistribute(self, device_mesh=None, placements=None, *, async_op=False):
        mesh = device_mesh if device_mesh is not None else self.device_mesh
        if mesh != self.device_mesh:
            raise NotImplementedError("DTensor.redistribute: moving to another mesh is not supported")
        dst = _norm_placements(placements, mesh, self.ndim)
        if tuple(dst) == self.placements:
            return self
        with ember.no_grad():
            full = self._gather_whole()
        return DTensor._from_full(full, mesh, dst)

    def _gather_whole(self):
        """The whole tensor on every rank: undo the placements from the last mesh dimension to the
        first (the order pieces were cut in)."""
        from .. import distributed_c10d as dist
        mesh, t = self.device_mesh, self._local_tensor.contiguous()
        coord = mesh.get_coordinate()
        sizes = list(self._shape)
        # the extent each mesh dimension's piece had before cutting, outermost first
        extents = []
        for i, p in enumerate(self.placements):
            extents.append(list(sizes))
            if isinstance(p, Shard):
                start, end = chunk_bounds(sizes[p.dim], mesh.size(i), coord[i])
                sizes[p.dim] = end - start
        for i in reversed(range(mesh.ndim)):
            p, group = self.placements[i], mesh.get_group(i)
            if isinstance(p, Partial):
                t = t.clone()
                dist.all_reduce(t, op=getattr(dist.ReduceOp, _REDUCE[p.reduce_op]), group=group)
            elif isinstance(p, Shard):
                whole = extents[i][p.dim]
                k = mesh.size(i)
                piece = -(-whole // k) if whole else 0
                moved = t.movedim(p.dim, 0)
                pad = piece - moved.shape[0]
                if pad:
                    moved = ember.cat([moved, ember.zeros((pad,) + tuple(moved.shape[1:]), dtype=t.dtype,
                                                          device=t.device)])
                out = ember.empty((piece * k,) + tuple(moved.shape[1:]), dtype=t.dtype, device=t.device)
                dist.all_gather_into_tensor(out, moved.contiguous(), group=group)
                t = out.narrow(0, 0, whole).movedim(0, p.dim).contiguous()
        return t


def distribute_tensor(tensor, device_mesh=None, placements=None, *, src_data_rank=0):
    """Lays a tensor over the mesh: rank src_data_rank's values (broadcast first), cut by placements."""
    from .. import distributed_c10d as dist
    mesh = device_mesh if device_mesh is not None else init_device_mesh("cpu", (dist.get_world_size(),))
    full = tensor.detach()
    if src_data_rank is not None:
        full = full.contiguous().clone()
        dist.broadcast(full, src=src_data_rank)
    out = DTensor._from_full(full, mesh, placements)
    if tensor.requires_grad:
        out._local_tensor.requires_grad_(True)
    return out
