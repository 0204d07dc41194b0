"""torchvision.utils for ember: make_grid (a batch of images tiled into one) and save_image
(that grid written as a PNG: an encoder over Python's zlib, no imaging library needed; other
formats go through PIL when it is installed)."""
import math
import os
import struct
import zlib

from .. import _C

__all__ = ["make_grid", "save_image", "encode_png"]


def make_grid(tensor, nrow=8, padding=2, normalize=False, value_range=None, scale_each=False, pad_value=0.0,
              **kwargs):
    """Tiles a (B, C, H, W) batch (or a list of (C, H, W) images) into one (C, H', W') image with
    nrow images per row, `padding` pixels of pad_value between and around them. normalize maps
    value_range (default: the min and max, of each image when scale_each) onto [0, 1]. One-channel
    images become three-channel, as torchvision's."""
    if "range" in kwargs:
        value_range = kwargs.pop("range")
    if kwargs:
        raise TypeError(f"make_grid() got unexpected keyword arguments {sorted(kwargs)}")
    if not isinstance(tensor, _C.Tensor):
        if isinstance(tensor, (list, tuple)) and all(isinstance(t, _C.Tensor) for t in tensor):
            tensor = _C.stack(list(tensor), 0)
        else:
            raise TypeError(f"tensor or list of tensors expected, got {type(tensor)}")
    if tensor.dim() == 2:  # a single image H x W
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 3:  # a single image
        if tensor.size(0) == 1:  # if single-channel, convert to 3-channel
            tensor = _C.cat((tensor, tensor, tensor), 0)
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 4 and tensor.size(1) == 1:  # single-channel images
        tensor = _C.cat((tensor, tensor, tensor), 1)
    if tensor.dim() != 4:
        raise ValueError(f"make_grid expects a 2-, 3- or 4-D tensor, got {tensor.dim()} dims")

    if normalize:
        tensor = tensor.clone()  # avoid modifying tensor in-place
        if value_range is not None and not isinstance(value_range, tuple):
            raise TypeError("value_range has to be a tuple (min, max) if specified. min and max are numbers")

        def norm_ip(img, low, high):
            img.clamp_(min=low, max=high)
            img.sub_(low).div_(max(high - low, 1e-5))

        def norm_range(t):
            if value_range is not None:
                norm_ip(t, value_range[0], value_range[1])
            else:
                norm_ip(t, float(t.min()), float(t.max()))

        if scale_each:
            for t in tensor:  # each image separately
                norm_range(t)
        else:
            norm_range(tensor)

    if tensor.size(0) == 1:
        return tensor.squeeze(0)

    nmaps = tensor.size(0)
    xmaps = min(nrow, nmaps)
    ymaps = int(math.ceil(float(nmaps) / xmaps))
    height, width = int(tensor.size(2) + padding), int(tensor.size(3) + padding)
    num_channels = tensor.size(1)
    grid = tensor.new_full((num_channels, height * ymaps + padding, width * xmaps + padding), pad_value)
    k = 0
    for y in range(ymaps):
        for x in range(xmaps):
            if k >= nmaps:
                break
            grid.narrow(1, y * height + padding, height - padding).narrow(
                2, x * width + padding, width - padding).copy_(tensor[k])
            k += 1
    return grid


def _png_chunk(kind, payload):
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload) & 0xFFFFFFFF)


def encode_png(image):
    """PNG bytes of a uint8 image: (H, W) grey, or (H, W, C) with C = 1 grey, 2 grey+alpha, 3 RGB,
    4 RGBA (a NumPy array or an ember tensor). 8 bits per sample, no interlacing, every row with
    filter type 0, the pixel stream deflated with zlib."""
    import numpy as np
    arr = image.numpy() if isinstance(image, _C.Tensor) else np.asarray(image)
    if arr.dtype != np.uint8:
        raise TypeError(f"encode_png expects uint8 pixels, got {arr.dtype}")
    if arr.ndim == 2:
        arr = arr[:, :, None]
    if arr.ndim != 3 or arr.shape[2] not in (1, 2, 3, 4):
        raise ValueError(f"encode_png expects (H, W) or (H, W, C) with C in 1..4, got shape {arr.shape}")
    height, width, channels = arr.shape
    if height == 0 or width == 0:
        raise ValueError("encode_png: an image needs at least one pixel")
    color_type = {1: 0, 2: 4, 3: 2, 4: 6}[channels]
    rows = np.ascontiguousarray(arr).reshape(height, width * channels)
    raw = np.concatenate([np.zeros((height, 1), dtype=np.uint8), rows], axis=1).tobytes()
    header = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header) + _png_chunk(b"IDAT", zlib.compress(raw, 6))
            + _png_chunk(b"IEND", b""))


def save_image(tensor, fp, format=None, **kwargs):
    """Writes make_grid(tensor, **kwargs) to fp (a path or a binary file object) as an image:
    values in [0, 1] scaled to 0..255 and rounded, as torchvision's. PNG is written by ember
    itself; other formats (format= or the file's extension) need PIL."""
    grid = make_grid(tensor, **kwargs)
    if grid.dim() == 2:
        grid = grid.unsqueeze(0)
    ndarr = grid.mul(255).add_(0.5).clamp_(0, 255).permute(1, 2, 0).to(_C.uint8).cpu().contiguous().numpy()
    fmt = format
    if fmt is None and isinstance(fp, (str, bytes, os.PathLike)):
        ext = os.path.splitext(os.fsdecode(fp))[1].lower().lstrip(".")
        fmt = {"jpg": "jpeg", "tif": "tiff"}.get(ext, ext) or "png"
    fmt = (fmt or "png").lower()
    if fmt == "png":
        data = encode_png(ndarr)
    else:
        try:
            from PIL import Image
        except ImportError as e:
            raise ValueError(f"save_image: ember writes PNG itself; format {fmt!r} needs PIL (pip install pillow)") from e
        import io
        buf = io.BytesIO()
        Image.fromarray(ndarr if ndarr.shape[2] != 1 else ndarr[:, :, 0]).save(buf, format=fmt.upper())
        data = buf.getvalue()
    if isinstance(fp, (str, bytes, os.PathLike)):
        with open(fp, "wb") as f:
            f.write(data)
    else:
        fp.write(data)
