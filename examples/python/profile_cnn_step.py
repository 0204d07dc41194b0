"""Profile the seeds' CNN training step (seed 003's SimpleCNN on Fashion-MNIST) with
ember.profiler: a schedule that skips the first steps, record_function regions, the op table by
self CPU time and by input shape, a Chrome trace and a flame-graph stack file.

    PYTHONPATH=python:build/python python examples/python/profile_cnn_step.py [--device cuda] [--out DIR]

Open DIR/*.pt.trace.json in https://ui.perfetto.dev (or chrome://tracing): one row per thread
(the main thread and the DataLoader workers), ops nested under the forward / backward /
optimizer regions, arrows from each forward op to its backward node, the memory counter, and on
a GPU the kernels on their streams with arrows from their launches.
"""
import argparse
import glob
import os
import sys

import ember as torch
import ember.nn as nn
from ember.profiler import ProfilerActivity, profile, record_function, schedule, tensorboard_trace_handler
from ember.utils.data import DataLoader, TensorDataset

FASHION_MNIST = "/usr/share/datasets/fashion-mnist"


class SimpleCNN(nn.Module):
    """Seed 003's SimpleCNN: two conv-BN-ReLU-pool blocks and a two-layer classifier."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.conv_layers = nn.Sequential(
            nn.Conv2d(1, 32, kernel_size=3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2, 2),
            nn.Conv2d(32, 64, kernel_size=3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2, 2))
        self.fc_layers = nn.Sequential(nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.5),
                                       nn.Linear(128, num_classes))

    def forward(self, x):
        return self.fc_layers(self.conv_layers(x))


def load_data(n):
    """n Fashion-MNIST training images (random ones when the dataset is not installed)."""
    if os.path.isdir(FASHION_MNIST):
        from ember.vision.datasets import FashionMNIST
        ds = FashionMNIST(FASHION_MNIST, train=True)
        x = ds.data[:n].float().div(255.0).unsqueeze(1)
        y = ds.targets[:n]
    else:
        print(f"{FASHION_MNIST} not found: random images instead", file=sys.stderr)
        x, y = torch.rand(n, 1, 28, 28), torch.randint(0, 10, (n,))
    return TensorDataset((x - 0.2860) / 0.3530, y)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--out", default="profile_cnn")
    ap.add_argument("--batch-size", type=int, default=64)
    args = ap.parse_args()
    torch.manual_seed(0)
    device = torch.device(args.device)
    loader = DataLoader(load_data(args.batch_size * 8), batch_size=args.batch_size, shuffle=True, num_workers=2)
    model = SimpleCNN().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    criterion = nn.CrossEntropyLoss()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])

    # Step 0 waits, step 1 warms up (traced, thrown away), steps 2-4 are recorded.
    with profile(activities=activities, schedule=schedule(wait=1, warmup=1, active=3, repeat=1),
                 on_trace_ready=tensorboard_trace_handler(args.out, worker_name="cnn"),
                 record_shapes=True, profile_memory=True, with_stack=True, with_flops=True) as prof:
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            with record_function("forward"):
                loss = criterion(model(images), labels)
            with record_function("backward"):
                loss.backward()
            with record_function("optimizer_step"):
                optimizer.step()
                optimizer.zero_grad()
            prof.step()

    print(prof.key_averages().table(sort_by="self_cuda_time_total" if device.type == "cuda" else "self_cpu_time_total",
                                    row_limit=15))
    print(prof.key_averages(group_by_input_shape=True).table(sort_by="cpu_time_total", row_limit=8))
    prof.export_stacks(os.path.join(args.out, "cnn.stacks.txt"), "self_cpu_time_total")
    traces = sorted(glob.glob(os.path.join(args.out, "*.pt.trace.json")))
    print(f"trace: {traces[-1]} (open it in https://ui.perfetto.dev)")
    print(f"stacks for flamegraph.pl: {os.path.join(args.out, 'cnn.stacks.txt')}")


if __name__ == "__main__":
    main()
