#!/usr/bin/env python3
"""Kernel quality: cgc against torch.compile on row ops, reductions, broadcasts and long fused chains.

  bench/kernels.py --cgc build/tools/cgc [--out DIR] [--log FILE] [--only W,...]

For each workload (issue 11's list): writes the model as JSON, compiles it
with `cgc` (on this machine), times it with `cgc bench` (CUDA events around
N back-to-back graph replays, median of 5 repeats after warm-up) and, in
this process on the same GPU with the same method, PyTorch:
  torch_graph    eager PyTorch captured in one torch.cuda.graph
  torch_compile  torch.compile (default mode), its kernels captured in a
                 torch.cuda.graph
  copy           a device-to-device copy moving the workload's minimum
                 traffic (every input read once, every output written
                 once), captured in a torch.cuda.graph: the memory floor.
Writes RESULT lines (us per run) and INFO lines (bytes, the kernel count of
each artifact) to --log (default bench/results/kernels-<gpu>-<date>.log);
bench/make_perf_md.py --kernels LOG renders them in docs/perf.md.
"""
import argparse, json, os, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from torch_timing import BenchLog, time_events, capture  # noqa: E402

DT = {"f32": 4, "bf16": 2, "i64": 8}


def model(name, inputs, nodes, outputs):
    return {"format_version": 1, "name": name,
            "inputs": [{"name": n, "dtype": d, "shape": s} for n, d, s in inputs],
            "nodes": nodes, "outputs": [{"name": o, "value": o} for o in outputs]}


def node(name, op, inputs, **attrs):
    return {"name": name, "op": op, "inputs": inputs, "attrs": attrs}


def chain20_nodes():
    nodes, prev = [], "x"
    cycle = [("tanh", []), ("sigmoid", []), ("mul", ["w"]), ("exp", []), ("add", ["x"])]
    for i in range(20):
        op, extra = cycle[i % len(cycle)]
        nodes.append(node(f"c{i}" if i < 19 else "y", op, [prev] + extra))
        prev = nodes[-1]["name"]
    return nodes


def workloads():
    """(name, model, torch builder, bytes of minimum traffic)."""
    W = []
    for name, shape in (("softmax_32x16x256x256", [32, 16, 256, 256]), ("softmax_512x30522", [512, 30522])):
        n = 1
        for d in shape:
            n *= d
        W.append((name, model(name, [("x", "f32", shape)], [node("y", "softmax", ["x"], axis=-1)], ["y"]),
                  lambda t, F, shape=shape: (lambda x: (lambda: torch_softmax(t, x)),
                                             [t.randn(*shape, device="cuda")]), 8 * n))
    W.append(("cross_entropy_4096x30522",
              model("ce", [("x", "f32", [4096, 30522]), ("t", "i64", [4096])],
                    [node("y", "cross_entropy", ["x", "t"], reduction="mean")], ["y"]),
              lambda t, F: (lambda x, tg: (lambda: F.cross_entropy(x, tg)),
                            [t.randn(4096, 30522, device="cuda"),
                             t.randint(0, 30522, (4096,), device="cuda")]),
              4 * 4096 * 30522 + 8 * 4096 + 4))
    W.append(("layernorm_8192x1024",
              model("ln", [("x", "f32", [8192, 1024]), ("w", "f32", [1024]), ("b", "f32", [1024])],
                    [node("y", "layernorm", ["x", "w", "b"], eps=1e-5)], ["y"]),
              lambda t, F: (lambda x, w, b: (lambda: F.layer_norm(x, (1024,), w, b, 1e-5)),
                            [t.randn(8192, 1024, device="cuda"), t.randn(1024, device="cuda"),
                             t.randn(1024, device="cuda")]),
              8 * 8192 * 1024))
    for dt, tdt in (("f32", "float32"), ("bf16", "bfloat16")):
        W.append((f"bias_gelu_{dt}_8192x4096",
                  model("bg", [("x", dt, [8192, 4096]), ("b", dt, [4096])],
                        [node("a", "add", ["x", "b"]), node("y", "gelu", ["a"])], ["y"]),
                  lambda t, F, tdt=tdt: (lambda x, b: (lambda: F.gelu(x + b)),
                                         [t.randn(8192, 4096, device="cuda", dtype=getattr(t, tdt)),
                                          t.randn(4096, device="cuda", dtype=getattr(t, tdt))]),
                  2 * DT[dt] * 8192 * 4096))
    for name, shape, axis in (("sum_4194304x4_ax1", [4194304, 4], 1), ("sum_32x2097152_ax1", [32, 2097152], 1),
                              ("sum_4096x1024_ax0", [4096, 1024], 0)):
        W.append((name, model(name, [("x", "f32", shape)], [node("y", "sum", ["x"], axes=[axis])], ["y"]),
                  lambda t, F, shape=shape, axis=axis: (lambda x: (lambda: x.sum(axis)),
                                                        [t.randn(*shape, device="cuda")]),
                  4 * shape[0] * shape[1] + 4 * (shape[0] * shape[1] // shape[axis])))
    W.append(("residual_dropout_layernorm_8192x1024",
              model("rdl", [("x", "f32", [8192, 1024]), ("r", "f32", [8192, 1024]), ("rng", "i64", [2]),
                            ("w", "f32", [1024]), ("b", "f32", [1024])],
                    [node("d", "dropout", ["x", "rng"], p=0.1), node("s", "add", ["r", "d"]),
                     node("y", "layernorm", ["s", "w", "b"], eps=1e-5)], ["y"]),
              lambda t, F: (lambda x, r, w, b: (lambda: F.layer_norm(r + F.dropout(x, 0.1, True), (1024,), w, b, 1e-5)),
                            [t.randn(8192, 1024, device="cuda"), t.randn(8192, 1024, device="cuda"),
                             t.randn(1024, device="cuda"), t.randn(1024, device="cuda")]),
              12 * 8192 * 1024))
    n = 16 * 1024 * 1024
    W.append(("chain20_16M", model("chain20", [("x", "f32", [n]), ("w", "f32", [n])], chain20_nodes(), ["y"]),
              lambda t, F: (lambda x, w: (lambda: torch_chain20(t, x, w)),
                            [t.randn(n, device="cuda"), t.randn(n, device="cuda")]),
              12 * n))
    return W


def torch_softmax(t, x):
    return t.softmax(x, -1)


def torch_chain20(t, x, w):
    y = x
    for i in range(20):
        k = i % 5
        y = t.tanh(y) if k == 0 else t.sigmoid(y) if k == 1 else y * w if k == 2 else t.exp(y) if k == 3 else y + x
    return y


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cgc", required=True)
    ap.add_argument("--out", default="")
    ap.add_argument("--log", default="")
    ap.add_argument("--only", default="")
    ap.add_argument("--iters", type=int, default=200)
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F
    torch.backends.cuda.matmul.allow_tf32 = False
    only = set(filter(None, args.only.split(",")))
    out_dir = args.out or tempfile.mkdtemp(prefix="cgc-kernels-")
    say = BenchLog(torch, "kernels", args.log,
                   f"CUDA events around {args.iters} back-to-back runs, median of 5 repeats after warm-up")
    status = 0
    for name, m, build, nbytes in workloads():
        if only and name not in only:
            continue
        src = os.path.join(out_dir, name + ".json")
        art = os.path.join(out_dir, name + ".cgc")
        with open(src, "w") as f:
            json.dump(m, f)
        r = subprocess.run([args.cgc, src, "-o", art],
                           capture_output=True, text=True)
        say("# " + (r.stderr.strip().splitlines() or ["?"])[-1])
        if r.returncode:
            say(f"ERROR workload={name} impl=cgc compile rc={r.returncode}")
            status = 1
            continue
        kernels = r.stderr.split(" kernels")[0].rsplit(" ", 1)[-1] if " kernels" in r.stderr else "?"
        say(f"INFO workload={name} bytes={nbytes} cgc_kernels={kernels}")
        b = subprocess.run([args.cgc, "bench", art, "--iters", str(args.iters), "--warmup", "20",
                            "--repeats", "5"], capture_output=True, text=True)
        kv = dict(t.split("=", 1) for t in b.stdout.split() if "=" in t)
        if b.returncode or "graph_us_per_run" not in kv:
            say(f"ERROR workload={name} impl=cgc bench rc={b.returncode} {b.stderr.strip()[-300:]}")
            status = 1
        else:
            say(f"RESULT workload={name} impl=cgc us={kv['graph_us_per_run']} samples={kv['graph_us_samples']}")
        make, tensors = build(torch, F)
        eager = make(*tensors)
        for impl, fn in (("torch_graph", eager), ("torch_compile", None)):
            try:
                if fn is None:
                    compiled = torch.compile(make(*tensors))
                    for _ in range(3):
                        compiled()
                    fn = compiled
                g = capture(torch, fn)
                us, samples = time_events(g.replay, args.iters, 20)
                say(f"RESULT workload={name} impl={impl} us={us:.3f} samples=" +
                    ",".join(f"{s:.3f}" for s in samples))
            except Exception as e:  # a failed peer is reported, not fatal
                say(f"ERROR workload={name} impl={impl} {type(e).__name__}: {str(e)[:200]}")
        half = nbytes // 2
        src_t = torch.empty(half, dtype=torch.uint8, device="cuda")
        dst_t = torch.empty_like(src_t)
        g = capture(torch, lambda: dst_t.copy_(src_t))
        us, samples = time_events(g.replay, args.iters, 20)
        say(f"RESULT workload={name} impl=copy us={us:.3f} samples=" + ",".join(f"{s:.3f}" for s in samples))
        del tensors, eager, src_t, dst_t, g
        torch.cuda.empty_cache()
    say.write()
    return status


if __name__ == "__main__":
    sys.exit(main())
