"""Distributed training on loopback, ember beside PyTorch (both Gloo, the same sizes, the same
machine, one run): all_reduce bandwidth over 2 processes, and the DDP step overhead (the seeds'
CNN, 64 images per process, SGD) against one process training the same per-process batch alone.
Each process uses one thread (OMP_NUM_THREADS=1), so 2 processes fill this 2-core machine.

    PYTHONPATH=python:build/python python bench/bench_distributed.py [--quick]

busbw = algbw * 2 (n - 1) / n, as nccl-tests report it (for n = 2: algbw)."""
import json
import os
import socket
import subprocess
import sys
import time

SIZES = [1 << 10, 1 << 16, 1 << 20, 1 << 22, 1 << 24]  # float32 elements


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(framework, task, quick):
    if framework == "ember":
        import ember as T
        import ember.distributed as dist
        from ember.nn.parallel import DistributedDataParallel as DDP
    else:
        import torch as T
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
    T.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    out = {}
    if task == "allreduce":
        for n in SIZES[:3] if quick else SIZES:
            t = T.ones(n)
            for _ in range(3):
                dist.all_reduce(t)
            # loopback latency on a shared 2-core machine varies by milliseconds from moment to
            # moment: the median of 5 timed blocks
            reps = max(2, min(40, (1 << 24) // n))
            blocks = []
            for _ in range(5):
                dist.barrier()
                start = time.perf_counter()
                for _ in range(reps):
                    dist.all_reduce(t)
                blocks.append((time.perf_counter() - start) / reps)
            out[n] = sorted(blocks)[2]
    else:
        sys.path.insert(0, os.path.dirname(__file__))
        from train_fashion_mnist_torch import SimpleCNN  # the seeds' CNN (plain torch API)
        T.manual_seed(0)
        model = SimpleCNN() if framework == "torch" else _ember_cnn(T)
        if task == "ddp":
            model = DDP(model)
        opt = T.optim.SGD(model.parameters(), lr=0.01)
        x, y = T.randn(64, 1, 28, 28), T.randint(0, 10, (64,))
        steps = 5 if quick else 20
        for i in range(steps + 3):
            if i == 3:
                start = time.perf_counter()
            opt.zero_grad()
            T.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        out["ms"] = (time.perf_counter() - start) / steps * 1e3
    if rank == 0:
        print("RESULT " + json.dumps(out), flush=True)
    dist.destroy_process_group()


def _ember_cnn(T):
    nn = T.nn
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2, 2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2, 2),
                         nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.5), nn.Linear(128, 10))


def launch(script, worker_args, nproc, python, env_extra=None, timeout=600):
    """Starts nproc workers of `script --worker <worker_args>` on loopback (torchrun's variables,
    one thread each); returns rank 0's RESULT json, or "failed: <last stderr line>"."""
    port = free_port()
    procs = []
    for r in range(nproc):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(nproc), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   OMP_NUM_THREADS="1", LOCAL_RANK=str(r), **(env_extra or {}))
        procs.append(subprocess.Popen([python, script, "--worker", *worker_args], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    result = None
    for p in procs:
        stdout, stderr = p.communicate(timeout=timeout)
        if p.returncode != 0:
            tail = stderr.strip().splitlines()
            return f"failed: {tail[-1] if tail else p.returncode}"
        for line in stdout.splitlines():
            if line.startswith("RESULT "):
                result = json.loads(line[7:])
    return result


def run(framework, task, nproc, quick, python):
    return launch(__file__, [framework, task] + (["--quick"] if quick else []), nproc, python)


def main():
    if "--worker" in sys.argv:
        i = sys.argv.index("--worker")
        worker(sys.argv[i + 1], sys.argv[i + 2], "--quick" in sys.argv)
        return 0
    quick = "--quick" in sys.argv
    torch_python = os.environ.get("TORCH_PYTHON", "/usr/bin/python3")
    have_torch = subprocess.run([torch_python, "-c", "import torch.distributed as d; assert d.is_available()"],
                                capture_output=True).returncode == 0
    frameworks = [("ember", sys.executable)] + ([("torch", torch_python)] if have_torch else [])
    if not have_torch:
        print(f"(no PyTorch with distributed support at {torch_python}: ember only; TORCH_PYTHON= picks another)")
    for fw, py in frameworks:
        if fw == "torch":
            ver = subprocess.run([py, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True)
            print(f"torch {ver.stdout.strip()}")
    res = {fw: run(fw, "allreduce", 2, quick, py) for fw, py in frameworks}
    print("all_reduce float32, 2 processes on loopback (Gloo): busbw GB/s")
    print(f"{'elements':>10s} {'bytes':>10s} " + " ".join(f"{fw:>10s}" for fw, _ in frameworks) +
          ("   ember/torch time" if have_torch else ""))
    for n in SIZES[:3] if quick else SIZES:
        row = []
        for fw, _ in frameworks:
            r = res[fw]
            row.append(r[str(n)] if isinstance(r, dict) else float("nan"))
        bw = [4 * n / s / 1e9 for s in row]
        line = f"{n:10d} {4 * n:10d} " + " ".join(f"{b:10.2f}" for b in bw)
        if have_torch:
            line += f"   {row[0] / row[1]:8.2f}"
        print(line)
    print("CNN step, 64 images per process, SGD (ms): one process alone -> DDP over 2 processes")
    for fw, py in frameworks:
        single = run(fw, "single", 1, quick, py)
        ddp = run(fw, "ddp", 2, quick, py)
        if isinstance(single, dict) and isinstance(ddp, dict):
            print(f"  {fw:6s} {single['ms']:7.2f} -> {ddp['ms']:7.2f}  (overhead {ddp['ms'] / single['ms'] - 1:+.0%})")
        else:
            print(f"  {fw:6s} {single} / {ddp}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
