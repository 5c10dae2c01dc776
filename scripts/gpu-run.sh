#!/usr/bin/env bash
# gpu-run.sh [DIR] : the one script for the whole GPU run (on the GPU machine).
#
# DIR (default build/) is a build folder, or a carried stage folder laid out
# like one (scripts/stage-gpu.sh makes build-gpu-stage/):
#   DIR/test/gpu/*_tests   GPU gtest binaries (label gpu)
#   DIR/bin/cgc, cgc-opt   the compiler and the interpreter (for staging)
#   DIR/gpu-cases/         staged op cases (test/gpu/stage_cases.py)
#   DIR/bench/             bench artifacts (bench/run_bench.py stage)
#
# 0. Stages the op cases and the bench artifacts with DIR/bin/cgc and
#    cgc-opt when DIR has none (stage-gpu.sh leaves them to this machine:
#    their inputs and weights would not fit the carried folder); a case
#    that fails to stage fails the run.
# 1. Runs every GPU gtest binary with XML output, prints run/passed/failed/
#    skipped, fails if any failed, or if nvidia-smi sees a GPU but a test was
#    skipped or none ran (the concurrent stress tests among them); then the
#    serving example (examples/serve); then the ONNX node tests staged in DIR/onnx-cases
#    (test/onnx/gpu_node_tests.py: compiled with cgc, run with cgc run),
#    failing if any is wrong or none was staged; then, with the Python
#    package's wheel (DIR/dist) installed, cgc.export of nn.Modules against
#    PyTorch, cgc.compile from Python against PyTorch, cgc.compile_train
#    against PyTorch's training, torch.compile(backend="cgc") against
#    eager and compile_generate against transformers
#    (test/python/torch_export_gpu.py, runtime_gpu.py, train_gpu.py,
#    backend_gpu.py, generate_gpu.py, readme_example_gpu.py; with two GPUs
#    or more, distributed_gpu.py under torchrun: data-parallel training),
#    then the
#    model zoo's correctness tier, with the backend (bench/zoo/zoo.py;
#    CGC_ZOO=0 leaves it out; CGC_PYTHON_GPU=0 leaves out the Python
#    scripts before it), and its coverage entries (zoo.py --coverage;
#    CGC_ZOO_COVERAGE=0 leaves them out).
# 2. Reruns them under compute-sanitizer --tool memcheck, racecheck and
#    synccheck where it exists (says so if not; CGC_SANITIZER=0 turns it
#    off, CGC_SANITIZER_TOOLS picks tools); CGC_OP_MEMCHECK_FILTER narrows
#    the op cases they cover (default: all); the soak test is left out.
# 3. Runs the benchmarks (bench/run_bench.py run, bench/kernels.py,
#    bench/sync_points.py, bench/training.py, then bench/make_perf_md.py)
#    unless CGC_BENCH=0.
# Artifacts (gtest XML, memcheck logs, bench log, perf.md) go to $OUT when it
# is set (the device tool returns at most 8 files from there), else
# DIR/gpu-results. Exit status: 0 only if every step passed.
set -u
HERE=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# cuDNN (convolutions; the runtime dlopens libcudnn.so.9): on the GPU machine
# it comes with PyTorch's wheels (site-packages nvidia/cudnn/lib).
CUDNN_LIB=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' 2>/dev/null)
[ -n "$CUDNN_LIB" ] && [ -d "$CUDNN_LIB" ] && export LD_LIBRARY_PATH=$CUDNN_LIB:$LD_LIBRARY_PATH
RES=${OUT:-${CGC_GPU_RESULTS:-$BUILD/gpu-results}}
mkdir -p "$RES"
status=0

# ---- 0. staging
JOBS=$(nproc 2>/dev/null || echo 4)
if [ ! -f "$BUILD/gpu-cases/cases.txt" ] && [ -x "$BUILD/bin/cgc-opt" ]; then
  echo "== staging op cases on this machine ($JOBS jobs)"
  python3 "$HERE/test/gpu/stage_cases.py" --cgc "$BUILD/bin/cgc" \
    --cgc-opt "$BUILD/bin/cgc-opt" --out "$BUILD/gpu-cases" --jobs "$JOBS" \
    >"$RES/stage_cases.log" 2>&1 || status=1
  tail -5 "$RES/stage_cases.log"
fi
if [ ! -d "$BUILD/bench" ] && [ -x "$BUILD/bin/cgc" ]; then
  echo "== staging bench artifacts"
  python3 "$HERE/bench/run_bench.py" stage --cgc "$BUILD/bin/cgc" \
    --out "$BUILD/bench" >"$RES/bench_stage.log" 2>&1 || status=1
  tail -3 "$RES/bench_stage.log"
fi
[ -d "$BUILD/gpu-cases" ] && export CGC_GPU_CASES=${CGC_GPU_CASES:-$(cd "$BUILD/gpu-cases" && pwd)}
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
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
fi
echo "gpu-run: cases: ${CGC_GPU_CASES:-<default>}"

# ---- 1. gtests
for bin in "${BINS[@]}"; do
  name=$(basename "$bin")
  echo "== $name"
  "$bin" --gtest_output="xml:$RES/$name.xml" >"$RES/$name.log" 2>&1
  rc=$?
  grep -E '^\[  (FAILED|PASSED|SKIPPED) |tests ran|^\[==========\]' "$RES/$name.log" | tail -40
  if [ $rc -ne 0 ]; then
    status=1
    if [ $rc -gt 128 ]; then  # killed by a signal: no XML; the last test it ran
      echo "gpu-run: $name died of signal $((rc - 128)); the end of its log:" >&2
      tail -25 "$RES/$name.log" >&2
    fi
  fi
done
rm -f "$RES"/*_tests.log 2>/dev/null  # the XML holds the details; keep $OUT small
read -r RUN PASSED FAILED SKIPPED < <(python3 - "$RES" <<'PY'
import glob, sys, xml.etree.ElementTree as ET
run = passed = failed = skipped = 0
for path in glob.glob(sys.argv[1] + "/*_tests.xml"):
    for tc in ET.parse(path).getroot().iter("testcase"):
        if tc.get("result") == "skipped" or tc.find("skipped") is not None:
            skipped += 1
        elif tc.get("status", "run") == "run":
            run += 1
            if tc.find("failure") is not None or tc.find("error") is not None:
                failed += 1
            else:
                passed += 1
print(run, passed, failed, skipped)
PY
)
echo "gpu-run: tests run=$RUN passed=$PASSED failed=$FAILED skipped=$SKIPPED gpu_visible=$GPU_VISIBLE"
[ "$FAILED" -eq 0 ] || status=1
if [ "$GPU_VISIBLE" -eq 1 ] && { [ "$SKIPPED" -ne 0 ] || [ "$RUN" -eq 0 ]; }; then
  echo "gpu-run: error: a GPU is visible but GPU tests were skipped or none ran" >&2
  status=1
fi

# ---- 1b. ONNX's node tests, compiled and run on the GPU (staged by
# stage-gpu.sh where onnx is installed)
if [ -d "$BUILD/onnx-cases" ]; then
  echo "== ONNX node tests on the GPU"
  python3 "$HERE/test/onnx/gpu_node_tests.py" --cgc "$BUILD/bin/cgc" \
    --stage "$BUILD/onnx-cases" >"$RES/onnx-gpu.log" 2>&1 || status=1
  grep -vE '^  refused' "$RES/onnx-gpu.log" | head -20
elif [ "$GPU_VISIBLE" -eq 1 ]; then
  echo "gpu-run: error: no ONNX node tests staged (stage-gpu.sh stages them with onnx installed)" >&2
  status=1
fi

# ---- 1b'. The serving example (examples/serve): a pool of 4 contexts over
# one engine behind a request queue, against one context, at 1, 4 and 16
# closed-loop clients, every result checked; on example_mlp8_infer_b1.
CASES_DIR=${CGC_GPU_CASES:-$BUILD/gpu-cases}
if [ -x "$BUILD/bin/serve" ] && [ -f "$CASES_DIR/example_mlp8_infer_b1/model.cgc" ]; then
  echo "== examples/serve on example_mlp8_infer_b1"
  "$BUILD/bin/serve" "$CASES_DIR/example_mlp8_infer_b1/model.cgc" --contexts 4 \
    --seconds "${CGC_SERVE_SECONDS:-2}" >"$RES/serve.log" 2>&1 || status=1
  cat "$RES/serve.log"
elif [ "$GPU_VISIBLE" -eq 1 ]; then
  echo "gpu-run: error: no serve example or no staged example_mlp8_infer_b1" >&2
  status=1
fi

# ---- 1c. The Python package: the wheel stage-gpu.sh staged (DIR/dist),
# installed into a folder of its own (else DIR/python, a build's staged
# package), then cgc.export of ordinary nn.Modules against PyTorch (PyTorch
# is on this machine only) and cgc.compile / cgc.load on torch tensors
PKG=$BUILD/python
if ls "$BUILD"/dist/cgc-*.whl >/dev/null 2>&1; then
  PKG=$(mktemp -d)
  trap 'rm -rf "$PKG"' EXIT
  python3 -m pip install -q --no-deps --disable-pip-version-check --target "$PKG" \
    "$BUILD"/dist/cgc-*.whl || status=1
  echo "== the wheel $(basename "$BUILD"/dist/cgc-*.whl), installed"
elif [ "$GPU_VISIBLE" -eq 1 ]; then
  echo "gpu-run: error: no wheel staged in $BUILD/dist (stage-gpu.sh makes it)" >&2
  status=1
fi
if [ "${CGC_PYTHON_GPU:-1}" != 0 ]; then
echo "== cgc.export against PyTorch (test/python/torch_export_gpu.py)"
PYTHONPATH=$PKG python3 "$HERE/test/python/torch_export_gpu.py" --cgc "$BUILD/bin/cgc" \
  --work "$RES/export" >"$RES/export.log" 2>&1
rc=$?
grep -E '^(OK|FAIL|skipped)' "$RES/export.log"
rm -rf "$RES/export"
if [ $rc -ne 0 ] && { [ $rc -ne 77 ] || [ "$GPU_VISIBLE" -eq 1 ]; }; then status=1; fi
# The time of a call from Python against PyTorch (test/python/runtime_gpu.py)
echo "== cgc from Python (test/python/runtime_gpu.py)"
PYTHONPATH=$PKG python3 "$HERE/test/python/runtime_gpu.py" --cgc "$BUILD/bin/cgc" \
  --log "$RES/python.log" >"$RES/python.out" 2>&1
rc=$?
grep -E '^(CHECK|RESULT|ERROR|skipped)' "$RES/python.out"
if [ $rc -ne 0 ] && { [ $rc -ne 77 ] || [ "$GPU_VISIBLE" -eq 1 ]; }; then status=1; fi
# cgc.compile_train against PyTorch training the same modules.
echo "== cgc.compile_train against PyTorch (test/python/train_gpu.py)"
PYTHONPATH=$PKG python3 "$HERE/test/python/train_gpu.py" --cgc "$BUILD/bin/cgc" \
  >"$RES/train.out" 2>&1
rc=$?
grep -E '^(OK|FAIL|skipped|train_gpu)' "$RES/train.out"
if [ $rc -ne 0 ] && { [ $rc -ne 77 ] || [ "$GPU_VISIBLE" -eq 1 ]; }; then status=1; fi
# Data-parallel training on every visible GPU, one process each (torchrun).
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [ "${NGPU:-0}" -gt 1 ]; then
  echo "== data-parallel training on $NGPU GPUs (test/python/distributed_gpu.py)"
  PYTHONPATH=$PKG NCCL_NVLS_ENABLE=0 timeout 600 python3 -m torch.distributed.run \
    --nproc-per-node="$NGPU" "$HERE/test/python/distributed_gpu.py" --cgc "$BUILD/bin/cgc" \
    >"$RES/distributed.out" 2>&1
  rc=$?
  grep -E '^(OK|FAIL|skipped|distributed_gpu)' "$RES/distributed.out" | cut -c1-300
  [ $rc -eq 0 ] || status=1
  # From C++ (examples/distributed): one process a GPU, every rank's
  # parameters must hash alike.
  if [ -x "$BUILD/bin/train_ranks" ]; then
    dpwork=$(mktemp -d)
    "$BUILD/bin/cgc" "$HERE/examples/mlp_train_small.json" --train --data-parallel \
      -o "$dpwork/step.cgc" --quiet
    for r in $(seq 0 $((NGPU - 1))); do
      NCCL_NVLS_ENABLE=0 timeout 300 "$BUILD/bin/train_ranks" "$dpwork/step.cgc" --rank "$r" \
        --world "$NGPU" --id-file "$dpwork/id" --steps 50 >"$dpwork/rank$r.out" 2>&1 &
    done
    wait
    cat "$dpwork"/rank*.out | tee "$RES/train_ranks.out"
    hashes=$(grep -o 'parameters [0-9a-f]*' "$dpwork"/rank*.out | sort -u -k2 | wc -l)
    ranks=$(grep -c 'parameters' "$RES/train_ranks.out")
    if [ "$ranks" -ne "$NGPU" ] || [ "$hashes" -ne 1 ]; then
      echo "gpu-run: error: examples/distributed: $ranks of $NGPU ranks finished, $hashes parameter hashes" >&2
      status=1
    fi
    rm -rf "$dpwork"
  fi
else
  echo "== data-parallel training: skipped: one GPU visible (needs 2 or more)"
fi
# torch.compile(model, backend="cgc") against eager PyTorch.
echo "== torch.compile(backend=\"cgc\") against PyTorch (test/python/backend_gpu.py)"
PYTHONPATH=$PKG PYTHONWARNINGS=ignore python3 "$HERE/test/python/backend_gpu.py" --cgc "$BUILD/bin/cgc" \
  >"$RES/backend.out" 2>&1
rc=$?
grep -E '^(OK|FAIL|skipped|backend_gpu)' "$RES/backend.out" | cut -c1-300
if [ $rc -ne 0 ] && { [ $rc -ne 77 ] || [ "$GPU_VISIBLE" -eq 1 ]; }; then status=1; fi
# cgc.compile_generate against transformers' generate.
echo "== cgc.compile_generate against transformers (test/python/generate_gpu.py)"
PYTHONPATH=$PKG PYTHONWARNINGS=ignore python3 "$HERE/test/python/generate_gpu.py" --cgc "$BUILD/bin/cgc" \
  >"$RES/generate.out" 2>&1
rc=$?
grep -E '^(PASS|FAIL|skipped|generate:|  )' "$RES/generate.out" | cut -c1-300
if [ $rc -ne 0 ] && { [ $rc -ne 77 ] || [ "$GPU_VISIBLE" -eq 1 ]; }; then status=1; fi
# The README's example, pasted as is, with the installed wheel's driver.
echo "== the README's PyTorch example (test/python/readme_example_gpu.py)"
PYTHONPATH=$PKG python3 "$HERE/test/python/readme_example_gpu.py" "$HERE/README.md" 2>&1 | tail -5
rc=${PIPESTATUS[0]}
if [ $rc -ne 0 ] && { [ $rc -ne 77 ] || [ "$GPU_VISIBLE" -eq 1 ]; }; then status=1; fi
else
  echo "== the Python package's GPU tests left out (CGC_PYTHON_GPU=0)"
fi

# The model zoo's correctness tier (bench/zoo/zoo.py): real models through
# cgc.compile against eager PyTorch; fails on a wrong entry or on one the
# committed bench/zoo/status.json says passed that is now refused, and
# (--backend) every entry under torch.compile(backend="cgc") against the
# same bound. About 5.5 minutes for 60 entries in 4 processes on an H100
# with the backend (mostly cold compiles; 4 minutes in 6), more with the
# 32 f16 and batch-32 entries added since (not timed); CGC_ZOO=0 leaves it
# out, CGC_ZOO_ONLY=SUBSTR narrows it, CGC_ZOO_BACKEND=0 leaves the
# backend out.
# CGC_ZOO_JOBS (default 4) zoo processes share the machine, each a shard of
# the entries (zoo.py --shard), their results merged (zoo.py --report).
# run_zoo TITLE LOG ARGS...: zoo.py with ARGS, its results under $RES/LOG.
run_zoo() {
  local title=$1 log=$2 jobs=${CGC_ZOO_JOBS:-4} i pids=() rc=0
  shift 2
  echo "== $title ($jobs processes)"
  for ((i = 0; i < jobs; i++)); do
    PYTHONPATH=$PKG PYTHONWARNINGS=ignore python3 "$HERE/bench/zoo/zoo.py" --cgc "$BUILD/bin/cgc" \
      --only "${CGC_ZOO_ONLY:-}" --shard "$i/$jobs" --out "$RES/$log/shard-$i" "$@" \
      >"$RES/$log.$i.log" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || rc=$?
  done
  cat "$RES/$log".*.log >"$RES/$log.log"
  python3 "$HERE/bench/zoo/zoo.py" --report "$RES/$log"/shard-*/zoo-results.json --out "$RES/$log" \
    >/dev/null 2>&1
  grep -E '^zoo:|: (passed|refused|wrong|broken|backend)' "$RES/$log.log" | cut -c1-300
  if [ $rc -ne 0 ] && { [ $rc -ne 77 ] || [ "$GPU_VISIBLE" -eq 1 ]; }; then status=1; fi
}
if [ "${CGC_ZOO:-1}" != 0 ]; then
  backend=--backend
  [ "${CGC_ZOO_BACKEND:-1}" = 0 ] && backend=
  run_zoo "the model zoo, correctness tier (bench/zoo/zoo.py)" zoo $backend
  # The coverage entries: more architectures of each family, small
  # configs; CGC_ZOO_COVERAGE=0 leaves them out.
  [ "${CGC_ZOO_COVERAGE:-1}" != 0 ] && \
    run_zoo "the model zoo's coverage entries (zoo.py --coverage)" zoo-coverage --coverage
fi

# ---- 2. compute-sanitizer: memcheck, racecheck, synccheck
# Each tool reruns the GPU tests (the soak test excepted: 10^6 replays; and
# the concurrent stress tests: 8 threads x 10^5).
# Two limits of the tools (CUDA 13.0, measured on an H100), worked around:
#  - racecheck and synccheck on kernels inside a conditional node's body:
#    racecheck crashes in its own collection thread, synccheck flags every
#    barrier (ours and cuBLAS's sgemm alike) while the same kernels launched
#    eagerly are clean. Those cases' graph runs are left out of these two
#    tools, and their kernels are checked eagerly with `cgc-rt run --eager`.
#  - racecheck reports hazards in cuBLAS's own Hopper kernels (nvjet_*,
#    TMA and wgmma shared memory it does not model); excluding them with
#    --kernel-name-exclude makes it fail on the f16 ones. Hazards in library
#    kernels are counted and printed, and fail the run only in cgc's own.
CONDITIONAL_BODY_CASES="*cf_*:*newton_sqrt*:*all_ops*:*InsideIfBodies*:*sync_loop*:*power_iteration*:*LoopTrips*"
LIBRARY_KERNELS="nvjet|gemm|gemv|cutlass|splitKreduce|cublas"
# A racecheck log whose only hazards are in library kernels, with every
# test passed and no tool error, is clean for cgc.
only_library_hazards() {
  ! grep -qE '^\[  FAILED  \]|Internal Sanitizer Error|fatal signal|Target application returned an error' "$1" &&
    ! grep -E 'Race reported' "$1" | grep -qvE "$LIBRARY_KERNELS"
}
without() { case $1 in *-*) echo "$1:$2" ;; *) echo "$1-$2" ;; esac; }
if [ "${CGC_SANITIZER:-1}" != 0 ] && [ "$GPU_VISIBLE" -eq 1 ]; then
  SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  if [ -x "$SAN" ]; then
    for tool in ${CGC_SANITIZER_TOOLS:-memcheck racecheck synccheck}; do
      for bin in "${BINS[@]}"; do
        name=$(basename "$bin")
        case $name in
          cgc_gpu_op_tests) filter=${CGC_OP_MEMCHECK_FILTER:-*} ;;
          *) filter=${CGC_SANITIZER_FILTER:-*-RuntimeGpuLoad.PtxFallbackAndArchMismatch:RuntimeGpuSticky.*} ;;
        esac
        # (the long runs: the soak test, and the concurrent stress tests,
        # whose other Concurrent.* tests run short under the tools)
        filter=$(without "$filter" "StagedCases.Soak*:Stress/*")
        [ "$tool" = memcheck ] || filter="$filter:$CONDITIONAL_BODY_CASES"
        echo "== $tool $name ($filter)"
        CGC_STRESS_REPLAYS=2000 timeout "${CGC_MEMCHECK_TIMEOUT:-300}" "$SAN" --tool "$tool" --error-exitcode 3 "$bin" \
          --gtest_filter="$filter" >"$RES/$name.$tool.log" 2>&1
        rc=$?
        grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|tests ran' "$RES/$name.$tool.log" | tail -3
        if [ $rc -eq 0 ]; then echo "$tool: clean"
        elif [ $rc -eq 124 ]; then echo "$tool: TIMED OUT"; status=1
        elif [ "$tool" = racecheck ] && only_library_hazards "$RES/$name.$tool.log"; then
          echo "$tool: clean in cgc's kernels; $(grep -c 'Race reported' "$RES/$name.$tool.log") hazard report(s) in cuBLAS's kernels: $(grep -oE 'Race reported between [A-Za-z]+ access at [A-Za-z0-9_]+' "$RES/$name.$tool.log" | awk '{print $NF}' | sort -u | tr '\n' ' ')"
        else echo "$tool: FAILED (rc=$rc)"; grep -m20 -E 'Invalid|Race|Barrier|=========  *(at|by)|FAILED|fatal' "$RES/$name.$tool.log"; status=1
        fi
      done
      if [ "$tool" != memcheck ] && [ -x "$BUILD/bin/cgc-rt" ]; then
        eager_ok=0
        for dir in "${CGC_GPU_CASES:-$BUILD/gpu-cases}"/{cf_*,example_newton_sqrt,example_power_iteration,own_sync_loop_*,all_ops}; do
          [ -f "$dir/model.cgc" ] || continue
          rc=0
          "$SAN" --tool "$tool" --error-exitcode 3 "$BUILD/bin/cgc-rt" run "$dir/model.cgc" \
            --inputs "$dir/in.safetensors" --outputs "$RES/eager.safetensors" --overwrite --eager \
            >"$RES/eager.$tool.log" 2>&1 || rc=$?
          if [ $rc -ne 0 ] && [ "$tool" = racecheck ] &&
             only_library_hazards "$RES/eager.$tool.log"; then rc=0; fi
          if [ $rc -ne 0 ]; then echo "$tool eager $(basename "$dir"): FAILED (rc=$rc)"; grep -m5 -E 'Race|Barrier|at ' "$RES/eager.$tool.log"; status=1
          else eager_ok=$((eager_ok + 1)); fi
        done
        echo "$tool: $eager_ok conditional-body cases clean in eager mode"
        rm -f "$RES/eager.safetensors" "$RES/eager.$tool.log"
      fi
    done
  else
    echo "gpu-run: compute-sanitizer not found, sanitizers skipped"
  fi
fi

# ---- 3. benchmarks
if [ "${CGC_BENCH:-1}" != 0 ] && [ "$GPU_VISIBLE" -eq 1 ]; then
  if [ -d "$BUILD/bench" ]; then
    CGC=$BUILD/bin/cgc
    "$CGC" --version >/dev/null 2>&1 || CGC=$BUILD/bin/cgc-rt
    echo "== bench (cgc: $CGC)"
    PYTHONUNBUFFERED=1 python3 "$HERE/bench/run_bench.py" run --cgc "$CGC" \
      --artifacts "$BUILD/bench" || status=1
    log=$(ls -t "$HERE"/bench/results/NVIDIA*.log 2>/dev/null | head -1)
    if "$CGC" --version >/dev/null 2>&1; then
      echo "== kernels bench (bench/kernels.py)"
      klog="$RES/kernels.log"
      PYTHONUNBUFFERED=1 python3 "$HERE/bench/kernels.py" --cgc "$CGC" --log "$klog" \
        | grep -E '^(RESULT|ERROR)' || status=1
      echo "== sync points bench (bench/sync_points.py)"
      slog="$RES/sync-points.log"
      PYTHONUNBUFFERED=1 python3 "$HERE/bench/sync_points.py" --cgc "$CGC" --log "$slog" \
        | grep -E '^(RESULT|CHECK|ERROR)' || status=1
      echo "== training bench (bench/training.py)"
      tlog="$RES/training.log"
      PYTHONUNBUFFERED=1 python3 "$HERE/bench/training.py" --cgc "$CGC" --log "$tlog" \
        | grep -E '^(RESULT|CHECK|ERROR)' || status=1
    fi
    if [ -n "$log" ]; then
      cp "$log" "$RES/" && python3 "$HERE/bench/make_perf_md.py" "$log" -o "$RES/perf.md" \
        ${klog:+--kernels "$klog"} ${slog:+--sync-points "$slog"} ${tlog:+--training "$tlog"} && grep '^|' "$RES/perf.md"
    fi
  else
    echo "gpu-run: no bench artifacts under $BUILD/bench, benchmarks skipped"
  fi
fi
exit $status
