"""torchvision.transforms.functional for ember: the deterministic kernels under the transforms.
Inputs as for the transform classes (tensors; PIL images and NumPy arrays are converted)."""
from ember._C import _vision

from .transforms import (InterpolationMode, ToTensor, _fill_value, _image_tensor, _interpolation_name,
                         _size_list)

__all__ = ["to_tensor", "normalize", "resize", "center_crop", "crop", "hflip", "vflip", "affine", "rotate",
           "resized_crop", "adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue",
           "rgb_to_grayscale"]

_to_tensor = ToTensor()


def to_tensor(pic):
    return _to_tensor(pic)


def normalize(tensor, mean, std, inplace=False):
    return _vision.Normalize([float(m) for m in mean], [float(s) for s in std], bool(inplace))(tensor)


def resize(img, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=None):
    """antialias=None is torchvision 0.14's default for tensors (no antialiasing); True filters
    when shrinking with bilinear (today's torchvision default)."""
    if max_size is not None:
        raise NotImplementedError("resize: max_size is not supported by ember")
    return _vision.Resize(_size_list(size, "resize"), _interpolation_name(interpolation, "resize"), bool(antialias))(
        _image_tensor(img, "resize"))


def center_crop(img, output_size):
    return _vision.CenterCrop(_size_list(output_size, "center_crop"))(_image_tensor(img, "center_crop"))


def crop(img, top, left, height, width):
    """The window rows top..top+height, columns left..left+width (a view; no padding)."""
    return _image_tensor(img, "crop")[..., top:top + height, left:left + width]


def hflip(img):
    return _image_tensor(img, "hflip").flip(-1)


def vflip(img):
    return _image_tensor(img, "vflip").flip(-2)


def affine(img, angle, translate, scale, shear, interpolation=InterpolationMode.NEAREST, fill=None, center=None):
    """torchvision's F.affine: angle and shear in degrees (shear: a number or [x] / [x, y] with
    y = 0), translate in pixels (integers), about the image centre. fill=None means 0 here; with
    bilinear interpolation torchvision's fill=None differs at the border (it blends with zero
    padding without masking), so ember matches torchvision called with fill=0, which is what
    RandomAffine and RandomRotation use."""
    if center is not None:
        raise NotImplementedError("affine: center is not supported by ember")
    if not isinstance(shear, (list, tuple)):
        shear = [shear, 0.0]
    elif len(shear) == 1:
        shear = [shear[0], 0.0]
    if len(translate) != 2 or len(shear) != 2:
        raise ValueError(f"affine: translate and shear should have 2 values, got {translate!r} and {shear!r}")
    return _vision.affine(_image_tensor(img, "affine"), float(angle), (float(translate[0]), float(translate[1])),
                          float(scale), (float(shear[0]), float(shear[1])),
                          _interpolation_name(interpolation, "affine"), _fill_value(fill, "affine"))


def rotate(img, angle, interpolation=InterpolationMode.NEAREST, expand=False, center=None, fill=None):
    """Counter-clockwise by `angle` degrees about the centre (torchvision's F.rotate)."""
    if expand or center is not None:
        raise NotImplementedError("rotate: expand and center are not supported by ember")
    # F.rotate turns the opposite way to F.affine's angle.
    return affine(img, -angle, [0, 0], 1.0, [0.0, 0.0], interpolation, fill)


def resized_crop(img, top, left, height, width, size, interpolation=InterpolationMode.BILINEAR, antialias=True):
    """The window rows top..top+height, columns left..left+width, resized to size (h, w) or a
    square; bilinear shrinking antialiased unless antialias=False (torchvision's default)."""
    sizes = _size_list(size, "resized_crop")
    return _vision.resized_crop(_image_tensor(img, "resized_crop"), int(top), int(left), int(height), int(width),
                                [sizes[0], sizes[-1]], _interpolation_name(interpolation, "resized_crop"),
                                True if antialias is None else bool(antialias))


def adjust_brightness(img, brightness_factor):
    return _vision.adjust_brightness(_image_tensor(img, "adjust_brightness"), float(brightness_factor))


def adjust_contrast(img, contrast_factor):
    return _vision.adjust_contrast(_image_tensor(img, "adjust_contrast"), float(contrast_factor))


def adjust_saturation(img, saturation_factor):
    return _vision.adjust_saturation(_image_tensor(img, "adjust_saturation"), float(saturation_factor))


def adjust_hue(img, hue_factor):
    return _vision.adjust_hue(_image_tensor(img, "adjust_hue"), float(hue_factor))


def rgb_to_grayscale(img, num_output_channels=1):
    return _vision.rgb_to_grayscale(_image_tensor(img, "rgb_to_grayscale"), int(num_output_channels))
