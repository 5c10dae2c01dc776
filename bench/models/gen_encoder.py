#!/usr/bin/env python3
"""Writes examples/encoder_small.json: one transformer encoder layer over a
padded batch and sequence (issue 13's encoder-shaped model).

tokens[B, S] -> embedding(1000, 64) -> x; x + attention(layernorm(x))
(4 heads of 16, softmax over the padded sequence) -> h; h + MLP(64, 128,
GELU)(layernorm(h)) -> out[B, S, 64]; pooled[B, 64] = mean of out over
the sequence. B in [1, 64] (buckets 4, 16, 64), S in [16, 512] (buckets
32, 64, 128, 256, 512).

Usage: gen_encoder.py [OUT]
"""
import json, os, sys

H, HEADS, D, FF, VOCAB = 64, 4, 16, 128, 1000


def param(name, shape, bound, seed):
    return {"name": name, "kind": "parameter", "dtype": "f32", "shape": shape,
            "init": {"dist": "uniform", "low": -bound, "high": bound, "seed": seed}}


def ones(name, shape):
    return {"name": name, "kind": "parameter", "dtype": "f32", "shape": shape,
            "init": {"dist": "ones"}}


def zeros(name, shape):
    return {"name": name, "kind": "parameter", "dtype": "f32", "shape": shape,
            "init": {"dist": "zeros"}}


def model():
    inputs = [{"name": "tokens", "dtype": "i64", "shape": ["B", "S"]},
              param("embed", [VOCAB, H], 1.0, 1),
              ones("ln1.w", [H]), zeros("ln1.b", [H]),
              ones("ln2.w", [H]), zeros("ln2.b", [H])]
    seed = 10
    for name, (n, k) in {"q": (H, H), "k": (H, H), "v": (H, H), "o": (H, H),
                         "fc1": (FF, H), "fc2": (H, FF)}.items():
        inputs += [param(name + ".w", [n, k], k ** -0.5, seed), param(name + ".b", [n], k ** -0.5, seed + 1)]
        seed += 2
    n = []

    def node(name, op, ins, **attrs):
        n.append({"name": name, "op": op, "inputs": ins, **({"attrs": attrs} if attrs else {})})
        return name

    x = node("x", "embedding", ["embed", "tokens"])
    a = node("ln1", "layernorm", [x, "ln1.w", "ln1.b"])
    heads = {}
    for p in "qkv":
        lin = node(p, "linear", [a, p + ".w", p + ".b"])
        split = node(p + ".heads", "reshape", [lin], shape=["B", "S", HEADS, D])
        heads[p] = node(p + ".t", "transpose", [split], perm=[0, 2, 1, 3])
    s = node("scores", "matmul", [heads["q"], heads["k"]], transpose_b=True)
    scale = node("scale", "constant", [], dtype="f32", shape=[], value=D ** -0.5)
    s = node("scaled", "mul", [s, scale])
    p = node("probs", "softmax", [s], axis=-1)
    c = node("context", "matmul", [p, heads["v"]])
    c = node("context.t", "transpose", [c], perm=[0, 2, 1, 3])
    c = node("context.merged", "reshape", [c], shape=["B", "S", H])
    o = node("attn", "linear", [c, "o.w", "o.b"])
    h = node("h", "add", [x, o])
    m = node("ln2", "layernorm", [h, "ln2.w", "ln2.b"])
    m = node("fc1", "linear", [m, "fc1.w", "fc1.b"])
    m = node("gelu", "gelu", [m])
    m = node("fc2", "linear", [m, "fc2.w", "fc2.b"])
    out = node("out", "add", [h, m])
    node("pooled", "mean", [out], axes=[1])
    return {"format_version": 1, "name": "encoder_small",
            "doc": __doc__.split("\n\n")[1].replace("\n", " "),
            "dims": [{"name": "B", "min": 1, "max": 64, "buckets": [4, 16, 64]},
                     {"name": "S", "min": 16, "max": 512,
                      "buckets": [32, 64, 128, 256, 512]}],
            "inputs": inputs, "nodes": n, "outputs": ["out", "pooled"]}


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "../../examples/encoder_small.json")
    with open(out, "w") as f:
        json.dump(model(), f, indent=1)
        f.write("\n")
