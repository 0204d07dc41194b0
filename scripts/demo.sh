#!/usr/bin/env bash
# The README's main job: install what is needed (build tools, OpenBLAS, zlib, Debian's
# dataset-fashion-mnist), build, and train the seeds' MNIST CNN on Fashion-MNIST.
# Arguments go to the demo (scripts/demo.sh --model mlp --epochs 3; --help lists them).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh train_fashion_mnist
exec ./build/train_fashion_mnist "$@"
