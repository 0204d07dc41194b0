"""ember.autograd.functional (torch.autograd.functional): vjp, jvp, jacobian, hessian, vhp and
hvp of a Python function, built on autograd.grad.

Reverse mode throughout: a Jacobian is one vector-Jacobian product per output element (rows of
the identity as grad_outputs), and jvp/hvp use the double-vjp identity (the vjp of a vjp with
respect to its vector), as torch's implementation does. `vectorize` and the forward-mode
strategy are accepted and run the same loop.
"""
from .. import _C
from .grad_mode import enable_grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


def _as_tuple(x, arg_name, fn_name):
    is_tuple = isinstance(x, tuple)
    items = x if is_tuple else (x,)
    for i, el in enumerate(items):
        if not isinstance(el, _C.Tensor):
            where = f"entry {i} in the tuple" if is_tuple else "the value"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                            f"the type of {where} is {type(el)}.")
    return is_tuple, items


def _grad_preprocess(inputs, create_graph):
    # fresh leaves (or views of the inputs when create_graph) so the caller's tensors are untouched
    if create_graph:
        return tuple(x.view_as(x) if x.requires_grad else x.detach().requires_grad_(True) for x in inputs)
    return tuple(x.detach().requires_grad_(True) for x in inputs)


def _postprocess(out, create_graph):
    if create_graph:
        return out
    if isinstance(out, tuple):
        return tuple(_postprocess(o, create_graph) for o in out)
    return out.detach() if out is not None else None


def _grads(outputs, inputs, grad_outputs, create_graph, strict, retain_graph=None):
    from . import grad
    outs = [o for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    gos = [g for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not outs:
        res = (None,) * len(inputs)
    else:
        res = grad(outs, inputs, gos, retain_graph=True if retain_graph is None else retain_graph,
                   create_graph=create_graph, allow_unused=True)
    fixed = []
    for i, (r, x) in enumerate(zip(res, inputs)):
        if r is None:
            if strict:
                raise RuntimeError(f"The output of the user-provided function is independent of input {i}. This "
                                   "is not allowed in strict mode.")
            r = _C.zeros_like(x)
        fixed.append(r)
    return tuple(fixed)


def _vector_for_inputs(v, inputs, fn_name):
    """The v of jvp/vhp as a tuple; None only for one one-element input (then ones)."""
    if v is None:
        if len(inputs) != 1 or inputs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the input to the user-provided function is a "
                               "single Tensor with a single element.")
        return (_C.ones_like(inputs[0]),)
    return _as_tuple(v, "v", fn_name)[1]


def _vjp_of_grads(gs, wrt, v, create_graph):
    """The vjp of the gradients gs (computed with create_graph) with v, with respect to wrt; zeros
    where a gradient does not depend on wrt."""
    g_req = [g for g in gs if g.requires_grad]
    v_req = [vi for g, vi in zip(gs, v) if g.requires_grad]
    if g_req:
        from . import grad
        res = grad(g_req, wrt, v_req, create_graph=create_graph, allow_unused=True)
    else:
        res = (None,) * len(wrt)
    return tuple(r if r is not None else _C.zeros_like(w) for r, w in zip(res, wrt))


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product at inputs."""
    with enable_grad():
        is_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph)
        outputs = func(*inputs)
        out_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "vjp")
        if v is None:
            if len(outputs) != 1 or outputs[0].numel() != 1:
                raise RuntimeError("The vector v can only be None if the user-provided function returns a single "
                                   "Tensor with a single element.")
            v = (_C.ones_like(outputs[0]),)
        else:
            _, v = _as_tuple(v, "v", "vjp")
            if len(v) != len(outputs):
                raise RuntimeError(f"v is a tuple of invalid length: should be {len(outputs)} but got {len(v)}.")
            for i, (vi, o) in enumerate(zip(v, outputs)):
                if tuple(vi.shape) != tuple(o.shape):
                    raise RuntimeError(f"Entry {i} in v has invalid size: should be {tuple(o.shape)} but got "
                                       f"{tuple(vi.shape)}.")
        res = _grads(outputs, inputs, v, create_graph, strict)
    outs = _postprocess(outputs, create_graph)
    res = _postprocess(res, create_graph)
    return (outs if out_tuple else outs[0]), (res if is_tuple else res[0])


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product, by the double-vjp identity."""
    with enable_grad():
        is_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph)
        v = _vector_for_inputs(v, inputs, "jvp")
        outputs = func(*inputs)
        out_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jvp")
        # u is a dummy cotangent: g(u) = u^T J is linear in u, and its vjp with v is J v
        us = tuple(_C.zeros_like(o).requires_grad_(True) for o in outputs)
        g = _grads(outputs, inputs, us, True, strict)
        res = _vjp_of_grads(g, us, v, create_graph)
    outs = _postprocess(outputs, create_graph)
    res = _postprocess(res, create_graph)
    return (outs if out_tuple else outs[0]), (res if out_tuple else res[0])


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of func at inputs: for output i and input j, a tensor of shape
    outputs[i].shape + inputs[j].shape (nested tuples as torch returns them)."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                         'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                         'Otherwise, prefer to use "reverse-mode".')
    with enable_grad():
        is_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph)
        outputs = func(*inputs)
        out_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jacobian")
        from . import grad
        jac = []
        for i, out in enumerate(outputs):
            if strict and not out.requires_grad:
                raise RuntimeError(f"Output {i} of the user-provided function does not require gradients. The outputs "
                                   "must be computed in a differentiable manner from the input when running in "
                                   "strict mode.")
            rows = [[] for _ in inputs]
            flat = out.reshape(-1)
            for k in range(flat.numel()):
                if out.requires_grad:
                    gs = grad(flat[k], inputs, retain_graph=True, create_graph=create_graph, allow_unused=True)
                else:
                    gs = (None,) * len(inputs)
                for j, (g, x) in enumerate(zip(gs, inputs)):
                    if g is None:
                        if strict:
                            raise RuntimeError(f"Output {i} of the user-provided function is independent of input "
                                               f"{j}. This is not allowed in strict mode.")
                        g = _C.zeros_like(x)
                    rows[j].append(g)
            per_input = []
            for j, x in enumerate(inputs):
                if rows[j]:
                    block = _C.stack(rows[j], 0)
                else:
                    block = _C.zeros([0] + list(x.shape), dtype=x.dtype, device=x.device)
                per_input.append(block.reshape(list(out.shape) + list(x.shape)))
            jac.append(tuple(per_input))
    jac = _postprocess(tuple(jac), create_graph)
    if out_tuple:
        return jac if is_tuple else tuple(j[0] for j in jac)
    return jac[0] if is_tuple else jac[0][0]


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar function: the Jacobian of its gradient."""
    is_tuple, tup = _as_tuple(inputs, "inputs", "hessian")

    def jac_func(*inp):
        out = func(*inp)
        if not isinstance(out, _C.Tensor) or out.numel() != 1:
            raise RuntimeError("The function given to hessian should return a single Tensor with a single element")
        return jacobian(func, inp, create_graph=True, strict=strict)

    res = jacobian(jac_func, tup, create_graph=create_graph, strict=strict, strategy=outer_jacobian_strategy)
    return res if is_tuple else res[0][0]


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H): the vector-Hessian product of a scalar function."""
    with enable_grad():
        is_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
        inputs = _grad_preprocess(inputs, create_graph)
        v = _vector_for_inputs(v, inputs, "vhp")
        out = func(*inputs)
        if not isinstance(out, _C.Tensor) or out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hvp should contain a single element")
        g = _grads((out,), inputs, (_C.ones_like(out),), True, strict)
        res = _vjp_of_grads(g, inputs, v, create_graph)
    return _postprocess(out, create_graph), _postprocess(res if is_tuple else res[0], create_graph)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v); H is symmetric for twice-differentiable functions, so this is vhp."""
    return vhp(func, inputs, v, create_graph, strict)
