"""ember.distributed: torch.distributed's API over ember's C++ process groups (Gloo for now).

    import ember.distributed as dist
    dist.init_process_group("gloo")          # env://: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    dist.destroy_process_group()

Launch with `ember-run --nproc_per_node=N script.py` (or `python -m ember.distributed.run`).
"""
from ember._C import _distributed as _C


def is_available():
    """Whether this build has distributed training (Gloo found at build time)."""
    return _C.is_available()


if is_available():
    from .distributed_c10d import *  # noqa: F401,F403
    from .distributed_c10d import __all__ as _c10d_all

    __all__ = ["is_available"] + list(_c10d_all)
else:
    __all__ = ["is_available"]
