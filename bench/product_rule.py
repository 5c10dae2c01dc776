#!/usr/bin/env python3
"""Measures the cost rule of passes/ProductRule.h on the GPU at hand.

For each row count M (1, 4, 16, 32), weight shape and dtype, compiles
linear(x[M, K], W[N, K], b) + relu twice with the carried cgc, once as the
rule decides (a generated kernel while M <= 16) and once with
--library-products (cuBLASLt with its RELU_BIAS epilogue), times both with
`cgc bench` (CUDA events around back-to-back graph replays, median of 5
repeats after warm-up) and prints one line per case:

  rule M=.. N=.. K=.. dtype=.. rule_us=.. library_us=.. rule=generated|library

The raw lines go to bench/results/product-rule-<GPU>-<date>.log; docs cite it.

Usage: product_rule.py --cgc BIN [--out DIR]
"""
import argparse, datetime, json, os, re, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def model(m, n, k, dt):
    bound = 1.0 / k ** 0.5
    init = lambda seed: {"dist": "uniform", "low": -bound, "high": bound, "seed": seed}
    return {"format_version": 1, "name": f"rule_{m}x{n}x{k}_{dt}",
            "inputs": [{"name": "x", "dtype": dt, "shape": [m, k]},
                       {"name": "w", "kind": "parameter", "dtype": dt, "shape": [n, k], "init": init(1)},
                       {"name": "b", "kind": "parameter", "dtype": dt, "shape": [n], "init": init(2)}],
            "nodes": [{"name": "fc", "op": "linear", "inputs": ["x", "w", "b"]},
                      {"name": "y", "op": "relu", "inputs": ["fc"]}],
            "outputs": ["y"]}


def bench(cgc, path, flags):
    art = path + ("_lib" if flags else "") + ".cgc"
    subprocess.run([cgc, path, "-o", art] + flags, check=True, stdout=subprocess.DEVNULL)
    out = subprocess.run([cgc, "bench", art, "--iters", "500", "--repeats", "5"],
                         check=True, capture_output=True, text=True).stdout
    return float(re.search(r"graph_us_per_run=([0-9.]+)", out).group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cgc", required=True)
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    args = ap.parse_args()
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip().splitlines()[0]
    lines = [f"# product rule, {gpu}, {datetime.date.today()}, cgc bench graph replays"]
    work = tempfile.mkdtemp(prefix="cgc-rule-")
    for n, k in ((256, 256), (4096, 4096)):
        for dt in ("f32", "bf16"):
            for m in (1, 4, 16, 32):
                path = os.path.join(work, f"r_{m}_{n}_{k}_{dt}.json")
                with open(path, "w") as f:
                    json.dump(model(m, n, k, dt), f)
                rule_us = bench(args.cgc, path, [])
                lib_us = bench(args.cgc, path, ["--library-products"])
                kind = "generated" if m <= 16 else "library"
                line = (f"rule M={m} N={n} K={k} dtype={dt} rule_us={rule_us:.2f} "
                        f"library_us={lib_us:.2f} rule={kind}")
                print(line, flush=True)
                lines.append(line)
    os.makedirs(args.out, exist_ok=True)
    name = f"product-rule-{gpu.replace(' ', '-')}-{datetime.date.today()}.log"
    with open(os.path.join(args.out, name), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
