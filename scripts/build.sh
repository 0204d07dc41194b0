#!/usr/bin/env bash
# Configures and builds ember (Release, Ninja) into build/: the library, tests, benchmarks,
# examples and the Python extension (build/python/ember/_C*.so, with .venv's Python).
# Extra arguments are ninja targets.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$PWD/.venv/bin/python" >/dev/null
ninja -C build "$@"
