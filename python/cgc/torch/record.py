"""The program record: a decomposed torch.export program as plain JSON,
written by capture.py (with torch) and read back here (without it)
for export.py to lower.

    {"record_version": 1, "module": "MLP",
     "inputs": [{"name": "p_fc1_weight", "kind": "parameter", "target": "fc1.weight"},
                {"name": "x", "kind": "user_input", "target": null}],
     "outputs": [{"name": "layer_norm", "kind": "user_output", "target": null}],
     "range_constraints": {"batch": {"min": 1, "max": 32}},
     "nodes": [{"op": "call_function", "name": "add", "target": "aten.add.Tensor",
                "args": [{"node": "x"}, {"node": "linear_1"}], "kwargs": {},
                "val": {"dtype": "torch.float32", "shape": ["batch", 64]},
                "source": "model.py:12"}, ...]}

`inputs` is the graph signature of every placeholder (kind `user_input`,
`parameter`, `buffer`, `constant`, or torch's own name of another kind, with
its state_dict target), `outputs` that of every output (`user_output`,
`buffer_mutation` with the buffer's state_dict target, ...). Every fx node appears in graph order; its `target`
is an ATen overload ("aten.add.Tensor") or a Python function's name
("getitem"). In `args`, `kwargs` and `val`: numbers, booleans, strings,
null and lists stand for themselves; {"node": name} is an earlier node;
{"float": "inf" | "-inf" | "nan"} a non-finite float; {"sym": text} a
symbolic scalar (a dim's name or an expression of dims); {"dtype" |
"device" | "memory_format" | "layout": text} a torch value as torch prints
it. A tensor's `val` is {"dtype", "shape"} (ints, dim names and
expressions); a node with several results has a list of vals. Range
bounds are ints, or "inf" / "-inf" where torch leaves them unbounded.
"""
from collections import namedtuple

RECORD_VERSION = 1
TORCH_VALUE_KINDS = ("dtype", "device", "memory_format", "layout")
NON_FINITE = {"inf": float("inf"), "-inf": float("-inf"), "nan": float("nan")}

# A tensor result: torch's dtype ("torch.float32") and the shape.
TensorVal = namedtuple("TensorVal", "dtype shape")
# A symbolic scalar, as the text of its expression.
Sym = namedtuple("Sym", "expr")
# A torch.dtype, device, memory_format or layout argument, as torch prints it.
TorchValue = namedtuple("TorchValue", "kind text")


class RecordNode:
    """One fx node of a record, its arguments decoded (an argument that is
    another node is that RecordNode): what the ATen rules read."""
    __slots__ = ("op", "name", "target", "args", "kwargs", "val", "source")

    def __init__(self, op, name, target, args, kwargs, val, source):
        self.op, self.name, self.target = op, name, target
        self.args, self.kwargs, self.val, self.source = args, kwargs, val, source


def read_nodes(record):
    """The record's nodes as RecordNodes, in graph order."""
    if record.get("record_version") != RECORD_VERSION:
        raise ValueError(f"program record version {record.get('record_version')!r}; "
                         f"this cgc reads version {RECORD_VERSION}")
    defined, nodes = {}, []
    for entry in record["nodes"]:
        name = entry["name"]
        node = RecordNode(entry["op"], name, entry["target"],
                          tuple(decode(a, defined, name) for a in entry["args"]),
                          {k: decode(v, defined, name) for k, v in entry["kwargs"].items()},
                          decode_val(entry["val"], name), entry["source"])
        defined[name] = node
        nodes.append(node)
    return nodes


def decode(value, defined, where):
    """An argument of node `where` as the rules see it."""
    if isinstance(value, list):
        return [decode(v, defined, where) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) != 1:
        raise ValueError(f"node '{where}': {value} is not a tagged value of the record")
    (tag, text), = value.items()
    if tag == "node":
        if text not in defined:
            raise ValueError(f"node '{where}' reads '{text}', which no earlier node defines")
        return defined[text]
    if tag == "float" and text in NON_FINITE:
        return NON_FINITE[text]
    if tag == "sym":
        return Sym(text)
    if tag in TORCH_VALUE_KINDS:
        return TorchValue(tag, text)
    raise ValueError(f"node '{where}': {value} is not a tagged value of the record")


def decode_val(val, where):
    """A node's `val`: a TensorVal, a list of vals, or a decoded value."""
    if isinstance(val, list):
        return [decode_val(v, where) for v in val]
    if isinstance(val, dict) and "shape" in val:
        return TensorVal(val["dtype"], list(val["shape"]))
    return decode(val, {}, where)


def tensor_inputs(record):
    """The names of the user inputs that are tensors (the IR's inputs, in
    order): not the numbers, flags and None the export fixed."""
    vals = {n["name"]: n["val"] for n in record["nodes"] if n["op"] == "placeholder"}
    return [i["name"] for i in record["inputs"] if i["kind"] == "user_input"
            and isinstance(vals.get(i["name"]), dict) and "shape" in vals[i["name"]]]


def tensor_outputs(record):
    """The names of the user outputs that are tensors (an inference IR's
    outputs, in order): not the constants (None, numbers) the module also
    returns, nor its buffer mutations."""
    output = next(n for n in record["nodes"] if n["op"] == "output")
    return [spec["name"] for spec, a in zip(record["outputs"], output["args"][0])
            if isinstance(a, dict) and "node" in a and spec["kind"] == "user_output"]
