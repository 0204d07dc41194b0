"""ember.compile against ember eager, and torch.compile against torch eager, on this CPU (2 threads,
float32), in one run: a chain of 10 elementwise ops over 16M elements, an RMSNorm, a layer norm
and a softmax written by hand (inference), the seeds' MLP and CNN train steps, a GPT block's
forward (inference) and train step (the model compiled, and the whole step compiled: backward and
the optimizer break it), two blocks with a finiteness check between (a graph break: ember splits
it at the blocks). First-call times (capture and
code generation) too; the kernel caches are cleared first for both (ember's EMBER_CACHE_DIR and
inductor's TORCHINDUCTOR_CACHE_DIR point at fresh directories), so first calls really build.

    PYTHONPATH=python:build/python /work/torch2/bin/python bench/bench_compile.py [--quick] [--only=NAME_PART]
    ... bench_compile.py --cuda    # on a GPU instead: the chain rows (ember's kernels from NVRTC), and
                                   # train steps with mode="reduce-overhead" (CUDA graphs)

Columns: ms per call (best of interleaved rounds), compiled/eager time ratios (below 1: faster),
ember compiled over torch.compile; first call in seconds.
"""
import contextlib
import os
import sys
import tempfile
import time

_tmp = tempfile.mkdtemp(prefix="bench_compile_")
os.environ["EMBER_CACHE_DIR"] = os.path.join(_tmp, "ember")
os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(_tmp, "inductor")

import ember  # noqa: E402

from bench_timing import best_of  # noqa: E402

try:
    import torch  # noqa: E402
    has_compile = hasattr(torch, "compile")
except ImportError:
    torch, has_compile = None, False


def chain10(T):
    def f(x, y):
        a = x * 1.1 + 0.3
        a = a.relu() * y
        a = a.sigmoid() - 0.5
        a = a.tanh() * a
        return (a + y).exp() / (y.abs() + 1.0)
    return f


def mlp(T):
    return T.nn.Sequential(T.nn.Flatten(), T.nn.Linear(784, 256), T.nn.ReLU(), T.nn.Linear(256, 128), T.nn.ReLU(),
                           T.nn.Linear(128, 10))


def cnn(T):
    return T.nn.Sequential(T.nn.Conv2d(1, 16, 3, padding=1), T.nn.ReLU(), T.nn.MaxPool2d(2),
                           T.nn.Conv2d(16, 32, 3, padding=1), T.nn.ReLU(), T.nn.MaxPool2d(2), T.nn.Flatten(),
                           T.nn.Linear(32 * 7 * 7, 128), T.nn.ReLU(), T.nn.Linear(128, 10))


def gpt_block(T, d=256, heads=4):
    F = T.nn.functional

    class Block(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = T.nn.LayerNorm(d), T.nn.LayerNorm(d)
            self.qkv, self.proj = T.nn.Linear(d, 3 * d), T.nn.Linear(d, d)
            self.fc, self.out = T.nn.Linear(d, 4 * d), T.nn.Linear(4 * d, d)

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (z.reshape(b, t, heads, d // heads).transpose(1, 2) for z in (q, k, v))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
            x = x + self.proj(a)
            return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))
    return Block()


def checked_stack(T, blocks=2):
    """GPT blocks with a finiteness check after each: `bool(tensor)` reads a value back, a graph
    break in both compilers (ember splits at the blocks, torch at the check)."""
    class Stack(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = T.nn.ModuleList([gpt_block(T) for _ in range(blocks)])

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
                if not T.isfinite(x).all():
                    raise FloatingPointError("a block made a non-finite value")
            return x
    return Stack()


def rms_norm_by_hand(x, w):  # LLaMA's RMSNorm, as model code writes it
    return x * (x.pow(2).mean(-1, keepdim=True) + 1e-6).rsqrt() * w


def softmax_by_hand(x):
    e = (x - x.amax(-1, keepdim=True)).exp()
    return e / e.sum(-1, keepdim=True)


def layer_norm_by_hand(x, w, b):
    m = x.mean(-1, keepdim=True)
    d = x - m
    return d * (d.pow(2).mean(-1, keepdim=True) + 1e-5).rsqrt() * w + b


def train_step(T, model, x, y, opt):
    def step():
        opt.zero_grad()
        loss = T.nn.functional.cross_entropy(model(x), y) if y is not None else model(x).pow(2).mean()
        loss.backward()
        opt.step()
    return step


def chain_cases(T, quick, device="cpu", prefix=""):
    """The chain of 10 ops over 16M elements (1M with --quick), forward and forward+backward."""
    T.manual_seed(0)
    n = 1 << (20 if quick else 24)
    x, y = T.randn(n, device=device), T.randn(n, device=device)
    f = chain10(T)
    size = "16M" if not quick else "1M"
    yield f"{prefix}chain of 10 ops, {size}", f, lambda g: (lambda: g(x, y)), True
    xg, yg = T.randn(n, device=device, requires_grad=True), T.randn(n, device=device, requires_grad=True)

    def chain_fwd_bwd(g):
        def step():
            xg.grad = yg.grad = None
            g(xg, yg).sum().backward()
        return step
    yield f"{prefix}chain of 10 ops fwd+bwd, {size}", f, chain_fwd_bwd, False


def cases(T, quick):
    yield from chain_cases(T, quick)
    h, w, b = T.randn(4096, 768), T.randn(768), T.randn(768)
    yield "RMSNorm by hand (4096x768)", rms_norm_by_hand, (lambda g: (lambda: g(h, w))), True
    yield "layer norm by hand (4096x768)", layer_norm_by_hand, (lambda g: (lambda: g(h, w, b))), True
    hg, wg = T.randn(4096, 768, requires_grad=True), T.randn(768, requires_grad=True)
    up = T.randn(4096, 768)

    def rms_fwd_bwd(g):
        def step():
            hg.grad = wg.grad = None
            (g(hg, wg) * up).sum().backward()
        return step
    yield "RMSNorm by hand fwd+bwd", rms_norm_by_hand, rms_fwd_bwd, False
    scores = T.randn(8 * 12 * 128, 128)
    yield "softmax by hand (12288x128)", softmax_by_hand, (lambda g: (lambda: g(scores))), True
    for name, make, shape in [("MLP train step (b64)", mlp, (64, 1, 28, 28)), ("CNN train step (b64)", cnn, (64, 1, 28, 28))]:
        model = make(T)
        xb, yb = T.randn(*shape), T.randint(0, 10, (64,))
        opt = T.optim.SGD(model.parameters(), lr=0.01)
        yield name, model, (lambda m, xb=xb, yb=yb, opt=opt: train_step(T, m, xb, yb, opt)), False
    block = gpt_block(T).eval()
    xb = T.randn(8, 128, 256)
    yield "GPT block forward (8x128x256)", block, (lambda m, xb=xb: (lambda: m(xb))), True
    stack = checked_stack(T).eval()
    yield "2 GPT blocks + checks (a break)", stack, (lambda m, xb=xb: (lambda: m(xb))), True
    block_t = gpt_block(T).train()
    opt = T.optim.AdamW(block_t.parameters(), lr=1e-4)
    yield "GPT block train step", block_t, (lambda m, xb=xb, opt=opt: train_step(T, m, xb, None, opt)), False
    # the whole step compiled: backward() and step() break it; ember runs the block compiled around them
    block_s = gpt_block(T).train()
    opt_s = T.optim.AdamW(block_s.parameters(), lr=1e-4)
    yield "GPT block step, step compiled", train_step(T, block_s, xb, None, opt_s), (lambda f: f), False


def cuda_cases(T, quick):
    """The chain rows on the GPU (--cuda): ember's fused kernels there are CUDA C++ built by NVRTC;
    and train steps compiled with mode="reduce-overhead" (CUDA graphs for forward and backward),
    where launches, not math, bound the seeds' MLP at batch 64."""
    yield from chain_cases(T, quick, device="cuda", prefix="cuda: ")
    for name, model, shape in [("cuda: MLP train step, reduce-overhead", mlp(T), (64, 1, 28, 28)),
                               ("cuda: GPT block step, reduce-overhead", gpt_block(T).train(), (8, 128, 256))]:
        model = model.cuda()
        xb = T.randn(*shape, device="cuda")
        yb = T.randint(0, 10, (64,), device="cuda") if name.startswith("cuda: MLP") else None
        opt = T.optim.SGD(model.parameters(), lr=0.01)
        yield name, model, (lambda m, xb=xb, yb=yb, opt=opt: train_step(T, m, xb, yb, opt)), False, \
            {"mode": "reduce-overhead"}


def synchronized(T, step):
    def run():
        step()
        T.cuda.synchronize()
    return run


def measure(T, compile_fn, quick, on_cuda=False):
    rows = {}
    only = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--only=")), "")
    for name, thing, make_step, no_grad, *options in (cuda_cases if on_cuda else cases)(T, quick):
        if only not in name:
            continue
        with (T.no_grad() if no_grad else contextlib.nullcontext()):
            eager = make_step(thing)
            compiled_thing = compile_fn(thing, **(options[0] if options else {}))
            compiled = make_step(compiled_thing)
            if on_cuda:
                eager, compiled = synchronized(T, eager), synchronized(T, compiled)
            t = time.perf_counter()
            compiled()
            first = time.perf_counter() - t
            eager()
            e, c = best_of([eager, compiled], rounds=3 if quick else 5, calls=3)
        rows[name] = (e, c, first)
    return rows


def main():
    quick, on_cuda = "--quick" in sys.argv, "--cuda" in sys.argv
    ember.set_num_threads(2)
    mine = measure(ember, ember.compile, quick, on_cuda)
    theirs = {}
    if has_compile:
        torch.set_num_threads(2)
        theirs = measure(torch, torch.compile, quick, on_cuda)
    print(f"2 threads, float32; ember {ember.__version__}" + (f", torch {torch.__version__}" if torch else ""))
    print(f"{'case':32s} {'ember':>8s} {'compiled':>9s} {'ratio':>6s} {'torch':>8s} {'t.compile':>9s} {'ratio':>6s} "
          f"{'vs torch':>8s} {'1st ember':>10s} {'1st torch':>10s}")
    for name, (e, c, first) in mine.items():
        te, tc, tfirst = theirs.get(name, (float("nan"),) * 3)
        print(f"{name:32s} {e:8.2f} {c:9.2f} {c / e:6.2f} {te:8.2f} {tc:9.2f} {tc / te:6.2f} {c / tc:8.2f} "
              f"{first:9.2f}s {tfirst:9.2f}s", flush=True)


if __name__ == "__main__":
    main()
