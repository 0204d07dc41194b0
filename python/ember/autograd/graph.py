"""ember.autograd.graph: the nodes of the autograd graph as Python objects.

``tensor.grad_fn`` is an instance of a subclass of Node named after the operation
(MulBackward0, AccumulateGrad, ExpBackward for a Python Function Exp, ...), with ``name()`` and
``next_functions`` ((node or None, input index) per input of the operation).
"""
from .. import _C

__all__ = ["Node"]

Node = _C.Node
Node.__module__ = "ember.autograd.graph"
