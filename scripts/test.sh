#!/usr/bin/env bash
# The README's test command: install dependencies, build everything (library, tests, Python
# extension), run every test: the C++ suite (ctest) and the Python suite (pytest, against the build
# tree; PyTorch-differential tests skip with a reason when torch is missing).
# Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
start=$(date +%s)
scripts/build.sh
echo "build: $(( $(date +%s) - start )) s"
(cd build && ctest --output-on-failure -j2 | tee ctest.log)
PYTHONPATH="$PWD/python:$PWD/build/python" .venv/bin/python -m pytest -q -p no:cacheprovider -rs tests/python \
  2>&1 | tee build/pytest.log
