"""A small model under CPU contention: ember vs PyTorch, idle and with busy processes beside it.

A GPT `generate` loop (d_model 128, 4 layers, batch 1, 24 new tokens from an 8-token prompt, no
KV cache, as nanoGPT's sample script) is made of hundreds of small ops per token. With 2 threads
on 2 cores and another process busy, a parallel region whose second thread is not scheduled
waits a whole scheduler timeslice at its barrier, and a spinning waiter burns the core the late
thread needs. Reported per library and load: wall ms per generate call and CPU time / wall time
(about 1 means one core's worth of work; much more with no more speed means threads spinning).

    PYTHONPATH=python:build/python .venv/bin/python bench/bench_contention.py [--busy 0 1 2] [--threads 2]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from compare_python import make_gpt  # noqa: E402

import ember  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

BUSY_LOOP = "import time\nend = time.time() + 600\nwhile time.time() < end: pass\n"


def generate_fn(T, new_tokens=24):
    T.manual_seed(0)
    model = make_gpt(T)
    model.eval()
    prompt = T.randint(0, 256, (1, 8))

    def generate():
        idx = prompt
        with T.no_grad():
            for _ in range(new_tokens):
                logits = model(idx)[:, -1, :]
                nxt = T.argmax(logits, dim=-1, keepdim=True)  # greedy: same work every call
                idx = T.cat([idx, nxt], dim=1)
        return idx
    return generate


def measure(fn, calls):
    fn()  # warm up (allocator, primitive caches)
    walls, ratios = [], []
    for _ in range(calls):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        w, c = time.perf_counter() - w0, time.process_time() - c0
        walls.append(w)
        ratios.append(c / w)
    return statistics.median(walls) * 1e3, statistics.median(ratios)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--busy", type=int, nargs="+", default=[0, 1, 2], help="numbers of busy processes to run beside")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--calls", type=int, default=7)
    args = p.parse_args()
    libs = [("ember", ember)] + ([("torch", torch)] if torch is not None else [])
    fns = {}
    for name, T in libs:
        T.set_num_threads(args.threads)
        fns[name] = generate_fn(T)
    print(f"GPT generate (d128, 4 layers, 24 tokens), {args.threads} threads; ms per call (cpu/wall)")
    for busy in args.busy:
        procs = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(busy)]
        try:
            time.sleep(0.2)
            row = {name: measure(fns[name], args.calls) for name, _ in libs}
        finally:
            for pr in procs:
                pr.kill()
                pr.wait()
        cells = "  ".join(f"{n} {ms:8.1f} ms ({r:.2f})" for n, (ms, r) in row.items())
        ratio = f"  ember/torch {row['ember'][0] / row['torch'][0]:.2f}" if "torch" in row else ""
        print(f"busy processes {busy}: {cells}{ratio}", flush=True)


if __name__ == "__main__":
    main()
