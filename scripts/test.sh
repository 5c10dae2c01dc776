#!/usr/bin/env bash
# Runs every test: checks that no switch over OpKind, OpFamily or DType has
# a default, builds, then ctest (unit, lit, golden, fuzz replays; GPU tests
# report "skipped: no CUDA device" without a GPU), then the
# malformed-input corpus under AddressSanitizer and UndefinedBehaviorSanitizer,
# then each fuzz target for CGC_FUZZ_SECONDS (default 45) with libFuzzer.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
# No `default:` in a switch over OpKind, OpFamily or DType in ir/, passes/
# and codegen/ (a text heuristic; its limits are in the script).
python3 scripts/check-switch-defaults.py
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs")
# Without a GPU the GPU tests skip; say so where CI shows it.
gpu_log=$(cd build && ctest -L gpu -V 2>&1 || true)
if grep -q "skipped: no CUDA device" <<<"$gpu_log"; then
  echo "test: GPU tests: $(grep -m1 -o 'skipped: no CUDA device.*' <<<"$gpu_log")"
else
  echo "test: GPU tests ran on a CUDA device (scripts/gpu-run.sh is the full GPU run)"
fi
# The runtime installs with CMake; an application builds against it out of
# tree through find_package(cgc).
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cmake --install build --prefix "$stage/prefix" >/dev/null
cmake -S examples/embed -B "$stage/embed" -DCMAKE_PREFIX_PATH="$stage/prefix" >/dev/null
cmake --build "$stage/embed" -j"$jobs" >/dev/null
"$stage/embed/embed" 2>&1 | head -3 || true
echo "test: examples/embed builds out of tree against the installed runtime"
if [ -f scripts/check-sanitizers.sh ]; then
  bash scripts/check-sanitizers.sh
fi
bash scripts/fuzz.sh "${CGC_FUZZ_SECONDS:-45}"
echo "test: all tests passed"
