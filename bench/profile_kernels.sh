#!/usr/bin/env bash
# profile_kernels.sh CGC ART_DIR OUT: Nsight Compute metrics of every cgc
# kernel in the kernel bench's artifacts (bench/kernels.py --out ART_DIR),
# one CSV row per kernel launch: time, DRAM and SM throughput, issue
# activity, achieved occupancy, launch shape, registers. These are the
# measurements behind the causes docs/perf.md gives for unmet goals.
set -u
CGC=${1:?usage: profile_kernels.sh CGC ART_DIR OUT}
DIR=${2:?usage: profile_kernels.sh CGC ART_DIR OUT}
OUT=${3:?usage: profile_kernels.sh CGC ART_DIR OUT}
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
if [ ! -x "$NCU" ]; then
  echo "profile_kernels: no ncu on this machine" | tee "$OUT"
  exit 1
fi
METRICS=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
METRICS=$METRICS,sm__throughput.avg.pct_of_peak_sustained_elapsed
METRICS=$METRICS,smsp__issue_active.avg.pct_of_peak_sustained_active
METRICS=$METRICS,sm__warps_active.avg.pct_of_peak_sustained_active
METRICS=$METRICS,launch__grid_size,launch__block_size,launch__registers_per_thread
METRICS=$METRICS,dram__bytes_read.sum,dram__bytes_write.sum
: >"$OUT"
status=0
for art in "$DIR"/*.cgc; do
  echo "# $(basename "$art" .cgc)" >>"$OUT"
  "$NCU" --metrics "$METRICS" --csv --page raw --launch-count 4 \
    "$CGC" bench "$art" --iters 1 --warmup 1 --repeats 1 >>"$OUT" 2>&1 || status=1
done
exit $status
