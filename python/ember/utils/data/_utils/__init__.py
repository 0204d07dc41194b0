"""torch.utils.data._utils's public-ish names, for code that imports them from there."""
from . import collate  # noqa: F401
from ..dataloader import get_worker_info  # noqa: F401
