"""torch.utils.data._utils.collate: default_collate / default_convert live in ..collate."""
from ..collate import default_collate, default_convert  # noqa: F401
