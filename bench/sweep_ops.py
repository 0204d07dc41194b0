"""A sweep of common ops, ember against PyTorch from Python (2 threads): one line per op with
each side's median time per call and the ratio ember/torch; "<-- slower" marks ratios above 1.

    PYTHONPATH=python:build/python .venv/bin/python bench/sweep_ops.py              # torch 1.13
    PYTHONPATH=python:build/python /work/torch2/bin/python bench/sweep_ops.py       # torch 2.x
    ... bench/sweep_ops.py 12288                     # only the cases whose names contain "12288"

Not part of scripts/bench.sh's table (issue 8's workloads are bench/compare_python.py); this is
the wider net that found the slow ops listed in docs/PERFORMANCE.md.
"""
import sys
import time

import ember
import torch


def median_seconds(fn, calls, repeats=5):
    for _ in range(max(1, calls // 5)):
        fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t0) / calls)
    return sorted(times)[repeats // 2]


def cases(T):
    """name -> (step, calls per timed run), built from the torch-like module T."""
    F = T.nn.functional
    T.manual_seed(0)
    x, y = T.randn(1024, 1024), T.randn(1024, 1024)
    img = T.randn(32, 64, 32, 32)
    idx = T.randint(0, 1000, (4096,))
    emb = T.randn(1000, 256, requires_grad=True)
    logits, tgt = T.randn(4096, 1000, requires_grad=True), T.randint(0, 1000, (4096,))
    seq = T.randn(64, 32, 128)
    lstm = T.nn.LSTM(128, 128, batch_first=True)
    gru = T.nn.GRU(128, 128, batch_first=True)
    depthwise = T.nn.Conv2d(64, 64, 3, padding=1, groups=64)
    conv1d, sig = T.nn.Conv1d(64, 64, 5, padding=2), T.randn(32, 64, 256)
    small = T.randn(64, 64)
    x3 = T.randn(64, 128, 128)
    a32 = img[0, :32, :32].expand(32, 32, 32)
    r32, r128 = T.randn(12288, 32), T.randn(12288, 128)  # short rows: a softmax's keys, a few classes
    xg, hg, wg = x.clone().requires_grad_(), T.randn(4096, 768, requires_grad=True), T.randn(768, requires_grad=True)
    gh = T.randn(4096, 768)

    def backward_of(f, leaves, grad):  # one forward and backward (the backward kernels are what is timed)
        def step():
            for t in leaves:
                t.grad = None
            f().backward(grad)
        return step
    activation_grads = {
        f"{name} fwd+bwd 1M": (backward_of(lambda name=name: getattr(F, name)(xg), [xg], y), 30)
        for name in ("tanh", "sigmoid", "silu", "relu")}
    if hasattr(F, "rms_norm"):  # (torch >= 2.4)
        activation_grads["rms_norm fwd+bwd 4096x768"] = (
            backward_of(lambda: F.rms_norm(hg, (768,), wg, 1e-6), [hg, wg], gh), 20)
    return activation_grads | {
        "sum dim1 12288x32": (lambda: r32.sum(1), 100),
        "sum dim1 12288x128": (lambda: r128.sum(1), 100),
        "sum dim0 12288x32": (lambda: r32.sum(0), 100),
        "amax dim1 12288x32": (lambda: r32.amax(1), 100),
        "amax dim1 12288x128": (lambda: r128.amax(1), 100),
        "argmax dim1 12288x32": (lambda: r32.argmax(1), 100),
        "softmax 12288x32": (lambda: r32.softmax(1), 100),
        "log_softmax 12288x128": (lambda: r128.log_softmax(1), 100),
        "exp 1M": (lambda: x.exp(), 50),
        "pow 2.5 1M": (lambda: x.abs().pow(2.5), 20),
        "pow tensor 1M": (lambda: x.abs().pow(y.abs()), 20),
        "tanh 1M": (lambda: x.tanh(), 50),
        "sigmoid 1M": (lambda: x.sigmoid(), 50),
        "mul bcast row 1M": (lambda: x * y[0], 50),
        "sum dim0 1M": (lambda: x.sum(0), 50),
        "sum dim1 1M": (lambda: x.sum(1), 50),
        "mean dim-1 64x128x128": (lambda: x3.mean(-1), 50),
        "max dim1 1M": (lambda: x.max(1), 50),
        "argmax dim1": (lambda: x.argmax(1), 50),
        "mean all 1M": (lambda: x.mean(), 50),
        "var dim1": (lambda: x.var(1), 50),
        "transpose contiguous 1M": (lambda: x.t().contiguous(), 50),
        "cat 2x1M dim1": (lambda: T.cat([x, y], 1), 30),
        "index_select 4096 rows": (lambda: x.index_select(0, idx % 1024), 50),
        "where 1M": (lambda: T.where(x > 0, x, y), 50),
        "masked_fill 1M": (lambda: x.masked_fill(x > 0, 0.0), 50),
        "cumsum dim1": (lambda: x.cumsum(1), 20),
        "sort dim1": (lambda: x.sort(1), 5),
        "topk 10 dim1": (lambda: x.topk(10, 1), 20),
        "embedding fwd+bwd": (lambda: F.embedding(idx, emb).sum().backward(), 20),
        "cross_entropy fwd+bwd 4096x1000": (lambda: F.cross_entropy(logits, tgt).backward(), 10),
        "log_softmax 4096x1000": (lambda: F.log_softmax(logits.detach(), 1), 20),
        "avg_pool2d 2": (lambda: F.avg_pool2d(img, 2), 20),
        "adaptive_avg_pool2d 1": (lambda: F.adaptive_avg_pool2d(img, 1), 20),
        "max_pool2d 3 s2 p1": (lambda: F.max_pool2d(img, 3, 2, 1), 10),
        "depthwise conv 3x3": (lambda: depthwise(img), 5),
        "conv1d k5": (lambda: conv1d(sig), 5),
        "lstm 64x32x128 fwd": (lambda: lstm(seq), 3),
        "gru 64x32x128 fwd": (lambda: gru(seq), 3),
        "lstm 64x32x128 fwd+bwd": (lambda: lstm(seq)[0].sum().backward(), 2),
        "dropout 1M": (lambda: F.dropout(x, 0.5), 30),
        "small chain 64x64": (lambda: (small * 2 + 1).relu().sum(), 2000),
        "randn 1M": (lambda: T.randn(1024, 1024), 20),
        "clone 1M": (lambda: x.clone(), 50),
        "matmul 64x64": (lambda: small @ small, 2000),
        "bmm 32x32x32 b32": (lambda: T.bmm(a32, a32), 500),
    } | second_sweep(T) | third_sweep(T)


def second_sweep(T):
    """The ops a second sweep (2026-11-28) found behind torch 2.15, now timed here: vision
    resampling, bags, unique, copies of permuted views, clamp, small LAPACK calls."""
    F = T.nn.functional
    T.manual_seed(1)
    img = T.randn(16, 32, 64, 64)
    imgg = img.clone().requires_grad_()
    grid = T.rand(16, 48, 48, 2) * 2 - 1
    up = T.randn(16, 32, 128, 128)
    x = T.randn(1024, 1024)
    emb = T.randn(10000, 64)
    bag_idx, bag_off = T.randint(0, 10000, (4096,)), T.arange(0, 4096, 16)
    labels = T.randint(0, 1000, (1 << 20,))
    a = T.randn(512, 512)
    spd = a @ a.mT + 512 * T.eye(512)
    sym = T.randn(256, 256)
    sym = sym + sym.mT

    def interp_fwd_bwd():
        imgg.grad = None
        F.interpolate(imgg, scale_factor=2, mode="bilinear").backward(up)
    return {
        "grid_sample 16x32x64x64 on 48x48": (lambda: F.grid_sample(img, grid, align_corners=False), 10),
        "embedding_bag mean 256 bags of 16": (lambda: F.embedding_bag(bag_idx, emb, bag_off, mode="mean"), 100),
        "unique 1M labels": (lambda: T.unique(labels), 5),
        "interpolate bilinear x2": (lambda: F.interpolate(img, scale_factor=2, mode="bilinear"), 5),
        "interpolate bilinear x2 fwd+bwd": (interp_fwd_bwd, 3),
        "pixel_shuffle 2": (lambda: F.pixel_shuffle(img, 2), 10),
        "flip dim0 1024x1024": (lambda: x.flip(0), 50),
        "clamp 1M": (lambda: x.clamp(-0.5, 0.5), 50),
        "cholesky 512": (lambda: T.linalg.cholesky(spd), 10),
        "qr 256": (lambda: T.linalg.qr(sym), 10),
        "eigh 256": (lambda: T.linalg.eigh(sym), 5),
    }


def third_sweep(T):
    """The 2026-11-29 session's kernels: gather/scatter_add with a million int64 indices (the
    vectorised range check, threaded scatter) and ctc_loss (a C++ op now) with its log_softmax."""
    F = T.nn.functional
    T.manual_seed(2)
    x = T.randn(1024, 1024)
    idx = T.randint(0, 1024, (1024, 1024))
    src = T.randn(1024, 1024)
    logits = T.randn(50, 16, 20, requires_grad=True)
    targets, lengths, target_lengths = T.randint(1, 20, (16, 10)), T.full((16,), 50), T.full((16,), 10)

    def ctc_fwd_bwd():
        logits.grad = None
        F.ctc_loss(F.log_softmax(logits, 2), targets, lengths, target_lengths).backward()
    return {
        "gather dim1 1M indices": (lambda: x.gather(1, idx), 20),
        "gather dim0 1M indices": (lambda: x.gather(0, idx), 20),
        "scatter_add dim1 1M indices": (lambda: T.zeros(1024, 1024).scatter_add_(1, idx, src), 20),
        "scatter_add dim0 1M indices": (lambda: T.zeros(1024, 1024).scatter_add_(0, idx, src), 20),
        "ctc_loss T50 N16 C20 S10 fwd+bwd": (ctc_fwd_bwd, 50),
    }


def main():
    ember.set_num_threads(2)
    torch.set_num_threads(2)
    mine, theirs = cases(ember), cases(torch)
    only = sys.argv[1:]  # names containing any of these words (all cases when none)
    for name, (step, calls) in mine.items():
        if only and not any(w in name for w in only):
            continue
        te = median_seconds(step, calls)
        tt = median_seconds(theirs[name][0], calls)
        flag = "  <-- slower" if te > tt else ""
        print(f"{name:36s} ember {te * 1e6:10.1f} us  torch {tt * 1e6:10.1f} us  ratio {te / tt:5.2f}{flag}",
              flush=True)


if __name__ == "__main__":
    main()
