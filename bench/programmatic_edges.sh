#!/usr/bin/env bash
# Measures the programmatic-edge rule (codegen/GraphPlan.h): the same
# models compiled with `cgc --programmatic-edges=rule|none|all`, timed in
# one run on one GPU.
#
#   bench/programmatic_edges.sh STAGE examples   # cgc bench: chains, a while, products
#   bench/programmatic_edges.sh STAGE generate   # bench/generate.py, cgc per token
#   bench/programmatic_edges.sh STAGE zoo ENTRY,...  # bench/zoo/zoo.py --bench
#
# STAGE is scripts/stage-gpu.sh's folder (its bin/cgc compiles here, on the
# GPU machine, where the Python package is installed from its wheel). Logs
# go to $OUT (default .): programmatic-edges-<part>.log.
set -euo pipefail
stage=$1 part=$2
out=${OUT:-.}
cgc=$stage/bin/cgc
export NCCL_NVLS_ENABLE=0 CGC_CACHE=0
log=$out/programmatic-edges-$part.log
policies=(rule none all)
case $part in
examples)
  work=$(mktemp -d)
  for ex in chain100:--no-fuse chain100: mlp8_infer_b1: newton_sqrt: power_iteration: branch_infer:; do
    name=${ex%%:*} flag=${ex#*:}
    for p in "${policies[@]}"; do
      art=$work/$name$flag.$p.cgc
      "$cgc" "examples/$name.json" -o "$art" $flag --programmatic-edges=$p
      echo "== $name $flag programmatic-edges=$p" >>"$log"
      "$cgc" bench "$art" --iters 2000 --warmup 200 --repeats 5 >>"$log" 2>&1
    done
  done
  ;;
generate)
  for p in "${policies[@]}"; do
    echo "== programmatic-edges=$p" >>"$log"
    python3 bench/generate.py --cgc "$cgc" --models "${3:-llama1b,gpt2,llama4}" --dtypes bf16 \
      --batches 1 --systems cgc --cgc-flags="--programmatic-edges=$p" >>"$log" 2>&1
  done
  ;;
zoo)
  for p in "${policies[@]}"; do
    echo "== programmatic-edges=$p" >>"$log"
    python3 bench/zoo/zoo.py --cgc "$cgc" --only "$3" --bench --bench-only "$3" \
      --iters 50 --out "$out/zoo-$p" --cgc-flags="--programmatic-edges=$p" >>"$log" 2>&1
  done
  ;;
*)
  echo "usage: $0 STAGE examples|generate|zoo [ENTRIES]" >&2
  exit 2
  ;;
esac
cat "$log"
