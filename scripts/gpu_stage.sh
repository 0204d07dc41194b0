#!/usr/bin/env bash
# Prepares a GPU session's run on a lent device machine (the `device` tool): builds ember with CUDA
# here into build-gpu/ (portable x86-64, no -march=native: the device's CPU is not this one; the
# Python extension for Python 3.12, the device image's interpreter) and copies what the device needs
# into gpu/ and gpu.tar.xz (git-ignored through .git/info/exclude; the tool carries the tarball): libember.so with the
# Debian libraries the device image lacks (OpenBLAS, oneDNN, gfortran), the C++ test
# binaries and the extension. scripts/gpu_check.sh runs it there. The device has no network and a
# 64 MiB limit on what travels, so nothing else goes.
#   scripts/gpu_stage.sh            # then: device run "bash scripts/gpu_check.sh" with carry ["gpu.tar.xz"]
set -euo pipefail
cd "$(dirname "$0")/.."
py312=/root/.pyenv/versions/3.12.1/bin/python
if [[ ! -x .venv312/bin/python ]]; then
  "$py312" -m venv .venv312
  .venv312/bin/python -m pip install -q nanobind
fi
grep -qx "/.venv312/" .git/info/exclude || echo "/.venv312/" >> .git/info/exclude
for p in /gpu/ /gpu.tar.xz; do grep -qx "$p" .git/info/exclude || echo "$p" >> .git/info/exclude; done
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_NATIVE=OFF -DEMBER_BUILD_BENCH=OFF \
      -DPython_EXECUTABLE="$PWD/.venv312/bin/python" >/dev/null
ninja -C build-gpu

rm -rf gpu && mkdir -p gpu/lib gpu/bin gpu/python/ember
cp -L build-gpu/libember.so* gpu/lib/ 2>/dev/null || true
# The Debian libraries libember needs that the device image (Ubuntu, CUDA, PyTorch) does not have.
ldd build-gpu/libember.so | awk '/=> \//{print $3}' |
  grep -E 'openblas|dnnl|gfortran|quadmath|OpenCL|gloo|hiredis|ibverbs|libnl-' | while read -r lib; do cp -L "$lib" gpu/lib/; done
for t in build-gpu/tests/cpp/test_*; do
  [[ -x "$t" && -f "$t" ]] && cp "$t" gpu/bin/
done
cp build-gpu/python/ember/_C*.so gpu/python/ember/
# The training demo and a 20,000-image slice of Fashion-MNIST (the whole set would not fit the
# 64 MiB that travels): the demo stage trains on the GPU with it.
cp build-gpu/train_fashion_mnist gpu/bin/
mkdir -p gpu/data
python3 - gpu/data <<'PY'
import gzip, shutil, struct, sys
src, dst, n = "/usr/share/datasets/fashion-mnist/", sys.argv[1] + "/", 20000
with gzip.open(src + "train-images-idx3-ubyte.gz") as f:
    magic, _, rows, cols = struct.unpack(">IIII", f.read(16))
    images = f.read(n * rows * cols)
with gzip.open(dst + "train-images-idx3-ubyte.gz", "wb", 6) as f:
    f.write(struct.pack(">IIII", magic, n, rows, cols) + images)
with gzip.open(src + "train-labels-idx1-ubyte.gz") as f:
    magic, _ = struct.unpack(">II", f.read(8))
    labels = f.read(n)
with gzip.open(dst + "train-labels-idx1-ubyte.gz", "wb", 6) as f:
    f.write(struct.pack(">II", magic, n) + labels)
for name in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
    shutil.copy(src + name, dst + name)
PY
strip --strip-unneeded gpu/lib/*.so* gpu/bin/* gpu/python/ember/*.so 2>/dev/null || true
# xz: 170 MB of libraries and binaries travel as ~27 MB, the data slice adds 13 MB (the limit is 64 MiB).
tar -cf - gpu | xz -T2 -6 > gpu.tar.xz
ls -la gpu.tar.xz
