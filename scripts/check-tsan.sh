#!/usr/bin/env bash
# The runtime's host paths under ThreadSanitizer, on a machine without a
# GPU: builds the runtime alone with -fsanitize=thread in build-tsan/ with
# a stub libcuda.so.1 (test/tsan/StubDriver.cpp: host memory for device
# memory, nothing executes), compiles two examples with the main build's
# cgc (elementwise ops; a `while` as conditional nodes) and runs
# test/tsan/RuntimeThreads.cpp on each: eight contexts of one engine on
# eight threads, engines loaded and destroyed beside them; then
# test/tsan/DistributedThreads.cpp over a stub libnccl.so.2
# (StubNccl.cpp): two ranks join, train and fail (a dead peer, a stalled
# replay, different artifacts). Any race or failed check fails.
#   scripts/check-tsan.sh [main-build-dir] [tsan-build-dir]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
main="${1:-$root/build}"
build="${2:-$root/build-tsan}"
jobs="${CGC_JOBS:-2}"
cmake -S "$root" -B "$build" -DCGC_RUNTIME_ONLY=ON -DCGC_TSAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON >/dev/null
make -C "$build" -j"$jobs" cuda_stub runtime_threads nccl_stub distributed_threads \
  >"$build/make.log" 2>&1 || { cat "$build/make.log"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
for model in gelu_small newton_sqrt; do
  CGC_CACHE=0 "$main/tools/cgc" "$root/examples/$model.json" -o "$work/$model.cgc" --quiet
  LD_LIBRARY_PATH="$build/test/tsan" "$build/test/tsan/runtime_threads" "$work/$model.cgc"
done
# Data parallelism: two ranks (threads) over the stub NCCL join, train, and
# fail as a dead peer, a stalled replay and different artifacts make them.
for bucket in 25 0.01; do
  CGC_CACHE=0 "$main/tools/cgc" "$root/examples/mlp_train_small.json" --train --data-parallel \
    --bucket-mb "$bucket" -o "$work/step-$bucket.cgc" --quiet
done
CGC_NCCL_LIBRARY="$build/test/tsan/libnccl.so.2" LD_LIBRARY_PATH="$build/test/tsan" \
  "$build/test/tsan/distributed_threads" "$work/step-25.cgc" "$work/step-0.01.cgc" \
  "$work/gelu_small.cgc"
echo "check-tsan: no data race in the runtime's host paths (stub driver, stub NCCL)"
