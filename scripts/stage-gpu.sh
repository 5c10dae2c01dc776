#!/usr/bin/env bash
# stage-gpu.sh BUILD_DIR [STAGE_DIR] : on the CPU machine, prepare everything
# the GPU run needs in one small folder (ignored by git; carried to the GPU
# machine, which has no LLVM): the GPU gtest binaries, cgc/cgc-rt (for
# `cgc bench`), the staged op cases (test/gpu/stage_cases.py) and the bench
# artifacts (bench/run_bench.py stage). Then, on the GPU machine:
#   scripts/gpu-run.sh STAGE_DIR
set -eu
BUILD=${1:?usage: stage-gpu.sh BUILD_DIR [STAGE_DIR]}
STAGE=${2:-build-gpu-stage}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$STAGE/bin" "$STAGE/test/gpu"
cp "$BUILD/tools/cgc" "$STAGE/bin/"
cp "$BUILD/runtime/cgc-rt" "$STAGE/bin/" 2>/dev/null || true
cp "$BUILD"/test/gpu/*_tests "$STAGE/test/gpu/"
python3 "$ROOT/test/gpu/stage_cases.py" --cgc "$BUILD/tools/cgc" \
  --cgc-opt "$BUILD/tools/cgc-opt" --out "$STAGE/gpu-cases" || rc=$?
python3 "$ROOT/bench/run_bench.py" stage --cgc "$BUILD/tools/cgc" --out "$STAGE/bench"
du -sh "$STAGE"
exit ${rc:-0}
