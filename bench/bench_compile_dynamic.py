"""Compiled functions whose sizes change from call to call (dynamic shapes), ember.compile against
torch.compile on this CPU (2 threads, float32), in one run:

- a GPT block's forward (batch 4, width 256) at 32 sequence lengths, each new (33..64): the whole
  sweep, captures and compilation included, then the same lengths again (every size seen);
- a decoder step with a KV cache (batch 4, width 256, one token; the cache grows from 64 to 127
  keys): 64 steps, each at a new cache length.

ember.compile(dynamic=True) captures the first sizes and then runs a graph fitted over them,
specialised per size (python/ember/_compile_dynamic.py); dynamic=False captures every size;
torch.compile(dynamic=True) traces with symbolic sizes. Kernel caches start empty for both.

    PYTHONPATH=python:build/python /work/torch2/bin/python bench/bench_compile_dynamic.py

Columns: ms for the whole sweep (sum over its calls), and ratios to the library's own eager.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# (bench_compile points both kernel caches at fresh directories before importing ember and torch)
from bench_compile import ember, gpt_block, has_compile, torch  # noqa: E402


def decoder(T, d=256, heads=4):
    """gpt_block's layers, one token at a time over a KV cache."""
    F = T.nn.functional

    class Step(type(gpt_block(T, d, heads))):
        def forward(self, x, k_cache, v_cache):
            b, t, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (z.reshape(b, t, heads, d // heads).transpose(1, 2) for z in (q, k, v))
            k, v = T.cat([k_cache, k], dim=2), T.cat([v_cache, v], dim=2)
            a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, t, d)
            x = x + self.proj(a)
            return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh")), k, v
    return Step().eval()


def sweep_block(T, model, lengths):
    xs = [T.randn(4, n, 256) for n in lengths]

    def run():
        for x in xs:
            model(x)
    return run


def sweep_decoder(T, model, steps=64, start=64):
    x = T.randn(4, 1, 256)
    k0, v0 = T.randn(4, 4, start, 64), T.randn(4, 4, start, 64)

    def run():
        k, v = k0, v0
        for _ in range(steps):
            _, k, v = model(x, k, v)
    return run


def timed(fn):
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1e3


def measure(T, variants):
    """{variant: (block first sweep, block again, decoder first sweep, decoder again)} in ms."""
    T.manual_seed(0)
    block, step = gpt_block(T).eval(), decoder(T)
    lengths = list(range(33, 65))
    out = {}
    with T.no_grad():
        for name, wrap in variants:
            b, d = wrap(block), wrap(step)
            sb, sd = sweep_block(T, b, lengths), sweep_decoder(T, d)
            first_b, first_d = timed(sb), timed(sd)
            again_b = min(timed(sb) for _ in range(3))
            again_d = min(timed(sd) for _ in range(3))
            out[name] = (first_b, again_b, first_d, again_d)
    return out


def main():
    ember.set_num_threads(2)
    ember._dynamo.config.cache_size_limit = 64  # dynamic=False: every size captured, none run eagerly
    rows = measure(ember, [("ember eager", lambda m: m),
                           ("ember.compile(dynamic=False)", lambda m: ember.compile(m, dynamic=False)),
                           ("ember.compile(dynamic=True)", lambda m: ember.compile(m, dynamic=True))])
    if has_compile:
        torch.set_num_threads(2)
        import torch._dynamo as dynamo
        dynamo.config.cache_size_limit = 64
        rows.update(measure(torch, [("torch eager", lambda m: m),
                                    ("torch.compile(dynamic=True)", lambda m: torch.compile(m, dynamic=True))]))
    print(f"2 threads, float32; ember {ember.__version__}" + (f", torch {torch.__version__}" if torch else ""))
    print("ms per sweep (ratio to the same library's eager)")
    print(f"{'variant':30s} {'block, new sizes':>22s} {'block, again':>20s} {'decode, new sizes':>22s} "
          f"{'decode, again':>20s}")
    for name, values in rows.items():
        base = rows["torch eager" if name.startswith("torch") else "ember eager"]
        cells = [f"{v:10.1f} ({v / e:5.2f})" for v, e in zip(values, base)]
        print(f"{name:30s} {cells[0]:>22s} {cells[1]:>20s} {cells[2]:>22s} {cells[3]:>20s}", flush=True)


if __name__ == "__main__":
    main()
