#!/usr/bin/env bash
# Builds cgc and cgc-opt with AddressSanitizer and UndefinedBehaviorSanitizer
# in build-asan/ and runs the frontend lit suites (test/ir, test/tools)
# against them. Malformed input must give located errors, never a crash.
#   scripts/check-sanitizers.sh [build-dir]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build-asan}"
jobs="${CGC_JOBS:-1}"
lit=/usr/lib/llvm-14/build/utils/lit/lit.py

# --as-needed: with -fsanitize the linker otherwise keeps the unused CUDA
# driver stub (libcuda.so.1), which machines without a driver lack.
cmake -S "$root" -B "$build" -DCGC_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON \
  -DCMAKE_EXE_LINKER_FLAGS=-Wl,--as-needed >/dev/null
make -C "$build" -j"$jobs" cgc cgc-opt
# Any sanitizer report, leaks included, fails the test.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
if [ -f "$lit" ]; then
  python3 "$lit" -sv "$build/test/ir" "$build/test/tools"
else
  lit -sv "$build/test/ir" "$build/test/tools"
fi
