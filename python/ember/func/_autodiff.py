"""grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian and linearize (torch.func) on ember's
reverse-mode autograd.

Each transform differentiates with respect to fresh stand-ins for its inputs: a detached leaf
that requires grad, or, when the input already requires grad (a parameter, or the stand-in of
an enclosing transform), a view of it, so the enclosing level still sees through. The results
keep a graph (create_graph) exactly when something outside the transform needs one: an input
requiring grad, or a tensor the function closes over that requires grad (found by walking the
output's graph). Otherwise they come back detached, as torch's do. That is what makes
grad(grad(f)), vmap(grad(f)), jacrev(jacrev(f)) and grad of a vjp nest.

ember has no forward-mode AD: jvp and linearize use the double-vjp identity (J v is the vjp,
with respect to the cotangent u, of u^T J), and jacfwd builds the Jacobian row by row in
reverse mode. The numbers are torch's; the cost is a second backward pass (jvp) or one
backward pass per output element instead of per input element (jacfwd).
"""
import functools

from .. import _C
from ..autograd import grad as _autograd_grad_raw
from ..autograd.grad_mode import enable_grad
from ._pytree import tree_flatten, tree_unflatten
from ._vmap import _check_randomness_arg, _RANDOM_ERROR

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize"]

_jvp_str = "jvp(f, primals, tangents)"


# ---- argnums ----------------------------------------------------------------------------------

def _validate_and_wrap_argnum(argnum, num_args):
    if not isinstance(argnum, int):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if 0 <= argnum < num_args:
        return argnum
    if -num_args <= argnum < 0:
        return argnum + num_args
    raise RuntimeError(f"Got argnum={argnum}, but only {num_args} positional inputs")


def _slice_argnums(args, argnums, as_tuple=True):
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    if isinstance(argnums, int):
        argnums = _validate_and_wrap_argnum(argnums, len(args))
        return (args[argnums],) if as_tuple else args[argnums]
    argnums = tuple(_validate_and_wrap_argnum(a, len(args)) for a in argnums)
    if len(argnums) == 0:
        raise RuntimeError("argnums must be non-empty")
    if len(set(argnums)) != len(argnums):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return tuple(args[i] for i in argnums)


def _wrapped_argnums(argnums, num_args):
    if isinstance(argnums, int):
        return (_validate_and_wrap_argnum(argnums, num_args),)
    return tuple(_validate_and_wrap_argnum(a, num_args) for a in argnums)


def _replace_args(args, new_diff, argnums):
    """args with the entries at argnums replaced (new_diff: one value for an int argnums, a
    tuple for a tuple)."""
    idx = _wrapped_argnums(argnums, len(args))
    new = new_diff if isinstance(argnums, tuple) else (new_diff,)
    out = list(args)
    for i, v in zip(idx, new):
        out[i] = v
    return tuple(out)


# ---- stand-ins and graphs ---------------------------------------------------------------------

def _make_leaf(x):
    if not isinstance(x, _C.Tensor):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
    if x.requires_grad:
        return x.view_as(x)  # the enclosing level (a parameter, an outer transform) sees through
    return x.detach().requires_grad_(True)


def _any_requires_grad(tree):
    """Whether a tensor in the pytree requires grad."""
    if isinstance(tree, _C.Tensor):
        return tree.requires_grad
    t = type(tree)
    if t is dict:
        return any(_any_requires_grad(v) for v in tree.values())
    if t is tuple or t is list:
        return any(_any_requires_grad(v) for v in tree)
    return any(isinstance(x, _C.Tensor) and x.requires_grad for x in tree_flatten(tree)[0])


def _reaches_outside(roots, own):
    """Whether the graph of the tensors in roots reaches a leaf requiring grad other than the
    stand-ins in own (a tensor the function closes over): then the results must keep a graph."""
    stack = []
    for r in roots:
        if isinstance(r, _C.Tensor) and r.requires_grad:
            fn = r.grad_fn
            if fn is None:  # a leaf returned as it is
                if not any(r is t for t in own):
                    return True
            else:
                stack.append(fn)
    if not stack:
        return False
    # node objects are cached per node while referenced: `seen` holds them, so ids stay unique
    seen = {}
    leaves = []
    while stack:
        fn = stack.pop()
        k = id(fn)
        if k in seen:
            continue
        seen[k] = fn
        nexts = fn.next_functions
        if nexts:
            for nfn, _ in nexts:
                if nfn is not None and id(nfn) not in seen:
                    stack.append(nfn)
        else:
            leaves.append(fn)
    if not leaves:
        return False
    own_nodes = set()
    for t in own:
        if t.grad_fn is None:
            n = t.view_as(t).grad_fn.next_functions[0][0]
            seen[id(n)] = n
            own_nodes.add(id(n))
    return any(id(n) not in own_nodes and type(n).__name__ == "AccumulateGrad" for n in leaves)


def _needs_graph(outer_grad, inputs, roots, own):
    """Whether the transform's results must stay differentiable for whatever encloses it."""
    if not outer_grad:
        return False
    return _any_requires_grad(inputs) or _reaches_outside(roots, own)


def _autograd_grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False):
    """autograd.grad over the outputs that require grad, zeros for inputs they do not reach."""
    if grad_outputs is None:
        pairs = [(o, None) for o in outputs if o.requires_grad]
    else:
        pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not pairs or not inputs:
        return tuple(_C.zeros_like(x) for x in inputs)
    outs = [o for o, _ in pairs]
    gos = None if grad_outputs is None else [g for _, g in pairs]
    res = _autograd_grad_raw(outs, list(inputs), gos, retain_graph=retain_graph, create_graph=create_graph,
                             allow_unused=True)
    return tuple(_C.zeros_like(x) if r is None else r for r, x in zip(res, inputs))


def _detach_tree(tree):
    leaves, spec = tree_flatten(tree)
    if not any(isinstance(x, _C.Tensor) for x in leaves):
        return tree
    return tree_unflatten([x.detach() if isinstance(x, _C.Tensor) else x for x in leaves], spec)


def _check_tensor_outputs(flat, api):
    if (len(flat) == 1 and flat[0] is None) or len(flat) < 1:
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got output = {flat})")
    for o in flat:
        if not isinstance(o, _C.Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got unsupported type {type(o)}")


def _check_float_outputs(flat):
    for o in flat:
        if not (o.is_floating_point() or o.dtype.is_complex):
            raise RuntimeError("vjp(f, ...): All outputs of f must be floating-point or complex Tensors, got Tensor "
                               f"with dtype {o.dtype}")


def _error_if_complex(name, tree, is_input):
    for idx, x in enumerate(tree_flatten(tree)[0]):
        if isinstance(x, _C.Tensor) and x.dtype.is_complex:
            kind = "inputs" if is_input else "outputs"
            raise RuntimeError(f"{name}: Expected all {kind} to be real but received complex tensor at flattened "
                               f"input idx: {idx}")


def _split_aux(output, has_aux, api):
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
    return output


class _Star:
    def __repr__(self):
        return "*"


def _treespec_pprint(spec):
    return repr(tree_unflatten([_Star()] * spec.num_leaves, spec))


# ---- grad -------------------------------------------------------------------------------------

def _grad_and_value_impl(func, argnums, has_aux, args, kwargs):
    outer_grad = _C.is_grad_enabled()
    with enable_grad():
        diff = _slice_argnums(args, argnums, as_tuple=False)
        flat_diff, spec = tree_flatten(diff)
        leaves = [_make_leaf(x) for x in flat_diff]
        new_args = _replace_args(args, tree_unflatten(leaves, spec), argnums)
        output = func(*new_args, **kwargs)
        output, aux = _split_aux(output, has_aux, "grad_and_value(f)(*args)")
        if not isinstance(output, _C.Tensor):
            raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(output)}")
        if output.dim() != 0:
            raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor "
                               f"with {output.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
        roots = [output] + (tree_flatten(aux)[0] if has_aux else [])
        track = _needs_graph(outer_grad, (args, kwargs), roots, leaves)
        grads = _autograd_grad([output], leaves, create_graph=track)
    grads = tree_unflatten(grads, spec)
    if not track:
        output = output.detach()
        aux = _detach_tree(aux)
    if has_aux:
        return grads, (output, aux)
    return grads, output


def grad_and_value(func, argnums=0, has_aux=False):
    """grad_and_value(f)(*args) -> (gradient, value): the gradient of the scalar f(*args) with
    respect to args[argnums] (a pytree of tensors; a tuple of argnums gives a tuple of
    gradients) and the value itself; with has_aux, f returns (value, aux) and the result is
    (gradient, (value, aux))."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return _grad_and_value_impl(func, argnums, has_aux, args, kwargs)
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """grad(f)(*args): the gradient of the scalar f(*args) with respect to args[argnums]
    (torch.func.grad); with has_aux, f returns (value, aux) and grad returns (gradient, aux).
    Nests with itself, vmap and the other transforms."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = _grad_and_value_impl(func, argnums, has_aux, args, kwargs)
        if has_aux:
            return g, value[1]
        return g
    return wrapper


# ---- vjp --------------------------------------------------------------------------------------

def vjp(func, *primals, has_aux=False):
    """(func(*primals), vjp_fn[, aux]): vjp_fn(cotangents) returns, for each primal, the
    vector-Jacobian product (a tuple as long as primals, pytrees as the primals are). vjp_fn
    may be called any number of times."""
    outer_grad = _C.is_grad_enabled()
    with enable_grad():
        flat_primals, primals_spec = tree_flatten(primals)
        leaves = [_make_leaf(x) for x in flat_primals]
        out = func(*tree_unflatten(leaves, primals_spec))
        out, aux = _split_aux(out, has_aux, "vjp(f, *primals)")
        flat_out, out_spec = tree_flatten(out)
        _check_tensor_outputs(flat_out, "vjp(f, *primals)")
        _check_float_outputs(flat_out)
        roots = flat_out + (tree_flatten(aux)[0] if has_aux else [])
        track = _needs_graph(outer_grad, primals, roots, leaves)

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        if create_graph is None:
            create_graph = _C.is_grad_enabled()
        flat_ct, ct_spec = tree_flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree structure of outputs "
                               f"to the function. cotangents: {_treespec_pprint(ct_spec)}, primal output: "
                               f"{_treespec_pprint(out_spec)}")
        cg = bool(create_graph) and (track or _any_requires_grad(flat_ct))
        with enable_grad():
            res = _autograd_grad(flat_out, leaves, flat_ct, retain_graph=retain_graph or cg, create_graph=cg)
        if not cg:
            res = tuple(r.detach() for r in res)
        return tree_unflatten(res, primals_spec)

    results = out if track else _detach_tree(out)
    if has_aux:
        return results, vjp_fn, (aux if track else _detach_tree(aux))
    return results, vjp_fn


# ---- jvp (double vjp) -------------------------------------------------------------------------

def _check_tangent_shapes(flat_primals, flat_tangents):
    for p, t in zip(flat_primals, flat_tangents):
        if p.shape != t.shape:
            raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                               f"Tensor, this is not supported. Tensor is of size {list(p.shape)} while the given "
                               f"forward gradient is of size {list(t.shape)}.")


def _check_list_of_tensors(flat, argname):
    if len(flat) == 0:
        raise RuntimeError(f"{_jvp_str}: Expected {argname} to contain at least one Tensor.")
    for x in flat:
        if not isinstance(x, _C.Tensor):
            raise RuntimeError(f"{_jvp_str}: Expected {argname} to only contain Tensors, got {type(x)}")


def _linearization(flat_out, leaves):
    """(us, gs): dummy cotangents u (one per output requiring grad) and g = J^T u with a graph,
    linear in u; the vjp of g with respect to u, with v as the vector, is J v."""
    diff = [o for o in flat_out if o.requires_grad]
    if not diff:
        return [], []
    us = [_C.zeros_like(o).requires_grad_(True) for o in diff]
    gs = _autograd_raw_or_none(diff, leaves, us)
    return us, gs


def _autograd_raw_or_none(outs, inputs, gos):
    return _autograd_grad_raw(outs, list(inputs), gos, retain_graph=True, create_graph=True, allow_unused=True)


def _apply_linearization(flat_out, us, gs, flat_tangents, create_graph, strict, retain_graph=False):
    pairs = [(g, t) for g, t in zip(gs, flat_tangents) if g is not None and g.requires_grad]
    if pairs and us:
        rs = _autograd_grad_raw([g for g, _ in pairs], us, [t.to(g.dtype) if t.dtype != g.dtype else t
                                                            for g, t in pairs],
                                retain_graph=retain_graph or create_graph, create_graph=create_graph,
                                allow_unused=True)
    else:
        rs = [None] * len(us)
    out, k = [], 0
    for o in flat_out:
        r = None
        if o.requires_grad:
            r = rs[k]
            k += 1
        if r is None:
            if strict:
                raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is independent of the "
                                   "inputs. This is not allowed with strict=True.")
            r = _C.zeros_like(o)
        out.append(r if create_graph else r.detach())
    return out


def _jvp_with_argnums(func, primals, tangents, argnums, *, strict=False, has_aux=False):
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{_jvp_str}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    diff_args = primals if argnums is None else _slice_argnums(primals, argnums)
    flat_primals, primals_spec = tree_flatten(diff_args)
    flat_tangents, tangents_spec = tree_flatten(tangents)
    if primals_spec != tangents_spec:
        raise RuntimeError(f"{_jvp_str}: Expected primals and tangents to have the same python structure. For "
                           "example, if primals is a tuple of 3 tensors, tangents also must be. Got primals with "
                           f"structure {primals_spec} and tangents with structure {tangents_spec}")
    _check_list_of_tensors(flat_primals, "primals")
    _check_list_of_tensors(flat_tangents, "tangents")
    _check_tangent_shapes(flat_primals, flat_tangents)
    outer_grad = _C.is_grad_enabled()
    with enable_grad():
        leaves = [_make_leaf(x) for x in flat_primals]
        new = tree_unflatten(leaves, primals_spec)
        args = new if argnums is None else _replace_args(primals, new if isinstance(argnums, tuple) else new[0],
                                                           argnums)
        out = func(*args)
        out, aux = _split_aux(out, has_aux, _jvp_str)
        flat_out, out_spec = tree_flatten(out)
        _check_tensor_outputs(flat_out, _jvp_str)
        roots = flat_out + (tree_flatten(aux)[0] if has_aux else [])
        track = _needs_graph(outer_grad, (primals, tangents), roots, leaves)
        us, gs = _linearization(flat_out, leaves)
        tangents_out = _apply_linearization(flat_out, us, gs, flat_tangents, track, strict)
    primals_out = flat_out if track else [o.detach() for o in flat_out]
    res = (tree_unflatten(primals_out, out_spec), tree_unflatten(tangents_out, out_spec))
    if has_aux:
        return res + ((aux if track else _detach_tree(aux)),)
    return res


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """(func(*primals), J tangents[, aux]): the Jacobian-vector product (torch.func.jvp).
    primals is a tuple (of pytrees of tensors), tangents matches it. Computed in reverse mode by
    the double-vjp identity (ember has no forward-mode AD): same values as torch's, twice a
    backward pass of cost."""
    return _jvp_with_argnums(func, primals, tangents, None, strict=strict, has_aux=has_aux)


def linearize(func, *primals):
    """(func(*primals), jvp_fn): jvp_fn(*tangents) is J tangents at primals. The backward graph
    u -> J^T u is built once and reused by every jvp_fn call (one backward pass each)."""
    outer_grad = _C.is_grad_enabled()
    flat_primals, primals_spec = tree_flatten(primals)
    with enable_grad():
        leaves = [_make_leaf(x) for x in flat_primals]
        out = func(*tree_unflatten(leaves, primals_spec))
        flat_out, out_spec = tree_flatten(out)
        _check_tensor_outputs(flat_out, "linearize(f, *primals)")
        track = _needs_graph(outer_grad, primals, flat_out, leaves)
        us, gs = _linearization(flat_out, leaves)
    shapes = [p.shape for p in flat_primals]
    devices = [p.device for p in flat_primals]
    dtypes = [p.dtype for p in flat_primals]

    def jvp_fn(*tangents):
        flat_t, t_spec = tree_flatten(tangents)
        if t_spec != primals_spec:
            raise RuntimeError(f"Expected the tangents {t_spec} to have the same argspec as the primals {primals_spec}")
        for idx, t in enumerate(flat_t):
            for what, have, want in (("shape", t.shape, shapes[idx]), ("device", t.device, devices[idx]),
                                     ("dtype", t.dtype, dtypes[idx])):
                if have != want:
                    raise RuntimeError(f"tangent:{idx} with {what} {have} in flattened pytree doesn't match the {what} "
                                       f"{want} of the corresponding primal.")
        cg = _C.is_grad_enabled() and (track or _any_requires_grad(flat_t))
        with enable_grad():
            res = _apply_linearization(flat_out, us, gs, flat_t, cg, False, retain_graph=True)
        return tree_unflatten(res, out_spec)

    return tree_unflatten(flat_out if track else [o.detach() for o in flat_out], out_spec), jvp_fn


# ---- Jacobians --------------------------------------------------------------------------------

def _jacobian_rows(flat_out, leaves, create_graph, zeros_like_output=False):
    """jac[i][j]: d flat_out[i] / d leaves[j], of shape out_i.shape + leaf_j.shape, one
    backward pass per output element. An output independent of the inputs gives zeros of the
    input's dtype (jacrev: vjps are zeros_like(input)) or the output's (jacfwd: tangents are
    zeros_like(output))."""
    jac = []
    for o in flat_out:
        n = o.numel()
        if not o.requires_grad or n == 0:
            jac.append([_C.zeros(list(o.shape) + list(x.shape), dtype=o.dtype if zeros_like_output else x.dtype,
                                 device=x.device) for x in leaves])
            continue
        if n == 1:
            gs = _autograd_grad([o], leaves, [_C.ones_like(o)], retain_graph=True, create_graph=create_graph)
            jac.append([g.reshape(list(o.shape) + list(x.shape)) for g, x in zip(gs, leaves)])
            continue
        basis = _C.eye(n, dtype=o.dtype, device=o.device)
        rows = [[] for _ in leaves]
        for k in range(n):
            gs = _autograd_grad([o], leaves, [basis[k].reshape(o.shape)], retain_graph=True,
                                create_graph=create_graph)
            for j, g in enumerate(gs):
                rows[j].append(g)
        jac.append([_C.stack(r, 0).reshape(list(o.shape) + list(x.shape)) for r, x in zip(rows, leaves)])
    return jac


def _jacobian_impl(func, argnums, has_aux, args, api, randomness=None):
    name = "jacrev" if api == "rev" else "jacfwd"
    fn_str = "vjp(f, *primals)" if api == "rev" else _jvp_str
    _error_if_complex(name, args, is_input=True)
    outer_grad = _C.is_grad_enabled()
    gen = _C.default_generator
    with enable_grad():
        diff = _slice_argnums(args, argnums, as_tuple=False)
        primals_spec = tree_flatten(_slice_argnums(args, argnums))[1]
        flat_diff, spec = tree_flatten(diff)
        leaves = [_make_leaf(x) for x in flat_diff]
        new_args = _replace_args(args, tree_unflatten(leaves, spec), argnums)
        state = gen.get_state() if randomness == "error" else None
        output = func(*new_args)
        if state is not None and not _C.equal(gen.get_state(), state):
            gen.set_state(state)
            raise RuntimeError(_RANDOM_ERROR)
        output, aux = _split_aux(output, has_aux, fn_str)
        flat_out, out_spec = tree_flatten(output)
        _check_tensor_outputs(flat_out, fn_str)
        if api == "rev":
            _check_float_outputs(flat_out)
        _error_if_complex(name, flat_out, is_input=False)
        roots = flat_out + (tree_flatten(aux)[0] if has_aux else [])
        track = _needs_graph(outer_grad, args, roots, leaves)
        jac = _jacobian_rows(flat_out, leaves, track, zeros_like_output=(api == "fwd"))
    if not track:
        jac = [[j.detach() for j in row] for row in jac]
    per_out = [tree_unflatten(row, primals_spec) for row in jac]
    if isinstance(argnums, int):
        per_out = [r[0] for r in per_out]
    result = tree_unflatten(per_out, out_spec)
    if has_aux:
        return result, (aux if track else _detach_tree(aux))
    return result


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """jacrev(f)(*args): the Jacobian of f with respect to args[argnums] by reverse mode
    (torch.func.jacrev): for each output leaf, a pytree like the argument of tensors of shape
    output.shape + input.shape. chunk_size is accepted (one row at a time here)."""
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper_fn(*args):
        return _jacobian_impl(func, argnums, has_aux, args, "rev")
    return wrapper_fn


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """jacfwd(f)(*args): the Jacobian of f with respect to args[argnums] (torch.func.jacfwd),
    the same numbers and structure as jacrev. ember has no forward mode, so it is built row by
    row in reverse mode too. With randomness='error' (as torch, whose jacfwd vmaps f), f may
    not draw random numbers."""
    @functools.wraps(func)
    def wrapper_fn(*args):
        _check_randomness_arg(randomness)
        return _jacobian_impl(func, argnums, has_aux, args, "fwd", randomness=randomness)
    return wrapper_fn


def hessian(func, argnums=0):
    """hessian(f)(*args): the Hessian of f with respect to args[argnums], jacfwd(jacrev(f))."""
    return jacfwd(jacrev(func, argnums), argnums)
