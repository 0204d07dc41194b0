"""ember.nn.init (torch.nn.init): in-place initialisers that run under no_grad and return the
tensor they were given. All of them but sparse_ are the C++ functions in
include/ember/nn/functional.h (namespace nn::init), so a C++ model and a Python one draw the same
numbers from the same seed; sparse_ composes normal_ and randperm in Python as torch's does."""
import math
import warnings

from .._C import _nn as _I

__all__ = [
    "calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_", "dirac_",
    "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "sparse_",
    "uniform", "normal", "constant", "xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_normal",
    "orthogonal", "eye", "dirac", "sparse",
]

calculate_gain = _I.calculate_gain
_calculate_fan_in_and_fan_out = _I._calculate_fan_in_and_fan_out


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    return _I.uniform_(tensor, a, b, generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    return _I.normal_(tensor, mean, std, generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    return _I.trunc_normal_(tensor, mean, std, a, b, generator)


def constant_(tensor, val):
    return _I.constant_(tensor, val)


def ones_(tensor):
    return _I.ones_(tensor)


def zeros_(tensor):
    return _I.zeros_(tensor)


def eye_(tensor):
    return _I.eye_(tensor)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    return _I.xavier_uniform_(tensor, gain, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    return _I.xavier_normal_(tensor, gain, generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    return _I.kaiming_uniform_(tensor, a, mode, nonlinearity, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    return _I.kaiming_normal_(tensor, a, mode, nonlinearity, generator)


def orthogonal_(tensor, gain=1, generator=None):
    return _I.orthogonal_(tensor, gain, generator)


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """N(0, std) values with ceil(sparsity * rows) zeros per column, the zero rows of each column
    being the first of a randperm(rows) from the global generator (torch draws them there too)."""
    from .. import no_grad, randperm
    if tensor.ndimension() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = math.ceil(sparsity * rows)
    with no_grad():
        tensor.normal_(0, std, generator=generator)
        for col_idx in range(cols):
            zero_indices = randperm(rows)[:num_zeros]
            tensor[zero_indices, col_idx] = 0
    return tensor


def dirac_(tensor, groups=1):
    """Fills a {3, 4, 5}-D conv weight with the Dirac delta: each of `groups` groups passes its
    input channels through unchanged (identity convolution)."""
    dims = tensor.dim()
    if dims not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = list(tensor.shape)
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = sizes[0] // groups
    min_dim = min(out_per_group, sizes[1])
    from .. import no_grad
    with no_grad():
        tensor.zero_()
        centre = tuple(s // 2 for s in sizes[2:])
        for g in range(groups):
            for d in range(min_dim):
                tensor[(g * out_per_group + d, d) + centre] = 1
    return tensor


def _deprecated(new):
    def old(*args, **kwargs):
        warnings.warn(f"nn.init.{new.__name__[:-1]} is now deprecated in favor of nn.init.{new.__name__}.",
                      stacklevel=2)
        return new(*args, **kwargs)
    old.__name__ = new.__name__[:-1]
    return old


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
sparse = _deprecated(sparse_)
