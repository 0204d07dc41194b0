"""Parallel styles (torch.distributed.tensor.parallel): how one layer is cut over a 1-D mesh.

ColwiseParallel splits a layer's outputs: each rank holds out/n rows of a Linear's weight (columns
of GPT-2's Conv1D, whose weight is [in, out]) and the matching bias; its input must be whole
(Replicate), its output is this rank's slice of the features (Shard(-1)), made whole again with
output_layouts=Replicate(). RowwiseParallel splits a layer's inputs: each rank holds in/n of the
weight and takes its slice of the features (Shard(-1), as a column-parallel layer leaves them), the
partial products are summed over the group, and the bias (replicated) is added once. A
ColwiseParallel layer followed by a RowwiseParallel one (an MLP, or attention's qkv and output
projections) needs one all-reduce forward and one backward.

ember addition: ColwiseParallel(fused=3) for a fused projection whose outputs are 3 equal blocks
(GPT-2's c_attn: q | k | v), so each rank gets its heads of each block.

The layers keep plain local Parameters; each carries `_tp_spec` (mesh, placement, global shape,
fused) from which state dicts rebuild whole tensors or DTensors.
"""
import types

import ember

from .. import Replicate, Shard
from . import _comm

__all__ = ["ParallelStyle", "ColwiseParallel", "RowwiseParallel"]


def _kind(module):
    from ....nn import Embedding, Linear
    if isinstance(module, Linear):
        return "linear"
    if isinstance(module, Embedding):
        return "embedding"
    if type(module).__name__ == "Conv1D" and hasattr(module, "nf"):
        return "conv1d"
    raise NotImplementedError(f"tensor parallel: {type(module).__name__} is not supported (Linear, Embedding and "
                              "GPT-2's Conv1D are)")


def _shard(module, name, dim, mesh, fused=1):
    """Replaces module.<name> by this rank's piece along dim (of each of `fused` equal blocks)."""
    from ....nn.parameter import Parameter
    p = getattr(module, name)
    n, r = mesh.size(), mesh.get_local_rank()
    if p.shape[dim] % (n * fused):
        raise ValueError(f"tensor parallel: {type(module).__name__}.{name} has {p.shape[dim]} along dim {dim}, not "
                         f"divisible by {fused} block(s) x {n} ranks")
    with ember.no_grad():
        blocks = p.detach().chunk(fused, dim=dim)
        local = ember.cat([b.chunk(n, dim=dim)[r] for b in blocks], dim=dim).contiguous()
    q = Parameter(local, requires_grad=p.requires_grad)
    q._tp_spec = (mesh, Shard(dim), tuple(p.shape), fused)
    setattr(module, name, q)


def _mark_replicated(module, name, mesh):
    p = getattr(module, name, None)
    if p is not None:
        p._tp_spec = (mesh, Replicate(), tuple(p.shape), 1)


class ParallelStyle:
    def _apply(self, module, mesh):
        raise NotImplementedError


class ColwiseParallel(ParallelStyle):
    def __init__(self, *, input_layouts=None, output_layouts=None, use_local_output=True, fused=1):
        self.input_layouts = input_layouts or Replicate()
        self.output_layouts = output_layouts or Shard(-1)
        self.use_local_output = use_local_output
        self.fused = fused
        if not isinstance(self.input_layouts, Replicate):
            raise NotImplementedError("ColwiseParallel: only Replicate() inputs are supported")

    def _apply(self, module, mesh):
        group = mesh.get_group()
        kind = _kind(module)
        if kind == "embedding":  # each rank looks up its slice of the embedding dimension
            _shard(module, "weight", 1, mesh)
        else:
            _shard(module, "weight", 0 if kind == "linear" else 1, mesh, self.fused)
            if getattr(module, "bias", None) is not None:
                _shard(module, "bias", 0, mesh, self.fused)
        inner = type(module).forward
        gather = isinstance(self.output_layouts, Replicate)

        def forward(self_, x, *args, **kwargs):
            if kind != "embedding":
                x = _comm.copy_to(x, group)
            y = inner(self_, x, *args, **kwargs)
            return _comm.gather_from(y, group) if gather else y

        module.forward = types.MethodType(forward, module)
        return module


class RowwiseParallel(ParallelStyle):
    def __init__(self, *, input_layouts=None, output_layouts=None, use_local_output=True):
        self.input_layouts = input_layouts or Shard(-1)
        self.output_layouts = output_layouts or Replicate()
        self.use_local_output = use_local_output
        if not isinstance(self.output_layouts, Replicate):
            raise NotImplementedError("RowwiseParallel: only Replicate() outputs are supported")

    def _apply(self, module, mesh):
        group = mesh.get_group()
        kind = _kind(module)
        scatter = isinstance(self.input_layouts, Replicate)
        if kind == "embedding":  # each rank holds a range of the vocabulary
            _shard(module, "weight", 0, mesh)
            rows = module.weight.shape[0]
            start = mesh.get_local_rank() * rows
            F = ember.nn.functional

            def forward(self_, ids):
                local = ids - start
                inside = (local >= 0) & (local < rows)
                y = F.embedding(local.clamp(0, rows - 1), self_.weight, self_.padding_idx)
                y = y * inside.unsqueeze(-1).to(y.dtype)
                return _comm.reduce_from(y, group)

            module.forward = types.MethodType(forward, module)
            return module
        _shard(module, "weight", 1 if kind == "linear" else 0, mesh)
        _mark_replicated(module, "bias", mesh)

        def forward(self_, x):
            if scatter:
                x = _comm.scatter_to(x, group)
            if kind == "linear":
                y = ember.nn.functional.linear(x, self_.weight)
            else:
                y = (x.reshape(-1, x.shape[-1]) @ self_.weight).view(x.shape[:-1] + (self_.weight.shape[1],))
            y = _comm.reduce_from(y, group)
            return y + self_.bias if self_.bias is not None else y

        module.forward = types.MethodType(forward, module)
        return module
