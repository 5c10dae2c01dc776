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
import argparse, json, os, subprocess, sys, tempfile, time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from torch_timing import BenchLog, time_events, capture  # noqa: E402
from cgc_tool import Runner  # noqa: E402

# Per model: the sizes run, each dim's buckets (as the model declares
# them) and the check's tolerance.
MODELS = {
    "dynamic_batch": {"sizes": [{"B": b} for b in (1, 5, 8, 13, 16, 31, 32, 47, 64)],
                      "buckets": {"B": [8, 16, 32, 64]}, "rtol": 1e-5},
    "encoder_small": {"sizes": [{"B": b, "S": s} for b, s in
                                ((1, 16), (4, 32), (3, 50), (8, 64), (16, 100), (16, 128),
                                 (32, 200), (64, 256), (48, 400), (64, 512))],
                      "buckets": {"B": [4, 16, 64], "S": [32, 64, 128, 256, 512]},
                      "rtol": 1e-4},
}


def dims_arg(dims):
    return ",".join(f"{k}={v}" for k, v in sorted(dims.items()))


def bench_dims(runner, art, dims, iters, alternate=None):
    """cgc bench --dims (every other replay at `alternate`, when given): the
    graph µs (None after an ERROR line)."""
    extra = ["--alternate-dims", dims_arg(alternate)] if alternate else []
    b = subprocess.run([runner.cgc, "bench", art, "--dims", dims_arg(dims), "--iters", str(iters),
                        "--warmup", str(iters // 10), "--repeats", "5"] + extra,
                       capture_output=True, text=True)
    kv = dict(t.split("=", 1) for t in b.stdout.split() if "=" in t)
    if b.returncode or "graph_us_per_run" not in kv:
        runner.fail(f"ERROR dims={dims_arg(dims)} bench rc={b.returncode} {b.stderr.strip()[-300:]}")
        return None
    return float(kv["graph_us_per_run"])


def initial_weights(model, rng):
    """Every parameter drawn like its initializer (seeded by rng)."""
    weights = {}
    for i in model["inputs"]:
        if i.get("kind") == "parameter":
            init = i["init"]
            if init["dist"] == "uniform":
                v = rng.uniform(init["low"], init["high"], i["shape"])
            else:
                v = np.full(i["shape"], 1.0 if init["dist"] == "ones" else 0.0)
            weights[i["name"]] = v.astype(np.float32)
    return weights


def dynamic_batch(torch, P, rng):
    """The PyTorch model and an input maker: (fn(x) -> outputs, dims -> inputs)."""
    F = torch.nn.functional

    def fn(x):
        h = F.gelu(F.linear(x, P["fc1.w"], P["fc1.b"]))
        return {"probs": torch.softmax(F.linear(h, P["fc2.w"], P["fc2.b"]), dim=-1)}

    def inputs(dims):
        return torch.tensor(rng.uniform(-3, 3, (dims["B"], 64)), dtype=torch.float32, device="cuda")
    return fn, inputs, "x"


def encoder_small(torch, P, rng):
    F = torch.nn.functional

    def fn(tokens):
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
        return {"out": out, "pooled": out.mean(1)}

    def inputs(dims):
        return torch.tensor(rng.integers(0, 1000, (dims["B"], dims["S"])), dtype=torch.int64,
                            device="cuda")
    return fn, inputs, "tokens"


def torch_peers(torch, log, tag, fn, compiled, x, iters):
    """PyTorch eager, a torch.cuda.graph recorded for this shape, and
    torch.compile reduce-overhead with its first call at the shape apart."""
    eager_us, _ = time_events(lambda: fn(x), iters, 50)
    log(f"RESULT {tag} impl=torch_eager us={eager_us:.3f}")
    static_x = x.clone()
    graph = capture(torch, lambda: fn(static_x))
    graph_us, _ = time_events(graph.replay, iters, 50)
    log(f"RESULT {tag} impl=torch_graph_per_shape us={graph_us:.3f}")
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    compiled(x)
    torch.cuda.synchronize()
    first_ms = (time.perf_counter() - t0) * 1000
    ro_us, _ = time_events(lambda: compiled(x), iters, 50)
    log(f"RESULT {tag} impl=torch_compile_ro us={ro_us:.3f} first_call_ms={first_ms:.1f}")


def neighbour(dims, bucket, lows):
    """A size next to `dims` in the same bucket (its first dim one less,
    or one more), or None."""
    name = sorted(dims)[0]
    lower = {**dims, name: dims[name] - 1}
    if lower[name] >= lows[name] and lower[name] > bucket[name] // 2:
        return lower
    higher = {**dims, name: dims[name] + 1}
    return higher if higher[name] <= bucket[name] else None


def static_compile(runner, static, name, model, dims):
    """The model compiled with --bind-dim at `dims` (cached by size)."""
    key = dims_arg(dims)
    if key not in static:
        flags = [a for k, v in sorted(dims.items()) for a in ("--bind-dim", f"{k}={v}")]
        static[key] = runner.compile(f"{name}_{key.replace(',', '_')}", model, flags=flags)
    return static[key]


def measure(torch, runner, log, name, make, rng, iters):
    """One model at every size: cgc padded against cgc static at the
    bucket (the goal) and at the size itself (what padding costs), and at
    a new size every replay (what writing the real dims costs), checked
    against PyTorch, then PyTorch's peers."""
    spec = MODELS[name]
    with open(os.path.join(ROOT, "examples", name + ".json")) as f:
        model = json.load(f)
    t0 = time.perf_counter()
    padded = runner.compile(name, model, flags=())
    log(f"INFO workload={name} cgc_compile_s={time.perf_counter() - t0:.2f}")
    if not padded:
        return
    weights = initial_weights(model, rng)
    fn, inputs, input_name = make(torch, {k: torch.tensor(v, device="cuda") for k, v in weights.items()}, rng)
    compiled = torch.compile(fn, mode="reduce-overhead")
    static = {}
    lows = {d["name"]: d["min"] for d in model["dims"]}
    for dims in spec["sizes"]:
        bucket = {k: next(v for v in spec["buckets"][k] if v >= dims[k]) for k in dims}
        at_bucket = static_compile(runner, static, name, model, bucket)
        exact = static_compile(runner, static, name, model, dims)
        us = bench_dims(runner, padded, dims, iters)
        static_us = bench_dims(runner, at_bucket, bucket, iters) if at_bucket else None
        exact_us = bench_dims(runner, exact, dims, iters) if exact else None
        other = neighbour(dims, bucket, lows)
        new_size_us = bench_dims(runner, padded, dims, iters, other) if other else None
        if us is None or static_us is None:
            continue
        tag = f"workload={name} " + " ".join(f"{k}={v}" for k, v in sorted(dims.items()))
        shown = "x".join(str(v) for _, v in sorted(bucket.items()))
        log(f"RESULT {tag} impl=cgc_padded bucket={shown} us={us:.3f}")
        log(f"RESULT {tag} impl=cgc_static_bucket bucket={shown} us={static_us:.3f} "
            f"ratio={us / static_us:.3f}")
        if exact_us is not None:
            log(f"RESULT {tag} impl=cgc_static_exact us={exact_us:.3f} "
                f"ratio={us / exact_us:.3f}")
        if new_size_us is not None:
            log(f"RESULT {tag} impl=cgc_padded_new_size_every_run alternate={dims_arg(other)} "
                f"us={new_size_us:.3f} ratio={new_size_us / us:.3f}")
        x = inputs(dims)
        want = fn(x)
        check = f"{name}_{dims_arg(dims).replace(',', '_')}"
        got = runner.run(check, "cgc_padded", padded, {input_name: x.cpu().numpy(), **weights})
        for out, value in want.items():
            if got is not None:
                runner.check(check, f"cgc_padded_{out}", got[out], value.cpu().numpy(), spec["rtol"])
        torch_peers(torch, log, tag, fn, compiled, x, iters)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cgc", required=True)
    ap.add_argument("--log")
    ap.add_argument("--iters", type=int, default=2000)
    args = ap.parse_args()
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    log = BenchLog(torch, "dynamic-shapes", args.log,
                   f"CUDA events around {args.iters} back-to-back runs, median of 5 repeats "
                   "after warm-up; f32 without TF32")
    runner = Runner(args.cgc, tempfile.mkdtemp(prefix="cgc-dyn-"), log)
    rng = np.random.default_rng(0)
    measure(torch, runner, log, "dynamic_batch", dynamic_batch, rng, args.iters)
    measure(torch, runner, log, "encoder_small", encoder_small, rng, args.iters)
    log.write()
    return runner.status


if __name__ == "__main__":
    sys.exit(main())
