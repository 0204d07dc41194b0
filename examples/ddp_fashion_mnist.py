"""The seeds' CNN on Fashion-MNIST with DistributedDataParallel, one process per worker:

    scripts/ember-run --nproc_per_node=2 examples/ddp_fashion_mnist.py --epochs 2
    python examples/ddp_fashion_mnist.py --epochs 2          # one process, the same global batch

Each of the N processes reads its 1/N of every epoch (DistributedSampler, reshuffled by
set_epoch) with batch --batch/N, so the global batch and the number of steps match the
single-process run; DDP averages the gradients, so both train the same model up to the
shards' order. Rank 0 evaluates, prints the table and saves the checkpoint (atomically).
"""
import argparse
import os
import time

import ember as torch
import ember.distributed as dist
import ember.nn as nn
from ember.nn.parallel import DistributedDataParallel as DDP
from ember.utils.data import DataLoader, DistributedSampler, TensorDataset
from ember.vision import datasets

DATA_ROOT = "/usr/share/datasets/fashion-mnist"  # Debian's dataset-fashion-mnist


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


def tensors(train, limit):
    ds = datasets.FashionMNIST(root=DATA_ROOT, train=train)
    x = ds.data[:limit].float().div(255.0).sub(0.2860).div(0.3530).unsqueeze(1)  # Fashion-MNIST's mean/std
    return TensorDataset(x, ds.targets[:limit])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=128, help="the global batch (split over the processes)")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--train-samples", type=int, default=60000)
    ap.add_argument("--out", default="ddp_checkpoint.pt")
    args = ap.parse_args()

    distributed = "RANK" in os.environ
    if distributed:
        dist.init_process_group("gloo")
    rank, world = (dist.get_rank(), dist.get_world_size()) if distributed else (0, 1)
    torch.manual_seed(0)
    train, test = tensors(True, args.train_samples), tensors(False, 10000)
    sampler = DistributedSampler(train, seed=0) if distributed else None
    loader = DataLoader(train, batch_size=args.batch // world, sampler=sampler, shuffle=sampler is None)
    model = SimpleCNN()
    if distributed:
        model = DDP(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    if rank == 0:
        print(f"{world} process(es), global batch {args.batch} ({args.batch // world} per process), "
              f"{len(train)} training images")
        print(" epoch | train loss | test acc | time  | images/s")
    for epoch in range(1, args.epochs + 1):
        if sampler is not None:
            sampler.set_epoch(epoch)
        model.train()
        start, total, count = time.perf_counter(), 0.0, 0
        for x, y in loader:
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(y)
            count += len(y)
        seconds = time.perf_counter() - start
        stats = torch.tensor([total, float(count)], dtype=torch.float64)
        if distributed:
            dist.all_reduce(stats)  # the epoch's loss over every process's shard
        if rank == 0:
            net = model.module if distributed else model
            net.eval()
            with torch.no_grad():
                correct = sum((net(x).argmax(1) == y).sum().item()
                              for x, y in DataLoader(test, batch_size=1000))
            print(f" {epoch:5d} | {stats[0].item() / stats[1].item():10.4f} | {correct / len(test):7.2%} | "
                  f"{seconds:4.1f}s | {stats[1].item() / seconds:8.0f}", flush=True)
    if rank == 0:
        torch.save((model.module if distributed else model).state_dict(), args.out)
        print(f"saved {args.out}")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
