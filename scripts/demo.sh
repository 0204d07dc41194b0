#!/usr/bin/env bash
# The README's main job: install dependencies, build, and run the example program.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh ember_example
./build/ember_example
