#!/usr/bin/env bash
# Builds the fuzz targets (test/fuzz/) with clang, libFuzzer, AddressSanitizer
# and UndefinedBehaviorSanitizer in build-fuzz/, seeds a corpus per target
# from examples/, the lit inputs and test/fuzz/regressions/, and runs each
# target for SECONDS (default 60). Any crash, leak, sanitizer report or
# timeout fails the run and leaves the input in build-fuzz/findings/<target>/;
# a fixed one belongs in test/fuzz/regressions/<target>/.
#   scripts/fuzz.sh [SECONDS] [TARGET...]   (ir interpreter pipeline compile artifact safetensors)
# CI runs it with 45 seconds per target; scripts/fuzz-campaign.sh --libfuzzer
# runs it longer, after the front-end fuzzers.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(ir interpreter pipeline compile artifact safetensors)
build="${CGC_FUZZ_BUILD:-$root/build-fuzz}"
jobs="${CGC_JOBS:-$(nproc)}"

cc=$(command -v clang-14 || command -v clang) || { echo "fuzz: clang is missing (scripts/setup.sh installs clang-14)" >&2; exit 1; }
cxx=$(command -v clang++-14 || command -v clang++)
# A fresh cache each time: CMake drops -D options when it resets a cache
# itself (a changed compiler), which once left stale targets running.
rm -f "$build/CMakeCache.txt"
cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCGC_FUZZ=ON -DCGC_SANITIZE=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON -DCMAKE_EXE_LINKER_FLAGS=-Wl,--as-needed >/dev/null
if ! make -C "$build" -j"$jobs" cgc $(printf "fuzz-%s " "${targets[@]}") >"$build/build.log" 2>&1; then
  tail -30 "$build/build.log" >&2; echo "fuzz: the build failed (log: $build/build.log)" >&2; exit 1
fi
for t in "${targets[@]}"; do
  [ "$build/test/fuzz/fuzz-$t" -nt "$build/test/fuzz/libcgc_fuzz_support.a" ] ||
    { echo "fuzz: $build/test/fuzz/fuzz-$t is older than its library: not a libFuzzer build" >&2; exit 1; }
done

# Seeds: JSON models for the IR targets, compiled artifacts, safetensors.
seed() { # seed TARGET FILE...
  local dir="$build/corpus/$1"; shift
  mkdir -p "$dir"
  for f in "$@"; do [ -f "$f" ] && cp -f "$f" "$dir/seed-$(basename "$(dirname "$f")")-$(basename "$f")"; done
  return 0
}
models=("$root"/examples/*.json "$root"/test/gpu/Inputs/*.json "$root"/test/ir/*.json
        "$root"/test/ir/Inputs/*.json "$root"/test/passes/*/*.json "$root"/test/codegen/*.json)
for t in ir interpreter pipeline compile; do
  seed "$t" "${models[@]}" "$root"/test/fuzz/regressions/"$t"/*
done
mkdir -p "$build/artifacts"
for m in "$root"/examples/*.json; do
  out="$build/artifacts/$(basename "$m" .json).cgc"
  [ -f "$out" ] || "$build/tools/cgc/cgc" "$m" -o "$out" >/dev/null 2>&1 || true
done
seed artifact "$build"/artifacts/*.cgc "$root"/test/fuzz/regressions/artifact/*
seed safetensors "$root"/test/ir/Inputs/*.safetensors "$root"/test/fuzz/regressions/safetensors/*

export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
status=0
for t in "${targets[@]}"; do
  findings="$build/findings/$t"
  mkdir -p "$findings"
  log="$build/fuzz-$t.log"
  if "$build/test/fuzz/fuzz-$t" "$build/corpus/$t" -max_total_time="$seconds" \
       -timeout=20 -rss_limit_mb=4096 -max_len=262144 -print_final_stats=1 \
       -artifact_prefix="$findings/" >"$log" 2>&1; then
    echo "fuzz: $t: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') runs in ${seconds} s, $(ls "$build/corpus/$t" | wc -l) corpus inputs, nothing found"
  else
    status=1
    echo "fuzz: $t: FOUND A BUG; the input is in $findings/, the log in $log:" >&2
    grep -E "ERROR|SUMMARY|runtime error|==[0-9]+==|#[0-9]+ 0x" "$log" | head -30 >&2
  fi
done
exit $status
