"""The ONNX fuzz target's mutations (onnx_target.py applies them): a
model's dims, dtypes, initializer values, attributes, wiring, op types and
opset, each a function (model, rng) -> what it did; `mutate` applies one
to three, weighted by MUTATORS. Deterministic for a given rng."""
import copy
import math

import numpy as np

import fuzzlib

INT_EDGES = [0, 1, -1, 2, 3, -2, 7, 2**31, -2**31, 2**62, -2**63 + 1]
FLOAT_EDGES = [0.0, -0.0, 1.0, -1.0, 1e-45, 1e30, math.inf, -math.inf, math.nan]
STRINGS = [b"", b"constant", b"reflect", b"edge", b"wrap", b"tanh", b"none", b"NOTSET",
           b"SAME_UPPER", b"VALID", b"linear", b"nearest", b"\x00\xff"]
NEW_ATTRS = {"axis": "i", "keepdims": "i", "to": "i", "select_last_index": "i", "group": "i",
             "noop_with_empty_axes": "i", "transA": "i", "transB": "i", "batch_dims": "i",
             "num_outputs": "i", "axes": "ints", "perm": "ints", "pads": "ints",
             "split": "ints", "alpha": "f", "beta": "f", "epsilon": "f", "mode": "s"}
SAME_ARITY = [["Relu", "Neg", "Abs", "Exp", "Log", "Sqrt", "Sigmoid", "Tanh", "Softmax",
               "Identity", "Floor", "Ceil", "Erf", "Gelu", "Not", "Sign", "Reciprocal",
               "ReduceSum", "ReduceMax", "ArgMax", "Flatten", "Transpose", "Cast", "Shape",
               "Size", "LogSoftmax", "Round", "IsNaN", "Softplus", "Squeeze", "TopK"],
              ["Add", "Sub", "Mul", "Div", "Pow", "MatMul", "Max", "Min", "Equal", "Less",
               "Greater", "And", "Or", "Mod", "Gather", "Reshape", "Expand", "Concat",
               "PRelu", "BitShift", "Sum", "Mean", "Tile", "Unsqueeze", "ReduceMean"],
              ["Where", "Gemm", "Clip", "Slice", "LayerNormalization", "Range",
               "ScatterElements", "Pad", "Resize", "Einsum"]]


# --- the corpus ------------------------------------------------------------

def value_infos(g):
    return [vi for vi in list(g.input) + list(g.output) + list(g.value_info)
            if vi.type.HasField("tensor_type")]


def available_names(g):
    names = [vi.name for vi in g.input] + [t.name for t in g.initializer]
    for n in g.node:
        names += [o for o in n.output if o]
    return names


def mutate_dim(model, rng):
    infos = [vi for vi in value_infos(model.graph) if vi.type.tensor_type.HasField("shape")]
    if not infos:
        return "no dims"
    vi = rng.choice(infos)
    dims = vi.type.tensor_type.shape.dim
    if not dims or rng.random() < 0.15:
        dims.add().dim_value = rng.choice([1, 2, 3])
        return f"dim added to '{vi.name}'"
    d = rng.choice(dims)
    if rng.random() < 0.1:
        d.dim_param = "N"
    else:
        d.dim_value = rng.choice([0, 1, 2, 3, 4, 5, 7, 64, -1, 2**31])
    return f"dim of '{vi.name}'"


def retyped_tensor(t, elem, rng):
    """The initializer `t` converted to ONNX type `elem` (its values cast
    where NumPy can, else only the type field changed)."""
    from onnx import helper, numpy_helper
    try:
        array = numpy_helper.to_array(t)
        np_type = helper.tensor_dtype_to_np_dtype(elem)
        with np.errstate(all="ignore"):
            new = numpy_helper.from_array(array.astype(np_type), t.name)
        t.CopyFrom(new)
    except Exception:  # noqa: BLE001 - a type NumPy lacks: a mismatched tensor
        t.data_type = elem
    return t


def mutate_dtype(model, rng):
    elem = rng.choice([1, 1, 10, 16, 6, 7, 7, 9, 11, 2, 3, 12, 13, 8])
    g = model.graph
    if g.initializer and rng.random() < 0.4:
        t = rng.choice(g.initializer)
        retyped_tensor(t, elem, rng)
        return f"initializer '{t.name}' retyped to {elem}"
    infos = value_infos(g)
    if not infos:
        return "no types"
    vi = rng.choice(infos)
    vi.type.tensor_type.elem_type = elem
    return f"type of '{vi.name}' set to {elem}"


def edge_of(dtype, rng):
    """The lowest or highest value of an integer or bool `dtype`."""
    if dtype.kind == "b":
        return rng.choice((False, True))
    info = np.iinfo(dtype)
    return rng.choice((info.min, info.max))


def mutate_tensor_values(t, rng):
    from onnx import numpy_helper
    try:
        array = numpy_helper.to_array(t).copy()
    except Exception:  # noqa: BLE001 - an unreadable tensor stays as it is
        return
    if array.dtype.kind in "OSU":  # strings: NumPy's edits would give object arrays
        return
    choice = rng.randrange(5)
    if choice == 0 and array.size:  # an edge value at a random place
        flat = array.reshape(-1)
        edges = FLOAT_EDGES if array.dtype.kind == "f" else INT_EDGES
        with np.errstate(all="ignore"):
            try:
                flat[rng.randrange(flat.size)] = rng.choice(edges)
            except (OverflowError, ValueError):  # past the dtype (unsigned, narrow)
                flat[rng.randrange(flat.size)] = edge_of(array.dtype, rng)
    elif choice == 1:  # another shape, the same data
        if array.size:
            array = array.reshape(-1)
    elif choice == 2:  # one element fewer or more
        array = array.reshape(-1)
        array = array[:-1] if array.size and rng.random() < 0.5 else np.concatenate([array, array[:1]])
    elif choice == 3:  # dims that disagree with the data
        dims = list(t.dims) or [1]
        dims[rng.randrange(len(dims))] = rng.choice([0, 2, 1000, 2**40])
        del t.dims[:]
        t.dims.extend(dims)
        return
    else:  # all zeros or negative
        array = np.zeros_like(array) if rng.random() < 0.5 else -array if array.dtype.kind != "b" else array
    try:
        t.CopyFrom(numpy_helper.from_array(array, t.name))
    except (NotImplementedError, TypeError, ValueError):  # a dtype from_array cannot write
        return


def mutate_initializer(model, rng):
    g = model.graph
    if not g.initializer:
        return "no initializer"
    k = rng.randrange(len(g.initializer))
    t = g.initializer[k]
    r = rng.random()
    if r < 0.15:
        del g.initializer[k]
        return f"initializer '{t.name}' dropped"
    if r < 0.25:  # also a graph input (a default the caller may override)
        from onnx import helper
        g.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
        return f"initializer '{t.name}' also an input"
    mutate_tensor_values(t, rng)
    return f"initializer '{t.name}' values"


def mutate_input_to_initializer(model, rng):
    """A graph input made an initializer of random values of its type."""
    from onnx import helper, numpy_helper
    g = model.graph
    inits = {t.name for t in g.initializer}
    inputs = [k for k, vi in enumerate(g.input) if vi.name not in inits]
    if not inputs:
        return "no input"
    k = rng.choice(inputs)
    vi = g.input[k]
    tt = vi.type.tensor_type
    shape = [d.dim_value if d.HasField("dim_value") else 1 for d in tt.shape.dim]
    try:
        np_type = helper.tensor_dtype_to_np_dtype(tt.elem_type)
        values = np.random.default_rng(rng.getrandbits(32)).integers(-2, 4, shape).astype(np_type)
        g.initializer.append(numpy_helper.from_array(values, vi.name))
    except Exception:  # noqa: BLE001 - no NumPy type or an impossible shape
        return "input kept"
    del g.input[k]
    return f"input '{vi.name}' made an initializer"


def attribute_value(kind, rng):
    if kind == "i":
        return rng.choice(INT_EDGES + [rng.randint(-4, 4)] * 4)
    if kind == "f":
        return rng.choice(FLOAT_EDGES + [rng.uniform(-2, 2)])
    if kind == "s":
        return rng.choice(STRINGS)
    return [rng.randint(-3, 3) for _ in range(rng.randint(0, 4))]


def mutate_attribute(model, rng):
    from onnx import AttributeProto as A, helper
    g = model.graph
    if not g.node:
        return "no node"
    node = rng.choice(g.node)
    r = rng.random()
    if node.attribute and r < 0.7:
        a = rng.choice(node.attribute)
        if a.type == A.INT:
            value = rng.choice([a.i + 1, a.i - 1, -a.i, attribute_value("i", rng)])
            a.i = max(-2**63, min(2**63 - 1, value))  # an int64 (INT64_MIN - 1 raised)
        elif a.type == A.FLOAT:
            a.f = rng.choice([-a.f, a.f * 1e30, attribute_value("f", rng)])
        elif a.type == A.STRING:
            a.s = attribute_value("s", rng)
        elif a.type == A.INTS:
            values = fuzzlib.mutate_list(a.ints, rng, lambda v: rng.choice(INT_EDGES),
                                         lambda vs: [-v for v in vs])
            del a.ints[:]
            a.ints.extend(values)
        elif a.type == A.FLOATS:
            values = list(a.floats) or [0.0]
            values[rng.randrange(len(values))] = rng.choice(FLOAT_EDGES)
            del a.floats[:]
            a.floats.extend(values)
        elif a.type == A.TENSOR:
            mutate_tensor_values(a.t, rng)
        else:
            return f"attribute '{a.name}' of {node.op_type} kept"
        return f"attribute '{a.name}' of {node.op_type}"
    if node.attribute and r < 0.8:
        k = rng.randrange(len(node.attribute))
        name = node.attribute[k].name
        del node.attribute[k]
        return f"attribute '{name}' of {node.op_type} dropped"
    name, kind = rng.choice(sorted(NEW_ATTRS.items()))
    if any(a.name == name for a in node.attribute):
        return "attribute present"
    types = {"i": A.INT, "f": A.FLOAT, "s": A.STRING, "ints": A.INTS}
    node.attribute.append(helper.make_attribute(name, attribute_value(kind, rng),
                                                attr_type=types[kind]))
    return f"attribute '{name}' added to {node.op_type}"


def mutate_wiring(model, rng):
    g = model.graph
    if not g.node:
        return "no node"
    k = rng.randrange(len(g.node))
    node = g.node[k]
    r = rng.random()
    if r < 0.45 and node.input:
        j = rng.randrange(len(node.input))
        names = available_names(g) + ["", "undefined"]
        node.input[j] = rng.choice(names)
        return f"input #{j} of {node.op_type} rewired"
    if r < 0.6:
        if rng.random() < 0.5:
            node.input.append(rng.choice(available_names(g)))
        elif node.input:
            del node.input[-1]
        return f"operands of {node.op_type} changed"
    if r < 0.72 and len(g.node) > 1:
        del g.node[k]
        return f"{node.op_type} dropped"
    if r < 0.84:
        dup = copy.deepcopy(node)
        if rng.random() < 0.5:
            for j, o in enumerate(dup.output):
                dup.output[j] = o + "_dup" if o else o
        g.node.insert(rng.randrange(len(g.node) + 1), dup)
        return f"{node.op_type} duplicated"
    if r < 0.92 and len(g.node) > 1:
        j = rng.randrange(len(g.node))
        a, b = copy.deepcopy(g.node[k]), copy.deepcopy(g.node[j])
        g.node[k].CopyFrom(b)
        g.node[j].CopyFrom(a)
        return "nodes swapped"
    from onnx import helper
    if node.output and node.output[0] and rng.random() < 0.7:  # an intermediate value as output
        g.output.append(helper.make_tensor_value_info(node.output[0], 0, None))
        return f"output of {node.op_type} made a graph output"
    if len(g.output) > 1:
        del g.output[rng.randrange(len(g.output))]
        return "graph output dropped"
    return "wiring kept"


def mutate_op_type(model, rng):
    g = model.graph
    if not g.node:
        return "no node"
    node = rng.choice(g.node)
    group = next((grp for grp in SAME_ARITY if node.op_type in grp), rng.choice(SAME_ARITY))
    old, node.op_type = node.op_type, rng.choice(group)
    return f"{old} became {node.op_type}"


def mutate_opset(model, rng):
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = rng.choice([1, 5, 7, 9, 11, 12, 13, 17, 18, 20, 21, 23, 26, 0, 1000])
            return f"opset {o.version}"
    return "no opset"


MUTATORS = [(mutate_dim, 3), (mutate_dtype, 2), (mutate_attribute, 4), (mutate_initializer, 3),
            (mutate_input_to_initializer, 1), (mutate_wiring, 4), (mutate_op_type, 1),
            (mutate_opset, 1)]


def mutate(model, rng):
    """Applies one to three weighted mutations; returns what they did."""
    done = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        fn = rng.choices([m for m, _ in MUTATORS], [w for _, w in MUTATORS])[0]
        done.append(fn(model, rng))
    return done
