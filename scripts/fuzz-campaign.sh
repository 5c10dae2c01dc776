#!/usr/bin/env bash
# A longer fuzzing campaign: the front ends' differential fuzzers
# (test/fuzz/frontends/run.py: onnx and records, side by side) for SECONDS
# each (default 3600), and with --libfuzzer also scripts/fuzz.sh's targets
# for SECONDS each after them. Needs the Release build in build/
# (scripts/test.sh makes it). Writes build-fuzz/campaign-<time>/: each
# run's log, the first input of every open finding class under findings/,
# and summary.txt, the finding classes (kind | op | message pattern) of
# every run, deduplicated, each with its count, first case and whether
# test/fuzz/frontends/allowlist.txt lists it. Exit status 1 if any class
# is open.
#   scripts/fuzz-campaign.sh [SECONDS] [--libfuzzer] [--seed S]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds=3600 libfuzzer=0 seed=$(( $(date +%s) % 100000 ))
while [ $# -gt 0 ]; do
  case "$1" in
    --libfuzzer) libfuzzer=1 ;;
    --seed) seed="$2"; shift ;;
    *) seconds="$1" ;;
  esac
  shift
done
for tool in cgc cgc-opt; do
  [ -x "$root/build/tools/$tool" ] || { echo "fuzz-campaign: build/tools/$tool is missing: build first" >&2; exit 1; }
done
out="$root/build-fuzz/campaign-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
echo "fuzz-campaign: $seconds s per target, seed $seed, in $out"
pids=()
for t in onnx records; do
  python3 "$root/test/fuzz/frontends/run.py" "$t" --cgc-opt "$root/build/tools/cgc-opt" \
    --cgc "$root/build/tools/cgc" --seconds "$seconds" --seed "$seed" \
    --findings "$out/findings/$t" --summary "$out/summary-$t.txt" >"$out/$t.log" 2>&1 &
  pids+=($!)
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
cat "$out"/summary-*.txt >"$out/summary.txt"
if [ "$libfuzzer" = 1 ]; then
  bash "$root/scripts/fuzz.sh" "$seconds" >>"$out/summary.txt" 2>&1 || status=1
fi
cat "$out/summary.txt"
echo "fuzz-campaign: $( [ $status = 0 ] && echo "no open finding" || echo "OPEN FINDINGS (above)"); summary in $out/summary.txt"
exit $status
