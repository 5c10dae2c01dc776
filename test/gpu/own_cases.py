#!/usr/bin/env python3
"""The GPU test suite's own models (stage_cases.py stages them with the
golden ones): sizes that are multiples of no vector width, row and column
shape classes, fused row kernels, products, sync points, integer wrap,
and the attention cases of attention_cases.py.
own_cases(DIR) writes each as DIR/<name>.json and returns
[(name, path, None)]."""
import json, os

import numpy as np

from attention_cases import attention_cases, attention_block_cases


def own_cases(dir):
    """Sizes that are multiples of no vector width, with f16/bf16 variants."""
    made = []

    def put(name, inputs, nodes, outputs):
        g = {"format_version": 1, "name": name,
             "inputs": [i if isinstance(i, dict) else {"name": i[0], "dtype": i[1], "shape": i[2]}
                        for i in inputs],
             "nodes": nodes, "outputs": outputs}
        p = os.path.join(dir, name + ".json")
        with open(p, "w") as f:
            json.dump(g, f, indent=1)
        made.append((name, p, None))

    for shape in ([1000], [4097], [65537], [3, 7, 13]):
        s = "x".join(map(str, shape))
        for dt in ("f32", "f16", "bf16") if shape != [65537] else ("f32", "bf16"):
            # a fused elementwise group: y = gelu(a*b + a) - relu(b), plus a broadcast row
            put(f"own_ew_{dt}_{s}", [("a", dt, shape), ("b", dt, shape), ("c", dt, shape[-1:])],
                [{"name": "m", "op": "mul", "inputs": ["a", "b"]},
                 {"name": "p", "op": "add", "inputs": ["m", "a"]},
                 {"name": "q", "op": "gelu", "inputs": ["p"]},
                 {"name": "rb", "op": "relu", "inputs": ["b"]},
                 {"name": "y", "op": "sub", "inputs": ["q", "rb"]},
                 {"name": "z", "op": "mul", "inputs": ["y", "c"]}], ["z"])
        put(f"own_add_f32_{s}", [("a", "f32", shape), ("b", "f32", shape)],
            [{"name": "y", "op": "add", "inputs": ["a", "b"]}], ["y"])
        put(f"own_sum_all_f32_{s}", [("x", "f32", shape)],
            [{"name": "y", "op": "sum", "inputs": ["x"]}], ["y"])
        put(f"own_dropout_f32_{s}", [("x", "f32", shape), ("rng", "i64", [2])],
            [{"name": "y", "op": "dropout", "inputs": ["x", "rng"], "attrs": {"p": 0.3, "offset": 5}}], ["y"])
    for shape, axis in (([7, 4097], -1), ([4097, 3], 0), ([3, 7, 13], 1), ([13, 1000], -1), ([3, 7, 13], -1)):
        s = "x".join(map(str, shape)) + f"_ax{axis}"
        for op in ("sum", "max", "mean"):
            put(f"own_{op}_f32_{s}", [("x", "f32", shape)],
                [{"name": "y", "op": op, "inputs": ["x"], "attrs": {"axes": [axis]}}], ["y"])
        for dt in ("f32", "f16", "bf16"):
            put(f"own_softmax_{dt}_{s}", [("x", dt, shape)],
                [{"name": "y", "op": "softmax", "inputs": ["x"], "attrs": {"axis": axis}}], ["y"])
    for shape in ([13, 1000], [3, 7, 13], [5, 4097], [2, 65537]):
        s = "x".join(map(str, shape))
        for dt in ("f32", "f16", "bf16"):
            ns = shape[-1:]
            put(f"own_layernorm_{dt}_{s}", [("x", dt, shape), ("w", dt, ns), ("b", dt, ns)],
                [{"name": "y", "op": "layernorm", "inputs": ["x", "w", "b"],
                  "attrs": {"axis": -1, "eps": 1e-5}}], ["y"])
    # mse_loss written out (expand-mse-loss): long inputs split over blocks,
    # short ones one row kernel; f16/bf16 differences taken in f32.
    for shape in ([640, 1024], [4097], [3, 7, 13]):
        s = "x".join(map(str, shape))
        for dt in ("f32", "bf16"):
            for reduction in ("mean", "sum"):
                put(f"own_mse_loss_{reduction}_{dt}_{s}", [("a", dt, shape), ("t", dt, shape)],
                    [{"name": "y", "op": "mse_loss", "inputs": ["a", "t"],
                      "attrs": {"reduction": reduction}}], ["y"])
    product_cases(put)
    attention_cases(put)
    attention_block_cases(put)
    row_cases(put)
    fused_row_cases(put)
    # Reductions in two phases (few long rows; target/ReductionRule.h):
    # vector and scalar loads, every accumulator type, a row count that
    # leaves the last chunk short.
    for op in ("sum", "mean", "max", "min"):
        for dt, shape in (("f32", [2, 131072]), ("f16", [3, 70001]), ("bf16", [1, 40000])):
            put(f"own_split_{op}_{dt}_{'x'.join(map(str, shape))}", [("x", dt, shape)],
                [{"name": "y", "op": op, "inputs": ["x"], "attrs": {"axes": [-1]}}], ["y"])
    for dt in ("i32", "i64"):
        put(f"own_split_sum_{dt}_5x65536", [("x", dt, [5, 65536])],
            [{"name": "y", "op": "sum", "inputs": ["x"], "attrs": {"axes": [1]}}], ["y"])
    put("own_split_max_all_f32_4x8x4096", [("x", "f32", [4, 8, 4096])],
        [{"name": "y", "op": "max", "inputs": ["x"]}], ["y"])
    # Integer arithmetic wraps (the interpreter's rule): sums past the
    # largest value, the most negative value negated and divided by -1.
    # i32 only: the interpreter holds integers in doubles, exact below 2^53,
    # so it cannot be the reference for wrapping i64 (the lit test
    # emit-cuda.test checks the i64 helpers' text).
    for dt, lo, hi in (("i32", -2**31, 2**31 - 1),):
        const = lambda name, v: {"name": name, "op": "constant",
                                 "attrs": {"dtype": dt, "shape": [], "value": v}}
        put(f"own_int_wrap_{dt}", [("x", dt, [4099])],
            [const("hi", hi), const("lo", lo), const("minus1", -1),
             {"name": "a", "op": "add", "inputs": ["x", "hi"]},
             {"name": "y", "op": "sub", "inputs": ["a", "lo"]},
             {"name": "m", "op": "mul", "inputs": ["x", "hi"]},
             {"name": "n", "op": "neg", "inputs": ["lo"]},
             {"name": "b", "op": "abs", "inputs": ["lo"]},
             {"name": "nb", "op": "add", "inputs": ["n", "b"]},
             {"name": "q", "op": "div", "inputs": ["lo", "x"]},
             {"name": "q1", "op": "div", "inputs": ["lo", "minus1"]},
             {"name": "r", "op": "add", "inputs": ["q", "q1"]},
             {"name": "z", "op": "add", "inputs": ["r", "nb"]}], ["y", "m", "z"])
    put("own_dropout_bf16_4097x3", [("x", "bf16", [4097, 3])],
        [{"name": "y", "op": "dropout", "inputs": ["x"], "attrs": {"p": 0.5, "seed": 77}}], ["y"])
    return made


def fused_row_cases(put):
    """Row kernels with a prologue and an epilogue (fuse-rows): dot
    products, residual + dropout + layernorm with the residual sum as a
    second output, softmax with a scaled, biased input and a masked
    output, log_softmax into a dropout, mean of squares into rsqrt, an
    integer max; vectorized and scalar rows, every float dtype."""
    def const(name, dt, v):
        return {"name": name, "op": "constant", "attrs": {"dtype": dt, "shape": [], "value": v}}
    for dt in ("f32", "bf16", "f16"):
        for n, c in ((300, 40), (64, 1000), (5, 33)):
            put(f"own_rows_dot_{dt}_{n}x{c}", [("x", dt, [n, c]), ("y", dt, [n, c]), ("c", dt, [n])],
                [{"name": "m", "op": "mul", "inputs": ["x", "y"]},
                 {"name": "t", "op": "sum", "inputs": ["m"], "attrs": {"axes": [1]}},
                 const("half", dt, 0.5),
                 {"name": "u", "op": "mul", "inputs": ["t", "half"]},
                 {"name": "v", "op": "add", "inputs": ["u", "c"]}], ["v"])
        for n, c in ((64, 1024), (7, 1000), (5, 33)):
            put(f"own_rows_resdrop_ln_{dt}_{n}x{c}",
                [("x", dt, [n, c]), ("r", dt, [n, c]), ("rng", "i64", [2]), ("w", dt, [c]), ("b", dt, [c])],
                [{"name": "d", "op": "dropout", "inputs": ["r", "rng"], "attrs": {"p": 0.1, "offset": 3}},
                 {"name": "h", "op": "add", "inputs": ["x", "d"]},
                 {"name": "y", "op": "layernorm", "inputs": ["h", "w", "b"], "attrs": {"axis": -1, "eps": 1e-5}}],
                ["y", "h"])
        for shape in ([4, 2, 16, 16], [6, 50], [3, 1000], [9, 7]):
            s = "x".join(map(str, shape))
            lead = shape[:-1] + [1]
            put(f"own_rows_softmax_{dt}_{s}",
                [("s", dt, shape), ("bias", dt, shape[-1:]), ("colb", dt, lead), ("keep", dt, shape)],
                [const("scale", dt, 0.25),
                 {"name": "z", "op": "mul", "inputs": ["s", "scale"]},
                 {"name": "zb", "op": "add", "inputs": ["z", "bias"]},
                 {"name": "zc", "op": "sub", "inputs": ["zb", "colb"]},
                 {"name": "p", "op": "softmax", "inputs": ["zc"], "attrs": {"axis": -1}},
                 {"name": "pm", "op": "mul", "inputs": ["p", "keep"]}], ["pm"])
        put(f"own_rows_logsoftmax_dropout_{dt}_33x100", [("x", dt, [33, 100])],
            [{"name": "e", "op": "exp", "inputs": ["x"]},
             {"name": "lp", "op": "log_softmax", "inputs": ["e"]},
             {"name": "dd", "op": "dropout", "inputs": ["lp"], "attrs": {"p": 0.3, "seed": 9}}], ["dd"])
        put(f"own_rows_rms_{dt}_129x768", [("x", dt, [129, 768])],
            [{"name": "sq", "op": "mul", "inputs": ["x", "x"]},
             {"name": "ms", "op": "mean", "inputs": ["sq"], "attrs": {"axes": [1]}},
             const("eps", dt, 1e-5),
             {"name": "mse", "op": "add", "inputs": ["ms", "eps"]},
             {"name": "inv", "op": "rsqrt", "inputs": ["mse"]}], ["inv"])
    # What fuse-rows must leave outside (test/passes/fuse-rows/stops.json):
    # a [B, 1, S, S] mask, an f32 cast of an f16 softmax, an f16 cast into
    # a layernorm, i64 ids cast into an f32 sum; a dropout whose rng state
    # is computed.
    put("own_rows_access_mixed",
        [("s", "f32", [2, 4, 8, 8]), ("mask", "f32", [2, 1, 8, 8]), ("h", "f16", [4, 64]),
         ("x", "f32", [4, 64]), ("ids", "i64", [4, 64]), ("rng", "i64", [2]),
         ("two", "i64", [2]), ("v", "f32", [2])],
        [{"name": "sm", "op": "add", "inputs": ["s", "mask"]},
         {"name": "p", "op": "softmax", "inputs": ["sm"]},
         {"name": "hs", "op": "softmax", "inputs": ["h"]},
         {"name": "hf", "op": "cast", "inputs": ["hs"], "attrs": {"dtype": "f32"}},
         {"name": "xh", "op": "cast", "inputs": ["x"], "attrs": {"dtype": "f16"}},
         {"name": "ln", "op": "layernorm", "inputs": ["xh"]},
         {"name": "idf", "op": "cast", "inputs": ["ids"], "attrs": {"dtype": "f32"}},
         {"name": "t", "op": "sum", "inputs": ["idf"], "attrs": {"axes": [1]}},
         {"name": "rng2", "op": "add", "inputs": ["rng", "two"]},
         {"name": "dv", "op": "dropout", "inputs": ["v", "rng2"], "attrs": {"p": 0.5}},
         {"name": "vs", "op": "sum", "inputs": ["dv"]},
         {"name": "rf", "op": "cast", "inputs": ["rng2"], "attrs": {"dtype": "f32"}},
         {"name": "dw", "op": "dropout", "inputs": ["rf", "rng2"], "attrs": {"p": 0.5}},
         {"name": "ws", "op": "sum", "inputs": ["dw"]}],
        ["p", "hf", "ln", "t", "vs", "ws"])
    # remove-sync-points: an item kept on the device scales the input; a
    # selection's sum and an f16 selection's mean become masked reductions.
    put("own_sync_item_masked_sum", [("x", "f32", [33, 40]), ("m", "bool", [33, 40])],
        [{"name": "first", "op": "slice", "inputs": ["x"], "attrs": {"starts": [0, 0], "ends": [1, 1]}},
         {"name": "v", "op": "item", "inputs": ["first"]},
         {"name": "scaled", "op": "mul", "inputs": ["x", "v"]},
         {"name": "sel", "op": "masked_select", "inputs": ["scaled", "m"]},
         {"name": "sq", "op": "mul", "inputs": ["sel", "sel"]},
         {"name": "loss", "op": "sum", "inputs": ["sq"]}], ["loss", "v"])
    put("own_sync_masked_mean_f16", [("x", "f16", [4097]), ("m", "bool", [4097])],
        [{"name": "sel", "op": "masked_select", "inputs": ["x", "m"]},
         {"name": "e", "op": "exp", "inputs": ["sel"]},
         {"name": "avg", "op": "mean", "inputs": ["e"]}], ["avg"])
    sync_density_cases(put)
    # cumsum: lines of 128 or more are scanned by a block (chunks of 1024,
    # a partial last chunk), shorter ones by a thread; strided lines too.
    for dt, shape, axis in (("f32", [3, 5000], 1), ("i32", [2, 300, 3], 1), ("i64", [4097], 0),
                            ("f32", [1000, 130], 0), ("f16", [2, 2049], -1), ("f32", [77, 127], 1)):
        put(f"own_cumsum_{dt}_{'x'.join(map(str, shape))}_ax{axis}", [("x", dt, shape)],
            [{"name": "y", "op": "cumsum", "inputs": ["x"], "attrs": {"axis": axis}}], ["y"])
    for dt in ("i32", "i64"):
        put(f"own_rows_absmax_{dt}_77x100", [("k", dt, [77, 100])],
            [{"name": "a", "op": "abs", "inputs": ["k"]},
             {"name": "mx", "op": "max", "inputs": ["a"], "attrs": {"axes": [1]}},
             const("one", dt, 1),
             {"name": "o", "op": "add", "inputs": ["mx", "one"]}], ["o"])


def sync_density_cases(put):
    """remove-sync-points at every mask density: the mask is s > threshold
    for inputs s in [-3, 3], so a threshold of 10 selects none, 2.4 about
    10%, 0 half and -10 all. Row selections (nonzero, with and without a
    max_count smaller than the selection), element selections, and a loop
    whose trip count is the selection's size read through item."""
    def const(name, dtype, value):
        return {"name": name, "op": "constant", "attrs": {"dtype": dtype, "shape": [], "value": value}}

    for tag, threshold in (("none", 10.0), ("sparse", 2.4), ("half", 0.0), ("all", -10.0)):
        mask = [const("threshold", "f32", threshold),
                {"name": "m", "op": "gt", "inputs": ["s", "threshold"]}]
        for bound in (None, 24):
            put(f"own_sync_rows_{tag}" + (f"_k{bound}" if bound else ""),
                [("h", "f32", [100, 32]), ("labels", "i64", [100]), ("s", "f32", [100]),
                 ("w", "f32", [17, 32])],
                mask + [{"name": "nz", "op": "nonzero", "inputs": ["m"],
                         "attrs": {"max_count": bound} if bound else {}},
                        const("col", "i64", 0),
                        {"name": "idx", "op": "gather", "inputs": ["nz", "col"], "attrs": {"axis": 1}},
                        {"name": "hh", "op": "gather", "inputs": ["h", "idx"]},
                        {"name": "tt", "op": "gather", "inputs": ["labels", "idx"]},
                        {"name": "logits", "op": "linear", "inputs": ["hh", "w"]},
                        {"name": "loss", "op": "cross_entropy", "inputs": ["logits", "tt"]},
                        {"name": "p", "op": "softmax", "inputs": ["logits"]},
                        {"name": "avg", "op": "mean", "inputs": ["p"], "attrs": {"axes": [0]}},
                        {"name": "total", "op": "sum", "inputs": ["hh"]}],
                ["loss", "avg", "total"])
        put(f"own_sync_elements_{tag}", [("x", "f32", [1000]), ("s", "f32", [1000])],
            mask + [{"name": "sel", "op": "masked_select", "inputs": ["x", "m"]},
                    {"name": "e", "op": "exp", "inputs": ["sel"]},
                    {"name": "avg", "op": "mean", "inputs": ["e"]},
                    {"name": "total", "op": "sum", "inputs": ["sel"]}], ["avg", "total"])
        body_in = [{"name": "i", "dtype": "f32", "shape": []}, {"name": "n", "dtype": "f32", "shape": []},
                   {"name": "v", "dtype": "f32", "shape": [64]}]
        put(f"own_sync_loop_{tag}", [("x", "f32", [64]), ("s", "f32", [8])],
            mask + [{"name": "ones", "op": "cast", "inputs": ["m"], "attrs": {"dtype": "f32"}},
                    {"name": "count", "op": "sum", "inputs": ["ones"]},
                    {"name": "c", "op": "item", "inputs": ["count"]},
                    const("i0", "f32", 0.0),
                    {"name": "loop", "op": "while", "inputs": ["i0", "c", "x"], "outputs": ["trips", "n", "y"],
                     "regions": {
                         "cond": {"inputs": body_in, "nodes": [{"name": "go", "op": "lt", "inputs": ["i", "n"]}],
                                  "outputs": ["go"]},
                         "body": {"inputs": body_in,
                                  "nodes": [const("one", "f32", 1.0), const("half", "f32", 0.5),
                                            {"name": "i2", "op": "add", "inputs": ["i", "one"]},
                                            {"name": "vh", "op": "mul", "inputs": ["v", "half"]},
                                            {"name": "v2", "op": "add", "inputs": ["vh", "one"]}],
                                  "outputs": ["i2", "n", "v2"]}}}],
            ["y", "trips"])


ROW_LENGTHS = (1, 2, 3, 31, 32, 33, 127, 1000, 4097, 30522, 65537)


def row_cases(put):
    """Every shape class of target/ReductionRule.h: rows of each length in
    ROW_LENGTHS (many rows when short, so groups of lanes share warps and
    the last block is partial), every dtype, column reductions."""
    def one(name, inputs, op, attrs=None, extra=()):
        put(name, inputs, [{"name": "y", "op": op, "inputs": ["x", *extra], "attrs": attrs or {}}], ["y"])

    for n in ROW_LENGTHS:
        rows = 37 if n <= 127 else 3
        shape = [rows, n]
        for op in ("sum", "max", "mean", "min"):
            one(f"row_{op}_f32_{rows}x{n}", [("x", "f32", shape)], op, {"axes": [-1]})
        for dt in ("f32", "f16", "bf16") if n in (1, 33, 1000, 4097, 30522) else ("f32",):
            one(f"row_softmax_{dt}_{rows}x{n}", [("x", dt, shape)], "softmax")
            one(f"row_log_softmax_{dt}_{rows}x{n}", [("x", dt, shape)], "log_softmax")
            one(f"row_layernorm_{dt}_{rows}x{n}", [("x", dt, shape), ("w", dt, [n]), ("b", dt, [n])],
                "layernorm", {"eps": 1e-5}, ["w", "b"])
            one(f"row_rms_norm_{dt}_{rows}x{n}", [("x", dt, shape), ("w", dt, [n])],
                "rms_norm", {"eps": 1e-6}, ["w"])
            if dt != "f32":
                one(f"row_sum_{dt}_{rows}x{n}", [("x", dt, shape)], "sum", {"axes": [-1]})
        for red in ("none", "mean", "sum"):
            one(f"row_cross_entropy_{red}_f32_{rows}x{n}", [("x", "f32", shape), ("t", "i64", [rows])],
                "cross_entropy", {"reduction": red, "ignore_index": 1}, ["t"])
        for dt in ("i32", "i64"):
            one(f"row_sum_{dt}_{rows}x{n}", [("x", dt, shape)], "sum", {"axes": [-1]})
            one(f"row_max_{dt}_{rows}x{n}", [("x", dt, shape)], "max", {"axes": [-1]})
    # Empty rows and no rows: sums of nothing, the mean loss of no rows.
    put("row_empties", [("a", "f32", [3, 0]), ("b", "f32", [0, 5]), ("t0", "i64", [0]),
                        ("d", "f32", [0, 7])],
        [{"name": "ln", "op": "layernorm", "inputs": ["a"]},
         {"name": "ce0", "op": "cross_entropy", "inputs": ["b", "t0"]},
         {"name": "sm", "op": "softmax", "inputs": ["d"]},
         {"name": "s", "op": "sum", "inputs": ["a"], "attrs": {"axes": [1]}},
         {"name": "mx", "op": "max", "inputs": ["d"], "attrs": {"axes": [1]}},
         {"name": "cs", "op": "sum", "inputs": ["b"], "attrs": {"axes": [0]}}],
        ["ln", "ce0", "sm", "s", "mx", "cs"])
    one("row_layernorm_noaffine_f32_8x3x1000", [("x", "f32", [8, 3, 1000])], "layernorm", {"axis": 1})
    one("row_rms_norm_noaffine_f32_8x3x1000", [("x", "f32", [8, 3, 1000])], "rms_norm", {"axis": 1})
    one("row_cross_entropy_mean_bf16_300x1000", [("x", "bf16", [300, 1000]), ("t", "i32", [300])],
        "cross_entropy", {}, ["t"])
    # Column reductions: one chunk, split chunks, vector and scalar
    # columns, a run of two dims, every accumulator type.
    for op, dt, shape, axes in (("sum", "f32", [4096, 1024], [0]), ("mean", "f32", [33, 4097], [0]),
                                ("max", "f32", [64, 3, 5], [0, 1]), ("sum", "i32", [3, 70, 13], [1]),
                                ("min", "i64", [1000, 6], [0]), ("sum", "f16", [300, 100], [0]),
                                ("sum", "bf16", [7, 129, 3], [1]), ("mean", "f32", [2, 5000, 8], [1])):
        one(f"col_{op}_{dt}_{'x'.join(map(str, shape))}_ax{''.join(map(str, axes))}",
            [("x", dt, shape)], op, {"axes": axes})


def product_cases(put):
    """matmul and linear at M, N, K among 1, 2, 3, 17, 64, 255, 1000, 4097:
    generated kernels (M <= 16), the tiled kernel (small f32) and cuBLASLt
    (larger), every epilogue,
    batched, broadcast and transposed matmuls, f32/f16/bf16. Shapes stay
    small enough that the staged inputs fit the carried folder."""
    def chain(ops, last, n_features, dt):
        """Epilogue nodes after `last`; returns (nodes, extra inputs, out)."""
        nodes, extra = [], []
        for k, op in enumerate(ops):
            name = f"e{k}"
            if op == "bias":
                extra.append(("bias", dt, [n_features]))
                nodes.append({"name": name, "op": "add", "inputs": [last, "bias"]})
            elif op == "residual":
                extra.append(("res", dt, None))
                nodes.append({"name": name, "op": "add", "inputs": ["res", last]})
            elif op == "layernorm":
                extra += [("g", dt, [n_features]), ("h", dt, [n_features])]
                nodes.append({"name": name, "op": "layernorm", "inputs": [last, "g", "h"]})
            else:
                nodes.append({"name": name, "op": op, "inputs": [last]})
            last = name
        return nodes, extra, last

    def linear(tag, m, n, k, dt, ops, lead=(), bias=True, suffix=""):
        xs = list(lead) + [m]
        nodes = [{"name": "fc", "op": "linear", "inputs": ["x", "w"] + (["b"] if bias else [])}]
        more, extra, out = chain(ops, "fc", n, dt)
        extra = [(nm, t, s if s is not None else xs + [n]) for nm, t, s in extra]
        put(f"own_linear_{tag}_{dt}_{'x'.join(map(str, xs))}x{n}x{k}_{'_'.join(ops) or 'plain'}"
            + ("" if bias else "_nobias") + suffix,
            [("x", dt, xs + [k]), ("w", dt, [n, k])] + ([("b", dt, [n])] if bias else []) + extra,
            nodes + more, [out])

    # Generated kernels (M <= 16): odd sizes, K not a multiple of the vector width.
    for m, n, k in ((1, 1, 1), (1, 3, 2), (2, 17, 255), (3, 1000, 17), (1, 255, 1000),
                    (16, 64, 4097), (1, 4097, 64)):
        for dt in ("f32", "f16", "bf16"):
            linear("gen", m, n, k, dt, ["gelu", "layernorm"])
        linear("gen", m, n, k, "f32", ["relu"])
        linear("gen", m, n, k, "f32", ["residual", "gelu_tanh"])
    linear("gen", 3, 64, 255, "f32", [], lead=(2,))
    # cuBLASLt: every epilogue, and the erf gelu left to the next kernel.
    for m, n, k in ((17, 3, 2), (64, 255, 17), (255, 1000, 64), (1000, 64, 255), (64, 17, 4097)):
        for dt in ("f32", "f16", "bf16"):
            linear("lib", m, n, k, dt, ["relu"])
        linear("lib", m, n, k, "f32", [])
        linear("lib", m, n, k, "f32", ["gelu_tanh"])
        linear("lib", m, n, k, "f32", ["residual", "gelu"])
        linear("lib", m, n, k, "bf16", ["residual"])
        linear("lib", m, n, k, "f32", ["residual", "relu"])
        linear("lib", m, n, k, "bf16", ["residual", "gelu_tanh"])
    linear("lib", 17, 64, 255, "f32", ["layernorm"], lead=(4,))
    # A layernorm feeding a small product: the kernel normalizes its rows
    # (prologue); with a parameter weight it loads the weight before it
    # waits for its producers.
    for m, n, k, dt, param in ((1, 256, 256, "f32", True), (3, 17, 255, "f32", False),
                               (16, 64, 1000, "f32", False), (2, 33, 64, "f16", True),
                               (1, 40, 4097, "bf16", False), (4, 8, 24, "bf16", True)):
        w = {"name": "w", "dtype": dt, "shape": [n, k]}
        if param:
            w.update(kind="parameter", init={"dist": "uniform", "low": -0.1, "high": 0.1, "seed": 5})
        put(f"own_ln_linear_{dt}_{m}x{n}x{k}{'_param' if param else ''}",
            [("x", dt, [m, k]), ("g", dt, [k]), ("h", dt, [k]), w, ("b", dt, [n])],
            [{"name": "ln", "op": "layernorm", "inputs": ["x", "g", "h"]},
             {"name": "fc", "op": "linear", "inputs": ["ln", "w", "b"]},
             {"name": "y", "op": "relu", "inputs": ["fc"]}], ["y"])
    # An rms_norm feeding a small product, likewise (Llama's norm before
    # its merged projections at decode).
    for m, n, k, dt in ((1, 256, 256, "f32"), (3, 17, 255, "f32"), (2, 33, 4097, "bf16")):
        put(f"own_rms_linear_{dt}_{m}x{n}x{k}",
            [("x", dt, [m, k]), ("g", dt, [k]), ("w", dt, [n, k])],
            [{"name": "rn", "op": "rms_norm", "inputs": ["x", "g"], "attrs": {"eps": 1e-6}},
             {"name": "y", "op": "linear", "inputs": ["rn", "w"]}], ["y"])
    # One rms_norm read by three small products (q, k, v at decode): each
    # product_fusion normalizes its rows with a copy of the norm.
    for dt in ("f32", "bf16"):
        put(f"own_rms_qkv_{dt}_2x1x256",
            [("x", dt, [2, 1, 256]), ("g", dt, [256]), ("wq", dt, [256, 256]),
             ("wk", dt, [64, 256]), ("wv", dt, [64, 256])],
            [{"name": "n", "op": "rms_norm", "inputs": ["x", "g"], "attrs": {"eps": 1e-6}},
             {"name": "q", "op": "linear", "inputs": ["n", "wq"]},
             {"name": "k", "op": "linear", "inputs": ["n", "wk"]},
             {"name": "v", "op": "linear", "inputs": ["n", "wv"]}], ["q", "k", "v"])
    # A prologue feeding a small product (fuse-epilogue): silu(gate) * up
    # read from the halves of one [m, 2k] tensor (a decoder's merged
    # gate/up product) before the down projection and its residual; k not
    # a multiple of the vector width in some.
    for m, n, k, dt in ((1, 255, 1000, "bf16"), (3, 64, 64, "f32"), (2, 33, 4097, "f16"),
                        (16, 17, 255, "f32"), (1, 512, 2048, "bf16")):
        put(f"own_glu_linear_{dt}_{m}x{n}x{k}",
            [("h", dt, [m, 1, 2 * k]), ("w", dt, [n, k]), ("r", dt, [m, 1, n])],
            [{"name": "gate", "op": "slice", "inputs": ["h"],
              "attrs": {"axes": [2], "starts": [0], "ends": [k]}},
             {"name": "up", "op": "slice", "inputs": ["h"],
              "attrs": {"axes": [2], "starts": [k], "ends": [2 * k]}},
             {"name": "sig", "op": "sigmoid", "inputs": ["gate"]},
             {"name": "silu", "op": "mul", "inputs": ["gate", "sig"]},
             {"name": "x", "op": "mul", "inputs": ["silu", "up"]},
             {"name": "down", "op": "linear", "inputs": ["x", "w"]},
             {"name": "y", "op": "add", "inputs": ["r", "down"]}], ["y"])
    # A prologue through a transpose and a splat constant (gelu_tanh of the
    # transposed input, scaled), with a bias.
    put("own_prologue_transpose_linear_f32_2x40x96",
        [("a", "f32", [96, 2]), ("w", "f32", [40, 96]), ("b", "f32", [40])],
        [{"name": "t", "op": "transpose", "inputs": ["a"], "attrs": {"perm": [1, 0]}},
         {"name": "g", "op": "gelu_tanh", "inputs": ["t"]},
         {"name": "two", "op": "constant", "attrs": {"dtype": "f32", "shape": [], "value": 2.0}},
         {"name": "x", "op": "mul", "inputs": ["g", "two"]},
         {"name": "y", "op": "linear", "inputs": ["x", "w", "b"]}], ["y"])
    linear("lib", 64, 255, 17, "f32", ["relu"], bias=False)
    # NaN rows through a fused relu: the interpreter's relu keeps NaN, on
    # the generated kernel and on cuBLASLt's epilogue alike.
    for m in (2, 64):
        put(f"own_linear_nan_relu_f32_{m}x33x17",
            [("x", "f32", [m, 17]), ("w", "f32", [33, 17]), ("b", "f32", [33])],
            [{"name": "zero", "op": "constant", "attrs": {"dtype": "f32", "shape": [], "value": 0.0}},
             {"name": "nan", "op": "div", "inputs": ["zero", "zero"]},
             {"name": "nan_cut", "op": "constant", "attrs": {"dtype": "f32", "shape": [], "value": 2.5}},
             {"name": "big", "op": "gt", "inputs": ["x", "nan_cut"]},
             {"name": "xm", "op": "where", "inputs": ["big", "nan", "x"]},
             {"name": "fc", "op": "linear", "inputs": ["xm", "w", "b"]},
             {"name": "y", "op": "relu", "inputs": ["fc"]}], ["y"])
    linear("gen", 2, 17, 255, "bf16", ["gelu_tanh"], bias=False)
    def matmul(tag, a, b, dt, ta=False, tb=False, ops=(), suffix=""):
        m = a[-1] if ta else a[-2]
        n = b[-2] if tb else b[-1]
        batch = list(np.broadcast_shapes(tuple(a[:-2]), tuple(b[:-2])))
        nodes = [{"name": "mm", "op": "matmul", "inputs": ["a", "b"],
                  "attrs": {"transpose_a": ta, "transpose_b": tb}}]
        more, extra, out = chain(list(ops), "mm", n, dt)
        extra = [(nm, t, s if s is not None else batch + [m, n]) for nm, t, s in extra]
        put(f"own_matmul_{tag}_{dt}{suffix}", [("a", dt, a), ("b", dt, b)] + extra, nodes + more,
            [out])
    for dt in ("f32", "f16", "bf16"):
        matmul("2d", [64, 17], [17, 255], dt)
        matmul("batched", [3, 17, 64], [3, 64, 33], dt, ops=("bias", "relu"))
    matmul("ta", [17, 64], [17, 255], "f32", ta=True)
    matmul("tb", [64, 17], [255, 17], "f32", tb=True)
    matmul("tatb", [2, 255, 3], [2, 17, 255], "f32", ta=True, tb=True)
    matmul("tb_small", [2, 1000], [17, 1000], "f32", tb=True, ops=("bias", "gelu"))
    matmul("bcast_b", [4, 3, 64, 17], [17, 33], "f32")
    matmul("bcast_a", [64, 17], [5, 17, 33], "f32", ops=("residual",))
    matmul("bcast_mixed", [2, 1, 17, 3], [4, 3, 64], "f32")
    matmul("bcast_mixed", [2, 1, 17, 3], [4, 3, 64], "bf16")
    matmul("vector", [1, 1000], [1000, 1], "f32")
    # The tensor-core kernel (f16/bf16, one batch; the stage compiles the
    # cases named *_mmak with --mma-products): sizes off its 64-row blocks,
    # its 16-, 32- and 64-column tiles and its 64-wide k steps (k = 72,
    # 264: a last step of 8), both weight layouts, every epilogue; a weight
    # that is a parameter is requested before the wait for producers.
    for m, n, k in ((17, 40, 64), (64, 255, 264), (100, 1000, 72), (256, 64, 1024),
                    (130, 768, 768), (5, 4100, 40)):
        for dt in ("f16", "bf16"):
            linear("mma", m, n, k, dt, ["residual", "gelu"], suffix="_mmak")
        linear("mma", m, n, k, "bf16", ["relu"], suffix="_mmak")
        linear("mma", m, n, k, "f16", ["gelu_tanh"], bias=False, suffix="_mmak")
    matmul("nn_batch", [3, 40, 264], [264, 72], "bf16", ops=("bias", "gelu"), suffix="_mmak")
    matmul("nn_wide", [200, 64], [64, 1000], "f16", ops=("residual",), suffix="_mmak")
    for dt in ("f16", "bf16"):
        put(f"own_linear_param_{dt}_128x3072x768_mmak",
            [("x", dt, [128, 768]),
             {"name": "w", "dtype": dt, "shape": [3072, 768], "kind": "parameter",
              "init": {"dist": "uniform", "low": -0.04, "high": 0.04, "seed": 7}},
             ("b", dt, [3072])],
            [{"name": "fc", "op": "linear", "inputs": ["x", "w", "b"]},
             {"name": "y", "op": "gelu", "inputs": ["fc"]}], ["y"])
    # The tiled kernel (f32, one batch, at most 2^22 multiply-adds): every
    # transpose, sizes off the 32-grid of its tiles, each epilogue.
    for ta in (False, True):
        for tb in (False, True):
            a = [70, 33] if ta else [33, 70]
            b = [45, 70] if tb else [70, 45]
            tag = "tiled_" + ("t" if ta else "n") + ("t" if tb else "n")
            matmul(tag, a, b, "f32", ta=ta, tb=tb, ops=("bias", "gelu"))
    matmul("tiled_k1", [65, 1], [1, 31], "f32", ops=("residual", "relu"))
    # Enough 32-wide tiles to fill the SMs: 32-wide tiles (else 16-wide).
    matmul("tiled_wide_nn", [400, 20], [20, 370], "f32", ops=("bias",))
    matmul("tiled_wide_tt", [20, 400], [370, 20], "f32", ta=True, tb=True)
    linear("tiled", 100, 37, 129, "f32", ["residual", "gelu_tanh"])


