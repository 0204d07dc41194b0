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
Random transforms draw from ember's default generator, making torchvision's calls in torchvision's
order (torch.empty(1).uniform_, torch.randint, torch.randperm), so ember.manual_seed(s) gives what
torch.manual_seed(s) gives torchvision: checked for RandomResizedCrop and ColorJitter
(tests/python/test_vision_color.py).

Colour (ColorJitter, Grayscale, RandomGrayscale; functional.adjust_brightness/contrast/saturation/
hue, rgb_to_grayscale) computes as torchvision's tensor functions, in float32: equal to
torchvision's values, but for uint8 hue, which follows today's torchvision (* 255.999 when
converting back; 0.14 multiplied by 255: one level apart at most).
"""
from .transforms import *  # noqa: F401,F403
from .transforms import __all__  # noqa: F401
from . import functional  # noqa: F401
