"""ONNX models into cgc's JSON IR (docs/onnx.md).

Each ONNX node becomes the cgc ops that compute it (the rules of
ops_elementwise.py and ops_tensor.py, by operator name); what has no mapping is refused by name, never skipped.
Shapes must be static: the model's inputs are read at their declared
shapes (or the shapes of example inputs), and operands that decide a shape
or an axis (Reshape's shape, Slice's starts, a reduction's axes, ...) must
be constants: initializers, Constant nodes, or inputs given as constants
(`constants`, which the conformance harness uses for the ONNX node tests
whose shape operands are graph inputs). Initializers of more than
`inline_limit` elements become parameters read from a safetensors file
beside the IR; smaller ones are inline constants.

    ir, weights = onnx_to_ir(model)            # the IR as a dict, weights
    write_ir(ir, weights, "model.json")        # + model.safetensors
"""
import json
import os

import numpy as np

from . import ops
from .functions import check_classes, expand_functions
from .limits import (MAX_RANK, check_constant_size, check_opset, checked_tensors,
                     folded_elements)
from .names import shown, unique_names
from .prepare import prepared
from .schema import check_node, check_nodes, node_label
from .shapes import computed_model, lenient
from .elem_types import cgc_dtype, dtype_of_array
from ..dtypes import NUMPY
from ..errors import RefusedError
from ..ir_builder import IRBuilder, json_number, safe_name
from ..safetensors import write_safetensors


# Operators folded into constants when every operand is known at compile
# time (shape arithmetic: what sizes a Reshape, a ConstantOfShape or a
# Slice), by ONNX's reference evaluator.
FOLDED = {"Shape", "Size", "Gather", "Slice", "Concat", "Unsqueeze", "Squeeze", "Cast",
          "Add", "Sub", "Mul", "Div", "Equal", "Where", "Range", "Reshape", "ConstantOfShape",
          "ReduceProd", "Max", "Min", "Abs", "Neg", "Expand", "Identity", "Less", "Greater",
          "Not", "And", "Or", "Sqrt", "CastLike", "Mod", "Floor", "Ceil", "Tile"}

# Python's own errors from a rule reading an operand or attribute it did
# not check (a rank, an axis, a value out of its range): the last-resort
# refusal names the node and says UNMAPPED; the fuzzers count each such
# class as a finding of kind `unmapped` (docs/onnx.md), to be fixed in the rule.
UNCHECKED = (IndexError, KeyError, TypeError, ValueError, AttributeError, ZeroDivisionError,
             OverflowError)
UNMAPPED = "the importer could not map this node"

BOOL_RESULTS = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not"}


def result_dtype(op, inputs, attrs, types):
    """The dtype of a cgc op's result, for the ops the rules build."""
    if op in BOOL_RESULTS:
        return "bool"
    if op == "cast" or op == "one_hot":
        return attrs.get("dtype", "f32")
    if op == "argmax":
        return "i64"
    if op == "where":
        return types.get(inputs[1], (None,))[0]
    return types[inputs[0]][0]


class Graph(IRBuilder):
    """The IR being built, and what each ONNX value is."""

    def __init__(self, inline_limit):
        super().__init__()
        self.weights = {}
        self.value = {}   # ONNX name -> cgc value name
        self.type = {}    # cgc value name -> (dtype, shape list)
        self.known = {}   # cgc value name -> ndarray, for values known at compile time
        self.defaults = set()  # cgc value names of inputs with a default
        self.inline_limit = inline_limit

    def op(self, op, inputs, attrs=None, dtype=None, shape=None, name=None):
        """Appends a cgc node; returns its value name. `dtype`/`shape`
        record its type when the importer needs it later."""
        if shape is not None and len(shape) > MAX_RANK:
            raise RefusedError(f"a result of rank {len(shape)}; cgc's IR takes ranks up to "
                               f"{MAX_RANK}")
        out = self.node(op, inputs, attrs, name)
        if dtype is None and inputs and inputs[0] in self.type:
            dtype = result_dtype(op, inputs, attrs or {}, self.type)
        if dtype is not None:
            self.type[out] = (dtype, list(shape) if shape is not None else None)
        return out

    def constant(self, array, name="const"):
        """A value holding `array` (an inline constant, or a parameter read
        from the weights file when large)."""
        array = np.asarray(array)
        dtype = dtype_of_array(array, f"constant '{name}'")
        if array.size > self.inline_limit:
            out = self.fresh(name)
            self.inputs.append({"name": out, "kind": "parameter", "dtype": dtype,
                                "shape": list(array.shape), "weight": out})
            self.weights[out] = array
        else:
            values = [json_number(v, dtype) for v in array.reshape(-1).tolist()]
            attrs = {"dtype": dtype, "shape": list(array.shape),
                     "value": values[0] if array.size == 1 else values}
            out = self.op("constant", [], attrs, dtype, array.shape, name=name)
        self.type[out] = (dtype, list(array.shape))
        self.known[out] = array
        return out

    def input_with_default(self, array, name):
        """A persistent `buffer` input whose weight is `array`: an ONNX graph
        input that has an initializer, a default the caller may replace
        (docs/onnx.md). Never a compile-time constant."""
        dtype = dtype_of_array(array, f"input '{name}'")
        out = self.fresh(name)
        self.inputs.append({"name": out, "kind": "buffer", "dtype": dtype,
                            "shape": list(array.shape), "weight": out})
        self.weights[out] = array
        self.type[out] = (dtype, list(array.shape))
        self.defaults.add(out)
        return out

    def scalar(self, value, dtype):
        if dtype == "bf16":  # NumPy has no bfloat16: an f32 constant, cast
            f32 = self.constant(np.array(value, dtype=np.float32), "scalar")
            return self.op("cast", [f32], {"dtype": "bf16"}, "bf16", [])
        return self.constant(np.array(value, dtype=NUMPY[dtype]), "scalar")

    def dtype(self, v):
        return self.type[v][0]

    def shape(self, v):
        shape = self.type[v][1]
        if shape is None:
            raise RefusedError(f"the shape of '{v}' is not known")
        return shape


class Importer:
    """One ONNX graph into a Graph."""

    def __init__(self, model, constants, inline_limit, input_shapes):
        import onnx
        from onnx import numpy_helper
        self.onnx, self.numpy_helper = onnx, numpy_helper
        check_opset(model, onnx.defs.onnx_opset_version())
        checked_tensors(model)  # dims and data agree, within the IR's limits
        model = prepared(model)  # sparse initializers, model-local functions
        check_nodes(model, lambda op: op in ops.RULES or op in FOLDED)  # before shape inference
        model = self.with_shapes(self.with_constants(model, constants or {}), input_shapes or {})

        def infer(m):  # an unknown domain: shapes from the model; a crash: refused
            return lenient(None, m)
        # Types computed, declarations checked against them (shapes.py).
        self.class_checks = []  # the losses' checks that wait for the importer's shapes
        self.model = expand_functions(computed_model(model), lambda op: op in ops.RULES, infer,
                                      self.class_checks)
        self.g = Graph(inline_limit)
        self.constants = constants or {}
        self.input_shapes = input_shapes or {}
        self.opset = next((o.version for o in self.model.opset_import
                           if o.domain in ("", "ai.onnx")), 1)
        self.value_types = {}
        for vi in list(self.model.graph.value_info) + list(self.model.graph.input) + \
                list(self.model.graph.output):
            self.value_types[vi.name] = vi.type

    def fold(self, node, ins, attrs):
        """Evaluates `node` at compile time when it computes shapes from
        known values only; True when it did."""
        if node.op_type not in FOLDED or not ins or \
                any(v is not None and v not in self.g.known for v in ins):
            return False
        from onnx.reference import ReferenceEvaluator
        feeds = {n: self.g.known[v] for n, v in zip(node.input, ins) if n}
        arrays = [np.asarray(a) for a in feeds.values()]
        elements = folded_elements(node.op_type, arrays, attrs)
        if elements is None:
            return False
        itemsize = max((a.itemsize for a in arrays), default=8)
        check_constant_size(elements, itemsize, "the folded result")
        try:
            results = ReferenceEvaluator(self.single_node_model(node, feeds)).run(None, feeds)
        except Exception:  # noqa: BLE001 - left to the operator's rule
            return False
        for name, array in zip(node.output, results):
            if name:
                self.g.value[name] = self.g.constant(np.asarray(array), name)
        return True

    def single_node_model(self, node, feeds):
        helper = self.onnx.helper
        inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                  for n, a in feeds.items()]
        outputs = [helper.make_empty_tensor_value_info(n) for n in node.output if n]
        graph = helper.make_graph([node], "fold", inputs, outputs)
        return helper.make_model(graph, opset_imports=list(self.model.opset_import))

    def with_shapes(self, model, shapes):
        """`model` with the inputs in `shapes` at those static shapes, and
        its outputs' shapes left to shape inference."""
        if not shapes:
            return model
        model = self.onnx.ModelProto.FromString(model.SerializeToString())
        for vi in model.graph.input:
            if vi.name in shapes:
                dims = vi.type.tensor_type.shape.dim
                del dims[:]
                for d in shapes[vi.name]:
                    dims.add().dim_value = int(d)
        for vi in model.graph.output:
            vi.type.tensor_type.ClearField("shape")
        del model.graph.value_info[:]
        return model

    def with_constants(self, model, constants):
        """`model` with the inputs in `constants` as initializers (so shape
        inference sees them)."""
        if not constants:
            return model
        model = self.onnx.ModelProto.FromString(model.SerializeToString())
        kept = [vi for vi in model.graph.input if vi.name not in constants]
        del model.graph.input[:]
        model.graph.input.extend(kept)
        for name, array in constants.items():
            model.graph.initializer.append(self.numpy_helper.from_array(np.asarray(array), name))
        return model

    def onnx_type(self, name, what):
        t = self.value_types.get(name)
        if t is None or not t.HasField("tensor_type"):
            raise RefusedError(f"{what} '{name}' is not a tensor of known type")
        tt = t.tensor_type
        dtype = cgc_dtype(tt.elem_type, f"{what} '{name}'")
        if name in self.input_shapes:
            shape = [int(d) for d in self.input_shapes[name]]
        elif not tt.HasField("shape"):
            raise RefusedError(f"{what} '{shown(name)}' has no shape")
        else:
            shape = []
            for d in tt.shape.dim:
                if not d.HasField("dim_value"):
                    raise RefusedError(f"{what} '{shown(name)}' has a dynamic dim "
                                       f"'{shown(d.dim_param or '?')}'; give its shape")
                shape.append(d.dim_value)
        if any(d < 0 for d in shape):
            raise RefusedError(f"{what} '{shown(name)}' has a negative dim: {shape}")
        if len(shape) > MAX_RANK:
            raise RefusedError(f"{what} '{shown(name)}' has rank {len(shape)}; cgc's IR takes "
                               f"ranks up to {MAX_RANK}")
        return dtype, shape

    def run(self):
        graph = self.model.graph
        initializers = {t.name: t for t in graph.initializer}
        inputs = {vi.name for vi in graph.input}
        self.input_names = unique_names([vi.name for vi in graph.input if vi.name not in
                                         initializers and vi.name not in self.constants])
        self.g.names.update(self.input_names.values())
        for t in graph.initializer:
            array = self.numpy_helper.to_array(t)
            if t.name in inputs:  # a default (its type checked by computed_model)
                self.g.value[t.name] = self.g.input_with_default(array, t.name)
            else:
                self.g.value[t.name] = self.g.constant(array, t.name)
        for vi in graph.input:
            if vi.name in initializers:
                continue
            if vi.name in self.constants:
                self.g.value[vi.name] = self.g.constant(self.constants[vi.name], vi.name)
                continue
            dtype, shape = self.onnx_type(vi.name, "input")
            name = self.input_names[vi.name]
            self.g.inputs.append({"name": name, "dtype": dtype, "shape": shape})
            self.g.type[name] = (dtype, shape)
            self.g.value[vi.name] = name
        for k, node in enumerate(graph.node):
            self.import_node(node, k)
        for check in self.class_checks:
            self.check_loss_classes(check)
        outputs = []
        listed = set()
        for vi in graph.output:
            if vi.name in listed:
                raise RefusedError(f"output '{shown(vi.name)}' is listed twice among the "
                                   "graph's outputs")
            listed.add(vi.name)
            if vi.name not in self.g.value:
                raise RefusedError(f"output '{vi.name}' is not computed by the graph")
            outputs.append({"onnx": vi.name, "value": self.g.value[vi.name]})
        return outputs

    def check_loss_classes(self, check):
        """A loss's class operands against its input's classes, from the
        shapes the importer computed (what ONNX's inference left unknown
        when the loss was expanded)."""
        def shape(name):
            return self.g.type.get(self.g.value.get(name), (None, None))[1] if name else None
        dims = shape(check.input)
        if not dims or len(dims) < 2 or not isinstance(dims[1], int):
            return
        targets = self.g.known.get(self.g.value.get(check.targets)) if check.targets else None
        check_classes(check, dims[1], shape(check.weights),
                      None if targets is None else np.asarray(targets))

    def import_node(self, node, index):
        label = node_label(node, index)
        check_node(node, self.opset, label)  # function bodies' nodes too
        rule = ops.RULES.get(node.op_type)
        if rule is None:
            raise RefusedError(f"{label}: the ONNX operator {node.op_type} has no cgc mapping")
        self.g.loc = label  # A verifier's error on these nodes names the ONNX node.
        ins = [self.g.value.get(n) if n else None for n in node.input]
        for n, v in zip(node.input, ins):
            if n and v is None:
                raise RefusedError(f"{label}: operand '{n}' is not defined before it")
        attrs = {a.name: self.onnx.helper.get_attribute_value(a) for a in node.attribute}
        try:
            if self.fold(node, ins, attrs):
                return
            outs = rule(Context(self, node, label), ins, attrs)
        except RefusedError as e:
            located = RefusedError(f"{label}: {e}")
            located.operand = getattr(e, "operand", None)
            raise located from None
        except UNCHECKED as e:  # a check the rule lacks: refused, the cause kept
            raise RefusedError(f"{label}: {UNMAPPED} ({type(e).__name__}: "
                               f"{shown(str(e))})") from e
        for name, v in zip(node.output, outs):
            if name:
                self.g.value[name] = v
        for name in node.output[len(outs):]:
            if name:
                raise RefusedError(f"{label}: output '{name}' is not computed by cgc's mapping")
        for name in node.output:  # Types from ONNX's shape inference.
            v = self.g.value.get(name) if name else None
            if v and self.g.type.get(v, (None, None))[1] is None and name in self.value_types:
                self.g.type[v] = self.onnx_type(name, "value")


class Context:
    """What a mapping rule sees: the graph, the node and the ONNX types."""

    def __init__(self, importer, node, label):
        self.importer, self.node, self.label = importer, node, label
        self.g = importer.g
        self.opset = importer.opset

    def out_type(self, k=0):
        return self.importer.onnx_type(self.node.output[k], "result")

    def known(self, v, what):
        """The compile-time value of operand `v`."""
        if v not in self.g.known:
            also = (" ('" + v + "' is a graph input with a default, which the caller may "
                    "replace)") if v in self.g.defaults else ""
            error = RefusedError(f"{what} must be a constant (an initializer or a Constant "
                                 f"node): cgc compiles static shapes{also}")
            error.operand = v  # the value that must be known (test/onnx/node_tests.py)
            raise error
        return self.g.known[v]

    def op(self, op, inputs, attrs=None, k=0, typed=True):
        """The node's k-th result as cgc op `op` (typed from ONNX)."""
        dtype, shape = self.out_type(k) if typed else (None, None)
        name = self.node.output[k] if k < len(self.node.output) else self.node.op_type
        return self.g.op(op, inputs, attrs, dtype, shape, name=name)


def onnx_to_ir(model, name=None, constants=None, inline_limit=1024, input_shapes=None,
               renamed=None):
    """(ir dict, weights dict) for the ONNX ModelProto `model`; raises
    RefusedError saying what it cannot express. `constants` maps graph
    input names to arrays taken as constants; `input_shapes` gives the
    shapes of inputs with dynamic dims. `renamed`, a dict when given,
    receives {("input" or "output", ONNX name): IR name} for every graph
    input and output whose IR name differs from its ONNX name."""
    imp = Importer(model, constants, inline_limit, input_shapes)
    outputs = imp.run()
    g = imp.g
    output_names = unique_names([o["onnx"] for o in outputs])
    ir_outputs = []
    for o in outputs:
        out = output_names[o["onnx"]]
        ir_outputs.append(o["value"] if out == o["value"] else {"name": out, "value": o["value"]})
    if renamed is not None:
        for kind, names in (("input", imp.input_names), ("output", output_names)):
            renamed.update({(kind, n): ir for n, ir in names.items() if n != ir})
    ir = {"format_version": 1,
          "name": safe_name(name or model.graph.name or "onnx"),
          "inputs": g.inputs, "nodes": g.nodes, "outputs": ir_outputs}
    # The ONNX names the IR renamed, kept in the artifact's manifest.
    ir_names = {i["name"] for i in g.inputs} | set(output_names.values())
    sources = {ir_name: shown(onnx_name, limit=1000)
               for names in (imp.input_names, output_names)
               for onnx_name, ir_name in names.items()
               if ir_name != onnx_name and ir_name in ir_names}
    if sources:
        ir["source_names"] = dict(sorted(sources.items()))
    return ir, dict(g.weights)


def spelled_numbers(value):
    """`value` (the IR as dicts and lists) with every non-finite float
    spelled as the IR spells it: "inf", "-inf", "nan" (docs/ir.md)."""
    if isinstance(value, float):
        return value if np.isfinite(value) else json_number(value, "f32")
    if isinstance(value, dict):
        return {k: spelled_numbers(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [spelled_numbers(v) for v in value]
    return value


def write_ir(ir, weights, path):
    """Writes `ir` as JSON to `path` (and `weights` beside it), each file
    whole or not at all (written beside it, then renamed)."""
    if weights:
        wpath = os.path.splitext(path)[0] + ".safetensors"
        write_atomically(wpath, lambda f: write_safetensors(f, weights))
        ir = dict(ir, weights_file=os.path.basename(wpath))
    text = json.dumps(spelled_numbers(ir), indent=1, allow_nan=False) + "\n"
    write_atomically(path, lambda f: write_text(f, text))


def write_text(path, text):
    with open(path, "w") as f:
        f.write(text)


def write_atomically(path, write):
    """Calls write(temporary path) beside `path`, then renames it to
    `path`; removes the temporary file if anything (an interrupt too)
    stops it."""
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
