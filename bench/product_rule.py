#!/usr/bin/env python3
"""Measures the cost rule of target/ProductRule.h on the GPU at hand.

For each row count M (1, 4, 16, 32), weight shape and dtype, compiles
linear(x[M, K], W[N, K], b) + relu twice with the carried cgc, once as the
rule decides (a generated kernel while M <= 16) and once with
--library-products (cuBLASLt with its RELU_BIAS epilogue), times both with
`cgc bench` (CUDA events around back-to-back graph replays, median of 5
repeats after warm-up) and prints one line per case:

  rule M=.. N=.. K=.. dtype=.. rule_us=.. library_us=.. rule=generated|library

The raw lines go to bench/results/product-rule-<GPU>-<date>.log; docs cite it.

With --mma it measures whether the tensor-core kernel pays: for each bf16
feed-forward chain (6 blocks of linear(K -> N) + bias + relu, then
linear(N -> K) + bias + residual: 12 products on parameter weights, as in a
transformer layer's MLP) and row count M, it compiles the chain with
--mma-products and with --library-products, times both the same way and
prints the time per product:

  mma M=.. N=.. K=.. dtype=.. mma_us=.. library_us=.. rule=library

into bench/results/product-mma-<GPU>-<date>.log.

With --tiled it measures the tiled kernel's threshold instead: for each
f32 matmul (M, N, K, transposes) it compiles matmul(a, b) with
--tiled-products and with --library-products, times both the same way and
prints

  tiled M=.. N=.. K=.. ta=0|1 tb=0|1 macs=.. tiled_us=.. library_us=..

into bench/results/product-tiled-<GPU>-<date>.log.

Usage: product_rule.py --cgc BIN [--out DIR] [--tiled | --mma]
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


def matmul_model(m, n, k, ta, tb):
    init = lambda seed: {"dist": "uniform", "low": -0.1, "high": 0.1, "seed": seed}
    return {"format_version": 1, "name": f"tiled_{m}x{n}x{k}",
            "inputs": [{"name": "a", "dtype": "f32", "shape": [k, m] if ta else [m, k]},
                       {"name": "b", "kind": "parameter", "dtype": "f32",
                        "shape": [n, k] if tb else [k, n], "init": init(1)}],
            "nodes": [{"name": "y", "op": "matmul", "inputs": ["a", "b"],
                       "attrs": {"transpose_a": ta, "transpose_b": tb}}],
            "outputs": ["y"]}


def ffn_chain(m, n, k, dt, blocks=6):
    """blocks x (linear(K -> N) + bias + relu, linear(N -> K) + bias + residual)."""
    init = lambda seed, fan_in: {"dist": "uniform", "low": -fan_in ** -0.5,
                                 "high": fan_in ** -0.5, "seed": seed}
    inputs = [{"name": "x", "dtype": dt, "shape": [m, k]}]
    nodes, h = [], "x"
    for i in range(blocks):
        for name, shape, fan_in in ((f"wu{i}", [n, k], k), (f"bu{i}", [n], k),
                                    (f"wd{i}", [k, n], n), (f"bd{i}", [k], n)):
            inputs.append({"name": name, "kind": "parameter", "dtype": dt, "shape": shape,
                           "init": init(len(inputs), fan_in)})
        nodes += [{"name": f"u{i}", "op": "linear", "inputs": [h, f"wu{i}", f"bu{i}"]},
                  {"name": f"r{i}", "op": "relu", "inputs": [f"u{i}"]},
                  {"name": f"d{i}", "op": "linear", "inputs": [f"r{i}", f"wd{i}", f"bd{i}"]},
                  {"name": f"h{i}", "op": "add", "inputs": [f"d{i}", h]}]
        h = f"h{i}"
    return {"format_version": 1, "name": f"ffn_{m}x{n}x{k}_{dt}", "inputs": inputs,
            "nodes": nodes, "outputs": [h]}


# Feed-forward widths (K, N) of BERT-base, the zoo's 4-layer Llama, a
# 2048-wide model, and a square one; row counts around the rule's limit.
MMA_WIDTHS = [(768, 3072), (512, 1376), (2048, 8192), (768, 768)]
MMA_ROWS = [16, 64, 128, 256, 512]


# mlp_train_small's products (forward TN, backward NN/TN), squares, and
# shapes of about 2^22 and 2^24 multiply-adds of every aspect.
TILED_SHAPES = [(32, 256, 128, 0, 1), (32, 16, 256, 0, 1), (32, 256, 16, 0, 0),
                (16, 256, 32, 1, 0), (256, 128, 32, 1, 0),
                (64, 64, 64, 0, 0), (128, 128, 128, 0, 0), (160, 160, 160, 0, 0),
                (256, 256, 256, 0, 0), (512, 512, 512, 0, 0),
                (64, 64, 1024, 0, 0), (32, 32, 4096, 0, 0), (128, 128, 256, 1, 0),
                (512, 512, 16, 0, 1), (1024, 1024, 4, 0, 0), (256, 256, 64, 0, 1),
                (256, 256, 128, 0, 0), (512, 512, 64, 1, 0), (128, 128, 1024, 0, 0),
                (64, 64, 4096, 0, 1), (640, 128, 32, 1, 0)]


def bench(cgc, path, flags):
    art = path + "_" + (flags[0].strip("-") if flags else "rule") + ".cgc"
    subprocess.run([cgc, path, "-o", art] + flags, check=True, stdout=subprocess.DEVNULL)
    out = subprocess.run([cgc, "bench", art, "--iters", "500", "--repeats", "5"],
                         check=True, capture_output=True, text=True).stdout
    return float(re.search(r"graph_us_per_run=([0-9.]+)", out).group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cgc", required=True)
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--tiled", action="store_true")
    ap.add_argument("--mma", action="store_true")
    args = ap.parse_args()
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip().splitlines()[0]
    work = tempfile.mkdtemp(prefix="cgc-rule-")
    if args.tiled:
        return tiled(args, gpu, work)
    if args.mma:
        return mma(args, gpu, work)
    lines = [f"# product rule, {gpu}, {datetime.date.today()}, cgc bench graph replays"]
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
    write_log(args.out, "product-rule", gpu, lines)


def write_log(out, prefix, gpu, lines):
    """bench/results/<prefix>-<gpu>-<date>.log (or under `out`)."""
    os.makedirs(out, exist_ok=True)
    name = f"{prefix}-{gpu.replace(' ', '-')}-{datetime.date.today()}.log"
    with open(os.path.join(out, name), "w") as f:
        f.write("\n".join(lines) + "\n")


def mma(args, gpu, work):
    lines = [f"# tensor-core product rows, {gpu}, {datetime.date.today()}, cgc bench graph "
             "replays, us per product (12 per chain)"]
    for k, n in MMA_WIDTHS:
        for m in MMA_ROWS:
            path = os.path.join(work, f"m_{m}_{n}_{k}.json")
            with open(path, "w") as f:
                json.dump(ffn_chain(m, n, k, "bf16"), f)
            mma_us = bench(args.cgc, path, ["--mma-products"]) / 12
            lib_us = bench(args.cgc, path, ["--library-products"]) / 12
            line = (f"mma M={m} N={n} K={k} dtype=bf16 mma_us={mma_us:.2f} "
                    f"library_us={lib_us:.2f} rule=library")
            print(line, flush=True)
            lines.append(line)
    write_log(args.out, "product-mma", gpu, lines)


def tiled(args, gpu, work):
    lines = [f"# tiled product threshold, {gpu}, {datetime.date.today()}, cgc bench graph replays"]
    for m, n, k, ta, tb in TILED_SHAPES:
        path = os.path.join(work, f"t_{m}_{n}_{k}_{ta}{tb}.json")
        with open(path, "w") as f:
            json.dump(matmul_model(m, n, k, bool(ta), bool(tb)), f)
        tiled_us = bench(args.cgc, path, ["--tiled-products"])
        lib_us = bench(args.cgc, path, ["--library-products"])
        macs = m * n * k
        line = (f"tiled M={m} N={n} K={k} ta={ta} tb={tb} macs={macs} tiled_us={tiled_us:.2f} "
                f"library_us={lib_us:.2f}")
        print(line, flush=True)
        lines.append(line)
    write_log(args.out, "product-tiled", gpu, lines)


if __name__ == "__main__":
    sys.exit(main())
