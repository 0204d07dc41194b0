"""The option types of FullyShardedDataParallel, with torch.distributed.fsdp's names and values."""
from dataclasses import dataclass
from enum import Enum, auto

__all__ = ["ShardingStrategy", "BackwardPrefetch", "MixedPrecision", "CPUOffload", "StateDictType",
           "FullStateDictConfig", "ShardedStateDictConfig", "StateDictConfig"]


class ShardingStrategy(Enum):
    FULL_SHARD = auto()     # parameters, gradients and optimizer state sharded; re-gathered for backward
    SHARD_GRAD_OP = auto()  # gathered parameters kept from forward to backward (ZeRO-2)
    NO_SHARD = auto()       # whole parameters everywhere, gradients all-reduced (DDP's arithmetic)
    HYBRID_SHARD = auto()
    _HYBRID_SHARD_ZERO2 = auto()


class BackwardPrefetch(Enum):
    BACKWARD_PRE = auto()   # start the next unit's all-gather when this unit's backward starts
    BACKWARD_POST = auto()  # ... when this unit's gradient reduction is issued (treated as BACKWARD_PRE)


@dataclass
class MixedPrecision:
    param_dtype: object = None
    reduce_dtype: object = None
    buffer_dtype: object = None
    keep_low_precision_grads: bool = False
    cast_forward_inputs: bool = False
    cast_root_forward_inputs: bool = True


@dataclass
class CPUOffload:
    offload_params: bool = False


class StateDictType(Enum):
    FULL_STATE_DICT = auto()
    LOCAL_STATE_DICT = auto()
    SHARDED_STATE_DICT = auto()


@dataclass
class StateDictConfig:
    offload_to_cpu: bool = False


@dataclass
class FullStateDictConfig(StateDictConfig):
    rank0_only: bool = False


@dataclass
class ShardedStateDictConfig(StateDictConfig):
    pass
