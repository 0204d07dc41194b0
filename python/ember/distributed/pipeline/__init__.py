"""torch.distributed.pipeline (PyTorch 1.x): single-process pipeline parallelism over the devices of
one machine (`sync.Pipe`). PyTorch 2.x replaced it with torch.distributed.pipelining (one stage per
process), which ember has too (ember.distributed.pipelining)."""
from . import sync  # noqa: F401
