"""ember.vision.utils.make_grid / save_image and ember.vision.datasets.FakeData. make_grid is
compared with torchvision's definition (reimplemented in NumPy here, torchvision is not
installed); PNG files are decoded back by a small parser over zlib and, when present, PIL."""
import io
import math
import struct
import zlib

import numpy as np
import pytest

import ember
from ember.vision import datasets, transforms
from ember.vision.utils import encode_png, make_grid, save_image


def reference_grid(batch, nrow=8, padding=2, pad_value=0.0):
    b, c, h, w = batch.shape
    xmaps = min(nrow, b)
    ymaps = int(math.ceil(b / xmaps))
    grid = np.full((c, (h + padding) * ymaps + padding, (w + padding) * xmaps + padding), pad_value)
    for k in range(b):
        y, x = divmod(k, xmaps)
        grid[:, y * (h + padding) + padding:y * (h + padding) + padding + h,
             x * (w + padding) + padding:x * (w + padding) + padding + w] = batch[k]
    return grid


def decode_png(data):
    """(H, W, C) uint8 from PNG bytes with filter type 0 rows (what ember writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        payload = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert crc == zlib.crc32(kind + payload) & 0xFFFFFFFF
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", payload)
        elif kind == b"IDAT":
            idat += payload
        pos += 12 + length
    width, height, depth, color, _, _, _ = header
    channels = {0: 1, 4: 2, 2: 3, 6: 4}[color]
    assert depth == 8
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(height, 1 + width * channels)
    assert (raw[:, 0] == 0).all()
    return raw[:, 1:].reshape(height, width, channels)


def test_make_grid_layout():
    rng = np.random.default_rng(0)
    batch = rng.random((5, 3, 4, 6)).astype(np.float32)
    for kw in ({}, {"nrow": 2}, {"nrow": 3, "padding": 0}, {"padding": 3, "pad_value": 0.5}):
        got = make_grid(ember.tensor(batch), **kw).numpy()
        np.testing.assert_array_equal(got, reference_grid(batch, **kw).astype(np.float32))
    got = make_grid([ember.tensor(b) for b in batch], nrow=5).numpy()
    np.testing.assert_array_equal(got, reference_grid(batch, nrow=5).astype(np.float32))


def test_make_grid_single_and_grey_images():
    img = ember.rand(1, 5, 7)
    out = make_grid(img)  # one image: no padding, grey becomes three channels
    assert out.shape == (3, 5, 7) and ember.equal(out[0], img[0]) and ember.equal(out[2], img[0])
    assert make_grid(ember.rand(5, 7)).shape == (3, 5, 7)
    grey = ember.rand(2, 1, 3, 3)
    assert make_grid(grey, padding=1).shape == (3, 5, 9)


def test_make_grid_normalize():
    rng = np.random.default_rng(1)
    batch = rng.standard_normal((2, 3, 2, 2)) * 4
    out = make_grid(ember.tensor(batch), normalize=True, padding=0).numpy()
    expected = (batch - batch.min()) / (batch.max() - batch.min())
    np.testing.assert_allclose(out, reference_grid(expected, padding=0), rtol=1e-12)
    out = make_grid(ember.tensor(batch), normalize=True, scale_each=True, padding=0).numpy()
    each = np.stack([(b - b.min()) / (b.max() - b.min()) for b in batch])
    np.testing.assert_allclose(out, reference_grid(each, padding=0), rtol=1e-12)
    out = make_grid(ember.tensor(batch), normalize=True, value_range=(-1.0, 1.0), padding=0).numpy()
    np.testing.assert_allclose(out, reference_grid((np.clip(batch, -1, 1) + 1) / 2, padding=0), rtol=1e-12)
    with pytest.raises(TypeError, match="value_range has to be a tuple"):
        make_grid(ember.tensor(batch), normalize=True, value_range=[0, 1])
    assert ember.equal(ember.tensor(batch), ember.tensor(batch))  # input untouched


def test_save_image_writes_png(tmp_path):
    rng = np.random.default_rng(2)
    batch = rng.random((3, 3, 4, 5)).astype(np.float32)
    path = tmp_path / "grid.png"
    save_image(ember.tensor(batch), path, nrow=2, padding=1)
    decoded = decode_png(path.read_bytes())
    grid = reference_grid(batch, nrow=2, padding=1)
    expected = np.clip(grid * 255 + 0.5, 0, 255).astype(np.uint8).transpose(1, 2, 0)
    np.testing.assert_array_equal(decoded, expected)
    try:
        from PIL import Image
    except ImportError:
        return
    np.testing.assert_array_equal(np.asarray(Image.open(path)), expected)
    buf = io.BytesIO()
    save_image(ember.tensor(batch[0]), buf, format="png")
    assert np.asarray(Image.open(io.BytesIO(buf.getvalue()))).shape == (4, 5, 3)


def test_encode_png_modes():
    rng = np.random.default_rng(3)
    for shape in ((3, 4), (3, 4, 1), (3, 4, 2), (3, 4, 3), (3, 4, 4)):
        img = rng.integers(0, 256, shape, dtype=np.uint8)
        decoded = decode_png(encode_png(img))
        np.testing.assert_array_equal(decoded, img.reshape(3, 4, -1))
    with pytest.raises(TypeError, match="uint8"):
        encode_png(np.zeros((2, 2), dtype=np.float32))


def test_fake_data_is_deterministic_per_index():
    ds = datasets.FakeData(size=5, image_size=(3, 8, 6), num_classes=4)
    assert len(ds) == 5
    img, target = ds[2]
    assert img.dtype == ember.uint8 and img.shape == (3, 8, 6) and 0 <= target < 4
    img2, target2 = ds[2]
    assert ember.equal(img, img2) and target == target2
    assert not ember.equal(ds[1][0], ds[2][0])
    assert ember.equal(ds[-1][0], ds[4][0])
    ember.manual_seed(123)
    before = ember.rand(3)
    ember.manual_seed(123)
    ds[0]
    assert ember.equal(ember.rand(3), before)  # the global generator is untouched
    shifted = datasets.FakeData(size=5, image_size=(3, 8, 6), num_classes=4, random_offset=1)
    assert ember.equal(shifted[1][0], ds[2][0])
    with pytest.raises(IndexError, match="FakeData index out of range"):
        ds[5]
    t = datasets.FakeData(size=3, image_size=(1, 4, 4), transform=transforms.ToTensor(),
                          target_transform=lambda y: y + 100)
    x, y = t[0]
    assert x.dtype == ember.float32 and x.shape == (1, 4, 4) and float(x.min()) >= 0 and float(x.max()) <= 1
    assert y >= 100
    loader = ember.utils.data.DataLoader(datasets.FakeData(size=6, image_size=(3, 4, 4),
                                                           transform=transforms.ToTensor()), batch_size=4)
    shapes = [tuple(b[0].shape) for b in loader]
    assert shapes == [(4, 3, 4, 4), (2, 3, 4, 4)]
