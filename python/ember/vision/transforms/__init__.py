"""torchvision.transforms for ember: image transforms on tensors, run by ember's C++ pipeline.

    from ember.vision import transforms
    tf = transforms.Compose([transforms.RandomRotation(10), transforms.ToTensor(),
                             transforms.Normalize((0.1307,), (0.3081,))])

Images are ember tensors (C, H, W) or (H, W), uint8 in 0..255 (what ember.vision.datasets
return) or floating point (after ToTensor); a leading batch dimension is accepted by all but
ToTensor. ToTensor also takes NumPy arrays (H, W) / (H, W, C) and PIL images, as torchvision's
does; the other transforms turn a PIL image or NumPy array into a uint8 tensor (C, H, W) first.

Each class wraps a C++ transform (include/ember/data/transforms.h). A Compose whose members are
all ember transforms (Lambda included) becomes one C++ pipeline, which datasets run inside their
C++ __getitem__ (and DataLoader worker threads without the GIL, except for Lambda's function).
Any other Python callable works in a Compose too; that Compose then runs step by step in Python.
Random transforms draw from ember's default generator: ember.manual_seed makes them repeatable,
but the values differ from torchvision's under the same seed.
"""
from .transforms import *  # noqa: F401,F403
from .transforms import __all__  # noqa: F401
from . import functional  # noqa: F401
