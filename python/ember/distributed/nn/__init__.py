"""torch.distributed.nn: collectives autograd differentiates (see functional)."""
from . import functional  # noqa: F401
