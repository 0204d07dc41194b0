"""ember.vision: datasets (against the real Fashion-MNIST files and small generated ones),
transforms (against torchvision 0.14 where it is installed, else against NumPy), models."""
import gzip
import os
import struct
from pathlib import Path

import numpy as np
import pytest

import ember
from ember.vision import datasets, transforms
from ember.vision.transforms import functional as VF

FASHION = Path("/usr/share/datasets/fashion-mnist")
needs_fashion = pytest.mark.skipif(not FASHION.is_dir(),
                                   reason=f"{FASHION} missing (Debian package dataset-fashion-mnist)")


@pytest.fixture
def tv():
    """torchvision (with torch) for differential tests; skipped, with the reason shown, without it."""
    pytest.importorskip("torch", reason="PyTorch not installed: differential test skipped")
    return pytest.importorskip("torchvision", reason="torchvision not installed: differential test skipped")


def read_idx_gz(path):
    """An IDX file read with NumPy alone (the reference for ember's C++ reader)."""
    raw = gzip.open(path).read()
    ndim = raw[3]
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def write_idx(path, array, compress):
    header = bytes([0, 0, 0x08, array.ndim]) + struct.pack(">" + "I" * array.ndim, *array.shape)
    data = header + array.astype(np.uint8).tobytes()
    (gzip.open if compress else open)(path, "wb").write(data)


def as_np(t):
    return np.asarray(t.numpy() if isinstance(t, ember.Tensor) else t.detach().numpy())


def to_torch(torch, t):
    return torch.from_numpy(as_np(t).copy())


# =========================================================================== datasets: real files

@pytest.fixture(scope="module")
def fashion_train():
    return datasets.FashionMNIST(str(FASHION), train=True)


@needs_fashion
def test_fashion_mnist_matches_the_idx_files(fashion_train):
    test = datasets.FashionMNIST(FASHION, train=False)  # a Path works as root too
    assert len(fashion_train) == 60000 and len(test) == 10000
    images = read_idx_gz(FASHION / "t10k-images-idx3-ubyte.gz")
    labels = read_idx_gz(FASHION / "t10k-labels-idx1-ubyte.gz")
    np.testing.assert_array_equal(as_np(test.data), images)
    np.testing.assert_array_equal(as_np(test.targets), labels.astype(np.int64))
    assert test.targets.dtype == ember.int64 and test.data.dtype == ember.uint8
    for i in (0, 1, 4321, 9999, -1):
        img, label = test[i]
        assert isinstance(label, int) and label == labels[i]
        assert img.shape == (28, 28) and img.dtype == ember.uint8  # the array of torchvision's PIL image
        np.testing.assert_array_equal(as_np(img), images[i])
    assert test.classes[0] == "T-shirt/top" and test.class_to_idx["Ankle boot"] == 9
    assert np.bincount(as_np(fashion_train.targets)).tolist() == [6000] * 10


@needs_fashion
def test_dataset_index_errors_and_copies(fashion_train):
    with pytest.raises(IndexError, match="out of range"):
        fashion_train[60000]
    with pytest.raises(TypeError):
        fashion_train[1.5]
    img, _ = fashion_train[np.int64(3)]  # NumPy integers index too
    before = fashion_train.data[3].clone()
    img.fill_(7)  # the sample is a copy: the dataset keeps its data
    assert ember.equal(fashion_train.data[3], before)


@needs_fashion
def test_mnist_class_reads_the_same_layout():
    # MNIST and Fashion-MNIST share file names; the classes differ.
    ds = datasets.MNIST(FASHION, train=False)
    assert len(ds) == 10000 and ds.classes[0] == "0 - zero" and ds.raw_folder == str(FASHION)


@needs_fashion
def test_transform_in_cpp_and_python(fashion_train):
    raw, label = fashion_train[5]
    expect = (as_np(raw).astype(np.float32) / 255 - 0.1307) / 0.3081
    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    ds = datasets.FashionMNIST(FASHION, transform=tf, target_transform=lambda y: y + 100)
    assert ds._py_transform is None  # the whole pipeline runs inside the C++ dataset
    img, y = ds[5]
    assert img.shape == (1, 28, 28) and img.dtype == ember.float32 and y == label + 100
    np.testing.assert_allclose(as_np(img)[0], expect, rtol=1e-6, atol=1e-6)
    # A Python callable in the Compose: the pipeline runs step by step in Python, same result.
    seen = []
    mixed = transforms.Compose([lambda x: seen.append(tuple(x.shape)) or x, transforms.ToTensor(),
                                transforms.Normalize((0.1307,), (0.3081,))])
    ds2 = datasets.FashionMNIST(FASHION, transform=mixed)
    assert ds2._py_transform is mixed
    np.testing.assert_allclose(as_np(ds2[5][0])[0], expect, rtol=1e-6, atol=1e-6)
    assert seen == [(28, 28)]  # Python transforms see the (H, W) image too
    # Lambda inside the C++ pipeline.
    ds3 = datasets.FashionMNIST(FASHION, transform=transforms.Compose([
        transforms.ToTensor(), transforms.Lambda(lambda x: x * 2)]))
    assert ds3._py_transform is None
    np.testing.assert_allclose(as_np(ds3[5][0])[0], as_np(raw) / 255 * 2, rtol=1e-6)


@needs_fashion
def test_getitems_and_dataloader(fashion_train):
    from ember.utils.data import DataLoader
    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.5,), (0.5,))])
    ds = datasets.FashionMNIST(FASHION, train=False, transform=tf)
    batch = ds.__getitems__([3, 1, 2])
    for (img, y), i in zip(batch, [3, 1, 2]):
        assert ember.equal(img, ds[i][0]) and y == ds[i][1]
    loader = DataLoader(ds, batch_size=64, shuffle=False, num_workers=2)
    assert len(loader) == 157
    images, labels = next(iter(loader))
    assert images.shape == (64, 1, 28, 28) and images.dtype == ember.float32
    assert labels.shape == (64,) and labels.dtype == ember.int64
    assert ember.equal(labels, ds.targets[:64])
    assert ember.allclose(images[7], ds[7][0])


def test_download_never_downloads(tmp_path):
    with pytest.raises(RuntimeError, match="ember never downloads") as info:
        datasets.FashionMNIST(tmp_path, download=True)
    message = str(info.value)
    assert str(tmp_path) in message and "FashionMNIST/raw" in message and "dataset-fashion-mnist" in message
    with pytest.raises(RuntimeError, match="cannot find train-images-idx3-ubyte"):
        datasets.MNIST(tmp_path)


@needs_fashion
def test_download_true_loads_present_files():
    assert len(datasets.FashionMNIST(FASHION, train=False, download=True)) == 10000


@needs_fashion
def test_repr_like_torchvision():
    ds = datasets.FashionMNIST(FASHION, train=False, transform=transforms.Compose([transforms.ToTensor()]))
    assert repr(ds) == ("Dataset FashionMNIST\n    Number of datapoints: 10000\n"
                        f"    Root location: {FASHION}\n    Split: Test\n"
                        "    Transform: Compose(\n                   ToTensor()\n               )")


# ========================================================================= datasets: generated files

@pytest.mark.parametrize("compress", [True, False])
def test_mnist_torchvision_layout(tmp_path, compress):
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(5, 28, 28), dtype=np.uint8)
    labels = np.array([3, 1, 4, 1, 5], dtype=np.uint8)
    suffix = ".gz" if compress else ""
    write_idx(raw / f"t10k-images-idx3-ubyte{suffix}", images, compress)
    write_idx(raw / f"t10k-labels-idx1-ubyte{suffix}", labels, compress)
    ds = datasets.MNIST(tmp_path, train=False)
    assert len(ds) == 5 and [ds[i][1] for i in range(5)] == [3, 1, 4, 1, 5]
    np.testing.assert_array_equal(as_np(ds[2][0]), images[2])


def test_mnist_bad_label_is_an_error(tmp_path):
    write_idx(tmp_path / "t10k-images-idx3-ubyte", np.zeros((2, 28, 28)), False)
    write_idx(tmp_path / "t10k-labels-idx1-ubyte", np.array([1, 10]), False)
    with pytest.raises(RuntimeError, match="label 1 is 10"):
        datasets.MNIST(tmp_path, train=False)


def test_cifar10_binary(tmp_path):
    folder = tmp_path / "cifar-10-batches-bin"
    folder.mkdir()
    rng = np.random.default_rng(1)
    records = {}
    for name in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
        labels = rng.integers(0, 10, size=3, dtype=np.uint8)
        pixels = rng.integers(0, 256, size=(3, 3072), dtype=np.uint8)
        (folder / name).write_bytes(np.concatenate([labels[:, None], pixels], axis=1).tobytes())
        records[name] = (labels, pixels)
    train = datasets.CIFAR10(tmp_path, train=True)
    test = datasets.CIFAR10(tmp_path, train=False, transform=transforms.ToTensor())
    assert len(train) == 15 and len(test) == 3 and train.classes[0] == "airplane"
    img, label = train[4]  # the second record of data_batch_2
    labels, pixels = records["data_batch_2.bin"]
    assert img.shape == (3, 32, 32) and img.dtype == ember.uint8 and label == labels[1]
    np.testing.assert_array_equal(as_np(img).reshape(-1), pixels[1])
    timg, tlabel = test[0]
    assert timg.dtype == ember.float32 and tlabel == records["test_batch.bin"][0][0]
    np.testing.assert_allclose(as_np(timg).reshape(-1), records["test_batch.bin"][1][0] / 255, rtol=1e-6)


# ============================================================================ transforms (NumPy refs)

def test_to_tensor_inputs():
    rng = np.random.default_rng(2)
    hw = rng.integers(0, 256, size=(5, 7), dtype=np.uint8)
    hwc = rng.integers(0, 256, size=(5, 7, 3), dtype=np.uint8)
    t = transforms.ToTensor()
    for arr, chw in ((hw, hw[None]), (hwc, hwc.transpose(2, 0, 1))):
        out = t(arr)
        assert out.dtype == ember.float32 and out.shape == chw.shape
        np.testing.assert_allclose(as_np(out), chw / 255, rtol=1e-6)
    # ember tensors are (H, W) or (C, H, W).
    np.testing.assert_allclose(as_np(t(ember.from_numpy(hw))), hw[None] / 255, rtol=1e-6)
    chw = hwc.transpose(2, 0, 1).copy()
    np.testing.assert_allclose(as_np(t(ember.from_numpy(chw))), chw / 255, rtol=1e-6)
    # A float array keeps dtype and values, as torchvision's.
    f = rng.random((4, 4))
    out = t(f)
    assert out.dtype == ember.float64 and np.array_equal(as_np(out)[0], f)
    with pytest.raises(TypeError, match="pic should be PIL Image, ndarray or Tensor"):
        t([[1, 2]])
    with pytest.raises(ValueError, match="2/3 dimensional"):
        t(np.zeros((1, 2, 3, 4), dtype=np.uint8))


def test_normalize_values_and_errors():
    x = ember.rand(3, 4, 5)
    mean, std = (0.1, 0.2, 0.3), (0.5, 0.25, 2.0)
    out = transforms.Normalize(mean, std)(x)
    ref = (as_np(x) - np.array(mean)[:, None, None]) / np.array(std)[:, None, None]
    np.testing.assert_allclose(as_np(out), ref, rtol=1e-5, atol=1e-6)
    assert not ember.equal(out, x)  # not in place by default
    with pytest.raises(ValueError, match="std"):
        transforms.Normalize((0.5,), (0.0,))(x)
    with pytest.raises(Exception, match="uint8|floating"):
        transforms.Normalize((0.5,), (0.5,))(ember.zeros(1, 2, 2, dtype=ember.uint8))


def test_compose_pipeline_rebuilds_when_edited():
    c = transforms.Compose([transforms.ToTensor()])
    first = c._t
    assert first is not None and c._t is first  # cached
    c.transforms.append(transforms.Normalize((0.5,), (0.5,)))
    assert c._t is not first
    x = ember.full((1, 2, 2), 255, dtype=ember.uint8)
    assert ember.allclose(c(x), ember.ones(1, 2, 2))
    c.transforms.append(lambda t: t + 1)  # a plain callable: no C++ pipeline, still works
    assert c._t is None and ember.allclose(c(x), ember.full((1, 2, 2), 2.0))


def test_lambda_inside_cpp_pipeline_must_return_a_tensor():
    bad = transforms.Compose([transforms.ToTensor(), transforms.Lambda(lambda x: x.numpy())])
    with pytest.raises(TypeError, match="Lambda: .*must return a Tensor, got"):
        bad(ember.zeros(2, 2, dtype=ember.uint8))
    # Called on its own, a Lambda returns whatever its function does.
    assert isinstance(transforms.Lambda(lambda x: x.numpy())(ember.zeros(2)), np.ndarray)
    with pytest.raises(TypeError, match="lambd should be callable"):
        transforms.Lambda(3)


def test_lambda_exception_propagates():
    def boom(x):
        raise KeyError("from the lambda")
    c = transforms.Compose([transforms.ToTensor(), transforms.Lambda(boom)])
    with pytest.raises(KeyError, match="from the lambda"):
        c(ember.zeros(2, 2, dtype=ember.uint8))


def test_flips_and_crops():
    x = ember.arange(2 * 4 * 5).reshape(2, 4, 5).to(ember.uint8)
    assert ember.equal(transforms.RandomHorizontalFlip(p=1.0)(x), x.flip(-1))
    assert ember.equal(transforms.RandomVerticalFlip(p=1.0)(x), x.flip(-2))
    assert ember.equal(transforms.RandomHorizontalFlip(p=0.0)(x), x)
    assert ember.equal(transforms.CenterCrop(2)(x), x[:, 1:3, 2:4])  # left = round(1.5) = 2, as torchvision
    assert ember.equal(VF.crop(x, 1, 2, 2, 3), x[:, 1:3, 2:5])
    # RandomCrop with padding: the output is some 4x5 window of the zero-padded image.
    padded = np.pad(as_np(x), ((0, 0), (2, 2), (2, 2)))
    ember.manual_seed(3)
    for _ in range(5):
        out = as_np(transforms.RandomCrop((4, 5), padding=2)(x))
        windows = [padded[:, i:i + 4, j:j + 5] for i in range(5) for j in range(5)]
        assert any(np.array_equal(out, w) for w in windows)


def test_random_transforms_are_seeded():
    x = ember.rand(1, 16, 16)
    tf = transforms.Compose([transforms.RandomRotation(30), transforms.RandomAffine(0, translate=(0.2, 0.2)),
                             transforms.RandomCrop(12), transforms.RandomHorizontalFlip()])
    ember.manual_seed(5)
    a = [tf(x) for _ in range(4)]
    ember.manual_seed(5)
    b = [tf(x) for _ in range(4)]
    assert all(ember.equal(p, q) for p, q in zip(a, b))
    assert not all(ember.equal(a[0], q) for q in a[1:])


def test_constructor_errors():
    with pytest.raises(ValueError, match="must be positive"):
        transforms.RandomRotation(-5)
    with pytest.raises(ValueError, match="min <= max"):
        transforms.RandomRotation((10, 0))
    with pytest.raises(ValueError, match="between 0 and 1"):
        transforms.RandomAffine(0, translate=(1.5, 0))
    with pytest.raises(ValueError, match="interpolation"):
        transforms.Resize(10, interpolation=transforms.InterpolationMode.BICUBIC)
    with pytest.raises(NotImplementedError, match="expand"):
        transforms.RandomRotation(10, expand=True)
    with pytest.raises(ValueError, match="padding"):
        transforms.RandomCrop(4, padding=(1, 2, 3))
    with pytest.raises(ValueError, match="size"):
        transforms.CenterCrop((1, 2, 3))
    with pytest.raises(TypeError, match="RandomHorizontalFlip: img should be"):
        transforms.RandomHorizontalFlip()([1, 2])


# ===================================================================== transforms vs torchvision

def test_repr_matches_torchvision(tv):
    T = tv.transforms
    specs = [
        ("Normalize", ((0.1307,), (0.3081,)), {}), ("Resize", (10,), {}), ("Resize", ((10, 12),), {}),
        ("CenterCrop", (5,), {}), ("RandomCrop", (28,), {"padding": 4}), ("RandomHorizontalFlip", (), {}),
        ("RandomVerticalFlip", (0.3,), {}), ("RandomRotation", (10,), {}),
        ("RandomRotation", ((0, 90),), {"fill": 1}), ("RandomAffine", (0,), {"translate": (0.1, 0.1)}),
        ("RandomAffine", (10,), {"scale": (0.9, 1.1), "shear": 5}), ("ToTensor", (), {}),
    ]
    for name, args, kwargs in specs:
        assert repr(getattr(transforms, name)(*args, **kwargs)) == repr(getattr(T, name)(*args, **kwargs))
    ours = transforms.Compose([transforms.RandomRotation(10), transforms.ToTensor(), transforms.Lambda(abs)])
    theirs = T.Compose([T.RandomRotation(10), T.ToTensor(), T.Lambda(abs)])
    assert repr(ours) == repr(theirs)


def test_to_tensor_pil_matches_torchvision(tv):
    from PIL import Image
    rng = np.random.default_rng(4)
    for mode, shape in (("L", (6, 9)), ("RGB", (6, 9, 3))):
        img = Image.fromarray(rng.integers(0, 256, size=shape, dtype=np.uint8), mode=mode)
        ours, theirs = transforms.ToTensor()(img), tv.transforms.ToTensor()(img)
        np.testing.assert_allclose(as_np(ours), as_np(theirs), rtol=1e-6)
    # A PIL image through a geometric transform becomes a uint8 (C, H, W) tensor first.
    img = Image.fromarray(rng.integers(0, 256, size=(6, 9), dtype=np.uint8), mode="L")
    flipped = transforms.RandomHorizontalFlip(p=1.0)(img)
    np.testing.assert_array_equal(as_np(flipped), as_np(tv.transforms.functional.pil_to_tensor(img)).copy()[..., ::-1])


@pytest.mark.parametrize("dtype", ["uint8", "float32"])
@pytest.mark.parametrize("interpolation", ["nearest", "bilinear"])
@pytest.mark.parametrize("size", [7, (9, 4), (20, 31), 16])
@pytest.mark.parametrize("antialias", [False, True])
def test_resize_matches_torchvision(tv, dtype, interpolation, size, antialias):
    import torch
    rng = np.random.default_rng(5)
    x = (rng.integers(0, 256, size=(2, 11, 15)) if dtype == "uint8" else rng.random((2, 11, 15))).astype(dtype)
    mode = getattr(tv.transforms.InterpolationMode, interpolation.upper())
    ours = transforms.Resize(size, interpolation=getattr(transforms.InterpolationMode, interpolation.upper()),
                             antialias=antialias)(ember.from_numpy(x))
    # (nearest ignores antialias, as today's torchvision; 0.14 refuses the combination)
    theirs = tv.transforms.Resize(size, interpolation=mode, antialias=antialias and interpolation == "bilinear")(
        torch.from_numpy(x))
    assert tuple(ours.shape) == tuple(theirs.shape)
    if dtype == "uint8":
        assert np.abs(as_np(ours).astype(int) - as_np(theirs).astype(int)).max() <= 1
    else:
        np.testing.assert_allclose(as_np(ours), as_np(theirs), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("size", [4, (3, 6), (13, 17)])  # the last pads, as torchvision does
def test_center_crop_matches_torchvision(tv, size):
    import torch
    x = np.random.default_rng(6).random((3, 10, 12)).astype(np.float32)
    ours = transforms.CenterCrop(size)(ember.from_numpy(x))
    theirs = tv.transforms.CenterCrop(size)(torch.from_numpy(x))
    np.testing.assert_array_equal(as_np(ours), as_np(theirs))


@pytest.mark.parametrize("interpolation", ["nearest", "bilinear"])
@pytest.mark.parametrize("angle,translate,scale,shear", [
    (0, (0, 0), 1.0, (0.0, 0.0)), (30, (0, 0), 1.0, (0.0, 0.0)), (-45, (2, -3), 1.2, (10.0, 0.0)),
    (90, (1, 1), 0.8, (-20.0, 0.0)), (12.5, (0, 0), 1.0, (0.0, 0.0))])
def test_affine_matches_torchvision(tv, interpolation, angle, translate, scale, shear):
    import torch
    F = tv.transforms.functional
    mode = getattr(tv.transforms.InterpolationMode, interpolation.upper())
    x = np.random.default_rng(7).random((2, 13, 16)).astype(np.float32)
    ours = VF.affine(ember.from_numpy(x), angle, list(translate), scale, list(shear), interpolation=interpolation)
    # fill=0: the masked border torchvision's RandomAffine/RandomRotation use (see VF.affine's docstring).
    theirs = F.affine(torch.from_numpy(x), angle, list(translate), scale, list(shear), interpolation=mode, fill=0)
    np.testing.assert_allclose(as_np(ours), as_np(theirs), rtol=1e-5, atol=1e-5)
    # RandomAffine with every range collapsed to a point is the same deterministic transform.
    fixed = transforms.RandomAffine((angle, angle), scale=(scale, scale), shear=(shear[0], shear[0]),
                                    interpolation=mode.value)
    if translate == (0, 0):
        np.testing.assert_allclose(as_np(fixed(ember.from_numpy(x))), as_np(theirs), rtol=1e-5, atol=1e-5)
    ours_rot = VF.rotate(ember.from_numpy(x), angle, interpolation=interpolation)
    theirs_rot = F.rotate(torch.from_numpy(x), angle, interpolation=mode, fill=0)
    np.testing.assert_allclose(as_np(ours_rot), as_np(theirs_rot), rtol=1e-5, atol=1e-5)
    rotation = transforms.RandomRotation((angle, angle), interpolation=mode.value)
    np.testing.assert_allclose(as_np(rotation(ember.from_numpy(x))), as_np(theirs_rot), rtol=1e-5, atol=1e-5)


def test_fill_matches_torchvision(tv):
    import torch
    x = np.random.default_rng(8).integers(0, 256, size=(1, 9, 9)).astype(np.uint8)
    ours = VF.rotate(ember.from_numpy(x), 45, fill=255)
    theirs = tv.transforms.functional.rotate(torch.from_numpy(x), 45, fill=255)
    np.testing.assert_array_equal(as_np(ours), as_np(theirs))


@needs_fashion
def test_pipeline_on_fashion_matches_torchvision(tv, fashion_train):
    """The seed's MNIST test pipeline: torchvision on the PIL image vs ember on the tensor."""
    from PIL import Image
    T = tv.transforms
    ours = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    theirs = T.Compose([T.ToTensor(), T.Normalize((0.1307,), (0.3081,))])
    for i in (0, 17, 59999):
        img, _ = fashion_train[i]
        pil = Image.fromarray(as_np(img), mode="L")
        np.testing.assert_allclose(as_np(ours(img)), as_np(theirs(pil)), rtol=1e-6, atol=1e-6)


# ================================================================================ models

def test_resnet18_shapes_and_counts():
    from ember.vision import models
    m = models.resnet18(num_classes=10)
    assert sum(p.numel() for p in m.parameters()) == 11_181_642
    m.eval()
    with ember.no_grad():
        assert m(ember.randn(2, 3, 64, 64)).shape == (2, 10)
    with pytest.raises(RuntimeError, match="pretrained weights"):
        models.resnet18(weights="IMAGENET1K_V1")


def test_resnet_names_match_torchvision(tv):
    from ember.vision import models
    for name in ("resnet18", "resnet34"):
        ours, theirs = getattr(models, name)(), getattr(tv.models, name)()
        assert list(ours.state_dict()) == list(theirs.state_dict())
        assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
        assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in theirs.parameters())
