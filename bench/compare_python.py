"""ember vs PyTorch from Python, side by side in one process: the same program text runs once
with `T = ember` and once with `T = torch` (that is the point of the package). Runs are
interleaved (ember, torch, ember, torch, ...) and each side's median time per call is reported,
with the ratio ember/torch (below 1: ember is faster).

    PYTHONPATH=python:build/python .venv/bin/python bench/compare_python.py [--quick] [--only NAME]

Workloads: a small op (1-element add), a 16x16 matmul+relu+sum+backward loop, a 16M-element add,
1024 and 4096 sgemm, softmax and layer_norm over 4096x1024, the seeds' MLP train
step (batch 128, AdamW), the seeds' SimpleCNN train step (batch 64, Adam), a small GPT train step
(d_model 128, 4 layers, 4 heads, T=128, batch 8, AdamW) and a DataLoader epoch over 60000x784
tensors with shuffle (batch 128).
"""
import argparse
import math
import statistics
import time

import ember

try:
    import torch
except ImportError:  # the ember side still runs, with no ratios
    torch = None


# ---- workloads: each takes the torch-like module T and returns a no-argument step function

def small_add(T):
    a, b = T.ones(1), T.ones(1)
    return lambda: a + b


def tiny_backward(T):
    x = T.randn(16, 16, requires_grad=True)
    w = T.randn(16, 16)

    def step():
        y = (x @ w).relu().sum()
        y.backward()
    return step


def add_16m(T):
    a, b = T.randn(16 * 1024 * 1024), T.randn(16 * 1024 * 1024)
    return lambda: a + b


def sgemm(n):
    def make(T):
        a, b = T.randn(n, n), T.randn(n, n)
        return lambda: a @ b
    return make


def softmax_rows(T):
    x = T.randn(4096, 1024)
    return lambda: T.softmax(x, dim=1)


def layer_norm_rows(T):
    x, w, b = T.randn(4096, 1024), T.ones(1024), T.zeros(1024)
    return lambda: T.nn.functional.layer_norm(x, (1024,), w, b)


def mlp_step(T):
    nn = T.nn
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Dropout(0.1), nn.Linear(256, 10))
    opt = T.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    x, y = T.randn(128, 1, 28, 28), T.randint(0, 10, (128,))
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    return step


def make_cnn(T):
    """The seeds' SimpleCNN for 28x28 grey images."""
    nn = T.nn
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2, 2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2, 2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.5), nn.Linear(128, 10))


def cnn_step(T):
    nn = T.nn
    model = make_cnn(T)
    opt = T.optim.Adam(model.parameters(), lr=1e-3)
    x, y = T.randn(64, 1, 28, 28), T.randint(0, 10, (64,))
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    return step


def make_gpt(T, vocab=256, d=128, layers=4, heads=4, block=128):
    nn, F = T.nn, T.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
            self.register_buffer("mask", T.tril(T.ones(block, block)).view(1, 1, block, block))

        def forward(self, x):
            B, L, C = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q = q.view(B, L, heads, C // heads).transpose(1, 2)
            k = k.view(B, L, heads, C // heads).transpose(1, 2)
            v = v.view(B, L, heads, C // heads).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // heads))
            att = att.masked_fill(self.mask[:, :, :L, :L] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(B, L, C)
            x = x + self.proj(y)
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(block, d)
            self.blocks = nn.ModuleList([Block() for _ in range(layers)])
            self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

        def forward(self, idx, targets=None):
            B, L = idx.shape
            x = self.tok(idx) + self.pos(T.arange(L))
            for blk in self.blocks:
                x = blk(x)
            logits = self.head(self.ln(x))
            if targets is None:
                return logits
            return F.cross_entropy(logits.view(-1, vocab), targets.view(-1))

    return GPT()


def gpt_step(T):
    model = make_gpt(T)
    opt = T.optim.AdamW(model.parameters(), lr=3e-4)
    idx, tgt = T.randint(0, 256, (8, 128)), T.randint(0, 256, (8, 128))

    def step():
        opt.zero_grad()
        loss = model(idx, tgt)
        loss.backward()
        opt.step()
    return step


def dataloader_epoch(T):
    data = T.utils.data
    ds = data.TensorDataset(T.randn(60000, 784), T.randint(0, 10, (60000,)))
    loader = data.DataLoader(ds, batch_size=128, shuffle=True)

    def step():
        for xb, yb in loader:
            pass
    return step


WORKLOADS = [
    ("small op: 1-element add", small_add, 20000, "us"),
    ("16x16 matmul+relu+sum+backward", tiny_backward, 2000, "us"),
    ("add, 16M float32 elements", add_16m, 20, "ms"),
    ("sgemm 1024x1024", sgemm(1024), 20, "ms"),
    ("sgemm 4096x4096", sgemm(4096), 2, "ms"),
    ("softmax 4096x1024, dim 1", softmax_rows, 20, "ms"),
    ("layer_norm 4096x1024", layer_norm_rows, 20, "ms"),
    ("MLP train step (batch 128, AdamW)", mlp_step, 50, "ms"),
    ("SimpleCNN train step (batch 64, Adam)", cnn_step, 5, "ms"),
    ("GPT train step (d128, 4 layers, T=128, batch 8, AdamW)", gpt_step, 3, "ms"),
    ("DataLoader epoch 60000x784, shuffle, batch 128", dataloader_epoch, 1, "ms"),
]


def time_per_call(step, n):
    start = time.perf_counter()
    for _ in range(n):
        step()
    return (time.perf_counter() - start) / n


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="fewer repeats (a smoke test)")
    p.add_argument("--only", help="run only workloads whose name contains this text")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    repeats = 3 if args.quick else 7
    ember.set_num_threads(args.threads)
    libs = [("ember", ember)]
    if torch is not None:
        torch.set_num_threads(args.threads)
        libs.append(("torch", torch))
    else:
        print("PyTorch is not installed: ember's times only")
    print(f"{'workload':58s} {'ember':>12s} {'torch':>12s} {'ratio':>7s}")
    ratios = []
    for name, make, n, unit in WORKLOADS:
        if args.only and args.only not in name:
            continue
        scale = 1e6 if unit == "us" else 1e3
        steps = {}
        for label, T in libs:
            T.manual_seed(0)
            steps[label] = make(T)
            for _ in range(max(1, n // 10)):
                steps[label]()  # warm-up: allocations, caches, optimizer state
        times = {label: [] for label, _ in libs}
        for _ in range(repeats):
            for label, _ in libs:
                times[label].append(time_per_call(steps[label], n))
        med = {label: statistics.median(v) * scale for label, v in times.items()}
        if "torch" in med:
            ratio = med["ember"] / med["torch"]
            ratios.append(ratio)
            print(f"{name:58s} {med['ember']:9.2f} {unit} {med['torch']:9.2f} {unit} {ratio:7.2f}")
        else:
            print(f"{name:58s} {med['ember']:9.2f} {unit}")
    if ratios:
        geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"{'geometric mean of ratios':58s} {'':12s} {'':12s} {geo:7.2f}")


if __name__ == "__main__":
    main()
