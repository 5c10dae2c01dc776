#!/usr/bin/env python3
"""cgc vs PyTorch on the seed workloads, device-side control flow and matrix products, one GPU, one run.

Two steps, because cgc artifacts hold their weights and the carried folder
is small:

  bench/run_bench.py stage --cgc build/tools/cgc --out DIR
      compiles the small artifacts into DIR: examples/chain100.json with
      --no-fuse (checks with `cgc --dump-artifact` that the graph has 100
      kernel nodes), a 1000-node chain (graph build time), gelu_small.json,
      gelu_large.json, branch_1m.json (an `if` on sum(x) > 0),
      newton_sqrt.json (a `while` with a data-dependent trip count) and
      mlp8_infer_b1.json. Each artifact gets NAME.nodes (kernel nodes),
      NAME.manifest.txt and NAME.stamp (a hash of the model, the flags and
      the compiler binary).
  bench/run_bench.py run --cgc BIN --artifacts DIR [--log FILE] [--only W,...]
      First compiles, with BIN (the full compiler: `cgc` there), every
      artifact that DIR lacks or whose stamp does not match: the matrix
      product workloads linear_pair_f32 (~40 MB of weights), linear_pair_bf16
      and linear_b1_bf16 (32 MB) are always compiled here, on the GPU
      machine, from the example JSON in the checkout. With cgc-rt as BIN an
      existing artifact is kept and a missing one is an ERROR line.
      cgc: `BIN bench ART --iters N --warmup W --repeats 5` (graph replay and
      eager launches, timed in C++ with CUDA events around N back-to-back
      runs, median of 5 repeats after warm-up; inputs filled once with
      seeded random values); `--print-algorithms` for the product workloads
      (ALGO lines).
      PyTorch, same method in this process on the same GPU, timed from
      Python: eager and torch.cuda.graph replay of the same computation
      (chain100: 100 dependent y = y + 1 on 256 floats; gelu:
      x*0.5*(1+erf(x/1.41421)) on random data, plus F.gelu in a graph); a
      device-to-device copy of gelu_large's bytes as a ceiling; branch_1m
      against `.item()` + a Python branch and against torch.cuda.graph of
      both arms + torch.where; newton_sqrt against the loop with `.item()`
      per trip. fp32, TF32 off.
      Matrix products (bench/products.py): mlp8_infer_b1 against PyTorch
      eager, torch.cuda.graph, torch.compile(mode="reduce-overhead") and
      torch.compile(mode="max-autotune-no-cudagraphs") replayed in a
      torch.cuda.graph (skipped with --no-max-autotune or
      CGC_BENCH_MAX_AUTOTUNE=0); linear_pair_{f32,bf16} (batch 640) against
      nn.Linear (F.linear: cuBLASLt addmm with a bias epilogue) eager and in
      a torch.cuda.graph; linear_b1_bf16 against the same and against a
      torch copy_ of its 32 MB weight in a torch.cuda.graph (bandwidth
      ceiling). Each product workload is also checked: `cgc run` on the
      timed artifact with NumPy-drawn weights and input (written as state
      into the engine) against PyTorch with the same weights
      (bench/products.py states the tolerance): CHECK lines; a failed check
      is an ERROR line and makes the exit status 1 after the whole run.
      `cgc bench` also reports the median time of cgc_context_create (graph
      build + instantiate + upload).
      Writes the raw log (RESULT, INFO, CHECK, ALGO lines) to --log (default
      bench/results/<gpu>-<date>.log); bench/make_perf_md.py turns it into
      docs/perf.md.
  bench/run_bench.py run ... --dry-run
      does everything that needs no GPU and no PyTorch: compiles the missing
      artifacts, writes the correctness inputs and prints the commands.
  bench/run_bench.py selftest --cgc-opt build/tools/cgc-opt [--only W,...]
      CPU check of the correctness path: the same NumPy weights through the
      reference interpreter (`cgc-opt --interpret --inputs`, in place of
      `cgc run`) against the float64 NumPy reference, same tolerance.
"""
import argparse, datetime, hashlib, os, re, shlex, shutil, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import products as P  # noqa: E402
from torch_timing import time_events, capture  # noqa: E402

WORKLOADS = {  # name: (example, extra cgc flags, iters for cgc / torch eager)
    "chain100": ("chain100.json", ["--no-fuse"], 1000, 200),
    "gelu_small": ("gelu_small.json", [], 2000, 1000),
    "gelu_large": ("gelu_large.json", [], 1000, 500),
    "chain1000": (None, ["--no-fuse"], 200, 20),
    "branch_1m": ("branch_1m.json", [], 1000, 200),
    "newton_sqrt": ("newton_sqrt.json", [], 500, 50),
}


def source_of(name, outdir):
    """(model JSON path, cgc flags) of an artifact; chain1000 is generated
    into \\p outdir first."""
    if name in WORKLOADS:
        src, flags = WORKLOADS[name][:2]
        if src is None:  # chain1000: generated, not committed
            src = os.path.abspath(os.path.join(outdir, name + ".json"))
            subprocess.run([sys.executable, os.path.join(ROOT, "examples/gen_chain100.py"),
                            name[5:], src], check=True, stdout=subprocess.DEVNULL)
            return src, flags
        return os.path.join(ROOT, "examples", src), flags
    return os.path.join(ROOT, "examples", P.PRODUCTS[name]["example"]), []


def stamp_of(cgc, src, flags):
    h = hashlib.sha256()
    with open(src, "rb") as f:
        h.update(f.read())
    h.update(("\0" + " ".join(flags) + "\0").encode())
    exe = shutil.which(cgc) or cgc
    with open(exe, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def compile_one(cgc, outdir, name, say=print):
    """Compiles artifact \\p name into \\p outdir with NAME.nodes,
    NAME.manifest.txt and NAME.stamp; raises RuntimeError on failure."""
    os.makedirs(outdir, exist_ok=True)
    art = os.path.join(outdir, name + ".cgc")
    src, flags = source_of(name, outdir)
    cmd = [cgc, src, "-o", art] + flags
    say("+ " + " ".join(cmd))
    r = subprocess.run(cmd, capture_output=True, text=True)
    for l in (r.stdout + r.stderr).strip().splitlines():
        say("  " + l)
    if r.returncode != 0:
        raise RuntimeError(f"{name}: cgc failed (rc={r.returncode})")
    r = subprocess.run([cgc, "--dump-artifact", art], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{name}: cgc --dump-artifact failed: {r.stderr.strip()}")
    dump = r.stdout
    with open(os.path.join(outdir, name + ".manifest.txt"), "w") as f:
        f.write(dump)
    m = re.search(r"^graph \S+: (\d+) nodes \((\d+) kernel.*", dump, re.M)
    if not m:
        raise RuntimeError(f"no graph summary in the --dump-artifact output of {art}")
    kernels = int(m.group(2))
    adds = len(re.findall(r"^\s+n\d+ kernel #\d+ add_", dump, re.M))
    say(f"{name}: {m.group(0)}" + (f" ({adds} add kernels)" if name.startswith("chain") else ""))
    if name.startswith("chain") and adds != int(name[5:]):
        raise RuntimeError(f"{name} --no-fuse has {adds} add kernel nodes, want {name[5:]}")
    with open(os.path.join(outdir, name + ".nodes"), "w") as f:
        f.write(str(kernels))
    with open(os.path.join(outdir, name + ".stamp"), "w") as f:
        f.write(stamp_of(cgc, src, flags))
    return art


def staged_names():
    return list(WORKLOADS) + [n for n, s in P.PRODUCTS.items() if s["stage"]]


def stage(args):
    for name in staged_names():
        try:
            compile_one(args.cgc, args.out, name)
        except RuntimeError as e:
            sys.exit(f"run_bench: {e}")


def ensure_artifact(args, name, out):
    """The artifact of \\p name in --artifacts, compiled now when missing or
    stale; None (after an ERROR line) when there is none."""
    art = os.path.join(args.artifacts, name + ".cgc")
    have = os.path.exists(art) and os.path.exists(os.path.join(args.artifacts, name + ".nodes"))
    try:
        src, flags = source_of(name, args.artifacts)
        want = stamp_of(args.cgc, src, flags)
        stamp = open(os.path.join(args.artifacts, name + ".stamp")).read().strip()
    except OSError:
        want, stamp = None, ""
    if have and stamp == want:
        return art
    why = "missing" if not have else "stale (model, flags or compiler changed)"
    out(f"# {name}: artifact {why}, compiling here with {args.cgc}")
    t0 = time.time()
    try:
        compile_one(args.cgc, args.artifacts, name, say=lambda s: out("#   " + s))
        out(f"# {name}: compiled in {time.time() - t0:.1f} s")
        return art
    except (RuntimeError, OSError) as e:
        if have:
            out(f"# {name}: cannot compile ({e}); keeping the existing artifact")
            return art
        out(f"ERROR workload={name} impl=cgc_compile msg={shlex.quote(str(e))}")
        return None


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


def cgc_bench(args, name, art, iters, out, result, algorithms=False):
    """Times \\p art with `cgc bench`: RESULT lines cgc_build, cgc_graph,
    cgc_eager; with \\p algorithms, one ALGO line per cuBLASLt product."""
    nodes = int(open(os.path.join(args.artifacts, name + ".nodes")).read())
    cmd = [args.cgc, "bench", art, "--iters", str(iters), "--warmup", str(max(iters // 10, 20)),
           "--repeats", "5"] + (["--print-algorithms"] if algorithms else [])
    out("# + " + " ".join(cmd))
    if args.dry_run:
        return
    r = subprocess.run(cmd, capture_output=True, text=True)
    for l in r.stdout.strip().splitlines():
        out("#   " + l)
    for l in r.stderr.strip().splitlines():
        if algorithms and (l.startswith("product ") or l == "no matrix products"):
            out(f"ALGO workload={name} {l}")
        else:
            out("#   " + l)
    if r.returncode != 0:
        out(f"ERROR workload={name} impl=cgc rc={r.returncode}")
        return
    kv = dict(l.split("=", 1) for l in r.stdout.split() if "=" in l)
    if "context_create_ms" in kv:
        out(f"RESULT workload={name} impl=cgc_build ms={kv['context_create_ms']} "
            f"nodes={kv.get('nodes', nodes)}")
    for mode in ("graph", "eager"):
        if f"{mode}_us_per_run" in kv:
            result(name, f"cgc_{mode}", float(kv[f"{mode}_us_per_run"]),
                   [float(x) for x in kv[f"{mode}_us_samples"].split(",")], iters,
                   nodes if name.startswith("chain") else None)


def max_autotune_enabled(args):
    return not args.no_max_autotune and os.environ.get("CGC_BENCH_MAX_AUTOTUNE", "1") != "0"


def cgc_run_check(args, name, model, tensors, art, out, tmp):
    """`cgc run` of \\p art with the bench's weights; the output (float64)
    or None after an ERROR line."""
    inp, outp = os.path.join(tmp, name + ".in.safetensors"), os.path.join(tmp, name + ".out.safetensors")
    P.write_inputs(model, tensors, inp)
    cmd = [args.cgc, "run", art, "--inputs", inp, "--outputs", outp, "--overwrite"]
    out("# + " + " ".join(cmd))
    if args.dry_run:
        return None
    r = subprocess.run(cmd, capture_output=True, text=True)
    for l in (r.stdout + r.stderr).strip().splitlines():
        out("#   " + l)
    if r.returncode != 0:
        out(f"ERROR workload={name} impl=cgc_run rc={r.returncode}")
        return None
    return P.read_safetensors(outp)[model["output"]]


def run_products(args, torch, out, result):
    """The matrix-product workloads; returns the number of failed checks."""
    failed = 0
    dev = torch.device("cuda") if torch else None
    l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) if torch else 0
    tmp = tempfile.mkdtemp(prefix="cgc-bench-")
    try:
        for name, spec in P.PRODUCTS.items():
            if args.only and name not in args.only:
                continue
            model = P.load_model(name)
            linears = sum(l["op"] == "linear" for l in model["layers"])
            out(f"INFO workload={name} dtype={model['dtype']} rows={model['rows']} k={model['k']} "
                f"flops={model['flops']} weight_bytes={model['weight_bytes']} l2_bytes={l2} "
                f"nodes={len(model['layers'])} linears={linears}")
            art = ensure_artifact(args, name, out)
            if art:
                cgc_bench(args, name, art, spec["iters"], out, result, algorithms=True)
            tensors = P.make_tensors(model)
            got = cgc_run_check(args, name, model, tensors, art, out, tmp) if art else None
            if torch is None:
                continue
            failed += torch_products(args, torch, dev, name, spec, model, tensors, got, out,
                                     result)
            torch.cuda.empty_cache()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return failed


def torch_products(args, torch, dev, name, spec, model, tensors, got, out, result):
    """PyTorch's timings of one product workload and the check of cgc's
    output \\p got against PyTorch's; returns 1 if the check failed."""
    failed = 0
    seq = P.torch_model(torch, model, tensors, dev)
    x = P.to_torch(torch, *tensors[model["x"]["name"]][:2], dev)
    with torch.no_grad():
        ref_t = seq(x)
    torch.cuda.synchronize()
    ref = P.torch_to_f64(ref_t)
    f64 = P.reference_f64(model, tensors)
    vs = P.compare(model, ref, f64)
    out(f"# {name}: PyTorch eager vs the float64 NumPy reference (intermediates rounded to "
        f"{model['dtype']}): max_abs={vs['max_abs']:.3e} worst={vs['worst']:.3f}")
    if got is not None:
        r = P.compare(model, got, ref)
        c64 = P.compare(model, got, f64)
        out(P.check_line(name, r, f" cgc_vs_f64_max_abs={c64['max_abs']:.3e} "
                                  f"torch_vs_f64_max_abs={vs['max_abs']:.3e}"))
        if not r["ok"]:
            out(f"ERROR workload={name} impl=check msg=cgc_output_differs_from_PyTorch "
                f"worst={r['worst']:.3f}")
            failed = 1
    iters, iters_eager = spec["iters"], spec["iters_eager"]
    hold = [None]

    def fwd():
        hold[0] = seq(x)
    with torch.no_grad():
        result(name, "torch_eager", *time_events(fwd, iters_eager, 20), iters_eager)
        g = capture(torch, fwd)
        result(name, "torch_graph", *time_events(g.replay, iters, 50), iters)
        del g
        if name == "mlp8_infer_b1":
            torch_compile_modes(args, torch, name, seq, x, ref_t, iters, out, result)
        if name.startswith("linear_b1"):
            for w in seq.parameters():  # the weight: the largest parameter
                if w.dim() == 2:
                    src, dst = w.detach(), torch.empty_like(w)
            gc = capture(torch, lambda: dst.copy_(src))
            nbytes = 2 * src.numel() * src.element_size()
            us, samples = time_events(gc.replay, iters, 50)
            result(name, "d2d_copy_graph", us, samples, iters, bytes=nbytes)
            out(f"# {name}: torch copy_ of the {src.numel() * src.element_size()}-byte weight in a "
                f"torch.cuda.graph moved {nbytes} bytes (read+written) per iter = "
                f"{nbytes / us / 1e6:.3f} TB/s")
            del gc
        if name.startswith("linear_pair") or name.startswith("linear_b1"):
            torch_kernels(torch, name, fwd, out)
    return failed


def torch_compile_modes(args, torch, name, seq, x, ref_t, iters, out, result):
    """torch.compile reduce-overhead (its own CUDA graphs, replayed from
    Python) and, unless disabled, max-autotune-no-cudagraphs captured into a
    torch.cuda.graph."""
    modes = [("torch_compile_ro", "reduce-overhead")]
    if max_autotune_enabled(args):
        modes.append(("torch_compile_mac_graph", "max-autotune-no-cudagraphs"))
    else:
        out(f"# {name}: torch.compile max-autotune-no-cudagraphs skipped (--no-max-autotune)")
    for impl, mode in modes:
        try:
            torch._dynamo.reset()
            fn = torch.compile(seq, mode=mode)
            t0 = time.time()
            if mode == "reduce-overhead":
                def call():
                    torch.compiler.cudagraph_mark_step_begin()
                    return fn(x)
                for _ in range(3):  # compile, warm up, record
                    y = call()
                torch.cuda.synchronize()
                diff = (y.float() - ref_t.float()).abs().max().item()
                timed = call
            else:
                y = fn(x)
                torch.cuda.synchronize()
                diff = (y.float() - ref_t.float()).abs().max().item()
                hold = [None]

                def fwd():
                    hold[0] = fn(x)
                g = capture(torch, fwd)
                timed = g.replay
            out(f"# {name}: torch.compile(mode=\"{mode}\") ready in {time.time() - t0:.1f} s; "
                f"max abs diff to eager {diff:.3e}")
            result(name, impl, *time_events(timed, iters, 50), iters)
        except Exception as e:  # a PyTorch mode that fails is reported, not fatal
            msg = f"{type(e).__name__}: {e}".splitlines()[0][:300]
            out(f"ERROR workload={name} impl={impl} msg={shlex.quote(msg)}")
    torch._dynamo.reset()


def torch_kernels(torch, name, fn, out):
    """The CUDA kernels one eager PyTorch run launches (torch.profiler)."""
    try:
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        names = [e.key for e in prof.key_averages() if e.device_type.name == "CUDA"]
        out(f"# {name}: PyTorch eager kernels: " + "; ".join(names))
    except Exception as e:
        out(f"# {name}: no PyTorch kernel names ({type(e).__name__}: {str(e)[:200]})")


def run(args):
    args.only = set(filter(None, args.only.split(","))) if args.only else set()
    torch = None
    if not args.dry_run:
        import torch
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    gpu = torch.cuda.get_device_name(0) if torch else "dry-run"
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip() if torch else "-"
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    log_path = args.log or os.path.join(
        ROOT, "bench/results", re.sub(r"[^A-Za-z0-9]+", "-", gpu).strip("-") + f"-{date}.log")
    if args.dry_run and not args.log:
        log_path = os.path.join(args.artifacts, "dry-run.log")
    os.makedirs(os.path.dirname(os.path.abspath(log_path)), exist_ok=True)
    os.makedirs(args.artifacts, exist_ok=True)
    lines = []

    def out(s):
        print(s, flush=True)
        lines.append(s)
    out(f"# gpu: {gpu}")
    out(f"# nvidia-smi: {smi}")
    out(f"# date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}")
    if torch:
        out(f"# torch: {torch.__version__} cuda {torch.version.cuda}")
        out("# torch settings: allow_tf32=False (matmul and cudnn), "
            "allow_bf16_reduced_precision_reduction="
            f"{torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction}")
    out(f"# command: {' '.join(shlex.quote(a) for a in sys.argv)}")
    out("# method: CUDA events around N back-to-back runs, median of 5 repeats after warm-up")

    def result(workload, impl, us, samples, iters, nodes=None, **extra):
        more = f" nodes={nodes} us_per_node={us / nodes:.3f}" if nodes else ""
        more += "".join(f" {k}={v}" for k, v in extra.items())
        out(f"RESULT workload={workload} impl={impl} us={us:.3f} iters={iters}{more} "
            f"samples={','.join(f'{x:.3f}' for x in samples)}")

    # ---- cgc (graph replay and eager), via `cgc bench`
    for name, (_, _, iters, _) in WORKLOADS.items():
        if args.only and name not in args.only:
            continue
        art = ensure_artifact(args, name, out)
        if art:
            cgc_bench(args, name, art, iters, out, result)

    # ---- PyTorch, same method, same GPU
    if torch and (not args.only or args.only & set(WORKLOADS)):
        seed_torch(torch, args, out, result)

    # ---- matrix products: cgc, correctness, PyTorch
    failed = run_products(args, torch, out, result)
    with open(log_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"run_bench: wrote {log_path}")
    if failed:
        sys.exit(f"run_bench: {failed} workload(s) failed the correctness check (see CHECK lines)")


def seed_torch(torch, args, out, result):
    """PyTorch on the seed and control-flow workloads."""
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
            out(f"# d2d_copy moved {nbytes} bytes (read+written) per iter = {nbytes / us / 1e6:.3f} TB/s")

    control_flow(torch, dev, result, out)


def selftest(args):
    """The correctness path on the CPU: NumPy weights through the reference
    interpreter (standing in for `cgc run`) against the float64 reference."""
    only = set(filter(None, args.only.split(","))) if args.only else set()
    bad = 0
    with tempfile.TemporaryDirectory(prefix="cgc-selftest-") as tmp:
        for name in P.PRODUCTS:
            if only and name not in only:
                continue
            model = P.load_model(name)
            tensors = P.make_tensors(model)
            inp, outp = os.path.join(tmp, "in.safetensors"), os.path.join(tmp, "out.safetensors")
            P.write_inputs(model, tensors, inp)
            cmd = [args.cgc_opt, model["path"], "--interpret", "--inputs", inp, "--outputs", outp,
                   "--overwrite"]
            t0 = time.time()
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"selftest: {name}: {' '.join(cmd)} failed:\n{r.stderr}")
                bad += 1
                continue
            got = P.read_safetensors(outp)[model["output"]]
            ref = P.reference_f64(model, tensors)
            res = P.compare(model, got, ref)
            # The interpreter must have used the bench's weights, not the
            # JSON's init: an output drawn with other weights is far off.
            print(P.check_line(name, res) + f" interpreter_s={time.time() - t0:.1f}")
            bad += 0 if res["ok"] else 1
    if bad:
        sys.exit(f"selftest: {bad} workload(s) failed")
    print("selftest: ok")


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
    b.add_argument("--only", default="", help="comma-separated workloads (default: all)")
    b.add_argument("--no-max-autotune", action="store_true",
                   help="skip torch.compile max-autotune-no-cudagraphs (also CGC_BENCH_MAX_AUTOTUNE=0)")
    b.add_argument("--dry-run", action="store_true",
                   help="no GPU, no PyTorch: compile what is missing, print the commands")
    c = sub.add_parser("selftest")
    c.add_argument("--cgc-opt", required=True)
    c.add_argument("--only", default="")
    args = ap.parse_args()
    {"stage": stage, "run": run, "selftest": selftest}[args.cmd](args)


if __name__ == "__main__":
    main()
