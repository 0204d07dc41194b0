"""torch.distributed's process-group API (init_process_group, the collectives, groups, object
collectives) over ember._C._distributed. The C++ groups do the work; this file keeps what
torch's Python layer keeps: the default group, the global <-> group rank maps, and the
argument forms (tensor lists, async_op, global src/dst ranks)."""
import datetime
import io
import os
import pickle
from urllib.parse import urlparse

import ember
from ember._C import _distributed as _C

__all__ = [
    "Backend", "ReduceOp", "Store", "TCPStore", "FileStore", "PrefixStore", "Work", "ProcessGroup", "GroupMember",
    "group", "DistError", "DistStoreError", "DistNetworkError", "DistBackendError",
    "init_process_group", "destroy_process_group", "is_initialized", "is_gloo_available", "is_nccl_available",
    "is_torchelastic_launched", "get_rank", "get_world_size", "get_backend", "new_group", "get_global_rank",
    "get_group_rank", "get_process_group_ranks", "all_reduce", "broadcast", "reduce", "all_gather",
    "all_gather_into_tensor", "gather", "scatter", "reduce_scatter", "reduce_scatter_tensor", "all_to_all",
    "all_to_all_single", "barrier", "send", "recv", "isend", "irecv", "all_gather_object",
    "broadcast_object_list", "gather_object", "scatter_object_list",
]

Store, TCPStore, FileStore, PrefixStore, Work = _C.Store, _C.TCPStore, _C.FileStore, _C.PrefixStore, _C.Work
DistError, DistStoreError = _C.DistError, _C.DistStoreError
DistNetworkError, DistBackendError = _C.DistNetworkError, _C.DistBackendError
ReduceOp = _C.ReduceOp
default_pg_timeout = datetime.timedelta(minutes=30)


class Backend(str):
    """Backend names, as torch.distributed.Backend ("gloo", "nccl")."""
    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"

    def __new__(cls, name):
        value = name.lower()
        if value not in ("gloo", "nccl", "cpu:gloo", "cuda:nccl", "cpu:gloo,cuda:nccl"):
            raise ValueError(f"Invalid backend: '{name}' (expected 'gloo' or 'nccl')")
        return str.__new__(cls, value)


class ProcessGroup:
    """A group of processes: the C++ group and the global ranks of its members."""

    def __init__(self, pg, ranks, backend):
        self._pg, self._ranks, self._backend = pg, list(ranks), backend

    def rank(self):
        return self._pg.rank()

    def size(self):
        return self._pg.size()

    def name(self):
        return self._pg.name()

    def __repr__(self):
        return f"ProcessGroup(name={self.name()!r}, backend={self._backend!r}, ranks={self._ranks})"


class GroupMember:
    WORLD = None  # the default group once initialised
    NON_GROUP_MEMBER = object()  # what new_group returns to processes outside the group


class group:  # noqa: N801 (torch's spelling: dist.group.WORLD)
    WORLD = None


_state = {"store": None, "groups": 0}


def is_gloo_available():
    return True


def is_nccl_available():
    """Whether this build has the NCCL backend (a CUDA build that found libnccl)."""
    return _C.backend_available("nccl")


def is_torchelastic_launched():
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def is_initialized():
    return GroupMember.WORLD is not None


def _default():
    if GroupMember.WORLD is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return GroupMember.WORLD


def _group(g):
    if g is None or g is group.WORLD:
        return _default()
    if g is GroupMember.NON_GROUP_MEMBER:
        raise ValueError("this process is not a member of the group it passed")
    return g


def _env_int(name, given):
    if given is not None and given >= 0:
        return given
    if name not in os.environ:
        raise ValueError(f"Error initializing torch.distributed using env:// rendezvous: environment variable "
                         f"{name} expected, but not set")
    return int(os.environ[name])


def _timedelta(timeout):
    return default_pg_timeout if timeout is None else timeout


def _gloo_host(master_addr):
    """The address this process's Gloo connections listen on: loopback for a loopback master."""
    if master_addr in ("localhost", "127.0.0.1", "::1") or master_addr.startswith("127."):
        return "127.0.0.1"
    return ""


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """Joins the job's default process group (torch.distributed.init_process_group)."""
    if GroupMember.WORLD is not None:
        raise ValueError("trying to initialize the default process group twice!")
    backend = Backend(backend or "gloo")
    if backend not in ("gloo", "nccl"):
        raise ValueError(f"init_process_group: backend {backend!r}: ember takes one backend per group, 'gloo' or "
                         "'nccl'")
    if backend == "nccl" and not is_nccl_available():
        raise RuntimeError("init_process_group: backend 'nccl' is not built into this ember (it needs a CUDA build "
                           "that found libnccl); 'gloo' also moves CUDA tensors, through host memory")
    timeout = _timedelta(timeout)
    master_addr = os.environ.get("MASTER_ADDR", "127.0.0.1")
    if store is None:
        init_method = init_method or "env://"
        url = urlparse(init_method)
        if url.scheme == "env":
            rank, world_size = _env_int("RANK", rank), _env_int("WORLD_SIZE", world_size)
            master_addr = os.environ.get("MASTER_ADDR")
            if master_addr is None or "MASTER_PORT" not in os.environ:
                raise ValueError("Error initializing torch.distributed using env:// rendezvous: environment "
                                 "variables MASTER_ADDR and MASTER_PORT expected, but not set")
            store = TCPStore(master_addr, int(os.environ["MASTER_PORT"]), world_size, rank == 0, timeout)
        elif url.scheme == "tcp":
            if rank < 0 or world_size < 1:
                raise ValueError("init_process_group: tcp:// needs rank and world_size")
            master_addr = url.hostname
            store = TCPStore(url.hostname, url.port, world_size, rank == 0, timeout)
        elif url.scheme == "file":
            if rank < 0 or world_size < 1:
                raise ValueError("init_process_group: file:// needs rank and world_size")
            store = FileStore(url.path, world_size, timeout)
        else:
            raise ValueError(f"init_process_group: unknown init_method {init_method!r} (env://, tcp://, file://)")
    elif rank < 0 or world_size < 1:
        raise ValueError("init_process_group: a store needs rank and world_size")
    if not 0 <= rank < world_size:
        raise ValueError(f"init_process_group: rank {rank} is not in [0, world_size = {world_size})")
    pg = _C.new_process_group(backend, PrefixStore("default_pg", store), rank, world_size, timeout,
                              _gloo_host(master_addr), os.environ.get("GLOO_SOCKET_IFNAME", ""))
    pg.set_name(group_name or "default_pg")
    _state.update(store=store, groups=0, timeout=timeout, host=_gloo_host(master_addr), backend=str(backend))
    GroupMember.WORLD = group.WORLD = ProcessGroup(pg, range(world_size), str(backend))


def destroy_process_group(group_=None):
    """Leaves the default group (or drops `group_`); collectives in flight finish first."""
    if group_ is None or group_ is GroupMember.WORLD:
        GroupMember.WORLD = group.WORLD = None
        _state["store"] = None


def get_rank(group=None):
    if group is None and GroupMember.WORLD is None:
        return -1 if not is_initialized() else 0
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return _group(group).rank()


def get_world_size(group=None):
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return _group(group).size()


def get_backend(group=None):
    return _group(group)._backend


def get_process_group_ranks(group):
    return list(_group(group)._ranks)


def get_global_rank(group, group_rank):
    return _group(group)._ranks[group_rank]


def get_group_rank(group, global_rank):
    g = _group(group)
    if global_rank not in g._ranks:
        raise ValueError(f"global rank {global_rank} is not part of group {g}")
    return g._ranks.index(global_rank)


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None):
    """A subgroup of the default group's ranks. Every process calls it, members or not (as torch)."""
    world = _default()
    ranks = sorted(range(world.size()) if ranks is None else ranks)
    if len(set(ranks)) != len(ranks) or any(not 0 <= r < world.size() for r in ranks):
        raise ValueError(f"new_group: ranks must be distinct ranks of the world (size {world.size()}), got {ranks}")
    _state["groups"] += 1
    name = f"group_{_state['groups']}"
    me = world.rank()
    if me not in ranks:
        return GroupMember.NON_GROUP_MEMBER
    backend = str(Backend(backend)) if backend else _state["backend"]
    pg = _C.new_process_group(backend, PrefixStore(name, _state["store"]), ranks.index(me), len(ranks),
                              _timedelta(timeout or _state["timeout"]), _state["host"],
                              os.environ.get("GLOO_SOCKET_IFNAME", ""))
    pg.set_name(name)
    return ProcessGroup(pg, ranks, backend)


def _finish(work, async_op):
    if async_op:
        return work
    work.wait()
    return None


def _check_tensor(t, what, name="tensor"):
    if not isinstance(t, ember.Tensor):
        raise TypeError(f"{what}: {name} must be a Tensor, got {type(t).__name__}")


def _op(op):
    if isinstance(op, ReduceOp):
        return op
    raise TypeError(f"expected a dist.ReduceOp, got {op!r}")


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    _check_tensor(tensor, "all_reduce")
    return _finish(_group(group)._pg.all_reduce(tensor, _op(op)), async_op)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    _check_tensor(tensor, "broadcast")
    g = _group(group)
    root = group_src if group_src is not None else get_group_rank(g, 0 if src is None else src)
    return _finish(g._pg.broadcast(tensor, root), async_op)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    _check_tensor(tensor, "reduce")
    g = _group(group)
    root = group_dst if group_dst is not None else get_group_rank(g, 0 if dst is None else dst)
    return _finish(g._pg.reduce(tensor, root, _op(op)), async_op)


class _CopyOut:
    """Work whose results are copied out of a flat buffer when waited on (all_gather & co)."""

    def __init__(self, work, done):
        self._work, self._done, self._finished = work, done, False

    def wait(self, timeout=None):
        ok = self._work.wait(timeout)
        if ok and not self._finished:
            self._done()
            self._finished = True
        return ok

    def is_completed(self):
        return self._work.is_completed()

    def is_success(self):
        return self._work.is_success()


def _dense(t):
    """t itself when contiguous, else a contiguous copy, and what writes the result back into t."""
    if t.is_contiguous():
        return t, lambda: None
    d = t.contiguous()
    return d, lambda: t.copy_(d)


def _flat_like(t, n):
    return ember.empty((n * t.numel(),), dtype=t.dtype, device=t.device)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Fills tensor_list[r] with rank r's tensor."""
    g = _group(group)
    if len(tensor_list) != g.size():
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors, the group {g.size()} ranks")
    flat = _flat_like(tensor, g.size())
    n = tensor.numel()

    def done():
        for r, out in enumerate(tensor_list):
            out.copy_(flat[r * n:(r + 1) * n].view(out.shape))

    work = _CopyOut(g._pg.all_gather_into(flat, tensor.contiguous()), done)
    return _finish(work, async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    g = _group(group)
    if output_tensor.numel() != g.size() * input_tensor.numel():
        raise ValueError(f"all_gather_into_tensor: output of {output_tensor.numel()} elements, expected world size "
                         f"{g.size()} x {input_tensor.numel()}")
    flat, write_back = _dense(output_tensor)
    work = _CopyOut(g._pg.all_gather_into(flat.view(-1), input_tensor.contiguous()), write_back)
    return _finish(work, async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    g = _group(group)
    root = group_dst if group_dst is not None else get_group_rank(g, 0 if dst is None else dst)
    n = tensor.numel()
    if g.rank() == root:
        if gather_list is None or len(gather_list) != g.size():
            raise ValueError("gather: the destination rank needs gather_list with one tensor per rank")
        flat = _flat_like(tensor, g.size())
    else:
        flat = ember.empty((0,), dtype=tensor.dtype)

    def done():
        if g.rank() == root:
            for r, out in enumerate(gather_list):
                out.copy_(flat[r * n:(r + 1) * n].view(out.shape))

    return _finish(_CopyOut(g._pg.gather_into(flat, tensor.contiguous(), root), done), async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    g = _group(group)
    root = group_src if group_src is not None else get_group_rank(g, 0 if src is None else src)
    if g.rank() == root:
        if scatter_list is None or len(scatter_list) != g.size():
            raise ValueError("scatter: the source rank needs scatter_list with one tensor per rank")
        flat = ember.cat([t.reshape(-1) for t in scatter_list])
    else:
        flat = ember.empty((0,), dtype=tensor.dtype)
    out, write_back = _dense(tensor)
    work = _CopyOut(g._pg.scatter_from(out.view(-1), flat, root), write_back)
    return _finish(work, async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    g = _group(group)
    out, write_back = _dense(output)
    work = _CopyOut(g._pg.reduce_scatter_from(out.view(-1), input.contiguous().view(-1), _op(op)), write_back)
    return _finish(work, async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    flat = ember.cat([t.reshape(-1) for t in input_list])
    return reduce_scatter_tensor(output, flat, op, group, async_op)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None,
                      async_op=False):
    g = _group(group)
    out, write_back = _dense(output)
    flat_in, flat_out = input.contiguous().view(-1), out.view(-1)
    if output_split_sizes is None and input_split_sizes is None:
        work = g._pg.all_to_all(flat_out, flat_in)
    else:
        # split sizes count rows of dim 0; the C++ group takes element counts
        def counts(splits, t, what):
            if splits is None:
                if t.shape[0] % g.size():
                    raise ValueError(f"all_to_all_single: {what} of {t.shape[0]} rows does not split evenly over "
                                     f"{g.size()} ranks; give {what}_split_sizes")
                splits = [t.shape[0] // g.size()] * g.size()
            row = t.numel() // t.shape[0] if t.shape[0] else 0
            return [int(x) * row for x in splits]
        work = g._pg.all_to_all_v(flat_out, flat_in, counts(output_split_sizes, output, "output"),
                                  counts(input_split_sizes, input, "input"))
    work = _CopyOut(work, write_back)
    return _finish(work, async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    g = _group(group)
    sizes = {t.numel() for t in list(output_tensor_list) + list(input_tensor_list)}
    if len(sizes) != 1 or len(output_tensor_list) != g.size() or len(input_tensor_list) != g.size():
        raise ValueError("all_to_all: expected one tensor per rank in each list, all of one size")
    n = sizes.pop()
    flat_in = ember.cat([t.reshape(-1) for t in input_tensor_list])
    flat_out = ember.empty_like(flat_in)

    def done():
        for r, out in enumerate(output_tensor_list):
            out.copy_(flat_out[r * n:(r + 1) * n].view(out.shape))

    return _finish(_CopyOut(g._pg.all_to_all(flat_out, flat_in), done), async_op)


def barrier(group=None, async_op=False, device_ids=None):
    return _finish(_group(group)._pg.barrier(), async_op)


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    g = _group(group)
    peer = group_dst if group_dst is not None else get_group_rank(g, dst)
    return g._pg.send(tensor, peer, tag)


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    g = _group(group)
    if src is None and group_src is None:
        return g._pg.recv(tensor, -1, tag)  # from whichever rank sends first
    peer = group_src if group_src is not None else get_group_rank(g, src)
    return g._pg.recv(tensor, peer, tag)


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    isend(tensor, dst, group, tag, group_dst).wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receives into tensor (from any rank when src is None); returns the sender's global rank."""
    work = irecv(tensor, src, group, tag, group_src)
    work.wait()
    if src is not None:
        return src
    g = _group(group)
    return get_global_rank(g, group_src if group_src is not None else work._source_rank())


# ---------------------------------------------------------------- object collectives
def _to_bytes_tensor(obj):
    buf = io.BytesIO()
    pickle.Pickler(buf).dump(obj)
    data = buf.getvalue()
    return ember.tensor(list(data), dtype=ember.uint8) if data else ember.empty((0,), dtype=ember.uint8)


def _from_bytes_tensor(t, n):
    return pickle.loads(bytes(t[:n].tolist()))


def all_gather_object(object_list, obj, group=None):
    """object_list[r] = rank r's obj (pickled; as torch, only for trusted peers)."""
    g = _group(group)
    mine = _to_bytes_tensor(obj)
    sizes = [ember.zeros(1, dtype=ember.int64) for _ in range(g.size())]
    all_gather(sizes, ember.tensor([mine.numel()], dtype=ember.int64), group=g)
    longest = max(int(s.item()) for s in sizes)
    padded = ember.zeros(longest, dtype=ember.uint8)
    padded[:mine.numel()] = mine
    outs = [ember.zeros(longest, dtype=ember.uint8) for _ in range(g.size())]
    all_gather(outs, padded, group=g)
    for r in range(g.size()):
        object_list[r] = _from_bytes_tensor(outs[r], int(sizes[r].item()))


def gather_object(obj, object_gather_list=None, dst=0, group=None):
    g = _group(group)
    everything = [None] * g.size()
    all_gather_object(everything, obj, group=g)
    if g.rank() == get_group_rank(g, dst):
        object_gather_list[:] = everything


def broadcast_object_list(object_list, src=0, group=None, device=None):
    g = _group(group)
    data = _to_bytes_tensor(list(object_list)) if g.rank() == get_group_rank(g, src) else None
    size = ember.tensor([data.numel() if data is not None else 0], dtype=ember.int64)
    broadcast(size, src, group=g)
    buf = data if data is not None else ember.zeros(int(size.item()), dtype=ember.uint8)
    broadcast(buf, src, group=g)
    object_list[:] = _from_bytes_tensor(buf, int(size.item()))


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=0, group=None):
    g = _group(group)
    objs = [None]
    payload = list(scatter_object_input_list) if g.rank() == get_group_rank(g, src) else None
    holder = [payload]
    broadcast_object_list(holder, src, group=g)
    objs[0] = holder[0][g.rank()]
    scatter_object_output_list[0] = objs[0]
