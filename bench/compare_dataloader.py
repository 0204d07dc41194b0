#!/usr/bin/python3
"""DataLoader epochs in ember (bench_dataloader) and PyTorch side by side, with ratios.

    /usr/bin/python3 bench/compare_dataloader.py [path/to/bench_dataloader] [--threads N] [--repeats R]

Workloads: one shuffled epoch over a 60000x784 float TensorDataset (batch 128); an epoch of 10000
28x28 uint8 images through RandomRotation(15) + RandomAffine(translate 0.1, scale 0.9-1.1) (both
bilinear) + Resize(56) + ToTensor-equivalent + Normalize, with 0, 1 and 2 workers (threads in
ember, processes in PyTorch). Needs python3-torch and python3-torchvision.
"""
import argparse, os, statistics, subprocess, time

import torch
from torch.utils.data import DataLoader, Dataset, TensorDataset


def median_epoch_ms(loader, repeats):
    def epoch():
        t0 = time.perf_counter()
        n = 0
        for x, _ in loader:
            n += x.shape[0]
        assert n > 0
        return (time.perf_counter() - t0) * 1e3
    epoch()
    return statistics.median(epoch() for _ in range(repeats))


class Heavy(Dataset):
    def __init__(self, images, labels):
        import torchvision.transforms as T
        I = T.InterpolationMode.BILINEAR
        self.images, self.labels = images, labels
        self.tf = T.Compose([T.RandomRotation(15, interpolation=I), T.RandomAffine(0, (0.1, 0.1), (0.9, 1.1), interpolation=I),
                             T.Resize((56, 56), antialias=False), T.ConvertImageDtype(torch.float32), T.Normalize((0.5,), (0.5,))])

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.tf(self.images[i].unsqueeze(0)), self.labels[i]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("binary", nargs="?", default="build/bench/bench_dataloader")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args()
    out = subprocess.run([a.binary, "--threads", str(a.threads), "--repeats", str(a.repeats)], check=True,
                         capture_output=True, text=True).stdout
    ember = {line.split()[0]: float(line.split()[1]) for line in out.splitlines() if line.strip()}

    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    rows = TensorDataset(torch.randn(60000, 784), torch.randint(0, 10, (60000,)))
    ref = {"loader_epoch_60000x784_b128": median_epoch_ms(DataLoader(rows, batch_size=128, shuffle=True), a.repeats)}
    heavy = Heavy(torch.randint(0, 256, (10000, 28, 28), dtype=torch.uint8), torch.randint(0, 10, (10000,)))
    for w in (0, 1, 2):
        loader = DataLoader(heavy, batch_size=64, shuffle=True, num_workers=w, persistent_workers=w > 0)
        ref[f"transform_epoch_10000_w{w}"] = median_epoch_ms(loader, max(1, a.repeats // 2))

    print(f"{'workload':34} {'ember ms':>10} {'torch ms':>10} {'ratio':>7}")
    for k, v in ember.items():
        print(f"{k:34} {v:10.1f} {ref[k]:10.1f} {v / ref[k]:7.2f}")
    w0, w2 = ember["transform_epoch_10000_w0"], ember["transform_epoch_10000_w2"]
    print(f"ember speed-up with 2 workers over 0: {w0 / w2:.2f}x; torch: "
          f"{ref['transform_epoch_10000_w0'] / ref['transform_epoch_10000_w2']:.2f}x")


if __name__ == "__main__":
    main()
