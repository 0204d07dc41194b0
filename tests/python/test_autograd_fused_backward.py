"""Fused backward kernels (tanh_backward, sigmoid_backward, silu_backward, threshold_backward) against the
composite formulas create_graph builds, and gradgradcheck, which checks the second derivatives
those composites keep."""
import pytest

import ember


def test_tanh_sigmoid_and_relu_backward_in_one_pass_keep_the_composite_bits():
    """TanhBackward0, SigmoidBackward0, SiluBackward0 and ReluBackward0 run one fused kernel
    (tanh_backward, sigmoid_backward, silu_backward, threshold_backward)
    when no graph of the backward is built: in float32 and float64 the same bits as the three-op
    formula (built under create_graph, which stays differentiable), on contiguous and transposed
    inputs; 16-bit types rounded once, close to it; the second derivative still works."""
    for op in ("tanh", "sigmoid", "silu", "relu"):
        for dtype in (ember.float32, ember.float64, ember.bfloat16, ember.float16):
            for transposed in (False, True):
                x = ember.randn(37, 20).to(dtype)
                x[3, 4], x[5, 6], x[7, 8] = float("nan"), 0.0, -0.0  # (relu: NaN passes the gradient, zeros do not)
                x = (x.t() if transposed else x).requires_grad_()
                up = ember.randn(*x.shape).to(dtype)
                fused, = ember.autograd.grad((getattr(x, op)() * up).sum(), x)
                composite, = ember.autograd.grad((getattr(x, op)() * up).sum(), x, create_graph=True)
                same_bits = dtype in (ember.float32, ember.float64) or op == "relu"  # (NaN where NaN)
                tol = 0 if same_bits else 2e-2
                assert ember.allclose(fused.float(), composite.detach().float(), rtol=tol, atol=tol, equal_nan=True), \
                    (op, dtype, transposed)
        x = ember.randn(6, dtype=ember.float64, requires_grad=True)
        if op != "relu":
            assert ember.autograd.gradgradcheck(lambda t: getattr(t, op)(), (x,))


def test_gradgradcheck_checks_second_derivatives():
    x = ember.randn(4, dtype=ember.float64, requires_grad=True)
    w = ember.randn(4, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda a, b: (a * b).sin() * a, (x, w))

    class FirstOrderOnly(ember.autograd.Function):  # its backward detaches: no second derivative
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a ** 3

        @staticmethod
        def backward(ctx, g):
            a, = ctx.saved_tensors
            return g * 3 * a.detach() ** 2 + 0 * a

    assert ember.autograd.gradcheck(FirstOrderOnly.apply, (x,))
    assert not ember.autograd.gradgradcheck(FirstOrderOnly.apply, (x,), raise_exception=False)
    with pytest.raises(ember.autograd.GradcheckError, match="Jacobian mismatch"):
        ember.autograd.gradgradcheck(FirstOrderOnly.apply, (x,))
    with pytest.raises(ValueError, match="expected 1 grad_outputs"):
        ember.autograd.gradgradcheck(FirstOrderOnly.apply, (x,), grad_outputs=())
