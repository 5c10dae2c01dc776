export NCCL_NVLS_ENABLE=0
S=build-gpu-stage; P=$S/prof; mkdir -p $OUT/r
CGC_GPU_CASES=$PWD/$S/prod-cases $S/test/gpu/cgc_gpu_op_tests --gtest_filter="Staged/OpCase.*" > $OUT/r/cases.log 2>&1; echo "cases rc=$?"; grep -E "PASSED|FAILED" $OUT/r/cases.log | head
for f in $P/f_*.json; do b=$(basename $f .json)
  $S/bin/cgc $f --mma-products --no-cache -o $P/mma_$b.cgc >/dev/null 2>&1
  $S/bin/cgc $f --library-products --no-cache -o $P/lib_$b.cgc >/dev/null 2>&1
  echo "$b mma $($S/bin/cgc bench $P/mma_$b.cgc --iters 500 --repeats 5 | grep -o 'graph_us_per_run=[0-9.]*') lib $($S/bin/cgc bench $P/lib_$b.cgc --iters 500 --repeats 5 | grep -o 'graph_us_per_run=[0-9.]*')"
done | tee $OUT/r/ffn.log
