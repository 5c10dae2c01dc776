#!/usr/bin/env python3
"""Writes docs/perf.md from a bench/run_bench.py log.

Usage: make_perf_md.py bench/results/<gpu>-<date>.log [-o docs/perf.md]
"""
import argparse, os, re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from perf_sections import (fmt, kernels_section, profile_section,  # noqa: E402
                           compile_times_section, sync_points_section,
                           training_section, dynamic_shapes_section)
IMPLS = [("cgc_graph", "cgc graph replay"), ("cgc_eager", "cgc eager"),
         ("torch_eager", "PyTorch eager"), ("torch_graph", "torch.cuda.graph"),
         ("torch_F.gelu_eager", "PyTorch F.gelu eager"),
         ("torch_F.gelu_graph", "F.gelu in torch.cuda.graph"), ("d2d_copy", "device-to-device copy")]


CF_IMPLS = [("cgc_graph", "cgc: IF / WHILE conditional node (graph replay)"),
            ("cgc_eager", "cgc eager (host reads each predicate)"),
            ("torch_item", "PyTorch: `.item()` + Python branch / loop"),
            ("torch_graph_where", "torch.cuda.graph of both arms + torch.where")]


def control_flow_table(res, raw):
    """branch_1m and newton_sqrt: device-side control flow vs PyTorch."""
    if not any(wl in ("branch_1m", "newton_sqrt") for wl, _ in res):
        return []
    w = ["", "## Device-side control flow", "",
         "branch_1m: `y = tanh(x)*2+1 if sum(x) > 0 else exp(-x*x)-0.5` over 1M floats "
         "(examples/branch_1m.json). newton_sqrt: Newton's square root over 65536 floats "
         "while max|y*y - s| > 1e-3, at most 100 trips (examples/newton_sqrt.json). "
         "µs per run, median of 5.", "",
         "| implementation | branch_1m µs | newton_sqrt µs |", "|---|---|---|"]
    for impl, label in CF_IMPLS:
        cells = []
        for wl in ("branch_1m", "newton_sqrt"):
            r = res.get((wl, impl))
            cells.append(f"{float(r['us']):.2f}" if r else "-")
        if any(x != "-" for x in cells):
            w.append(f"| {label} | " + " | ".join(cells) + " |")
    notes = [l.lstrip("# ") for l in raw if l.startswith("# branch_1m:") or
             l.startswith("# newton_sqrt:")]
    if notes:
        w += ["", "Inputs: " + "; ".join(notes) + "."]
    return w


PY = ", timed from Python"
MLP_IMPLS = [("cgc_graph", "cgc graph replay (timed in C++ by `cgc bench`)"),
             ("cgc_eager", "cgc eager (timed in C++ by `cgc bench`)"),
             ("torch_eager", "PyTorch eager" + PY),
             ("torch_graph", "torch.cuda.graph" + PY),
             ("torch_compile_ro", 'torch.compile(mode="reduce-overhead")' + PY),
             ("torch_compile_mac_graph",
              'torch.compile(mode="max-autotune-no-cudagraphs") in torch.cuda.graph' + PY)]
PAIR_IMPLS = [("cgc_graph", "cgc graph replay (timed in C++ by `cgc bench`)"),
              ("cgc_eager", "cgc eager (timed in C++ by `cgc bench`)"),
              ("torch_eager", "PyTorch F.linear eager" + PY),
              ("torch_graph", "PyTorch F.linear (cuBLASLt) in torch.cuda.graph" + PY)]
B1_IMPLS = [("cgc_graph", "cgc graph replay (timed in C++ by `cgc bench`)", "weight"),
            ("cgc_eager", "cgc eager (timed in C++ by `cgc bench`)", "weight"),
            ("torch_eager", "PyTorch F.linear eager" + PY, "weight"),
            ("torch_graph", "PyTorch F.linear in torch.cuda.graph" + PY, "weight"),
            ("d2d_copy_graph", "torch copy_ of the weight in torch.cuda.graph" + PY, "copy")]
PRODUCT_WORKLOADS = ("mlp8_infer_b1", "linear_pair_f32", "linear_pair_bf16", "linear_b1_bf16",
                     "linear_b1_8192_bf16")
B1_TITLES = {"linear_b1_bf16": "Linear(4096,4096) with bias, batch 1, bf16",
             "linear_b1_8192_bf16": "Linear(8192,8192) with bias, batch 1, bf16 (weight larger than L2)"}


def us(res, wl, impl):
    r = res.get((wl, impl))
    return float(r["us"]) if r else None


def check_note(checks, wl):
    """'' when \\p wl passed its correctness check, else why not."""
    c = checks.get(wl)
    if c is None:
        return " (no correctness check for it in this log)"
    if c.get("ok") != "1":
        return (f" **Not counted: cgc's output differs from PyTorch's beyond the tolerance "
                f"(worst diff / tolerance = {c.get('worst')}).**")
    return ""


def verdict(ok, checks, wl):
    c = checks.get(wl)
    if c is not None and c.get("ok") != "1":
        return "**failed (wrong output)**"
    return "**met**" if ok else "**not met**"


def notes(raw, prefix, contains=""):
    """Log comments starting with \p prefix (and holding \p contains) as a list."""
    got = [f"- {l[2:]}" for l in raw if l.startswith(prefix) and contains in l]
    return [""] + got if got else []


def products_section(res, info, checks, algos, raw):
    """The matrix-product workloads: tables, goal lines, correctness,
    cuBLASLt algorithms."""
    if not any(wl in PRODUCT_WORKLOADS for wl, _ in res) and not checks:
        return []
    w = ["", "## Matrix products", "",
         "cgc is timed in C++ by `cgc bench` (CUDA events around N back-to-back graph "
         "replays); every PyTorch number is timed from Python (CUDA events around N "
         "back-to-back calls or graph replays, each launched from Python), in the same run "
         "on the same GPU; median of 5. f32 products run without TF32 in both. Models: "
         "`examples/<workload>.json`; PyTorch runs the same chain as nn modules "
         "(bench/products.py)."]

    wl = "mlp8_infer_b1"
    if any(k[0] == wl for k in res):
        w += ["", "### mlp8_infer_b1: 8 x [Linear(256,256), GELU (erf), LayerNorm(256)], "
              "batch 1, f32", "", "| implementation | µs |", "|---|---|"]
        for impl, label in MLP_IMPLS:
            if (wl, impl) in res:
                w.append(f"| {label} | {us(res, wl, impl):.2f} |")
        cgc = us(res, wl, "cgc_graph")
        torch_rows = [(us(res, wl, i), l) for i, l in MLP_IMPLS
                      if i.startswith("torch") and (wl, i) in res]
        if cgc is not None and torch_rows:
            best, label = min(torch_rows)
            ok = cgc <= 20.0 and cgc < best
            w += ["", f"Goal (cgc graph replay at most 20 µs and faster than every PyTorch mode "
                  f"in this run): {verdict(ok, checks, wl)}: cgc {cgc:.2f} µs; fastest "
                  f"PyTorch: {label} {best:.2f} µs ({best / cgc:.2f}x cgc's time)."
                  + check_note(checks, wl)]
        missing = [l for i, l in MLP_IMPLS if i.startswith("torch") and (wl, i) not in res]
        if missing:
            w += ["", "No result (see the errors below) for: " + "; ".join(missing) + "."]
        w += notes(raw, f"# {wl}: torch.compile")

    pair = [d for d in ("f32", "bf16") if any(k[0] == f"linear_pair_{d}" for k in res)]
    if pair:
        w += ["", "### linear_pair: Linear(4096,2048) then Linear(2048,1024), with bias, "
              "batch 640", "",
              "TFLOP/s = 2 · 640 · (4096·2048 + 2048·1024) / time (bias adds not counted).", "",
              "| implementation | " + " | ".join(f"{d} µs | {d} TFLOP/s" for d in pair) + " |",
              "|---|" + "---|---|" * len(pair)]
        for impl, label in PAIR_IMPLS:
            cells = []
            for d in pair:
                t = us(res, f"linear_pair_{d}", impl)
                flops = float(info.get(f"linear_pair_{d}", {}).get("flops", 0))
                cells += [fmt(t), fmt(flops / t / 1e6 if t and flops else None, ".1f")]
            if any(c != "-" for c in cells):
                w.append(f"| {label} | " + " | ".join(cells) + " |")
        w += ["", "Goal: cgc within 1.05x of the same two cuBLASLt calls issued directly in a "
              "CUDA graph; the peer is PyTorch F.linear (cuBLASLt) in torch.cuda.graph, timed "
              "from Python.", ""]
        for d in pair:
            name = f"linear_pair_{d}"
            cgc, peer = us(res, name, "cgc_graph"), us(res, name, "torch_graph")
            if cgc is None or peer is None:
                w.append(f"- {d}: no result (see the errors below)")
                continue
            ratio = cgc / peer
            w.append(f"- {d}{' (TF32 off)' if d == 'f32' else ''}: cgc / peer = {cgc:.2f} / "
                     f"{peer:.2f} µs = {ratio:.3f}: {verdict(ratio <= 1.05, checks, name)}."
                     + check_note(checks, name))
        w += notes(raw, "# linear_pair", "kernels:")

    for wl, title in B1_TITLES.items():
        if any(k[0] == wl for k in res):
            wb = float(info.get(wl, {}).get("weight_bytes", 0))
            l2 = float(info.get(wl, {}).get("l2_bytes", 0))
            copy_bytes = float(res.get((wl, "d2d_copy_graph"), {}).get("bytes", 0))
            w += ["", f"### {wl}: {title}", "",
                  f"Effective bandwidth of the products = weight bytes ({wb / 2**20:.0f} MiB) / time, "
                  "counting reads of the weight only; of the copy = bytes read + written.", "",
                  "| implementation | µs | GB/s |", "|---|---|---|"]
            for impl, label, kind in B1_IMPLS:
                t = us(res, wl, impl)
                if t is None:
                    continue
                nbytes = copy_bytes if kind == "copy" else wb
                w.append(f"| {label} | {t:.2f} | {fmt(nbytes / t / 1e3 if nbytes else None, '.0f')} |")
            cgc, cp = us(res, wl, "cgc_graph"), us(res, wl, "d2d_copy_graph")
            if cgc is not None and cp is not None and wb and copy_bytes:
                bw, cbw = wb / cgc / 1e3, copy_bytes / cp / 1e3
                w += ["", f"Goal (cgc's weight-read bandwidth at least 80% of the device-to-device "
                      f"copy bandwidth measured in this run): "
                      f"{verdict(bw >= 0.8 * cbw, checks, wl)}: {bw:.0f} GB/s = "
                      f"{100 * bw / cbw:.0f}% of {cbw:.0f} GB/s." + check_note(checks, wl)]
            if wb and wb < l2:
                w += ["", f"The weight ({wb / 2**20:.0f} MiB) is smaller than this GPU's L2 "
                      f"({l2 / 2**20:.0f} MiB): back-to-back runs may find part of it in L2, while "
                      f"the copy moves {copy_bytes / 2**20:.0f} MiB per run."]
            w += notes(raw, f"# {wl}:", "kernels:")
            w += notes(raw, f"# {wl}: torch copy_")

    if checks:
        w += ["", "### Correctness", "",
              "`cgc run` of the timed artifact with weights and input drawn by the bench "
              "(NumPy, seeded; written into the engine as state) against PyTorch eager with the "
              "same weights. Per element |cgc − torch| ≤ rtol·|torch| + atol, atol = "
              "c·sqrt(K)·rms(torch), K the largest reduction length: f32 rtol 1e-4, c 1e-6; "
              "bf16 rtol 2e-2, c 2.5e-4 (bench/products.py). max rel over elements with "
              "|torch| > atol. The float64 columns: max abs diff to a NumPy float64 reference "
              "that rounds each intermediate to the model's dtype.", "",
              "| workload | dtype | K | atol | max abs diff | max rel diff | worst diff / tolerance "
              "| cgc vs f64 | PyTorch vs f64 | result |", "|---|---|---|---|---|---|---|---|---|---|"]
        for wl, c in checks.items():
            w.append(f"| {wl} | {c['dtype']} | {c['k']} | {c['atol']} | {c['max_abs']} | "
                     f"{c['max_rel']} | {c['worst']} | {c.get('cgc_vs_f64_max_abs', '-')} | "
                     f"{c.get('torch_vs_f64_max_abs', '-')} | "
                     f"{'pass' if c['ok'] == '1' else '**FAIL**'} |")

    if algos:
        w += ["", "### cuBLASLt algorithms", "",
              "`cgc bench --print-algorithms` (the heuristic's first algorithm on this GPU):", "",
              "```"] + [f"{wl}: {line}" for wl, line in algos] + ["```"]
    return w


def build_table(res):
    """Median cgc_context_create time: build + instantiate + upload."""
    rows = [(wl, kv) for (wl, impl), kv in sorted(res.items()) if impl == "cgc_build"]
    if not rows:
        return []
    w = ["", "## Graph build time", "",
         "Median of 5 `cgc_context_create` calls (arena allocation, every graph built "
         "node by node, instantiated and uploaded), from `cgc bench`.", "",
         "| artifact | graph nodes | ms | ms per 1000 nodes |", "|---|---|---|---|"]
    for wl, kv in rows:
        nodes = int(kv.get("nodes", 0))
        ms = float(kv["ms"])
        per = f"{ms * 1000 / nodes:.2f}" if nodes else "-"
        w.append(f"| {wl} | {nodes} | {ms:.3f} | {per} |")
    return w


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("-o", default=os.path.join(ROOT, "docs/perf.md"))
    ap.add_argument("--kernels", help="a bench/kernels.py log")
    ap.add_argument("--compile-times", help="a bench/compile_time.py log")
    ap.add_argument("--kernel-profile", help="a bench/profile_kernels.sh CSV")
    ap.add_argument("--sync-points", help="a bench/sync_points.py log")
    ap.add_argument("--training", help="a bench/training.py log")
    ap.add_argument("--dynamic-shapes", help="a bench/dynamic_shapes.py log")
    args = ap.parse_args()
    head, res, raw, info, checks, algos = {}, {}, [], {}, {}, []
    with open(args.log) as f:
        for line in f:
            line = line.rstrip("\n")
            raw.append(line)
            m = re.match(r"# (gpu|nvidia-smi|date|torch|command|method): (.*)", line)
            if m:
                head[m.group(1)] = m.group(2)
            if line.startswith(("RESULT ", "INFO ", "CHECK ")):
                kv = dict(t.split("=", 1) for t in line.split()[1:] if "=" in t)
                if line.startswith("RESULT "):
                    res[(kv["workload"], kv["impl"])] = kv
                elif line.startswith("INFO "):
                    info[kv["workload"]] = kv
                else:
                    checks[kv["workload"]] = kv
            if line.startswith("ALGO "):
                m = re.match(r"ALGO workload=(\S+) (.*)", line)
                if m:
                    algos.append((m.group(1), m.group(2)))
    rel = os.path.relpath(os.path.abspath(args.log), ROOT)
    w = ["# cgc performance", "",
         f"Generated by `bench/make_perf_md.py {rel}` from the raw log of one "
         "`bench/run_bench.py run` (cgc and PyTorch in the same run, same GPU).", "",
         f"- GPU: {head.get('gpu', '?')} (nvidia-smi: {head.get('nvidia-smi', '?')})",
         f"- date: {head.get('date', '?')}",
         f"- PyTorch: {head.get('torch', '?')}",
         f"- command: `{head.get('command', '?')}`",
         f"- method: {head.get('method', '?')}; cgc numbers come from `cgc bench` "
         "(inputs filled once with seeded random values), PyTorch's from torch.cuda.Event in the same script "
         "(random inputs; PyTorch's graphs/loops include one extra copy kernel into a "
         "preallocated output).", "",
         "µs per iteration (median of 5). chain100 is compiled with `cgc --no-fuse`; "
         "per-node = µs/iter over the graph's kernel nodes (cgc: as counted by "
         "`cgc --dump-artifact`; PyTorch: the 100 adds).", "",
         "| implementation | chain100 µs/iter | chain100 µs/node | gelu_small µs | gelu_large µs |",
         "|---|---|---|---|---|"]
    for impl, label in IMPLS:
        cells = []
        c = res.get(("chain100", impl))
        cells.append(f"{float(c['us']):.2f}" if c else "-")
        cells.append(f"{float(c['us_per_node']):.3f} ({c['nodes']} nodes)" if c and "us_per_node" in c else "-")
        for wl in ("gelu_small", "gelu_large"):
            r = res.get((wl, impl))
            cells.append(f"{float(r['us']):.2f}" if r else "-")
        if any(x != "-" for x in cells):
            w.append(f"| {label} | " + " | ".join(cells) + " |")
    w += control_flow_table(res, raw)
    w += products_section(res, info, checks, algos, raw)
    w += build_table(res)
    if args.kernels:
        w += kernels_section(args.kernels)
    if args.kernel_profile:
        w += profile_section(args.kernel_profile)
    if args.compile_times:
        w += compile_times_section(args.compile_times)
    if args.sync_points:
        w += sync_points_section(args.sync_points)
    if args.training:
        w += training_section(args.training)
    if args.dynamic_shapes:
        w += dynamic_shapes_section(args.dynamic_shapes)
    copy = [l for l in raw if "d2d_copy moved" in l]
    if copy:
        w += ["", "Ceiling: " + copy[0].lstrip("# ") + "."]
    errs = [l for l in raw if l.startswith("ERROR")]
    if errs:
        w += ["", "Errors in this run:", ""] + [f"- `{e}`" for e in errs]
    w += ["", f"Raw log: `{rel}`.", ""]
    with open(args.o, "w") as f:
        f.write("\n".join(w))
    print(f"make_perf_md: wrote {args.o}")


if __name__ == "__main__":
    main()
