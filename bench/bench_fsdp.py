"""FSDP on loopback, ember beside PyTorch (both Gloo, CPU, one thread per process, the same GPT-2
style model, one run): per-rank peak memory and step time of DDP, FSDP SHARD_GRAD_OP and FSDP
FULL_SHARD (a unit per block) as the world grows from 1 to 4 processes.

    PYTHONPATH=python:build/python python bench/bench_fsdp.py [--quick]
    TORCH_PYTHON=/work/torch2/bin/python ...      # the PyTorch to compare with (needs transformers)

Each cell takes two runs. The step time comes from a plain run. Memory comes from a second run,
as the process's peak resident set (ru_maxrss) minus its resident set before the model was
built: parameters, gradients, AdamW state and the transient buffers of a step. So that the
resident set follows live memory, that run fixes glibc's mmap threshold at 128 KiB (freed blocks
go back to the system at once instead of staying in malloc's heap) and turns ember's CPU block
cache off (EMBER_CPU_CACHE_MB=0). This costs page faults, which is why the time comes from the
other run."""
import json
import os
import resource
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_distributed import launch  # noqa: E402

CFG = dict(vocab_size=8192, n_positions=256, n_embd=1024, n_layer=8, n_head=16, resid_pdrop=0.0, embd_pdrop=0.0,
           attn_pdrop=0.0)
BATCH, SEQ = 2, 64


def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024


def worker(framework, mode, quick):
    if framework == "ember":
        import ember as T
        import ember.distributed as dist
        from ember.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy
        from ember.models.gpt2 import GPT2Block, GPT2Config, GPT2LMHeadModel
        from ember.nn.parallel import DistributedDataParallel as DDP
    else:
        import torch as T
        import torch.distributed as dist
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy
        from torch.nn.parallel import DistributedDataParallel as DDP
        from transformers import GPT2Config, GPT2LMHeadModel
        from transformers.models.gpt2.modeling_gpt2 import GPT2Block
    from functools import partial
    T.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    base = rss_mb()
    T.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(**CFG))
    if mode == "ddp":
        model = DDP(model)
    elif mode.startswith("fsdp"):
        if framework == "ember":
            from ember.distributed.fsdp.wrap import transformer_auto_wrap_policy
        else:
            from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
        policy = partial(transformer_auto_wrap_policy, transformer_layer_cls={GPT2Block})
        strategy = ShardingStrategy.FULL_SHARD if mode == "fsdp_full" else ShardingStrategy.SHARD_GRAD_OP
        kw = {"device_id": T.device("cpu")} if framework == "torch" else {}
        model = FSDP(model, auto_wrap_policy=policy, sharding_strategy=strategy, **kw)
    opt = T.optim.AdamW(model.parameters(), lr=1e-4)
    g = T.Generator().manual_seed(rank)
    ids = T.randint(0, CFG["vocab_size"], (BATCH, SEQ), generator=g)
    steps = 2 if quick else 3
    for i in range(steps + 2):
        if i == 2:
            dist.barrier()
            start = time.perf_counter()
        opt.zero_grad()
        out = model(ids, labels=ids)
        out.loss.backward()
        opt.step()
    ms = (time.perf_counter() - start) / steps * 1e3
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - base
    res = [None] * world
    dist.all_gather_object(res, {"ms": ms, "mb": peak})
    if rank == 0:
        print("RESULT " + json.dumps({"ms": max(r["ms"] for r in res), "mb": max(r["mb"] for r in res)}), flush=True)
    dist.destroy_process_group()


def run(framework, mode, nproc, quick, python, for_memory):
    env = {"EMBER_CPU_CACHE_MB": "0", "GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=131072"} if for_memory else None
    return launch(__file__, [framework, mode] + (["--quick"] if quick else []), nproc, python, env, timeout=1200)


def main():
    if "--worker" in sys.argv:
        i = sys.argv.index("--worker")
        worker(sys.argv[i + 1], sys.argv[i + 2], "--quick" in sys.argv)
        return 0
    quick = "--quick" in sys.argv
    torch_python = os.environ.get("TORCH_PYTHON", "/work/torch2/bin/python")
    have_torch = os.path.exists(torch_python) and subprocess.run(
        [torch_python, "-c", "import torch.distributed.fsdp, transformers"], capture_output=True).returncode == 0
    frameworks = [("ember", sys.executable)] + ([("torch", torch_python)] if have_torch else [])
    if have_torch:
        ver = subprocess.run([torch_python, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                             text=True)
        print(f"torch {ver.stdout.strip()} ({torch_python})")
    else:
        print(f"(no PyTorch with FSDP and transformers at {torch_python}: ember only)")
    nparams = 12 * CFG["n_embd"] ** 2 * CFG["n_layer"] + (CFG["vocab_size"] + CFG["n_positions"]) * CFG["n_embd"]
    print(f"GPT-2 {CFG['n_layer']} x {CFG['n_embd']}, vocab {CFG['vocab_size']} (~{nparams / 1e6:.0f}M parameters), "
          f"batch {BATCH} x {SEQ} per process, AdamW; per-rank peak memory (MB) / step (ms)")
    worlds = [1, 2] if quick else [1, 2, 4]
    print(f"{'':24s}" + "".join(f"{f'world {w}':>20s}" for w in worlds))
    for fw, py in frameworks:
        for mode in ("ddp", "fsdp_grad_op", "fsdp_full"):
            cells = []
            for w in worlds:
                t = run(fw, mode, w, quick, py, for_memory=False)
                m = run(fw, mode, w, quick, py, for_memory=True)
                ok = isinstance(t, dict) and isinstance(m, dict)
                cells.append(f"{m['mb']:8.0f} / {t['ms']:7.0f}" if ok else f"{str(t if not isinstance(t, dict) else m)[:18]:>18s}")
            print(f"{fw + ' ' + mode:24s}" + "".join(f"{c:>20s}" for c in cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
