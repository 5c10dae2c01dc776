#!/usr/bin/env python3
"""cgc vs PyTorch on the seed workloads and on device-side control flow, one GPU, one run.

Two steps, because the GPU machine has no LLVM (cgc cannot compile there):

  CPU machine:  bench/run_bench.py stage --cgc build/tools/cgc --out DIR
      compiles examples/chain100.json with --no-fuse (checks with
      `cgc --dump-artifact` that the graph has 100 kernel nodes), a
      1000-node chain (graph build time), gelu_small.json, gelu_large.json,
      branch_1m.json (an `if` on sum(x) > 0) and newton_sqrt.json (a
      `while` with a data-dependent trip count) into DIR.
  GPU machine:  bench/run_bench.py run --cgc BIN --artifacts DIR [--log FILE]
      cgc: `BIN bench ART --iters N --warmup W --repeats 5` (graph replay and
      eager launches; CUDA events around N back-to-back runs, median of 5
      repeats after warm-up; inputs filled once with seeded random values).
      PyTorch, same method in this process on the same GPU: eager and
      torch.cuda.graph replay of the same computation (chain100: 100
      dependent y = y + 1 on 256 floats; gelu: x*0.5*(1+erf(x/1.41421)) on
      random data, plus F.gelu in a graph); a device-to-device copy of
      gelu_large's bytes as a ceiling; branch_1m against `.item()` + a
      Python branch and against torch.cuda.graph of both arms + torch.where;
      newton_sqrt against the loop with `.item()` per trip. fp32, TF32 off.
      `cgc bench` also reports the median time of cgc_context_create (graph
      build + instantiate + upload).
      Writes the raw log (RESULT lines) to --log (default
      bench/results/<gpu>-<date>.log); bench/make_perf_md.py turns it into
      docs/perf.md.
"""
import argparse, datetime, os, re, shlex, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WORKLOADS = {  # name: (example, extra cgc flags, iters for cgc / torch eager)
    "chain100": ("chain100.json", ["--no-fuse"], 1000, 200),
    "gelu_small": ("gelu_small.json", [], 2000, 1000),
    "gelu_large": ("gelu_large.json", [], 1000, 500),
    "chain1000": (None, ["--no-fuse"], 200, 20),
    "branch_1m": ("branch_1m.json", [], 1000, 200),
    "newton_sqrt": ("newton_sqrt.json", [], 500, 50),
}


def stage(args):
    os.makedirs(args.out, exist_ok=True)
    for name, (src, flags, _, _) in WORKLOADS.items():
        art = os.path.join(args.out, name + ".cgc")
        if src is None:  # chain1000: generated, not committed
            src = os.path.abspath(os.path.join(args.out, name + ".json"))
            subprocess.run([sys.executable, os.path.join(ROOT, "examples/gen_chain100.py"),
                            "1000", src], check=True)
        cmd = [args.cgc, os.path.join(ROOT, "examples", src), "-o", art] + flags
        print("+", " ".join(cmd))
        subprocess.run(cmd, check=True)
        dump = subprocess.run([args.cgc, "--dump-artifact", art], check=True,
                              capture_output=True, text=True).stdout
        with open(os.path.join(args.out, name + ".manifest.txt"), "w") as f:
            f.write(dump)
        m = re.search(r"^graph \S+: (\d+) nodes \((\d+) kernel", dump, re.M)
        if not m:
            sys.exit(f"run_bench: no graph summary in the --dump-artifact output of {art}")
        kernels = int(m.group(2))
        adds = len(re.findall(r"^\s+n\d+ kernel #\d+ add_", dump, re.M))
        print(f"{name}: {m.group(1)} graph nodes, {kernels} kernel nodes ({adds} add kernels)")
        if name.startswith("chain") and adds != int(name[5:]):
            sys.exit(f"run_bench: chain100 --no-fuse has {adds} add kernel nodes, want 100")
        with open(os.path.join(args.out, name + ".nodes"), "w") as f:
            f.write(str(kernels))


def time_events(fn, iters, warmup, repeats=5):
    import torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(repeats):
        s.record()
        for _ in range(iters):
            fn()
        e.record()
        e.synchronize()
        samples.append(s.elapsed_time(e) * 1000.0 / iters)
    samples.sort()
    return samples[len(samples) // 2], samples


def capture(torch, fn):
    """torch.cuda.graph of fn after three warm-up calls on a side stream."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g


def control_flow(torch, dev, result, out):
    """PyTorch's ways of running branch_1m and newton_sqrt (same inputs as
    `cgc bench`: seeded values in [-2, 2], multiples of 1/8)."""
    g = torch.Generator(device="cpu").manual_seed(42)
    x = ((torch.randint(0, 33, (1048576,), generator=g) - 16) / 8.0).to(dev)
    y = torch.empty_like(x)

    def then_arm(t):
        return torch.tanh(t) * 2 + 1

    def else_arm(t):
        return torch.exp(-t * t) - 0.5

    def branch_item():  # the host reads the sum: a sync per run
        y.copy_(then_arm(x) if x.sum().item() > 0 else else_arm(x))

    def branch_where():  # both arms, every run
        y.copy_(torch.where(x.sum() > 0, then_arm(x), else_arm(x)))
    iters = WORKLOADS["branch_1m"][2]
    out(f"# branch_1m: sum(x) = {x.sum().item():.3f}")
    result("branch_1m", "torch_item", *time_events(branch_item, iters // 5, 20), iters // 5)
    graph = capture(torch, branch_where)
    result("branch_1m", "torch_graph_where", *time_events(graph.replay, iters, 50), iters)

    a = ((torch.randint(0, 33, (65536,), generator=g) - 16) / 8.0).to(dev)
    sq = a.abs() + 0.1
    trips = [0]

    def newton_item():  # one host read per trip
        yv, n = sq.clone(), 0
        while n < 100 and (yv * yv - sq).abs().max().item() > 1e-3:
            yv = (yv + sq / yv) * 0.5
            n += 1
        trips[0] = n
    iters = WORKLOADS["newton_sqrt"][3]
    result("newton_sqrt", "torch_item", *time_events(newton_item, iters, 5), iters)
    out(f"# newton_sqrt: PyTorch ran {trips[0]} trips")


def run(args):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    gpu = torch.cuda.get_device_name(0)
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    log_path = args.log or os.path.join(
        ROOT, "bench/results", re.sub(r"[^A-Za-z0-9]+", "-", gpu).strip("-") + f"-{date}.log")
    os.makedirs(os.path.dirname(os.path.abspath(log_path)), exist_ok=True)
    lines = []

    def out(s):
        print(s, flush=True)
        lines.append(s)
    out(f"# gpu: {gpu}")
    out(f"# nvidia-smi: {smi}")
    out(f"# date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}")
    out(f"# torch: {torch.__version__} cuda {torch.version.cuda}")
    out(f"# command: {' '.join(shlex.quote(a) for a in sys.argv)}")
    out("# method: CUDA events around N back-to-back runs, median of 5 repeats after warm-up")

    def result(workload, impl, us, samples, iters, nodes=None):
        extra = f" nodes={nodes} us_per_node={us / nodes:.3f}" if nodes else ""
        out(f"RESULT workload={workload} impl={impl} us={us:.3f} iters={iters}{extra} "
            f"samples={','.join(f'{x:.3f}' for x in samples)}")

    # ---- cgc (graph replay and eager), via `cgc bench`
    for name, (_, _, iters, _) in WORKLOADS.items():
        art = os.path.join(args.artifacts, name + ".cgc")
        nodes = int(open(os.path.join(args.artifacts, name + ".nodes")).read())
        cmd = [args.cgc, "bench", art, "--iters", str(iters), "--warmup", str(max(iters // 10, 20)),
               "--repeats", "5"]
        out("# + " + " ".join(cmd))
        r = subprocess.run(cmd, capture_output=True, text=True)
        for l in (r.stdout + r.stderr).strip().splitlines():
            out("#   " + l)
        if r.returncode != 0:
            out(f"ERROR workload={name} impl=cgc rc={r.returncode}")
            continue
        kv = dict(l.split("=", 1) for l in r.stdout.split() if "=" in l)
        if "context_create_ms" in kv:
            out(f"RESULT workload={name} impl=cgc_build ms={kv['context_create_ms']} nodes={nodes}")
        for mode in ("graph", "eager"):
            if f"{mode}_us_per_run" in kv:
                result(name, f"cgc_{mode}", float(kv[f"{mode}_us_per_run"]),
                       [float(x) for x in kv[f"{mode}_us_samples"].split(",")], iters,
                       nodes if name.startswith("chain") else None)

    # ---- PyTorch, same method, same GPU
    dev = torch.device("cuda")
    torch.manual_seed(0)

    def torch_pair(name, fn, iters_graph, iters_eager, nodes=None, label="torch"):
        result(name, f"{label}_eager", *time_events(fn, iters_eager, 20), iters_eager, nodes)
        g = capture(torch, fn)
        result(name, f"{label}_graph", *time_events(g.replay, iters_graph, 50), iters_graph, nodes)

    x = torch.randn(256, device=dev)
    y = torch.empty_like(x)

    def chain():
        t = x
        for _ in range(100):
            t = t + 1
        y.copy_(t)  # keep the result (one extra copy kernel is not counted in nodes)
    torch_pair("chain100", chain, WORKLOADS["chain100"][2], WORKLOADS["chain100"][3], 100)

    for name, shape in (("gelu_small", (1, 3, 224, 224)), ("gelu_large", (32, 3, 224, 224))):
        xg = torch.randn(shape, device=dev)
        yg = torch.empty_like(xg)

        def gelu_expr():
            yg.copy_(xg * 0.5 * (1 + torch.erf(xg / 1.41421)))

        def gelu_fn():
            yg.copy_(torch.nn.functional.gelu(xg))
        torch_pair(name, gelu_expr, WORKLOADS[name][2], WORKLOADS[name][3])
        torch_pair(name, gelu_fn, WORKLOADS[name][2], WORKLOADS[name][3], label="torch_F.gelu")
        if name == "gelu_large":
            src, dst = xg, torch.empty_like(xg)
            us, samples = time_events(lambda: dst.copy_(src), 1000, 50)
            result(name, "d2d_copy", us, samples, 1000)
            nbytes = 2 * src.numel() * src.element_size()
            out(f"# d2d_copy moved {nbytes} bytes (read+write) per iter = {nbytes / us / 1e6:.3f} TB/s")

    control_flow(torch, dev, result, out)
    with open(log_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"run_bench: wrote {log_path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("stage")
    a.add_argument("--cgc", required=True)
    a.add_argument("--out", required=True)
    b = sub.add_parser("run")
    b.add_argument("--cgc", required=True)
    b.add_argument("--artifacts", required=True)
    b.add_argument("--log", default="")
    args = ap.parse_args()
    stage(args) if args.cmd == "stage" else run(args)


if __name__ == "__main__":
    main()
