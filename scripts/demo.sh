#!/usr/bin/env bash
# The README's main job: install what is needed (build tools, OpenBLAS, zlib, Debian's
# dataset-fashion-mnist), build, and train the seeds' MNIST CNN on Fashion-MNIST.
# Arguments go to the demo (scripts/demo.sh --model mlp --epochs 3; --help lists them), except
# --nproc N: N processes with DistributedDataParallel, started by the ember-run launcher.
set -euo pipefail
cd "$(dirname "$0")/.."
nproc=1
args=()
while (($#)); do
  case "$1" in
    --nproc) nproc="$2"; shift 2 ;;
    --nproc=*) nproc="${1#--nproc=}"; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
scripts/setup.sh
if [[ "$nproc" == 1 ]]; then
  scripts/build.sh train_fashion_mnist
  exec ./build/train_fashion_mnist ${args[@]+"${args[@]}"}
fi
scripts/build.sh train_fashion_mnist _C   # the launcher is Python (ember.distributed.run)
exec scripts/ember-run --standalone --nproc_per_node="$nproc" --no_python ./build/train_fashion_mnist ${args[@]+"${args[@]}"}
