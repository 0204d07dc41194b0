#!/usr/bin/env bash
# The README's test command: install dependencies, build everything, run every test.
# Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
start=$(date +%s)
scripts/build.sh
echo "build: $(( $(date +%s) - start )) s"
cd build
ctest --output-on-failure -j2 | tee ctest.log
