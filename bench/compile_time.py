#!/usr/bin/env python3
"""Compile time against model size: `cgc` on every example and on generated models, on this machine.

  bench/compile_time.py --cgc build/tools/cgc [--log FILE]

Models: every examples/*.json that compiles; "blocks N": N blocks of (mul,
gelu, add, layernorm, tanh, softmax, add) on f32[64, 256] (7N nodes);
"chain N": one fused chain of N unary ops (tanh, sigmoid, exp, neg, sin)
on f32[1024]. Each is compiled 3 times with `cgc --time-passes`; the log
gets the median wall time and that run's NVRTC and artifact-writer phases
as RESULT lines; bench/make_perf_md.py --compile-times LOG renders them.
"""
import argparse, datetime, json, os, re, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def blocks(n):
    nodes, prev = [], "x"
    for b in range(n):
        p = f"b{b}_"
        nodes += [{"name": p + "m", "op": "mul", "inputs": [prev, "w"]},
                  {"name": p + "g", "op": "gelu", "inputs": [p + "m"]},
                  {"name": p + "a", "op": "add", "inputs": [p + "g", prev]},
                  {"name": p + "ln", "op": "layernorm", "inputs": [p + "a"]},
                  {"name": p + "t", "op": "tanh", "inputs": [p + "ln"]},
                  {"name": p + "s", "op": "softmax", "inputs": [p + "t"]},
                  {"name": p + "o", "op": "add", "inputs": [p + "s", p + "a"]}]
        prev = p + "o"
    return {"format_version": 1, "name": f"blocks{n}",
            "inputs": [{"name": "x", "dtype": "f32", "shape": [64, 256]},
                       {"name": "w", "dtype": "f32", "shape": [64, 256]}],
            "nodes": nodes, "outputs": [{"name": "y", "value": prev}]}


def chain(n):
    ops = ["tanh", "sigmoid", "exp", "neg", "sin"]
    nodes, prev = [], "x"
    for i in range(n):
        nodes.append({"name": f"u{i}", "op": ops[i % len(ops)], "inputs": [prev]})
        prev = f"u{i}"
    return {"format_version": 1, "name": f"chain{n}",
            "inputs": [{"name": "x", "dtype": "f32", "shape": [1024]}],
            "nodes": nodes, "outputs": [{"name": "y", "value": prev}]}


def measure(cgc, path, out_dir):
    runs = []
    for _ in range(3):
        art = os.path.join(out_dir, "model.cgc")
        if os.path.exists(art):
            os.remove(art)
        t0 = time.perf_counter()
        r = subprocess.run([cgc, path, "-o", art, "--time-passes"], capture_output=True, text=True)
        wall = (time.perf_counter() - t0) * 1000
        if r.returncode:
            return None, r.stderr.strip().splitlines()[-1:]
        phases = dict((m.group(2), float(m.group(1))) for m in
                      re.finditer(r"^\s*([0-9.]+) ms\s+(.*)$", r.stderr, re.M))
        nvrtc = next((v for k, v in phases.items() if k.startswith("NVRTC")), 0.0)
        kernels = re.search(r"(\d+) kernels", r.stderr)
        runs.append((wall, nvrtc, phases.get("artifact writer", 0.0),
                     int(kernels.group(1)) if kernels else 0))
    runs.sort()
    return runs[1], None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cgc", required=True)
    ap.add_argument("--log", default="")
    args = ap.parse_args()
    date = datetime.date.today().isoformat()
    log = args.log or os.path.join(HERE, "results", f"compile-time-{date}.log")
    tmp = tempfile.mkdtemp(prefix="cgc-compile-time-")
    lines = [f"# date: {date}", f"# machine: {os.cpu_count()} cores (the development machine; no GPU needed)",
             f"# command: bench/compile_time.py {' '.join(sys.argv[1:])}",
             "# method: cgc --time-passes, median wall time of 3 runs"]
    models = [(f"example_{f[:-5]}", os.path.join(ROOT, "examples", f))
              for f in sorted(os.listdir(os.path.join(ROOT, "examples"))) if f.endswith(".json")]
    for kind, make, sizes in (("blocks", blocks, (10, 50, 143, 500, 1000)), ("chain", chain, (64, 500))):
        for n in sizes:
            p = os.path.join(tmp, f"{kind}{n}.json")
            with open(p, "w") as f:
                json.dump(make(n), f)
            models.append((f"{kind}{n}", p))
    for name, path in models:
        nodes = len(json.load(open(path)).get("nodes", []))
        got, err = measure(args.cgc, path, tmp)
        if got is None:
            lines.append(f"# {name}: not compiled: {' '.join(err)[:200]}")
            continue
        wall, nvrtc, writer, kernels = got
        lines.append(f"RESULT model={name} nodes={nodes} kernels={kernels} ms={wall:.0f} "
                     f"nvrtc_ms={nvrtc:.0f} writer_ms={writer:.0f}")
        print(lines[-1], flush=True)
    os.makedirs(os.path.dirname(log), exist_ok=True)
    with open(log, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"compile_time: wrote {log}")


if __name__ == "__main__":
    main()
