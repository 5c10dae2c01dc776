"""torch.export programs into cgc's JSON IR (docs/python.md).

    cgc.export(module, example_args, "model.json")   # + model.safetensors

`export` captures the module as a program record (torch_capture.py, which
needs torch) and lowers it; `lower_record` lowers a record without torch.
Parameters, buffers and constants become persistent inputs whose values
are written to a safetensors file beside the IR; user inputs keep their
placeholder names; dynamic dims become symbolic dims with the exported
bounds, named after the user's torch.export.Dim. Each ATen op maps onto cgc
ops (aten_rules.py); one with no mapping is refused by name, with the
user's source line.
"""
import json
import operator
import os

from .aten_rules import ATEN, PLAIN_OVERLOADS
from .ir_builder import IRBuilder, is_dim_name, json_number, safe_name
from .onnx_types import NUMPY, RefusedError
from .safetensors import write_safetensors
from .torch_record import RecordNode, Sym, TensorVal, read_nodes

DTYPE = {"torch.float32": "f32", "torch.float16": "f16", "torch.bfloat16": "bf16",
         "torch.int32": "i32", "torch.int64": "i64", "torch.bool": "bool"}
IR_KEYS = ("format_version", "name", "dims", "weights_file", "inputs", "nodes", "outputs")


def export(module, example_args, path, dynamic_shapes=None, example_kwargs=None, *, buckets=None):
    """Exports `module` on `example_args` with torch.export and writes the
    IR to `path` (and its weights beside it). Returns the IR dict."""
    from .torch_capture import capture
    record, weights = capture(module, example_args, dynamic_shapes, example_kwargs)
    return lower_record(record, weights, path, buckets=buckets)


def lower_record(record, weights, path, *, buckets=None):
    """Writes the IR of a program record (torch_record.py) to `path`, and
    the values of the weights it reads (`weights`: NumPy arrays by
    state_dict name) to a safetensors file beside it. `buckets`: extents
    to compile each named dim for (set_buckets). Returns the IR dict."""
    lowering = Lowering(record, weights)
    outputs = lowering.run()
    set_buckets(lowering.dims, buckets or {})
    ir = {"format_version": 1, "name": safe_name(record["module"]),
          "inputs": lowering.inputs, "nodes": lowering.nodes, "outputs": outputs}
    if lowering.dims:
        ir["dims"] = list(lowering.dims.values())
    if lowering.weights:
        wpath = os.path.splitext(path)[0] + ".safetensors"
        write_safetensors(wpath, lowering.weights)
        ir["weights_file"] = os.path.basename(wpath)
    ir = {k: ir[k] for k in IR_KEYS if k in ir}
    with open(path, "w") as f:
        json.dump(ir, f, indent=1)
        f.write("\n")
    return ir


def set_buckets(dims, buckets):
    """Gives each dim named in `buckets` its bucket extents (docs/ir.md: a
    call runs the graph of the smallest bucket that holds its size): sorted,
    within the dim's [min, max], with max added when missing."""
    if not isinstance(buckets, dict):
        raise ValueError(f"buckets must be a dict of dim name to extents, got {buckets!r}")
    for name, given in buckets.items():
        dim = dims.get(name)
        if dim is None:
            raise ValueError(f"buckets for '{name}': the export has no dim of that name "
                             f"(its dims: {', '.join(dims) or 'none'})")
        if not isinstance(given, (list, tuple)) or \
                any(isinstance(v, bool) or not hasattr(v, "__index__") for v in given):
            raise ValueError(f"buckets for '{name}': {given!r} is not a list of integers")
        extents = [operator.index(v) for v in given]
        outside = sorted(v for v in extents if not dim["min"] <= v <= dim["max"])
        if outside:
            raise ValueError(f"buckets for '{name}': {outside} outside the dim's range "
                             f"[{dim['min']}, {dim['max']}]")
        dim["buckets"] = sorted(set(extents) | {dim["max"]})


class Lowering(IRBuilder):
    """The IR of one program record, built node by node; the ATen rules
    call its methods."""

    def __init__(self, record, weights):
        super().__init__()
        self.record, self.given_weights = record, weights
        self.weights, self.dims = {}, {}
        self.value = {}   # record node name (name#k: its k-th result) -> cgc value name
        self.sizes = {}   # record node name -> the size it computes (no cgc value)

    def op(self, op, inputs, attrs=None, name=None):
        return self.node(op, inputs, attrs, name)

    def scalar(self, value, dtype):
        return self.op("constant", [], {"dtype": dtype, "shape": [],
                                        "value": json_number(value, dtype)}, "scalar")

    # -- types

    def dim(self, d):
        if isinstance(d, int):
            return d
        if not is_dim_name(d):
            raise RefusedError(f"a dim computed from others ({d}); cgc takes declared dims only")
        if d not in self.dims:
            rng = self.record["range_constraints"].get(d)
            if rng is None:
                raise RefusedError(f"dim {d} has no range")
            if not isinstance(rng["max"], int):
                raise RefusedError(f"dim {d} has no upper bound: give torch.export.Dim a max")
            self.dims[d] = {"name": d, "min": rng["min"], "max": rng["max"]}
        return d

    def type_of(self, n):
        if not isinstance(n.val, TensorVal):
            raise RefusedError(f"'{n.name}' is not a tensor")
        dtype = DTYPE.get(n.val.dtype)
        if dtype is None:
            raise RefusedError(f"'{n.name}' has dtype {n.val.dtype}, which cgc has not")
        return dtype, [self.dim(d) for d in n.val.shape]

    def dtype(self, n):
        return self.type_of(n)[0]

    def shape(self, n):
        return self.type_of(n)[1]

    # -- the program

    def run(self):
        """The IR's inputs and nodes; returns its outputs."""
        specs = {s["name"]: s for s in self.record["inputs"]}
        for n in read_nodes(self.record):
            self.loc = n.source
            if n.op == "placeholder":
                if n.name not in specs:
                    raise ValueError(f"placeholder '{n.name}' is not in the record's inputs")
                self.placeholder(n, specs[n.name])
            elif n.op == "call_function":
                self.call(n)
            elif n.op == "output":
                return self.outputs(n)
            else:
                raise RefusedError(f"node '{n.name}': a {n.op} node, which cgc has no mapping for"
                                   f"{self.where()}")
        raise RefusedError("the program has no output")

    def where(self):
        return f" ({self.loc})" if self.loc else ""

    def placeholder(self, n, spec):
        dtype, shape = self.type_of(n)
        name = self.fresh(n.name)
        entry = {"name": name, "dtype": dtype, "shape": shape}
        kind, target = spec["kind"], spec["target"]
        if kind != "user_input":
            if kind not in ("parameter", "buffer", "constant"):
                raise RefusedError(f"input '{n.name}' is a {kind}, which cgc has no value for")
            array = self.given_weights.get(target)
            if array is None:
                raise RefusedError(f"no value for {kind} '{target}'")
            if array.dtype.type is not NUMPY.get(dtype) or list(array.shape) != shape:
                raise ValueError(f"the value of {kind} '{target}' is {array.dtype}"
                                 f"{list(array.shape)}; the program reads {dtype}{shape}")
            entry["kind"] = "parameter" if kind == "parameter" else "buffer"
            entry["weight"] = name
            self.weights[name] = array
        self.inputs.append(entry)
        self.value[n.name] = name

    def as_dtype(self, a, dtype):
        """A node argument as a cgc value of `dtype` (cast, or a constant)."""
        if not isinstance(a, RecordNode):
            return self.scalar(a, dtype)
        v = self.value_of(a)
        return v if self.dtype(a) == dtype else self.op("cast", [v], {"dtype": dtype})

    def value_of(self, a):
        """The cgc value of node `a`; a size (a dim, known when the graph
        runs) has none: the rules read sizes from the results' shapes."""
        if a.name in self.sizes:
            raise RefusedError(f"the size '{a.name}' ({self.sizes[a.name]}) is used as a tensor "
                               "(cgc has no value for a dim)")
        return self.value[a.name]

    def operand(self, a, like=None):
        """The cgc value of a node argument: a node, or a Python number made
        a constant of `like`'s dtype."""
        if isinstance(a, RecordNode):
            return self.value_of(a)
        dtype = self.dtype(like) if like is not None else ("f32" if isinstance(a, float) else "i64")
        return self.scalar(a, dtype)

    def call(self, n):
        if isinstance(n.val, Sym):  # A size (sym_size, or arithmetic on sizes): no IR value.
            self.sizes[n.name] = n.val.expr
            return
        if n.target == "getitem":
            base, index = n.args
            v = self.value.get(f"{base.name}#{index}")
            if v is None:
                raise RefusedError(f"node '{n.name}': result #{index} of '{base.name}' "
                                   "(a layer_norm's mean or rstd) has no cgc value")
            self.value[n.name] = v
            return
        if not n.target.startswith("aten."):
            raise RefusedError(f"node '{n.name}': the call {n.target} has no cgc mapping"
                               f"{self.where()}")
        overload = n.target[len("aten."):]
        base, _, variant = overload.partition(".")
        rule = ATEN.get(overload) or (ATEN.get(base) if variant in PLAIN_OVERLOADS else None)
        if rule is None:
            raise RefusedError(f"node '{n.name}': the ATen op {overload} has no cgc mapping"
                               f"{self.where()}")
        try:
            out = rule(self, n)
        except RefusedError as e:
            raise RefusedError(f"node '{n.name}' ({overload}): {e}{self.where()}") from None
        if isinstance(out, (list, tuple)):
            for k, v in enumerate(out):
                self.value[f"{n.name}#{k}"] = v
        else:
            self.value[n.name] = out

    def outputs(self, n):
        out = []
        for spec, a in zip(self.record["outputs"], n.args[0]):
            if spec["kind"] != "user_output":
                raise RefusedError(f"output '{spec['name']}' mutates state ({spec['kind']}); "
                                   "export in eval mode")
            if not isinstance(a, RecordNode) or a.name in self.sizes:
                what = self.sizes.get(a.name, a) if isinstance(a, RecordNode) else a
                raise RefusedError(f"output '{spec['name']}' is {what!r}, not a tensor")
            v = self.value_of(a)
            name = safe_name(a.name)
            out.append(v if v == name else {"name": name, "value": v})
        return out
