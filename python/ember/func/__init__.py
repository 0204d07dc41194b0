"""ember.func (torch.func): composable function transforms.

    grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, linearize   (autodiff)
    vmap                                                                 (mapping over a batch dim)
    functional_call, stack_module_state                                  (modules as functions)

Pure Python over ember's reverse-mode autograd: vmap calls the function once per sample (no
batching rules yet) and the forward-mode transforms (jvp, jacfwd, linearize) are computed in
reverse mode. Values, structures and error messages follow torch 2.x; docs/func.md has the
details and the costs.
"""
from ._functional_call import functional_call, stack_module_state
from ._vmap import vmap
from ._autodiff import grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, linearize

__all__ = ["functional_call", "stack_module_state", "vmap", "grad", "grad_and_value", "vjp", "jvp", "jacrev",
           "jacfwd", "hessian", "linearize"]
