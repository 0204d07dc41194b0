"""GPT-2 on this CPU, ember beside PyTorch (transformers' GPT2LMHeadModel on torch, in the
interpreter of .venv-hf: Debian's torch 1.13 with transformers 4.44; EMBER_HF_PYTHON picks
another, e.g. one with PyTorch 2.x): a train step (forward, loss, backward, AdamW) and greedy
generation with a KV cache, same config, same threads (2), float32.

    PYTHONPATH=python:build/python .venv/bin/python bench/bench_gpt2_cpu.py [--quick]
    ... bench_gpt2_cpu.py --memory    # peak memory of a train step with and without per-block checkpointing
"""
import json
import os
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
CONFIG = dict(n_layer=6, n_embd=384, n_head=6, vocab_size=8192, n_positions=512, resid_pdrop=0.0, embd_pdrop=0.0,
              attn_pdrop=0.0)
BATCH, T, NEW = 8, 256, 64

WORKER = r"""
import json, sys, time
which, cfg, batch, t, new, reps = sys.argv[1], json.loads(sys.argv[2]), *map(int, sys.argv[3:7])
if which == "ember":
    import ember as T
    from ember.models import GPT2Config, GPT2LMHeadModel
else:
    import torch as T
    from transformers import GPT2Config, GPT2LMHeadModel
T.set_num_threads(2)
T.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(**cfg))
opt = T.optim.AdamW(model.parameters(), lr=1e-4)
x = T.randint(0, cfg["vocab_size"], (batch, t))
def step():
    opt.zero_grad()
    model(x, labels=x).loss.backward()
    opt.step()
for _ in range(2):
    step()
start = time.perf_counter()
for _ in range(reps):
    step()
train_ms = (time.perf_counter() - start) / reps * 1e3
model.eval()
prompt = x[:1, :32]
kw = dict(max_new_tokens=new, do_sample=False)
if which != "ember":
    kw["pad_token_id"] = 0
with T.no_grad():
    model.generate(prompt, max_new_tokens=4, **({} if which == "ember" else {"pad_token_id": 0}))
    start = time.perf_counter()
    out = model.generate(prompt, **kw)
    gen_s = time.perf_counter() - start
print(json.dumps({"train_ms": train_ms, "tokens_per_s": new / gen_s, "tokens": out[0, -8:].tolist()}))
"""


MEMORY = r"""
import sys, time, ember
from ember.models import GPT2Config, GPT2LMHeadModel
ember.set_num_threads(2)
ember.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=8, n_embd=256, n_head=8, vocab_size=4096, n_positions=512, resid_pdrop=0.0,
                                   embd_pdrop=0.0, attn_pdrop=0.0, use_checkpoint=sys.argv[1] == "1")).train()
x = ember.randint(0, 4096, (8, 512))
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) / 1024
before = status("VmRSS")
start = time.perf_counter()
model(x, labels=x).loss.backward()
print(before, status("VmHWM"), time.perf_counter() - start)
"""


def memory():
    """Peak resident memory (a fresh process each) of one forward+backward of an 8-layer GPT-2
    at batch 8 x 512, plain and with each block checkpointed."""
    print("GPT-2 8 x 256, batch 8 x 512: forward + backward, peak resident memory (fresh process each)")
    rows = {}
    for flag, label in (("0", "plain"), ("1", "checkpointed blocks")):
        out = subprocess.run([sys.executable, "-c", MEMORY, flag], capture_output=True, text=True, timeout=600)
        before, peak, sec = map(float, out.stdout.split())
        rows[label] = (before, peak, sec)
        print(f"  {label:20s} peak {peak:6.0f} MiB (model and data {before:.0f} MiB: the step adds {peak - before:.0f}), "
              f"{sec:.2f} s")
    (b0, p0, s0), (b1, p1, s1) = rows.values()
    print(f"  checkpointing: {1 - (p1 - b1) / (p0 - b0):.0%} less memory for the step, {s1 / s0 - 1:+.0%} time")


def hf_python():
    for c in (os.environ.get("EMBER_HF_PYTHON"), os.path.join(ROOT, ".venv-hf", "bin", "python")):
        if c and os.path.exists(c):
            return c
    return None


def run(python, which, quick):
    reps = 2 if quick else 5
    env = dict(os.environ, OMP_NUM_THREADS="2")
    proc = subprocess.run([python, "-c", WORKER, which, json.dumps(CONFIG), str(BATCH), str(T), str(NEW), str(reps)],
                          capture_output=True, text=True, env=env, timeout=1800)
    if proc.returncode != 0:
        return f"failed: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else proc.returncode}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    if "--memory" in sys.argv:
        memory()
        return 0
    quick = "--quick" in sys.argv
    print(f"GPT-2 {CONFIG['n_layer']} layers x {CONFIG['n_embd']}, vocab {CONFIG['vocab_size']}; train step batch "
          f"{BATCH} x {T} (AdamW); greedy generation of {NEW} tokens after a 32-token prompt; 2 threads, float32")
    ours = run(sys.executable, "ember", quick)
    hf = hf_python()
    theirs = run(hf, "torch", quick) if hf else "no .venv-hf (scripts/setup.sh --bench)"
    if hf:
        ver = subprocess.run([hf, "-c", "import torch, transformers; print(torch.__version__, transformers.__version__)"],
                             capture_output=True, text=True).stdout.strip()
        print(f"torch side: torch {ver.split()[0]}, transformers {ver.split()[1]}")
    print(f"{'':28s} {'ember':>10s} {'torch':>10s} {'ember/torch time':>17s}")
    for key, label, time_like in (("train_ms", "train step (ms)", True), ("tokens_per_s", "generation (tokens/s)", False)):
        a = ours[key] if isinstance(ours, dict) else float("nan")
        b = theirs[key] if isinstance(theirs, dict) else float("nan")
        ratio = a / b if time_like else b / a
        print(f"{label:28s} {a:10.1f} {b:10.1f} {ratio:17.2f}")
    if isinstance(ours, str) or isinstance(theirs, str):
        print("ember:", ours if isinstance(ours, str) else "ok", "| torch:", theirs if isinstance(theirs, str) else "ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
