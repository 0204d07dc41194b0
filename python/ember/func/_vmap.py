"""torch.func.vmap for ember: map a function over a dimension of its inputs.

ember has no batching rules, so vmap runs `func` once per sample: each batched input is unbound
along its in_dim, func is called on sample i, and each output leaf is stacked along its out_dim.
The results equal torch's (func sees per-sample shapes, as under torch's BatchedTensor), they
keep autograd (unbind and stack are differentiable), and any function works, including ones
torch's vmap cannot batch (.item(), data-dependent control flow). The cost is B calls of func
instead of one batched call; docs/func.md gives measurements.

What a loop cannot see: whether an out_dims=None output depends on the batch. ember returns it
when every sample gave the same value (torch returns unbatched outputs as they are) and raises
torch's error when they differ.
"""
import functools

from .. import _C
from ._pytree import tree_flatten, tree_unflatten, broadcast_to_and_flatten

__all__ = ["vmap"]

_RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please either use the 'same' or "
                 "'different' randomness flags on vmap or perform the randomness operation out of vmap")


def _get_name(func):
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_get_name(func.func)}, ...)"
    return repr(func)


def _check_randomness_arg(randomness):
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")


def _check_out_dims(out_dims, func):
    if isinstance(out_dims, int):
        return
    for x in tree_flatten(out_dims)[0]:
        if not (x is None or isinstance(x, int)):
            raise ValueError(f"vmap({_get_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, None or "
                             "a python collection of ints representing where in the outputs the vmapped dimension "
                             "should appear.")


def _process_batched_inputs(in_dims, args, func):
    name = _get_name(func)
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                         f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
    if len(args) == 0:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are trying "
                         "to vmap over a function with no inputs. The latter is unsupported.")
    flat_args, args_spec = tree_flatten(args)
    flat_in_dims = broadcast_to_and_flatten(in_dims, args_spec)
    if flat_in_dims is None:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                         f"structure of `inputs`. in_dims has structure {tree_flatten(in_dims)[1]} but inputs has "
                         f"structure {args_spec}.")
    for i, (arg, in_dim) in enumerate(zip(flat_args, flat_in_dims)):
        if not isinstance(in_dim, int) and in_dim is not None:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for an input but "
                             "in_dim must be either an integer dimension or None.")
        if isinstance(in_dim, int) and not isinstance(arg, _C.Tensor):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for an input but "
                             f"the input is of type {type(arg)}. We cannot vmap over non-Tensor arguments, please use "
                             "None as the respective in_dim")
        if in_dim is not None:
            nd = arg.dim()
            if in_dim < -nd or in_dim >= nd:
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for some "
                                 f"input, but that input is a Tensor of dimensionality {nd} so expected in_dim to "
                                 f"satisfy -{nd} <= in_dim < {nd}.")
            if in_dim < 0:
                flat_in_dims[i] = in_dim % nd
    sizes = [arg.size(d) for d, arg in zip(flat_in_dims, flat_args) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    return sizes[0], flat_in_dims, flat_args, args_spec


def _flat_out_dims(out_dims, output, spec, func):
    def incompatible():
        raise ValueError(f"vmap({_get_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible "
                         f"with the structure of `outputs`. out_dims has structure {tree_flatten(out_dims)[1]} but "
                         f"outputs has structure {spec}.")
    if isinstance(output, _C.Tensor):
        if isinstance(out_dims, int) or out_dims is None:
            return [out_dims]
        if isinstance(out_dims, tuple) and len(out_dims) == 1:
            return list(out_dims)
        incompatible()
    flat = broadcast_to_and_flatten(out_dims, spec)
    if flat is None:
        incompatible()
    return flat


def _same_value(a, b):
    if a is b:
        return True
    if isinstance(a, _C.Tensor) and isinstance(b, _C.Tensor):
        return a.shape == b.shape and a.dtype == b.dtype and bool(_C.equal(a.detach(), b.detach()))
    try:
        return bool(a == b)
    except Exception:
        return False


def _combine(per_sample, out_dims, func, batch_size):
    """Stack the per-sample outputs (pytrees of the same structure) leaf by leaf."""
    name = _get_name(func)
    first = per_sample[0]
    flat0, spec = tree_flatten(first)
    flat_dims = _flat_out_dims(out_dims, first, spec, func)
    flats = [flat0]
    for i, out in enumerate(per_sample[1:], 1):
        f, s = tree_flatten(out)
        if s != spec:
            raise ValueError(f"vmap({name}, ...): `{name}` returned outputs of different structure for different "
                             f"samples ({spec} for sample 0, {s} for sample {i}); ember's vmap calls {name} once per "
                             "sample and needs one structure")
        flats.append(f)
    result = []
    for j, d in enumerate(flat_dims):
        leaves = [f[j] for f in flats]
        if d is None:
            if not all(_same_value(leaves[0], x) for x in leaves[1:]):
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
            result.append(leaves[0])
            continue
        if not isinstance(leaves[0], _C.Tensor):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(leaves[0])}. "
                             "Did you mean to set out_dims= to None for output?")
        shape0 = leaves[0].shape
        for i, x in enumerate(leaves[1:], 1):
            if not isinstance(x, _C.Tensor):
                raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(x)}. "
                                 "Did you mean to set out_dims= to None for output?")
            if x.shape != shape0:
                raise RuntimeError(f"vmap({name}, ...): `{name}` returned a Tensor of shape {list(shape0)} for "
                                   f"sample 0 and of shape {list(x.shape)} for sample {i}; outputs must have one "
                                   "shape across the batch")
        stacked = _C.stack(leaves, d)
        if batch_size == 0:  # the leaves came from a probe sample: keep its shape, none of its values
            stacked = stacked.narrow(d, 0, 0)
        result.append(stacked)
    return tree_unflatten(result, spec)


def _run(func, batch_size, flat_in_dims, flat_args, args_spec, out_dims, randomness, kwargs):
    gen = _C.default_generator
    if batch_size == 0:
        # no sample to call func on: call it once on a zero sample to learn the outputs' structure
        # and shapes (torch calls func once on an empty BatchedTensor), then keep none of them
        state = gen.get_state()
        try:
            sample = [a if d is None else a.new_zeros([s for k, s in enumerate(a.shape) if k != d])
                      for a, d in zip(flat_args, flat_in_dims)]
            out = func(*tree_unflatten(sample, args_spec), **kwargs)
        finally:
            gen.set_state(state)
        return _combine([out], out_dims, func, 0)
    slices = [None if d is None else a.unbind(d) for a, d in zip(flat_args, flat_in_dims)]
    state0 = gen.get_state() if randomness != "different" else None
    outs = []
    for i in range(batch_size):
        sample = [a if s is None else s[i] for a, s in zip(flat_args, slices)]
        if randomness == "same" and i:
            gen.set_state(state0)
        outs.append(func(*tree_unflatten(sample, args_spec), **kwargs))
        if randomness == "error" and not _C.equal(gen.get_state(), state0):
            gen.set_state(state0)
            raise RuntimeError(_RANDOM_ERROR)
    return _combine(outs, out_dims, func, batch_size)


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """vmap(func)(*args): func mapped over dim in_dims of its inputs, outputs stacked along
    out_dims (torch.func.vmap). in_dims is an int, or a tuple as long as the positional args
    whose entries are ints, None (not mapped) or pytrees matching the arg; out_dims likewise for
    the outputs. kwargs are passed to every call unmapped. randomness: 'error' raises if func
    draws from the default generator, 'different' lets every sample draw its own values, 'same'
    gives every sample the same draws. chunk_size is accepted and checked (ember maps one sample
    at a time whatever it is)."""
    _check_randomness_arg(randomness)
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        _check_out_dims(out_dims, func)
        batch_size, flat_in_dims, flat_args, args_spec = _process_batched_inputs(in_dims, args, func)
        return _run(func, batch_size, flat_in_dims, flat_args, args_spec, out_dims, randomness, kwargs)

    return wrapped
