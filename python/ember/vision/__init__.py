"""ember.vision: a small torchvision for ember (datasets, transforms, models).

    import ember.vision as torchvision
    from ember.vision import datasets, transforms

Datasets read local files only (ember never downloads); transforms run in ember's C++ pipeline.
See the submodules' docstrings for what differs from torchvision.
"""
import importlib

from . import datasets, transforms, utils  # noqa: F401

__version__ = "0.1.0"


def __getattr__(name):
    # models builds on ember.nn; import it on first use (as `ember.vision.models` or an attribute).
    if name == "models":
        return importlib.import_module(".models", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
