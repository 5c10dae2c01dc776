#!/usr/bin/env python3
"""Writes the models of the sync-point workloads (issue: remove CPU-GPU sync
points) as cgc JSON:

  masked_lm   BERT's masked-LM loss: the masked tokens' hidden states are
              gathered by nonzero(mask) (optionally with max_count, the
              fixed-size gather of MLPerf BERT), projected to the vocabulary
              and scored with cross_entropy against their labels.
  power_iter  power iteration: v <- A v / |A v| while max|v' - v| > tol
              (read on the host with item() in PyTorch), at most 100 trips.

examples/masked_lm_small.json and examples/power_iteration.json are made by
`gen_sync_models.py examples`; bench/sync_points.py makes the full sizes.
"""
import json, os, sys


def masked_lm(tokens, hidden, vocab, max_count=None, name="masked_lm"):
    bound = 1.0 / hidden ** 0.5
    nz_attrs = {"max_count": max_count} if max_count else {}
    return {
        "format_version": 1,
        "name": name,
        "doc": (f"BERT masked-LM loss over {tokens} tokens: the masked tokens' hidden states "
                f"(nonzero(mask){' with max_count ' + str(max_count) if max_count else ''}) "
                f"go through Linear({hidden},{vocab}) into cross_entropy against their labels."),
        "inputs": [
            {"name": "hidden", "dtype": "f32", "shape": [tokens, hidden]},
            {"name": "labels", "dtype": "i64", "shape": [tokens]},
            {"name": "mask", "dtype": "bool", "shape": [tokens]},
            {"name": "decoder.w", "kind": "parameter", "dtype": "f32", "shape": [vocab, hidden],
             "init": {"dist": "uniform", "low": -bound, "high": bound, "seed": 1}},
            {"name": "decoder.b", "kind": "parameter", "dtype": "f32", "shape": [vocab],
             "init": {"dist": "uniform", "low": -bound, "high": bound, "seed": 2}},
        ],
        "nodes": [
            {"name": "nz", "op": "nonzero", "inputs": ["mask"], "attrs": nz_attrs, "loc": "mlm.py:5"},
            {"name": "col", "op": "constant", "attrs": {"dtype": "i64", "shape": [], "value": 0}},
            {"name": "idx", "op": "gather", "inputs": ["nz", "col"], "attrs": {"axis": 1}, "loc": "mlm.py:5"},
            {"name": "h", "op": "gather", "inputs": ["hidden", "idx"], "loc": "mlm.py:6"},
            {"name": "t", "op": "gather", "inputs": ["labels", "idx"], "loc": "mlm.py:7"},
            {"name": "logits", "op": "linear", "inputs": ["h", "decoder.w", "decoder.b"], "loc": "mlm.py:8"},
            {"name": "loss", "op": "cross_entropy", "inputs": ["logits", "t"], "loc": "mlm.py:9"},
        ],
        "outputs": ["loss"],
    }


def power_iter(n, tol=1e-5, max_iterations=100, name="power_iteration"):
    def region(nodes, outputs):
        return {"inputs": [{"name": "i", "dtype": "i32", "shape": []},
                           {"name": "v", "dtype": "f32", "shape": [n, 1]},
                           {"name": "d", "dtype": "f32", "shape": []},
                           {"name": "a", "dtype": "f32", "shape": [n, n]}],
                "nodes": nodes, "outputs": outputs}
    cond = region([
        {"name": "dv", "op": "item", "inputs": ["d"], "loc": "power.py:9"},
        {"name": "tol", "op": "constant", "attrs": {"dtype": "f32", "shape": [], "value": tol}},
        {"name": "go", "op": "gt", "inputs": ["dv", "tol"], "loc": "power.py:9"}], ["go"])
    body = region([
        {"name": "w", "op": "matmul", "inputs": ["a", "v"], "loc": "power.py:5"},
        {"name": "sq", "op": "mul", "inputs": ["w", "w"]},
        {"name": "ss", "op": "sum", "inputs": ["sq"]},
        {"name": "norm", "op": "sqrt", "inputs": ["ss"], "loc": "power.py:6"},
        {"name": "v2", "op": "div", "inputs": ["w", "norm"], "loc": "power.py:6"},
        {"name": "diff", "op": "sub", "inputs": ["v2", "v"]},
        {"name": "ad", "op": "abs", "inputs": ["diff"]},
        {"name": "d2", "op": "max", "inputs": ["ad"], "loc": "power.py:7"},
        {"name": "one", "op": "constant", "attrs": {"dtype": "i32", "shape": [], "value": 1}},
        {"name": "i2", "op": "add", "inputs": ["i", "one"]}], ["i2", "v2", "d2", "a"])
    return {
        "format_version": 1,
        "name": name,
        "doc": (f"Power iteration on a {n}x{n} matrix: v <- A v / |A v| while max|v' - v| > {tol} "
                f"(item() on the host in PyTorch), at most {max_iterations} trips; returns v, "
                "the Rayleigh quotient v.(A v) and the trip count."),
        "inputs": [{"name": "a", "dtype": "f32", "shape": [n, n]},
                   {"name": "v0", "dtype": "f32", "shape": [n, 1]}],
        "nodes": [
            {"name": "i0", "op": "constant", "attrs": {"dtype": "i32", "shape": [], "value": 0}},
            {"name": "d0", "op": "constant", "attrs": {"dtype": "f32", "shape": [], "value": 1e30}},
            {"name": "iterate", "op": "while", "inputs": ["i0", "v0", "d0", "a"],
             "outputs": ["iterations", "v", "delta", "a_end"],
             "attrs": {"max_iterations": max_iterations}, "loc": "power.py:4",
             "regions": {"cond": cond, "body": body}},
            {"name": "av", "op": "matmul", "inputs": ["a", "v"], "loc": "power.py:11"},
            {"name": "vav", "op": "mul", "inputs": ["v", "av"]},
            {"name": "eigenvalue", "op": "sum", "inputs": ["vav"], "loc": "power.py:11"},
        ],
        "outputs": ["v", "eigenvalue", "iterations"],
    }


def write(path, g):
    with open(path, "w") as f:
        json.dump(g, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: gen_sync_models.py OUTDIR")
    out = sys.argv[1]
    write(os.path.join(out, "masked_lm_small.json"),
          masked_lm(256, 64, 1000, max_count=48, name="masked_lm_small"))
    write(os.path.join(out, "power_iteration.json"), power_iter(256))
