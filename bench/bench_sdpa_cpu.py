"""scaled_dot_product_attention on the CPU: ember's flash kernels against its math path and
torch's SDPA (when the interpreter has torch 2.x), 2 threads, 12 heads of 64.

Rows: causal, unmasked ("full") and with a random bool attn_mask broadcast over heads ("mask"),
forward or forward+backward, float32 (and bfloat16 at T=1024 and 2048). Columns: ms per call,
the best of 10 calls taken in 5 interleaved rounds (this machine's medians move 20-40% between
runs; the best of interleaved rounds is what stays put), for ember math, ember flash, ember's
default choice and torch; flash/math and flash/torch are time ratios (below 1: flash faster).
ember's default picks flash from 128 x 128 scores (src/nn/functional/flash_attention.cpp), from
these measurements.

    PYTHONPATH=python:build/python /work/torch2/bin/python bench/bench_sdpa_cpu.py [--quick]
"""
import sys

import ember
from ember.nn.attention import SDPBackend, sdpa_kernel

from bench_timing import best_of

try:
    import torch
    has_torch_sdpa = hasattr(torch.nn.functional, "scaled_dot_product_attention")
except ImportError:
    torch, has_torch_sdpa = None, False


def make_step(T, dtype, batch, t, kind, backward):
    q, k, v = (T.randn(batch, 12, t, 64, dtype=dtype, requires_grad=backward) for _ in range(3))
    mask = T.rand(batch, 1, t, t) > 0.2 if kind == "mask" else None

    def step():
        out = T.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=kind == "causal")
        if backward:
            out.float().sum().backward()
    return step


def main():
    ember.set_num_threads(2)
    if torch is not None:
        torch.set_num_threads(2)
    quick = "--quick" in sys.argv
    shapes = [(1, 1024), (1, 2048)] if quick else [(16, 128), (8, 256), (4, 512), (1, 1024), (1, 2048)]
    cases = [(b, t, kind, bw, "f32") for b, t in shapes for kind in ("causal", "full", "mask") for bw in (False, True)]
    cases += [(1, t, kind, bw, "bf16") for t in (1024, 2048) for kind in ("causal", "full") for bw in (False, True)]
    print(f"{'shape':30s} {'math':>8s} {'flash':>8s} {'default':>8s} {'torch':>8s} {'flash/math':>11s} "
          f"{'flash/torch':>12s}")
    for batch, t, kind, backward, dt in cases:
        edt = ember.float32 if dt == "f32" else ember.bfloat16
        steps = {
            "math": (make_step(ember, edt, batch, t, kind, backward), lambda: sdpa_kernel(SDPBackend.MATH)),
            "flash": (make_step(ember, edt, batch, t, kind, backward), lambda: sdpa_kernel(SDPBackend.FLASH_ATTENTION)),
            "default": (make_step(ember, edt, batch, t, kind, backward), None),
        }
        if has_torch_sdpa:
            tdt = torch.float32 if dt == "f32" else torch.bfloat16
            steps["torch"] = (make_step(torch, tdt, batch, t, kind, backward), None)
        best = dict(zip(steps, best_of(list(steps.values()))))
        tt = best.get("torch", float("nan"))
        name = f"{dt} b{batch} T{t} {kind} {'f+b' if backward else 'fwd'}"
        print(f"{name:30s} {best['math']:8.1f} {best['flash']:8.1f} {best['default']:8.1f} {tt:8.1f} "
              f"{best['flash'] / best['math']:11.2f} {best['flash'] / tt:12.2f}", flush=True)


if __name__ == "__main__":
    main()
