"""The transform classes (see the package docstring). Each keeps torchvision's constructor
signature and attribute names; `_t` is the C++ transform it runs."""
import enum
import numbers
from collections.abc import Sequence

import ember
from ember._C import _vision

__all__ = [
    "Compose", "ToTensor", "Normalize", "Lambda", "Resize", "CenterCrop", "RandomCrop",
    "RandomHorizontalFlip", "RandomVerticalFlip", "RandomRotation", "RandomAffine", "InterpolationMode",
    "RandomResizedCrop", "ColorJitter", "Grayscale", "RandomGrayscale",
]


class InterpolationMode(enum.Enum):
    """As torchvision's; ember implements NEAREST and BILINEAR."""
    NEAREST = "nearest"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


def _interpolation_mode(interpolation, who):
    """InterpolationMode from the enum or its value ('nearest', 'bilinear')."""
    try:
        return InterpolationMode(interpolation)
    except ValueError:
        raise ValueError(f"{who}: interpolation must be an InterpolationMode, got {interpolation!r}") from None


def _interpolation_name(interpolation, who):
    interpolation = _interpolation_mode(interpolation, who).value
    if interpolation not in ("nearest", "bilinear"):
        raise ValueError(f"{who}: interpolation must be InterpolationMode.NEAREST or InterpolationMode.BILINEAR "
                         f"(ember implements these two), got {interpolation!r}")
    return interpolation


def _is_pil_image(img):
    # PIL is optional: only look for it when the object could be one.
    if type(img).__module__.split(".")[0] != "PIL":
        return False
    from PIL import Image
    return isinstance(img, Image.Image)


def _numpy_to_chw(array):
    """NumPy (H, W) or (H, W, C) -> tensor (C, H, W), as torchvision's to_tensor arranges it."""
    import numpy as np
    if array.ndim not in (2, 3):
        raise ValueError(f"pic should be 2/3 dimensional. Got {array.ndim} dimensions.")
    if array.ndim == 2:
        array = array[:, :, None]
    return ember.from_numpy(np.ascontiguousarray(array.transpose(2, 0, 1)))


def _pil_to_numpy(img):
    import numpy as np
    array = np.array(img, copy=True)
    if img.mode == "1":  # torchvision maps a bilevel image to 0/255
        array = array.astype(np.uint8) * 255
    return array


def _image_tensor(img, who):
    """The transforms' input as a tensor: tensors pass through; PIL images and NumPy arrays
    become (C, H, W) tensors of their dtype (uint8 for ordinary images)."""
    if isinstance(img, ember.Tensor):
        return img
    if _is_pil_image(img):
        return _numpy_to_chw(_pil_to_numpy(img))
    if type(img).__module__ == "numpy" and hasattr(img, "ndim"):
        return _numpy_to_chw(img)
    raise TypeError(f"{who}: img should be an ember Tensor, a NumPy array or a PIL Image. Got {type(img)}")


def _size_list(size, who):
    if isinstance(size, numbers.Integral):
        return [int(size)]
    if isinstance(size, Sequence) and len(size) in (1, 2):
        return [int(s) for s in size]
    raise ValueError(f"{who}: size should be an int or a sequence of 1 or 2 ints (h, w), got {size!r}")


def _range(value, who, name):
    """torchvision's _setup_angle: a number d means (-d, d); else a (min, max) pair."""
    if isinstance(value, numbers.Number):
        if value < 0:
            raise ValueError(f"{who}: If {name} is a single number, it must be positive.")
        return (float(-value), float(value))  # float(-0) is 0.0, as torchvision prints it
    if isinstance(value, Sequence) and len(value) == 2:
        return (float(value[0]), float(value[1]))
    raise ValueError(f"{who}: If {name} is a sequence, it must be of len 2.")


def _fill_value(fill, who):
    if fill is None:
        return 0.0
    if isinstance(fill, numbers.Number):
        return float(fill)
    if isinstance(fill, Sequence) and len(fill) > 0 and all(f == fill[0] for f in fill):
        return float(fill[0])
    raise NotImplementedError(f"{who}: ember supports one fill value for every channel, got {fill!r}")


class _CppTransform:
    """A transform backed by a C++ one (self._t)."""
    _t = None

    def __call__(self, img):
        return self._t(_image_tensor(img, type(self).__name__))

    def __repr__(self):
        return repr(self._t)


class Compose:
    """Applies the transforms in order. When all are ember transforms the whole list is one C++
    pipeline (`_t`); otherwise each is called in turn, so any Python callable may be a member."""

    def __init__(self, transforms):
        self.transforms = transforms
        self._signature = None
        self._cpp = None

    @property
    def _t(self):
        # Recomputed when the list changes (torchvision lets users edit compose.transforms).
        signature = tuple(id(t) for t in self.transforms)
        if signature != self._signature:
            parts = [getattr(t, "_t", None) for t in self.transforms]
            self._cpp = _vision.Compose(parts) if all(p is not None for p in parts) else None
            self._signature = signature
        return self._cpp

    def __call__(self, img):
        cpp = self._t
        if cpp is not None and isinstance(img, ember.Tensor):
            return cpp(img)
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self):
        body = "".join(f"\n    {t}" for t in self.transforms)
        return f"{type(self).__name__}({body}\n)"


class ToTensor(_CppTransform):
    """uint8 (H, W) / (C, H, W) tensors, NumPy (H, W) / (H, W, C) arrays and PIL images -> float32
    (C, H, W) in [0, 1]. Floating inputs keep their values (as torchvision's)."""

    def __init__(self):
        self._t = _vision.ToTensor()

    def __call__(self, pic):
        if isinstance(pic, ember.Tensor):
            return self._t(pic)
        if _is_pil_image(pic):
            pic = _pil_to_numpy(pic)
        if type(pic).__module__ == "numpy" and hasattr(pic, "ndim"):
            img = _numpy_to_chw(pic)
            # torchvision divides only byte images; other arrays keep dtype and values.
            return self._t(img) if img.dtype == ember.uint8 else img
        raise TypeError(f"pic should be PIL Image, ndarray or Tensor. Got {type(pic)}.")


class Normalize(_CppTransform):
    def __init__(self, mean, std, inplace=False):
        self.mean, self.std, self.inplace = mean, std, inplace
        as_list = lambda v: [float(x) for x in (v.tolist() if isinstance(v, ember.Tensor) else v)] \
            if not isinstance(v, numbers.Number) else [float(v)]
        self._t = _vision.Normalize(as_list(mean), as_list(std), bool(inplace))

    def __repr__(self):
        return f"{type(self).__name__}(mean={self.mean}, std={self.std})"


class Lambda(_CppTransform):
    """Calls `lambd` on the image. Called on its own it may return anything; inside a C++ Compose
    pipeline (a Compose of ember transforms only) it must return a Tensor."""

    def __init__(self, lambd):
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {type(lambd).__name__!r}")
        self.lambd = lambd
        self._t = _vision.Lambda(lambd)

    def __call__(self, img):
        return self.lambd(img)

    def __repr__(self):
        return f"{type(self).__name__}()"


class Resize(_CppTransform):
    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=None):
        if max_size is not None:
            raise NotImplementedError("Resize: max_size is not supported by ember")
        self.size, self.max_size, self.antialias = size, max_size, antialias
        self.interpolation = _interpolation_mode(interpolation, "Resize")
        self._t = _vision.Resize(_size_list(size, "Resize"), _interpolation_name(interpolation, "Resize"),
                                 bool(antialias))

    def __repr__(self):
        return (f"{type(self).__name__}(size={self.size}, interpolation={self.interpolation.value}, "
                f"max_size={self.max_size}, antialias={self.antialias})")


class CenterCrop(_CppTransform):
    def __init__(self, size):
        self.size = tuple(_size_list(size, "CenterCrop")) * (2 if isinstance(size, numbers.Integral) else 1)
        self._t = _vision.CenterCrop(_size_list(size, "CenterCrop"))

    def __repr__(self):
        return f"{type(self).__name__}(size={self.size})"


class RandomCrop(_CppTransform):
    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        if padding is None:
            pads = []
        elif isinstance(padding, numbers.Integral):
            pads = [int(padding)]
        elif isinstance(padding, Sequence) and len(padding) in (1, 2, 4):
            pads = [int(p) for p in padding]
        else:
            raise ValueError(f"RandomCrop: padding must be an int or a 1, 2, or 4 element sequence, got {padding!r}")
        self.size = tuple(_size_list(size, "RandomCrop")) * (2 if isinstance(size, numbers.Integral) else 1)
        self.padding, self.pad_if_needed, self.fill, self.padding_mode = padding, pad_if_needed, fill, padding_mode
        self._t = _vision.RandomCrop(_size_list(size, "RandomCrop"), pads, bool(pad_if_needed),
                                     _fill_value(fill, "RandomCrop"), padding_mode)

    def __repr__(self):
        return f"{type(self).__name__}(size={self.size}, padding={self.padding})"


class RandomHorizontalFlip(_CppTransform):
    def __init__(self, p=0.5):
        self.p = p
        self._t = _vision.RandomHorizontalFlip(float(p))

    def __repr__(self):
        return f"{type(self).__name__}(p={self.p})"


class RandomVerticalFlip(_CppTransform):
    def __init__(self, p=0.5):
        self.p = p
        self._t = _vision.RandomVerticalFlip(float(p))

    def __repr__(self):
        return f"{type(self).__name__}(p={self.p})"


class RandomRotation(_CppTransform):
    def __init__(self, degrees, interpolation=InterpolationMode.NEAREST, expand=False, center=None, fill=0):
        if expand:
            raise NotImplementedError("RandomRotation: expand=True is not supported by ember")
        if center is not None:
            raise NotImplementedError("RandomRotation: center is not supported by ember (it rotates about the "
                                      "image centre)")
        self.degrees = list(_range(degrees, "RandomRotation", "degrees"))
        self.interpolation = _interpolation_mode(interpolation, "RandomRotation")
        self.expand, self.center, self.fill = expand, center, fill
        self._t = _vision.RandomRotation(tuple(self.degrees), _interpolation_name(interpolation, "RandomRotation"),
                                         _fill_value(fill, "RandomRotation"))

    def __repr__(self):
        fill = f", fill={self.fill}" if self.fill is not None else ""
        return (f"{type(self).__name__}(degrees={self.degrees}, interpolation={self.interpolation.value}, "
                f"expand={self.expand}{fill})")


class RandomAffine(_CppTransform):
    def __init__(self, degrees, translate=None, scale=None, shear=None, interpolation=InterpolationMode.NEAREST,
                 fill=0, center=None):
        if center is not None:
            raise NotImplementedError("RandomAffine: center is not supported by ember (it transforms about the "
                                      "image centre)")
        self.degrees = list(_range(degrees, "RandomAffine", "degrees"))
        pair = lambda v, name: None if v is None else _checked_pair(v, name)
        self.translate, self.scale = translate, scale
        if shear is None:
            self.shear, x_shear = None, None
        elif isinstance(shear, Sequence) and len(shear) == 4:
            if shear[2] != 0 or shear[3] != 0:
                raise NotImplementedError("RandomAffine: ember shears along x only; a y shear range "
                                          f"(shear[2:4] = {tuple(shear[2:4])}) is not supported")
            self.shear = [float(v) for v in shear]
            x_shear = tuple(self.shear[:2])
        else:
            self.shear = list(_range(shear, "RandomAffine", "shear"))
            x_shear = tuple(self.shear)
        self.interpolation = _interpolation_mode(interpolation, "RandomAffine")
        self.fill, self.center = fill, center
        self._t = _vision.RandomAffine(tuple(self.degrees), pair(translate, "translate"), pair(scale, "scale"),
                                       x_shear, _interpolation_name(interpolation, "RandomAffine"),
                                       _fill_value(fill, "RandomAffine"))

    def __repr__(self):
        s = f"{type(self).__name__}(degrees={self.degrees}"
        s += f", translate={self.translate}" if self.translate is not None else ""
        s += f", scale={self.scale}" if self.scale is not None else ""
        s += f", shear={self.shear}" if self.shear is not None else ""
        s += f", interpolation={self.interpolation.value}" if self.interpolation != InterpolationMode.NEAREST else ""
        s += f", fill={self.fill}" if self.fill != 0 else ""
        return s + ")"


class RandomResizedCrop(_CppTransform):
    """A crop of random area (a fraction drawn from `scale`) and aspect ratio (log-uniform in
    `ratio`), resized to `size`; drawn as torchvision draws it. Bilinear shrinking is antialiased
    by default, as torchvision's since 0.17 (antialias=False: plain bilinear sampling)."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0), interpolation=InterpolationMode.BILINEAR,
                 antialias=True):
        sizes = _size_list(size, "RandomResizedCrop")
        self.size = (sizes[0], sizes[-1])
        if not isinstance(scale, Sequence) or not isinstance(ratio, Sequence) or len(scale) != 2 or len(ratio) != 2:
            raise TypeError("Scale and ratio should be a sequence of two numbers (min, max)")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            import warnings
            warnings.warn("Scale and ratio should be of kind (min, max)")
        self.scale, self.ratio = scale, ratio
        self.interpolation = _interpolation_mode(interpolation, "RandomResizedCrop")
        self.antialias = True if antialias is None else bool(antialias)
        self._t = _vision.RandomResizedCrop(list(self.size), (float(scale[0]), float(scale[1])),
                                            (float(ratio[0]), float(ratio[1])),
                                            _interpolation_name(interpolation, "RandomResizedCrop"), self.antialias)


def _jitter_range(value, name, center=1.0, bound=(0.0, float("inf")), clip_first_on_zero=True):
    """torchvision's ColorJitter._check_input: a number v means [center - v, center + v]; None when
    the range is the identity."""
    if isinstance(value, numbers.Number):
        if value < 0:
            raise ValueError(f"If {name} is a single number, it must be non negative.")
        value = [center - float(value), center + float(value)]
        if clip_first_on_zero:
            value[0] = max(value[0], 0.0)
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        value = [float(value[0]), float(value[1])]
    else:
        raise TypeError(f"{name} should be a single number or a list/tuple with length 2.")
    if not bound[0] <= value[0] <= value[1] <= bound[1]:
        raise ValueError(f"{name} values should be between {bound}, but got {value}.")
    if value[0] == value[1] == center:
        return None
    return tuple(value)


class ColorJitter(_CppTransform):
    """Random brightness, contrast, saturation and hue, in a random order per call (torchvision's)."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        self.brightness = _jitter_range(brightness, "brightness")
        self.contrast = _jitter_range(contrast, "contrast")
        self.saturation = _jitter_range(saturation, "saturation")
        self.hue = _jitter_range(hue, "hue", center=0, bound=(-0.5, 0.5), clip_first_on_zero=False)
        self._t = _vision.ColorJitter(self.brightness, self.contrast, self.saturation, self.hue)


class Grayscale(_CppTransform):
    def __init__(self, num_output_channels=1):
        self.num_output_channels = num_output_channels
        self._t = _vision.Grayscale(int(num_output_channels))


class RandomGrayscale(_CppTransform):
    def __init__(self, p=0.1):
        self.p = p
        self._t = _vision.RandomGrayscale(float(p))


def _checked_pair(value, name):
    if not (isinstance(value, Sequence) and len(value) == 2):
        raise ValueError(f"RandomAffine: {name} should be a list or tuple and it must be of length 2.")
    return (float(value[0]), float(value[1]))
