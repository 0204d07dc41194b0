"""CPU mixed precision, ember vs PyTorch in one process: train steps in float32 and under
autocast("cpu", dtype=bfloat16) (forward and loss in the region, backward and optimizer step
outside, as torch's recipe). The same program text runs with T = ember and T = torch; runs are
interleaved and each side's median time per step is reported, with the autocast speed-up over
float32 and the ratio ember/torch (below 1: ember is faster).

    PYTHONPATH=python:build/python .venv/bin/python bench/bench_amp.py        # torch 1.13 (Debian)
    PYTHONPATH=python:build/python /work/torch2/bin/python bench/bench_amp.py # torch 2.x (PyPI)

Workloads: the seeds' MLP (batch 128, AdamW), a wide MLP (batch 256, 1024-4096-4096-10, where the
matmuls dominate), the seeds' SimpleCNN (batch 64, Adam) and the small GPT of compare_python.py
(d_model 128, 4 layers, T=128, batch 8, AdamW). Exits 0 without torch (ember's columns only)."""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ember  # noqa: E402
from compare_python import make_gpt  # noqa: E402

try:
    import torch
except ImportError:
    torch = None


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
    model = nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2, 2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2, 2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.5), nn.Linear(128, 10))
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


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    repeats = 3 if args.quick else 5
    ember.set_num_threads(args.threads)
    libs = [("ember", ember)]
    if torch is not None:
        torch.set_num_threads(args.threads)
        libs.append(("torch", torch))
    tv = torch.__version__ if torch is not None else "not installed"
    print(f"CPU autocast (bfloat16), {args.threads} threads; torch {tv}. ms per train step (median of {repeats}).")
    hdr = f"{'workload':40s} {'ember fp32':>10s} {'ember amp':>10s} {'speed-up':>8s}"
    if torch is not None:
        hdr += f" {'torch fp32':>10s} {'torch amp':>10s} {'speed-up':>8s} {'amp e/t':>8s}"
    print(hdr)
    for name, make, n in WORKLOADS:
        res = {}
        for label, T in libs:
            T.manual_seed(0)
            steps = {amp: make(T, amp) for amp in (False, True)}
            res[label] = {amp: median_ms(steps[amp], n, repeats) for amp in (False, True)}
        e = res["ember"]
        row = f"{name:40s} {e[False]:10.2f} {e[True]:10.2f} {e[False] / e[True]:7.2f}x"
        if torch is not None:
            t = res["torch"]
            row += f" {t[False]:10.2f} {t[True]:10.2f} {t[False] / t[True]:7.2f}x {e[True] / t[True]:8.2f}"
        print(row, flush=True)


if __name__ == "__main__":
    main()
