#!/usr/bin/env bash
# Runs on a lent GPU machine over what scripts/gpu_stage.sh put in gpu/: the C++ tests (every
# EMBER_DEVICE_TEST gains its cuda:0 case there), the CUDA Python tests against the PyTorch of the
# device image, bench/bench_cuda.py beside that PyTorch, then the rest of the Python suite. Each
# stage has its own time limit so one hang cannot eat the lease; logs go to $OUT (at most 8 files
# come back) and a summary is printed last (the tool returns the output's tail).
#   bash scripts/gpu_check.sh [stages]     stages: any of cpp cudapy bench sdpa gpt2 gpt2c compile demo pyall (default: all but
#   pyall, the whole Python suite, which is mostly the CPU's and takes longer)
set -u
root=$PWD
OUT=${OUT:-/tmp/gpu_out}
mkdir -p "$OUT"
stages=${*:-cpp cudapy bench demo}
if [[ -f gpu.tar.xz && ! -d gpu ]]; then tar -xJf gpu.tar.xz; fi
libdirs=$root/gpu/lib
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [[ -d $d ]] && libdirs+=:$d; done
# The PyTorch wheel's CUDA libraries, where the image has no toolkit copy of one.
for d in $(python3 - <<'EOF' 2>/dev/null
import glob, os, site
for s in site.getsitepackages():
    for d in glob.glob(os.path.join(s, "nvidia", "*", "lib")) + glob.glob(os.path.join(s, "nvidia", "cu13", "lib")):
        print(d)
EOF
); do libdirs+=:$d; done
export LD_LIBRARY_PATH=$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONPATH=$root/python:$root/gpu/python PYTHONUNBUFFERED=1
summary=()

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
lscpu | grep -m1 "Model name"
missing=$(ldd gpu/lib/libember.so | grep "not found")
[[ -n $missing ]] && echo "libember.so: missing libraries: $missing"

if [[ " $stages " == *" cpp "* ]]; then
  start=$(date +%s)
  mkdir -p /tmp/cpp
  ls gpu/bin/test_* | xargs -P 12 -I{} sh -c \
    'n=$(basename {}); timeout 120 {} --gtest_brief=1 > /tmp/cpp/$n.log 2>&1; echo "$n rc=$?" >> /tmp/cpp/$n.log'
  cat /tmp/cpp/*.log > "$OUT/cpp.log"
  failed_bins=$(grep -l "rc=[1-9]" /tmp/cpp/*.log | xargs -r -n1 basename | sed 's/\.log$//' | tr '\n' ' ')
  cuda_cases=$(grep -h "on/cuda_0" /tmp/cpp/*.log | wc -l)
  summary+=("cpp: $(ls gpu/bin/test_* | wc -l) binaries in $(( $(date +%s) - start )) s; failing: ${failed_bins:-none}")
  grep -h "^\[  FAILED  \]" /tmp/cpp/*.log | sort -u | head -60 > /tmp/cpp_failed.txt
  # A binary that crashed: its backtrace (cuda-gdb also debugs host code), into the log.
  for n in $(grep -l "rc=1[23][0-9]" /tmp/cpp/*.log | head -3 | xargs -r -n1 basename | sed 's/\.log$//'); do
    echo "== $n crashed; backtrace:" >> /tmp/cpp_failed.txt
    timeout 60 cuda-gdb -batch -ex run -ex bt --args gpu/bin/$n --gtest_brief=1 2>&1 | grep -E "^#|signal" | head -15 >> /tmp/cpp_failed.txt
  done
fi

if [[ " $stages " == *" cudapy "* ]]; then
  start=$(date +%s)
  timeout 150 python3 -m pytest -q -p no:cacheprovider -rfEs -n 8 --timeout=60 \
    tests/python/test_cuda16.py tests/python/test_cuda16_gemm_random.py tests/python/test_cuda16_index.py \
    tests/python/test_cuda16_reduce.py tests/python/test_cuda16_train.py tests/python/test_cuda17_nn.py tests/python/test_cuda_memory_history.py \
    tests/python/test_autocast.py tests/python/test_amp.py tests/python/test_half_dtypes.py \
    tests/python/test_default_device.py tests/python/test_profiler.py tests/python/test_serialization.py \
    tests/python/test_tensor.py tests/python/test_namespaces15.py tests/python/test_distributed.py \
    tests/python/test_export.py tests/python/test_library.py tests/python/test_foreach.py tests/python/test_cuda_graphs.py \
    tests/python/test_compile_dtypes_devices.py tests/python/test_compile_split.py tests/python/test_compile_random_programs.py tests/python/test_compile_random_models.py \
    > "$OUT/cudapy.log" 2>&1
  summary+=("cudapy ($(( $(date +%s) - start )) s): $(grep -E '^[0-9]+ (passed|failed)|^=+ .*(passed|failed|error)' "$OUT/cudapy.log" | tail -1)")
fi

if [[ " $stages " == *" bench "* ]]; then
  timeout 90 python3 bench/bench_cuda.py > "$OUT/bench.log" 2>&1
  summary+=("bench rc=$?")
  timeout 120 python3 bench/bench_cuda_nn.py > "$OUT/bench_nn.log" 2>&1
  summary+=("bench_nn rc=$?")
fi

if [[ " $stages " == *" sdpa "* ]]; then
  timeout 150 python3 bench/bench_sdpa_cuda.py > "$OUT/sdpa.log" 2>&1
  summary+=("sdpa rc=$?")
fi

if [[ " $stages " == *" gpt2 "* ]]; then
  timeout 60 python3 bench/bench_gpt2_cuda.py > "$OUT/gpt2.log" 2>&1
  summary+=("gpt2 rc=$?")
  timeout 60 python3 bench/bench_gpt2_cuda.py --profile > "$OUT/gpt2_profile.log" 2>&1
fi

if [[ " $stages " == *" gpt2c "* ]]; then
  # the GPT-2 step beside torch eager and torch.compile (its compile takes a minute or more)
  timeout 200 python3 bench/bench_gpt2_cuda.py --compile > "$OUT/gpt2c.log" 2>&1
  summary+=("gpt2c rc=$?")
fi

if [[ " $stages " == *" compile "* ]]; then
  # ember.compile's NVRTC kernels beside torch.compile (inductor/triton) on the chain rows, and
  # train steps under mode="reduce-overhead" (CUDA graphs in training, both compilers)
  timeout 240 python3 bench/bench_compile.py --cuda > "$OUT/compile.log" 2>&1
  summary+=("compile rc=$?")
fi

if [[ " $stages " == *" demo "* ]]; then
  # The README's demo on the GPU (2 epochs of the 20,000-image slice), fp32 then fp16 autocast.
  for amp in "" "--amp"; do
    start=$(date +%s)
    timeout 120 gpu/bin/train_fashion_mnist --device cuda --data gpu/data --epochs 2 --no-progress $amp \
      --out /tmp/demo$amp > "/tmp/demo$amp.log" 2>&1
    rc=$?
    summary+=("demo $amp rc=$rc ($(( $(date +%s) - start )) s): $(grep -iE "test acc|accuracy" "/tmp/demo$amp.log" | tail -1)")
  done
  # one file for both (at most 8 files come back; the curves stay there)
  cat /tmp/demo.log /tmp/demo--amp.log > "$OUT/demo.log"
fi

if [[ " $stages " == *" pyall "* ]]; then
  start=$(date +%s)
  timeout 240 python3 -m pytest -q -p no:cacheprovider -rfEs -n 12 --timeout=120 tests/python \
    --deselect tests/python/test_examples.py > "$OUT/pyall.log" 2>&1
  summary+=("pyall ($(( $(date +%s) - start )) s): $(grep -E '^[0-9]+ (passed|failed)|^=+ .*(passed|failed|error)' "$OUT/pyall.log" | tail -1)")
fi

echo "==== failures"
[[ -f /tmp/cpp_failed.txt ]] && cat /tmp/cpp_failed.txt
for f in cudapy pyall; do [[ -f $OUT/$f.log ]] && grep -E "^(FAILED|ERROR) " "$OUT/$f.log" | head -40; done
[[ -f $OUT/bench.log ]] && { echo "==== bench"; tail -20 "$OUT/bench.log"; }
[[ -f $OUT/bench_nn.log ]] && { echo "==== bench_nn"; tail -24 "$OUT/bench_nn.log"; }
[[ -f $OUT/sdpa.log ]] && { echo "==== sdpa"; tail -15 "$OUT/sdpa.log"; }
[[ -f $OUT/gpt2.log ]] && { echo "==== gpt2"; grep -v -i warn "$OUT/gpt2.log" | tail -5; }
[[ -f $OUT/gpt2c.log ]] && { echo "==== gpt2c"; grep -v -i warn "$OUT/gpt2c.log" | tail -8; }
for f in demo demo--amp; do
  [[ -f /tmp/$f.log ]] && { echo "==== $f"; grep -E "^ +[0-9]+ \||device|best test|trained|rror" "/tmp/$f.log" | head -12; }
done
echo "==== summary"
printf '%s\n' "${summary[@]}"
