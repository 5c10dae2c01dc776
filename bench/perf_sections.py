#!/usr/bin/env python3
"""The sections of docs/perf.md that come from the logs of the other bench
scripts (kernels.py, profile_kernels.sh, compile_time.py, sync_points.py,
training.py, dynamic_shapes.py), for make_perf_md.py: each takes a log's
path and returns the section's lines."""
import csv, io, os, re

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def fmt(x, spec=".2f"):
    return "-" if x is None else format(x, spec)


KERNEL_GAPS = {
    # The cause of each goal not met (issue 11), from the Nsight Compute
    # profile below (bench/profile_kernels.sh); the table computes the gap.
    "softmax_32x16x256x256": "latency-bound: DRAM at 80% of peak with 29% issue activity; 32 "
                             "floats per thread take 48 registers (52% warps active), and 16 per "
                             "thread (92% warps active, 33% issue) was slower at 98.5 µs; a warp "
                             "loads its next row only after storing the current one (input and "
                             "output may alias)",
    "softmax_512x30522": "occupancy-bound: a 1024-thread block per row holds the row in "
                         "registers at 64 per thread, so one block fits an SM (49% warps active, "
                         "DRAM 41% of peak)",
    "cross_entropy_4096x30522": "instruction-heavy: an expf per logit keeps issue activity at 68% "
                                "(93% warps active, DRAM 67% of peak)",
    "layernorm_8192x1024": "occupancy: the row in registers (32 floats per thread) takes 56 "
                           "registers, so 4 blocks of 256 fit an SM (44% warps active)",
    "sum_4194304x4_ax1": "not explained by the profile (a thread per row of 4, full occupancy, "
                         "14% issue activity, DRAM 79% of peak); 0.5-0.8% in every run this day",
    "chain20_16M": "instruction-bound: 87% issue activity (accurate tanhf and expf, sigmoid's "
                   "reciprocal) where DRAM is at 40% of peak",
}


def goal_cell(wl, cgc, tc, frac):
    """"met", or what misses the goal by how much and its cause."""
    if cgc is None or tc is None:
        return "no measurement"
    misses = []
    if cgc > tc:
        misses.append(f"{100 * (cgc / tc - 1):.1f}% over torch.compile")
    if frac is not None and frac < 0.85:
        misses.append(f"{100 * frac:.0f}% of copy")
    if not misses:
        return "met"
    return "not met: " + ", ".join(misses) + "; " + KERNEL_GAPS.get(wl, "cause not measured")


def read_log(path):
    """The `# key: value` header lines and the (KIND, {key: value}) records
    (RESULT, INFO) of a bench log."""
    head, records = {}, []
    for line in open(path):
        m = re.match(r"# (\w[\w-]*): (.*)", line)
        if m:
            head.setdefault(m.group(1), m.group(2).strip())
        if line.startswith(("RESULT ", "INFO ")):
            records.append((line.split()[0], dict(t.split("=", 1) for t in line.split()[1:] if "=" in t)))
    return head, records, os.path.relpath(os.path.abspath(path), ROOT)


def kernels_section(path):
    """Issue 11's workloads from a bench/kernels.py log."""
    head, records, rel = read_log(path)
    res, info = {}, {}
    for kind, kv in records:
        if kind == "RESULT":
            res.setdefault(kv["workload"], {})[kv["impl"]] = float(kv["us"])
        else:
            info[kv["workload"]] = kv
    w = ["", "## Kernels: row ops, reductions, broadcasts, long fused chains", "",
         f"From `bench/kernels.py` ({head.get('gpu', '?')}, {head.get('date', '?')}, PyTorch "
         f"{head.get('torch', '?')}; {head.get('method', '?')}; raw log `{rel}`). "
         "torch.compile is the default mode with its kernels replayed in a torch.cuda.graph; "
         "copy is a device-to-device copy of the workload's minimum traffic (every input read "
         "once, every output written once) in a torch.cuda.graph. Goal: at or under "
         "torch.compile, and at least 85% of copy bandwidth (copy µs / cgc µs).", "",
         "| workload | cgc kernels | cgc µs | torch.compile µs | torch.cuda.graph µs | copy µs | "
         "% of copy | goal |", "|---|---|---|---|---|---|---|---|"]
    for wl, r in res.items():
        cgc, tc, copy = r.get("cgc"), r.get("torch_compile"), r.get("copy")
        frac = copy / cgc if cgc and copy else None
        cell = goal_cell(wl, cgc, tc, frac)
        w.append(f"| {wl} | {info.get(wl, {}).get('cgc_kernels', '?')} | {fmt(cgc)} | {fmt(tc)} | "
                 f"{fmt(r.get('torch_graph'))} | {fmt(copy)} | "
                 f"{fmt(100 * frac if frac else None, '.0f')} | {cell} |")
    return w


def sync_points_section(path):
    """Issue 12's workloads from a bench/sync_points.py log."""
    head, records, rel = read_log(path)
    res, info, trips = {}, {}, {}
    for kind, kv in records:
        if kind == "RESULT":
            res.setdefault(kv["workload"], {})[kv["impl"]] = float(kv["us"])
            trips.setdefault(kv["workload"], {}).update(
                {f"{kv['impl']}:{k}": v for k, v in kv.items() if "trips" in k})
        else:
            info[kv["workload"]] = kv
    checks = [l for l in open(path) if l.startswith("CHECK ")]
    bad = [l.strip() for l in checks if "ok=0" in l]
    w = ["", "## Sync points removed: item(), data-dependent loops, masked selections", "",
         f"From `bench/sync_points.py` ({head.get('gpu', '?')}, {head.get('date', '?')}, PyTorch "
         f"{head.get('torch', '?')}; {head.get('method', '?')}; raw log `{rel}`). Weights are "
         "model inputs, so cgc (`cgc bench --inputs`, `cgc run`) and PyTorch read the same tensors; "
         f"{len(checks)} checks of cgc's (and the fixed-mask graph's) outputs against PyTorch eager: "
         f"{'all passed' if not bad else 'FAILED: ' + '; '.join(bad)}.", ""]
    r_then, r_else = res.get("branch_infer_then", {}), res.get("branch_infer_else", {})
    pair = res.get("branch_infer_gemms", {}).get("cgc_linear_pair_graph")
    w += ["### branch_infer: `if t.sum().item() > 0` between two Linear(2048,1024), batch 640", "",
          "| implementation | then arm µs | else arm µs |", "|---|---|---|"]
    for impl, label in (("cgc_graph", "cgc graph replay (IF conditional node, item kept on the device)"),
                        ("cgc_eager", "cgc eager (host reads the predicate)"),
                        ("torch_eager_item", "PyTorch eager with `.item()`"),
                        ("torch_graph_both_arms", "torch.cuda.graph of both arms + torch.where"),
                        ("torch_compile_ro", "torch.compile(mode=\"reduce-overhead\") (graph break at item)"),
                        ("torch_graph_gemms_only", "the two products alone, torch.cuda.graph")):
        w.append(f"| {label} | {fmt(r_then.get(impl))} | {fmt(r_else.get(impl))} |")
    w.append(f"| the two products alone, cgc (examples/linear_pair_f32.json) | {fmt(pair)} | - |")
    floor = r_then.get("torch_graph_gemms_only")
    worst = max(r_then.get("cgc_graph", 0), r_else.get("cgc_graph", 0))
    if floor and worst:
        ratio = worst / floor
        w += ["", f"Goal (at most 1.1x its two products alone): **{'met' if ratio <= 1.1 else 'not met'}**: "
              f"cgc's slower arm {worst:.1f} µs = {ratio:.3f}x the products in a torch.cuda.graph "
              f"({floor:.1f} µs)."]
    p = res.get("power_iter", {})
    t = trips.get("power_iter", {})
    w += ["", "### power_iter: v <- Av/|Av| while max|v' - v| > 1e-5 (at most 100 trips), A 1024x1024", "",
          "| implementation | µs per solve | trips |", "|---|---|---|",
          f"| cgc graph replay (WHILE conditional node, cond reads an item on the device) | "
          f"{fmt(p.get('cgc_graph'))} | {t.get('cgc_graph:graph_trips_iterate', '?')} (cgc_context_loop_trips) |",
          f"| cgc eager (host reads the predicate each trip) | {fmt(p.get('cgc_eager'))} | "
          f"{t.get('cgc_eager:eager_trips_iterate', '?')} |",
          f"| PyTorch loop with `.item()` each trip | {fmt(p.get('torch_eager_item'))} | "
          f"{t.get('torch_eager_item:trips', '?')} |"]
    if p.get("cgc_graph") and p.get("torch_eager_item"):
        w += ["", f"cgc replays the whole solve {p['torch_eager_item'] / p['cgc_graph']:.2f}x faster than "
              "the PyTorch loop, with no host read."]
    w += ["", "### masked_lm: BERT masked-LM loss, hidden 768, vocab 30522, 8 x 512 tokens, 15% masked", "",
          "One artifact per variant serves every batch (the masked count changes, nothing is "
          "re-instantiated). `k768`: `nonzero(mask, max_count=768)`, a fixed 768-row gather; "
          "`all rows`: plain `nonzero`, every row through the product with the mask.", "",
          "| batch (masked tokens) | cgc k768 µs | cgc all rows µs | PyTorch eager gather (sync) µs | "
          "torch.cuda.graph fixed mask (all rows) µs | torch.cuda.graph nonzero_static(768) µs |",
          "|---|---|---|---|---|---|"]
    met = True
    for wl in sorted(k for k in res if k.startswith("masked_lm")):
        r = res[wl]
        w.append(f"| {wl[len('masked_lm_'):]} ({info.get(wl, {}).get('masked', '?')}) | "
                 f"{fmt(r.get('cgc_k768_graph'))} | {fmt(r.get('cgc_all_rows_graph'))} | "
                 f"{fmt(r.get('torch_eager_gather'))} | {fmt(r.get('torch_graph_fixed_mask'))} | "
                 f"{fmt(r.get('torch_graph_nonzero_static'))} |")
        fixed = r.get("torch_graph_fixed_mask")
        met &= bool(fixed) and all(r.get(k, 1e30) <= fixed for k in ("cgc_k768_graph", "cgc_all_rows_graph"))
    w += ["", f"Goal (at or under PyTorch's fixed-size graph): **{'met' if met else 'not met'}** for "
          "both cgc variants in every batch."]
    return w


def training_section(path):
    """Issue 14's workloads from a bench/training.py log."""
    head, records, rel = read_log(path)
    res = {}
    for kind, kv in records:
        if kind == "RESULT":
            res.setdefault(kv["workload"], {})[kv["impl"]] = float(kv["us"])
    checks = [dict(t.split("=", 1) for t in l.split()[1:] if "=" in t)
              for l in open(path) if l.startswith("CHECK ")]
    w = ["", "## Training steps: forward, backward and optimizer in one graph", "",
         f"From `bench/training.py` ({head.get('gpu', '?')}, {head.get('date', '?')}, PyTorch "
         f"{head.get('torch', '?')}; {head.get('method', '?')}; raw log `{rel}`). cgc compiles "
         "the forward model with `cgc --train` (autodiff, SGD(lr 0.1), the dropout stream "
         "advanced by the graph itself) and replays steps back to back with `cgc bench`; "
         "PyTorch runs zero_grad, forward, backward and step.", "",
         "| workload | cgc graph µs | cgc eager µs | PyTorch eager µs | torch.cuda.graph (whole step) µs "
         "| torch.compile reduce-overhead µs | goal |", "|---|---|---|---|---|---|---|"]
    # Issue 30's goals: at most this fraction of torch.cuda.graph's whole step.
    goals = {"mlp_train_small": 0.3, "mlp_train_large": 0.9}
    for wl, r in res.items():
        cgc, peer = r.get("cgc_graph"), r.get("torch_graph")
        goal = goals.get(wl)
        cell = "-" if not goal or cgc is None or not peer else (
            f"{cgc / peer:.2f}x torch.cuda.graph, at most {goal}x: "
            f"**{'met' if cgc <= goal * peer else 'not met'}**")
        w.append(f"| {wl} | {fmt(cgc)} | {fmt(r.get('cgc_eager'))} | {fmt(r.get('torch_eager'))} | "
                 f"{fmt(r.get('torch_graph'))} | {fmt(r.get('torch_compile_ro'))} | {cell} |")
    if checks:
        w += ["", "Without dropout, 10 steps of `cgc run --steps 10` against 10 PyTorch steps from "
              "the same weights on the same batch (largest parameter difference):", "",
              "| workload | optimizer | max abs diff | within 1e-4 |", "|---|---|---|---|"]
        for c in checks:
            w.append(f"| {c.get('workload')} | {c.get('optimizer')} | {c.get('max_param_diff')} | "
                     f"{'yes' if c.get('ok') == '1' else 'NO'} |")
    return w


def dynamic_shapes_section(path):
    """Issue 13's dynamic_batch and encoder_small from a bench/dynamic_shapes.py log."""
    head, records, rel = read_log(path)
    rows = {}
    for kind, kv in records:
        if kind == "RESULT":
            key = (kv["workload"], int(kv["B"]), int(kv.get("S", 0)))
            rows.setdefault(key, {})[kv["impl"]] = kv
    checks = [l for l in open(path) if l.startswith("CHECK ")]
    passed = sum(" ok=1" in l for l in checks)
    w = ["", "## Dynamic shapes: one padded compile for every size", "",
         f"From `bench/dynamic_shapes.py` ({head.get('gpu', '?')}, {head.get('date', '?')}, PyTorch "
         f"{head.get('torch', '?')}; {head.get('method', '?')}; raw log `{rel}`). Each model is "
         "compiled once (pad-dynamic-shapes: one graph per bucket) and run at each size with "
         "`cgc bench --dims`; the static columns are the same model compiled with `--bind-dim` at "
         "the bucket (the goal's baseline) and at the size itself (what padding to the bucket "
         "costs, which shrinking grids could win back at most); the new-size column runs every "
         "other replay at a neighbouring size of the same bucket (`--alternate-dims`), so each "
         "replay writes the real dims first. PyTorch's per-shape graph is recorded at each size. "
         "examples/dynamic_batch.json: B in [1, 64], buckets 8, 16, 32, 64; "
         "examples/encoder_small.json: one transformer encoder layer, B in [1, 64] (buckets 4, "
         "16, 64), sequence S in [16, 512] (buckets 32, 64, 128, 256, 512). "
         f"{passed} of {len(checks)} output checks against PyTorch (same weights) pass.", "",
         "| model | size | bucket | cgc padded µs | cgc static at bucket µs | ratio (goal <= 1.1) "
         "| cgc static at the size µs | cgc padded, new size every run µs "
         "| PyTorch eager µs | torch.cuda.graph per shape µs | torch.compile reduce-overhead µs "
         "| its first call at the size, ms |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for key in sorted(rows):
        wl, b, s_ = key
        r = rows[key]
        pad, st = r.get("cgc_padded", {}), r.get("cgc_static_bucket", {})
        ro = r.get("torch_compile_ro", {})
        size = f"B={b}" + (f", S={s_}" if s_ else "")
        w.append(f"| {wl} | {size} | {pad.get('bucket', '-')} | {pad.get('us', '-')} | {st.get('us', '-')} | "
                 f"{st.get('ratio', '-')} | {r.get('cgc_static_exact', {}).get('us', '-')} | "
                 f"{r.get('cgc_padded_new_size_every_run', {}).get('us', '-')} | "
                 f"{r.get('torch_eager', {}).get('us', '-')} | "
                 f"{r.get('torch_graph_per_shape', {}).get('us', '-')} | {ro.get('us', '-')} | "
                 f"{ro.get('first_call_ms', '-')} |")
    return w


PROFILE_METRICS = [
    ("gpu__time_duration.sum", "ncu µs", 1e-3),
    ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM % of peak", 1),
    ("smsp__issue_active.avg.pct_of_peak_sustained_active", "issue active %", 1),
    ("sm__warps_active.avg.pct_of_peak_sustained_active", "warps active %", 1),
    ("launch__grid_size", "grid", 1),
    ("launch__block_size", "block", 1),
    ("launch__registers_per_thread", "registers", 1),
]


def profile_section(path):
    """bench/profile_kernels.sh's Nsight Compute CSV: one row per cgc kernel."""
    rel = os.path.relpath(os.path.abspath(path), ROOT)
    w = ["", "### Profile of cgc's kernels", "",
         f"Nsight Compute over the same artifacts (`bench/profile_kernels.sh`, raw CSV `{rel}`; "
         "ncu times one launch under its own clock control, so its times differ from the table's "
         "graph replays; DRAM % counts DRAM traffic only, and the L2 keeps part of the writes). "
         "High issue activity: instruction-bound; low warps active: occupancy-bound; neither, "
         "with DRAM below the copy's: latency-bound.", "",
         "| workload | kernel | " + " | ".join(label for _, label, _ in PROFILE_METRICS) + " |",
         "|---|---|" + "---|" * len(PROFILE_METRICS)]
    text = open(path).read()
    for block in text.split("# ")[1:]:
        workload = block.split("\n", 1)[0].strip()
        rows = list(csv.reader(io.StringIO("\n".join(
            l for l in block.split("\n") if l.startswith('"')))))
        if len(rows) < 3:
            continue
        header, seen = rows[0], set()
        for row in rows[2:]:  # rows[1] holds the units
            kernel = row[header.index("Kernel Name")]
            if kernel in seen:
                continue
            seen.add(kernel)
            cells = []
            for metric, _, scale in PROFILE_METRICS:
                value = float(row[header.index(metric)].replace(",", ""))
                cells.append(f"{value * scale:.1f}" if scale != 1 or "%" in metric or "pct" in metric
                             else f"{value:.0f}")
            w.append(f"| {workload} | {kernel} | " + " | ".join(cells) + " |")
    return w


# Where the slowest example's writer spends its time (`perf record` of
# `cgc examples/linear_b1_8192_bf16.json`, this machine, 2026-11-23).
WRITER_PROFILE = ("`perf record` of linear_b1_8192_bf16 (128 MiB of bf16 weights drawn from a "
                  "normal initializer): drawing the values 14% of samples, the FNV-1a checksum "
                  "13%, rounding and encoding to bf16 17%, page faults 8%.")


def compile_times_section(path):
    """bench/compile_time.py's table."""
    head, records, rel = read_log(path)
    rows = [kv for _, kv in records]
    slow = [f"{r['model'][len('example_'):]} ({r['ms']} ms, {r['writer_ms']} in the artifact writer)"
            for r in rows if r["model"].startswith("example_") and int(r["ms"]) >= 1000]
    w = ["", "## Compile time", "",
         f"From `bench/compile_time.py` ({head.get('machine', '?')}, {head.get('date', '?')}; "
         f"{head.get('method', '?')}; raw log `{rel}`). Goals: every example under 1 s, a "
         "1000-node model under 2 s, time linear in nodes, a long fused chain under 1 s. "
         + (f"Examples at 1 s or more: {', '.join(slow)}; their writers draw, encode and "
            "checksum the initial weights. " + WRITER_PROFILE if slow
            else "Every example compiles in under 1 s."), "",
         "| model | nodes | kernels | total ms | NVRTC ms | artifact writer ms |",
         "|---|---|---|---|---|---|"]
    for r in rows:
        w.append(f"| {r['model']} | {r['nodes']} | {r['kernels']} | {r['ms']} | {r['nvrtc_ms']} | "
                 f"{r['writer_ms']} |")
    return w


GENERATION_NAMES = {"gpt2": "GPT-2 (124M)", "llama4": "Llama 4 x 512",
                    "llama1b": "Llama 16 x 2048 (1B class)"}


def generation_table(path):
    """The per-token table of a bench/generate.py log (RESULT lines, one
    dict each; rows of several invocations for one model, dtype and batch
    merged): the table docs/perf.md and docs/generation.md show."""
    import ast
    rows = {}
    for line in open(path):
        if line.startswith("RESULT "):
            r = ast.literal_eval(line[len("RESULT "):])
            rows.setdefault((r["model"], r["dtype"], r["batch"]), {}).update(r)
    w = ["| model | dtype | batch | cgc ms/token | HF static + torch.compile | HF eager | floor "
         "| cgc / compiled | cgc / floor | cgc TTFT ms | compiled TTFT | eager TTFT |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    order = list(GENERATION_NAMES)
    for key in sorted(rows, key=lambda k: (order.index(k[0]) if k[0] in order else 99,) + k[1:]):
        r = rows[key]
        cgc, eager, compiled = (r.get(n, {}) for n in ("cgc", "hf_eager", "hf_static_compiled"))
        ours, peer = cgc.get("per_token_ms"), compiled.get("per_token_ms")
        w.append(f"| {GENERATION_NAMES.get(key[0], key[0])} | {key[1]} | {key[2]} | {fmt(ours)} | "
                 f"{fmt(peer)} | {fmt(eager.get('per_token_ms'))} | {r['floor_ms']:.3f} | "
                 f"{fmt(ours / peer if ours and peer else None)} | "
                 f"{fmt(ours / r['floor_ms'] if ours else None)} | {fmt(cgc.get('ttft_ms'))} | "
                 f"{fmt(compiled.get('ttft_ms'))} | {fmt(eager.get('ttft_ms'))} |")
    return w
