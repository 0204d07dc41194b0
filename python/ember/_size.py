"""ember.Size: the type of Tensor.shape, a tuple of ints that prints as torch.Size does."""


class Size(tuple):
    __slots__ = ()

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, index):
        item = tuple.__getitem__(self, index)
        return Size(item) if isinstance(index, slice) else item

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def __radd__(self, other):
        return Size(tuple.__add__(tuple(other), self))

    def __repr__(self):
        return "ember.Size([" + ", ".join(str(s) for s in self) + "])"

    def __reduce__(self):
        return (Size, (tuple(self),))
