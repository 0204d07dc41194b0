#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, instrumented library with ASan/UBSan) and runs each for a
# bounded time from the seed corpus in fuzz/corpus/. Usage: scripts/fuzz.sh [seconds per target]
# A crash, leak or sanitizer report fails the script (libFuzzer exits non-zero).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
scripts/setup.sh --fuzz
# -O1 with line tables: libFuzzer's recommended build, symbolised reports, and a third of -O2 -g's
# compile time under the sanitizers (CMakeLists.txt builds the kernel files at -O0 here).
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMBER_FUZZ=ON \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" \
  -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_BENCH=OFF -DEMBER_PYTHON=OFF -DEMBER_BUILD_EXAMPLES=OFF >/dev/null
ninja -C build-fuzz fuzz_load_pt fuzz_load_safetensors fuzz_load_export
for target in fuzz_load_pt fuzz_load_safetensors fuzz_load_export; do
  corpus="fuzz/corpus/${target#fuzz_}"
  work="$(mktemp -d)"
  cp "$corpus"/* "$work"/ 2>/dev/null || true
  echo "fuzz: $target for ${seconds}s"
  ASAN_OPTIONS=detect_leaks=1 ./build-fuzz/"$target" -max_total_time="$seconds" -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 "$work" 2>&1 | tail -n 12
  rm -rf "$work"
done
echo "fuzz: no crashes"
