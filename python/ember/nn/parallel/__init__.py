"""nn.DataParallel / nn.parallel.DistributedDataParallel.

DataParallel behaves as torch's does on a machine with one device: it holds the model as
`self.module` (state_dict keys gain the "module." prefix) and calls it directly.
DistributedDataParallel (distributed.py) averages gradients over a process group.
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


from .distributed import DistributedDataParallel  # noqa: E402
