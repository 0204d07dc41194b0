"""Distributed checkpoints (torch.distributed.checkpoint): every rank writes its own pieces in
parallel, and a checkpoint loads into any other layout or world size.

    import ember.distributed.checkpoint as dcp
    dcp.save({"model": model.state_dict(), "step": 10}, checkpoint_id="ckpt/")
    dcp.load(state, checkpoint_id="ckpt/")     # in place, into state's tensors / DTensors

Layout of checkpoint_id (a directory every rank can reach):
    .metadata                  JSON: for each flattened key ("model.fc.weight"), its global shape,
                               dtype and pieces (offsets, sizes, file, name in file); plain values.
    __<rank>_<save id>.safetensors   the pieces that rank wrote.
A plain tensor is replicated: rank 0 writes it. A DTensor's local piece is written by the lowest
rank holding that piece (replicas along a mesh dimension are written once). Loading intersects
each piece the target needs (its DTensor's local box, or the whole of a plain tensor) with the
saved pieces, so a checkpoint saved by 4 ranks loads on 2 or 1.

Atomic: data files carry a fresh save id; after every rank has written (a barrier), rank 0
replaces .metadata (write to a temporary name, fsync, rename) and only then deletes the previous
save's files. A crash at any point leaves either the old or the new checkpoint complete.
"""
import json
import os
import uuid

import ember

from ... import safetensors
from ..tensor import DTensor, window

__all__ = ["save", "load", "FileSystemWriter", "FileSystemReader", "save_state_dict", "load_state_dict",
           "CheckpointException"]

_META = ".metadata"


class CheckpointException(RuntimeError):
    pass


class FileSystemWriter:
    def __init__(self, path, single_file_per_rank=True, sync_files=True, thread_count=1, per_thread_copy_ahead=0,
                 cache_staged_state_dict=False, overwrite=True):
        self.path = os.fspath(path)


class FileSystemReader:
    def __init__(self, path):
        self.path = os.fspath(path)


def _path(checkpoint_id, storage):
    if checkpoint_id is not None:
        return os.fspath(checkpoint_id)
    if storage is not None:
        return storage.path
    raise ValueError("distributed checkpoint: pass checkpoint_id (a directory) or a storage_writer/reader")


def _flatten(obj, prefix, out):
    """Nested dicts/lists -> {"a.b.0": leaf}: the keys the metadata uses."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            _flatten(v, f"{prefix}{k}.", out)
    elif isinstance(obj, (list, tuple)) and any(isinstance(v, (dict, list, tuple, ember.Tensor, DTensor)) for v in obj):
        for i, v in enumerate(obj):
            _flatten(v, f"{prefix}{i}.", out)
    else:
        out[prefix[:-1]] = obj
    return out


def _group_info(process_group):
    from .. import distributed_c10d as dist
    if not dist.is_initialized():
        return None, 0, 1
    return process_group, dist.get_rank(process_group), dist.get_world_size(process_group)


def _dtype_name(dtype):
    return str(dtype).replace("ember.", "")


def save(state_dict, *, checkpoint_id=None, storage_writer=None, planner=None, process_group=None, no_dist=False):
    """Writes state_dict (nested dicts of tensors, DTensors and plain values) to the directory."""
    from .. import distributed_c10d as dist
    path = _path(checkpoint_id, storage_writer)
    group, rank, world = (None, 0, 1) if no_dist else _group_info(process_group)
    flat = _flatten(state_dict, "", {})
    # this rank's pieces: key -> (local tensor, offsets, sizes); a plain tensor is all of itself
    pieces = {}
    for key, v in flat.items():
        if isinstance(v, DTensor):
            pieces[key] = (v.to_local(), v.local_offsets(), list(v.to_local().shape))
        elif isinstance(v, ember.Tensor):
            pieces[key] = (v, [0] * v.dim(), list(v.shape))
    mine = [(key, offsets, sizes) for key, (_, offsets, sizes) in pieces.items()]
    if world > 1:
        offers = [None] * world
        dist.all_gather_object(offers, mine, group=group)
    else:
        offers = [mine]
    save_id = uuid.uuid4().hex[:12]
    if rank == 0:
        os.makedirs(path, exist_ok=True)
    if world > 1:
        dist.barrier(group=group)  # the directory exists before anyone writes into it
    # the writer of each piece: the lowest rank offering it
    writer = {}
    for r, offer in enumerate(offers):
        for key, offsets, sizes in offer:
            writer.setdefault((key, tuple(offsets), tuple(sizes)), r)
    tensors = {}
    for key, (local, offsets, sizes) in pieces.items():
        if writer[(key, tuple(offsets), tuple(sizes))] == rank:
            tensors[f"{key}@{','.join(map(str, offsets))}"] = local.detach().cpu().contiguous()
    filename = f"__{rank}_{save_id}.safetensors"
    if tensors:
        safetensors.save_file(tensors, os.path.join(path, filename))
    written = [(rank, filename, list(tensors))] if tensors else []
    if world > 1:
        all_written = [None] * world
        dist.all_gather_object(all_written, written, group=group)  # also the barrier: everyone has written
    else:
        all_written = [written]
    if rank == 0:
        where = {}
        for entries in all_written:
            for r, fname, names in entries:
                for n in names:
                    where[n] = fname
        meta = {"version": 1, "save_id": save_id, "world_size": world, "tensors": {}, "values": {}}
        for key, v in flat.items():
            if isinstance(v, (DTensor, ember.Tensor)):
                chunks = []
                for (k, offsets, sizes), r in writer.items():
                    if k != key:
                        continue
                    n = f"{key}@{','.join(map(str, offsets))}"
                    chunks.append({"offsets": list(offsets), "sizes": list(sizes), "file": where[n], "name": n})
                meta["tensors"][key] = {"shape": list(v.shape), "dtype": _dtype_name(v.dtype), "chunks": chunks}
            else:
                try:
                    json.dumps(v)
                except TypeError:
                    raise CheckpointException(f"distributed checkpoint: {key} holds a {type(v).__name__}, which is "
                                              "neither a tensor nor a JSON value (int, float, str, bool, None)")
                meta["values"][key] = v
        tmp = os.path.join(path, f"{_META}.tmp-{save_id}")
        with open(tmp, "w") as f:
            json.dump(meta, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, os.path.join(path, _META))
        _fsync_dir(path)
        keep = {c["file"] for t in meta["tensors"].values() for c in t["chunks"]}
        for name in os.listdir(path):  # the previous save's pieces, and any a crashed save left
            if name.startswith("__") and name.endswith(".safetensors") and name not in keep:
                try:
                    os.remove(os.path.join(path, name))
                except FileNotFoundError:
                    pass
    if world > 1:
        dist.barrier(group=group)  # no rank returns before the checkpoint is complete
    return None


def _fsync_dir(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _read_meta(path):
    file = os.path.join(path, _META)
    if not os.path.exists(file):
        raise CheckpointException(f"distributed checkpoint: {path} has no {_META} (no complete checkpoint there)")
    with open(file) as f:
        try:
            meta = json.load(f)
        except json.JSONDecodeError as e:
            raise CheckpointException(f"distributed checkpoint: {file} is not valid JSON: {e}") from None
    if not isinstance(meta, dict) or meta.get("version") != 1 or "tensors" not in meta:
        raise CheckpointException(f"distributed checkpoint: {file} is not a version-1 ember checkpoint")
    return meta


def _intersect(a_off, a_size, b_off, b_size):
    lo = [max(x, y) for x, y in zip(a_off, b_off)]
    hi = [min(x + s, y + t) for x, s, y, t in zip(a_off, a_size, b_off, b_size)]
    if any(h <= l for l, h in zip(lo, hi)) and lo:
        return None
    return lo, [h - l for l, h in zip(lo, hi)]


def load(state_dict, *, checkpoint_id=None, storage_reader=None, planner=None, process_group=None, no_dist=False):
    """Fills state_dict in place: tensors and DTensors are copied into (any layout, any world
    size), plain values replaced."""
    path = _path(checkpoint_id, storage_reader)
    meta = _read_meta(path)
    files = {}

    def piece(chunk):
        fname = chunk["file"]
        if fname not in files:
            full = os.path.join(path, os.path.basename(fname))
            if not os.path.exists(full):
                raise CheckpointException(f"distributed checkpoint: {full}, named in {_META}, is missing")
            files[fname] = safetensors.load_file(full)
        got = files[fname].get(chunk["name"])
        if got is None or list(got.shape) != list(chunk["sizes"]):
            raise CheckpointException(f"distributed checkpoint: {fname} lacks {chunk['name']} of shape {chunk['sizes']}")
        return got

    def fill(key, target):
        info = meta["tensors"].get(key)
        if info is None:
            raise CheckpointException(f"distributed checkpoint: {path} has no tensor {key!r}")
        if isinstance(target, DTensor):
            local = target.to_local()
            offsets, sizes = target.local_offsets(), list(local.shape)
            shape = list(target.shape)
        else:
            local, offsets, sizes, shape = target, [0] * target.dim(), list(target.shape), list(target.shape)
        if shape != info["shape"]:
            raise CheckpointException(f"distributed checkpoint: {key} has shape {info['shape']} in the checkpoint, "
                                      f"but {shape} in the state dict being loaded")
        covered = 0
        with ember.no_grad():
            for chunk in info["chunks"]:
                box = _intersect(offsets, sizes, chunk["offsets"], chunk["sizes"])
                if box is None:
                    continue
                lo, extent = box
                src = window(piece(chunk), [l - o for l, o in zip(lo, chunk["offsets"])], extent)
                dst = window(local, [l - o for l, o in zip(lo, offsets)], extent)
                dst.copy_(src)
                n = 1
                for e in extent:
                    n *= e
                covered += n
        need = 1
        for s in sizes:
            need *= s
        if covered != need:
            raise CheckpointException(f"distributed checkpoint: the saved pieces of {key} cover {covered} of the "
                                      f"{need} elements this rank needs")

    def walk(obj, prefix):
        items = obj.items() if isinstance(obj, dict) else enumerate(obj)
        for k, v in list(items):
            key = f"{prefix}{k}"
            if isinstance(v, (DTensor, ember.Tensor)):
                fill(key, v)
            elif isinstance(v, dict) or (isinstance(v, list) and any(
                    isinstance(x, (dict, list, tuple, ember.Tensor, DTensor)) for x in v)):
                walk(v, key + ".")
            elif key in meta["values"]:
                obj[k] = meta["values"][key]
            elif isinstance(obj, dict):
                raise CheckpointException(f"distributed checkpoint: {path} has no value {key!r}")

    walk(state_dict, "")
    return None


save_state_dict = save
load_state_dict = load
