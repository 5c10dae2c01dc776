#!/usr/bin/env bash
# The runtime's host paths under ThreadSanitizer, on a machine without a
# GPU: builds the runtime alone with -fsanitize=thread in build-tsan/ with
# a stub libcuda.so.1 (test/tsan/StubDriver.cpp: host memory for device
# memory, nothing executes), compiles two examples with the main build's
# cgc (elementwise ops; a `while` as conditional nodes) and runs
# test/tsan/RuntimeThreads.cpp on each: eight contexts of one engine on
# eight threads, engines loaded and destroyed beside them. Any race fails.
#   scripts/check-tsan.sh [main-build-dir] [tsan-build-dir]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
main="${1:-$root/build}"
build="${2:-$root/build-tsan}"
jobs="${CGC_JOBS:-2}"
cmake -S "$root" -B "$build" -DCGC_RUNTIME_ONLY=ON -DCGC_TSAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON >/dev/null
make -C "$build" -j"$jobs" cuda_stub runtime_threads >"$build/make.log" 2>&1 || { cat "$build/make.log"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
for model in gelu_small newton_sqrt; do
  CGC_CACHE=0 "$main/tools/cgc" "$root/examples/$model.json" -o "$work/$model.cgc" --quiet
  LD_LIBRARY_PATH="$build/test/tsan" "$build/test/tsan/runtime_threads" "$work/$model.cgc"
done
echo "check-tsan: no data race in the runtime's host paths (stub driver)"
