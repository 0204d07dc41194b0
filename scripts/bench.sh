#!/usr/bin/env bash
# Benchmarks ember against PyTorch (Debian's python3-torch, 2 threads) on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --bench
scripts/build.sh bench_ops
/usr/bin/python3 bench/compare_torch.py build/bench/bench_ops
