"""ember.vision's colour transforms (adjust_brightness/contrast/saturation/hue, rgb_to_grayscale,
ColorJitter, Grayscale, RandomGrayscale) and RandomResizedCrop / resized_crop: against torchvision
0.14 where it is installed (same values, and under one seed the same random draws), else on their
own properties."""
import numpy as np
import pytest

import ember
from ember.vision import transforms
from ember.vision.transforms import functional as VF

RNG = np.random.default_rng(7)
IMG8 = RNG.integers(0, 256, (2, 3, 17, 23), dtype=np.uint8)
IMGF = RNG.random((3, 17, 23), dtype=np.float32)


@pytest.fixture
def tv():
    pytest.importorskip("torch", reason="PyTorch not installed: differential test skipped")
    return pytest.importorskip("torchvision", reason="torchvision not installed: differential test skipped")


def both(arr):
    import torch
    return ember.from_numpy(arr.copy()), torch.from_numpy(arr.copy())


@pytest.mark.parametrize("factor", [0.0, 0.45, 1.0, 1.7])
def test_blends_equal_torchvision(tv, factor):
    TF = tv.transforms.functional
    for arr in (IMG8, IMGF, IMGF[:1]):
        e, t = both(arr)
        for name in ("adjust_brightness", "adjust_saturation"):
            got, want = getattr(VF, name)(e, factor), getattr(TF, name)(t, factor)
            assert got.dtype == e.dtype and np.array_equal(got.numpy(), want.numpy()), (name, arr.dtype)
        # contrast blends with the image's mean grey: the two means may round one ulp apart
        got, want = VF.adjust_contrast(e, factor).numpy(), TF.adjust_contrast(t, factor).numpy()
        assert np.abs(got.astype(np.float64) - want.astype(np.float64)).max() <= (1 if arr.dtype == np.uint8 else 1e-6)


@pytest.mark.parametrize("hue", [-0.5, -0.21, 0.0, 0.13, 0.5])
def test_hue_equals_torchvision(tv, hue):
    TF = tv.transforms.functional
    e, t = both(IMGF)
    assert np.array_equal(VF.adjust_hue(e, hue).numpy(), TF.adjust_hue(t, hue).numpy())
    # uint8: torchvision 0.14 converts back with * 255, today's with * 255.999 (convert_image_dtype,
    # what ember follows): at most one level apart
    e, t = both(IMG8)
    assert np.abs(VF.adjust_hue(e, hue).numpy().astype(int) - TF.adjust_hue(t, hue).numpy().astype(int)).max() <= 1


def test_grayscale_equals_torchvision(tv):
    TF = tv.transforms.functional
    e, t = both(IMG8)
    for n in (1, 3):
        assert np.array_equal(VF.rgb_to_grayscale(e, n).numpy(), TF.rgb_to_grayscale(t, n).numpy())


def test_color_jitter_draws_as_torchvision(tv):
    import torch
    ours, theirs = transforms.ColorJitter(0.4, 0.4, 0.4, 0.2), tv.transforms.ColorJitter(0.4, 0.4, 0.4, 0.2)
    for seed in range(8):
        ember.manual_seed(seed)
        torch.manual_seed(seed)
        e, t = both(IMGF)
        assert np.allclose(ours(e).numpy(), theirs(t).numpy(), atol=1e-6)
    assert repr(ours) == "ColorJitter(brightness=(0.6, 1.4), contrast=(0.6, 1.4), saturation=(0.6, 1.4), hue=(-0.2, 0.2))"


@pytest.mark.parametrize("antialias", [False, True])
def test_random_resized_crop_draws_as_torchvision(tv, antialias):
    import torch
    img = RNG.random((3, 100, 150), dtype=np.float32)
    for seed in range(40):
        ember.manual_seed(seed)
        torch.manual_seed(seed)
        e, t = both(img)
        got = transforms.RandomResizedCrop((40, 50), antialias=antialias)(e)
        want = tv.transforms.RandomResizedCrop((40, 50), antialias=antialias)(t)
        assert got.shape == (3, 40, 50) and np.abs(got.numpy() - want.numpy()).max() < 1e-5
    # a strip far outside the ratio range: ten misses, then the clamped centre crop
    strip = np.arange(5 * 100, dtype=np.float32).reshape(1, 5, 100)
    ember.manual_seed(0)
    torch.manual_seed(0)
    e, t = both(strip)
    got = transforms.RandomResizedCrop(8, antialias=antialias)(e)
    assert np.abs(got.numpy() - tv.transforms.RandomResizedCrop(8, antialias=antialias)(t).numpy()).max() < 1e-3


def test_errors_and_grey_images():
    x = ember.from_numpy(IMG8[0].copy())
    with pytest.raises(ValueError, match=r"hue_factor \(0.6\) is not in \[-0.5, 0.5\]"):
        VF.adjust_hue(x, 0.6)
    with pytest.raises(ValueError, match=r"brightness_factor \(-1.0\) is not non-negative"):
        VF.adjust_brightness(x, -1)
    with pytest.raises(TypeError, match="permitted channel values are \\[1, 3\\], but found 4"):
        VF.adjust_saturation(ember.zeros(4, 5, 5), 0.5)
    with pytest.raises(ValueError, match="num_output_channels should be either 1 or 3"):
        transforms.Grayscale(2)
    with pytest.raises(ValueError, match=r"brightness values should be between \(0.0, inf\)"):
        transforms.ColorJitter(brightness=(-1, 2))
    with pytest.raises(ValueError, match="must lie inside"):
        VF.resized_crop(x, 10, 0, 20, 5, 4)
    grey = ember.rand(1, 6, 7)
    for out in (VF.adjust_saturation(grey, 0.3), VF.adjust_hue(grey, 0.3)):  # returned as they are
        assert out.data_ptr() == grey.data_ptr() and ember.equal(out, grey)
    assert transforms.ColorJitter().brightness is None and transforms.ColorJitter(hue=0).hue is None
    assert transforms.Grayscale(3)(x).shape == (3, 17, 23) and transforms.Grayscale()(x).shape == (1, 17, 23)
    assert transforms.RandomGrayscale(p=1.0)(x).shape == (3, 17, 23)
    assert ember.equal(transforms.RandomGrayscale(p=0.0)(x), x)


def test_the_seeds_imagenet_pipeline_runs_as_one_cpp_compose():
    tf = transforms.Compose([
        transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(),
        transforms.ColorJitter(brightness=0.2, contrast=0.2, saturation=0.2, hue=0.1), transforms.ToTensor(),
        transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])])
    assert tf._t is not None  # every member is C++: DataLoader workers run it without the GIL
    img = ember.from_numpy(RNG.integers(0, 256, (3, 256, 320), dtype=np.uint8))
    ember.manual_seed(5)
    a = tf(img)
    ember.manual_seed(5)
    b = tf(img)
    assert a.shape == (3, 224, 224) and a.dtype == ember.float32 and ember.equal(a, b)
    # values stay in the normalised range of [0, 1] inputs
    assert a.min().item() >= (0 - 0.485) / 0.229 - 1e-5 and a.max().item() <= (1 - 0.406) / 0.225 + 1e-5
