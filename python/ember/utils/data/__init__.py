"""ember.utils.data: torch.utils.data's datasets, samplers, collation and DataLoader.

DataLoader workers are threads (as ember's C++ DataLoader): Python datasets need no pickling,
batches are handed over by reference, and work that releases the GIL (ember ops, file reads,
sleeps) runs in parallel. Each worker thread has its own ember default generator.
"""
from .dataset import (Dataset, IterableDataset, TensorDataset, StackDataset, Subset, ConcatDataset, ChainDataset,
                      random_split)
from .sampler import (Sampler, SequentialSampler, RandomSampler, SubsetRandomSampler, WeightedRandomSampler,
                      BatchSampler)
from .distributed import DistributedSampler
from .collate import default_collate, default_convert
from .dataloader import DataLoader, get_worker_info, WorkerInfo

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset", "ChainDataset", "random_split",
           "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler", "DistributedSampler", "default_collate", "default_convert", "DataLoader",
           "get_worker_info", "WorkerInfo"]
