#!/usr/bin/python3
"""The training demo's twin in PyTorch: same models, data, batch size, optimizer and schedule as
examples/train_fashion_mnist.cpp, so the time per epoch can be compared on one machine.

    /usr/bin/python3 bench/train_fashion_mnist_torch.py --model cnn --epochs 1 --threads 2

Needs Debian's python3-torch and python3-torchvision (scripts/setup.sh --bench installs them).
The data pipeline is torchvision's FashionMNIST with ToTensor + Normalize per sample, as the
seeds' script does; --pipeline tensor pre-normalises everything into a TensorDataset instead.
"""
import argparse, gzip, os, shutil, tempfile, time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class SimpleCNN(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv_layers = nn.Sequential(
            nn.Conv2d(1, 32, kernel_size=3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2, 2),
            nn.Conv2d(32, 64, kernel_size=3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2, 2))
        self.fc_layers = nn.Sequential(nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.5),
                                       nn.Linear(128, num_classes))

    def forward(self, x):
        return self.fc_layers(self.conv_layers(x))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Dropout(0.1), nn.Linear(256, 10))

    def forward(self, x):
        return self.net(x)


def read_idx(path):
    import numpy as np
    with gzip.open(path) as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return torch.from_numpy(np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims).copy())


def loaders(args):
    mean, std = 0.2860, 0.3530
    if args.pipeline == "torchvision":
        import torchvision
        import torchvision.transforms as T
        root = tempfile.mkdtemp()
        raw = os.path.join(root, "FashionMNIST", "raw")
        os.makedirs(raw)
        for name in ["train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                     "t10k-labels-idx1-ubyte"]:
            with gzip.open(os.path.join(args.data, name + ".gz")) as src, open(os.path.join(raw, name), "wb") as dst:
                shutil.copyfileobj(src, dst)
        tf = T.Compose([T.ToTensor(), T.Normalize((mean,), (std,))])
        train = torchvision.datasets.FashionMNIST(root, train=True, transform=tf)
        test = torchvision.datasets.FashionMNIST(root, train=False, transform=tf)
    else:
        def ds(prefix):
            x = read_idx(os.path.join(args.data, prefix + "-images-idx3-ubyte.gz")).float().div(255).sub(mean).div(std)
            y = read_idx(os.path.join(args.data, prefix + "-labels-idx1-ubyte.gz")).long()
            return TensorDataset(x.unsqueeze(1), y)
        train, test = ds("train"), ds("t10k")
    if args.limit_train:
        train = torch.utils.data.Subset(train, range(args.limit_train))
    kw = dict(batch_size=args.batch_size, num_workers=args.workers)
    return DataLoader(train, shuffle=True, **kw), DataLoader(test, **kw)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="cnn", choices=["cnn", "mlp"])
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--limit-train", type=int, default=0)
    p.add_argument("--pipeline", default="torchvision", choices=["torchvision", "tensor"])
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    train_loader, test_loader = loaders(args)
    model = SimpleCNN() if args.model == "cnn" else MLP()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs)
    crit = nn.CrossEntropyLoss()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, model {args.model}, "
          f"{sum(p.numel() for p in model.parameters()):,} params")
    for epoch in range(1, args.epochs + 1):
        t0 = time.time()
        model.train()
        tl = tc = n = 0
        for x, y in train_loader:
            out = model(x)
            loss = crit(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            tl += loss.item() * x.size(0); tc += (out.argmax(1) == y).sum().item(); n += x.size(0)
        train_time = time.time() - t0
        model.eval()
        el = ec = en = 0
        with torch.no_grad():
            for x, y in test_loader:
                out = model(x)
                el += crit(out, y).item() * x.size(0); ec += (out.argmax(1) == y).sum().item(); en += x.size(0)
        sched.step()
        dt = time.time() - t0
        print(f"epoch {epoch}: train loss {tl / n:.4f} acc {100 * tc / n:.2f}% | test loss {el / en:.4f} "
              f"acc {100 * ec / en:.2f}% | {dt:.1f}s ({train_time:.1f}s train, {n / train_time:.0f} samples/s)")


if __name__ == "__main__":
    main()
