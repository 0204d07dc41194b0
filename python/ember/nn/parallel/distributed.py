"""DistributedDataParallel: each process trains a replica of the model on its own shard of the
data; gradients are averaged over the process group during backward.

How (torch's design): at construction rank 0's parameters and buffers are broadcast to every
replica. Parameters are grouped, in reverse registration order (the order backward produces their
gradients), into buckets of about bucket_cap_mb (the first one small, so communication starts
early). A hook on each parameter's gradient accumulation counts the bucket's ready gradients; a
full bucket is copied into one flat buffer and all-reduced asynchronously on the group's worker
thread while backward goes on computing earlier layers' gradients. Buckets launch in index order
on every rank (so all ranks issue the same collectives in the same order); when the last one has
launched, every bucket is waited on, divided by the world size and copied back into .grad.
"""
import contextlib

import ember

from ..modules.module import Module

__all__ = ["DistributedDataParallel"]

_FIRST_BUCKET_BYTES = 1024 * 1024  # torch's dist._DEFAULT_FIRST_BUCKET_BYTES


class _Bucket:
    def __init__(self, params, names):
        self.params, self.names = params, names
        self.offsets, n = [], 0
        for p in params:
            self.offsets.append(n)
            n += p.numel()
        self.flat = ember.zeros(n, dtype=params[0].dtype, device=params[0].device)
        self.ready = 0
        self.work = None


def _coalesced_broadcast(pg, tensors, src=0):
    """Broadcasts tensors from group rank src, one flat message per (dtype, device)."""
    groups = {}
    for t in tensors:
        groups.setdefault((t.dtype, str(t.device)), []).append(t)
    for ts in groups.values():
        flat = ember.cat([t.detach().reshape(-1) for t in ts])
        pg.broadcast(flat, src).wait()
        at = 0
        with ember.no_grad():
            for t in ts:
                n = t.numel()
                t.copy_(flat[at:at + n].view(t.shape))
                at += n


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
        pg = group._pg
        self._world = pg.size()

        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        # replicas start equal: rank 0's parameters and buffers everywhere
        with ember.no_grad():
            _coalesced_broadcast(pg, [p for _, p in module.named_parameters()] + list(module.buffers()))
        self._buckets, self._bucket_of = self._make_buckets(list(reversed(named)))
        self._hooks = [p.register_post_accumulate_grad_hook(self._hook_for(i))
                       for i, (_, p) in enumerate(reversed(named))]
        self._params = [p for _, p in reversed(named)]
        self._expect_sync = False
        self._next_launch = 0

    # ------------------------------------------------------------------ buckets
    def _make_buckets(self, named):
        cap = int(self.bucket_cap_mb * 1024 * 1024)
        buckets, bucket_of, current, names, size, limit = [], [], [], [], 0, min(_FIRST_BUCKET_BYTES, cap)
        for name, p in named:
            nbytes = p.numel() * p.element_size()
            split = current and (size + nbytes > limit or p.dtype != current[0].dtype or p.device != current[0].device)
            if split:
                buckets.append(_Bucket(current, names))
                current, names, size, limit = [], [], 0, cap
            current.append(p)
            names.append(name)
            size += nbytes
            bucket_of.append((len(buckets), len(current) - 1))
        buckets.append(_Bucket(current, names))
        return buckets, bucket_of

    def _hook_for(self, index):
        def hook(param):
            self._mark_ready(index)
        return hook

    def _mark_ready(self, index):
        if not self._expect_sync:
            return
        b, _ = self._bucket_of[index]
        bucket = self._buckets[b]
        bucket.ready += 1
        if bucket.ready > len(bucket.params):
            raise RuntimeError(f"DistributedDataParallel: parameter '{bucket.names[self._bucket_of[index][1]]}' "
                               "received its gradient twice in one backward (reentrant backward or a parameter "
                               "used in two forward passes: use no_sync() or static_graph)")
        if self._launch_complete_buckets():
            self._finish()

    def _launch_complete_buckets(self):
        """Starts the all_reduce of each complete bucket, in bucket order on every rank (the
        collectives must match across the group); True when every bucket has started."""
        while self._next_launch < len(self._buckets):
            bucket = self._buckets[self._next_launch]
            if bucket.ready < len(bucket.params):
                return False
            with ember.no_grad():
                for p, at in zip(bucket.params, bucket.offsets):
                    view = bucket.flat[at:at + p.numel()]
                    if p.grad is None:
                        view.zero_()
                    elif p.grad.data_ptr() != view.data_ptr():
                        view.copy_(p.grad.reshape(-1))
            bucket.work = self.process_group._pg.all_reduce(bucket.flat, ember.distributed.ReduceOp.SUM)
            self._next_launch += 1
        return True

    def _finish(self):
        """Every bucket launched: wait, average, and hand the gradients back."""
        with ember.no_grad():
            for bucket in self._buckets:
                bucket.work.wait()
                bucket.flat.div_(self._world)
                for p, at in zip(bucket.params, bucket.offsets):
                    view = bucket.flat[at:at + p.numel()].view(p.shape)
                    if self.gradient_as_bucket_view:
                        p.grad = view
                    elif p.grad is None:
                        p.grad = view.clone()
                    else:
                        p.grad.copy_(view)
                bucket.ready, bucket.work = 0, None
        self._next_launch = 0
        self._expect_sync = False

    # ------------------------------------------------------------------ forward
    def forward(self, *inputs, **kwargs):
        if self._expect_sync and any(b.ready for b in self._buckets):
            names = [n for b in self._buckets for n in b.names]
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a new one. This error "
                "indicates that your module has parameters that were not used in producing loss. You can enable "
                "unused parameter detection by passing the keyword argument `find_unused_parameters=True` to "
                "`torch.nn.parallel.DistributedDataParallel`. Parameters of this module: " + ", ".join(names[:20]))
        # a forward whose backward never came (evaluation with grad on): start over
        for b in self._buckets:
            b.ready, b.work = 0, None
        self._next_launch = 0
        if self.broadcast_buffers and self._world > 1:
            buffers = list(self.module.buffers())
            if buffers:
                with ember.no_grad():
                    _coalesced_broadcast(self.process_group._pg, buffers)
        out = self.module(*inputs, **kwargs)
        self._expect_sync = ember.is_grad_enabled() and self.require_backward_grad_sync
        if self._expect_sync and self.find_unused_parameters:
            used = self._reachable_params(out)
            for i, p in enumerate(self._params):
                if id(p) not in used:
                    b, _ = self._bucket_of[i]
                    self._buckets[b].ready += 1
            if self._launch_complete_buckets():  # nothing was used: no backward will come
                self._finish()
        return out

    @staticmethod
    def _reachable_params(outputs):
        """ids of the parameters the autograd graph of `outputs` reaches (find_unused_parameters)."""
        roots, seen, found = [], set(), set()

        def collect(o):
            if isinstance(o, ember.Tensor):
                if o.grad_fn is not None:
                    roots.append(o.grad_fn)
                elif o.requires_grad:
                    found.add(id(o))
            elif isinstance(o, (list, tuple)):
                for x in o:
                    collect(x)
            elif isinstance(o, dict):
                for x in o.values():
                    collect(x)

        collect(outputs)
        while roots:
            fn = roots.pop()
            if fn is None or id(fn) in seen:
                continue
            seen.add(id(fn))
            var = getattr(fn, "variable", None)
            if var is not None:
                found.add(id(var))
            for nxt, _ in fn.next_functions:
                if nxt is not None:
                    roots.append(nxt)
        return found

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside accumulate gradients locally; the first one after syncs them all."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old
