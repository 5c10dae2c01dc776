"""ONNX operators that ONNX itself defines as functions of other operators
(Attention, NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss, ...):
where cgc has no rule for one, the node is replaced by its function body
before import, so that each of the body's operators maps by its own rule.

The body is the schema's function for the model's opset (the newest
function version not above it), a context-dependent one built from the
node's attributes and its inputs' types where ONNX has that. Its inputs
and outputs are renamed to the node's, its internal values get a prefix
unique in the graph, attribute references take the node's attributes
(else the function's or the operator's defaults), and its nodes are named after the expanded node (refusals name both).
Expansion repeats (a body may hold other functions) with shape inference
between rounds, until no node is left to expand.
"""
import copy

MAX_ROUNDS = 8


def expand_functions(model, has_rule, infer, deferred=None):
    """`model` with every function operator that `has_rule` rejects
    replaced by its body; `infer` runs shape inference on a model. A
    loss's class check that needs a shape inference did not give is
    appended to `deferred` (a list) as a ClassCheck, for the importer to
    run once its own shapes are known (check_classes)."""
    import onnx
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    for round_ in range(MAX_ROUNDS):
        types = value_types(model)
        taken = value_names(model)
        nodes, changed = [], False
        for k, node in enumerate(model.graph.node):
            body = None
            if node.domain in ("", "ai.onnx") and not has_rule(node.op_type):
                check_class_operands(onnx, model, node, k, types, deferred)
                body = function_body(onnx, node, opset, types)
            if body is None:
                nodes.append(node)
                continue
            prefix = f"{node.op_type}_{round_}_{k}__"
            while any(name.startswith(prefix) for name in taken):
                prefix += "_"
            nodes.extend(inline(node, body, prefix))
            changed = True
        if not changed:
            return model
        model = copy.deepcopy(model)
        del model.graph.node[:]
        model.graph.node.extend(nodes)
        model = infer(model)
    return model


def value_names(model):
    """Every value name the graph uses."""
    names = {vi.name for vi in list(model.graph.input) + list(model.graph.output)}
    names.update(t.name for t in model.graph.initializer)
    for node in model.graph.node:
        names.update(node.input)
        names.update(node.output)
    return names


def value_types(model):
    """The TypeProto of every value the model's shape inference typed."""
    import onnx
    types = {vi.name: vi.type for vi in list(model.graph.value_info) + list(model.graph.input)
             + list(model.graph.output)}
    for t in model.graph.initializer:
        types[t.name] = onnx.helper.make_tensor_type_proto(t.data_type, list(t.dims))
    return types


# The losses' class operands, which their function bodies read with a
# Gather (where an index out of range would read zero): (the operator,
# the position of its class weights, of its targets).
CLASS_OPERANDS = {"NegativeLogLikelihoodLoss": (2, 1), "SoftmaxCrossEntropyLoss": (2, 1)}


class ClassCheck:
    """A loss's class operands, to check against its input's classes
    (check_classes): the node's label, its input, class weights and
    targets (value names, "" where absent) and its ignore_index."""

    def __init__(self, label, input, weights, targets, ignore):
        self.label, self.input, self.weights = label, input, weights
        self.targets, self.ignore = targets, ignore


def check_class_operands(onnx, model, node, index, types, deferred=None):
    """Refuses a loss whose class weights are not [C] (C: dim 1 of its
    input) or whose constant targets lie outside [0, C) other than its
    ignore_index. Where shape inference did not give C or the weights'
    shape, the check goes to `deferred` (when given)."""
    from ..errors import RefusedError
    positions = CLASS_OPERANDS.get(node.op_type)
    if positions is None or not node.input:
        return
    weights, targets = (node.input[p] if len(node.input) > p else "" for p in positions)
    check = ClassCheck(f"node '{node.name or node.op_type + '_' + str(index)}' ({node.op_type})",
                       node.input[0], weights, targets,
                       next((a.i for a in node.attribute if a.name == "ignore_index"), None))
    classes = static_dims(types.get(node.input[0]))
    classes = classes[1] if classes and len(classes) > 1 else None
    weight_shape = static_dims(types.get(weights)) if weights else None
    if deferred is not None and (not classes or (weights and (weight_shape is None
                                                              or None in weight_shape))):
        deferred.append(check)
    if not classes:
        return
    constant = next((t for t in model.graph.initializer if t.name == targets), None)
    check_classes(check, classes, weight_shape if weight_shape and None not in weight_shape
                  else None, None if constant is None else onnx.numpy_helper.to_array(constant))


def static_dims(type_proto):
    """The dims of a tensor TypeProto (None for a dim not static), or None
    without a shape."""
    if type_proto is None or not type_proto.tensor_type.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else None
            for d in type_proto.tensor_type.shape.dim]


def check_classes(check, classes, weight_shape, targets):
    """Refuses class weights whose static shape `weight_shape` is not
    [classes], and `targets` (an array, known at compile time) outside
    [0, classes) other than the ignore_index. None: not known."""
    from ..errors import RefusedError
    if weight_shape is not None and list(weight_shape) != [classes]:
        raise RefusedError(f"{check.label}: class weights of shape {list(weight_shape)}; the "
                           f"input has {classes} classes")
    if targets is not None:
        bad = [int(v) for v in targets.reshape(-1) if not 0 <= v < classes and v != check.ignore]
        if bad:
            raise RefusedError(f"{check.label}: target {bad[0]} outside [0, {classes}) (and not "
                               "the ignore_index)")


def function_body(onnx, node, opset, types):
    """The FunctionProto that defines `node` at `opset`, or None (no such
    schema or function, or an input of unknown type)."""
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, "")
    except onnx.defs.SchemaError:
        return None
    plain = [v for v in schema.function_opset_versions if v <= opset]
    if plain:
        text = schema.get_function_with_opset_version(max(plain))
    else:
        dependent = [v for v in schema.context_dependent_function_opset_versions if v <= opset]
        if not dependent:
            return None
        if any(name and name not in types for name in node.input):
            return None
        input_types = [types[name].SerializeToString() if name else
                       onnx.TypeProto().SerializeToString() for name in node.input]
        text = schema.get_context_dependent_function_with_opset_version(
            max(dependent), node.SerializeToString(), input_types)
    body = onnx.FunctionProto()
    body.ParseFromString(text)
    if not body.node:  # ONNX could not build it (a missing attribute): left to refuse
        return None
    for name, attr in schema.attributes.items():  # the operator's defaults, for the body
        default = attr.default_value
        if default.type and all(a.name != name for a in body.attribute_proto):
            default = copy.deepcopy(default)
            default.name = name
            body.attribute_proto.append(default)
    return body


def inline(node, body, prefix):
    """The body's nodes, wired to `node`'s inputs and outputs."""
    names = {formal: (node.input[k] if k < len(node.input) else "")
             for k, formal in enumerate(body.input)}
    for k, formal in enumerate(body.output):
        if k < len(node.output) and node.output[k]:
            names[formal] = node.output[k]
    attributes = {a.name: a for a in body.attribute_proto}  # the function's defaults
    attributes.update((a.name, a) for a in node.attribute)

    def rename(name):
        if name in names:
            return names[name]
        return prefix + name if name else ""

    owner = node.name or node.op_type
    out = []
    for k, part in enumerate(body.node):
        new = copy.deepcopy(part)
        del new.input[:], new.output[:], new.attribute[:]
        new.input.extend(rename(n) for n in part.input)
        new.output.extend(rename(n) for n in part.output)
        for a in part.attribute:
            if a.ref_attr_name:
                if a.ref_attr_name in attributes:
                    given = copy.deepcopy(attributes[a.ref_attr_name])
                    given.name = a.name
                    new.attribute.append(given)
            else:
                new.attribute.append(copy.deepcopy(a))
        new.name = f"{owner}/{part.name or part.op_type + '_' + str(k)}"
        out.append(new)
    return out
