"""Trains the seeds' CNN on Fashion-MNIST for a short while, exports it, and saves the program
that examples/classify_exported.cpp runs from C++ without Python:

    PYTHONPATH=python:build/python .venv/bin/python examples/export_cnn.py --out cnn.ember
    build/classify_exported cnn.ember /usr/share/datasets/fashion-mnist
"""
import argparse
import time

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.vision.datasets import FashionMNIST


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--out", default="cnn.ember")
    ap.add_argument("--steps", type=int, default=300)
    args = ap.parse_args()
    ember.manual_seed(0)
    train = FashionMNIST(args.root, train=True)
    images = train.data.float().div(255).sub(0.2860).div(0.3530).unsqueeze(1)  # (N, 1, 28, 28)
    labels = train.targets
    model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(32 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = ember.optim.Adam(model.parameters(), lr=1e-3)
    start = time.time()
    for step in range(args.steps):
        idx = ember.randint(0, images.shape[0], (64,))
        loss = F.cross_entropy(model(images[idx]), labels[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0 or step == args.steps - 1:
            print(f"step {step:4d}  loss {loss.item():.3f}  ({time.time() - start:.1f} s)")
    model.eval()
    batch = ember.export.Dim("batch", max=4096)
    with ember.no_grad():  # a batch of any size of normalised images in, 10 logits each out
        program = ember.export.export(model, (ember.zeros(100, 1, 28, 28),), dynamic_shapes=({0: batch},))
    ember.export.save(program, args.out)
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
