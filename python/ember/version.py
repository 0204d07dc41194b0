"""ember.version: torch.version's fields. `cuda` is the CUDA toolkit version the library was
built with ("13.0"), None in a build without the CUDA backend (as torch's CPU builds)."""
from . import _C

__version__ = "0.1.0"
cuda = _C._cuda.version()
hip = None
debug = False
git_version = "unknown"
