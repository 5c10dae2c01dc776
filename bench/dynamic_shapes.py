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
Then examples/encoder_small.json (one transformer encoder layer, B in
[1, 16] with buckets 4, 16 and a padded sequence S in [16, 128] with
buckets 32, 64, 128) the same way at a few (B, S), against the same layer
in PyTorch with the same weights.
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
ENCODER_SIZES = [(1, 16), (4, 32), (3, 50), (8, 64), (16, 100), (16, 128)]
ENCODER_BUCKETS = {"B": [4, 16], "S": [32, 64, 128]}


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
    encoder(torch, runner, log, rng, args.iters)
    log.write()
    return runner.status


def encoder(torch, runner, log, rng, iters):
    """encoder_small at ENCODER_SIZES: padded cgc, static cgc at the
    buckets, PyTorch eager, per-shape graph, torch.compile reduce-overhead."""
    F = torch.nn.functional
    with open(os.path.join(ROOT, "examples/encoder_small.json")) as f:
        model = json.load(f)
    padded = runner.compile("encoder_small", model, flags=())
    if not padded:
        return
    weights = {}
    for i in model["inputs"]:
        if i.get("kind") == "parameter":
            init = i["init"]
            if init["dist"] == "uniform":
                v = rng.uniform(init["low"], init["high"], i["shape"])
            else:
                v = np.full(i["shape"], 1.0 if init["dist"] == "ones" else 0.0)
            weights[i["name"]] = v.astype(np.float32)
    P = {k: torch.tensor(v, device="cuda") for k, v in weights.items()}

    def layer(tokens):
        b, s = tokens.shape
        x = F.embedding(tokens, P["embed"])
        a = F.layer_norm(x, (64,), P["ln1.w"], P["ln1.b"])
        q, k, v = (F.linear(a, P[n + ".w"], P[n + ".b"]).view(b, s, 4, 16).transpose(1, 2)
                   for n in "qkv")
        p = torch.softmax(q @ k.transpose(-1, -2) * 0.25, dim=-1)
        c = (p @ v).transpose(1, 2).reshape(b, s, 64)
        h = x + F.linear(c, P["o.w"], P["o.b"])
        m = F.layer_norm(h, (64,), P["ln2.w"], P["ln2.b"])
        out = h + F.linear(F.gelu(F.linear(m, P["fc1.w"], P["fc1.b"])), P["fc2.w"], P["fc2.b"])
        return out, out.mean(1)

    compiled = torch.compile(layer, mode="reduce-overhead")
    static = {}
    for b, s in ENCODER_SIZES:
        bb = next(k for k in ENCODER_BUCKETS["B"] if k >= b)
        sb = next(k for k in ENCODER_BUCKETS["S"] if k >= s)
        if (bb, sb) not in static:
            static[(bb, sb)] = runner.compile(f"encoder_small_B{bb}_S{sb}", model,
                                              flags=("--bind-dim", f"B={bb}", "--bind-dim", f"S={sb}"))
        us, _ = bench_dims(runner, padded, f"B={b},S={s}", iters)
        st_us, _ = bench_dims(runner, static[(bb, sb)], f"B={bb},S={sb}", iters) if static[(bb, sb)] else (None, None)
        if us is None or st_us is None:
            continue
        tag = f"workload=encoder_small B={b} S={s}"
        log(f"RESULT {tag} impl=cgc_padded bucket={bb}x{sb} us={us:.3f}")
        log(f"RESULT {tag} impl=cgc_static_bucket bucket={bb}x{sb} us={st_us:.3f} ratio={us / st_us:.3f}")
        tokens = torch.tensor(rng.integers(0, 1000, (b, s)), dtype=torch.int64, device="cuda")
        want_out, want_pooled = layer(tokens)
        got = runner.run(f"encoder_small_B{b}_S{s}", "cgc_padded", padded,
                         {"tokens": tokens.cpu().numpy(), **weights})
        if got is not None:
            runner.check(f"encoder_small_B{b}_S{s}", "cgc_padded", got["out"], want_out.cpu().numpy(), 1e-4)
            runner.check(f"encoder_small_B{b}_S{s}", "cgc_padded_pooled", got["pooled"],
                         want_pooled.cpu().numpy(), 1e-4)
        eager_us, _ = time_events(lambda: layer(tokens), iters, 50)
        log(f"RESULT {tag} impl=torch_eager us={eager_us:.3f}")
        static_tokens = tokens.clone()
        graph = capture(torch, lambda: layer(static_tokens))
        graph_us, _ = time_events(graph.replay, iters, 50)
        log(f"RESULT {tag} impl=torch_graph_per_shape us={graph_us:.3f}")
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        compiled(tokens)
        torch.cuda.synchronize()
        first_ms = (time.perf_counter() - t0) * 1000
        ro_us, _ = time_events(lambda: compiled(tokens), iters, 50)
        log(f"RESULT {tag} impl=torch_compile_ro us={ro_us:.3f} first_call_ms={first_ms:.1f}")


if __name__ == "__main__":
    sys.exit(main())
