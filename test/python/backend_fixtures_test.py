#!/usr/bin/env python3
"""The torch.compile backend's split (cgc.torch.partition), checked
without PyTorch on the graphs of backend-fixtures/ (make_backend_fixtures.py):

- every call of the graph is in exactly one step, and each step reads
  only what a placeholder or an earlier step defines;
- no cgc part reads a PyTorch call that reads the part (convexity: the
  part runs as one graph);
- the number of cgc parts and the ATen ops left to PyTorch are the
  fixture's expectations, and a view kept for aliasing is one the graph
  returns;
- each cgc part lowers (cgc.torch.partition.lowered_parts, which leaves a
  node whose lowering is refused to PyTorch) and the reference
  interpreter (`cgc-opt --interpret`), run on PyTorch's values of the
  part's inputs, gives PyTorch's values of its outputs: within rtol 1e-4
  + atol 1e-5 for floats, exactly for any other dtype.

Prints one line per graph; exit status 1 if any fails.

Usage: PYTHONPATH=python backend_fixtures_test.py --cgc-opt PATH [--fixtures DIR]
"""
import argparse
import json
import os
import sys
import tempfile

import numpy as np

from cgc.safetensors import read_safetensors
from export_fixtures_test import interpret  # (this folder: the same interpreter run)
from cgc.torch.partition import lowered_parts, operands
from cgc.torch.record import read_nodes

HERE = os.path.dirname(os.path.abspath(__file__))
RETURNED_VIEW = "a view the graph returns"


def check_order(record, steps):
    """'' if the steps hold every call once and read only earlier values."""
    nodes = read_nodes(record)
    calls = [n.name for n in nodes if n.op not in ("placeholder", "get_attr", "output")]
    listed = [name for s in steps for name in s.nodes]
    if sorted(listed) != sorted(calls):
        return f"the steps hold {len(listed)} nodes, the graph {len(calls)} calls"
    by_name = {n.name: n for n in nodes}
    defined = {n.name for n in nodes if n.op in ("placeholder", "get_attr")}
    for s in steps:
        inside = set(s.nodes)
        for name in s.nodes:
            for p in operands(by_name[name]):
                if p.name not in defined and p.name not in inside:
                    return f"'{name}' reads '{p.name}' before any step defines it"
        if s.kind == "cgc" and any(i in inside for i in s.inputs):
            return "a part reads one of its own nodes as an input"
        defined |= inside
    return ""


def check_expectations(record, steps, reasons, expect):
    if not expect:
        return ""
    parts = sum(s.kind == "cgc" for s in steps)
    if parts != expect["parts"]:
        return f"{parts} cgc parts, expected {expect['parts']}"
    entries = {e["name"]: e for e in record["nodes"]}
    output = next(e for e in record["nodes"] if e["op"] == "output")
    returned = json.dumps(output["args"])
    kept = set()
    for name, why in reasons.items():
        if why.startswith(RETURNED_VIEW) and json.dumps({"node": name}) not in returned:
            return f"'{name}' is kept as a returned view but the graph does not return it"
        if entries[name]["target"] != "getitem":
            kept.add(entries[name]["target"])
    if sorted(kept) != expect["torch"]:
        return f"PyTorch keeps {sorted(kept)}, expected {expect['torch']}"
    return ""


def compare(got, want):
    if got.shape != want.shape:
        return f"shape {list(got.shape)}, PyTorch's {list(want.shape)}"
    if want.dtype.kind == "f":
        g, w = got.astype(np.float64), want.astype(np.float64)
        if not np.allclose(g, w, rtol=1e-4, atol=1e-5, equal_nan=True):
            return f"max abs diff {np.nanmax(np.abs(g - w)):.3g}"
    elif not np.array_equal(got.astype(want.dtype), want):
        return "values differ"
    return ""


def check_parts(parts, values, cgc_opt, work):
    for k, (step, ir, arguments) in sorted(parts.items()):
        ir_path = os.path.join(work, f"part{k}.json")
        with open(ir_path, "w") as f:
            json.dump(ir, f)
        feed = {i["name"]: values[step.inputs[j]] for i, j in zip(ir["inputs"], arguments)}
        try:
            got = interpret(cgc_opt, ir_path, feed, work)
        except RuntimeError as e:
            return f"part {k}: {e}"
        names = [o if isinstance(o, str) else o["name"] for o in ir["outputs"]]
        for name, node in zip(names, step.outputs):
            problem = compare(got[name], values[node])
            if problem:
                return f"part {k}, output '{node}': {problem}"
    return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cgc-opt", required=True)
    ap.add_argument("--fixtures", default=os.path.join(HERE, "backend-fixtures"))
    args = ap.parse_args()
    failed = 0
    for name in sorted(os.listdir(args.fixtures)):
        folder = os.path.join(args.fixtures, name)
        with open(os.path.join(folder, "record.json")) as f:
            record = json.load(f)
        with open(os.path.join(folder, "expect.json")) as f:
            expect = json.load(f)
        values = read_safetensors(os.path.join(folder, "values.safetensors"))
        steps, kept_out, parts = lowered_parts(record, name, {})
        reasons = {node: why for node, (_, why, _) in kept_out.items()}
        with tempfile.TemporaryDirectory(prefix="cgc-backend-") as work:
            problem = (check_order(record, steps)
                       or check_expectations(record, steps, reasons, expect)
                       or check_parts(parts, values, args.cgc_opt, work))
        parts = [len(s.nodes) for s in steps if s.kind == "cgc"]
        print(f"{name}: {'FAIL: ' + problem if problem else 'ok'} (parts {parts}, "
              f"{len(reasons)} calls in PyTorch)")
        failed += bool(problem)
    if failed:
        print(f"backend fixtures: {failed} failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
