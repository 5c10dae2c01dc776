#!/usr/bin/env python3
"""Stages GPU op-test cases (needs no GPU; scripts/gpu-run.sh runs it on the
GPU machine, whose disk takes the inputs and weights the carried folder
would not).

Gathers the one-op golden cases (test/golden/gen_golden.py), a few cases of
its own at sizes that are multiples of no vector width (1000, 4097, 65537,
3x7x13; elementwise, reductions, softmax, layernorm, dropout), the matrix
products of own_cases.py's product_cases() (generated kernels and cuBLASLt, every epilogue,
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
Each golden conv case also runs written out (CASE_expanded: cgc
--expand-convolution), beside cuDNN's run of it. The own cases named
*_mmak are compiled with --mma-products (cgc's tensor-core product kernel,
which the cost rule gives no product).
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
    """A model file; lines starting with // (lit test comments) skipped."""
    with open(path) as f:
        return json.loads("".join(l for l in f if not l.lstrip().startswith("//")))


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
    source = {}  # a gathered value -> the input whose values it holds
    classes = {}  # a linear's result -> its output features
    for node in g.get("nodes", []):
        op, ins, attrs = node["op"], node.get("inputs", []), node.get("attrs", {})
        if op == "linear" and ins[1] in types:
            classes[node["name"]] = types[ins[1]]["shape"][0]
        if op == "gather" and ins and source.get(ins[0], ins[0]) in dom:
            source[node["name"]] = source.get(ins[0], ins[0])
        for k, name in enumerate(ins):
            name = source.get(name, name)
            if name not in dom:
                continue
            d = dom[name]
            if op in ("log", "sqrt", "rsqrt") or (op == "pow" and k == 0):
                d["positive"] = True
            elif op == "div" and k == 1:
                d["away"] = True
            elif op == "dropout" and k == 1:
                d["rng"] = True
            elif op == "gather" and k == 1 and ins[0] in types and name == ins[1]:
                shp = types[ins[0]]["shape"]
                d["bound"] = shp[attrs.get("axis", 0) % len(shp)]
            elif op == "embedding" and k == 1 and ins[0] in types:
                d["bound"] = types[ins[0]]["shape"][0]
            elif op == "one_hot":
                d["bound"] = attrs.get("num_classes", 1)
            elif op == "cross_entropy" and k == 1:
                # Unknown class counts take class 0, which every row has.
                d["bound"] = types[ins[0]]["shape"][1] if ins[0] in types else classes.get(ins[0], 1)
    return dom


def random_inputs(g, rng, dims, with_state=False):
    dom = domains(g)
    feed = {}
    for i in g["inputs"]:
        if i.get("kind") in ("parameter", "buffer", "rng_state", "optimizer_state") and \
                ("init" in i or "weight" in i) and not with_state:
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
        elif i.get("init", {}).get("dist") == "uniform":
            # State drawn from its own initializer's range: a training step
            # stacks products, whose f32 error grows with the magnitude of
            # their terms (the tolerance below assumes terms of order 1).
            v = rng.uniform(i["init"]["low"], i["init"]["high"], n)
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
    """The longest contraction of any matmul/linear/conv_weight_grad on
    graph inputs, or 0."""
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
            elif n["op"] == "conv_weight_grad" and ins[1]:  # over N and g's positions
                k = max(k, ins[1][0] * math.prod(ins[1][2:]))
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


from own_cases import own_cases  # noqa: E402  (the models; own_cases.py)


REPLAY_CASES = ("own_ew_f32_4097", "own_layernorm_f32_13x1000", "own_softmax_f32_7x4097_ax-1",
                # Control flow: new random inputs take both arms of each `if`.
                "cf_if_sum", "cf_if_input", "cf_if_compare", "cf_if_linear",
                "own_linear_gen_f32_1x255x1000_gelu_layernorm",
                "own_linear_gen_f32_3x1000x17_gelu_layernorm",
                "own_linear_lib_f32_255x1000x64_relu",
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


def read_safetensors(path):
    """{name: (dtype, shape, flat float64 values)} of an f32/i64 file."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        lo, hi = h["data_offsets"]
        dt = {"F32": "f32", "I64": "i64"}[h["dtype"]]
        out[name] = (dt, h["shape"], np.frombuffer(data[lo:hi], dtype=NP[dt]).astype(np.float64))
    return out


def stage_train_eval(args):
    """DIR/train_eval: examples/mlp_train_small.json compiled with --train
    (graphs train and eval over one state); in.safetensors (inputs and
    state), ref.eval (the forward pass with dropout off), ref.train (one
    step), in.after (the inputs with the trained parameters and advanced
    rng), ref.after (eval on those) and ref.train2 (a second step, its
    dropout masks at the advanced offset): eval, train, eval, train on one
    context must give ref.eval, ref.train, ref.after, ref.train2."""
    cdir = os.path.join(args.out, "train_eval")
    os.makedirs(cdir, exist_ok=True)
    src = os.path.join(ROOT, "examples/mlp_train_small.json")
    rc, msg = run([args.cgc, src, "--train", "-o", os.path.join(cdir, "model.cgc")])
    if rc != 0:
        return "cgc --train: " + msg[-600:]
    g = load(src)
    inp = os.path.join(cdir, "in.safetensors")
    # State from the model's initializers (the inputs hold x and target only).
    write_safetensors(inp, random_inputs(g, np.random.default_rng(11), {}))
    def interpret(inputs, ref, passes):
        return run([args.cgc_opt, src, "--interpret", "--inputs", inputs, "--outputs",
                    os.path.join(cdir, ref), "--overwrite", "--passes=" + passes])
    for ref, passes in (("ref.eval.safetensors", "eval-mode"),
                        ("ref.train.safetensors", "autodiff,apply-optimizer")):
        rc, msg = interpret(inp, ref, passes)
        if rc != 0:
            return "cgc-opt --interpret: " + msg[-600:]
    after = read_safetensors(inp)
    for name, t in read_safetensors(os.path.join(cdir, "ref.train.safetensors")).items():
        if name.endswith(".next"):
            after[name[:-5]] = t
    write_safetensors(os.path.join(cdir, "in.after.safetensors"), after)
    for ref, passes in (("ref.after.safetensors", "eval-mode"),
                        ("ref.train2.safetensors", "autodiff,apply-optimizer")):
        rc, msg = interpret(os.path.join(cdir, "in.after.safetensors"), ref, passes)
        if rc != 0:
            return "cgc-opt --interpret: " + msg[-600:]
    return None


# Padded artifacts (pad-dynamic-shapes: one graph per bucket, any size up
# to the largest): the sizes each is run at, every bucket edge, one past
# it, 1 and the largest bound.
PADDED_MODELS = {
    "dynamic_batch": ("examples/dynamic_batch.json",
                      [{"B": b} for b in (1, 5, 8, 9, 16, 17, 31, 32, 33, 63, 64)]),
    "masks": ("test/passes/pad-dynamic-shapes/masks.json",
              [{"B": b} for b in (1, 3, 4, 5, 11, 12, 13, 23, 24)]),
    # layernorm over a padded axis, written out as masked sums.
    "layernorm": ("test/passes/pad-dynamic-shapes/layernorm.json",
                  [{"B": b, "S": s} for b, s in ((1, 1), (2, 4), (3, 5), (4, 9), (6, 12))]),
    # A padded sequence at axis 1 of the inputs and outputs (packed by the
    # runtime), attention's softmax and its product over the sequence.
    "encoder_small": ("examples/encoder_small.json",
                      [{"B": b, "S": s} for b, s in ((1, 16), (3, 31), (4, 32), (5, 33),
                                                     (16, 64), (7, 65), (2, 100), (16, 128),
                                                     (17, 129), (40, 256), (9, 257),
                                                     (64, 512))]),
}


def size_tag(dims):
    """B1_S16: dims in name order (the manifest's)."""
    return "_".join(f"{k}{v}" for k, v in sorted(dims.items()))


def stage_padded(args):
    """DIR/padded/<model>.cgc (compiled padded), with in.<model>.<tag> and
    ref.<model>.<tag> (the interpreter on the unpadded model at that size,
    tag as size_tag) for each size of PADDED_MODELS, and sizes.txt lines
    "<model> <v,v..> <v,v..> ...", each size's dim values in name order."""
    cdir = os.path.join(args.out, "padded")
    os.makedirs(cdir, exist_ok=True)
    lines = []
    for name, (src, sizes) in PADDED_MODELS.items():
        g = load(os.path.join(ROOT, src))
        src = os.path.join(cdir, name + ".json")  # without lit's comments
        with open(src, "w") as f:
            json.dump(g, f)
        rc, msg = run([args.cgc, src, "-o", os.path.join(cdir, name + ".cgc")])
        if rc != 0:
            return "cgc (padded " + name + "): " + msg[-600:]
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        for dims in sizes:
            tag = size_tag(dims)
            inp = os.path.join(cdir, f"in.{name}.{tag}.safetensors")
            write_safetensors(inp, random_inputs(g, rng, dims))
            rc, msg = run([args.cgc_opt, src, "--interpret", "--inputs", inp, "--outputs",
                           os.path.join(cdir, f"ref.{name}.{tag}.safetensors"), "--overwrite"])
            if rc != 0:
                return "cgc-opt --interpret: " + msg[-600:]
        lines.append(name + " " + " ".join(
            ",".join(str(v) for _, v in sorted(d.items())) for d in sizes))
    with open(os.path.join(cdir, "sizes.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return None


# ------------------------------------------------------------------ main --
def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, (r.stderr + r.stdout).strip()


def stage_one(args, name, json_path, golden_in):
    cdir = os.path.join(args.out, name)
    os.makedirs(cdir, exist_ok=True)
    model = os.path.join(cdir, "model.cgc")
    grad = name.endswith("_grad")  # the model's gradients as outputs (autodiff)
    train = name.endswith("_train")  # a training step: autodiff and the optimizer
    rc, msg = run([args.cgc, json_path, "-o", model] + (["--no-fuse"] if name.endswith("_nofuse") else [])
                  + (["--expand-convolution"] if name.endswith("_expanded") else [])
                  + (["--mma-products"] if name.endswith("_mmak") else [])
                  + (["--gradients"] if grad else []) + (["--train"] if train else []))
    if rc != 0:
        shutil.rmtree(cdir, ignore_errors=True)
        if "the host would need" in msg:  # remove-sync-points refuses it by design
            reason = next((l for l in msg.splitlines() if "host would need" in l), msg)
            return ("unsupported", name, reason.split("error: ", 1)[-1][:200])
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
            # A training step updates its parameters: every run of the test
            # writes them back from the inputs, so they are staged there.
            write_safetensors(inp, random_inputs(g, rng, dims, with_state=train))
        ref = os.path.join(cdir, f"ref{suffix}.safetensors")
        rc, msg = run([args.cgc_opt, json_path, "--interpret", "--inputs", inp, "--outputs", ref,
                       "--overwrite"] + (["--pass=autodiff"] if grad else [])
                      + (["--passes=autodiff,apply-optimizer"] if train else []))
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
            if compute_nodes(g) > 1 or any(n["op"] == "conv" and len(n["inputs"]) == 3
                                           for n in g.get("nodes", [])):
                # A fused f16/bf16 chain keeps f32 intermediates where the
                # interpreter rounds after every op (and a conv's bias is
                # added after the conv's result is rounded, where the
                # interpreter rounds once): cancellation makes the
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
    ap.add_argument("--filter", default="",
                    help="stage the cases whose name holds one of these (comma-separated)")
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
        if c["name"].startswith("conv_"):  # cuDNN's; and written out, as cgc's own kernels
            todo.append((c["name"] + "_expanded", os.path.join(gold, c["name"] + ".json"),
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
    todo.append(("example_mlp_train_small_grad", os.path.join(ROOT, "examples/mlp_train_small.json"), None))
    todo.append(("example_mlp_train_small_train", os.path.join(ROOT, "examples/mlp_train_small.json"), None))
    # The same step with Adam, gradient accumulation and skipped steps.
    control = load(os.path.join(ROOT, "examples/mlp_train_small.json"))
    control["optimizer"] = {"kind": "adamw", "lr": 0.01, "weight_decay": 0.1,
                            "accumulate": 2, "skip_nonfinite": True}
    with open(os.path.join(own, "own_mlp_control_train.json"), "w") as f:
        json.dump(control, f)
    todo.append(("own_mlp_control_train", os.path.join(own, "own_mlp_control_train.json"), None))
    names = [t[0] for t in todo]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:  # One case's folder would overwrite the other's (and gtest aborts).
        sys.exit(f"stage_cases: cases named twice: {', '.join(twice)}")
    not_staged = []
    wanted = args.filter.split(",")  # any of these substrings
    todo = [t for t in todo if any(w in t[0] for w in wanted)
            and t[0] not in {n["name"] for n in not_staged}]
    with ThreadPoolExecutor(args.jobs) as ex:
        results = list(ex.map(lambda t: stage_one(args, *t), todo))
    cases = [r[2] for r in results if r[0] == "ok"]
    if not args.filter or args.filter in "multigraph":
        problem = stage_multigraph(args)
        if problem:
            results.append(("failure", "multigraph", problem))
    if not args.filter or args.filter in "padded":
        problem = stage_padded(args)
        if problem:
            results.append(("failure", "padded", problem))
    if not args.filter or args.filter in "train_eval":
        problem = stage_train_eval(args)
        if problem:
            results.append(("failure", "train_eval", problem))
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
