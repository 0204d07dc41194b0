"""SyncBatchNorm: batch normalisation whose statistics span the whole process group.

With no process group initialised, in eval mode, or in a group of one process it is BatchNorm
(F.batch_norm, the same result). In training in a group of several processes the per-channel
count and sum, then the sum of squared deviations from the global mean, are all-reduced, so
every process normalises with the statistics of the concatenated batch; the all-reduces are
differentiable (their backward all-reduces the gradient), so the input and parameter gradients
are those of BatchNorm over the whole batch.

Unlike torch, which refuses CPU input when a group is initialised ("SyncBatchNorm expected input
tensor to be on GPU ..."), ember synchronises CPU tensors too, through ember.distributed's Gloo
backend (any device its all_reduce takes).
"""
from ... import _C
from ...autograd import Function
from ...autograd.grad_mode import no_grad
from .. import functional as F
from .normalization import _BatchNorm

__all__ = ["SyncBatchNorm"]


class _AllReduceSum(Function):
    """all_reduce(SUM) as a differentiable op: d(sum over ranks)/d(local) routes every rank's
    gradient of the sum back to each rank, i.e. the backward is an all_reduce of the gradients."""

    @staticmethod
    def forward(ctx, tensor, group):
        from ... import distributed as dist
        out = tensor.contiguous().clone()
        dist.all_reduce(out, op=dist.ReduceOp.SUM, group=group)
        ctx.group = group
        return out

    @staticmethod
    def backward(ctx, grad):
        from ... import distributed as dist
        g = grad.contiguous().clone()
        dist.all_reduce(g, op=dist.ReduceOp.SUM, group=ctx.group)
        return g, None


def _sync_batch_norm(input, weight, bias, running_mean, running_var, eps, momentum, group):
    C = input.size(1)
    dims = [0] + list(range(2, input.dim()))
    shape = [1, C] + [1] * (input.dim() - 2)
    local_count = input.numel() // C if C else 0
    count_sum = _AllReduceSum.apply(_C.cat([input.sum(dims), _C.full((1,), float(local_count), dtype=input.dtype,
                                                                       device=input.device)]), group)
    count = float(count_sum[C].item())
    if count <= 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {count}")
    mean = count_sum[:C] / count
    centered = input - mean.view(shape)
    var = _AllReduceSum.apply((centered * centered).sum(dims), group) / count
    out = centered * (var + eps).rsqrt().view(shape)
    if weight is not None:
        out = out * weight.view(shape)
    if bias is not None:
        out = out + bias.view(shape)
    with no_grad():
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean.detach() * momentum)
        if running_var is not None:
            running_var.mul_(1 - momentum).add_(var.detach() * (momentum * count / (count - 1)))
    return out


class SyncBatchNorm(_BatchNorm):
    r"""torch.nn.SyncBatchNorm: BatchNorm over N-D input (N >= 2) with statistics over every
    process of `process_group` (default: the whole world) in training."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _check_non_zero_input_channels(self, input):
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def forward(self, input):
        self._check_input_dim(input)
        self._check_non_zero_input_channels(input)
        exponential_average_factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            if self.num_batches_tracked is None:
                raise AssertionError("num_batches_tracked must not be None")
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                exponential_average_factor = 1.0 / float(self.num_batches_tracked.item())
        bn_training = True if self.training else (self.running_mean is None and self.running_var is None)
        running_mean = self.running_mean if not self.training or self.track_running_stats else None
        running_var = self.running_var if not self.training or self.track_running_stats else None
        process_group = None
        need_sync = bn_training and self.training and _distributed_initialized()
        if need_sync:
            from ... import distributed as dist
            process_group = self.process_group if self.process_group else dist.group.WORLD
            need_sync = dist.get_world_size(process_group) > 1
        if not need_sync:
            return F.batch_norm(input, running_mean, running_var, self.weight, self.bias, bn_training,
                                exponential_average_factor, self.eps)
        return _sync_batch_norm(input, self.weight, self.bias, running_mean, running_var, self.eps,
                                exponential_average_factor, process_group)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        r"""Replaces every BatchNorm*d in `module` (recursively) by a SyncBatchNorm sharing its
        parameters and buffers; a BatchNorm given directly comes back converted."""
        module_output = module
        if isinstance(module, _BatchNorm):
            module_output = SyncBatchNorm(module.num_features, module.eps, module.momentum, module.affine,
                                          module.track_running_stats, process_group)
            if module.affine:
                with no_grad():
                    module_output.weight = module.weight
                    module_output.bias = module.bias
            module_output.running_mean = module.running_mean
            module_output.running_var = module.running_var
            module_output.num_batches_tracked = module.num_batches_tracked
            module_output.training = module.training
            if hasattr(module, "qconfig"):
                module_output.qconfig = module.qconfig
        for name, child in module.named_children():
            module_output.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return module_output


def _distributed_initialized():
    from ... import distributed as dist
    return dist.is_available() and dist.is_initialized()
