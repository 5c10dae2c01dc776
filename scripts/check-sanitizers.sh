#!/usr/bin/env bash
# Builds cgc and cgc-opt with AddressSanitizer and UndefinedBehaviorSanitizer
# in build-asan/ and runs the frontend lit suites (test/ir, test/tools)
# against them. Malformed input must give located errors, never a crash.
#   scripts/check-sanitizers.sh [build-dir]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build-asan}"
jobs="${CGC_JOBS:-1}"
lit="$(command -v lit || echo /usr/lib/llvm-14/build/utils/lit/lit.py)"

cmake -S "$root" -B "$build" -DCGC_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON >/dev/null
make -C "$build" -j"$jobs" cgc cgc-opt
# halt_on_error: any report fails the test; no leak checks (exit paths
# skip cleanup on purpose).
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=0:abort_on_error=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
python3 "$lit" -sv "$build/test/ir" "$build/test/tools"
