"""scaled_dot_product_attention on the CPU: ember's flash kernels against its math path (and
torch's SDPA when the interpreter has torch 2.x), 2 threads, float32, 12 heads of 64.

Columns: median ms per call (forward, or forward+backward) for ember math, ember flash, ember's
default choice, torch; flash/math is a time ratio (below 1: flash faster). The default picks
flash for causal attention from 256 x 256 scores and for unmasked attention from 8192 x 8192
(src/nn/functional/flash_attention.cpp), from these measurements.

    PYTHONPATH=python:build/python .venv/bin/python bench/bench_sdpa_cpu.py
"""
import ember
from ember.nn.attention import SDPBackend, sdpa_kernel

from bench_bf16_cpu import median_ms

try:
    import torch
    has_torch_sdpa = hasattr(torch.nn.functional, "scaled_dot_product_attention")
except ImportError:
    torch, has_torch_sdpa = None, False


def case(T, batch, t, causal, backward, backend=None):
    q, k, v = (T.randn(batch, 12, t, 64, requires_grad=backward) for _ in range(3))

    def step():
        out = T.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        if backward:
            out.sum().backward()
    if backend is None:
        return median_ms(step, warmup=1)
    with sdpa_kernel(backend):
        return median_ms(step, warmup=1)


def main():
    ember.set_num_threads(2)
    if torch is not None:
        torch.set_num_threads(2)
    print(f"{'shape':34s} {'math':>8s} {'flash':>8s} {'default':>8s} {'torch':>8s} {'flash/math':>11s}")
    for batch, t in [(8, 256), (4, 512), (1, 1024), (1, 2048)]:
        for causal in (True, False):
            for backward in (False, True):
                name = f"b{batch} T{t} {'causal' if causal else 'full'} {'f+b' if backward else 'fwd'}"
                m = case(ember, batch, t, causal, backward, SDPBackend.MATH)
                f = case(ember, batch, t, causal, backward, SDPBackend.FLASH_ATTENTION)
                d = case(ember, batch, t, causal, backward)
                tt = case(torch, batch, t, causal, backward) if has_torch_sdpa else float("nan")
                print(f"{name:34s} {m:8.1f} {f:8.1f} {d:8.1f} {tt:8.1f} {f / m:11.2f}")


if __name__ == "__main__":
    main()
