"""PipelineStage: one rank's part of a model split into consecutive stages
(torch.distributed.pipelining.PipelineStage). Stage i runs on group rank i; activations travel
forward from stage i to i + 1 and their gradients back, as point-to-point messages.

Each message is a small header (dtype, rank, shape) then the data, so stages need not know the
shapes they will receive. Sends are posted asynchronously and waited at the end of the step: a
stage never blocks on a neighbour that is itself sending (no deadlock in 1F1B's steady state)."""
import ember

from .. import distributed_c10d as dist

__all__ = ["PipelineStage"]

_DTYPES = [ember.float32, ember.float64, ember.bfloat16, ember.float16, ember.int64, ember.int32, ember.bool]
_HEADER = 10  # dtype code, ndim, up to 8 sizes


class PipelineStage:
    def __init__(self, submodule, stage_index, num_stages, device=None, input_args=None, output_args=None,
                 group=None, dw_builder=None):
        self.submod = submodule
        self.stage_index = stage_index
        self.num_stages = num_stages
        self.device = device
        self.group = group if group is not None else dist.group.WORLD
        if self.group.size() != num_stages:
            raise ValueError(f"PipelineStage: {num_stages} stages need a group of {num_stages} ranks, got "
                             f"{self.group.size()} (one stage per rank)")
        if self.group.rank() != stage_index:
            raise ValueError(f"PipelineStage: stage {stage_index} must run on group rank {stage_index}, not "
                             f"{self.group.rank()}")
        self.is_first = stage_index == 0
        self.is_last = stage_index == num_stages - 1
        self._pending = []
        self._reset()

    def _reset(self):
        self._inputs, self._outputs = {}, {}

    # ---- messages ----------------------------------------------------------------------------

    def _send(self, t, peer, tag):
        t = t.detach().contiguous()
        if t.dim() > _HEADER - 2:
            raise ValueError(f"PipelineStage: tensors of more than {_HEADER - 2} dimensions cannot be sent")
        header = ember.zeros(_HEADER, dtype=ember.int64)
        header[0] = _DTYPES.index(t.dtype)
        header[1] = t.dim()
        for i, s in enumerate(t.shape):
            header[2 + i] = s
        self._pending.append((dist.isend(header, group=self.group, group_dst=peer, tag=2 * tag), header))
        self._pending.append((dist.isend(t, group=self.group, group_dst=peer, tag=2 * tag + 1), t))

    def _recv(self, peer, tag):
        header = ember.zeros(_HEADER, dtype=ember.int64)
        dist.irecv(header, group=self.group, group_src=peer, tag=2 * tag).wait()
        h = header.tolist()
        shape = tuple(h[2:2 + h[1]])
        t = ember.empty(shape, dtype=_DTYPES[h[0]])
        dist.irecv(t, group=self.group, group_src=peer, tag=2 * tag + 1).wait()
        return t

    def _wait_sends(self):
        for work, _ in self._pending:
            work.wait()
        self._pending = []

    # ---- one micro-batch ---------------------------------------------------------------------

    def forward_one_chunk(self, mb, args=None):
        """Runs micro-batch mb: the first stage on args, the others on what the previous stage sent."""
        if self.is_first:
            x = args
        else:
            x = self._recv(self.stage_index - 1, 2 * mb).requires_grad_(True)
        out = self.submod(x)
        self._inputs[mb], self._outputs[mb] = x, out
        if not self.is_last:
            self._send(out, self.stage_index + 1, 2 * mb)
        return out

    def backward_one_chunk(self, mb, loss=None):
        """Backward of micro-batch mb: from the loss on the last stage, from the gradient the next
        stage sent elsewhere; sends the input's gradient back."""
        out = self._outputs.pop(mb)
        x = self._inputs.pop(mb)
        if self.is_last:
            loss.backward()
        else:
            grad = self._recv(self.stage_index + 1, 2 * mb + 1)
            out.backward(grad)
        if not self.is_first:
            g = x.grad if x.grad is not None else ember.zeros_like(x)
            self._send(g, self.stage_index - 1, 2 * mb + 1)
