"""The seeds' ImageNet training pipeline (RandomResizedCrop(224), RandomHorizontalFlip, ColorJitter,
to float, Normalize) on a 3x256x320 uint8 image, ember.vision against torchvision (the .venv's
0.14 with Debian's torch 1.13), one thread each, ms per image, same process.

    PYTHONPATH=python:build/python .venv/bin/python bench/bench_vision_transforms.py
"""
import time

import numpy as np

import ember
from ember.vision import transforms as ET

try:
    import torch
    import torchvision.transforms as TT
except ImportError:  # ember alone
    torch = TT = None


def pipeline(T, antialias):
    to_float = ET.ToTensor() if T is ET else TT.ConvertImageDtype(torch.float32)  # (torchvision's ToTensor takes no tensors)
    return T.Compose([T.RandomResizedCrop(224, antialias=antialias), T.RandomHorizontalFlip(),
                      T.ColorJitter(0.2, 0.2, 0.2, 0.1), to_float,
                      T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])


def per_call_ms(f, x, calls=30, rounds=3):
    for _ in range(3):
        f(x)
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(calls):
            f(x)
        best = min(best, (time.perf_counter() - t) / calls * 1000)
    return best


def main():
    ember.set_num_threads(1)
    if torch is not None:
        torch.set_num_threads(1)
    img = np.random.default_rng(0).integers(0, 256, (3, 256, 320), dtype=np.uint8)
    cases = [(f"pipeline, antialias={aa}", pipeline(ET, aa), pipeline(TT, aa) if TT else None) for aa in (False, True)]
    cases += [("adjust_hue 0.1", lambda x: ET.functional.adjust_hue(x, 0.1),
               TT and (lambda x: TT.functional.adjust_hue(x, 0.1))),
              ("adjust_contrast 1.2", lambda x: ET.functional.adjust_contrast(x, 1.2),
               TT and (lambda x: TT.functional.adjust_contrast(x, 1.2)))]
    print(f"{'case':28s} {'ember ms':>9s} {'torchvision ms':>15s} {'ratio':>6s}")
    for name, ours, theirs in cases:
        e = per_call_ms(ours, ember.from_numpy(img))
        t = per_call_ms(theirs, torch.from_numpy(img)) if theirs else float("nan")
        print(f"{name:28s} {e:9.2f} {t:15.2f} {e / t:6.2f}")


if __name__ == "__main__":
    main()
