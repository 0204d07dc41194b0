"""Fully sharded data parallel training (torch.distributed.fsdp)."""
from .api import (BackwardPrefetch, CPUOffload, FullStateDictConfig, MixedPrecision, ShardedStateDictConfig,
                  ShardingStrategy, StateDictConfig, StateDictType)
from .fully_sharded_data_parallel import FullyShardedDataParallel

__all__ = ["FullyShardedDataParallel", "ShardingStrategy", "BackwardPrefetch", "MixedPrecision", "CPUOffload",
           "StateDictType", "FullStateDictConfig", "ShardedStateDictConfig", "StateDictConfig"]
