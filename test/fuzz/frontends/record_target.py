"""The torch.export front end's fuzz target, without torch: a committed
program record (test/python/export-fixtures/) with one to three
mutations (val shapes and dtypes, arguments, op names, wiring, the
signature, dim ranges, the weights), then the oracles:

(a) cgc.torch.export.lower_record raises nothing but RefusedError, or a
    ValueError the package raises itself on a malformed record
    (torch/record.py, set_buckets); and cgc-opt --interpret runs the IR it
    wrote on random inputs (exit 0; exit 1 is a finding: the lowering
    accepted what cgc refuses), except that cgc's refusal of a type the
    lowering declared from the record (`node 'x' (op): declared T but
    computes U`, at the node, with its source line; docs/ir.md), or of a
    node whose operands do not fit its op, followed by the note giving
    that node's source line (located_at_source), is a clean refusal,
    counted as refused: the record disagrees with itself;
(b) where every op is one numpy_aten.OPS evaluates, the interpreter's
    outputs equal NumPy's within fuzzlib.TOLERANCE (rtol 1e-3 + atol
    1e-5 for f32; exact for integers and bools).

An input is saved as JSON: {"fixture": name, "record": ..., "weight_edits":
[[weight, edit], ...]} (the weights are the fixture's, edited).
"""
import copy
import json
import os
import re
import warnings

import numpy as np

import fuzzlib
import numpy_aten

FIXTURES = os.path.join(fuzzlib.ROOT, "test", "python", "export-fixtures")
TORCH_DTYPES = ["torch.float32", "torch.float16", "torch.bfloat16", "torch.int32", "torch.int64",
                "torch.bool", "torch.float64", "torch.uint8", "torch.complex64"]
INT_EDGES = [0, 1, -1, 2, 3, 7, -2, 2**31, 2**62]
WEIGHT_EDITS = ["drop", "f16", "i64", "flatten", "transpose", "empty"]
# cgc's located refusal of a node's declared type (ir/NodeReader.cpp).
DECLARED_TYPE_REFUSAL = re.compile(r"error: node '[^']*' \([a-z_]+\): declared \S+ but computes \S+$")


def located_at_source(stderr):
    """True when cgc-opt's first error is at a node and the note that
    follows it (before any other error) gives that node's source line, the
    user's (`note: node 'add_4' comes from model.py:211`; the lowering
    stamps each node's `loc`): what `cgc model.json` shows the user for a
    record whose node's arguments do not fit its op, a clean located
    refusal as the ONNX target counts one (onnx_target.located_at_onnx_node).
    An error without that note (an operand count, a null operand, an input
    past the IR's limits) is still an ir-error finding."""
    lines = stderr.splitlines()
    first = next((k for k, line in enumerate(lines) if ": error: node '" in line), None)
    if first is None:
        return False
    node = lines[first].split(": error: node '", 1)[1].split("'", 1)[0]
    for line in lines[first + 1:]:
        if ": error:" in line:
            return False
        if f": note: node '{node}' comes from " in line:
            return True
    return False


def load_fixtures():
    from cgc.safetensors import read_safetensors
    out = {}
    for name in sorted(os.listdir(FIXTURES)):
        with open(os.path.join(FIXTURES, name, "program.json")) as f:
            record = json.load(f)
        path = os.path.join(FIXTURES, name, "weights.safetensors")
        out[name] = (record, read_safetensors(path) if os.path.exists(path) else {})
    return out


def edited_weights(weights, edits):
    w = dict(weights)
    for name, edit in edits:
        if name not in w:
            continue
        a = w[name]
        if edit == "drop":
            del w[name]
        elif edit == "f16":
            w[name] = a.astype(np.float16)
        elif edit == "i64":
            w[name] = a.astype(np.int64)
        elif edit == "flatten":
            w[name] = a.reshape(-1)
        elif edit == "transpose":
            w[name] = np.ascontiguousarray(a.T)
        elif edit == "empty":
            w[name] = a.reshape(-1)[:0]
    return w


# --- the mutator --------------------------------------------------------------

def calls(record):
    return [n for n in record["nodes"] if n["op"] == "call_function"]


def earlier_refs(record, node):
    refs = []
    for n in record["nodes"]:
        if n is node:
            break
        refs.append({"node": n["name"]})
    return refs


def mutate_scalar(value, rng, record, node):
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return rng.choice([value + 1, value - 1, -value, rng.choice(INT_EDGES)])
    if isinstance(value, float):
        return rng.choice([-value, 0.0, 1e30, {"float": "nan"}, {"float": "inf"}])
    if isinstance(value, list):
        return fuzzlib.mutate_list(value, rng, lambda v: mutate_scalar(v, rng, record, node),
                                   lambda vs: vs[::-1])
    if isinstance(value, dict) and "node" in value:
        refs = earlier_refs(record, node)
        return rng.choice(refs + [{"node": "undefined"}, 1, None])
    return rng.choice([None, 0, [], {"node": "undefined"}])


def mutate_argument(record, rng):
    nodes = [n for n in calls(record) if n["args"] or n["kwargs"]]
    if not nodes:
        return "no argument"
    node = rng.choice(nodes)
    r = rng.random()
    if node["args"] and r < 0.7:
        k = rng.randrange(len(node["args"]))
        node["args"][k] = mutate_scalar(node["args"][k], rng, record, node)
        return f"argument #{k} of {node['target']}"
    if node["kwargs"] and r < 0.85:
        key = rng.choice(sorted(node["kwargs"]))
        del node["kwargs"][key]
        return f"kwarg '{key}' of {node['target']} dropped"
    if r < 0.93 and node["args"]:
        node["args"].pop()
        return f"last argument of {node['target']} dropped"
    node["args"].append(rng.choice([0, 1, -1, [0], 1.5, None]))
    return f"argument added to {node['target']}"


def mutate_val(record, rng):
    nodes = [n for n in record["nodes"] if isinstance(n.get("val"), dict)]
    if not nodes:
        return "no val"
    node = rng.choice(nodes)
    val = node["val"]
    if rng.random() < 0.4 or not val.get("shape"):
        val["dtype"] = rng.choice(TORCH_DTYPES)
        return f"dtype of '{node['name']}'"
    shape = val["shape"]
    k = rng.randrange(len(shape))
    r = rng.random()
    if r < 0.6:
        shape[k] = rng.choice([0, 1, 2, 3, 5, 16, -1, 2**31])
    elif r < 0.75:
        shape[k] = rng.choice(["s0", "batch", "batch + 1", "2*batch"])
    elif r < 0.9:
        shape.pop(k)
    else:
        shape.insert(k, 1)
    return f"shape of '{node['name']}'"


def mutate_target(record, rng):
    nodes = calls(record)
    if not nodes:
        return "no call"
    node = rng.choice(nodes)
    old = node["target"]
    choices = sorted(numpy_aten.OPS) + ["aten.nonexistent.default", "aten.add", "print",
                                        "aten.sub.Tensor", "aten.relu.default"]
    node["target"] = rng.choice(choices)
    return f"{old} became {node['target']}"


def mutate_wiring(record, rng):
    nodes = record["nodes"]
    k = rng.randrange(len(nodes))
    r = rng.random()
    if r < 0.4 and len(nodes) > 2:
        dropped = nodes.pop(k)
        return f"node '{dropped['name']}' dropped"
    if r < 0.7:
        dup = copy.deepcopy(nodes[k])
        if rng.random() < 0.5:
            dup["name"] += "_dup"
        nodes.insert(rng.randrange(len(nodes) + 1), dup)
        return f"node '{dup['name']}' duplicated"
    j = rng.randrange(len(nodes))
    nodes[k], nodes[j] = nodes[j], nodes[k]
    return "nodes swapped"


def mutate_signature(record, rng):
    r = rng.random()
    if r < 0.35 and record["inputs"]:
        spec = rng.choice(record["inputs"])
        spec["kind"] = rng.choice(["user_input", "parameter", "buffer", "constant",
                                   "token", "custom_obj"])
        return f"input '{spec['name']}' kind {spec['kind']}"
    if r < 0.5 and record["inputs"]:
        spec = record["inputs"].pop(rng.randrange(len(record["inputs"])))
        return f"input '{spec['name']}' dropped from the signature"
    if r < 0.7 and record["outputs"]:
        spec = rng.choice(record["outputs"])
        spec["kind"] = rng.choice(["user_output", "buffer_mutation", "loss_output",
                                   "user_input_mutation"])
        return f"output kind {spec['kind']}"
    if r < 0.9:
        constraints = record["range_constraints"]
        if constraints:
            name = rng.choice(sorted(constraints))
            constraints[name] = rng.choice([{"min": 4, "max": 2}, {"min": 0, "max": 0},
                                            {"min": 1, "max": "inf"}, {"min": -5, "max": 3},
                                            {"min": 1, "max": 2**40}, {}])
            return f"range of {name}"
        constraints["ghost"] = {"min": 1, "max": 4}
        return "range of an unused dim"
    record["record_version"] = rng.choice([0, 2, None, "1"])
    return f"record version {record['record_version']!r}"


def touched_of(done):
    """What a case's class names as its op: `val-dtype` or `val-shape`
    where a recorded val was changed (the lowering may trust it), else the
    first ATen op a mutation named."""
    text = " ".join(done)
    for kind in ("dtype", "shape"):
        if f"{kind} of '" in text:
            return f"val-{kind}"
    ops = re.findall(r"aten\.\w+\.\w+|getitem", text)
    return ops[0] if ops else "-"


MUTATORS = [(mutate_argument, 4), (mutate_val, 3), (mutate_target, 2), (mutate_wiring, 2),
            (mutate_signature, 2)]


# --- the oracles ---------------------------------------------------------------

class Target:
    name = "records"
    suffix = ".json"

    def __init__(self, args):
        from cgc.errors import RefusedError
        from cgc.safetensors import read_safetensors, write_safetensors
        from cgc.torch.export import lower_record
        self.RefusedError, self.lower_record = RefusedError, lower_record
        self.read_st, self.write_st = read_safetensors, write_safetensors
        self.cgc_opt = args.cgc_opt
        self.fixtures = load_fixtures()
        self.stats = {"cases": 0, "refused": 0, "accepted": 0, "compared": 0, "no numpy oracle": 0}

    def generate(self, rng):
        name = rng.choice(sorted(self.fixtures))
        record = copy.deepcopy(self.fixtures[name][0])
        done = []
        for _ in range(rng.choice([1, 1, 2, 3])):
            fn = rng.choices([m for m, _ in MUTATORS], [w for _, w in MUTATORS])[0]
            done.append(fn(record, rng))
        edits = []
        weights = sorted(self.fixtures[name][1])
        if weights and rng.random() < 0.1:
            edits.append([rng.choice(weights), rng.choice(WEIGHT_EDITS)])
            done.append(f"weight {edits[-1][0]}: {edits[-1][1]}")
        case = {"fixture": name, "record": record, "weight_edits": edits,
                "touched": touched_of(done)}
        return json.dumps(case).encode(), f"fixture {name}; " + "; ".join(done)

    def check(self, data, rng, work, findings, where):
        self.stats["cases"] += 1
        case = json.loads(data)
        record = case["record"]
        # A regression case carries its own record; its fixture (weights
        # only) may have left the fixtures since.
        weights = edited_weights(self.fixtures.get(case["fixture"], (None, {}))[1],
                                 case["weight_edits"])
        ops = case.get("touched") or "-"
        path = os.path.join(work, "model.json")
        for f in os.listdir(work):
            os.remove(os.path.join(work, f))
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                ir = fuzzlib.bounded(self.lower_record, record, weights, path)
        except self.RefusedError as e:
            self.stats["refused"] += 1
            findings.refused(fuzzlib.pattern(e))
            return
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # noqa: BLE001 - oracle (a)
            if isinstance(e, ValueError) and fuzzlib.raised_explicitly(e, "ValueError"):
                self.stats["refused"] += 1
                return
            op = fuzzlib.node_op_of(e, "target")
            findings.add(fuzzlib.exception_class(e, op), data, self.suffix, where,
                         f"{type(e).__name__}: {str(e)[:300]}")
            return
        self.stats["accepted"] += 1
        self.check_values(record, weights, ir, rng, work, findings, data, where, ops)

    def feed(self, record, ir, rng):
        """Random user inputs by record name and by IR name, each dim
        set to a value in its range; None if a shape cannot be made."""
        dims = ir.get("dims", [])
        if any(d["min"] > d["max"] for d in dims):
            return "a dim whose min exceeds its max"
        sizes = {d["name"]: rng.randint(d["min"], min(d["max"], d["min"] + 4)) for d in dims}
        rec = [s["name"] for s in record["inputs"] if s["kind"] == "user_input"]
        user = [i for i in ir["inputs"] if i.get("kind", "user_input") == "user_input"]
        if len(rec) != len(user):
            return None
        if {i["name"] for i in user} == set(rec):  # the same names: pair by name, not order
            rec = [i["name"] for i in user]
        by_record, by_ir = {}, {}
        for spec, name in zip(user, rec):
            shape = [sizes.get(d, d) for d in spec["shape"]]
            if any(not isinstance(d, int) or d < 0 for d in shape) or \
                    np.prod(shape, dtype=np.float64) > 1 << 22:
                return None
            array = fuzzlib.random_array(rng, spec["dtype"], shape)
            if array is None:
                return None
            by_record[name], by_ir[spec["name"]] = array, array
        return by_record, by_ir

    def check_values(self, record, weights, ir, rng, work, findings, data, where, ops):
        made = self.feed(record, ir, rng)
        if isinstance(made, str):
            findings.add(f"accepted | {ops} | {made}", data, self.suffix, where)
            return
        if made is None:
            return
        by_record, by_ir = made
        inputs, outputs = os.path.join(work, "in.safetensors"), os.path.join(work, "out.safetensors")
        self.write_st(inputs, by_ir)
        rc, _, stderr = fuzzlib.run_cgc_opt(self.cgc_opt, [os.path.join(work, "model.json"),
                                                           "--interpret", "--inputs", inputs,
                                                           "--outputs", outputs])
        failure = fuzzlib.tool_failure(rc, stderr)
        if failure is None and rc == 1:
            line = fuzzlib.error_line(stderr)
            if DECLARED_TYPE_REFUSAL.search(line) or located_at_source(stderr):
                self.stats["accepted"] -= 1  # counted when lowered
                self.stats["refused"] += 1
                findings.refused("verifier: " + fuzzlib.pattern(line.split("error: ", 1)[1]))
                return
            failure = "refused: " + fuzzlib.pattern(line)
        if failure:
            findings.add(f"ir-error | {ops} | {failure}", data, self.suffix, where, stderr[-500:])
            return
        try:
            want = numpy_aten.evaluate(record, weights, by_record)
        except Exception:  # noqa: BLE001 - an op NumPy's oracle lacks, or an invalid record
            self.stats["no numpy oracle"] += 1
            return
        self.stats["compared"] += 1
        got = self.read_st(outputs)
        names = [o if isinstance(o, str) else o["name"] for o in ir["outputs"]]
        for name, w in zip(names, want):
            if not isinstance(w, np.ndarray):
                continue
            problem = fuzzlib.compare(got.get(name), w)
            if problem:
                findings.add(f"wrong | {ops} | output {problem}", data, self.suffix, where,
                             fuzzlib.describe_difference(got.get(name), w))
                return
