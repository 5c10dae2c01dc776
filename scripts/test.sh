#!/usr/bin/env bash
# Runs every test: checks that no switch over OpKind, OpFamily or DType has
# a default, builds, then ctest (unit, lit, golden, fuzz replays; GPU tests
# report "skipped: no CUDA device" without a GPU), then the
# malformed-input corpus under AddressSanitizer and UndefinedBehaviorSanitizer,
# then each fuzz target for CGC_FUZZ_SECONDS (default 45) with libFuzzer;
# last, the lines of code per top-level folder.
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
# Each heavy node's schedule is decided once, by the scheduling library
# (target/Scheduler.h): its rules are private to target/, and nothing
# outside calls one or includes their headers (docs/passes.md, schedule).
rules='productStrategy|computesInputRows|computesInputPrologue|productWorkspaceBytes|generatedRuns|tiledRuns'
rules+='|generatedProductVector|productTile|reductionSplit|rowSchedule|rowScheduleOf'
rules+='|columnSplit|rowReadOnce|phaseScratchBytes|partialBytesOf|rowVectorWidth'
rules+='|fusedAttentionRefusal|fusedAttentionPays|attentionRowsPerWarp|attentionSharedBytes'
rules+='|attentionBlocks|decodeAttentionRefusal|decodeAttentionPays|decodeAttentionRule'
rules+='|decodeAttentionLaunch|decodeAttentionScratch'
if git grep -n -w -E "$rules" -- '*.cpp' '*.h' ':!target/' ||
   git grep -n -E '#include "target/(ProductRule|ReductionRule|AttentionRule)\.h"' -- ':!target/'; then
  echo "test: a scheduling rule is used outside target/ (above); ask target/Scheduler.h"
  exit 1
fi
echo "test: the scheduling rules are called from target/ only"
if [ -f scripts/check-sanitizers.sh ]; then
  bash scripts/check-sanitizers.sh
fi
# The runtime's host paths from many threads under ThreadSanitizer (a stub
# driver stands in for the GPU).
bash scripts/check-tsan.sh build
bash scripts/fuzz.sh "${CGC_FUZZ_SECONDS:-45}"
# The front ends' differential fuzzers (test/fuzz/frontends/run.py) for
# CGC_FRONTEND_FUZZ_SECONDS (default 60) each, on CGC_FUZZ_SEED (default:
# the date, printed): a finding class not in test/fuzz/frontends/
# allowlist.txt fails, its input saved in build-fuzz/findings/<target>/.
for t in onnx records; do
  rc=0
  python3 test/fuzz/frontends/run.py "$t" --cgc-opt build/tools/cgc-opt --cgc build/tools/cgc \
    --seconds "${CGC_FRONTEND_FUZZ_SECONDS:-60}" --seed "${CGC_FUZZ_SEED:-$(date +%Y%m%d)}" \
    --findings "build-fuzz/findings/$t" || rc=$?
  case $rc in
    0) ;;
    77) echo "test: the $t fuzzer skipped (no onnx)" ;;
    *) echo "test: the $t fuzzer found an open class (above)"; exit 1 ;;
  esac
done
echo "test: all tests passed"
# Lines per top-level folder over the tracked sources (git ls-files; files
# at the top level count as "."); skipped outside a git checkout.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "test: lines of code per folder (tracked *.cpp *.h *.def *.cuh *.cu *.py):"
  { git ls-files -z -- '*.cpp' '*.h' '*.def' '*.cuh' '*.cu' '*.py' |
      xargs -0 wc -l 2>/dev/null || true; } |
    awk '{ file = $0; sub(/^ *[0-9]+ /, "", file) }
         file != "total" { dir = index(file, "/") ? substr(file, 1, index(file, "/") - 1) : "."
                           lines[dir] += $1; total += $1 }
         END { for (d in lines) printf "  %-10s %7d\n", d, lines[d] | "sort"
               close("sort"); printf "  %-10s %7d\n", "total", total }'
fi
