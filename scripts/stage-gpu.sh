#!/usr/bin/env bash
# stage-gpu.sh BUILD_DIR [STAGE_DIR] : on the CPU machine, put what the GPU
# run needs into one small folder (ignored by git; carried to the GPU
# machine, which has no LLVM): the GPU gtest binaries and cgc, cgc-opt and
# cgc-rt (statically linked against LLVM, so they run there), and the Python
# package's wheel (STAGE_DIR/dist). The op cases
# and bench artifacts are staged on the GPU machine by gpu-run.sh (their
# inputs and weights would not fit the carried folder). Then, there:
#   scripts/gpu-run.sh STAGE_DIR
# ONNX's node tests that pass through the interpreter are staged here (the
# GPU machine has no onnx): STAGE_DIR/onnx-cases, for gpu-run.sh.
# CGC_STAGE_HERE=1 also stages the cases and bench artifacts here.
set -eu
BUILD=${1:?usage: stage-gpu.sh BUILD_DIR [STAGE_DIR]}
STAGE=${2:-build-gpu-stage}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$STAGE"
mkdir -p "$STAGE/bin" "$STAGE/test/gpu"
cp "$BUILD/tools/cgc" "$BUILD/tools/cgc-opt" "$STAGE/bin/"
cp "$BUILD/runtime/cgc-rt" "$STAGE/bin/" 2>/dev/null || true
cp "$BUILD/examples/serve/serve" "$STAGE/bin/" 2>/dev/null || true
cp "$BUILD/examples/distributed/train_ranks" "$STAGE/bin/" 2>/dev/null || true
# The Python package as a wheel for the GPU machine's Python (3.12), its
# extension built by a runtime-only build with CGC_STAGE_PYTHON (default: a
# Python 3.12 or later on the PATH or pyenv's).
PY312=${CGC_STAGE_PYTHON:-}
if [ -z "$PY312" ]; then
  for candidate in python3.12 "$(pyenv root 2>/dev/null)"/versions/3.1[2-9]*/bin/python3; do
    if "$candidate" -c 'import sys; assert sys.version_info >= (3, 12)' 2>/dev/null; then
      PY312=$candidate && break
    fi
  done
fi
if [ -n "$PY312" ]; then
  cmake -S "$ROOT" -B "$BUILD/python-gpu" -DCGC_RUNTIME_ONLY=ON -DCMAKE_BUILD_TYPE=Release \
    -DCGC_PYTHON_EXECUTABLE="$PY312" -Dnanobind_DIR="$(python3 -m nanobind --cmake_dir)" >/dev/null
  cmake --build "$BUILD/python-gpu" -j"$(nproc)" --target cgc_python_package >/dev/null
  CGC_DRIVER="$BUILD/tools/cgc" bash "$ROOT/scripts/build-wheel.sh" "$BUILD/python-gpu" "$STAGE/dist"
else
  echo "stage-gpu: no Python 3.12 or later here: no wheel staged (set CGC_STAGE_PYTHON)" >&2
fi
cp "$BUILD"/test/gpu/*_tests "$STAGE/test/gpu/"
if python3 -c "import onnx" 2>/dev/null; then
  python3 "$ROOT/test/onnx/node_tests.py" --cgc-opt "$BUILD/tools/cgc-opt" \
    --stage "$STAGE/onnx-cases" | head -1
else
  echo "stage-gpu: onnx is not installed: no ONNX node tests staged (scripts/setup.sh installs it)"
fi
if [ "${CGC_STAGE_HERE:-0}" = 1 ]; then
  python3 "$ROOT/test/gpu/stage_cases.py" --cgc "$STAGE/bin/cgc" \
    --cgc-opt "$STAGE/bin/cgc-opt" --out "$STAGE/gpu-cases" || rc=$?
  python3 "$ROOT/bench/run_bench.py" stage --cgc "$STAGE/bin/cgc" --out "$STAGE/bench"
fi
du -sh "$STAGE"
exit ${rc:-0}
