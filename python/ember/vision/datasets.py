"""torchvision.datasets for ember: MNIST, FashionMNIST and CIFAR10 read from local files by
ember's C++ readers (IDX, raw or gzip; CIFAR-10's binary version). ember never downloads:
download=True loads the files when they are there and otherwise raises an error that says where
to put them.

    train = datasets.FashionMNIST("/usr/share/datasets/fashion-mnist", train=True,
                                  transform=transforms.ToTensor())
    image, label = train[0]        # float32 (1, 28, 28), int

Without a transform an MNIST image is a uint8 tensor (28, 28) -- the array torchvision's PIL image
holds -- and a CIFAR10 image a uint8 tensor (3, 32, 32). When the transform is made of ember
transforms only, it runs inside the C++ dataset; any other callable runs in Python afterwards.
"""
import operator
import os

from ember._C import _vision

try:
    from ember.utils.data import Dataset as _Dataset
except ImportError:  # ember.utils.data not there yet: the datasets still work on their own
    _Dataset = object

__all__ = ["VisionDataset", "MNIST", "FashionMNIST", "CIFAR10", "FakeData"]


class VisionDataset(_Dataset):
    """Base class: root, transform, target_transform and torchvision's repr."""
    _repr_indent = 4

    def __init__(self, root, transform=None, target_transform=None):
        self.root = os.path.expanduser(os.fspath(root)) if root is not None else None
        self.transform = transform
        self.target_transform = target_transform

    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = [f"Number of datapoints: {len(self)}"]
        if self.root is not None:
            lines.append(f"Root location: {self.root}")
        lines += [line for line in self.extra_repr().splitlines() if line]
        for title, t in (("Transform: ", self.transform), ("Target transform: ", self.target_transform)):
            if t is not None:
                body = repr(t).splitlines()
                lines.append(title + body[0])
                lines += [" " * len(title) + line for line in body[1:]]
        return "\n".join(["Dataset " + type(self).__name__] + [" " * self._repr_indent + line for line in lines])


class _CppVisionDataset(VisionDataset):
    """A dataset whose samples come from a C++ dataset (self._dataset)."""
    _cpp_class = None

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        # The C++ pipeline of the transform, when it has one: it then runs inside the C++ dataset.
        cpp_transform = getattr(transform, "_t", None)
        try:
            self._dataset = self._cpp_class(self.root, bool(train), cpp_transform)
        except RuntimeError as e:
            if download:
                raise RuntimeError(f"{type(self).__name__}(download=True): ember never downloads datasets; put the "
                                   f"files in place yourself. {e}") from None
            raise
        self._py_transform = transform if cpp_transform is None else None

    def __len__(self):
        return len(self._dataset)

    def __getitem__(self, index):
        img, target = self._dataset.get(operator.index(index))
        if self._py_transform is not None:
            img = self._py_transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __getitems__(self, indices):
        """The samples for a batch of indices in one C++ call (its transforms run without the GIL)."""
        samples = self._dataset.get_many([operator.index(i) for i in indices])
        if self._py_transform is None and self.target_transform is None:
            return samples
        tf = self._py_transform or (lambda x: x)
        ttf = self.target_transform or (lambda y: y)
        return [(tf(img), ttf(target)) for img, target in samples]

    @property
    def data(self):
        return self._dataset.data

    @property
    def targets(self):
        return self._dataset.targets

    @property
    def classes(self):
        return self._dataset.classes

    @property
    def class_to_idx(self):
        return {c: i for i, c in enumerate(self.classes)}

    def extra_repr(self):
        return f"Split: {'Train' if self.train else 'Test'}"


class MNIST(_CppVisionDataset):
    """MNIST from {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz] in `root` or in root/MNIST/raw
    (torchvision's layout). Samples: (uint8 (28, 28) -> transform, int label -> target_transform)."""
    _cpp_class = _vision.MNIST

    @property
    def raw_folder(self):
        return str(self._dataset.folder)


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST, same files and layout as MNIST (root or root/FashionMNIST/raw).
    Debian's dataset-fashion-mnist package installs it in /usr/share/datasets/fashion-mnist."""
    _cpp_class = _vision.FashionMNIST


class CIFAR10(_CppVisionDataset):
    """CIFAR-10, binary version: data_batch_1..5.bin and test_batch.bin in `root` or in
    root/cifar-10-batches-bin (torchvision reads the Python pickle version instead).
    Samples: (uint8 (3, 32, 32) -> transform, int label -> target_transform)."""
    _cpp_class = _vision.CIFAR10


class FakeData(VisionDataset):
    """torchvision.datasets.FakeData: `size` random images of shape image_size (C, H, W) with
    random integer targets in [0, num_classes). Sample i is drawn from a generator seeded with
    i + random_offset, so it is the same at every access and in every process. Without a
    transform the image is the uint8 tensor torchvision's PIL image holds ((randn * 255) as
    uint8, channels first); with ToTensor() it is float in [0, 1]."""

    def __init__(self, size=1000, image_size=(3, 224, 224), num_classes=10, transform=None, target_transform=None,
                 random_offset=0):
        super().__init__(None, transform=transform, target_transform=target_transform)
        self.size = size
        self.num_classes = num_classes
        self.image_size = tuple(image_size)
        self.random_offset = random_offset

    def __getitem__(self, index):
        import ember
        index = operator.index(index)
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"{self.__class__.__name__} index out of range")
        g = ember.Generator()
        g.manual_seed(index + self.random_offset)
        img = ember.randn(*self.image_size, generator=g)
        target = int(ember.randint(0, self.num_classes, (1,), generator=g)[0])
        img = img.mul(255).to(ember.uint8)
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self):
        return self.size
