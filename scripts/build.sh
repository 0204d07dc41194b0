#!/usr/bin/env bash
# Configures and builds ember (Release, Ninja) into build/. Extra arguments are ninja targets.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build "$@"
