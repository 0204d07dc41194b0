#!/usr/bin/env bash
# Installs what building and testing ember needs: Debian's packages, then a virtual environment
# .venv (from /usr/bin/python3 with the system site-packages, so Debian's NumPy and, with --bench,
# PyTorch are visible) holding nanobind, scikit-build-core and pytest from PyPI. Idempotent and
# quick when everything is already there. Usage: scripts/setup.sh [--bench | --fuzz]  (--bench adds PyTorch,
# torchvision and libtorch's headers for the side-by-side benchmarks, --fuzz clang and libFuzzer).
set -euo pipefail
pkgs=(build-essential cmake ninja-build ccache libopenblas-openmp-dev libdnnl-dev libgtest-dev libgmock-dev zlib1g-dev libgloo-dev dataset-fashion-mnist
      python3-dev python3-venv python3-numpy)
if [[ "${1:-}" == "--bench" ]]; then pkgs+=(python3-torch python3-torchvision libtorch-dev); fi
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

# The Python side: nanobind builds ember._C; pytest runs tests/python.
venv="$(dirname "$0")/../.venv"
if [[ ! -x "$venv/bin/python" ]]; then
  /usr/bin/python3 -m venv --system-site-packages "$venv"
fi
if ! "$venv/bin/python" -c "import nanobind, pytest, scikit_build_core" >/dev/null 2>&1; then
  echo "setup: installing nanobind, scikit-build-core and pytest into .venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "nanobind>=2.0" "scikit-build-core>=0.10" "pytest>=7"
fi
# onnxruntime in an environment of its own (.venv-ort, over Debian's numpy): tests/python/test_onnx.py
# runs the files ember.onnx.export writes there; without it (no network) those tests skip.
ort="$(dirname "$0")/../.venv-ort"
if [[ ! -x "$ort/bin/python" ]] || ! "$ort/bin/python" -c "import onnxruntime" >/dev/null 2>&1; then
  [[ -x "$ort/bin/python" ]] || /usr/bin/python3 -m venv --system-site-packages "$ort"
  echo "setup: installing onnxruntime into .venv-ort"
  "$ort/bin/python" -m pip install -q --disable-pip-version-check "onnxruntime>=1.17" ||
    echo "setup: onnxruntime could not be installed; the ONNX tests will skip"
fi
# --bench: Hugging Face transformers in its own environment (.venv-hf, over Debian's torch 1.13:
# transformers 4.44 is the last release that runs on it), for the GPT-2 compatibility tests
# (tests/python/test_gpt2_hf.py skips without it).
if [[ "${1:-}" == "--bench" ]]; then
  hf="$(dirname "$0")/../.venv-hf"
  [[ -x "$hf/bin/python" ]] || /usr/bin/python3 -m venv --system-site-packages "$hf"
  if ! "$hf/bin/python" -c "import transformers, safetensors" >/dev/null 2>&1; then
    echo "setup: installing transformers 4.44 into .venv-hf"
    "$hf/bin/python" -m pip install -q --disable-pip-version-check "transformers==4.44.2" "safetensors"
  fi
fi
