"""torch.export programs into cgc's JSON IR (docs/python.md).

    cgc.export(module, example_args, "model.json")   # + model.safetensors

`export` captures the module as a program record (capture.py, which
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

from . import aten_activations, aten_arithmetic, aten_attention, aten_complex, aten_convolution, aten_fused_modules, aten_indexing, aten_normalization, aten_routing, aten_scatter, aten_training, aten_views  # noqa: F401 - their rules join ATEN
from .aten_rules import ATEN, CALLS, PLAIN_OVERLOADS
from ..ir_builder import IRBuilder, is_dim_name, json_number, safe_name
from ..dtypes import IR_OF_TORCH as DTYPE, ir_of_numpy
from ..errors import RefusedError
from ..safetensors import BFloat16, write_safetensors
from .merged_views import is_merged, merged_dims, refuse_merged_use
from .record import RecordNode, Sym, TensorVal, read_nodes

IR_KEYS = ("format_version", "name", "dims", "weights_file", "inputs", "nodes", "outputs",
           "optimizer")
RNG_STATE = "rng"  # the rng_state input a training program's dropouts read
MAX_DIM = 1 << 40  # a dim's min and max lie in [0, 2^40] (docs/ir.md, dims)


def export(module, example_args, path, dynamic_shapes=None, example_kwargs=None, *, buckets=None):
    """Exports `module` on `example_args` with torch.export and writes the
    IR to `path` (and its weights beside it). Returns the IR dict."""
    return export_program(module, example_args, path, dynamic_shapes, example_kwargs,
                          buckets=buckets)[0]


def export_program(module, example_args, path, dynamic_shapes=None, example_kwargs=None, *,
                   buckets=None):
    """export's IR dict and the module's CallSignature (capture.py):
    how a call of the module maps onto the IR's inputs and back."""
    from .capture import capture_program
    record, weights, signature = capture_program(module, example_args, dynamic_shapes,
                                                 example_kwargs)
    return lower_record(record, weights, path, buckets=buckets), signature


def lower_record(record, weights, path, *, buckets=None, training=False, extend=None):
    """Writes the IR of a program record (record.py) to `path`, and
    the values of the weights it reads (`weights`: NumPy arrays by
    state_dict name) to a safetensors file beside it. `buckets`: extents
    to compile each named dim for (set_buckets). `training`: dropouts
    draw masks from an `rng_state` input (docs/training.md) instead of
    being refused. `extend(ir, lowering)` may add to the IR dict before it
    is written (cgc.torch.training's optimizer and loss). Returns the IR
    dict."""
    ir, lowering = lower_ir(record, weights, buckets=buckets, training=training)
    if extend:
        extend(ir, lowering)
    if lowering.weights:
        wpath = os.path.splitext(path)[0] + ".safetensors"
        write_safetensors(wpath, lowering.weights)
        ir["weights_file"] = os.path.basename(wpath)
    ir = {k: ir[k] for k in IR_KEYS if k in ir}
    try:  # JSON has no NaN or infinity (constants spell them as strings)
        text = json.dumps(ir, indent=1, allow_nan=False)
    except ValueError:
        raise RefusedError("the record gives an attribute NaN or an infinity (an argument "
                           "cgc's IR cannot spell)") from None
    with open(path, "w") as f:
        f.write(text + "\n")
    return ir


def lower_ir(record, weights, *, buckets=None, training=False):
    """(IR dict, Lowering) of a program record, nothing written: the
    lowering holds the weights the IR reads (`lowering.weights`)."""
    lowering = Lowering(record, weights)
    lowering.training = training
    try:
        outputs = lowering.run()
    except RefusedError:
        raise
    except MALFORMED as e:
        raise RefusedError(malformed(lowering, e)) from None
    set_buckets(lowering.dims, buckets or {})
    ir = {"format_version": 1, "name": safe_name(record["module"]),
          "inputs": lowering.inputs, "nodes": lowering.nodes, "outputs": outputs}
    if lowering.dims:
        ir["dims"] = list(lowering.dims.values())
    return ir, lowering


# What a rule or the record reader raises on a record that torch.export
# did not write (an argument missing or of another kind, a field absent):
# records are machine-made, so these are refused as malformed, naming the
# node being lowered.
MALFORMED = (IndexError, KeyError, TypeError, AttributeError, ValueError, ZeroDivisionError,
             OverflowError, StopIteration)


def malformed(lowering, error):
    where = f"node '{lowering.current}': " if lowering.current else ""
    return (f"{where}a malformed program record ({type(error).__name__}: {error}); records "
            "come from cgc.torch.capture")


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


def check_input_shape(name, shape, dims):
    """Refuses a shape (an input's, or a recorded result's) with a negative
    dim, of a rank past the IR's 8 or of more elements than its 2^40 with
    each named dim at its max (`dims`)."""
    from ..onnx.limits import MAX_ELEMENTS, MAX_RANK
    count = 1
    for d in shape:
        if isinstance(d, int) and d < 0:
            raise RefusedError(f"'{name}' has a negative dim: {shape}")
        count *= d if isinstance(d, int) else dims[d]["max"]
    if len(shape) > MAX_RANK:
        raise RefusedError(f"'{name}' of shape {shape} has a rank past the IR's {MAX_RANK}")
    if count > MAX_ELEMENTS:
        raise RefusedError(f"'{name}' of shape {shape} has more elements than the IR's "
                           "limit of 2^40")


def spelled_val(val):
    """A TensorVal as messages show it: torch.float32[2, s0]."""
    return f"{val.dtype}[{', '.join(str(d) for d in val.shape)}]"


def weight_dtype(array):
    """The IR dtype of a weight's value (a NumPy array or a BFloat16)."""
    if isinstance(array, BFloat16):
        return "bf16"
    return ir_of_numpy(array.dtype) or str(array.dtype)


def rule_of(target):
    """The rule of a call's target ("aten.add.Tensor", or a library's
    custom op CALLS lists by its whole name), or None."""
    if not target.startswith("aten."):
        return CALLS.get(target)
    overload = target[len("aten."):]
    base, _, variant = overload.partition(".")
    return ATEN.get(overload) or (ATEN.get(base) if variant in PLAIN_OVERLOADS else None)


def unmapped_calls(nodes):
    """{what: [nodes]} of the calls no rule maps, in order of first use:
    `what` is "the ATen op add.Tensor" or "the call f". Sizes (Sym
    results) and getitem need none."""
    missing = {}
    for n in nodes:
        if n.op != "call_function" or isinstance(n.val, Sym) or n.target == "getitem" or \
                rule_of(n.target) is not None:
            continue
        what = f"the ATen op {n.target[len('aten.'):]}" if n.target.startswith("aten.") \
            else f"the call {n.target}"
        missing.setdefault(what, []).append(n)
    return missing


def refuse_unmapped(nodes):
    """Refuses a program with calls no rule maps, naming every one at once
    (with its node count and first use), so that a user sees the whole gap
    in one try."""
    missing = unmapped_calls(nodes)
    if not missing:
        return
    def first(n):
        return f"node '{n.name}'" + (f" ({n.source})" if n.source else "")
    if len(missing) == 1:
        (what, uses), = missing.items()
        n = uses[0]
        more = f" (and {len(uses) - 1} more node{'s' * (len(uses) > 2)})" if len(uses) > 1 else ""
        raise RefusedError(f"node '{n.name}': {what} has no cgc mapping"
                           + (f" ({n.source})" if n.source else "") + more)
    lines = [f"  {what}: {len(uses)} node{'s' * (len(uses) > 1)}, first {first(uses[0])}"
             for what, uses in missing.items()]
    raise RefusedError(f"{len(missing)} calls of the program have no cgc mapping:\n"
                       + "\n".join(lines))


class Lowering(IRBuilder):
    """The IR of one program record, built node by node; the ATen rules
    call its methods."""

    def __init__(self, record, weights):
        super().__init__()
        self.record, self.given_weights = record, weights
        self.weights, self.dims = {}, {}
        self.value = {}   # record node name (name#k: its k-th result) -> cgc value name
        self.sizes = {}   # record node name -> the size it computes (no cgc value)
        self.fixed = {}   # user input fixed at export (not a tensor) -> its value
        self.current = None  # the record node being lowered
        self.merges = {}  # a merged dim ("batch*seq") -> its factors in IR order
        self.recorded = {}  # cgc value -> the TensorVal the record gives it
        self.training = False  # dropouts draw masks (lower_record's training)
        self.dropout_elements = 0  # the Philox stream the dropouts so far draw
        self.rng = None  # the rng_state input, made by the first dropout
        self.weight_names = {}  # state_dict name -> the IR input holding it

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
            low = rng["min"] if isinstance(rng["min"], int) else 0
            if low > rng["max"]:
                raise RefusedError(f"dim {d} has the empty range [{low}, {rng['max']}]")
            if low < 0 or rng["max"] > MAX_DIM:
                raise RefusedError(f"dim {d} has the range [{low}, {rng['max']}]; cgc's dims lie "
                                   f"in [0, 2^40]")
            self.dims[d] = {"name": d, "min": low, "max": rng["max"]}
        return d

    def type_of(self, n):
        if not isinstance(n.val, TensorVal):
            raise RefusedError(f"'{n.name}' is not a tensor")
        shape = list(n.val.shape)
        if n.val.dtype == aten_complex.COMPLEX:  # its parts last (aten_complex.py)
            return "f32", [self.dim(d) for d in shape] + [2]
        dtype = DTYPE.get(n.val.dtype)
        if dtype is None:
            raise RefusedError(f"'{n.name}' has dtype {n.val.dtype}, which cgc has not")
        if shape and shape[0] in self.merges:  # Kept unmerged (MERGE_SAFE).
            shape = self.merges[shape[0]] + shape[1:]
        return dtype, [self.dim(d) for d in shape]

    def register_merge(self, n):
        """For a view merging its source's leading dims ([batch, seq, d] to
        [batch*seq, d]): the merged dim's factors in the source's order,
        which every tensor of that merged dim keeps in the IR."""
        merged = n.val.shape[0]
        source = n.args[0]
        if not isinstance(source, RecordNode) or is_merged(source):
            return
        factors = merged_dims(merged)
        leading = list(source.val.shape[:len(factors)])
        if sorted(map(str, leading)) != sorted(map(str, factors)) or \
                list(n.val.shape[1:]) != list(source.val.shape[len(factors):]):
            raise RefusedError(f"node '{n.name}': a view merging dims into {merged} that are "
                               f"not the leading dims of {source.val.shape}")
        if self.merges.setdefault(merged, leading) != leading:
            raise RefusedError(f"node '{n.name}': dims merged into {merged} in two orders")

    def dtype(self, n):
        return self.type_of(n)[0]

    @staticmethod
    def dtype_of_val(val):
        """The IR dtype of a record's TensorVal, or None."""
        return DTYPE.get(val.dtype) if isinstance(val, TensorVal) else None

    def as_ir_dtype(self, v, dtype):
        """Value `v` (f32) cast to `dtype` where that differs."""
        return v if dtype == "f32" else self.op("cast", [v], {"dtype": dtype})

    def shape(self, n):
        return self.type_of(n)[1]

    # -- the program

    def run(self):
        """The IR's inputs and nodes; returns its outputs."""
        specs = {s["name"]: s for s in self.record["inputs"]}
        nodes = read_nodes(self.record)
        refuse_unmapped(nodes)
        for n in nodes:
            self.current = n.name
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
        if spec["kind"] == "user_input" and not isinstance(n.val, TensorVal):
            # A number, flag or None the export fixed (use_cache=False): no input.
            self.fixed[n.name] = n.val
            return
        if spec["kind"] == "user_input" and aten_complex.is_complex(n):
            raise RefusedError(f"input '{n.name}' is complex (cgc's runtime passes real "
                               "tensors: give torch.view_as_real of it)")
        dtype, shape = self.type_of(n)
        check_input_shape(f"input {n.name}", shape, self.dims)
        name = self.fresh(n.name)
        entry = {"name": name, "dtype": dtype, "shape": shape}
        kind, target = spec["kind"], spec["target"]
        if spec.get("layout") == "channels_last":
            self.hold_channels_last(n, entry)
            return
        if kind != "user_input":
            if kind not in ("parameter", "buffer", "constant"):
                raise RefusedError(f"input '{n.name}' is a {kind}, which cgc has no value for")
            array = self.given_weights.get(target)
            if array is None:
                raise RefusedError(f"no value for {kind} '{target}'")
            if weight_dtype(array) != dtype or list(array.shape) != shape:
                raise ValueError(f"the value of {kind} '{target}' is {weight_dtype(array)}"
                                 f"{list(array.shape)}; the program reads {dtype}{shape}")
            entry["kind"] = "parameter" if kind == "parameter" else "buffer"
            entry["weight"] = name
            self.weights[name] = array
            self.weight_names[target] = name
        self.inputs.append(entry)
        self.value[n.name] = name
        self.recorded[name] = n.val

    def hold_channels_last(self, n, entry):
        """User input `n` as it is held, [N, D..., C] (capture.py marks
        it), read through a transpose to the program's [N, C, D...]."""
        shape = entry["shape"]
        entry["shape"] = [shape[0], *shape[2:], shape[1]]
        self.inputs.append(entry)
        rank = len(shape)
        self.value[n.name] = self.op("transpose", [entry["name"]],
                                     {"perm": [0, rank - 1, *range(1, rank - 1)]},
                                     f"{entry['name']}_channels_first")
        self.recorded[self.value[n.name]] = n.val

    def dropout(self, x, p, shape):
        """A dropout of `x` (of `shape`) drawing its own range of the
        program's Philox stream: each dropout starts where the previous one's
        elements end (at the dims' maxima, rounded up to 4)."""
        if self.rng is None:
            self.rng = self.fresh(RNG_STATE)
            self.inputs.append({"name": self.rng, "kind": "rng_state", "dtype": "i64",
                                "shape": [2], "init": {"dist": "zeros"}})
        elements = 1
        for d in shape:
            elements *= d if isinstance(d, int) else self.dims[d]["max"]
        offset = self.dropout_elements
        self.dropout_elements += (elements + 3) // 4 * 4
        return self.op("dropout", [x, self.rng], {"p": p, "offset": offset})

    def as_dtype(self, a, dtype):
        """A node argument as a cgc value of `dtype` (cast, or a constant)."""
        if not isinstance(a, RecordNode):
            return self.scalar(a, dtype)
        v = self.value_of(a)
        return v if self.dtype(a) == dtype else self.op("cast", [v], {"dtype": dtype})

    def value_of(self, a):
        """The cgc value of node `a`; a size (a dim, known when the graph
        runs) has none: the rules read sizes from the results' shapes."""
        if a.name in self.fixed:
            raise RefusedError(f"the input '{a.name}' ({self.fixed[a.name]!r}, fixed at export) "
                               "is used as a tensor")
        if a.name in self.sizes:
            raise RefusedError(f"the size '{a.name}' ({self.sizes[a.name]}) is used as a tensor "
                               "(cgc has no value for a dim)")
        if self.value.get(a.name, "") is None:  # an assertion's result: nothing computed
            raise RefusedError(f"'{a.name}' computes no tensor, but is used as one")
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
            if callable(v):  # a result the rule makes only when it is read
                v = self.value[f"{base.name}#{index}"] = v()
            if v is None:
                raise RefusedError(f"node '{n.name}': result #{index} of '{base.name}' "
                                   "(a layer_norm's mean or rstd) has no cgc value")
            self.forwarded(n, "getitem", v, n.val)
            self.value[n.name] = v
            return
        overload = n.target[len("aten."):] if n.target.startswith("aten.") else n.target
        try:
            aten_complex.check_complex(n, overload.split(".")[0])
        except RefusedError as e:
            raise RefusedError(f"node '{n.name}' ({overload}): {e}{self.where()}") from None
        refuse_merged_use(n, overload)
        if is_merged(n) and overload.split(".")[0] in ("view", "_unsafe_view", "reshape"):
            self.register_merge(n)
        rule = rule_of(n.target)  # (run refused the program if None)
        first_new = len(self.nodes)
        try:
            out = rule(self, n)
        except RefusedError as e:
            raise RefusedError(f"node '{n.name}' ({overload}): {e}{self.where()}") from None
        created = {record["name"]: record for record in self.nodes[first_new:]}
        if isinstance(out, (list, tuple)):
            vals = n.val if isinstance(n.val, list) else []
            for k, v in enumerate(out):
                self.value[f"{n.name}#{k}"] = v
                if k < len(vals):
                    self.declare(n, overload, created, v, vals[k])
        else:
            self.value[n.name] = out
            self.declare(n, overload, created, out, n.val)

    # -- the record's types: declared on the IR, checked, never trusted

    def declare(self, n, overload, created, v, val):
        """Gives the result `v` of record node `n` the type its record
        says, `val`: a node the rule just made declares it (cgc's reader
        checks it against what the op computes, docs/ir.md); a value the
        rule forwards (an identity) must have been recorded with it."""
        if not isinstance(val, TensorVal) or not isinstance(v, str):
            return
        record = created.get(v)
        if record is None:
            self.forwarded(n, overload, v, val)
            return
        try:
            check_input_shape("result", [d if isinstance(d, int) or d in self.dims else 0
                                         for d in val.shape], self.dims)
        except RefusedError as e:
            raise RefusedError(f"node '{n.name}' ({overload}): the record gives its result "
                               f"{spelled_val(val)}: {e}{self.where()}") from None
        declared = self.spelled(val)
        if declared is not None:
            record["type"] = declared
        self.recorded[v] = val

    def forwarded(self, n, what, v, val):
        """Refuses record node `n` whose result is the value `v` of an
        earlier node when the two records give them different types."""
        earlier = self.recorded.get(v)
        if isinstance(val, TensorVal) and isinstance(earlier, TensorVal) and \
                (val.dtype, list(val.shape)) != (earlier.dtype, list(earlier.shape)):
            raise RefusedError(
                f"node '{n.name}' ({what}): the record gives its result "
                f"{spelled_val(val)}, but it is the value of '{v}', recorded as "
                f"{spelled_val(earlier)}{self.where()}")

    def spelled(self, val):
        """A TensorVal as the IR's {"dtype", "shape"}, or None where the IR
        cannot spell it (a dtype cgc has not, a dim computed from others or
        one no input declared)."""
        dtype = DTYPE.get(val.dtype)
        if dtype is None or not all(
                (isinstance(d, int) and not isinstance(d, bool)) or d in self.dims
                for d in val.shape):
            return None
        return {"dtype": dtype, "shape": list(val.shape)}

    def outputs(self, n):
        out, mutations = [], []
        for spec, a in zip(self.record["outputs"], n.args[0]):
            if spec["kind"] == "buffer_mutation" and self.unchanged(spec, a):
                continue  # `self.buf = self.buf.to(device, dtype)`: writes what it read
            if spec["kind"] == "buffer_mutation" and self.training:
                mutations.append(self.buffer_mutation(spec, a))
                continue
            if spec["kind"] != "user_output":
                raise RefusedError(f"output '{spec['name']}' mutates state ({spec['kind']}); "
                                   "export in eval mode")
            if not isinstance(a, RecordNode):
                continue  # A constant (None, a number): the caller's side puts it back.
            if a.name in self.sizes:
                raise RefusedError(f"output '{spec['name']}' is {self.sizes[a.name]!r}, "
                                   "not a tensor")
            if aten_complex.is_complex(a):
                raise RefusedError(f"output '{spec['name']}' is complex (cgc's runtime passes "
                                   "real tensors: return torch.view_as_real of it)")
            v = self.value_of(a)
            name = safe_name(a.name)
            out.append(v if v == name else {"name": name, "value": v})
        return out + mutations

    def unchanged(self, spec, a):
        """Whether a buffer mutation writes back the buffer's own value (a
        no-op conversion, as CTRL's positional table moved to its own
        device and dtype on every call): no mutation at all."""
        target = self.weight_names.get(spec.get("target"))
        return target is not None and isinstance(a, RecordNode) and \
            self.value.get(a.name) == target

    def buffer_mutation(self, spec, a):
        """A training program's update of a buffer (batch norm's running
        statistics, its step count): an output that becomes the buffer's
        value for the next step (docs/ir.md, outputs)."""
        target = self.weight_names.get(spec.get("target"))
        if target is None or not isinstance(a, RecordNode):
            raise RefusedError(f"output '{spec['name']}' mutates "
                               f"'{spec.get('target')}', which is not a buffer cgc holds")
        return {"name": f"{target}.next", "value": self.value_of(a),
                "kind": "buffer_mutation", "target": target}
