"""DistributedDataParallel: each process trains a replica of the model on its own shard of the
data; gradients are averaged over the process group during backward.

The work is C++'s (ember::distributed::Reducer, include/ember/distributed/reducer.h): rank 0's
parameters and buffers are broadcast at construction; parameters are bucketed in reverse
registration order (the first bucket small so communication starts early); hooks on gradient
accumulation start each full bucket's all_reduce asynchronously while backward goes on, in
bucket order on every rank, and the last one averages and writes back .grad. This class is the
Module around it: forward's bookkeeping, buffers, no_sync, the "module." state-dict prefix."""
import contextlib

import ember

from ..modules.module import Module

__all__ = ["DistributedDataParallel"]


def _tensors_in(obj, out):
    if isinstance(obj, ember.Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            _tensors_in(x, out)
    elif isinstance(obj, dict):
        for x in obj.values():
            _tensors_in(x, out)
    return out


class DistributedDataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, delay_all_reduce_named_params=None,
                 param_to_hook_all_reduce=None, mixed_precision=None, device_mesh=None):
        super().__init__()
        from ... import distributed as dist
        if not dist.is_available() or not dist.is_initialized():
            raise RuntimeError("Default process group has not been initialized, please make sure to call "
                               "init_process_group.")
        group = process_group if process_group is not None else dist.group.WORLD
        self.module = module
        self.process_group = group
        self.device_ids = list(device_ids) if device_ids else None
        self.output_device = output_device
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.bucket_cap_mb = 25 if bucket_cap_mb is None else bucket_cap_mb
        C = ember._C._distributed
        pg = group._pg
        # replicas start equal: rank 0's parameters and buffers everywhere
        C.broadcast_coalesced(pg, list(module.parameters()) + list(module.buffers()), 0)
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        self._reducer = C.Reducer(named, pg, float(self.bucket_cap_mb), find_unused_parameters,
                                  gradient_as_bucket_view)

    @property
    def _buckets(self):
        """The parameter names of each gradient bucket, first bucket first."""
        return self._reducer.bucket_names()

    def forward(self, *inputs, **kwargs):
        self._reducer.prepare_for_forward()
        pg = self.process_group._pg
        if self.broadcast_buffers and pg.size() > 1:
            buffers = list(self.module.buffers())
            if buffers:
                ember._C._distributed.broadcast_coalesced(pg, buffers, 0)
        out = self.module(*inputs, **kwargs)
        if ember.is_grad_enabled() and self.require_backward_grad_sync:
            self._reducer.prepare_for_backward(_tensors_in(out, []))
        return out

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside accumulate gradients locally; the first one after syncs them all."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old
