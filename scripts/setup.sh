#!/usr/bin/env bash
# Installs, by name, every package the build and the tests need on a fresh
# Debian 12 machine (the CUDA Toolkit is expected at /usr/local/cuda).
set -euo pipefail
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

debs=(cmake g++ make clang-14 libclang-rt-14-dev python3 python3-pip python3-venv python3-dev
      nlohmann-json3-dev llvm-14-dev
      llvm-14-tools libgtest-dev libgmock-dev zlib1g-dev libtinfo-dev)
missing=()
for p in "${debs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi

# NumPy computes the golden values of the interpreter tests; lit drives the
# FileCheck suite (LLVM 14's copy is used when present).
python3 -c "import numpy" 2>/dev/null ||
  python3 -m pip install -q numpy || python3 -m pip install -q --break-system-packages numpy
# The ONNX importer (python/cgc) reads models with onnx; its 1.22 wheel also
# holds the backend node tests the importer is checked against.
python3 -c "import onnx" 2>/dev/null ||
  python3 -m pip install -q onnx==1.22.0 ||
  python3 -m pip install -q --break-system-packages onnx==1.22.0 ||
  echo "setup: warning: onnx 1.22.0 could not be installed; the ONNX tests will report skipped"
# The Python package's binding of the runtime is built with nanobind; its
# wheel is packed with setuptools and wheel (0.40 or later: `wheel tags`).
python3 -c "import nanobind" 2>/dev/null ||
  python3 -m pip install -q nanobind==3.1.0 ||
  python3 -m pip install -q --break-system-packages nanobind==3.1.0
python3 -c "import setuptools" 2>/dev/null ||
  python3 -m pip install -q setuptools || python3 -m pip install -q --break-system-packages setuptools
python3 -c "import sys, wheel; sys.exit(tuple(map(int, wheel.__version__.split('.')[:2])) < (0, 40))" \
  2>/dev/null || python3 -m pip install -q "wheel>=0.40" ||
  python3 -m pip install -q --break-system-packages "wheel>=0.40"
if [ ! -f /usr/lib/llvm-14/build/utils/lit/lit.py ] && ! command -v lit >/dev/null; then
  python3 -m pip install -q lit || python3 -m pip install -q --break-system-packages lit
fi
[ -x /usr/local/cuda/bin/nvcc ] || { echo "setup: the CUDA Toolkit is missing at /usr/local/cuda" >&2; exit 1; }
echo "setup: ok"
