"""bfloat16 on the CPU: ember against PyTorch for matmul, linear, bmm and the CNN's conv2d layers.

Columns (median ms per call after warm-up, 2 threads each):
  ember f32      float32 tensors
  ember bf16     bfloat16 tensors (inputs and weights already bfloat16)
  ember autocast float32 tensors under ember.autocast("cpu", dtype=bfloat16), where ember has it
  torch f32      float32 tensors
  torch autocast float32 tensors under torch.autocast("cpu", dtype=torch.bfloat16)
  torch bf16     bfloat16 tensors
and two ratios: ember bf16 / torch bf16 (time; below 1 means ember is faster) and ember's bf16
speed-up over its own f32. "fwd+bwd" rows time the forward pass, a backward pass and the
gradients of input and parameters. Runs with any interpreter that imports ember; without torch
the torch columns read "-". Each library is timed in a process of its own.

    PYTHONPATH=python:build/python .venv/bin/python bench/bench_bf16_cpu.py
    PYTHONPATH=$PWD/python:$PWD/build/python /work/torch2/bin/python bench/bench_bf16_cpu.py
"""
import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import time

import ember


def median_ms(fn, min_time=0.3, max_reps=200, warmup=3):
    for _ in range(warmup):
        fn()
    times = []
    start = time.perf_counter()
    while len(times) < max_reps and (len(times) < 5 or time.perf_counter() - start < min_time):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


class Lib:
    """ember or torch behind one interface: tensors in a dtype, an autocast context, ops."""

    def __init__(self, mod):
        self.mod = mod
        self.F = mod.nn.functional

    def randn(self, *shape, dtype, requires_grad=False):
        t = self.mod.randn(*shape).to(dtype)
        return t.requires_grad_(requires_grad) if requires_grad else t

    def autocast(self):
        if self.mod is ember:
            return ember.autocast("cpu", dtype=ember.bfloat16)
        return self.mod.autocast("cpu", dtype=self.mod.bfloat16)

    def has_autocast(self):
        return self.mod is not ember or hasattr(ember, "autocast")


def workloads(lib, dtype):
    """name -> a zero-argument function running the workload once, with tensors of dtype."""
    T, F = lib.mod, lib.F
    work = {}
    for n in (128, 512, 1024, 2048):
        a, b = lib.randn(n, n, dtype=dtype), lib.randn(n, n, dtype=dtype)
        work[f"matmul {n}^3"] = lambda a=a, b=b: T.matmul(a, b)

    for fin, fout in ((784, 512), (512, 512)):
        x = lib.randn(64, fin, dtype=dtype, requires_grad=True)
        w = lib.randn(fout, fin, dtype=dtype, requires_grad=True)
        bias = lib.randn(fout, dtype=dtype, requires_grad=True)
        work[f"linear 64x{fin}->{fout} fwd"] = lambda x=x, w=w, bias=bias: F.linear(x.detach(), w.detach(),
                                                                                     bias.detach())

        def fwd_bwd(x=x, w=w, bias=bias):
            x.grad = w.grad = bias.grad = None
            F.linear(x, w, bias).float().sum().backward()
        work[f"linear 64x{fin}->{fout} fwd+bwd"] = fwd_bwd

    b1, b2 = lib.randn(32, 128, 64, dtype=dtype), lib.randn(32, 64, 128, dtype=dtype)
    work["bmm 32x128x64x128"] = lambda: T.bmm(b1, b2)

    for cin, cout, hw in ((1, 32, 28), (32, 64, 14)):
        x = lib.randn(64, cin, hw, hw, dtype=dtype, requires_grad=True)
        w = lib.randn(cout, cin, 3, 3, dtype=dtype, requires_grad=True)
        bias = lib.randn(cout, dtype=dtype, requires_grad=True)
        name = f"conv2d N=64 {cin}->{cout} 3x3 {hw}x{hw}"
        work[f"{name} fwd"] = lambda x=x, w=w, bias=bias: F.conv2d(x.detach(), w.detach(), bias.detach(), padding=1)

        def conv_fwd_bwd(x=x, w=w, bias=bias):
            x.grad = w.grad = bias.grad = None
            F.conv2d(x, w, bias, padding=1).float().sum().backward()
        work[f"{name} fwd+bwd"] = conv_fwd_bwd
    return work


def run(lib, dtype, autocast=False):
    work = workloads(lib, dtype)
    results = {}
    for name, fn in work.items():
        def call(fn=fn):
            with lib.autocast() if autocast else contextlib.nullcontext():
                fn()
        results[name] = median_ms(call)
    return results


def fmt(v):
    return "-" if v is None else f"{v:9.3f}"


def measure(lib_name, threads):
    """This library's version and columns: {column: {workload: ms}}."""
    if lib_name == "ember":
        ember.set_num_threads(threads)
        ember.manual_seed(0)
        E = Lib(ember)
        cols = {"ember f32": run(E, ember.float32), "ember bf16": run(E, ember.bfloat16)}
        cols["ember autocast"] = run(E, ember.float32, autocast=True) if E.has_autocast() else {}
        return getattr(ember, "__version__", "?"), cols
    try:
        import torch as T  # here only: importing torch sets OpenMP's thread count, ember's too
    except ImportError:
        return "not installed", {"torch f32": {}, "torch autocast": {}, "torch bf16": {}}
    T.set_num_threads(threads)
    T.manual_seed(0)
    P = Lib(T)
    return T.__version__, {"torch f32": run(P, T.float32), "torch autocast": run(P, T.float32, autocast=True),
                           "torch bf16": run(P, T.bfloat16)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--lib", choices=("ember", "torch"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.lib:
        print(json.dumps(measure(args.lib, args.threads)))
        return
    # Each library runs in a process of its own: with ember loaded beside it (a second OpenMP
    # runtime and ember's pool threads), PyTorch 2.15's float32 linear layer ran 3.6x slower.
    cols, versions = {}, {}
    for lib_name in ("ember", "torch"):
        out = subprocess.run([sys.executable, __file__, "--lib", lib_name, "--threads", str(args.threads)],
                             check=True, capture_output=True, text=True).stdout
        versions[lib_name], lib_cols = json.loads(out.strip().splitlines()[-1])
        cols.update(lib_cols)

    print(f"ember {versions['ember']}, torch {versions['torch']}, {args.threads} threads; median ms per call")
    header = (f"{'workload':40s}" + "".join(f"{c:>15s}" for c in cols)
              + f"{'ember/torch bf16':>18s}{'bf16 speed-up':>15s}")
    print(header)
    print("-" * len(header))
    for name in cols["ember f32"]:
        vals = [cols[c].get(name) for c in cols]
        eb, tb, ef = cols["ember bf16"][name], cols["torch bf16"].get(name), cols["ember f32"][name]
        ratio = f"{eb / tb:18.2f}" if tb else f"{'-':>18s}"
        print(f"{name:40s}" + "".join(f"{fmt(v):>15s}" for v in vals) + ratio + f"{ef / eb:15.2f}")


if __name__ == "__main__":
    main()
