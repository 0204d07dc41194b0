"""Pipeline parallelism (torch.distributed.pipelining): split a model into consecutive stages,
one per rank, and stream micro-batches through them.

    stage = PipelineStage(my_part, stage_index=rank, num_stages=world)
    schedule = Schedule1F1B(stage, n_microbatches=4, loss_fn=loss_fn)   # or ScheduleGPipe
    if rank == 0:            schedule.step(x)
    elif rank == world - 1:  schedule.step(target=y, losses=losses)
    else:                    schedule.step()
    optimizer.step()         # each rank updates its own stage

split_sequential cuts an nn.Sequential into balanced stages."""
from .schedules import PipelineScheduleSingle, Schedule1F1B, ScheduleGPipe
from .stage import PipelineStage

__all__ = ["PipelineStage", "ScheduleGPipe", "Schedule1F1B", "PipelineScheduleSingle", "split_sequential"]


def split_sequential(module, num_stages, stage_index=None):
    """The stages of a Sequential, as Sequentials of consecutive children with parameter counts
    as even as the cut points allow; with stage_index, just that stage."""
    from ...nn import Sequential
    children = list(module.children())
    if num_stages < 1 or num_stages > len(children):
        raise ValueError(f"split_sequential: cannot cut {len(children)} modules into {num_stages} stages")
    sizes = [sum(p.numel() for p in c.parameters()) for c in children]
    total = sum(sizes)
    cuts, acc, k = [], 0, 1
    for i, s in enumerate(sizes):
        acc += s
        left_children = len(children) - (i + 1)
        left_stages = num_stages - k
        if k < num_stages and (acc >= total * k / num_stages or left_children == left_stages) and left_children >= left_stages:
            cuts.append(i + 1)
            k += 1
    bounds = [0] + cuts + [len(children)]
    stages = [Sequential(*children[bounds[j]:bounds[j + 1]]) for j in range(num_stages)]
    return stages if stage_index is None else stages[stage_index]
