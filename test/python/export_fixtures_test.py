#!/usr/bin/env python3
"""cgc.export's lowering, checked without PyTorch: every fixture under
export-fixtures/ (make_export_fixtures.py, from export_models.py) is a
program record that cgc.torch.export.lower_record lowers to the IR; the
reference interpreter (`cgc-opt --interpret`) runs the IR on each stored
run's inputs, and every output must match PyTorch's (CPU) in dtype and
shape, and in value within rtol 1e-5 + atol 1e-5 for f32 and exactly for
any other dtype. The IR's dims must be the names of the module's
torch.export.Dim objects. A refusal fixture must be refused (RefusedError)
with its expected text (the source line included, for a refusal at an
op). The lowering must not
import torch. Prints one line per fixture; exit status 1 if any fails.

Usage: PYTHONPATH=python export_fixtures_test.py --cgc-opt PATH [--fixtures DIR] [--work DIR]
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

from cgc.errors import RefusedError
from cgc.safetensors import read_safetensors, write_safetensors
from cgc.torch.export import lower_record
from cgc.torch.record import tensor_inputs, tensor_outputs

HERE = os.path.dirname(os.path.abspath(__file__))
# (rtol, atol, whether atol scales with the output's largest magnitude)
# of floats; other dtypes compare exactly. f16: 4 units of its last place
# (2^-10) at the output's scale, for weights and sums rounded in another
# order than PyTorch's.
TOLERANCES = {np.dtype(np.float32): (1e-5, 1e-5, False),
              np.dtype(np.float16): (2.0 ** -8, 2.0 ** -8, True)}


def compare(got, want):
    """(problem or "", max abs diff) of an interpreter output against PyTorch's."""
    if got is None:
        return "missing", None
    if got.dtype != want.dtype or got.shape != want.shape:
        return f"got {got.dtype}{list(got.shape)}, want {want.dtype}{list(want.shape)}", None
    got64, want64 = got.astype(np.float64), want.astype(np.float64)
    diff = float(np.nanmax(np.abs(got64 - want64), initial=0))
    if want.dtype in TOLERANCES:
        rtol, atol, scaled = TOLERANCES[want.dtype]
        if scaled:
            atol *= max(1.0, float(np.nanmax(np.abs(want64), initial=0)))
        close = np.isclose(got64, want64, rtol=rtol, atol=atol, equal_nan=True)
        if not close.all():
            return (f"{int((~close).sum())} of {want.size} elements differ "
                    f"(max abs diff {diff:.3g})"), diff
    elif not np.array_equal(got, want):
        return f"values differ (max abs diff {diff:.3g})", diff
    return "", diff


def interpret(cgc_opt, ir_path, feed, folder, passes=()):
    """The interpreter's outputs of the IR at `ir_path` on `feed` (after
    `passes`, if any)."""
    inputs = os.path.join(folder, "in.safetensors")
    outputs = os.path.join(folder, "out.safetensors")
    write_safetensors(inputs, feed)
    first = ["--passes=" + ",".join(passes)] if passes else []
    r = subprocess.run([cgc_opt, ir_path, *first, "--interpret", "--inputs", inputs,
                        "--outputs", outputs, "--overwrite"],
                       capture_output=True, text=True, timeout=300)
    if r.returncode:
        raise RuntimeError(f"cgc-opt exit {r.returncode}: {r.stderr.strip()[-400:]}")
    return read_safetensors(outputs)


def check_buckets(record, weights, dims, cgc_opt, folder):
    """'' if lowering with buckets gives each dim its sorted buckets (max
    added), the padded graphs match the unpadded one on random sizes
    (cgc-opt's --check-equivalence of pad-dynamic-shapes), and bad buckets
    raise ValueError with their message."""
    path = os.path.join(folder, "bucketed.json")
    asked = {d["name"]: [d["min"] + (d["max"] - d["min"]) // 2, d["min"]] for d in dims}
    ir = lower_record(record, weights, path, buckets=asked)
    for d in ir["dims"]:
        want = sorted(set(asked[d["name"]]) | {d["max"]})
        if d.get("buckets") != want:
            return f"dim {d['name']}: buckets {d.get('buckets')}, expected {want}"
    r = subprocess.run([cgc_opt, path, "--pass=pad-dynamic-shapes", "--check-equivalence",
                        "--trials=4"], capture_output=True, text=True, timeout=300)
    if r.returncode or "check-equivalence: PASS" not in r.stdout:
        return f"bucketed: {(r.stdout + r.stderr).strip()[-400:]}"
    first = dims[0]
    for bad, message in (({"nothing": [1]}, "buckets for 'nothing': the export has no dim"),
                         ({first["name"]: [first["max"] + 1]}, "outside the dim's range"),
                         ({first["name"]: [1.5]}, "is not a list of integers"),
                         ({first["name"]: 8}, "is not a list of integers"),
                         ([8], "must be a dict")):
        try:
            lower_record(record, weights, path, buckets=bad)
            return f"buckets {bad} lowered; expected: {message}"
        except ValueError as e:
            if message not in str(e):
                return f"buckets {bad} raised: {e}; expected: {message}"
    return ""


def check(name, fixture, cgc_opt, work):
    """'' if the fixture passes, else what is wrong; and a summary."""
    with open(os.path.join(fixture, "program.json")) as f:
        record = json.load(f)
    with open(os.path.join(fixture, "expect.json")) as f:
        expect = json.load(f)
    weights_path = os.path.join(fixture, "weights.safetensors")
    weights = read_safetensors(weights_path) if os.path.exists(weights_path) else {}
    folder = os.path.join(work, name)
    os.makedirs(folder, exist_ok=True)
    ir_path = os.path.join(folder, "model.json")
    if "refusal" in expect:
        try:
            lower_record(record, weights, ir_path)
        except RefusedError as e:
            ok = expect["refusal"] in str(e)
            problem = "" if ok else f"refused with: {e}; expected: {expect['refusal']}"
            return problem, f"refused: {e}"
        return f"lowered; expected the refusal: {expect['refusal']}", ""
    ir = lower_record(record, weights, ir_path)
    dims = [d["name"] for d in ir.get("dims", [])]
    if dims != expect["dims"]:
        return f"the IR's dims are {dims}, expected {expect['dims']}", ""
    io = read_safetensors(os.path.join(fixture, "io.safetensors"))
    record_inputs, record_outputs = tensor_inputs(record), tensor_outputs(record)
    ir_inputs = [i["name"] for i in ir["inputs"] if i.get("kind", "user_input") == "user_input"]
    ir_outputs = [o if isinstance(o, str) else o["name"] for o in ir["outputs"]]
    if len(ir_inputs) != len(record_inputs) or len(ir_outputs) != len(record_outputs):
        return (f"the IR has {len(ir_inputs)} user inputs and {len(ir_outputs)} outputs, the "
                f"record {len(record_inputs)} and {len(record_outputs)}"), ""
    runs = sorted({key.split(".", 1)[0] for key in io})
    worst = 0.0
    for run in runs:
        feed = {ir_in: io[f"{run}.in.{rec_in}"] for ir_in, rec_in in zip(ir_inputs, record_inputs)}
        got = interpret(cgc_opt, ir_path, feed, folder)
        for ir_out, rec_out in zip(ir_outputs, record_outputs):
            problem, diff = compare(got.get(ir_out), io[f"{run}.out.{rec_out}"])
            if problem:
                return f"{run} output '{rec_out}': {problem}", ""
            worst = max(worst, diff)
    if dims:
        problem = check_buckets(record, weights, ir["dims"], cgc_opt, folder)
        if problem:
            return problem, ""
    shapes = "; ".join(f"{run} " + ", ".join(str(list(io[f"{run}.in.{rec_in}"].shape))
                                             for rec_in in record_inputs) for run in runs)
    return "", (f"{len(ir['nodes'])} IR nodes, {len(ir_outputs)} output(s) on {shapes}: "
                f"max abs diff {worst:.3g}{', dims ' + ', '.join(dims) if dims else ''}")


def check_bernoulli_draws(fixtures, cgc_opt, folder):
    """'' if the stochastic_mask fixture (x * bernoulli(0.8) / 0.8, refused
    outside training), lowered for training, draws its mask from the
    program's stream: on ones of 64 x 64, every output 0 or 1.25, about 80%
    of them 1.25 (a binomial's 5 standard deviations: 0.03), another mask
    from another seed; and in the eval graph (eval-mode: the draw its
    expectation) the output is x, as PyTorch's eval skips the draw."""
    with open(os.path.join(fixtures, "stochastic_mask", "program.json")) as f:
        record = json.load(f)
    ir_path = os.path.join(folder, "model.json")
    ir = lower_record(record, {}, ir_path, training=True)
    x = next(i["name"] for i in ir["inputs"] if i.get("kind", "user_input") == "user_input")
    rng = next(i["name"] for i in ir["inputs"] if i.get("kind") == "rng_state")
    out = ir["outputs"][0]
    out = out if isinstance(out, str) else out["name"]
    masks = []
    for seed in (0, 1):
        y = interpret(cgc_opt, ir_path, {x: np.ones((64, 64), np.float32),
                                         rng: np.array([seed, 0], np.int64)}, folder)[out]
        if not np.all((y == 0) | (y == np.float32(1.25))):
            return f"seed {seed}: values other than 0 and 1.25: {np.unique(y)[:5]}"
        kept = float(np.mean(y != 0))
        if abs(kept - 0.8) > 0.03:
            return f"seed {seed}: {kept:.3f} of the elements kept, expected about 0.8"
        masks.append(y != 0)
    if np.array_equal(*masks):
        return "the same mask from two seeds"
    ones = np.ones((64, 64), np.float32)
    y = interpret(cgc_opt, ir_path, {x: ones, rng: np.array([0, 0], np.int64)}, folder,
                  passes=("eval-mode",))[out]
    return "" if np.array_equal(y, ones) else f"the eval graph scales x: {np.unique(y)[:5]}"


def check_unmapped_listed(fixtures):
    """'' if a record with several unmapped calls is refused naming each
    (with its node count and first node) in one message: the
    encoder_layer fixture with its first two distinct ATen ops renamed."""
    with open(os.path.join(fixtures, "encoder_layer", "program.json")) as f:
        record = json.load(f)
    calls = [n for n in record["nodes"] if n["op"] == "call_function"
             and n["target"].startswith("aten.")]
    first, second = calls[0]["target"], next(n["target"] for n in calls if n["target"] != calls[0]["target"])
    renamed = {first: "aten.no_such_op.default", second: "aten.nor_this.Tensor"}
    uses = sum(n["target"] == first for n in calls)
    for n in calls:
        n["target"] = renamed.get(n["target"], n["target"])
    try:
        lower_record(record, {}, os.devnull)
    except RefusedError as e:
        text = str(e)
        want = [f"the ATen op no_such_op.default: {uses} node", "the ATen op nor_this.Tensor",
                "2 calls of the program have no cgc mapping"]
        missing = [w for w in want if w not in text]
        return f"refused with: {text}; missing: {missing}" if missing else ""
    return "lowered a record with unmapped calls"


def check_slice_past_max(fixtures):
    """'' if a slice to a dynamic size that would read past its static dim
    at the size's max is refused, saying so: hf_bert_dynamic (positions
    sliced to `seq` from a buffer of 64) with `seq` allowed up to 100."""
    with open(os.path.join(fixtures, "hf_bert_dynamic", "program.json")) as f:
        record = json.load(f)
    weights = read_safetensors(os.path.join(fixtures, "hf_bert_dynamic", "weights.safetensors"))
    record["range_constraints"]["seq"]["max"] = 100
    try:
        lower_record(record, weights, os.devnull)
    except RefusedError as e:
        want = "at the max of seq (100): give seq a max the dim holds"
        return "" if want in str(e) else f"refused with: {e}; expected: {want}"
    return "lowered a slice reading past its dim at the size's max"


def check_channels_last(fixtures, cgc_opt, folder):
    """'' if a record input marked channels last (as capture.py marks one
    whose example is held so) is declared [N, H, W, C] and read through
    one transpose, computes conv_net's outputs from its inputs held so, and
    in f16 (std_conv_f16) leaves no transpose between it and its
    convolution once the layout pass has run."""
    def marked(name):
        with open(os.path.join(fixtures, name, "program.json")) as f:
            record = json.load(f)
        for i in record["inputs"]:
            if i["kind"] == "user_input":
                i["layout"] = "channels_last"
        return record, read_safetensors(os.path.join(fixtures, name, "weights.safetensors"))

    record, weights = marked("conv_net")
    path = os.path.join(folder, "conv_net.json")
    ir = lower_record(record, weights, path)
    x = next(i for i in ir["inputs"] if i.get("kind", "user_input") == "user_input")
    io = read_safetensors(os.path.join(fixtures, "conv_net", "io.safetensors"))
    (rec_in,), (rec_out,) = tensor_inputs(record), tensor_outputs(record)
    want_shape = list(io[f"run0.in.{rec_in}"].shape)
    if x["shape"] != [want_shape[0], *want_shape[2:], want_shape[1]]:
        return f"the input is declared {x['shape']}, expected channels last of {want_shape}"
    if [n["op"] for n in ir["nodes"] if x["name"] in n["inputs"]] != ["transpose"]:
        return "the input is not read through one transpose"
    out = ir["outputs"][0]
    got = interpret(cgc_opt, path, {x["name"]: np.ascontiguousarray(
        io[f"run0.in.{rec_in}"].transpose(0, 2, 3, 1))}, folder)
    problem, _ = compare(got.get(out if isinstance(out, str) else out["name"]),
                         io[f"run0.out.{rec_out}"])
    if problem:
        return f"conv_net held channels last: {problem}"
    record, weights = marked("std_conv_f16")
    path = os.path.join(folder, "std_conv_f16.json")
    lower_record(record, weights, path)
    r = subprocess.run([cgc_opt, path, "--passes=layout,shape-infer,canonicalize,cse,dce"],
                       capture_output=True, text=True, timeout=300)
    convs = [line for line in r.stdout.splitlines() if " = conv " in line]
    if r.returncode or len(convs) != 1 or "channels_last = true" not in convs[0] or \
            not convs[0].split(" = conv ")[1].startswith("%x,"):
        return f"std_conv_f16's conv does not read the input as held: {convs or r.stderr[-300:]}"
    return ""


def merged_view_record(order):
    """A record as torch.export writes GPT-2's Conv1D over a dynamic batch
    and sequence: x [batch, seq, 4] viewed as [batch*seq, 4], addmm'd with
    a [4, 3] weight and bias, viewed back to [batch, seq, 3]. `order` is
    the source's leading dims (["seq", "batch"]: merged the other way)."""
    def node(name, target, args, shape, op="call_function"):
        return {"op": op, "name": name, "target": target, "args": args, "kwargs": {},
                "val": {"dtype": "torch.float32", "shape": shape}, "source": None}
    return {"record_version": 1, "module": "Conv1D",
            "inputs": [{"name": "w", "kind": "parameter", "target": "w"},
                       {"name": "b", "kind": "parameter", "target": "b"},
                       {"name": "x", "kind": "user_input", "target": None}],
            "outputs": [{"name": "out", "kind": "user_output"}],
            "range_constraints": {"batch": {"min": 1, "max": 8}, "seq": {"min": 1, "max": 16}},
            "nodes": [node("w", "w", [], [4, 3], "placeholder"),
                      node("b", "b", [], [3], "placeholder"),
                      node("x", "x", [], order + [4], "placeholder"),
                      node("flat", "aten.view.default", [{"node": "x"}, [-1, 4]],
                           ["batch*seq", 4]),
                      node("mm", "aten.addmm.default",
                           [{"node": "b"}, {"node": "flat"}, {"node": "w"}], ["batch*seq", 3]),
                      node("act", "aten.gelu.default", [{"node": "mm"}], ["batch*seq", 3]),
                      node("out", "aten.view.default", [{"node": "act"}, order + [3]],
                           order + [3]),
                      {"op": "output", "name": "output", "target": "output",
                       "args": [[{"node": "out"}]], "kwargs": {}, "val": None, "source": None}]}


def check_merged_view(cgc_opt, folder):
    """'' if a view merging dynamic dims lowers kept unmerged and matches
    NumPy at two sizes, whichever order the source's dims have."""
    rng = np.random.default_rng(3)
    weights = {"w": rng.standard_normal((4, 3)).astype(np.float32),
               "b": rng.standard_normal(3).astype(np.float32)}
    path = os.path.join(folder, "merged.json")
    for order in (["batch", "seq"], ["seq", "batch"]):
        lower_record(merged_view_record(order), weights, path)
        for shape in ((2, 5, 4), (7, 8, 4)):
            x = rng.standard_normal(shape).astype(np.float32)
            got = interpret(cgc_opt, path, {"x": x}, folder)["out"]
            pre = x.astype(np.float64) @ weights["w"] + weights["b"]
            want = 0.5 * pre * (1 + np.vectorize(math.erf)(pre / math.sqrt(2)))
            if got.shape != want.shape or not np.allclose(got, want, rtol=1e-5, atol=1e-5):
                return f"order {order}, x {shape}: got {got.shape}, max diff " \
                       f"{np.abs(got - want).max() if got.shape == want.shape else '-'}"
    record = merged_view_record(["batch", "seq"])
    record["nodes"][5]["target"] = "aten._softmax.default"
    record["nodes"][5]["args"] = [{"node": "mm"}, 0, False]
    try:
        lower_record(record, weights, path)
        return "a softmax over a merged view was lowered"
    except RefusedError as e:
        if "on a view merging dims into batch*seq" not in str(e):
            return f"softmax over a merged view refused with: {e}"
def check_declared_types(fixtures, cgc_opt, work):
    """'' if the record's result types are checked, not trusted
    (docs/python.md): in encoder_layer, a linear recorded as float16
    lowers to a node declaring f16 that cgc-opt refuses at the node with
    its source line; a clone and a getitem recorded with another shape
    than the value they forward are refused by the lowering."""
    with open(os.path.join(fixtures, "encoder_layer", "program.json")) as f:
        record = json.load(f)
    weights = read_safetensors(os.path.join(fixtures, "encoder_layer", "weights.safetensors"))
    def edited(name, field, value):
        copy = json.loads(json.dumps(record))
        node = next(n for n in copy["nodes"] if n["name"] == name)
        node["val"][field] = value
        return copy
    path = os.path.join(work, "declared.json")
    ir = lower_record(edited("linear_1", "dtype", "torch.float16"), weights, path)
    node = next(n for n in ir["nodes"] if n["name"] == "linear_1")
    if node.get("type") != {"dtype": "f16", "shape": [2, 8, 16]}:
        return f"linear_1 declares {node.get('type')}"
    run = subprocess.run([cgc_opt, path], capture_output=True, text=True)
    want = ["error: node 'linear_1' (linear): declared f16[2,8,16] but computes f32[2,8,16]",
            "note: node 'linear_1' comes from export_models.py:42"]
    if run.returncode != 1 or any(w not in run.stderr for w in want):
        return f"cgc-opt exited {run.returncode}: {run.stderr[-300:]}"
    for name, shape in (("clone", [2, 4, 8, 9]), ("getitem_1", [2, 8, 17])):
        try:
            lower_record(edited(name, "shape", shape), weights, os.devnull)
            return f"lowered a {name} recorded as {shape}"
        except RefusedError as e:
            if f"node '{name}' (" not in str(e) or "recorded as" not in str(e):
                return f"{name}: refused with {e}"
    return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cgc-opt", required=True)
    ap.add_argument("--fixtures", default=os.path.join(HERE, "export-fixtures"))
    ap.add_argument("--work", help="keep the IR and the interpreter's files here")
    args = ap.parse_args()
    names = sorted(os.listdir(args.fixtures))
    if not names:
        print(f"FAIL: no fixtures in {args.fixtures}")
        return 1
    failed = 0
    with tempfile.TemporaryDirectory(prefix="cgc-export-fixtures-") as scratch:
        for name in names:
            try:
                problem, summary = check(name, os.path.join(args.fixtures, name), args.cgc_opt,
                                         args.work or scratch)
            except Exception as e:  # noqa: BLE001 - reported per fixture
                problem = f"{type(e).__name__}: {e}"
            print(f"FAIL {name}: {problem}" if problem else f"OK {name}: {summary}")
            failed += bool(problem)
    print(f"{len(names) - failed} of {len(names)} fixtures passed")
    with tempfile.TemporaryDirectory(prefix="cgc-merged-") as folder:
        problem = check_merged_view(args.cgc_opt, folder)
    print(f"FAIL merged view: {problem}" if problem else
          "OK merged view: kept unmerged, matches NumPy; other ops on it refused")
    failed += bool(problem)
    with tempfile.TemporaryDirectory(prefix="cgc-bernoulli-") as scratch:
        problem = check_bernoulli_draws(args.fixtures, args.cgc_opt, scratch)
    print(f"FAIL bernoulli draws: {problem}" if problem else
          "OK bernoulli draws: for training, a mask of cgc's stream kept at its probability")
    failed += bool(problem)
    problem = check_unmapped_listed(args.fixtures)
    print(f"FAIL unmapped calls: {problem}" if problem else
          "OK unmapped calls: every one named in one refusal")
    failed += bool(problem)
    problem = check_slice_past_max(args.fixtures)
    print(f"FAIL slice past max: {problem}" if problem else
          "OK slice past max: a slice to a dynamic size past its dim refused")
    failed += bool(problem)
    with tempfile.TemporaryDirectory(prefix="cgc-channels-last-") as scratch:
        problem = check_channels_last(args.fixtures, args.cgc_opt, scratch)
    print(f"FAIL channels last: {problem}" if problem else
          "OK channels last: an input held [N, H, W, C], read in place by an f16 conv")
    failed += bool(problem)
    with tempfile.TemporaryDirectory(prefix="cgc-export-declared-") as scratch:
        problem = check_declared_types(args.fixtures, args.cgc_opt, scratch)
    print(f"FAIL declared types: {problem}" if problem else
          "OK declared types: checked by cgc, identities by the lowering")
    failed += bool(problem)
    if "torch" in sys.modules:
        print("FAIL: the lowering imported torch")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
