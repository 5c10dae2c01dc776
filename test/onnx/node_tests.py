#!/usr/bin/env python3
"""ONNX's backend node tests through cgc: each small model is imported
(python/cgc), run by the reference interpreter (`cgc-opt --interpret`) on
the test's inputs, and its outputs compared with the test's expected ones.

Usage: node_tests.py --cgc-opt PATH [--data DIR] [--jobs N] [--report MD]
                     [--min-passed N] [--filter TEXT] [--keep DIR] [--stage DIR]

--stage copies every passed case (IR, inputs, expected outputs) for
test/onnx/gpu_node_tests.py, which compiles and runs them on the GPU.

Outcomes: passed; refused (by the importer, naming the operator, dtype or
operand it cannot express, or by cgc's verifier or interpreter with a
located error); folded (an output does not depend on any input the test
gives at run time: the importer computed it, so the test says nothing
about cgc); wrong (an output differs beyond rtol 1e-3 + atol 1e-5 for
f32, 1e-2 for f16, exactly for integers and bools, or has another shape
or dtype; or cgc-opt crashed). Operands that decide shapes (a Reshape's
shape, a Slice's starts, ...) are graph inputs in many node tests; when an
import is refused for one, the test is imported again with its integer
inputs as constants, and with each float input a refusal names as one
that must be known (Resize's scales) (counted apart). Exit status 1 if any test is wrong or
fewer than --min-passed pass; 77 (skipped) when onnx is not installed.
"""
import argparse, collections, glob, json, os, re, shutil, subprocess, sys, tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))


def load_tensors(paths):
    from onnx import TensorProto, numpy_helper
    out = []
    for p in sorted(paths, key=lambda q: int(re.findall(r"_(\d+)\.pb$", q)[0])):
        t = TensorProto()
        with open(p, "rb") as f:
            t.ParseFromString(f.read())
        if not t.name and t.data_type == 0:
            raise ValueError("not a tensor (a sequence or optional)")
        out.append(numpy_helper.to_array(t))
    return out


def compare(got, want):
    if got is None:
        return "missing"
    if got.shape != want.shape:
        return f"shape {list(got.shape)} != {list(want.shape)}"
    if want.dtype.name == "bfloat16":  # read back widened to f32
        want = want.astype(np.float32)
        ok = np.allclose(got, want, rtol=1e-2, atol=1e-2, equal_nan=True)
        return "" if ok else "bfloat16 values differ"
    if want.dtype.kind == "f":
        if got.dtype != want.dtype:
            return f"dtype {got.dtype} != {want.dtype}"
        rtol, atol = (1e-2, 1e-2) if want.dtype == np.float16 else (1e-3, 1e-5)
        if not np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol,
                           equal_nan=True):
            diff = np.nanmax(np.abs(got.astype(np.float64) - want.astype(np.float64)))
            return f"max abs diff {diff:g}"
        return ""
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != {want.dtype}"
    return "" if np.array_equal(got, want) else "values differ"


def outputs_read_inputs(ir):
    """Whether every output of `ir` depends on a user input (else the
    importer computed it, and the test says nothing about cgc)."""
    live = {i["name"] for i in ir["inputs"] if i.get("kind", "user_input") == "user_input"}
    for n in ir["nodes"]:
        if any(v in live for v in n.get("inputs", [])):
            live.add(n["name"])
    return all((o if isinstance(o, str) else o["value"]) in live for o in ir["outputs"])


def run_case(case, cgc_opt, work, stage=None):
    """(outcome, detail, folded) for one node test directory; a passed
    case's IR, inputs and expected outputs are copied to `stage`/<name>
    for the GPU run (test/onnx/gpu_node_tests.py)."""
    import onnx
    import cgc
    from cgc.safetensors import write_safetensors, read_safetensors
    name = os.path.basename(case)
    model = onnx.load(os.path.join(case, "model.onnx"))
    data = os.path.join(case, "test_data_set_0")
    try:
        inputs = load_tensors(glob.glob(os.path.join(data, "input_*.pb")))
        expected = load_tensors(glob.glob(os.path.join(data, "output_*.pb")))
    except Exception as e:  # noqa: BLE001 - the data is not a tensor
        return "refused", f"test data: {e}", False
    initializers = {t.name for t in model.graph.initializer}
    names = [vi.name for vi in model.graph.input if vi.name not in initializers]
    given = dict(zip(names, inputs))
    folded = {}
    try:
        ir, weights = cgc.onnx_to_ir(model, name=name)
    except cgc.RefusedError as e:
        if "must be a constant" not in str(e):
            return "refused", str(e), False
        folded = {n: a for n, a in given.items() if a.dtype.kind in "iub"}
        while True:
            try:
                ir, weights = cgc.onnx_to_ir(model, name=name, constants=folded)
                break
            except cgc.RefusedError as e2:
                named = getattr(e2, "operand", None)
                if named not in given or named in folded:
                    return "refused", str(e2), True
                folded[named] = given[named]  # a float operand that decides a shape
    except Exception as e:  # noqa: BLE001 - the importer must not crash
        return "wrong", f"importer crashed: {type(e).__name__}: {e}", False
    if not outputs_read_inputs(ir):
        return "folded", "an output is computed at import time, from constants only", bool(folded)
    d = tempfile.mkdtemp(prefix=name[:40] + "-", dir=work)
    path = os.path.join(d, "model.json")
    cgc.write_ir(ir, weights, path)
    run_inputs = {}
    user = [i for i in ir["inputs"] if i.get("kind", "user_input") == "user_input"]
    for spec, onnx_name in zip(user, [n for n in names if n not in folded]):
        array = given[onnx_name]
        if array.dtype == np.float64 or array.dtype.kind in "uc" or array.dtype.kind == "O":
            return "refused", f"input '{onnx_name}' has dtype {array.dtype}", bool(folded)
        run_inputs[spec["name"]] = array
    try:
        write_safetensors(os.path.join(d, "in.safetensors"), run_inputs)
    except ValueError as e:
        return "refused", str(e), bool(folded)
    r = subprocess.run([cgc_opt, path, "--interpret", "--inputs", os.path.join(d, "in.safetensors"),
                        "--outputs", os.path.join(d, "out.safetensors")],
                       capture_output=True, text=True, timeout=300)
    if r.returncode == 1 and "error:" in r.stderr:
        line = next((l for l in r.stderr.splitlines() if "error:" in l), r.stderr.strip())
        return "refused", "cgc: " + line.split("error:", 1)[1].strip(), bool(folded)
    if r.returncode != 0:
        return "wrong", f"cgc-opt exit {r.returncode}: {r.stderr.strip()[-300:]}", bool(folded)
    got = read_safetensors(os.path.join(d, "out.safetensors"))
    out_names = [o if isinstance(o, str) else o["name"] for o in ir["outputs"]]
    for k, (want, out) in enumerate(zip(expected, out_names)):
        problem = compare(got.get(out), want)
        if problem:
            return "wrong", f"output #{k} '{out}': {problem}", bool(folded)
    if stage and all(w.dtype.name != "bfloat16" for w in expected):
        write_safetensors(os.path.join(d, "want.safetensors"), dict(zip(out_names, expected)))
        for f in ("out.safetensors",):
            os.remove(os.path.join(d, f))
        shutil.move(d, os.path.join(stage, name))
        return "passed", "", bool(folded)
    shutil.rmtree(d, ignore_errors=True)
    return "passed", "", bool(folded)


def reason_key(detail):
    """A refusal's reason without the node's name, for counting."""
    m = re.search(r"the ONNX operator (\w+) has no cgc mapping", detail)
    if m:
        return f"no mapping: {m.group(1)}"
    m = re.search(r"has (?:ONNX type|dtype) (\w+)", detail)
    if m:
        return f"dtype {m.group(1)}"
    return re.sub(r"node '[^']*' ", "", re.sub(r"'[^']*'", "'…'", detail))[:110]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cgc-opt", required=True)
    ap.add_argument("--data")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--report")
    ap.add_argument("--min-passed", type=int, default=0)
    ap.add_argument("--filter", default="")
    ap.add_argument("--keep", help="keep the wrong cases' files here")
    ap.add_argument("--stage", help="copy each passed case here for the GPU run")
    args = ap.parse_args()
    try:
        import onnx
    except ImportError:
        print("skipped: onnx is not installed (scripts/setup.sh installs onnx==1.22.0)")
        return 77
    data = args.data or os.path.join(os.path.dirname(onnx.__file__), "backend/test/data/node")
    cases = sorted(c for c in glob.glob(os.path.join(data, "test_*")) if args.filter in c)
    work = args.keep or tempfile.mkdtemp(prefix="cgc-onnx-")
    os.makedirs(work, exist_ok=True)
    if args.stage:
        shutil.rmtree(args.stage, ignore_errors=True)
        os.makedirs(args.stage)
    def one(case):
        try:
            return (os.path.basename(case),) + run_case(case, args.cgc_opt, work, args.stage)
        except Exception as e:  # noqa: BLE001 - counted, never hidden
            return os.path.basename(case), "wrong", f"{type(e).__name__}: {e}", False
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(one, cases))
    counts = collections.Counter(r[1] for r in results)
    folded = sum(1 for r in results if r[1] == "passed" and r[3])
    reasons = collections.Counter(reason_key(r[2]) for r in results if r[1] == "refused")
    wrong = [r for r in results if r[1] == "wrong"]
    print(f"onnx node tests (onnx {onnx.__version__}): {len(results)} run, {counts['passed']} passed "
          f"({folded} with their integer inputs as constants), {counts['refused']} refused, "
          f"{counts['folded']} folded, {counts['wrong']} wrong")
    for name, _, detail, _ in wrong:
        print(f"WRONG {name}: {detail}")
    if args.report:
        write_report(args.report, onnx.__version__, results, counts, folded, reasons)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if wrong or counts["passed"] < args.min_passed else 0


def write_report(path, version, results, counts, folded, reasons):
    lines = ["# ONNX backend node tests through cgc", "",
             f"Generated by `test/onnx/node_tests.py --report` (onnx {version}'s "
             "`onnx/backend/test/data/node`): each model imported by python/cgc, run by the "
             "reference interpreter on the test's inputs and compared with its outputs "
             "(docs/onnx.md says how).", "",
             "| outcome | tests |", "|---|---|",
             f"| passed | {counts['passed']} (of which {folded} with their integer inputs as constants) |",
             f"| refused | {counts['refused']} |",
             f"| folded (outputs computed at import time) | {counts['folded']} |",
             f"| wrong | {counts['wrong']} |",
             f"| all | {len(results)} |", "", "## Refusals by reason", "",
             "| reason | tests |", "|---|---|"]
    for reason, n in reasons.most_common():
        lines.append(f"| {reason.replace('|', '/')} | {n} |")
    from cgc.onnx.ops import RULES
    lines += ["", "## Operators mapped", "", ", ".join(f"`{op}`" for op in sorted(RULES)),
              "", "## Passed", "", ", ".join(f"`{r[0][5:]}`" for r in results if r[1] == "passed")]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
