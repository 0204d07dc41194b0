#!/usr/bin/env python3
"""Runs bench_ops (ember, C++) and the same workloads in PyTorch, and prints them side by side.

    python3 bench/compare_torch.py [path/to/bench_ops] [--threads N] [--repeats R] [--warmup W]

The bench binary defaults to build/bench/bench_ops (relative to the repository root or the
current directory). PyTorch runs with torch.set_num_threads(N) (default 2), and ember with the
same count. Timings are medians of R runs after W warm-up runs.

The loops of small ops (add on 100 floats, the 16x16 matmul+relu+sum step) are measured from
Python for PyTorch: that is what a PyTorch user pays per op, interpreter included. The ember
numbers for them are measured from C++. Their rows are marked "(torch from Python)".
"""
import argparse
import os
import statistics
import subprocess
import sys
import time


def median_ms(fn, repeats, warmup):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def torch_workloads(repeats, warmup, threads):
    import torch

    torch.set_num_threads(threads)
    g = torch.Generator().manual_seed(0)
    rows = {}

    a, b = torch.randn(100, generator=g), torch.randn(100, generator=g)
    n_ops = 1000

    def small_adds():
        c = None
        for _ in range(n_ops):
            c = torch.add(a, b)
        return c

    rows["add_100f_x1000"] = median_ms(small_adds, repeats, warmup) * 1e3 / n_ops

    a16, b16 = torch.randn(16 * 1024 * 1024, generator=g), torch.randn(16 * 1024 * 1024, generator=g)
    rows["add_16M_f32"] = median_ms(lambda: torch.add(a16, b16), repeats, warmup)
    del a16, b16

    m1, m2 = torch.randn(1024, 1024, generator=g), torch.randn(1024, 1024, generator=g)
    rows["matmul_1024_f32"] = median_ms(lambda: torch.matmul(m1, m2), repeats, warmup)

    x = torch.randn(4096, 1024, generator=g)
    rows["softmax_4096x1024_dim1"] = median_ms(lambda: torch.softmax(x, 1), repeats, warmup)

    xs, ws = torch.randn(16, 16, generator=g), torch.randn(16, 16, generator=g)
    n_iters = 1000

    def mlp():
        s = None
        for _ in range(n_iters):
            s = torch.matmul(xs, ws).relu().sum()
        return s

    rows["matmul_relu_sum_16x16_x1000"] = median_ms(mlp, repeats, warmup) * 1e3 / n_iters

    wg = ws.clone().requires_grad_()

    def mlp_backward():
        for _ in range(n_iters):
            torch.matmul(xs, wg).relu().sum().backward()
            wg.grad = None

    rows["matmul_relu_sum_backward_16x16_x1000"] = median_ms(mlp_backward, repeats, warmup) * 1e3 / n_iters
    return rows, torch.__version__


def find_bench(path):
    if path:
        return path
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in (os.path.join(here, "..", "build", "bench", "bench_ops"), os.path.join("build", "bench", "bench_ops")):
        if os.path.exists(cand):
            return os.path.normpath(cand)
    sys.exit("bench_ops not found: build it (ninja -C build bench_ops) or pass its path")


def run_ember(path, threads, repeats, warmup):
    out = subprocess.run([path, "--threads", str(threads), "--repeats", str(repeats), "--warmup", str(warmup)],
                         check=True, capture_output=True, text=True).stdout
    rows, units, header = {}, {}, []
    for line in out.splitlines():
        if line.startswith("#"):
            header.append(line)
            continue
        parts = line.split()
        if len(parts) < 3 or parts[0] == "workload":
            continue
        rows[parts[0]] = float(parts[1])
        units[parts[0]] = parts[2]
    return rows, units, header


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bench", nargs="?", help="path to the bench_ops binary")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=2)
    args = ap.parse_args()

    bench = find_bench(args.bench)
    ember_rows, units, header = run_ember(bench, args.threads, args.repeats, args.warmup)
    torch_rows, torch_version = torch_workloads(args.repeats, args.warmup, args.threads)

    python_measured = {"add_100f_x1000", "matmul_relu_sum_16x16_x1000", "matmul_relu_sum_backward_16x16_x1000"}
    print(f"# ember ({bench}) vs torch {torch_version}; threads={args.threads}, "
          f"median of {args.repeats} after {args.warmup} warm-up")
    print("# rows marked (torch from Python): PyTorch timed from a Python loop, ember from C++")
    print(f"{'workload':<30} {'unit':>8} {'ember':>10} {'torch':>10} {'ember/torch':>12}")
    for name, e in ember_rows.items():
        t = torch_rows.get(name)
        ratio = f"{e / t:12.2f}" if t else f"{'-':>12}"
        t_str = f"{t:10.4f}" if t is not None else f"{'-':>10}"
        note = "  (torch from Python)" if name in python_measured else ""
        print(f"{name:<30} {units[name]:>8} {e:10.4f} {t_str} {ratio}{note}")


if __name__ == "__main__":
    main()
