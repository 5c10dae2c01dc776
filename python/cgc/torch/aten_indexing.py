"""ATen rules for ranges, indexing, padding and masks, each a composition
of cgc ops (aten_rules.py has the one-op rules): arange, index.Tensor
(advanced indexing by integer tensors), gather (take-along-dim), argmax,
max and min (with their indices), cumsum, constant_pad_nd, squeeze.dims,
index_select, repeat and the bitwise ops (the writes at indices are in
aten_scatter.py).
Indices are wrapped like PyTorch's (a negative one counts from the end):
a `gather` along one dim wraps a negative index itself (docs/ir.md);
a linear index over several dims wraps each one here. An index still
out of range when the graph runs reads zero, where PyTorch raises a
device-side assertion."""
from .aten_rules import ATEN, reduced_axes, reshape
from .. import indexed
from ..ir_builder import json_number, registrar
from ..dtypes import INTEGERS
from ..errors import RefusedError
from .record import RecordNode, Sym

aten = registrar(ATEN)


def static_extents(e, shape, what):
    """`shape` as ints, refused where a dim is symbolic (strides of a
    flattened index need every extent)."""
    if not all(isinstance(d, int) for d in shape):
        raise RefusedError(f"{what} over the dynamic shape {shape} (cgc computes the flat "
                           "index from static extents)")
    return shape


def wrapped_index(e, index, extent):
    """An integer index tensor as i64 with negative entries counted from
    `extent` (an int) as PyTorch does."""
    return indexed.wrapped(e, e.as_dtype(index, "i64"), extent)[0]


def number(value, what):
    if isinstance(value, Sym) or isinstance(value, RecordNode):
        raise RefusedError(f"{what} computed when the graph runs (cgc takes a number)")
    return value


@aten("arange", "arange.start", "arange.start_step")
def arange(e, n):
    """start + step * iota over the result's extent (its shape, possibly
    a dim, comes from the export)."""
    dtype, shape = e.type_of(n)
    args = list(n.args)
    start = number(args[0], "an arange start") if len(args) >= 2 else 0
    step = number(args[2] if len(args) >= 3 else n.kwargs.get("step", 1), "an arange step")
    compute = "i64" if dtype in INTEGERS else "f32"
    out = e.op("iota", [], {"dtype": compute, "shape": shape, "axis": 0})
    if step != 1:
        out = e.op("mul", [out, e.scalar(step, compute)])
    if start != 0:
        out = e.op("add", [out, e.scalar(start, compute)])
    return out if compute == dtype else e.op("cast", [out], {"dtype": dtype}, name=n.name)


@aten("eye", "eye.m")
def eye(e, n):
    """torch.eye(n[, m]): ones where the row index equals the column's
    (kept whole by the capture)."""
    dtype, shape = e.type_of(n)
    rows, cols = (e.op("iota", [], {"dtype": "i64", "shape": shape, "axis": axis})
                  for axis in (0, 1))
    same = e.op("eq", [rows, cols])
    return same if dtype == "bool" else e.op("cast", [same], {"dtype": dtype}, name=n.name)


@aten("squeeze.dims")
def squeeze_dims(e, n):
    return reshape(e, n)


@aten("index.Tensor")
def index_tensor(e, n):
    """x[i0, i1, ...] with integer index tensors (None: a whole dim), as
    NumPy's advanced indexing: the indexed dims move first (or stay in
    place where they are adjacent), read by `linear_gather` where they
    are static, else by `orthogonal_gathers`."""
    x, indices = n.args[0], list(n.args[1])
    shape = e.shape(x)
    rank = len(shape)
    indices += [None] * (rank - len(indices))
    indexed = [k for k, i in enumerate(indices) if i is not None]
    for k in indexed:
        if e.dtype(indices[k]) not in INTEGERS:
            raise RefusedError(f"indexing by a {e.dtype(indices[k])} tensor (a mask selects a "
                               "data-dependent number of elements; index by integers)")
    if len(indexed) == 1:  # One index tensor: a gather along its dim.
        k = indexed[0]
        out = e.op("gather", [e.operand(x), e.as_dtype(indices[k], "i64")], {"axis": k})
        return e.op("reshape", [out], {"shape": e.shape(n)}, name=n.name)
    rest = [k for k in range(rank) if k not in indexed]
    source = e.operand(x)
    if indexed + rest != list(range(rank)):
        source = e.op("transpose", [source], {"perm": indexed + rest})
    index_list = [indices[k] for k in indexed]
    if all(isinstance(shape[k], int) for k in indexed):
        out = linear_gather(e, source, index_list, [shape[k] for k in indexed],
                            [shape[k] for k in rest])
    else:
        out = orthogonal_gathers(e, source, index_list, [shape[k] for k in indexed],
                                 [shape[k] for k in rest])
    adjacent = indexed == list(range(indexed[0], indexed[-1] + 1))
    if adjacent and indexed[0] > 0:  # The index dims stay where the indexed ones were.
        width = len(e.shape(n)) - len(rest)
        before = indexed[0]
        perm = list(range(width, width + before)) + list(range(width)) + \
            list(range(width + before, width + len(rest)))
        out = e.op("transpose", [out], {"perm": perm})
    return e.op("reshape", [out], {"shape": e.shape(n)}, name=n.name)


def linear_gather(e, source, index_list, extents, rest):
    """source (indexed dims first, static) flattened over its indexed dims,
    gathered at the linear index sum(i_k * stride_k): the index's
    broadcast shape, then the rest."""
    linear, stride = None, 1
    for index, extent in reversed(list(zip(index_list, extents))):
        term = wrapped_index(e, index, extent)
        if stride != 1:
            term = e.op("mul", [term, e.scalar(stride, "i64")])
        linear = term if linear is None else e.op("add", [term, linear])
        stride *= extent
    source = e.op("reshape", [source], {"shape": [stride] + rest})
    return e.op("gather", [source, linear], {"axis": 0})


def orthogonal_gathers(e, source, index_list, dims, rest):
    """The indexing where an indexed dim is dynamic (no static stride):
    possible when the index tensors are orthogonal, each varying along at
    most one axis of their broadcast shape and no two along the same one
    (`mask[arange(b)[:, None], arange(s)[None, :]]`, as transformers'
    masks index). One `gather` per index along its dim `dims[k]` (gather
    wraps a negative index; none for an arange over the whole dim), then the gathered dims ordered by their axis and
    reshaped into the broadcast shape; the rest follow."""
    shapes = [e.shape(i) for i in index_list]
    width = max(len(s) for s in shapes)
    axes = []
    for index, ishape in zip(index_list, shapes):
        varying = [width - len(ishape) + a for a, d in enumerate(ishape) if d != 1]
        if len(varying) > 1 or set(varying) & set(axes):
            raise RefusedError(f"advanced indexing of a dynamic dim by index tensors of shapes "
                               f"{shapes} (cgc indexes a dynamic dim only by orthogonal "
                               "indices, each varying along its own axis)")
        axes.append(varying[0] if varying else None)
    out = source
    for k, (index, ishape, axis) in enumerate(zip(index_list, shapes, axes)):
        extent = ishape[axis - (width - len(ishape))] if axis is not None else 1
        if extent == dims[k] and whole_range(e, index, extent):
            continue  # arange over the whole dim: it stays as it is.
        flat = e.op("reshape", [e.as_dtype(index, "i64")], {"shape": [extent]})
        out = e.op("gather", [out, flat], {"axis": k})
    order = sorted(range(len(axes)), key=lambda k: (axes[k] is None, axes[k] or 0, k))
    if order != list(range(len(axes))):
        out = e.op("transpose", [out], {"perm": order + list(range(len(axes),
                                                                   len(axes) + len(rest)))})
    broadcast = [1] * width
    for index, ishape, axis in zip(index_list, shapes, axes):
        if axis is not None:
            broadcast[axis] = ishape[axis - (width - len(ishape))]
    return e.op("reshape", [out], {"shape": broadcast + rest})


# Record ops that keep an integer range's values in order.
RANGE_KEEPING = ("aten.unsqueeze.default", "aten.view.default", "aten.reshape.default",
                 "aten.alias.default", "aten.clone.default", "aten._to_copy.default")


def whole_range(e, index, extent):
    """Whether the record node `index` holds 0, 1, ..., extent - 1 in
    order: an integer arange from 0 by 1 over `extent`, through views
    (one varying axis, checked by the caller), copies and `+ 0`
    (transformers' `arange(kv_length) + kv_offset`)."""
    n = index
    while isinstance(n, RecordNode) and e.dtype(n) in INTEGERS:
        if n.target in RANGE_KEEPING:
            n = n.args[0]
        elif n.target == "aten.add.Tensor" and len(n.args) == 2 and n.args[1] == 0 and \
                not isinstance(n.args[1], bool):
            n = n.args[0]
        elif n.target.startswith("aten.arange"):
            args = list(n.args)
            start = args[0] if len(args) >= 2 else 0
            step = args[2] if len(args) >= 3 else n.kwargs.get("step", 1)
            return start == 0 and step == 1 and not isinstance(start, bool) and \
                e.shape(n) == [extent]
        else:
            return False
    return False


@aten("gather")
def take_along_dim(e, n):
    """torch.gather(x, dim, index): out[..., j, ...] = x[..., index[..., j, ...], ...]
    along `dim` (indexed.py: one `gather` of x flattened)."""
    x, dim, index = n.args[:3]
    shape = static_extents(e, e.shape(x), "gather")
    ishape = static_extents(e, e.shape(index), "gather")
    if not shape:
        return e.operand(x)
    out = indexed.gathered_elements(e, e.operand(x), shape, e.dtype(n), dim % len(shape),
                                    e.as_dtype(index, "i64"), ishape)
    return e.op("reshape", [out], {"shape": ishape}, name=n.name)


@aten("argmax")
def argmax(e, n):
    x = n.args[0]
    dim = n.args[1] if len(n.args) > 1 else n.kwargs.get("dim")
    keep = bool(n.args[2]) if len(n.args) > 2 else bool(n.kwargs.get("keepdim", False))
    source = e.operand(x)
    if dim is None:  # Over every element: the flattened tensor's.
        source = e.op("reshape", [source], {"shape": [int_product(e.shape(x), "argmax")]})
        out = e.op("argmax", [source], {"axis": 0})
        return e.op("reshape", [out], {"shape": e.shape(n)}, name=n.name)
    axis = reduced_axes(dim, len(e.shape(x)))[0]
    return e.op("argmax", [source], {"axis": axis, "keepdim": keep}, name=n.name)


@aten("max", "min", "max.dim", "min.dim")
def extreme(e, n):
    """torch.max / torch.min: of every element (0-d), or along `dim` as
    (values, indices), the index of the first extreme (a NaN is both the
    max and the min, as in PyTorch); min's index is argmax of -x (of -1 - x
    for integers). Bool computes as i32."""
    x = n.args[0]
    op = n.target.split(".")[1]
    boolean = e.dtype(x) == "bool"
    v = e.as_dtype(x, "i32") if boolean else e.operand(x)

    def as_result(values):
        return e.op("cast", [values], {"dtype": "bool"}) if boolean else values
    if not n.target.endswith(".dim"):
        return as_result(e.op(op, [v], {"axes": list(range(len(e.shape(x))))}))
    if not e.shape(x):
        raise RefusedError(f"{op} along a dim of a 0-d tensor")
    dim = n.args[1] if len(n.args) > 1 else n.kwargs["dim"]
    keep = bool(n.args[2]) if len(n.args) > 2 else bool(n.kwargs.get("keepdim", False))
    axis = reduced_axes(dim, len(e.shape(x)))[0]
    values = as_result(e.op(op, [v], {"axes": [axis], "keepdim": keep}))
    if op == "min":  # integers: -1 - x, which does not overflow
        v = e.op("neg", [v]) if e.dtype(x) in ("f32", "f16", "bf16") else \
            e.op("sub", [e.scalar(-1, "i32" if boolean else e.dtype(x)), v])
    return [values, e.op("argmax", [v], {"axis": axis, "keepdim": keep})]


def int_product(shape, what):
    total = 1
    for d in shape:
        if not isinstance(d, int):
            raise RefusedError(f"{what} over every element of the dynamic shape {shape}")
        total *= d
    return total


@aten("cumsum")
def cumsum(e, n):
    """In the result's dtype (PyTorch sums bool and int32 as int64)."""
    x, dim = n.args[:2]
    axis = reduced_axes(dim, len(e.shape(x)))[0]
    return e.op("cumsum", [e.as_dtype(x, e.dtype(n))], {"axis": axis}, name=n.name)


@aten("constant_pad_nd")
def constant_pad_nd(e, n):
    """Pads (and crops, for a negative amount) from the last dim backwards,
    each side a `fill` of the value concatenated on."""
    x, pads = n.args[0], list(n.args[1])
    value = n.args[2] if len(n.args) > 2 else n.kwargs.get("value", 0)
    dtype = e.dtype(x)
    out, shape = e.operand(x), list(e.shape(x))
    check_padded_shape(shape, [number(p, "a pad") for p in pads], e.shape(n))
    for k in range(len(pads) // 2):
        axis = len(shape) - 1 - k
        before, after = number(pads[2 * k], "a pad"), number(pads[2 * k + 1], "a pad")
        if before < 0 or after < 0:
            extent = shape[axis]
            if not isinstance(extent, int):
                raise RefusedError(f"a crop of the dynamic dim {extent}")
            start, end = max(0, -before), extent - max(0, -after)
            out = e.op("slice", [out], {"starts": [start], "ends": [end], "axes": [axis]})
            shape[axis] = end - start
        parts = []
        for amount in (before, after):
            if amount > 0:
                side = list(shape)
                side[axis] = amount
                parts.append(e.op("fill", [], {"dtype": dtype, "shape": side,
                                               "value": json_number(value, "f32")}))
            else:
                parts.append(None)
        if parts[0] or parts[1]:
            out = e.op("concat", [p for p in (parts[0], out, parts[1]) if p], {"axis": axis})
            if isinstance(shape[axis], int):
                shape[axis] += max(before, 0) + max(after, 0)
    return e.op("reshape", [out], {"shape": e.shape(n)}, name=n.name)


def check_padded_shape(shape, pads, recorded):
    """Refuses pads (last dim first, before and after) that do not give
    the recorded shape on the static dims (before any `fill` is sized)."""
    if len(pads) % 2 or len(pads) // 2 > len(shape) or len(recorded) != len(shape):
        raise RefusedError(f"pads {pads} of a tensor of shape {shape}")
    want = list(shape)
    for k in range(len(pads) // 2):
        axis = len(shape) - 1 - k
        if isinstance(want[axis], int):
            want[axis] += pads[2 * k] + pads[2 * k + 1]
    for got, expected in zip(want, recorded):
        if isinstance(got, int) and got != expected:
            raise RefusedError(f"pads {pads} of shape {shape} give {want}, not the recorded "
                               f"shape {recorded}")


def bitwise(op):
    """PyTorch's bitwise ops, in the result's dtype (bool masks included;
    bitwise_not of a bool is logical_not, as ~ on a bool tensor)."""
    def fn(e, n):
        dtype = e.dtype(n)
        if dtype not in INTEGERS + ("bool",):
            raise RefusedError(f"{n.target} of {dtype} (bitwise ops take integers and bool)")
        arity = 1 if op == "bitwise_not" else 2
        if len(n.args) < arity:
            raise RefusedError(f"{op} takes {arity} operand{'s' * (arity > 1)}; the record "
                               f"gives {len(n.args)}")
        operands = [e.as_dtype(a, dtype) for a in n.args[:arity]]
        if op == "bitwise_not" and dtype == "bool":
            return e.op("logical_not", operands, name=n.name)
        return e.op(op, operands, name=n.name)
    return fn


for _op in ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not"):
    ATEN[_op] = bitwise(_op)


@aten("index_select")
def index_select(e, n):
    """x.index_select(dim, index): a gather along dim (the index is 1-D;
    the gather wraps a negative one)."""
    x, dim, index = n.args[:3]
    dim %= max(len(e.shape(x)), 1)
    return e.op("gather", [e.operand(x), e.as_dtype(index, "i64")], {"axis": dim},
                name=n.name)


@aten("repeat")
def repeat(e, n):
    """x.repeat(r0, r1, ...): every repeated dim d becomes [r, d] (a
    broadcast of a size-1 dim put before it), merged into r * d."""
    x, repeats = n.args[0], [number(r, "a repeat count") for r in n.args[1]]
    if any(not isinstance(r, int) or r < 0 for r in repeats):
        raise RefusedError(f"repeat counts {list(repeats)}: each must be an integer >= 0")
    if len(repeats) < len(e.shape(x)):
        raise RefusedError(f"{len(repeats)} repeat counts for a rank-{len(e.shape(x))} input "
                           "(repeat takes at least one per dim)")
    shape = [1] * (len(repeats) - len(e.shape(x))) + list(e.shape(x))
    split, broadcast = [], []
    for r, d in zip(repeats, shape):
        if r == 1:
            split.append(d)
            broadcast.append(d)
            continue
        if not isinstance(d, int):
            raise RefusedError(f"a repeat of the dynamic dim {d}")
        split += [1, d]
        broadcast += [r, d]
    out = e.op("reshape", [e.operand(x)], {"shape": split})
    out = e.op("broadcast_to", [out], {"shape": broadcast})
    return e.op("reshape", [out], {"shape": e.shape(n)}, name=n.name)
