"""CPU mixed precision, ember vs PyTorch in one process: train steps in float32 and under
autocast("cpu", dtype=bfloat16) (forward and loss in the region, backward and optimizer step
outside, as torch's recipe). The same program text runs with T = ember and T = torch; runs are
interleaved and each side's median time per step is reported, with the autocast speed-up over
float32 and the ratio ember/torch (below 1: ember is faster). Each library runs in its own
process (torch and ember loaded together slow each other's OpenMP threads).

    PYTHONPATH=python:build/python .venv/bin/python bench/bench_amp.py        # torch 1.13 (Debian)
    PYTHONPATH=python:build/python /work/torch2/bin/python bench/bench_amp.py # torch 2.x (PyPI)

Workloads: the seeds' MLP (batch 128, AdamW), a wide MLP (batch 256, 1024-4096-4096-10, where the
matmuls dominate), the seeds' SimpleCNN (batch 64, Adam) and the small GPT of compare_python.py
(d_model 128, 4 layers, T=128, batch 8, AdamW). Exits 0 without torch (ember's columns only)."""
import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_python import make_cnn, make_gpt  # noqa: E402  (imports ember: only the model code is used)


def train_step(T, model, opt, x, y, loss_fn, amp):
    def step():
        opt.zero_grad()
        with T.autocast("cpu", dtype=T.bfloat16, enabled=amp):
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    return step


def mlp(T, amp):
    nn = T.nn
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Dropout(0.1), nn.Linear(256, 10))
    opt = T.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    return train_step(T, model, opt, T.randn(128, 1, 28, 28), T.randint(0, 10, (128,)), nn.CrossEntropyLoss(), amp)


def wide_mlp(T, amp):
    nn = T.nn
    model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 4096), nn.GELU(), nn.Linear(4096, 10))
    opt = T.optim.AdamW(model.parameters(), lr=1e-3)
    return train_step(T, model, opt, T.randn(256, 1024), T.randint(0, 10, (256,)), nn.CrossEntropyLoss(), amp)


def cnn(T, amp):
    nn = T.nn
    model = make_cnn(T)
    opt = T.optim.Adam(model.parameters(), lr=1e-3)
    return train_step(T, model, opt, T.randn(64, 1, 28, 28), T.randint(0, 10, (64,)), nn.CrossEntropyLoss(), amp)


def gpt(T, amp):
    model = make_gpt(T)
    opt = T.optim.AdamW(model.parameters(), lr=3e-4)
    idx, tgt = T.randint(0, 256, (8, 128)), T.randint(0, 256, (8, 128))
    return _gpt_step(T, model, opt, idx, tgt, amp)


def _gpt_step(T, model, opt, idx, tgt, amp):
    def step():
        opt.zero_grad()
        with T.autocast("cpu", dtype=T.bfloat16, enabled=amp):
            loss = model(idx, tgt)
        loss.backward()
        opt.step()
    return step


WORKLOADS = [("MLP 784-256-10, batch 128", mlp, 30), ("wide MLP 1024-4096-4096-10, batch 256", wide_mlp, 3),
             ("SimpleCNN, batch 64", cnn, 3), ("GPT d128 x4, T=128, batch 8", gpt, 2)]


def median_ms(step, n, repeats):
    for _ in range(2):
        step()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        times.append((time.perf_counter() - t0) / n * 1e3)
    return statistics.median(times)


def run_library(name, threads, repeats):
    """One library's rows, in this process: {workload: [fp32 ms, amp ms]}."""
    T = importlib.import_module(name)
    T.set_num_threads(threads)
    rows = {}
    for label, make, n in WORKLOADS:
        T.manual_seed(0)
        steps = {amp: make(T, amp) for amp in (False, True)}
        rows[label] = [median_ms(steps[amp], n, repeats) for amp in (False, True)]
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--lib", help=argparse.SUPPRESS)  # internal: run one library, print JSON
    args = p.parse_args()
    repeats = 3 if args.quick else 5
    if args.lib:
        print(json.dumps(run_library(args.lib, args.threads, repeats)))
        return
    results, versions = {}, {}
    for name in ("ember", "torch"):
        probe = subprocess.run([sys.executable, "-c", f"import {name}; print({name}.__version__)"],
                               capture_output=True, text=True)
        if probe.returncode != 0:
            continue
        versions[name] = probe.stdout.strip().splitlines()[-1]
        cmd = [sys.executable, os.path.abspath(__file__), "--lib", name, "--threads", str(args.threads)]
        if args.quick:
            cmd.append("--quick")
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        results[name] = json.loads(out.strip().splitlines()[-1])
    have_torch = "torch" in results
    print(f"CPU autocast (bfloat16), {args.threads} threads; torch {versions.get('torch', 'not installed')}. "
          f"ms per train step (median of {repeats}), each library in its own process.")
    hdr = f"{'workload':40s} {'ember fp32':>10s} {'ember amp':>10s} {'speed-up':>8s}"
    if have_torch:
        hdr += f" {'torch fp32':>10s} {'torch amp':>10s} {'speed-up':>8s} {'amp e/t':>8s}"
    print(hdr)
    for label, _, _ in WORKLOADS:
        e = results["ember"][label]
        row = f"{label:40s} {e[0]:10.2f} {e[1]:10.2f} {e[0] / e[1]:7.2f}x"
        if have_torch:
            t = results["torch"][label]
            row += f" {t[0]:10.2f} {t[1]:10.2f} {t[0] / t[1]:7.2f}x {e[1] / t[1]:8.2f}"
        print(row, flush=True)


if __name__ == "__main__":
    main()
