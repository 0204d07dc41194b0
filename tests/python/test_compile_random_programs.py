"""ember.compile against eager on random programs: chains of elementwise ops and row reductions
over operands of every kind a fused kernel reads (full-size, a weight over the last dim, a [1, D]
bias, a 0-dim tensor, a per-row column, a Python number), some wanting gradients, at row counts
around the backward's chunking (kGradientChunks) and row lengths around the vector width. Values
and gradients must match eager's to float rounding. Seeded: a failure names its program."""
import random

import pytest

import ember

NO_GPU = "no CUDA GPU on this machine: the CUDA backend compiled but did not run"

UNARY = ["tanh", "sigmoid", "relu", "neg", "square", "exp_tanh", "gelu", "gelu_erf", "sin", "cos", "atan", "erf", "abs",
         "silu", "sqrt_safe", "log_safe", "rsqrt_safe", "cube", "reciprocal_safe", "masked_fill"]
BINARY = ["add", "sub", "mul", "div_safe", "maximum", "minimum", "atan2", "pow_safe", "where_gt"]
REDUCE = ["sum", "mean", "amax", "amin"]


def _unary(op, a):
    special = {"exp_tanh": lambda: a.tanh().exp(), "gelu": lambda: ember.nn.functional.gelu(a, approximate="tanh"),
               "gelu_erf": lambda: ember.nn.functional.gelu(a), "square": lambda: a * a,
               "silu": lambda: ember.nn.functional.silu(a), "sqrt_safe": lambda: (a.abs() + 0.1).sqrt(),
               "log_safe": lambda: (a.abs() + 0.5).log(), "rsqrt_safe": lambda: (a * a + 0.25).rsqrt(),
               "cube": lambda: a.tanh() ** 3, "reciprocal_safe": lambda: (a.abs() + 0.5).reciprocal(),
               "masked_fill": lambda: a.masked_fill(a > 0.3, -1.5)}
    return special[op]() if op in special else getattr(a, op)()


def _binary(op, a, b):
    if not isinstance(a, ember.Tensor) and op in ("maximum", "minimum", "atan2", "where_gt"):
        a, b = b, a  # (these take tensors: the number goes second, as a 0-dim tensor)
    if not isinstance(b, ember.Tensor) and op in ("maximum", "minimum", "atan2", "where_gt"):
        b = ember.tensor(b)
    if op == "where_gt":
        return ember.where(a > b, a, b * 0.5)
    if op == "div_safe":
        return a / (b.abs() + 0.5) if isinstance(b, ember.Tensor) else a / (abs(b) + 0.5)
    if op == "pow_safe":
        return (a.abs() + 0.5) ** (b.tanh() if isinstance(b, ember.Tensor) else 1.5)
    return {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b,
            "maximum": lambda: ember.maximum(a, b), "minimum": lambda: ember.minimum(a, b),
            "atan2": lambda: ember.atan2(a, b)}[op]()


def _program(seed):
    """A random program: a list of steps over value slots 0..5 (the operands), each step adding one."""
    rng = random.Random(seed)
    steps, kinds = [], ["full", "full", "inner", "bias", "scalar", "row"]  # the operands' kinds
    for _ in range(rng.randint(3, 9)):
        full = [i for i, k in enumerate(kinds) if k == "full"]
        any_ = list(range(len(kinds)))
        r = rng.random()
        if r < 0.35:
            steps.append(("unary", rng.choice(UNARY), rng.choice(full)))
            kinds.append("full")
        elif r < 0.8:
            b = rng.choice(any_ + ["number"])
            steps.append(("binary", rng.choice(BINARY), rng.choice(full), b, rng.random() < 0.5))
            kinds.append("full")
        else:
            steps.append(("reduce", rng.choice(REDUCE), rng.choice(full)))
            kinds.append("row")
    wants = [rng.random() < 0.7 for _ in range(6)]
    return steps, wants


def _run(steps, operands):
    values = list(operands)
    for step in steps:
        if step[0] == "unary":
            values.append(_unary(step[1], values[step[2]]))
        elif step[0] == "binary":
            a = values[step[2]]
            b = 1.75 if step[3] == "number" else values[step[3]]
            values.append(_binary(step[1], b, a) if step[4] and step[1] not in ("div_safe", "pow_safe") else _binary(step[1], a, b))
        else:
            values.append(getattr(values[step[2]], step[1])(-1, keepdim=True))
    full = [v for v in values[6:] if v.shape == values[0].shape] or [values[0] * 1.0]
    return full[-1] + values[-1]  # the last full value, and the last value broadcast in


@pytest.mark.parametrize("seed", range(int(__import__("os").environ.get("EMBER_RANDOM_PROGRAMS", "24"))))
def test_random_program_matches_eager(seed, device="cpu"):
    steps, wants = _program(seed)
    rng = random.Random(1000 + seed)
    rows, d = rng.choice([1, 3, 63, 64, 65, 130]), rng.choice([1, 7, 16, 33, 70])
    ember.manual_seed(seed)
    operands = [ember.randn(rows, d), ember.randn(rows, d), ember.randn(d), ember.randn(1, d), ember.randn(()),
                ember.randn(rows, 1)]
    if rng.random() < 0.3:  # a transposed view: not fusible, read by the replayed ops around the kernels
        operands[1] = ember.randn(d, rows).t()
    operands = [o.to(device) for o in operands]
    half = seed % 4 == 3  # 16-bit programs: fused chains round each value where it is made, as eager
    if half:
        operands = [o.to(ember.bfloat16 if seed % 8 == 3 else ember.float16) for o in operands]
    operands = [o.requires_grad_(w) for o, w in zip(operands, wants)]

    def f(*ops):
        return _run(steps, ops)

    fast = ember.compile(f)
    up = ember.randn(rows, d).to(operands[0].dtype).to(device)
    fast(*operands)  # the capture call
    got, want = fast(*operands), f(*operands)
    where = f"program {seed} {steps} over {rows}x{d}, gradients for {wants}"
    tol = 3e-2 if half else 1e-4
    assert got.dtype == want.dtype, where
    assert got.shape == want.shape and ember.allclose(got.float(), want.float(), rtol=tol, atol=tol, equal_nan=True), where
    assert got.requires_grad == want.requires_grad, where
    needing = [o for o in operands if o.requires_grad]
    if needing and want.requires_grad:
        g_got = ember.autograd.grad((got * up).sum(), needing, allow_unused=True)
        g_want = ember.autograd.grad((want * up).sum(), needing, allow_unused=True)
        for a, b in zip(g_got, g_want):
            if a is None or b is None:
                assert a is None and b is None or (a if a is not None else b).abs().max() == 0, where
                continue
            gtol = 1e-1 if half else 1e-3
            assert a.shape == b.shape and ember.allclose(a.float(), b.float(), rtol=gtol, atol=gtol, equal_nan=True), where


@pytest.mark.parametrize("seed", range(int(__import__("os").environ.get("EMBER_RANDOM_DYNAMIC_PROGRAMS", "6"))))
def test_random_program_renumbered_over_row_counts(seed):
    """dynamic=True: the program fitted over its first row counts, then renumbered (one compilation
    reused) at others; every call's values and gradients are eager's."""
    steps, wants = _program(seed)
    rng = random.Random(2000 + seed)
    d = rng.choice([7, 16, 33])
    ember.manual_seed(seed)
    params = [ember.randn(d).requires_grad_(wants[2]), ember.randn(1, d).requires_grad_(wants[3]),
              ember.randn(()).requires_grad_(wants[4])]

    def f(*ops):
        return _run(steps, ops)

    fast = ember.compile(f, dynamic=True)
    for rows in (5, 9, 13, 17, 21, 6, 30, 77, 130):
        operands = [ember.randn(rows, d).requires_grad_(wants[0]), ember.randn(rows, d).requires_grad_(wants[1]),
                    *params, ember.randn(rows, 1).requires_grad_(wants[5])]
        got, want = fast(*operands), f(*operands)
        where = f"program {seed} {steps} at {rows}x{d}, gradients for {wants}"
        assert got.shape == want.shape and ember.allclose(got, want, rtol=1e-4, atol=1e-4, equal_nan=True), where
        needing = [o for o in operands if o.requires_grad]
        if needing and want.requires_grad:
            up = ember.randn(rows, d)
            g_got = ember.autograd.grad((got * up).sum(), needing, allow_unused=True)
            g_want = ember.autograd.grad((want * up).sum(), needing, allow_unused=True)
            for a, b in zip(g_got, g_want):
                if a is not None and b is not None:
                    assert ember.allclose(a, b, rtol=1e-3, atol=1e-3, equal_nan=True), where
    c = fast._ember_compiled
    renumbered = sum(r.renumbered for g in c.groups.values() for r in g.regimes.values())
    # four captures fit the sizes (the fifth call checks the fit), the other five renumber one compilation
    assert (c.captures, c.specialisations, renumbered) == (4, 5, 5), (steps, [g.describe() for g in c.groups.values()])


@pytest.mark.skipif(not ember.cuda.is_available(), reason=NO_GPU)
@pytest.mark.parametrize("seed", range(24))
def test_random_program_matches_eager_on_the_gpu(seed):
    """The same programs on a GPU: ember's fused kernels there are CUDA C++ from NVRTC."""
    test_random_program_matches_eager(seed, device="cuda")
