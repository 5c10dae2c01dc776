#!/usr/bin/env python3
"""Dynamic shapes: one padded cgc compile against PyTorch at every size.

  bench/dynamic_shapes.py --cgc build/tools/cgc [--log FILE] [--iters N]

examples/dynamic_batch.json (Linear(64,128)-GELU-Linear(128,10)-softmax,
batch B in [1, 64], buckets 8, 16, 32, 64) compiled once (`cgc model.json`:
pad-dynamic-shapes, one graph per bucket) and timed at each size B with
`cgc bench --dims B=b` (the graph of the smallest bucket that holds b, the
real B written on the device before each replay; CUDA events around N
back-to-back replays, median of 5 repeats after warm-up). Against: the
same model compiled fully static at that bucket (`--bind-dim B=bucket`),
PyTorch eager at b, a torch.cuda.graph recorded at b (one recording per
shape), and torch.compile(mode="reduce-overhead") with its first call at
each new size (compile and recording included) timed apart. f32 without
TF32. Checks the padded artifact's output at every size against PyTorch.
Writes RESULT/CHECK lines to --log (default
bench/results/dynamic-shapes-<gpu>-<date>.log).
"""
import argparse, json, os, sys, tempfile, time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from run_bench import BenchLog, time_events, capture  # noqa: E402
from cgc_tool import Runner  # noqa: E402

SIZES = [1, 5, 8, 13, 16, 31, 32, 47, 64]
BUCKETS = [8, 16, 32, 64]


def bench_dims(runner, art, dims, iters):
    """cgc bench --dims: the graph µs (None after an ERROR line)."""
    import subprocess
    b = subprocess.run([runner.cgc, "bench", art, "--dims", dims, "--iters", str(iters),
                        "--warmup", str(iters // 10), "--repeats", "5"],
                       capture_output=True, text=True)
    kv = dict(t.split("=", 1) for t in b.stdout.split() if "=" in t)
    if b.returncode or "graph_us_per_run" not in kv:
        runner.fail(f"ERROR dims={dims} bench rc={b.returncode} {b.stderr.strip()[-300:]}")
        return None, None
    return float(kv["graph_us_per_run"]), kv


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cgc", required=True)
    ap.add_argument("--log")
    ap.add_argument("--iters", type=int, default=2000)
    args = ap.parse_args()
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = "cuda"
    log = BenchLog(torch, "dynamic-shapes", args.log,
                   f"CUDA events around {args.iters} back-to-back runs, median of 5 repeats "
                   "after warm-up; f32 without TF32")
    out = tempfile.mkdtemp(prefix="cgc-dyn-")
    runner = Runner(args.cgc, out, log)
    with open(os.path.join(ROOT, "examples/dynamic_batch.json")) as f:
        model = json.load(f)
    t0 = time.perf_counter()
    padded = runner.compile("dynamic_batch", model, flags=())
    log(f"INFO cgc_compile_s={time.perf_counter() - t0:.2f} graphs={len(BUCKETS)}")
    static = {b: runner.compile(f"dynamic_batch_B{b}", model, flags=("--bind-dim", f"B={b}"))
              for b in BUCKETS}
    if not padded or not all(static.values()):
        log.write()
        return 1
    rng = np.random.default_rng(0)
    w1 = torch.tensor(rng.uniform(-0.125, 0.125, (128, 64)), dtype=torch.float32, device=dev)
    b1 = torch.tensor(rng.uniform(-0.125, 0.125, 128), dtype=torch.float32, device=dev)
    w2 = torch.tensor(rng.uniform(-0.088, 0.088, (10, 128)), dtype=torch.float32, device=dev)
    b2 = torch.tensor(rng.uniform(-0.088, 0.088, 10), dtype=torch.float32, device=dev)

    def f(x):
        h = torch.nn.functional.gelu(torch.nn.functional.linear(x, w1, b1))
        return torch.softmax(torch.nn.functional.linear(h, w2, b2), dim=-1)

    compiled = torch.compile(f, mode="reduce-overhead")
    for b in SIZES:
        bucket = next(k for k in BUCKETS if k >= b)
        us, _ = bench_dims(runner, padded, f"B={b}", args.iters)
        static_us, _ = bench_dims(runner, static[bucket], f"B={bucket}", args.iters)
        if us is None or static_us is None:
            continue
        log(f"RESULT workload=dynamic_batch B={b} impl=cgc_padded bucket={bucket} us={us:.3f}")
        log(f"RESULT workload=dynamic_batch B={b} impl=cgc_static_bucket bucket={bucket} us={static_us:.3f} "
            f"ratio={us / static_us:.3f}")
        x = torch.tensor(rng.uniform(-3, 3, (b, 64)), dtype=torch.float32, device=dev)
        want = f(x)
        got = runner.run(f"dynamic_batch_B{b}", "cgc_padded", padded,
                         {"x": x.cpu().numpy(), "fc1.w": w1.cpu().numpy(), "fc1.b": b1.cpu().numpy(),
                          "fc2.w": w2.cpu().numpy(), "fc2.b": b2.cpu().numpy()})
        if got is not None:
            runner.check(f"dynamic_batch_B{b}", "cgc_padded", got["probs"], want.cpu().numpy(), 1e-5)
        eager_us, _ = time_events(lambda: f(x), args.iters, 50)
        log(f"RESULT workload=dynamic_batch B={b} impl=torch_eager us={eager_us:.3f}")
        static_x = x.clone()
        graph = capture(torch, lambda: f(static_x))
        graph_us, _ = time_events(graph.replay, args.iters, 50)
        log(f"RESULT workload=dynamic_batch B={b} impl=torch_graph_per_shape us={graph_us:.3f}")
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        compiled(x)
        torch.cuda.synchronize()
        first_ms = (time.perf_counter() - t0) * 1000
        ro_us, _ = time_events(lambda: compiled(x), args.iters, 50)
        log(f"RESULT workload=dynamic_batch B={b} impl=torch_compile_ro us={ro_us:.3f} "
            f"first_call_ms={first_ms:.1f}")
    log.write()
    return runner.status


if __name__ == "__main__":
    sys.exit(main())
