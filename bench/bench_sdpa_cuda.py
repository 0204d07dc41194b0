"""scaled_dot_product_attention on the GPU: ember's flash kernels beside PyTorch's SDPA in the same
process, bfloat16, batch 1 x 16 heads, at T=1024..8192 and d=64/128, causal and not; forward and
forward+backward TFLOP/s (the backward counted as 2.5 forwards, causal as half the score matrix).

PyTorch is measured twice: its default choice (on Hopper that can be cuDNN's attention rather than
FlashAttention-2) and its FLASH_ATTENTION backend forced, the issue's reference; the kernels its
default path launched are printed so the table says which one it was.
    python bench/bench_sdpa_cuda.py [--quick]"""
import sys

from bench_cuda import gpu_time_ms, measure_both, torch  # noqa: F401  (torch: None when absent)

SHAPES = [(1024, 64, True), (4096, 64, True), (8192, 64, True), (1024, 128, True), (4096, 128, True),
          (4096, 64, False), (4096, 128, False)]


def rows(T, quick, backend=None):
    F = T.nn.functional
    out = {}
    for t, d, causal in SHAPES[:3] if quick else SHAPES:
        flops = 4 * 16 * t * t * d / (2 if causal else 1)
        q, k, v = (T.randn(1, 16, t, d, device="cuda", dtype=T.bfloat16, requires_grad=True) for _ in range(3))
        g = T.randn(1, 16, t, d, device="cuda", dtype=T.bfloat16)
        tag = f"T{t} d{d} {'causal' if causal else 'full'}"

        def fwd():
            with T.no_grad():
                F.scaled_dot_product_attention(q, k, v, is_causal=causal)

        def fwd_bwd():
            F.scaled_dot_product_attention(q, k, v, is_causal=causal).backward(g)

        for name, fn, work in (("fwd", fwd, flops), ("f+b", fwd_bwd, 3.5 * flops)):
            if backend is not None:
                from torch.nn.attention import sdpa_kernel
                with sdpa_kernel(backend):
                    ms = gpu_time_ms(T, fn, repeat=20)
            else:
                ms = gpu_time_ms(T, fn, repeat=20)
            out[f"{name} {tag}"] = work / (ms * 1e-3) / 1e12
    return out


def torch_kernels():
    """Names of the GPU kernels torch's default SDPA path launches (forward and backward)."""
    from torch.profiler import ProfilerActivity, profile
    q, k, v = (torch.randn(1, 16, 4096, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
        torch.cuda.synchronize()
    names = sorted({e.key for e in prof.key_averages() if "attention" in e.key.lower() or "fmha" in e.key.lower()
                    or "flash" in e.key.lower() or "cudnn" in e.key.lower()})
    return [n[:90] for n in names]


def main():
    both = measure_both(rows)
    if both is None:
        return 0
    ours, theirs = both
    flash = {}
    if torch is not None and torch.cuda.is_available():
        from torch.nn.attention import SDPBackend
        flash = rows(torch, "--quick" in sys.argv, SDPBackend.FLASH_ATTENTION)
        print("torch default SDPA kernels:", "; ".join(torch_kernels()) or "(none matched)")
    print(f"{'bf16, 16 heads (TFLOP/s)':28s} {'ember':>8s} {'torch':>8s} {'ratio':>6s} {'torch flash':>12s} {'ratio':>6s}")
    for k, v in ours.items():
        t, f = theirs.get(k, float("nan")), flash.get(k, float("nan"))
        # ratios time-like: ember time / torch time (below 1: ember faster)
        print(f"{k:28s} {v:8.1f} {t:8.1f} {t / v:6.2f} {f:12.1f} {f / v:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
