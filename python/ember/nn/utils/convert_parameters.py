"""parameters_to_vector / vector_to_parameters: the C++ implementations."""
from ..._C import Tensor
from ..._C import _nn as _U

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters):
    return _U.parameters_to_vector(list(parameters))


def vector_to_parameters(vec, parameters):
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    _U.vector_to_parameters(vec, list(parameters))
