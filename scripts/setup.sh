#!/usr/bin/env bash
# Installs what building and testing ember needs, from Debian's packages. Idempotent and quick
# when everything is already there. Usage: scripts/setup.sh [--bench | --fuzz]  (--bench adds PyTorch
# and torchvision for the side-by-side benchmarks, --fuzz clang and libFuzzer).
set -euo pipefail
pkgs=(build-essential cmake ninja-build ccache libopenblas-openmp-dev libgtest-dev libgmock-dev zlib1g-dev dataset-fashion-mnist)
if [[ "${1:-}" == "--bench" ]]; then pkgs+=(python3-torch python3-torchvision); fi
if [[ "${1:-}" == "--fuzz" ]]; then pkgs+=(clang libclang-rt-14-dev libomp-14-dev); fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
