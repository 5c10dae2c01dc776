"""A program record split between cgc and PyTorch: what the torch.compile
backend (backend.py) compiles and what it leaves to PyTorch. Needs no
torch.

Algorithm. A call is cgc's when an ATen rule maps it (export.rule_of),
every tensor it makes has a cgc dtype, and it is not refused: a view
that the graph returns stays PyTorch's (the caller may rely on it
aliasing its base), and so does every node the lowering of an earlier
split refused (`refused`). Every other call is PyTorch's; placeholders
and the output belong to neither; any other node (call_module,
call_method) is PyTorch's. Each node gets a depth, the most
PyTorch calls on a path into it:

    depth(n) = max over n's operands p of depth(p) + [p is PyTorch's]

Nodes of cgc at one depth form one part. A path between two nodes of a
part never passes a PyTorch call (that call would raise the later node's
depth), so each part runs as one graph, and the parts and calls run in
the order: cgc's part at depth 0, PyTorch's calls at depth 0 (in graph
order), cgc's part at depth 1, ... . A part's inputs are the values its
nodes read from outside it, its outputs the values of its nodes read
outside it (by a later part, a call or the graph's output).

`split` returns the steps in that order; `part_record` makes a part a
program record of its own (its inputs user inputs), which export.py
lowers as it lowers a whole program; `lowered_parts` splits again, with
every node whose lowering is refused left to PyTorch, until every part
lowers.
"""
import re
from collections import namedtuple

from ..dtypes import IR_OF_TORCH
from ..errors import RefusedError
from .export import lower_ir, rule_of, set_buckets
from .record import RECORD_VERSION, Sym, TensorVal, read_nodes

# One step: "cgc" (a part: its node names, the names it reads from outside
# and the names it gives to later steps) or "torch" (one call: `nodes` is
# its name alone, inputs and outputs empty).
Step = namedtuple("Step", "kind nodes inputs outputs")

# ATen ops whose result is a view of their first operand.
VIEWS = {"view", "_unsafe_view", "reshape", "alias", "t", "transpose", "permute", "expand",
         "unsqueeze", "squeeze", "slice", "select", "as_strided", "unflatten", "flatten",
         "narrow", "split", "chunk", "unbind", "view_as", "detach"}


def overload_base(target):
    """ "view" of "aten.view.default"; None for a call that is not ATen's."""
    return target.split(".")[1] if target.startswith("aten.") else None


def why_torch(n, returned):
    """Why call `n` is PyTorch's, or None when it is cgc's."""
    if n.target == "getitem":
        return None  # follows its operand (split decides)
    if isinstance(n.val, Sym):
        return "a size, computed by PyTorch"
    if rule_of(n.target) is None:
        return "no cgc mapping"
    vals = n.val if isinstance(n.val, list) else [n.val]
    for v in vals:
        if isinstance(v, TensorVal) and v.dtype not in IR_OF_TORCH:
            return f"dtype {v.dtype}, which cgc has not"
    if n.name in returned and overload_base(n.target) in VIEWS:
        return "a view the graph returns (it aliases its base)"
    return None


def operands(n):
    """The nodes `n` reads, in order of first use."""
    out = []

    def visit(a):
        if isinstance(a, (list, tuple)):
            for x in a:
                visit(x)
        elif hasattr(a, "op") and hasattr(a, "target") and a not in out:
            out.append(a)
    visit(list(n.args))
    visit(list(n.kwargs.values()))
    return out


def split(record, refused=None):
    """(steps, reasons): the record's calls as Steps in running order, and
    {node name: why PyTorch runs it} for each call left to PyTorch.
    `refused` ({node name: reason}) makes those calls PyTorch's."""
    refused = refused or {}
    nodes = read_nodes(record)
    output = next(n for n in nodes if n.op == "output")
    returned = {a.name for a in operands(output)}
    reasons, owner = {}, {}  # owner: node name -> "cgc" | "torch" (calls only)
    for n in nodes:
        if n.op in ("placeholder", "get_attr", "output"):
            continue
        why = refused.get(n.name) or (why_torch(n, returned) if n.op == "call_function"
                                      else f"a {n.op} node")
        if n.target == "getitem":
            base = n.args[0]
            why = why or (reasons.get(base.name) and "a result of a call PyTorch runs")
        owner[n.name] = "torch" if why else "cgc"
        if why:
            reasons[n.name] = why
    whole_results(nodes, owner, reasons)
    depth = {}
    for n in nodes:
        depth[n.name] = max((depth[p.name] + (owner.get(p.name) == "torch")
                             for p in operands(n)), default=0)
    parts, calls = {}, {}  # depth -> cgc's nodes, PyTorch's calls (graph order)
    for n in nodes:
        if n.name in owner:
            (parts if owner[n.name] == "cgc" else calls).setdefault(depth[n.name], []).append(n)
    steps = []
    for d in sorted(set(parts) | set(calls)):
        if d in parts:
            steps.append(part_step(parts[d], nodes))
        steps += [Step("torch", [n.name], [], []) for n in calls.get(d, [])]
    return steps, reasons


def whole_results(nodes, owner, reasons):
    """Gives PyTorch every call of several results (layer_norm's) one of
    whose getitems PyTorch runs, and with it the call's other getitems:
    PyTorch needs the call's whole result."""
    getitems = {}
    for n in nodes:
        if n.op == "call_function" and n.target == "getitem":
            getitems.setdefault(n.args[0].name, []).append(n.name)
    changed = True
    while changed:
        changed = False
        for base, items in getitems.items():
            if owner.get(base) == "cgc" and any(owner[g] == "torch" for g in items):
                owner[base] = "torch"
                reasons[base] = "PyTorch reads one of its results: " + next(
                    reasons[g] for g in items if owner[g] == "torch")
                for g in items:
                    if owner[g] == "cgc":
                        owner[g], reasons[g] = "torch", "a result of a call PyTorch runs"
                changed = True


def part_step(part, nodes):
    """The Step of cgc's nodes `part`: what it reads and what it gives."""
    inside = {n.name for n in part}
    inputs = []
    for n in part:
        for p in operands(n):
            if p.name not in inside and p.name not in inputs:
                inputs.append(p.name)
    outputs = []
    for n in nodes:
        if n.name in inside:
            continue
        for p in operands(n):
            if p.name in inside and p.name not in outputs:
                outputs.append(p.name)
    return Step("cgc", [n.name for n in part], inputs, outputs)


def part_record(record, step, name):
    """The program record of cgc's part `step` of `record`: each input a
    user input placeholder (of the type its producer's record gives) or,
    for a size, a size node, its nodes as they are, an output node
    returning its outputs."""
    entries = {e["name"]: e for e in record["nodes"]}

    def is_size(val):
        return isinstance(val, dict) and set(val) == {"sym"}
    # A size the part reads (Dynamo's symbolic size): no input, but a
    # size node of its own, which the lowering reads as the dim.
    placeholders = [{"op": "call_function" if is_size(entries[i]["val"]) else "placeholder",
                     "name": i, "target": "sym_size" if is_size(entries[i]["val"]) else i,
                     "args": [], "kwargs": {}, "val": entries[i]["val"],
                     "source": entries[i]["source"]} for i in step.inputs]
    body = [entries[n] for n in step.nodes]
    output = {"op": "output", "name": "output", "target": "output",
              "args": [[{"node": o} for o in step.outputs]], "kwargs": {}, "val": None,
              "source": None}
    return {"record_version": RECORD_VERSION, "module": name,
            "inputs": [{"name": p["name"], "kind": "user_input", "target": None}
                       for p in placeholders if p["op"] == "placeholder"],
            "outputs": [{"name": o, "kind": "user_output"} for o in step.outputs],
            "range_constraints": record.get("range_constraints", {}),
            "nodes": placeholders + body + [output]}


REFUSED_NODE = re.compile(r"^node '([^']+)'")


def refused_node(message, step):
    """The node of `step` a lowering's refusal names, or None."""
    m = REFUSED_NODE.match(message)
    return m.group(1) if m and m.group(1) in step.nodes else None


def lowered_parts(record, name, buckets, refused=None):
    """(steps, kept_out, {step index: (step, IR dict, arguments)}): the
    split of `record` whose every cgc part lowers (a node whose lowering is
    refused goes to PyTorch and the record is split again), each part's
    dims given `buckets` ({dim: extents}) where it has them; kept_out is
    {node: (op, why, source line)} of PyTorch's calls, arguments the step
    input each IR input is. `refused` ({node: why}) starts PyTorch's share."""
    refused = dict(refused or {})
    while True:
        steps, reasons = split(record, refused)
        parts, again = {}, False
        for k, step in enumerate(steps):
            if step.kind != "cgc":
                continue
            try:
                ir, lowering = lower_ir(part_record(record, step, f"{name}_part{k}"), {})
                set_buckets(lowering.dims, {d: [v for v in b if lowering.dims[d]["min"] <= v
                                                <= lowering.dims[d]["max"]]
                                            for d, b in buckets.items() if d in lowering.dims})
            except RefusedError as e:
                node = refused_node(str(e), step)
                for n in ([node] if node else step.nodes):
                    refused[n] = str(e)
                again = True
                break
            # Which of the step's inputs each IR input is (a number or
            # flag the part reads is no IR input).
            source = {lowering.value.get(i): j for j, i in enumerate(step.inputs)}
            parts[k] = (step, ir, [source[i["name"]] for i in ir["inputs"]])
        if not again:
            break
    entries = {e["name"]: e for e in record["nodes"]}
    kept_out = {n: (entries[n]["target"], why, entries[n]["source"])
                for n, why in reasons.items()}
    return steps, kept_out, parts
