"""gradcheck: compares the gradients autograd computes with central finite differences.

Use float64 inputs: in float32 the finite differences are too coarse for the default
tolerances (a warning says so, as torch's does).
"""
import warnings

from .. import _C
from .grad_mode import no_grad

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck when the analytical and numerical Jacobians differ."""


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _flat_values(t):
    return t.detach().reshape(-1).tolist()


def _multi_index(flat, shape):
    idx = []
    for size in reversed(shape):
        idx.append(flat % size)
        flat //= size
    return tuple(reversed(idx))


def _outputs(func, inputs):
    return [o for o in _as_tuple(func(*inputs)) if isinstance(o, _C.Tensor)]


def _numerical_jacobian(func, inputs, diff_idx, eps):
    """jac[i][o] is a list (one per element of input i) of lists (one per element of output o)."""
    with no_grad():
        n_out = len(_outputs(func, inputs))
    jac = []
    for i in diff_idx:
        x = inputs[i]
        data = x.data  # writes through it are not seen by autograd's version checks
        cols = [[] for _ in range(n_out)]
        for j in range(x.numel()):
            idx = _multi_index(j, tuple(x.shape))
            orig = data[idx].item()
            with no_grad():
                data[idx] = orig - eps
                minus = [_flat_values(o) for o in _outputs(func, inputs)]
                data[idx] = orig + eps
                plus = [_flat_values(o) for o in _outputs(func, inputs)]
                data[idx] = orig
            for o in range(n_out):
                cols[o].append([(p - m) / (2 * eps) for p, m in zip(plus[o], minus[o])])
        jac.append(cols)
    return jac


def _analytical_jacobian(func, inputs, diff_idx):
    outputs = _outputs(func, inputs)
    diff_inputs = [inputs[i] for i in diff_idx]
    # jac[i][o][j][k]: d output o element k / d input i element j
    jac = [[[[0.0] * o.numel() for _ in range(inputs[i].numel())] for o in outputs] for i in diff_idx]
    for o, out in enumerate(outputs):
        if not out.requires_grad:
            continue
        for k in range(out.numel()):
            seed = _C.zeros_like(out)
            seed.reshape(-1)[k] = 1.0
            grads = _C._autograd_grad(out, diff_inputs, seed, True, False, True)
            for n, g in enumerate(grads):
                if g is None:
                    continue
                for j, v in enumerate(_flat_values(g)):
                    jac[n][o][j][k] = v
    return jac


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, **unused):
    """Checks the gradients of `func` at `inputs` (a tensor or a tuple; those with requires_grad
    are checked) against finite differences. Returns True, or raises GradcheckError (returns
    False when raise_exception=False) naming the input, output and worst element."""
    inputs = _as_tuple(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, _C.Tensor) and x.requires_grad]
    if not diff_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of "
                         "the them have requires_grad=True.")
    for i in diff_idx:
        if inputs[i].dtype != _C.float64:
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point. "
                          "This check will likely fail if all the inputs are not of double precision "
                          "floating point.")
    numerical = _numerical_jacobian(func, inputs, diff_idx, eps)
    analytical = _analytical_jacobian(func, inputs, diff_idx)
    for n, i in enumerate(diff_idx):
        for o in range(len(numerical[n])):
            for j, (num_row, ana_row) in enumerate(zip(numerical[n][o], analytical[n][o])):
                for k, (num, ana) in enumerate(zip(num_row, ana_row)):
                    if abs(ana - num) > atol + rtol * abs(num):
                        if not raise_exception:
                            return False
                        raise GradcheckError(
                            f"Jacobian mismatch for output {o} with respect to input {i}: at input element "
                            f"{j}, output element {k}, numerical {num} but analytical {ana} "
                            f"(atol={atol}, rtol={rtol})")
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
                  **unused):
    """torch.autograd.gradgradcheck: checks the gradients of `func`'s gradients. The first-order
    gradients of its outputs (weighted by `grad_outputs`, random ones that require grad when not
    given) with respect to the inputs that require grad are computed with create_graph=True, and
    that function of (inputs, grad_outputs) goes through gradcheck."""
    from .. import enable_grad, randn
    inputs = _as_tuple(inputs)
    n_in = len(inputs)
    outputs = [o for o in _as_tuple(func(*inputs)) if isinstance(o, _C.Tensor) and o.requires_grad]
    if grad_outputs is None:
        grad_outputs = tuple(randn(*o.shape, dtype=o.dtype, device=o.device).requires_grad_() for o in outputs)
    grad_outputs = _as_tuple(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise ValueError(f"gradgradcheck: expected {len(outputs)} grad_outputs (one per output that requires "
                         f"grad), got {len(grad_outputs)}")

    def first_order(*args):
        ins, gos = args[:n_in], args[n_in:]
        with enable_grad():  # (gradcheck's finite differences run under no_grad)
            outs = [o for o in _as_tuple(func(*ins)) if isinstance(o, _C.Tensor) and o.requires_grad]
            wrt = [x for x in ins if isinstance(x, _C.Tensor) and x.requires_grad]
            grads = _C._autograd_grad(outs, wrt, list(gos), True, True, True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_order, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
