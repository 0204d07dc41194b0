"""gradcheck: compares the gradients autograd computes with central finite differences.

Use float64 inputs: in float32 the finite differences are too coarse for the default
tolerances (a warning says so, as torch's does).
"""
import warnings

from .. import _C
from .grad_mode import no_grad

__all__ = ["gradcheck", "GradcheckError"]


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
