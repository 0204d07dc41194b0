"""torch.distributed.pipeline.sync.Pipe (GPipe): an nn.Sequential whose layers sit on several devices
of this process, run as a pipeline of micro-batches.

    model = nn.Sequential(nn.Linear(1000, 1000).to("cuda:0"), nn.ReLU(), nn.Linear(1000, 10).to("cuda:1"))
    model = Pipe(model, chunks=8)        # 8 micro-batches per call
    out = model(x).local_value()         # an RRef, as torch's; out is on the last device
    loss_fn(out, y.to(out.device)).backward()

Partitions are torch's: runs of consecutive children whose parameters and buffers live on one
GPU, and each CPU child alone (a child without tensors counts as the CPU's, as in torch, so put
activations inside a module with the layer they follow); state_dict keys are torch's
("partitions.1.0.weight"). A call splits every tensor argument into `chunks`
micro-batches along dim 0 (torch.chunk: fewer when the batch is smaller), feeds them through the
partitions in GPipe's clock order (at clock k, micro-batch i runs on partition k - i), moving each
activation to the next partition's device, and concatenates the outputs along dim 0. On GPUs the
kernels of different devices overlap because launches are asynchronous and the clock order
issues the next device's work before waiting; the values are those of the Sequential itself.
checkpoint="except_last" (the default), "always" or "never": which micro-batches recompute
their activations in backward instead of keeping them (ember.utils.checkpoint).

Differences from PyTorch 1.13: no RPC framework to initialise first (ember has none; the result
is a local RRef all the same), and deferred_batch_norm=True is refused (batch norm then sees each
micro-batch's statistics, as torch's without the flag).
"""
from ... import cat, device, is_grad_enabled
from ...nn import Module, ModuleList, Sequential
from ...utils.checkpoint import checkpoint as _checkpoint

__all__ = ["Pipe", "RRef"]


class RRef:
    """The result of a Pipe call: a reference to a value this process owns (torch.distributed.rpc.RRef's
    local case)."""

    def __init__(self, value):
        self._value = value

    def local_value(self):
        return self._value

    def to_here(self, timeout=None):
        return self._value

    def is_owner(self):
        return True

    def __repr__(self):
        return f"RRef({type(self._value).__name__})"


def _device_of(module):
    for t in list(module.parameters()) + list(module.buffers()):
        return t.device
    return device("cpu")


def _partition(module):
    # torch's rule: a new partition where the device changes, and for every module on the CPU (a
    # module without tensors counts as the CPU's); so state_dict keys match torch's Pipe
    runs, devices = [], []
    for child in module.children():
        d = _device_of(child)
        if runs and d == devices[-1] and d.type != "cpu":
            runs[-1].append(child)
        else:
            runs.append([child])
            devices.append(d)
    return [Sequential(*r) for r in runs], devices


class Pipe(Module):
    def __init__(self, module, chunks=1, checkpoint="except_last", deferred_batch_norm=False):
        super().__init__()
        if not isinstance(module, Sequential):
            raise TypeError("module must be nn.Sequential to be partitioned")
        if not isinstance(chunks, int) or isinstance(chunks, bool) or chunks <= 0:
            raise ValueError("number of chunks must be positive integer")
        if checkpoint not in ("always", "except_last", "never"):
            raise ValueError("checkpoint is not one of 'always', 'except_last', or 'never'")
        if deferred_batch_norm:
            raise NotImplementedError("Pipe: deferred_batch_norm=True is not supported by ember (batch norm sees each "
                                      "micro-batch's statistics); pass deferred_batch_norm=False")
        if len(module) == 0:
            raise ValueError("Pipe: the Sequential has no modules to partition")
        partitions, devices = _partition(module)
        self.partitions = ModuleList(partitions)
        self.devices = devices
        self.chunks = chunks
        self.checkpoint = checkpoint

    def __len__(self):
        return sum(len(p) for p in self.partitions)

    def __getitem__(self, index):
        return list(m for p in self.partitions for m in p)[index]

    def _run(self, j, i, n_micro, x):
        part = self.partitions[j]
        x = tuple(t.to(self.devices[j]) if hasattr(t, "to") else t for t in x)
        keep = self.checkpoint == "never" or (self.checkpoint == "except_last" and i == n_micro - 1)
        if not keep and is_grad_enabled():
            y = _checkpoint(part, *x, use_reentrant=False)
        else:
            y = part(*x)
        return y if isinstance(y, tuple) else (y,)

    def forward(self, *inputs):
        if not inputs:
            raise TypeError("Pipe: expected at least one input tensor")
        batch = inputs[0].shape[0] if hasattr(inputs[0], "shape") and inputs[0].dim() > 0 else None
        if batch is None:
            raise TypeError("Pipe: the first input must be a tensor with a batch dim")
        for t in inputs:
            if not hasattr(t, "shape") or t.dim() == 0 or t.shape[0] != batch:
                raise ValueError(f"Pipe: every input must be a tensor of batch size {batch} along dim 0")
        micro = list(zip(*(t.chunk(self.chunks, 0) for t in inputs)))
        n, m = len(self.partitions), len(micro)
        acts = list(micro)
        for clock in range(m + n - 1):  # GPipe's order: micro-batch i on partition clock - i
            for i in range(max(0, clock - n + 1), min(clock, m - 1) + 1):
                acts[i] = self._run(clock - i, i, m, acts[i])
        outs = [a[0] if len(a) == 1 else a for a in acts]
        if isinstance(outs[0], tuple):
            return RRef(tuple(cat([o[k] for o in outs]) for k in range(len(outs[0]))))
        return RRef(cat(outs))
