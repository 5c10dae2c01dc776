#!/usr/bin/env bash
# stage-gpu.sh BUILD_DIR [STAGE_DIR] : on the CPU machine, put what the GPU
# run needs into one small folder (ignored by git; carried to the GPU
# machine, which has no LLVM): the GPU gtest binaries and cgc, cgc-opt and
# cgc-rt (statically linked against LLVM, so they run there). The op cases
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
mkdir -p "$STAGE/lib" && cp "$BUILD/runtime/libcgc_runtime.so" "$STAGE/lib/"
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
