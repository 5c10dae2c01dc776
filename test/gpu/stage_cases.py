#!/usr/bin/env python3
"""Stages GPU op-test cases (needs no GPU; scripts/gpu-run.sh runs it on the
GPU machine, whose disk takes the inputs and weights the carried folder
would not).

Gathers the one-op golden cases (test/golden/gen_golden.py), a few cases of
its own at sizes that are multiples of no vector width (1000, 4097, 65537,
3x7x13; elementwise, reductions, softmax, layernorm, dropout), the matrix
products of product_cases() (generated kernels and cuBLASLt, every epilogue,
an input layernorm, batched, broadcast, transposed, f32/f16/bf16), every
examples/*.json, the control-flow cases of test/gpu/Inputs/*.json and
test/codegen/Inputs/all_ops.json. For each case:

  cgc CASE.json -o DIR/CASE/model.cgc        (compile)
  DIR/CASE/in.safetensors                    (golden inputs, or random ones)
  cgc-opt CASE.json --interpret ...          -> DIR/CASE/ref.safetensors

Cases that cgc refuses with "... not supported ... yet" (codegen, or
remove-sync-points for a data-dependent shape it cannot fix yet) are listed
as unsupported and skipped; any other compile (or interpreter) failure is a
test failure: it is listed under "compile_failures" in DIR/cases.json (the
GPU test StagedCases.NoCompileFailures fails on it) and this script exits 1.

Tolerance per output, |got - ref| <= atol + rtol*|ref| (NaN where NaN, equal
infinities):
  f32: rtol 1e-5, atol 1e-5 when every op of the graph is plain elementwise
       arithmetic; rtol 1e-4, atol 1e-4 when the graph holds a
       transcendental, a reduction or a normalization (GPU libm and
       reduction order differ from the interpreter's); with a matmul or
       linear of contraction length K, atol at least 1.5e-6 * K (inputs in
       [-3, 3]: the f32 sum of K products errs like eps * K * 9)
  f16: rtol 1e-2, atol 1e-2      bf16: rtol 2e-2, atol 2e-2
  i32/i64/bool: exact
  outputs of dropout: mode "dropout": the zero pattern must match exactly,
       the kept values with the tolerance above.
examples/dynamic_rows.json is also compiled with --bind-dim B=8,16,64 into
DIR/multigraph/ with inputs and references per batch size.
Some cases also get N extra input/reference sets (in.K/ref.K.safetensors) for
the replay test (20 replays with new inputs, fresh outputs each time).

Usage: stage_cases.py --cgc BIN --cgc-opt BIN --out DIR [--filter S]
                      [--replays 20] [--jobs N]
"""
import argparse, json, math, zlib, os, shutil, struct, subprocess, sys, tempfile
from concurrent.futures import ThreadPoolExecutor
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

NP = {"f32": "<f4", "f16": "<f2", "i32": "<i4", "i64": "<i8", "bool": "u1"}
ST = {"f32": "F32", "f16": "F16", "bf16": "BF16", "i32": "I32", "i64": "I64", "bool": "BOOL"}

PLAIN = {"add", "sub", "mul", "div", "neg", "abs", "relu", "maximum", "minimum", "where", "cast",
         "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not",
         "constant", "fill", "iota", "reshape", "transpose", "broadcast_to", "concat", "slice",
         "gather", "embedding", "one_hot", "dropout"}
TOL = {"f16": (1e-2, 1e-2), "bf16": (2e-2, 2e-2)}


# ------------------------------------------------------------ safetensors --
def to_bytes(dtype, arr):
    a = np.asarray(arr, dtype=np.float64)
    if dtype == "bf16":
        f = a.astype(np.float32)
        bits = f.view(np.uint32).astype(np.uint64)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16   # round to nearest even
        return bits.astype("<u2").tobytes()
    if dtype in ("i32", "i64"):
        return a.astype(NP[dtype]).tobytes()
    if dtype == "bool":
        return (a != 0).astype("u1").tobytes()
    return a.astype(NP[dtype]).tobytes()


def write_safetensors(path, tensors):
    """tensors: {name: (dtype, shape, array)}."""
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        dt, shape, arr = tensors[name]
        b = to_bytes(dt, np.reshape(arr, shape) if arr is not None else np.zeros(shape))
        header[name] = {"dtype": ST[dt], "shape": list(shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


# ------------------------------------------------------------- the model --
def load(path):
    with open(path) as f:
        return json.load(f)


def out_names(g):
    return [o if isinstance(o, str) else o["name"] for o in g["outputs"]]


def out_values(g):
    return {(o if isinstance(o, str) else o["name"]): (o if isinstance(o, str) else o["value"])
            for o in g["outputs"]}


def resolve_shape(shape, dims):
    return [d if isinstance(d, int) else dims[d] for d in shape]


def domains(g):
    """Per input: what its direct consumers need (like RandomInputs.cpp)."""
    types = {i["name"]: i for i in g["inputs"]}
    dom = {n: {} for n in types}
    for node in g.get("nodes", []):
        op, ins, attrs = node["op"], node.get("inputs", []), node.get("attrs", {})
        for k, name in enumerate(ins):
            if name not in dom:
                continue
            d = dom[name]
            if op in ("log", "sqrt", "rsqrt") or (op == "pow" and k == 0):
                d["positive"] = True
            elif op == "div" and k == 1:
                d["away"] = True
            elif op == "dropout" and k == 1:
                d["rng"] = True
            elif op == "gather" and k == 1 and ins[0] in types:
                shp = types[ins[0]]["shape"]
                d["bound"] = shp[attrs.get("axis", 0) % len(shp)]
            elif op == "embedding" and k == 1 and ins[0] in types:
                d["bound"] = types[ins[0]]["shape"][0]
            elif op == "one_hot":
                d["bound"] = attrs.get("num_classes", 1)
            elif op == "cross_entropy" and k == 1 and ins[0] in types:
                d["bound"] = types[ins[0]]["shape"][1]
    return dom


def random_inputs(g, rng, dims):
    dom = domains(g)
    feed = {}
    for i in g["inputs"]:
        if i.get("kind") in ("parameter", "buffer", "rng_state", "optimizer_state") and \
                ("init" in i or "weight" in i):
            continue
        dt, shape, d = i["dtype"], resolve_shape(i["shape"], dims), dom[i["name"]]
        n = int(np.prod(shape)) if shape else 1
        if d.get("rng"):
            v = rng.integers(0, 1 << 20, n)
        elif dt == "bool":
            v = rng.integers(0, 2, n)
        elif "bound" in d:
            v = rng.integers(0, max(int(d["bound"]), 1), n)
        elif dt in ("i32", "i64"):
            v = rng.integers(-50, 51, n)
        elif d.get("positive"):
            v = rng.uniform(0.1, 3.0, n)
        else:
            v = rng.uniform(-3.0, 3.0, n)
            if d.get("away"):
                v = np.where(np.abs(v) < 0.25, 0.5, v)
        feed[i["name"]] = (dt, shape, v)
    return feed


def tolerances(g):
    ops = {n["op"] for n in g.get("nodes", [])}
    plain = ops <= PLAIN
    vals = out_values(g)
    producer = {n["name"]: n["op"] for n in g.get("nodes", [])}
    dtypes = {i["name"]: i["dtype"] for i in g["inputs"]}
    return plain, {name: producer.get(vals[name]) for name in vals}, dtypes


def contraction_k(g):
    """The longest contraction of any matmul/linear on graph inputs, or 0."""
    shapes = {i["name"]: i["shape"] for i in g["inputs"]}
    k = 0
    def walk(nodes):
        nonlocal k
        for n in nodes:
            ins = [shapes.get(v) for v in n.get("inputs", [])]
            if n["op"] == "linear" and ins[1]:
                k = max(k, ins[1][-1])
            elif n["op"] == "matmul" and ins[0]:
                ta = n.get("attrs", {}).get("transpose_a", False)
                k = max(k, ins[0][-2] if ta else ins[0][-1])
            for r in n.get("regions", {}).values():
                walk(r.get("nodes", []))
    walk(g.get("nodes", []))
    return k


def compute_nodes(g):
    return sum(1 for n in g.get("nodes", []) if n["op"] not in ("constant", "fill", "iota", "reshape"))


def max_abs(path, name):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    h = json.loads(data[8:8 + n])[name]
    b = data[8 + n + h["data_offsets"][0]:8 + n + h["data_offsets"][1]]
    if h["dtype"] == "BF16":
        v = (np.frombuffer(b, "<u2").astype(np.uint32) << np.uint32(16)).view(np.float32)
    else:
        v = np.frombuffer(b, "<f2").astype(np.float32)
    v = v[np.isfinite(v)]
    return float(np.abs(v).max()) if v.size else 0.0


# ------------------------------------------------------------- own cases --
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
    product_cases(put)
    row_cases(put)
    fused_row_cases(put)
    # Reductions in two phases (few long rows; passes/ReductionRule.h):
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
    for dt in ("i32", "i64"):
        put(f"own_rows_absmax_{dt}_77x100", [("k", dt, [77, 100])],
            [{"name": "a", "op": "abs", "inputs": ["k"]},
             {"name": "mx", "op": "max", "inputs": ["a"], "attrs": {"axes": [1]}},
             const("one", dt, 1),
             {"name": "o", "op": "add", "inputs": ["mx", "one"]}], ["o"])


ROW_LENGTHS = (1, 2, 3, 31, 32, 33, 127, 1000, 4097, 30522, 65537)


def row_cases(put):
    """Every shape class of passes/ReductionRule.h: rows of each length in
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
    generated kernels (M <= 16) and cuBLASLt (larger), every epilogue,
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

    def linear(tag, m, n, k, dt, ops, lead=(), bias=True):
        xs = list(lead) + [m]
        nodes = [{"name": "fc", "op": "linear", "inputs": ["x", "w"] + (["b"] if bias else [])}]
        more, extra, out = chain(ops, "fc", n, dt)
        extra = [(nm, t, s if s is not None else xs + [n]) for nm, t, s in extra]
        put(f"own_linear_{tag}_{dt}_{'x'.join(map(str, xs))}x{n}x{k}_{'_'.join(ops) or 'plain'}"
            + ("" if bias else "_nobias"),
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
    def matmul(tag, a, b, dt, ta=False, tb=False, ops=()):
        m = a[-1] if ta else a[-2]
        n = b[-2] if tb else b[-1]
        batch = list(np.broadcast_shapes(tuple(a[:-2]), tuple(b[:-2])))
        nodes = [{"name": "mm", "op": "matmul", "inputs": ["a", "b"],
                  "attrs": {"transpose_a": ta, "transpose_b": tb}}]
        more, extra, out = chain(list(ops), "mm", n, dt)
        extra = [(nm, t, s if s is not None else batch + [m, n]) for nm, t, s in extra]
        put(f"own_matmul_{tag}_{dt}", [("a", dt, a), ("b", dt, b)] + extra, nodes + more, [out])
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


REPLAY_CASES = ("own_ew_f32_4097", "own_layernorm_f32_13x1000", "own_softmax_f32_7x4097_ax-1",
                # Control flow: new random inputs take both arms of each `if`.
                "cf_if_sum", "cf_if_input", "cf_if_compare", "cf_if_linear",
                "own_linear_gen_f32_1x255x1000_gelu_layernorm",
                "own_linear_gen_f32_3x1000x17_gelu_layernorm",
                "own_linear_lib_f32_64x255x17_relu",
                # The soak test (StagedCases.SoakReplays) cycles these sets.
                "example_mlp8_infer_b1")

# examples/dynamic_rows.json compiled into one graph per batch size; the GPU
# test StagedCases.MultiGraphAnyOrder runs them in mixed order.
MULTIGRAPH_SIZES = (8, 16, 64)


def stage_multigraph(args):
    cdir = os.path.join(args.out, "multigraph")
    os.makedirs(cdir, exist_ok=True)
    src = os.path.join(ROOT, "examples/dynamic_rows.json")
    bind = "B=" + ",".join(map(str, MULTIGRAPH_SIZES))
    rc, msg = run([args.cgc, src, "--bind-dim", bind, "-o", os.path.join(cdir, "model.cgc")])
    if rc != 0:
        return "cgc --bind-dim: " + msg[-600:]
    g = load(src)
    rng = np.random.default_rng(7)
    for b in MULTIGRAPH_SIZES:
        inp = os.path.join(cdir, f"in.B{b}.safetensors")
        write_safetensors(inp, random_inputs(g, rng, {"B": b}))
        rc, msg = run([args.cgc_opt, src, "--interpret", "--inputs", inp, "--outputs",
                       os.path.join(cdir, f"ref.B{b}.safetensors"), "--overwrite"])
        if rc != 0:
            return "cgc-opt --interpret: " + msg[-600:]
    return None


# ------------------------------------------------------------------ main --
def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, (r.stderr + r.stdout).strip()


def stage_one(args, name, json_path, golden_in):
    cdir = os.path.join(args.out, name)
    os.makedirs(cdir, exist_ok=True)
    model = os.path.join(cdir, "model.cgc")
    rc, msg = run([args.cgc, json_path, "-o", model] + (["--no-fuse"] if name.endswith("_nofuse") else []))
    if rc != 0:
        shutil.rmtree(cdir, ignore_errors=True)
        if "not supported" in msg and "yet" in msg:
            reason = next((l for l in msg.splitlines() if "not supported" in l), msg)
            return ("unsupported", name, reason.split("error: ", 1)[-1][:200])
        return ("failure", name, "cgc: " + msg[-600:])
    g = load(json_path)
    dims = {d["name"]: d["max"] for d in g.get("dims", [])}
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    sets = 1 + (args.replays if name in REPLAY_CASES else 0)
    for k in range(sets):
        suffix = "" if k == 0 else f".{k}"
        inp = os.path.join(cdir, f"in{suffix}.safetensors")
        if k == 0 and golden_in:
            shutil.copy(golden_in, inp)
        else:
            write_safetensors(inp, random_inputs(g, rng, dims))
        ref = os.path.join(cdir, f"ref{suffix}.safetensors")
        rc, msg = run([args.cgc_opt, json_path, "--interpret", "--inputs", inp, "--outputs", ref,
                       "--overwrite"])
        if rc != 0:
            shutil.rmtree(cdir, ignore_errors=True)
            return ("failure", name, "cgc-opt --interpret: " + msg[-600:])
    shutil.copy(json_path, os.path.join(cdir, "model.json"))
    plain, producers, _ = tolerances(g)
    outs = {}
    # dtypes of outputs come from the reference file itself
    with open(os.path.join(cdir, "ref.safetensors"), "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    for oname, h in header.items():
        if oname == "__metadata__":
            continue
        dt = h["dtype"].lower()
        if dt in ("i32", "i64", "bool"):
            rtol = atol = 0.0
        elif dt in TOL:
            rtol, atol = TOL[dt]
            if compute_nodes(g) > 1:
                # A fused f16/bf16 chain keeps f32 intermediates where the
                # interpreter rounds after every op: cancellation makes the
                # difference relative to the magnitudes involved, so atol
                # scales with max |ref| of this output.
                atol *= max(1.0, max_abs(os.path.join(cdir, "ref.safetensors"), oname))
        else:
            rtol = atol = 1e-5 if plain else 1e-4
            # A product sums K terms in another order than the interpreter
            # (double): the f32 error grows like eps * K * |terms|.
            atol = max(atol, 1.5e-6 * contraction_k(g))
        mode = "dropout" if producers.get(oname) == "dropout" else ("exact" if rtol == 0 else "close")
        outs[oname] = {"dtype": dt, "rtol": rtol, "atol": atol, "mode": mode}
    return ("ok", name, {"name": name, "outputs": outs, "replays": sets - 1})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cgc", required=True)
    ap.add_argument("--cgc-opt", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--filter", default="")
    ap.add_argument("--replays", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(args.out)
    work = tempfile.mkdtemp(prefix="cgc-stage-")
    gold = os.path.join(work, "golden")
    subprocess.run([sys.executable, os.path.join(ROOT, "test/golden/gen_golden.py"), gold],
                   check=True, stdout=subprocess.DEVNULL)
    todo = []
    for c in load(os.path.join(gold, "cases.json")):
        todo.append((c["name"], os.path.join(gold, c["name"] + ".json"),
                     os.path.join(gold, c["name"] + ".in.safetensors")))
    own = os.path.join(work, "own")
    os.makedirs(own)
    todo += own_cases(own)
    for f in sorted(os.listdir(os.path.join(ROOT, "examples"))):
        if f.endswith(".json"):
            todo.append(("example_" + f[:-5], os.path.join(ROOT, "examples", f), None))
    cases_dir = os.path.join(ROOT, "test/gpu/Inputs")
    for f in sorted(os.listdir(cases_dir)):
        if f.endswith(".json"):
            todo.append((f[:-5], os.path.join(cases_dir, f), None))
    todo.append(("all_ops", os.path.join(ROOT, "test/codegen/Inputs/all_ops.json"), None))
    todo.append(("example_chain100_nofuse", os.path.join(ROOT, "examples/chain100.json"), None))
    not_staged = []
    todo = [t for t in todo if args.filter in t[0] and t[0] not in {n["name"] for n in not_staged}]
    with ThreadPoolExecutor(args.jobs) as ex:
        results = list(ex.map(lambda t: stage_one(args, *t), todo))
    cases = [r[2] for r in results if r[0] == "ok"]
    if not args.filter or args.filter in "multigraph":
        problem = stage_multigraph(args)
        if problem:
            results.append(("failure", "multigraph", problem))
    unsupported = [{"name": r[1], "reason": r[2]} for r in results if r[0] == "unsupported"]
    failures = [{"name": r[1], "error": r[2]} for r in results if r[0] == "failure"]
    with open(os.path.join(args.out, "cases.json"), "w") as f:
        json.dump({"cases": cases, "unsupported": unsupported, "compile_failures": failures,
                   "not_staged": not_staged},
                  f, indent=1)
    # The same list in a line format for the C++ test (no JSON parser there):
    #   case NAME REPLAYS / out NAME DTYPE MODE RTOL ATOL / compile_failure NAME
    with open(os.path.join(args.out, "cases.txt"), "w") as f:
        for c in cases:
            f.write(f"case {c['name']} {c['replays']}\n")
            for o, t in sorted(c["outputs"].items()):
                f.write(f"out {o} {t['dtype']} {t['mode']} {t['rtol']!r} {t['atol']!r}\n")
        for x in failures:
            f.write(f"compile_failure {x['name']}\n")
    shutil.rmtree(work, ignore_errors=True)
    for u in unsupported:
        print(f"not supported yet: {u['name']}: {u['reason']}")
    for x in failures:
        print(f"FAIL {x['name']}: {x['error']}")
    print(f"stage_cases: {len(cases)} staged, {len(unsupported)} not supported yet, "
          f"{len(failures)} compile failures -> {args.out}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
