#!/usr/bin/env bash
# Benchmarks ember against PyTorch (Debian's python3-torch, 2 threads) on this machine: the C++
# APIs side by side in one process (bench/libtorch/bench_vs_libtorch.cpp), then DataLoader
# epochs (C++ side against Python torch), then the same Python workloads run through
# `import ember` and `import torch` (bench/compare_python.py). `--train` adds one epoch of the
# training demo in both (a few minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --bench
cmake -S . -B build -DEMBER_BENCH_LIBTORCH=ON >/dev/null
scripts/build.sh bench_dataloader bench_vs_libtorch train_fashion_mnist _C
build/bench/bench_vs_libtorch
/usr/bin/python3 bench/compare_dataloader.py build/bench/bench_dataloader
PYTHONPATH="$PWD/python:$PWD/build/python" .venv/bin/python bench/compare_python.py
if [[ "${1:-}" == "--train" ]]; then
  ./build/train_fashion_mnist --epochs 1 --no-progress --no-plot --out /tmp/ember_bench_run | grep -E "^ +1 \|"
  /usr/bin/python3 bench/train_fashion_mnist_torch.py --epochs 1
fi
