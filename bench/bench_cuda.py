"""CUDA part 1 on a GPU: ember vs the PyTorch in this interpreter, same GPU, same run.

Workloads (issue 16): elementwise bandwidth as a fraction of the GPU's peak (a + b, a * 2 in
float32, a float32 -> bfloat16 copy), a full and a row-wise sum, softmax over rows, GEMM
TFLOP/s (float32 strict, TF32, bfloat16, float16), the launch overhead of a small op, and two
pieces of a GPT-2 step: bias gradients (column sums) and clip_grad_norm_ over its 148 gradients;
40 dependent small ops launched one by one and replayed as a CUDA graph. Times
come from CUDA events around `repeat` calls after a warm-up; ratio = ember / torch (below 1:
ember faster).

    PYTHONPATH=python:build/python python bench/bench_cuda.py [--quick]

Without a GPU it says so and exits 0 (nothing is measured).
"""
import argparse
import sys

import ember

try:
    import torch
except ImportError:
    torch = None

# HBM peak bandwidth (bytes/s) by device name: what a fraction of peak is taken against.
PEAK_BANDWIDTH = [("H200", 4.8e12), ("H100 PCIe", 2.0e12), ("H100", 3.35e12), ("A100-SXM4-80GB", 2.04e12),
                  ("A100", 1.56e12)]


def peak_bandwidth(name):
    for key, bw in PEAK_BANDWIDTH:
        if key in name:
            return bw
    return None


def gpu_time_ms(T, fn, repeat, warmup=3):
    """Milliseconds per call of fn on the current stream, from CUDA events."""
    for _ in range(warmup):
        fn()
    T.cuda.synchronize()
    start, end = T.cuda.Event(enable_timing=True), T.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeat):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / repeat


def workloads(T, quick):
    n = (1 << 24) if quick else (1 << 26)
    a = T.randn(n, device="cuda")
    b = T.randn(n, device="cuda")
    rows = T.randn(4096, 4096, device="cuda")
    m = 2048 if quick else 8192
    mats = {dt: (T.randn(m, m, device="cuda").to(dt), T.randn(m, m, device="cuda").to(dt))
            for dt in (T.float32, T.bfloat16, T.float16)}
    tiny = T.ones(16, device="cuda")
    # bias gradients of a GPT-2 layer's linears (columns summed over 8192 tokens), and GPT-2 124M's
    # 148 gradients for clip_grad_norm_ (a norm per tensor, then a scale of each)
    bias768 = T.randn(8192, 768, device="cuda").to(T.bfloat16)
    bias3072 = T.randn(8192, 3072, device="cuda").to(T.bfloat16)
    layer = [(768,), (768,), (2304, 768), (2304,), (768, 768), (768,), (768,), (768,), (3072, 768), (3072,),
             (768, 3072), (768,)]
    params = []
    for shape in layer * 12 + [(50257, 768), (1024, 768), (768,), (768,)]:
        p = T.zeros(shape, device="cuda", requires_grad=True)
        p.grad = T.randn(shape, device="cuda")
        params.append(p)
    # launch overhead against CUDA graphs: 20 dependent small ops, eagerly and replayed as a graph
    chain_in = T.ones(256, device="cuda")

    def chain():
        y = chain_in
        for _ in range(20):
            y = y * 1.0001 + 0.0001
        return y
    chain()
    T.cuda.synchronize()
    chain_graph = T.cuda.CUDAGraph()
    with T.cuda.graph(chain_graph):
        chain()
    return n, m, {
        # name: (fn, bytes moved or flops, kind)
        "add f32 (GB/s)": (lambda: a + b, 3 * 4 * n, "bw"),
        "mul scalar f32 (GB/s)": (lambda: a * 2.0, 2 * 4 * n, "bw"),
        "f32 -> bf16 copy (GB/s)": (lambda: a.to(T.bfloat16), 6 * n, "bw"),
        "sum all f32 (GB/s)": (lambda: a.sum(), 4 * n, "bw"),
        "sum rows 4096x4096 (GB/s)": (lambda: rows.sum(dim=1), 4 * rows.numel(), "bw"),
        "softmax 4096x4096 (GB/s)": (lambda: T.softmax(rows, dim=1), 8 * rows.numel(), "bw"),
        "sgemm fp32 strict (TFLOP/s)": (lambda: mats[T.float32][0] @ mats[T.float32][1], 2 * m ** 3, "fp32"),
        "sgemm tf32 (TFLOP/s)": (lambda: mats[T.float32][0] @ mats[T.float32][1], 2 * m ** 3, "tf32"),
        "gemm bf16 (TFLOP/s)": (lambda: mats[T.bfloat16][0] @ mats[T.bfloat16][1], 2 * m ** 3, "flops"),
        "gemm fp16 (TFLOP/s)": (lambda: mats[T.float16][0] @ mats[T.float16][1], 2 * m ** 3, "flops"),
        "small add launch (us)": (lambda: tiny + tiny, None, "latency"),
        "bias grad 8192x768 bf16 (GB/s)": (lambda: bias768.sum(0), 2 * bias768.numel(), "bw"),
        "bias grad 8192x3072 bf16 (GB/s)": (lambda: bias3072.sum(0), 2 * bias3072.numel(), "bw"),
        "clip_grad_norm_ GPT-2 (us)": (lambda: T.nn.utils.clip_grad_norm_(params, 1.0), None, "step"),
        "40 small ops eager (us)": (chain, None, "step"),
        "40 small ops CUDA graph (us)": (chain_graph.replay, None, "step"),
    }


def measure(T, quick):
    _, _, cases = workloads(T, quick)
    out = {}
    for name, (fn, work, kind) in cases.items():
        if kind in ("fp32", "tf32"):
            T.set_float32_matmul_precision("highest" if kind == "fp32" else "high")
        ms = gpu_time_ms(T, fn, repeat=20 if kind != "latency" else 2000)
        T.set_float32_matmul_precision("highest")
        if kind in ("latency", "step"):
            out[name] = ms * 1e3
        elif kind == "bw":
            out[name] = work / (ms * 1e-3) / 1e9
        else:
            out[name] = work / (ms * 1e-3) / 1e12
    return out


def measure_both(measure):
    """Parses --quick, says which GPU, then runs measure(T, quick) for ember and for torch (when
    torch sees a GPU): (ours, theirs), or None without a GPU (said, nothing measured)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller sizes")
    args = ap.parse_args()
    if not ember.cuda.is_available():
        print("no CUDA GPU on this machine: nothing measured")
        return None
    print(f"GPU: {ember.cuda.get_device_name()}; ember CUDA {ember.version.cuda}; "
          f"torch {torch.__version__ if torch else 'not installed'}")
    ours = measure(ember, args.quick)
    theirs = measure(torch, args.quick) if torch is not None and torch.cuda.is_available() else {}
    return ours, theirs


def main():
    both = measure_both(measure)
    if both is None:
        return 0
    ours, theirs = both
    peak = peak_bandwidth(ember.cuda.get_device_name())
    print(f"{'workload':32s} {'ember':>10s} {'torch':>10s} {'ember/torch':>12s} {'of peak':>8s}")
    for k, v in ours.items():
        t = theirs.get(k)
        # for times lower is better; for rates higher is better: the ratio is always time-like
        ratio = (v / t if "(us)" in k else t / v) if t else float("nan")
        frac = f"{v * 1e9 / peak:7.0%}" if peak and "GB/s" in k else ""
        print(f"{k:32s} {v:10.1f} {t if t else float('nan'):10.1f} {ratio:12.2f} {frac:>8s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
