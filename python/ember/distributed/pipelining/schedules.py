"""Pipeline schedules (torch.distributed.pipelining): a batch cut into micro-batches flows through
the stages.

GPipe: every micro-batch forward, then every backward (activations of all micro-batches alive at
once). 1F1B: stage i runs num_stages - 1 - i forwards ahead, then alternates one forward and one
backward, then drains the backwards: at most num_stages micro-batches' activations alive, the
same arithmetic.

The loss is computed per micro-batch on the last stage by loss_fn(output, target) and its
gradient scaled by 1 / n_microbatches, so gradients equal one step on the whole batch with a mean
loss. step() takes the whole batch on the first stage and the whole target on the last; other
stages call step() with nothing."""
import ember

__all__ = ["ScheduleGPipe", "Schedule1F1B", "PipelineScheduleSingle"]


class PipelineScheduleSingle:
    def __init__(self, stage, n_microbatches, loss_fn=None, args_chunk_spec=None, kwargs_chunk_spec=None,
                 output_merge_spec=None, scale_grads=True):
        self._stage = stage
        self._n = n_microbatches
        self._loss_fn = loss_fn
        self._scale = scale_grads
        if stage.is_last and loss_fn is None:
            raise ValueError(f"{type(self).__name__}: the last stage needs a loss_fn")

    def _split(self, t, what):
        if t is None:
            return [None] * self._n
        if t.shape[0] % self._n:
            raise ValueError(f"{type(self).__name__}: the {what}'s batch ({t.shape[0]}) does not divide into "
                             f"{self._n} micro-batches")
        return list(t.chunk(self._n, dim=0))

    def _forward(self, mb, xs, targets, losses):
        out = self._stage.forward_one_chunk(mb, xs[mb])
        if self._stage.is_last:
            loss = self._loss_fn(out, targets[mb])
            losses.append(loss.detach())
            return loss / self._n if self._scale else loss
        return None

    def step(self, *args, target=None, losses=None, **kwargs):
        stage = self._stage
        if stage.is_first and len(args) != 1:
            raise ValueError(f"{type(self).__name__}.step: the first stage takes the batch (one tensor)")
        if stage.is_last and target is None:
            raise ValueError(f"{type(self).__name__}.step: the last stage needs target=")
        xs = self._split(args[0] if args else None, "input")
        targets = self._split(target, "target")
        got = [] if losses is None else losses
        stage._reset()
        try:
            outputs = self._run(xs, targets, got)
        finally:
            stage._wait_sends()
        if stage.is_last:
            return ember.cat([o.detach() for o in outputs], dim=0) if outputs else None
        return None


class ScheduleGPipe(PipelineScheduleSingle):
    def _run(self, xs, targets, losses):
        stage, scaled, outs = self._stage, {}, []
        for mb in range(self._n):
            scaled[mb] = self._forward(mb, xs, targets, losses)
            if stage.is_last:
                outs.append(stage._outputs[mb])
        for mb in range(self._n):
            stage.backward_one_chunk(mb, scaled[mb])
        return outs


class Schedule1F1B(PipelineScheduleSingle):
    def _run(self, xs, targets, losses):
        stage, scaled, outs = self._stage, {}, []
        warmup = min(self._n, stage.num_stages - 1 - stage.stage_index)
        fwd = bwd = 0
        for _ in range(warmup):
            scaled[fwd] = self._forward(fwd, xs, targets, losses)
            fwd += 1
        while fwd < self._n:  # steady state: one forward, one backward
            scaled[fwd] = self._forward(fwd, xs, targets, losses)
            if stage.is_last:
                outs.append(stage._outputs[fwd])
            fwd += 1
            stage.backward_one_chunk(bwd, scaled.pop(bwd))
            bwd += 1
        while bwd < self._n:
            stage.backward_one_chunk(bwd, scaled.pop(bwd))
            bwd += 1
        return outs
