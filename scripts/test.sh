#!/usr/bin/env bash
# Runs every test: builds, then ctest (unit, lit, golden; GPU tests report
# "skipped: no CUDA device" without a GPU), then the malformed-input corpus
# under AddressSanitizer and UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs")
if [ -f scripts/check-sanitizers.sh ]; then
  bash scripts/check-sanitizers.sh
fi
echo "test: all tests passed"
