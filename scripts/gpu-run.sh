#!/usr/bin/env bash
# gpu-run.sh [BUILD_DIR] : the one script run on the GPU machine.
# Runs every GPU gtest binary of BUILD_DIR (default build/) with XML output,
# counts tests run/skipped/failed, fails if any failed, or if a GPU is visible
# (nvidia-smi) but a GPU test was skipped or none ran. Then, when
# compute-sanitizer exists and CGC_SANITIZER != 0, reruns them under memcheck
# (default filter leaves out the test that provokes a driver error on purpose).
set -u
BUILD=${1:-build}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
OUT=${CGC_GPU_RESULTS:-$BUILD/gpu-results}
mkdir -p "$OUT"
mapfile -t BINS < <(find "$BUILD/test/gpu" -maxdepth 1 -type f -perm -u+x \
                      -name '*_tests' 2>/dev/null | sort)
if [ ${#BINS[@]} -eq 0 ]; then
  echo "gpu-run: error: no GPU test binaries under $BUILD/test/gpu" >&2
  exit 1
fi
GPU_VISIBLE=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q GPU; then
  GPU_VISIBLE=1
  nvidia-smi -L
fi
status=0
for bin in "${BINS[@]}"; do
  name=$(basename "$bin")
  echo "== $name"
  "$bin" --gtest_output="xml:$OUT/$name.xml" || status=1
done
read -r RUN SKIPPED FAILED < <(python3 - "$OUT" <<'PY'
import glob, sys, xml.etree.ElementTree as ET
run = skipped = failed = 0
for path in glob.glob(sys.argv[1] + "/*.xml"):
    for tc in ET.parse(path).getroot().iter("testcase"):
        if tc.get("result") == "skipped" or tc.find("skipped") is not None:
            skipped += 1
        elif tc.get("status", "run") == "run":
            run += 1
            if tc.find("failure") is not None or tc.find("error") is not None:
                failed += 1
print(run, skipped, failed)
PY
)
echo "gpu-run: tests run=$RUN skipped=$SKIPPED failed=$FAILED gpu_visible=$GPU_VISIBLE"
[ "$FAILED" -eq 0 ] || status=1
if [ "$GPU_VISIBLE" -eq 1 ] && { [ "$SKIPPED" -ne 0 ] || [ "$RUN" -eq 0 ]; }; then
  echo "gpu-run: error: a GPU is visible but GPU tests were skipped or none ran" >&2
  status=1
fi
if [ "${CGC_SANITIZER:-1}" != 0 ] && [ "$GPU_VISIBLE" -eq 1 ]; then
  SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  if [ -x "$SAN" ]; then
    for bin in "${BINS[@]}"; do
      echo "== memcheck $(basename "$bin")"
      "$SAN" --tool memcheck --error-exitcode 3 "$bin" \
        --gtest_filter="${CGC_SANITIZER_FILTER:-*-RuntimeGpuLoad.PtxFallbackAndArchMismatch}" >"$OUT/$(basename "$bin").memcheck.log" 2>&1 \
        && echo "memcheck: clean" \
        || { echo "memcheck: FAILED"; tail -30 "$OUT/$(basename "$bin").memcheck.log"; status=1; }
    done
  else
    echo "gpu-run: compute-sanitizer not found, memcheck skipped"
  fi
fi
exit $status
