"""Samplers (torch.utils.data.sampler): the order in which DataLoader reads a map-style dataset,
with torch 1.13's argument checks and random streams (randperm / randint / multinomial)."""
from itertools import islice

from ... import _C

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler"]


def _draw_seed(generator=None):
    """A 64-bit seed drawn from generator (default: the global one), as torch's
    empty((), dtype=int64).random_() does."""
    return int(_C.empty((), dtype=_C.int64).random_(generator=generator).item())


class Sampler:
    """Base class: __iter__ yields dataset indices (or, for a batch sampler, lists of them)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation (or num_samples draws with replacement)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError("replacement should be a boolean value, but got replacement={}".format(self.replacement))
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got num_samples={}"
                             .format(self.num_samples))

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        generator = self.generator
        if generator is None:
            generator = _C.Generator()
            generator.manual_seed(_draw_seed())
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from _C.randint(high=n, size=(32,), dtype=_C.int64, generator=generator).tolist()
            yield from _C.randint(high=n, size=(self.num_samples % 32,), dtype=_C.int64, generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from _C.randperm(n, generator=generator).tolist()
            yield from _C.randperm(n, generator=generator).tolist()[:self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in _C.randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """num_samples indices drawn with probability proportional to weights."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got num_samples={}".format(num_samples))
        if not isinstance(replacement, bool):
            raise ValueError("replacement should be a boolean value, but got replacement={}".format(replacement))
        w = weights if isinstance(weights, _C.Tensor) else _C.tensor(weights, dtype=_C.float64)
        w = w.to(_C.float64)
        if len(w.shape) != 1:
            raise ValueError("weights should be a 1d sequence but given weights have shape {}".format(tuple(w.shape)))
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        draw = _C.multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator)
        yield from iter(draw.tolist())

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups another sampler's indices into lists of batch_size (the last one shorter unless
    drop_last)."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError("batch_size should be a positive integer value, but got batch_size={}".format(batch_size))
        if not isinstance(drop_last, bool):
            raise ValueError("drop_last should be a boolean value, but got drop_last={}".format(drop_last))
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        it = iter(self.sampler)
        while True:
            batch = list(islice(it, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
