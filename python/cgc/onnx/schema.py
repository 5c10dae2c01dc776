"""Every node checked against its ONNX schema before anything reads it.

Run on the model after model-local functions are inlined and before ONNX's
shape inference (whose C++ can crash on malformed nodes of other domains):
a node of a domain other than ONNX's own ('' or 'ai.onnx') is refused; an
ONNX node must have a schema in the model's opset, operand and result
counts within the schema's (an optional operand left out is spelled ''; a
required one may not be), each attribute known to the schema, given once,
of the schema's type, and every required attribute given. Graphs held in
attributes (If, Loop, Scan) are checked the same way. What a schema cannot
say (ranks, axis ranges, attribute values) the operator rules check,
except one thing ONNX's inference would choke on first: a shape operand
(ConstantOfShape's, Expand's, Reshape's, AffineGrid's size) declared
longer than cgc's rank limit, whose inference builds a shape of that rank
(an AffineGrid size of [2^31] took minutes and tens of GB).
"""
import math

from .limits import MAX_RANK
from .names import shown
from ..errors import RefusedError

ONNX_DOMAINS = ("", "ai.onnx")
# Operand index of the 1-D value whose length is the rank of the result.
SHAPE_OPERANDS = {"ConstantOfShape": 0, "Expand": 1, "Reshape": 1, "AffineGrid": 1}


def node_label(node, index):
    """How refusals name a node: its name, else its operator and position."""
    return f"node '{shown(node.name or node.op_type + '_' + str(index))}' ({shown(node.op_type)})"


def check_nodes(model, mapped):
    """Refuses the first node of `model` (its graph and subgraphs) that
    does not fit its schema (see the module's docstring) or reads a value
    not defined before it, and the first node of its main graph that cgc
    cannot map: `mapped(op_type)` is false and ONNX defines no function
    for it (refused before ONNX's shape inference, which can hang on what
    cgc does not take, such as a Loop over sequences)."""
    check_graph(model.graph, onnx_opset(model), set(), mapped)


def onnx_opset(model):
    return next((o.version for o in model.opset_import if o.domain in ONNX_DOMAINS), 1)


def check_graph(graph, opset, outer, mapped=None):
    """`outer`: the names a subgraph sees from the graphs around it."""
    defined = set(outer)
    own = check_listed_once(graph)
    defined.update(own)
    lengths = declared_lengths(graph)
    for index, node in enumerate(graph.node):
        label = node_label(node, index)
        for name in filter(None, node.output):  # ("": an optional output left out)
            if name in own:
                raise RefusedError(f"{label}: output '{shown(name)}' is defined before it")
            own.add(name)
        check_node(node, opset, label, mapped)
        check_shape_operand(node, lengths, label)
        for name in node.input:
            if name and name not in defined:
                raise RefusedError(f"{label}: operand '{shown(name)}' is not defined before it")
        for a in node.attribute:
            for sub in list(a.graphs) + ([a.g] if a.HasField("g") else []):
                check_graph(sub, opset, defined)
        defined.update(name for name in node.output if name)


def check_listed_once(graph):
    """The names `graph` defines before its nodes, refused where a graph
    input or an initializer is listed twice (an initializer may also be
    an input: the input's default)."""
    initializers = [t.name for t in graph.initializer] + \
        [t.values.name for t in graph.sparse_initializer]
    for kind, names in (("graph input", [vi.name for vi in graph.input]),
                        ("initializer", initializers)):
        seen = set()
        for name in names:
            if name in seen:
                raise RefusedError(f"{kind} '{shown(name)}' is listed twice")
            seen.add(name)
    return {vi.name for vi in graph.input} | set(initializers)


def declared_lengths(graph):
    """The declared length of every 1-D value of `graph` (inputs, value_info
    and initializers) whose length is known."""
    lengths = {}
    for vi in list(graph.input) + list(graph.value_info):
        dims = vi.type.tensor_type.shape.dim if vi.type.HasField("tensor_type") else []
        if len(dims) == 1 and dims[0].HasField("dim_value"):
            lengths[vi.name] = dims[0].dim_value
    for t in graph.initializer:
        if len(t.dims) == 1:
            lengths[t.name] = t.dims[0]
    return lengths


def check_shape_operand(node, lengths, label):
    index = SHAPE_OPERANDS.get(node.op_type)
    if index is None or index >= len(node.input):
        return
    length = lengths.get(node.input[index])
    if length is not None and length > MAX_RANK:
        raise RefusedError(f"{label}: its shape operand '{shown(node.input[index])}' has "
                           f"{length} elements: a result of rank {length} (cgc's tensors have at "
                           f"most {MAX_RANK} dims)")


def check_node(node, opset, label, mapped=None):
    """Raises RefusedError, starting with `label`, where `node` does not fit
    the schema of its operator in `opset` (or, given `mapped`, where cgc
    cannot map it)."""
    import onnx
    from onnx import defs
    if node.domain not in ONNX_DOMAINS:
        raise RefusedError(f"{label}: operators of domain '{shown(node.domain)}' have no cgc mapping")
    try:
        schema = defs.get_schema(node.op_type, opset, "")
    except defs.SchemaError:
        raise RefusedError(f"{label}: ONNX has no operator {shown(node.op_type)} "
                           f"in opset {opset}") from None
    if mapped is not None and not mapped(node.op_type) and not (
            schema.has_function or schema.has_context_dependent_function):
        raise RefusedError(f"{label}: the ONNX operator {shown(node.op_type)} has no cgc mapping")
    check_operands(node, schema, label)
    check_attributes(onnx, node, schema, label)


def check_operands(node, schema, label):
    given = len(node.input)
    if not schema.min_input <= given <= schema.max_input:
        raise RefusedError(f"{label}: {given} operands; {counted(schema.min_input, schema.max_input)}")
    for k, name in enumerate(node.input):
        formal = schema.inputs[min(k, len(schema.inputs) - 1)]
        if not name and formal.option != defs_option("Optional"):
            raise RefusedError(f"{label}: operand {k} ('{formal.name}') is required "
                               f"but not given")
    results = len(node.output)
    if not schema.min_output <= results <= schema.max_output:
        raise RefusedError(f"{label}: {results} results; "
                           f"{counted(schema.min_output, schema.max_output)}")
    for k, name in enumerate(node.output):
        formal = schema.outputs[min(k, len(schema.outputs) - 1)]
        if not name and formal.option != defs_option("Optional"):
            raise RefusedError(f"{label}: result {k} ('{formal.name}') is required "
                               f"but not named")


def defs_option(name):
    from onnx import defs
    return getattr(defs.OpSchema.FormalParameterOption, name)


def counted(low, high):
    if low == high:
        return f"the operator takes {low}"
    if high >= 2**31 - 1:
        return f"the operator takes at least {low}"
    return f"the operator takes {low} to {high}"


def check_attributes(onnx, node, schema, label):
    seen = set()
    for a in node.attribute:
        spec = schema.attributes.get(a.name)
        if spec is None:
            raise RefusedError(f"{label}: the operator has no attribute '{shown(a.name)}'")
        if a.name in seen:
            raise RefusedError(f"{label}: attribute '{shown(a.name)}' is given twice")
        seen.add(a.name)
        if a.ref_attr_name:
            raise RefusedError(f"{label}: attribute '{shown(a.name)}' refers to a function's "
                               f"attribute '{shown(a.ref_attr_name)}' outside a function")
        if a.type != spec.type.value:
            raise RefusedError(f"{label}: attribute '{shown(a.name)}' is of type "
                               f"{type_name(onnx, a.type)}; the operator takes "
                               f"{type_name(onnx, spec.type.value)}")
    for name, spec in schema.attributes.items():
        if spec.required and name not in seen:
            raise RefusedError(f"{label}: the required attribute '{name}' is not given")
    check_attribute_values(onnx, node, label)


# Attributes whose values ONNX's schemas do not check: (test of the value
# and the node, what the operator takes). They are checked before ONNX's
# shape inference, whose C++ asserts or fails on some (Split's
# num_outputs, a Cast to element type 0, Attention's kv_num_heads of 0
# divides by zero). A negative Attention softcap:
# ONNX's function body skips it where onnx.reference applies it.
REDUCTIONS = (lambda v, node: v in ("none", "sum", "mean"), "'none', 'sum' or 'mean'")
ELEMENT_TYPE = (lambda v, node: is_element_type(v), "an ONNX element type")
FLAG = (lambda v, node: v in (0, 1), "0 or 1")
# The activations' coefficients: a NaN or an infinity has no agreed result
# (alpha * x at x = 0, or inf - inf, differ between formulas of one op).
FINITE = (lambda v, node: math.isfinite(v), "a finite number")
# Integer attributes the spec defines as 0 or 1 (onnx.reference takes any
# nonzero as 1; a rule may test == 1).
FLAGS = {("Attention", "is_causal"), ("Mod", "fmod"), ("Gemm", "transA"), ("Gemm", "transB"),
         ("CumSum", "exclusive"), ("CumSum", "reverse"), ("ArgMax", "keepdims"),
         ("ArgMin", "keepdims"), ("ArgMax", "select_last_index"),
         ("ArgMin", "select_last_index"), ("Trilu", "upper"),
         ("TopK", "largest"), ("TopK", "sorted"),
         } | {
    (op, attr) for op in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                          "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
                          "ReduceSumSquare")
    for attr in ("keepdims", "noop_with_empty_axes")}
ATTRIBUTE_VALUES = {
    ("NegativeLogLikelihoodLoss", "reduction"): REDUCTIONS,
    ("SoftmaxCrossEntropyLoss", "reduction"): REDUCTIONS,
    ("Attention", "softcap"): (lambda v, node: v >= 0, "a softcap of at least 0"),
    ("Attention", "qk_matmul_output_mode"): (lambda v, node: v in (0, 1, 2, 3), "0, 1, 2 or 3"),
    ("Attention", "q_num_heads"): (lambda v, node: v > 0, "a positive number of heads"),
    ("Attention", "kv_num_heads"): (lambda v, node: v > 0, "a positive number of heads"),
    ("Split", "num_outputs"): (lambda v, node: v == len(node.output),
                               "the number of its results"),
    ("Pad", "mode"): (lambda v, node: v in ("constant", "reflect", "edge", "wrap"),
                      "'constant', 'reflect', 'edge' or 'wrap'"),
    **{(op, attr): FINITE for op, attr in (
        ("Selu", "alpha"), ("Selu", "gamma"), ("Elu", "alpha"), ("Celu", "alpha"),
        ("LeakyRelu", "alpha"), ("HardSigmoid", "alpha"), ("HardSigmoid", "beta"),
        ("ThresholdedRelu", "alpha"))},
    ("Gelu", "approximate"): (lambda v, node: v in ("none", "tanh"), "'none' or 'tanh'"),
    ("Cast", "to"): ELEMENT_TYPE,
    ("EyeLike", "dtype"): ELEMENT_TYPE,
    ("RandomNormal", "dtype"): ELEMENT_TYPE,
    ("RandomUniform", "dtype"): ELEMENT_TYPE,
    ("RandomNormalLike", "dtype"): ELEMENT_TYPE,
    ("RandomUniformLike", "dtype"): ELEMENT_TYPE,
    ("Multinomial", "dtype"): ELEMENT_TYPE,
    ("Bernoulli", "dtype"): ELEMENT_TYPE,
}


def is_element_type(value):
    """A TensorProto.DataType other than UNDEFINED."""
    import onnx
    return value != onnx.TensorProto.UNDEFINED and value in onnx.TensorProto.DataType.values()


def check_attribute_values(onnx, node, label):
    for a in node.attribute:
        rule = ATTRIBUTE_VALUES.get((node.op_type, a.name)) or \
            (FLAG if (node.op_type, a.name) in FLAGS else None)
        if rule is None:
            continue
        value = onnx.helper.get_attribute_value(a)
        value = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        test, takes = rule
        if not test(value, node):
            raise RefusedError(f"{label}: attribute '{a.name}' is '{shown(str(value))}'; "
                               f"the operator takes {takes}")


def type_name(onnx, attribute_type):
    names = onnx.AttributeProto.AttributeType
    try:
        return names.Name(int(attribute_type))
    except ValueError:
        return f"unknown ({int(attribute_type)})"
