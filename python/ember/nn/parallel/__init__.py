"""nn.DataParallel / nn.parallel.DistributedDataParallel.

ember runs on one device, so DataParallel behaves as torch's does on a machine without GPUs: it
holds the model as `self.module` (state_dict keys gain the "module." prefix) and calls it
directly. DistributedDataParallel needs a process group, which ember does not provide.
"""
from ..modules.module import Module

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]


class DataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = []
        self.output_device = None
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    return module(*inputs, **(module_kwargs or {}))


class DistributedDataParallel(Module):
    def __init__(self, module, *args, **kwargs):
        raise RuntimeError("Default process group has not been initialized, please make sure to call "
                           "init_process_group. (ember runs on a single process: use the model directly)")
