"""CUDA part 2 on a GPU: ember's nn kernels and train steps vs the PyTorch in this interpreter, same
GPU, same run (issue 17).

Rows: layer norm (GPT-2 shape, forward and forward+backward), cross entropy over a 50257-word
vocabulary (forward+backward), batch norm 2d, max pooling, convolution (cuDNN) in float32/TF32
and bfloat16, causal scaled_dot_product_attention in bfloat16 at T=1024..8192, d=64/128
(ember's flash kernels, torch's flash path; backward FLOPs counted as 2.5x the forward's), and
whole train steps (forward, loss, backward, AdamW) of the seeds' CNN and MLP at
batch 128. Bandwidth rows count each tensor read or written once; times come from CUDA events
around `repeat` calls after a warm-up; ratio = ember time / torch time (below 1: ember faster).
A row whose op has no CUDA kernel in ember yet prints n/a with the reason.

    PYTHONPATH=python:build/python python bench/bench_cuda_nn.py [--quick]
"""
import sys

import ember
from bench_cuda import gpu_time_ms, measure_both


def cnn(T):
    nn = T.nn
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2, 2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2, 2),
                         nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.5), nn.Linear(128, 10))


def mlp(T):
    nn = T.nn
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Dropout(0.1), nn.Linear(256, 10))


def train_step(T, make):
    model = make(T).to("cuda")
    opt = T.optim.AdamW(model.parameters(), lr=1e-3)
    x = T.randn(128, 1, 28, 28, device="cuda")
    y = T.randint(0, 10, (128,), device="cuda")

    def step():
        opt.zero_grad()
        T.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return step


def fwd_bwd(T, fn, *shapes, dtype=None):
    dtype = dtype or T.float32
    xs = [T.randn(*s, device="cuda", dtype=dtype).requires_grad_() for s in shapes]
    g = None

    def run():
        nonlocal g
        out = fn(*xs)
        if g is None:
            g = T.randn_like(out)
        out.backward(g)
    return run


def attention_rows(T):
    """Causal bf16 scaled_dot_product_attention, 16 heads, at the issue's lengths and head dims:
    forward, and forward+backward (the backward counted as 2.5 forwards)."""
    F = T.nn.functional
    rows = {}
    for t, d in [(1024, 64), (4096, 64), (8192, 64), (1024, 128), (4096, 128)]:
        flops = 4 * 16 * t * t * d / 2  # causal: half the score matrix
        q = T.randn(1, 16, t, d, device="cuda", dtype=T.bfloat16)
        rows[f"sdpa fwd T{t} d{d} causal (TFLOP/s)"] = (
            (lambda q: lambda: lambda: F.scaled_dot_product_attention(q, q, q, is_causal=True))(q), flops, "flops")
        rows[f"sdpa f+b T{t} d{d} causal (TFLOP/s)"] = (
            (lambda t, d: lambda: fwd_bwd(T, lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True),
                                          *[(1, 16, t, d)] * 3, dtype=T.bfloat16))(t, d), 3.5 * flops, "flops")
    return rows


def workloads(T, quick):
    F = T.nn.functional
    rows, width = (4096 if quick else 16384), 768
    ln_x = T.randn(rows, width, device="cuda")
    ln_w, ln_b = T.ones(width, device="cuda"), T.zeros(width, device="cuda")
    vocab, ce_rows = 50257, (1024 if quick else 4096)
    ce_x = T.randn(ce_rows, vocab, device="cuda")
    ce_t = T.randint(0, vocab, (ce_rows,), device="cuda")
    bn_x = T.randn(128, 64, 28, 28, device="cuda")
    conv_x = T.randn(32, 64, 56, 56, device="cuda")
    conv_w = T.randn(128, 64, 3, 3, device="cuda")
    conv_flops = 2 * 32 * 128 * 56 * 56 * 64 * 9
    return {
        # name: (make fn, work, unit)
        "layer_norm fwd 768 (GB/s)": (lambda: lambda: F.layer_norm(ln_x, (width,), ln_w, ln_b), 8 * ln_x.numel(), "bw"),
        "layer_norm fwd+bwd 768 (GB/s)": (lambda: fwd_bwd(T, lambda x: F.layer_norm(x, (width,)), (rows, width)),
                                          20 * rows * width, "bw"),
        "cross_entropy f+b 50257 (GB/s)": (lambda: fwd_bwd(T, lambda x: F.cross_entropy(x, ce_t), (ce_rows, vocab)),
                                           12 * ce_x.numel(), "bw"),
        "batch_norm2d fwd (GB/s)": (lambda: lambda: F.batch_norm(bn_x, None, None, training=True), 12 * bn_x.numel(),
                                    "bw"),
        "max_pool2d 2x2 fwd (GB/s)": (lambda: lambda: F.max_pool2d(bn_x, 2), 5 * bn_x.numel(), "bw"),
        "conv2d 3x3 fp32 (TFLOP/s)": (lambda: lambda: F.conv2d(conv_x, conv_w, padding=1), conv_flops, "fp32"),
        "conv2d 3x3 tf32 (TFLOP/s)": (lambda: lambda: F.conv2d(conv_x, conv_w, padding=1), conv_flops, "tf32"),
        "conv2d 3x3 bf16 (TFLOP/s)": (lambda: (lambda a, b: lambda: F.conv2d(a, b, padding=1))(
            conv_x.to(T.bfloat16), conv_w.to(T.bfloat16)), conv_flops, "flops"),
        **attention_rows(T),
        "CNN train step b128 (ms)": (lambda: train_step(T, cnn), None, "ms"),
        "MLP train step b128 (ms)": (lambda: train_step(T, mlp), None, "ms"),
    }


def set_tf32(T, on):
    T.backends.cudnn.allow_tf32 = on
    T.set_float32_matmul_precision("high" if on else "highest")


def measure(T, quick):
    out = {}
    for name, (make, work, kind) in workloads(T, quick).items():
        set_tf32(T, kind != "fp32")
        try:
            fn = make()
            # train steps vary most from call to call (host work, allocator): more of them
            ms = gpu_time_ms(T, fn, repeat=40 if kind == "ms" else (10 if kind == "bw" else 20),
                             warmup=8 if kind == "ms" else 3)
        except NotImplementedError as e:
            out[name] = f"n/a ({str(e)[:60]})"
            continue
        finally:
            set_tf32(T, True)
        out[name] = ms if kind == "ms" else (work / (ms * 1e-3) / (1e9 if kind == "bw" else 1e12))
    set_tf32(T, False)
    return out


def main():
    both = measure_both(measure)
    if both is None:
        return 0
    ours, theirs = both
    print(f"{'workload':42s} {'ember':>10s} {'torch':>10s} {'ember/torch':>12s}")
    for k, v in ours.items():
        t = theirs.get(k)
        if isinstance(v, str) or not isinstance(t, float):
            print(f"{k:42s} {v}")
            continue
        ratio = v / t if "(ms)" in k else t / v  # time-like: below 1, ember is faster
        print(f"{k:42s} {v:10.2f} {t:10.2f} {ratio:12.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
