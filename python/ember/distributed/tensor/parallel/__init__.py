"""Tensor parallelism (torch.distributed.tensor.parallel): cut chosen layers over a mesh
dimension so each rank holds and computes a slice of them.

    mesh = init_device_mesh("cpu", (world,))
    parallelize_module(model, mesh, {"transformer.h.*.mlp.c_fc": ColwiseParallel(),
                                     "transformer.h.*.mlp.c_proj": RowwiseParallel()})

Every rank runs the same data through the model; the loss and the replicated parameters'
gradients come out the same on every rank, the sharded parameters' gradients are the slices of
single-device training's.
"""
import fnmatch

import ember

from .style import ColwiseParallel, ParallelStyle, RowwiseParallel

__all__ = ["parallelize_module", "ColwiseParallel", "RowwiseParallel", "ParallelStyle", "tp_state_dict",
           "load_tp_state_dict"]


def parallelize_module(module, device_mesh=None, parallelize_plan=None, *, src_data_rank=0):
    """Applies a style to module itself, or a {dotted name pattern (fnmatch "*"): style} plan to its
    submodules. Every pattern must match something."""
    if device_mesh is None:
        raise ValueError("parallelize_module: pass a device_mesh")
    if device_mesh.ndim != 1:
        raise ValueError(f"parallelize_module: expected a 1-D mesh (slice a 2-D one by name: mesh['tp']), got "
                         f"{device_mesh.ndim}-D")
    if isinstance(parallelize_plan, ParallelStyle):
        return parallelize_plan._apply(module, device_mesh)
    if not isinstance(parallelize_plan, dict):
        raise TypeError("parallelize_module: parallelize_plan must be a ParallelStyle or a dict of them")
    names = dict(module.named_modules())
    for pattern, style in parallelize_plan.items():
        hits = [n for n in names if n and fnmatch.fnmatchcase(n, pattern)]
        if not hits:
            raise ValueError(f"parallelize_module: the plan's {pattern!r} matches no submodule")
        for n in hits:
            style._apply(names[n], device_mesh)
    return module


def _spec_of(p):
    return getattr(p, "_tp_spec", None)


def tp_state_dict(model, full=True):
    """model.state_dict() with each sharded parameter whole (full=True: every rank gathers) or as
    a DTensor (full=False; a fused projection is always made whole)."""
    from .. import DTensor
    from ._comm import _gather_dim
    params = dict(model.named_parameters())
    out = {}
    for k, v in model.state_dict().items():
        spec = _spec_of(params.get(k)) if k in params else None
        if spec is None or not spec[1].is_shard():
            out[k] = v
            continue
        mesh, placement, shape, fused = spec
        if full or fused > 1:
            out[k] = _gather_dim(v, placement.dim, mesh.get_group(), fused)
        else:
            out[k] = DTensor.from_local(v, mesh, [placement], shape=shape)
    return out


def load_tp_state_dict(model, state, strict=True):
    """Loads whole tensors (or DTensors) into a tensor-parallel model: each rank keeps its slice."""
    from .. import DTensor
    params = dict(model.named_parameters())
    fixed = {}
    for k, v in state.items():
        spec = _spec_of(params.get(k)) if k in params else None
        if isinstance(v, DTensor):
            v = v.full_tensor()
        if spec is not None and spec[1].is_shard():
            mesh, placement, shape, fused = spec
            n, r = mesh.size(), mesh.get_local_rank()
            blocks = v.chunk(fused, dim=placement.dim)
            v = ember.cat([b.chunk(n, dim=placement.dim)[r] for b in blocks], dim=placement.dim)
        fixed[k] = v
    return model.load_state_dict(fixed, strict=strict)
